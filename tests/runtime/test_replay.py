"""The commit-path replay benchmark: replayed WARCs stay distinct but for the stated duplicates; a smoke run
through the real commit path (no timing asserted: figures are for the benchmark to print)."""

from __future__ import annotations

import numpy as np

from raycorpus.process.pipeline import WarcProcessor
from raycorpus.process.tokenize import TokenEncoder
from raycorpus.runtime.replay import (
    ReplayPlan,
    background,
    bench_commit_path,
    format_commit_path,
    replay_part,
    replay_profile,
    replay_warc,
    steady,
)
from tests.support.corpus import make_config


def _cached(crawl, tmp_path):
    c, tok = crawl
    cfg = make_config(str(c.manifest_path), str(tmp_path / "out"), tok)
    proc = WarcProcessor(cfg, encoder=TokenEncoder(cfg.tokenizer))
    return cfg, [proc.process(i, str(p)) for i, p in enumerate(c.warc_paths[:2])]


def test_replayed_parts_are_distinct_but_for_the_stated_duplicates(crawl, tmp_path):
    _, cached = _cached(crawl, tmp_path)
    base = cached[0]
    first = replay_part(base, 0, len(cached), dup_rate=0.25)  # the first pass over the cache: as it is
    assert np.array_equal(first[0], base.content_hashes) and np.array_equal(first[1], base.signatures)
    again = replay_part(base, 2, len(cached), dup_rate=0.25)
    kept = again[0] == base.content_hashes
    assert 0.1 < kept.mean() < 0.45  # about a quarter replayed as duplicates of their first replay
    assert np.array_equal(again[1][kept], base.signatures[kept])
    assert not np.any(again[1][~kept] == base.signatures[~kept])  # the others shifted in every value
    assert np.array_equal(replay_part(base, 2, len(cached), 0.25)[0], again[0])  # deterministic
    assert np.array_equal(first[2], base.url_hashes)  # URL keys: as they are, then perturbed like the hashes
    assert np.array_equal(again[2][kept], base.url_hashes[kept])
    assert not np.any(again[2][~kept] == base.url_hashes[~kept])


def test_replayed_parts_sample_anew_as_another_warc_would(crawl, tmp_path):
    """After the first pass over the cache a part's sample candidates get new keys (record ids are unique in a
    crawl): with the cached keys, every replayed WARC would bring the head the same candidates again."""
    _, cached = _cached(crawl, tmp_path)
    base = cached[0]
    assert base.profile.samples
    assert replay_profile(base, 0, len(cached)) is base.profile
    again, later = replay_profile(base, 2, len(cached)), replay_profile(base, 4, len(cached))
    old = [s.key for s in base.profile.samples]
    assert len({s.key for s in again.samples} & set(old)) == 0 and [s.key for s in again.samples] != [
        s.key for s in later.samples]
    assert [s.key for s in replay_profile(base, 2, len(cached)).samples] == [s.key for s in again.samples]
    assert [(s.url, s.pool, s.text) for s in again.samples] == [(s.url, s.pool, s.text) for s in base.profile.samples]
    assert [s.key for s in base.profile.samples] == old  # the cache is left as it was


def test_a_replayed_warc_joins_parts_with_their_tokens(crawl, tmp_path):
    _, cached = _cached(crawl, tmp_path)
    w = replay_warc(cached, ReplayPlan(warcs=2, parts=3, dup_rate=0.0), ordinal=1)
    parts = [cached[n % 2] for n in range(3, 6)]
    assert len(w.docs) == len(w.content_hashes) == len(w.lengths) == sum(len(p.docs) for p in parts)
    assert w.tokens.size == int(w.lengths.sum()) == sum(p.tokens.size for p in parts)


