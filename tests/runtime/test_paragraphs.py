"""dedup.paragraphs end to end on a real Ray cluster: the shards hold what the Ray-free core decides, in any worker
or LSH shard count, after a SIGKILL of the driver and after a lost LSH shard; the documents files hold the same
text; `raycorpus verify` passes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import zstandard

from raycorpus.ingest.storage import Storage
from raycorpus.output.verify import format_checks, verify_output
from raycorpus.process.dedup.index import Deduplicator, Layout, LocalShards, WarcRows
from raycorpus.process.dedup.paragraphs import kept_tokens, split_paragraphs
from raycorpus.process.pipeline import WarcProcessor
from raycorpus.process.tokenize import TokenEncoder
from tests.support.corpus import (
    make_config,
    run,
    shard_digests,
    wait_for_actors,
    wait_for_checkpoints,
    wait_until_no_actors,
)
from tests.support.servers import LocalHTTPServer

PARAGRAPHS = {"enabled": True, "min_chars": 16, "threshold": 0.5}  # the sample crawl's pages share short lines


@pytest.fixture(scope="module")
def para_reference(crawl, tmp_path_factory, ray_address):
    """One single-worker, single-shard build with paragraph dedup (and documents files)."""
    c, tok = crawl
    out = tmp_path_factory.mktemp("para") / "out"
    s = run(make_config(str(c.manifest_path), str(out), tok, ray={"workers": 1},
                        dedup={"paragraphs": PARAGRAPHS, "shards": 1}, output={"documents": True}))
    return out, s


def core_decisions(manifest: Path, tok: str):
    """Per WARC, in manifest order, what the Ray-free core gives: (tokens the shards must hold, the documents' texts
    after paragraph dedup, paragraphs removed)."""
    cfg = make_config(str(manifest), "/nonexistent", tok, dedup={"paragraphs": PARAGRAPHS})
    processor = WarcProcessor(cfg, encoder=TokenEncoder(cfg.tokenizer))
    layout = Layout.from_config(cfg.dedup, 1)
    dedup = Deduplicator(layout, cfg.dedup.threshold, LocalShards(layout), 0, cfg.dedup.paragraphs.threshold)
    tokens, texts, removed = [], [], 0
    for i, line in enumerate(manifest.read_text().split()):
        r = processor.process(i, str(manifest.parent / line))
        d = dedup.decide_round([WarcRows(i, r.content_hashes, r.signatures, r.url_hashes, None, r.paragraphs)])[0]
        if not r.docs:
            continue
        p = r.paragraphs
        tokens.append(r.tokens[kept_tokens(p.counts, p.tokens, d.paragraphs, d.keep)])
        flags = iter(d.paragraphs.tolist())
        for doc, keep in zip(r.docs, d.keep.tolist(), strict=True):
            gone = [next(flags) for _ in split_paragraphs(doc.text)]
            if keep:
                texts.append("".join(q for q, g in zip(split_paragraphs(doc.text), gone, strict=True) if not g))
        removed += int(d.paragraphs.sum())
    return np.concatenate(tokens), texts, removed


def read_documents(out: Path) -> list[str]:
    texts = []
    for f in sorted((out / "documents").glob("*.jsonl.zst")):
        raw = zstandard.ZstdDecompressor().stream_reader(f.open("rb")).read().decode()
        texts += [json.loads(line)["text"] for line in raw.splitlines() if line]
    return texts


def test_the_shards_and_documents_hold_what_the_core_decides(para_reference, crawl):
    c, tok = crawl
    out, s = para_reference
    want, texts, removed = core_decisions(c.manifest_path, tok)
    got = np.concatenate([np.fromfile(p, np.uint16) for p in sorted((out / "shards").glob("*.tokens"))])
    assert removed > 20 and s.docs.dropped.get("dedup:paragraphs", 0) > 0  # it does remove, and drop
    assert np.array_equal(got, want)
    assert read_documents(out) == texts
    assert s.dedup_paragraphs.removed == removed and s.dedup_paragraphs.paragraphs > removed
    checks = verify_output(Storage(), str(out))
    assert all(c.ok for c in checks), format_checks(checks)


def test_same_bytes_with_two_workers_and_two_lsh_shards(para_reference, crawl, tmp_path):
    c, tok = crawl
    ref_out, ref = para_reference
    s = run(make_config(str(c.manifest_path), str(tmp_path / "out"), tok, ray={"workers": 2},
                        dedup={"paragraphs": PARAGRAPHS, "shards": 2}, output={"documents": True}))
    assert shard_digests(tmp_path / "out") == shard_digests(ref_out)
    assert s.docs == ref.docs and read_documents(tmp_path / "out") == read_documents(ref_out)


def run_held(c, tok: str, out: Path, held: int, shards: int, tmp_path: Path):
    """A CLI run whose WARC ``held`` waits on the HTTP server until released: (process, server, command)."""
    cfg_path = tmp_path / "c.yaml"
    www = LocalHTTPServer(c.manifest_path.parent, hold=(c.manifest_path.read_text().split()[held],))
    www.__enter__()
    cfg_path.write_text(json.dumps({
        "input": {"manifest": str(c.manifest_path), "base": www.url},
        "output": {"path": str(out), "shard_size_tokens": 5000, "documents": True},
        "tokenizer": {"path": tok}, "ray": {"workers": 1}, "dedup": {"shards": shards, "paragraphs": PARAGRAPHS},
        "run": {"checkpoint_interval_seconds": 0, "progress": "off"}}))
    cmd = [sys.executable, "-m", "raycorpus.cli", "run", str(cfg_path)]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True), www, cmd


def test_resume_after_sigkill_of_the_driver(para_reference, crawl, tmp_path):
    c, tok = crawl
    ref_out, _ = para_reference
    out = tmp_path / "out"
    proc, www, cmd = run_held(c, tok, out, 6, 2, tmp_path)
    try:
        wait_for_checkpoints(proc, out, 4)
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
        www.release()
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    finally:
        www.__exit__(None, None, None)
    assert r.returncode == 0, r.stderr[-2000:]
    s = json.loads((out / "summary.json").read_text())
    assert 0 < s["this_run"]["resumed_at"] < 8
    assert shard_digests(out) == shard_digests(ref_out)
    assert read_documents(out) == read_documents(ref_out)


def test_a_lost_lsh_shard_is_rebuilt_with_its_paragraphs(para_reference, crawl, tmp_path):
    """A shard SIGKILLed mid-run starts again from its files and the records of the WARCs committed since: its
    paragraph keys too (else a paragraph seen before would be kept again)."""
    c, tok = crawl
    ref_out, _ = para_reference
    out = tmp_path / "out"
    wait_until_no_actors("LshShardActor")
    proc, www, _ = run_held(c, tok, out, 5, 2, tmp_path)
    try:
        pids = wait_for_actors(proc, "LshShardActor", 2)
        wait_for_checkpoints(proc, out, 3)
        os.kill(pids[0], signal.SIGKILL)
        www.release()
        _, stderr = proc.communicate(timeout=300)
    finally:
        www.__exit__(None, None, None)
    assert proc.returncode == 0, stderr[-2000:]
    assert json.loads((out / "summary.json").read_text())["this_run"]["dedup"]["restarts"] == 1
    assert shard_digests(out) == shard_digests(ref_out)
