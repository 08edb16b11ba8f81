"""Workers sharing one WARC (run.split_warcs) on a real Ray cluster: the output of a WARC cut into record
ranges is the output of the same WARC read whole, whatever the worker count, and after a SIGKILL of the run
mid-WARC (some ranges staged, the WARC not committed) a rerun resumes to the same bytes."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from raycorpus import counts as ck
from raycorpus.ingest.storage import Storage
from raycorpus.output.ledger import Ledger
from raycorpus.output.shards import TOKENS_DIR
from raycorpus.process.prepare import train_tokenizer_from_input
from raycorpus.runtime.faults import FAULT_ENV
from tests.support.corpus import make_config, run, shard_digests, wait_until_no_actors
from tests.support.paths import REPO


@pytest.fixture(scope="module")
def pages(real_warc, tmp_path_factory):
    """A manifest of the real-page WARC and a BPE trained on it."""
    root = tmp_path_factory.mktemp("split")
    manifest = root / "one.paths"
    manifest.write_text(f"{real_warc}\n")
    tok = str(root / "tokenizer.json")
    train_tokenizer_from_input(make_config(str(manifest), str(root / "unused"), tok), tok, vocab_size=1024,
                               sample_docs=500)
    return manifest, tok


def _build(manifest: Path, tok: str, out: Path, workers: int, split) -> dict:
    return run(make_config(str(manifest), str(out), tok, output={"documents": True}, ray={"workers": workers},
                           run={"split_warcs": split}))


def _ledger(out: Path) -> list[tuple]:
    """What the ledger says of each WARC, timings left out."""
    return [(e["ordinal"], e["status"], e.get("docs"), e.get("tokens"), e.get("first"), e.get("end"),
             {k: n for k, n in e.get("counts", {}).items() if ck.Key.parse(k).kind is not ck.Kind.TIME})
            for e in Ledger(Storage(), str(out)).iter_entries()]


def _files(out: Path, folder: str) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted((out / folder).iterdir())}


def test_one_warc_cut_into_ranges_gives_the_bytes_of_the_whole_warc(pages, tmp_path, ray_address):
    manifest, tok = pages
    ref = tmp_path / "whole-w1"
    whole = _build(manifest, tok, ref, 1, "off")
    assert whole["this_run"]["warc_ranges"] == 0 and whole["docs"]["kept"] > 50
    assert len(shard_digests(ref)) > 3 * 10  # shards close inside ranges too
    for name, workers, split in (("auto-w2", 2, "auto"), ("3-w1", 1, 3)):
        s = _build(manifest, tok, tmp_path / name, workers, split)
        assert s["this_run"]["warc_ranges"] == {"auto-w2": 4, "3-w1": 3}[name]  # auto: 4 ranges of >= 1 MiB
        assert shard_digests(tmp_path / name) == shard_digests(ref), name
        assert _files(tmp_path / name, "documents") == _files(ref, "documents"), name
        assert _ledger(tmp_path / name) == _ledger(ref), name
        assert s["docs"] == whole["docs"] and s["records"] == whole["records"], name


def test_sigkill_mid_warc_then_rerun_resumes_to_the_same_bytes(pages, real_warc, tmp_path, ray_address):
    _, tok = pages
    two = tmp_path / "two.paths"  # WARC #1 is a copy (exact and URL duplicates of #0's documents)
    (tmp_path / "copy.warc.gz").symlink_to(real_warc)
    two.write_text(f"{real_warc}\n{tmp_path / 'copy.warc.gz'}\n")
    ref = tmp_path / "ref"
    _build(two, tok, ref, 1, "off")
    out = tmp_path / "out"
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({
        "input": {"manifest": str(two)}, "output": {"path": str(out), "shard_size_tokens": 5000},
        "tokenizer": {"path": tok}, "ray": {"workers": 2}, "warc": {"retry_backoff_seconds": 0.1},
        "run": {"checkpoint_interval_seconds": 0, "progress": "off", "split_warcs": 4}}))
    cmd = [sys.executable, "-m", "raycorpus.cli", "run", str(cfg)]
    first = subprocess.run(cmd, env={**os.environ, FAULT_ENV: "processed:1.2"}, capture_output=True, text=True,
                           timeout=300, cwd=REPO)
    assert first.returncode == -signal.SIGKILL, f"the fault point was not reached: {first.stderr[-2000:]}"
    wait_until_no_actors("WarcWorker")  # the killed job's workers may stage ranges until Ray ends them
    before = Ledger(Storage(), str(out)).load()
    assert before.next_ordinal <= 1 and not before.complete  # WARC #1 is not committed
    assert list((out / TOKENS_DIR).glob("000000001-*.npz")), "no range of WARC #1 was staged before the kill"
    second = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=REPO)
    assert second.returncode == 0, second.stderr[-2000:]
    s = json.loads((out / "summary.json").read_text())
    assert s["complete"] and s["this_run"]["resumed_at"] == before.next_ordinal
    assert s["this_run"]["warc_ranges"] == 4 * (2 - before.next_ordinal)
    assert shard_digests(out) == shard_digests(ref)
    assert [e[:6] for e in _ledger(out)] == [e[:6] for e in _ledger(ref)]
    assert not list((out / TOKENS_DIR).glob("*.npz"))  # the killed run's staged ranges are gone
    r = subprocess.run([sys.executable, "-m", "raycorpus.cli", "verify", str(out)], capture_output=True, text=True,
                       check=False, cwd=REPO)
    assert r.returncode == 0 and "FAIL" not in r.stdout, r.stdout


def test_a_range_that_fails_for_good_fails_its_warc_once(pages, real_warc, tmp_path, ray_address):
    _, tok = pages
    data = bytearray(real_warc.read_bytes())
    at = len(data) * 4 // 5  # inside the last of 4 ranges
    data[at:at + 200] = bytes(200)
    bad = tmp_path / "bad.warc.gz"
    bad.write_bytes(bytes(data))
    manifest = tmp_path / "bad.paths"
    manifest.write_text(f"{real_warc}\n{bad}\n")
    entries = {}
    for split in ("off", 4):
        s = _build(manifest, tok, tmp_path / f"out-{split}", 2, split)
        assert s["this_run"]["warc_ranges"] == (4 if split == 4 else 0)  # WARC #0's: #1 fails
        entries[split] = _ledger(tmp_path / f"out-{split}")
        failed = Ledger(Storage(), str(tmp_path / f"out-{split}")).load().failed
        assert [(f["ordinal"], f["attempts"]) for f in failed] == [(1, 3)]
        assert "Gzip decompression error" in failed[0]["error"]
        if split == 4:
            assert "(record range 4 of 4, bytes " in failed[0]["error"]
    assert entries["off"] == entries[4] and [e[1] for e in entries[4]] == ["committed", "failed"]
    assert shard_digests(tmp_path / "out-off") == shard_digests(tmp_path / "out-4")