def test_commit_path_replay_smoke(crawl, tmp_path, ray_address):
    cfg, _ = _cached(crawl, tmp_path)
    c, _ = crawl
    b = bench_commit_path(cfg, _meta(cfg), [str(p) for p in c.warc_paths[:2]], replayed=3, pages_per_warc=160,
                          repeats=1, replay_workers=1)
    m = b["median"]
    assert b["runs"] == 1 and b["parts_per_warc"] >= 4
    assert m["reached_dedup_per_warc"] > 0 and m["head_cpu_us_per_doc_at_dedup"] > 0
    assert m["workers_per_head_core"] > 0 and b["check"]["ratio"] > 0 and b["model"]["us_per_doc"] != 0
    assert "one head core feeds" in format_commit_path(b)
    # the head's cost per LSH shard: the same replay at 4x the shards (each shard is asked about every WARC)
    assert b["shards"] == 1 and b["wide"]["shards"] == 4 and b["wide"]["head_cpu_ms_per_warc"] > 0
    assert b["model"]["shards"] == 1 and isinstance(b["model"]["ms_per_warc_per_shard"], float)
    assert "per LSH shard +" in format_commit_path(b)
    # the head that has fallen behind: its 3 WARCs held until all are ready, then decided in one round
    assert b["behind"]["warcs_per_round"] == 3 and 1 <= m["warcs_per_round"] <= 3
    assert b["behind"]["head_cpu_ms_per_warc"] > 0 and "head behind   rounds of 3 WARCs" in format_commit_path(b)
    # and behind with the WARCs coming 4x slower: the head's CPU per WARC as work + a background per second
    g = b["background"]
    fast, slow = g["warcs_per_second"]
    assert slow < fast and g["ms_per_second"] >= 0 and g["work_ms_per_warc"] > 0 and g["workers_per_head_core"] > 0
    assert "ms of work per WARC" in format_commit_path(b)
    # and past the first window: the WARCs a 4x longer replay adds
    assert b["steady"]["warcs"] == [4, 12] and "steady state  behind, WARCs 4-12" in format_commit_path(b)


def test_the_background_fit_splits_head_cpu_into_work_per_warc_and_cpu_per_second():
    # 20 ms per WARC of work + 12 ms per second: at 4 WARCs/s 23 ms per WARC, at 1 WARC/s 32 ms
    g = background({"wall_seconds": 16.0, "head_cpu_ms_per_warc": 23.0},
                   {"wall_seconds": 64.0, "head_cpu_ms_per_warc": 32.0}, warcs=64, worker_ms_per_warc=200_000.0)
    assert g["ms_per_second"] == 12.0 and g["work_ms_per_warc"] == 20.0
    assert g["workers_per_head_core"] == round((1 - 0.012) * 200_000 / 20)  # N x 20 / 200,000 + 0.012 = 1 core
    # noise that makes the slower replay cheaper takes nothing off
    g = background({"wall_seconds": 16.0, "head_cpu_ms_per_warc": 23.0},
                   {"wall_seconds": 64.0, "head_cpu_ms_per_warc": 22.0}, warcs=64, worker_ms_per_warc=200_000.0)
    assert g["ms_per_second"] == 0.0 and g["work_ms_per_warc"] == 23.0


def test_the_steady_state_is_the_marginal_cost_of_a_longer_replay_less_its_background():
    # 32 WARCs at 30 ms (a first window of dearer WARCs), 128 at 25 ms: WARCs 33-128 cost 23.33 ms each; the long
    # replay took 32 s (4 WARCs/s), so 12 ms per second of background is 3 ms of each
    bg = {"ms_per_second": 12.0}
    t = steady({"head_cpu_ms_per_warc": 30.0, "head_main_threads_ms_per_warc": 20.0},
               {"head_cpu_ms_per_warc": 25.0, "head_main_threads_ms_per_warc": 16.0, "wall_seconds": 32.0}, 32, 128, bg,
               worker_ms_per_warc=200_000.0)
    assert t["warcs"] == [33, 128] and t["marginal_ms_per_warc"] == 23.33 and t["work_ms_per_warc"] == 20.33
    assert t["main_threads_ms_per_warc"] == round((16 * 128 - 20 * 32) / 96, 2)  # the main threads' marginal alone
    assert t["workers_per_head_core"] == round(0.988 * 200_000 / (70 / 3 - 3))


def _meta(cfg) -> dict:
    return TokenEncoder(cfg.tokenizer).meta()
