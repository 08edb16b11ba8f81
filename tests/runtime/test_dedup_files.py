"""What a finished output's dedup/ holds (the end of a build in runtime/driver.py, runtime/dedup.py and the
writer's finish; what ``raycorpus verify`` says of it).

Two builds of one input, one checkpointing after every WARC with two workers (so its LSH shards merged segments)
and one checkpointing never before the end with one worker, end with the same dedup files, byte for byte: each
shard's slice as one file the final checkpoint names, and nothing it does not name.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

from raycorpus.ingest.storage import Storage
from raycorpus.output.ledger import Ledger
from raycorpus.process.dedup.shardlog import finished_name
from tests.support.corpus import shard_digests

N_WARCS = 8
SHARDS = 2


def _build(tmp_path: Path, name: str, crawl, interval: float, workers: int) -> tuple[Path, list[str]]:
    c, tok = crawl
    out = tmp_path / name
    cfg = tmp_path / f"{name}.json"
    cfg.write_text(json.dumps({
        "input": {"manifest": str(c.manifest_path)},
        "output": {"path": str(out), "shard_size_tokens": 5000},
        "tokenizer": {"path": tok}, "ray": {"workers": workers}, "dedup": {"shards": SHARDS},
        "run": {"checkpoint_interval_seconds": interval, "progress": "off"}}))
    cmd = [sys.executable, "-m", "raycorpus.cli", "run", str(cfg)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return out, cmd


def _dedup_files(out: Path) -> dict[str, str]:
    return {str(p.relative_to(out)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted((out / "dedup").rglob("*")) if p.is_file()}


def _verify_line(out: Path) -> str:
    r = subprocess.run([sys.executable, "-m", "raycorpus.cli", "verify", str(out)], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0 and "FAIL" not in r.stdout, r.stdout
    return next(line for line in r.stdout.splitlines() if "dedup index" in line)


def test_builds_of_one_input_end_with_the_same_dedup_files_all_named(crawl, ray_address, tmp_path):
    often, often_cmd = _build(tmp_path, "often", crawl, interval=0, workers=2)
    never, _ = _build(tmp_path, "never", crawl, interval=3600, workers=1)
    assert shard_digests(often) == shard_digests(never)
    checkpoints = len(Ledger(Storage(), str(often)).checkpoint_urls())
    assert checkpoints > 1

    files = _dedup_files(often)
    assert files == _dedup_files(never)
    state = Ledger(Storage(), str(often)).load()
    assert state.complete and [d.files for d in state.dedup] == [(finished_name(N_WARCS),)] * SHARDS
    named = {f"dedup/shard-{i:04d}/{name}" for i, d in enumerate(state.dedup) for name in d.files}
    records = {f for f in files if f.count("/") == 1}  # dedup/NNNNNNNNN.npz and .keys.npz: per WARC that indexed any
    assert set(files) == named | records  # nothing under the shards' folders that the final checkpoint does not name

    indexed = json.loads((often / "summary.json").read_text())["this_run"]["dedup"]["indexed_docs"]
    said = (f"PASS  dedup index    {SHARDS} LSH shards: {SHARDS} segment files named by the final checkpoint, "
            f"all present; {indexed:,} documents indexed")
    assert _verify_line(often) == _verify_line(never) == said

    # an output finished by a raycorpus before the end's compaction: a rerun of it removes what is not named
    stray = often / "dedup" / "shard-0001" / "L0-000000000-000000003.npz"
    stray.write_bytes(b"a merged-away segment")
    assert _verify_line(often) == said + "; 1 more files under dedup/shard-*/ that it does not name"
    r = subprocess.run(often_cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert not stray.exists() and _dedup_files(often) == files
