"""Mixing built corpora: temperature weights, epochs, exhaustion, a reproducible order that ranks split."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from raycorpus.training.loader import TokenWindows
from raycorpus.training.mix import MixedWindows, draw_order, epochs_seen, temperature_weights
from tests.support.shards import build_token_shards


def test_the_seed_pipelines_worked_numbers():
    sizes = [800, 150, 40, 10]
    w = temperature_weights(sizes, 0.5)
    assert np.round(w, 3).tolist() == [0.565, 0.245, 0.126, 0.063]
    assert np.round(epochs_seen(1000, w, sizes), 2).tolist() == [0.71, 1.63, 3.16, 6.32]
    assert np.allclose(temperature_weights(sizes, 1.0), np.array(sizes) / 1000)
    assert np.allclose(temperature_weights(sizes, 0.0), 0.25)


def test_an_exhausted_domain_is_dropped_and_the_rest_renormalised():
    order = draw_order([0.5, 0.3, 0.2], [10_000, 10_000, 100], 5000, seed=1)
    counts = np.bincount(order, minlength=3)
    assert counts[2] == 100 and counts.sum() == 5000
    assert abs(counts[0] / (counts[0] + counts[1]) - 0.5 / 0.8) < 0.03
    assert np.array_equal(order, draw_order([0.5, 0.3, 0.2], [10_000, 10_000, 100], 5000, seed=1))
    with pytest.raises(ValueError, match="every domain is exhausted"):
        draw_order([0.5, 0.5], [10, 10], 100, seed=0)


@pytest.fixture(scope="module")
def domains(tmp_path_factory):
    root = tmp_path_factory.mktemp("domains")
    for name, vocab in (("web", 50_000), ("code", 40_000)):
        build_token_shards(root / name, vocab, formats=(), ctx_len=32)
    return root


def test_mix_command_writes_a_reproducible_order_that_ranks_split(domains, tmp_path):
    cfg = tmp_path / "mix.yaml"
    cfg.write_text(json.dumps({
        "domains": [{"name": "web", "path": str(domains / "web")}, {"name": "code", "path": str(domains / "code")}],
        "tokens": 60_000, "ctx_len": 32, "temperature": 0.5, "max_epochs": 1.5, "output": str(tmp_path / "mix"),
        "seed": 3}))
    runs = [subprocess.run([sys.executable, "-m", "raycorpus.cli", "mix", str(cfg)], capture_output=True, text=True,
                           timeout=120) for _ in range(2)]
    assert all(r.returncode == 0 for r in runs), runs[0].stderr[-2000:]
    assert runs[0].stdout == runs[1].stdout and "web" in runs[0].stdout
    p = json.loads((tmp_path / "mix" / "mix.json").read_text())
    assert abs(sum(p["weights"]) - 1) < 1e-6 and p["samples"] == 60_000 // 32 + (60_000 % 32 > 0)
    assert all(e <= 1.5 for e in p["drawn_epochs"])
    # every sample is served once, split over 2 ranks x 2 workers
    slots = [list(MixedWindows(tmp_path / "mix", rank=r, world_size=2, worker=w, num_workers=2).iter_windows())
             for r in range(2) for w in range(2)]
    one = list(MixedWindows(tmp_path / "mix").iter_windows())
    assert sum(len(s) for s in slots) == len(one) - len(one) % 4
    key = [(d, x.tobytes()) for s in slots for d, x, _ in s]
    assert sorted(key) == sorted((d, x.tobytes()) for d, x, _ in one[: len(key)])
    assert [d for d, _, _ in one] == np.load(tmp_path / "mix" / "order.npy").tolist()


def test_mix_warns_past_the_epoch_ceiling_and_refuses_bad_configs(domains, tmp_path):
    cfg = tmp_path / "mix.yaml"
    cfg.write_text(json.dumps({
        "domains": [{"name": "web", "path": str(domains / "web"), "weight": 1},
                    {"name": "code", "path": str(domains / "code"), "weight": 3}],
        "tokens": 200_000, "ctx_len": 32, "max_epochs": 4, "output": str(tmp_path / "mix")}))
    r = subprocess.run([sys.executable, "-m", "raycorpus.cli", "mix", str(cfg)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "WARNING domain 'code' would be seen" in r.stdout
    p = json.loads((tmp_path / "mix" / "mix.json").read_text())
    assert p["planned_epochs"][1] > 4 and p["drawn_epochs"][1] <= 4  # capped; web drew the rest
    assert sum(p["drawn_tokens"]) >= 200_000
    cfg.write_text(json.dumps({"domains": [{"name": "a", "path": str(domains / "web"), "weight": 1},
                                           {"name": "b", "path": str(domains / "code")}],
                               "tokens": 10, "ctx_len": 32, "output": "x"}))
    r = subprocess.run([sys.executable, "-m", "raycorpus.cli", "mix", str(cfg)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2 and "weight for every domain" in r.stderr


def test_a_rehydrated_domain_counts_its_copies_and_serves_them(tmp_path):
    from tests.support.shards import with_cluster_sizes

    with_cluster_sizes(tmp_path / "web", lambda n: 2)  # every document twice (FineWeb-2: a cluster of 2)
    build_token_shards(tmp_path / "code", 40_000, formats=(), ctx_len=32)
    cfg = tmp_path / "mix.yaml"
    domains = [{"name": "web", "path": str(tmp_path / "web"), "rehydrate": True},
               {"name": "code", "path": str(tmp_path / "code")}]
    cfg.write_text(json.dumps({"domains": domains, "tokens": 20_000, "ctx_len": 32, "output": str(tmp_path / "mix")}))
    r = subprocess.run([sys.executable, "-m", "raycorpus.cli", "mix", str(cfg)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    p = json.loads((tmp_path / "mix" / "mix.json").read_text())
    once = TokenWindows(tmp_path / "web", 32).total
    assert p["rehydrate"] == [True, False] and once * 2 - 10 <= p["windows"][0] <= once * 2
    served = [d for d, _, _ in MixedWindows(tmp_path / "mix").iter_windows()]
    assert served == np.load(tmp_path / "mix" / "order.npy").tolist()
