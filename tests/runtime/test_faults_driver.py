"""Faults of the run itself: the driver SIGKILLed at exact points, document writer and packer actors SIGKILLed mid-run.

Every test compares the shard bytes with an undisturbed build of the same input (``reference``).
Driver kills use the test-only hook RAYCORPUS_FAULT (raycorpus/runtime/faults.py): the process that reaches
the point SIGKILLs the driver and then itself, like a machine lost at exactly that moment. The WARCs
are served by a real HTTP server whose GET counter shows which WARCs were read, and how often.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from raycorpus.ingest.storage import Storage
from raycorpus.output.ledger import Ledger
from raycorpus.output.shards import SHARDS_DIR, TOKENS_DIR
from raycorpus.runtime.faults import FAULT_ENV
from tests.support.corpus import (
    actor_pids,
    report_data,
    shard_digests,
    wait_for_checkpoints,
    wait_until_no_actors,
)
from tests.support.report import page_data
from tests.support.servers import LocalHTTPServer

N_WARCS = 8  # the crawl fixture's


def _write_config(path: Path, manifest: str, out: Path, tokenizer: str, base: str | None = None,
                  checkpoint_interval: float = 0, workers: int = 2, documents: bool = False) -> list[str]:
    """A CLI config with the reference's shard size; returns the command that runs it. ``documents``: the
    output also has documents/ (written by document writer actors; the shards do not change)."""
    path.write_text(json.dumps({
        "input": {"manifest": manifest, **({"base": base} if base else {})},
        "output": {"path": str(out), "shard_size_tokens": 5000, "documents": documents},
        "tokenizer": {"path": tokenizer}, "ray": {"workers": workers},
        "warc": {"retry_backoff_seconds": 0.1},
        "run": {"checkpoint_interval_seconds": checkpoint_interval, "progress": "off"}}))
    return [sys.executable, "-m", "raycorpus.cli", "run", str(path)]


def _assert_complete_and_identical(out: Path, ref_out: Path, ref_summary: dict) -> dict:
    """Same shard bytes and counts as the undisturbed build, every WARC in the ledger once, verify passes."""
    s = json.loads((out / "summary.json").read_text())
    assert shard_digests(out) == shard_digests(ref_out)
    assert s["complete"] and s["docs"] == ref_summary["docs"] and s["tokens"] == ref_summary["tokens"]
    assert [e["ordinal"] for e in Ledger(Storage(), str(out)).iter_entries()] == list(range(N_WARCS))
    assert report_data(out) == report_data(ref_out)  # the report's histograms and samples too
    r = subprocess.run([sys.executable, "-m", "raycorpus.cli", "verify", str(out)], capture_output=True, text=True,
                       check=False)
    assert r.returncode == 0 and "FAIL" not in r.stdout, r.stdout
    return s


def _uncheckpointed(out: Path, before) -> list[str]:
    """Files made durable after the last checkpoint: staged token files and shards it does not name."""
    staged = sorted(f"{TOKENS_DIR}/{p.name}" for p in (out / TOKENS_DIR).glob("*.npz"))
    segments = [f for f in staged if f not in before.packer.files()]
    shards = sorted(p.name for p in (out / SHARDS_DIR).glob("shard-*")
                    if int(p.name.split("-")[1].split(".")[0]) >= before.packer.shards_closed)
    return segments + shards


KILL_POINTS = {
    # a worker has read WARC #4 and is about to return it: nothing of it (or after it) is committed
    "mid_warc": "processed:4",
    # shard 12 (WARC #2's tail, open at a checkpoint, then WARC #3's head): .tokens written, .idx not
    "mid_shard_write": "after_write:shard-000012.tokens",
    # shard 14 (inside WARC #3) is complete (sidecar written last), no checkpoint names it yet
    "between_shard_and_ledger": "after_write:shard-000014.json",
    # the shards checkpoint 4 counts are durable, checkpoint 4 is not written
    "after_shards_before_ledger": "before_write:ckpt-000000004.json",
}


@pytest.mark.parametrize("point", [  # one point in the quick tier, the others in the long one (-m slow)
    pytest.param(p, marks=() if p == "mid_warc" else pytest.mark.slow) for p in KILL_POINTS])
def test_driver_killed_at_a_point_resumes_to_identical_output(point, reference, crawl, tmp_path):
    c, tok = crawl
    ref_out, ref_summary = reference
    out = tmp_path / "out"
    names = c.manifest_path.read_text().split()
    sources = {i: [src["ordinal"] for src in json.loads((ref_out / SHARDS_DIR / f"shard-{i:06d}.json").read_text())[
        "sources"]] for i in (12, 14)}
    assert sources == {12: [2, 3], 14: [3]}, "the sample crawl changed: choose the shards of KILL_POINTS again"
    # mid_warc: WARC #4 is served once a checkpoint is written, so the kill comes with something committed
    held = (names[4],) if point == "mid_warc" else ()
    with LocalHTTPServer(c.manifest_path.parent, hold=held) as www:
        cmd = _write_config(tmp_path / "c.yaml", www.url + c.manifest_path.name, out, tok, base=www.url)
        first = subprocess.Popen(cmd, env={**os.environ, FAULT_ENV: KILL_POINTS[point]}, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
        if held:
            wait_for_checkpoints(first, out, 1)
            www.release()
        _, first_err = first.communicate(timeout=300)
        assert first.returncode == -signal.SIGKILL, f"the fault point was not reached: {first_err[-2000:]}"
        wait_until_no_actors("WarcWorker")  # the killed job's workers may read on until Ray ends them: count after
        before = Ledger(Storage(), str(out)).load()
        fetched_before = {name: www.gets[f"/{name}"] for name in names}
        assert 0 < before.next_ordinal < N_WARCS and not before.complete
        if point == "mid_warc":
            assert before.next_ordinal <= 4 and fetched_before[names[4]] == 1
        elif point == "mid_shard_write":
            assert (out / SHARDS_DIR / "shard-000012.tokens").exists()
            assert not (out / SHARDS_DIR / "shard-000012.idx").exists()
            assert not (out / SHARDS_DIR / "shard-000012.json").exists()
            assert before.packer.pieces, "the shard did not straddle a checkpoint"
        elif point == "between_shard_and_ledger":
            assert (out / SHARDS_DIR / "shard-000014.json").exists() and before.packer.shards_closed <= 14
        else:
            assert len(Ledger(Storage(), str(out)).checkpoint_urls()) == 3
        if point != "mid_warc":
            assert _uncheckpointed(out, before), "nothing was durable past the last checkpoint"

        second = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert second.returncode == 0, second.stderr[-2000:]
        fetched_after = {name: www.gets[f"/{name}"] - fetched_before[name] for name in names}
    s = _assert_complete_and_identical(out, ref_out, ref_summary)
    assert s["this_run"]["resumed_at"] == before.next_ordinal
    assert s["this_run"]["processed"] == N_WARCS - before.next_ordinal
    # counted at the server: a committed WARC is never read again, every other one exactly once more
    assert fetched_after == {name: int(i >= before.next_ordinal) for i, name in enumerate(names)}
    # and over both runs each WARC was read once or (if it was in flight at the kill) twice
    assert all(fetched_before[name] <= 1 for name in names[: before.next_ordinal])
    assert all(fetched_before[name] + fetched_after[name] in (1, 2) for name in names)
    assert not _uncheckpointed(out, Ledger(Storage(), str(out)).load())  # orphans of the kill are gone


def _held_server(c):
    """The crawl over HTTP, WARC #5's GETs held until ``release()``: a run cannot finish before the test acts."""
    return LocalHTTPServer(c.manifest_path.parent, hold=(c.manifest_path.read_text().split()[5],))


def _start_and_kill_actor(cmd: list[str], actor_class: str, kill_when) -> subprocess.Popen:
    """Start the CLI and SIGKILL its ``actor_class`` actor once ``kill_when()``; return the running CLI."""
    wait_until_no_actors(actor_class)  # earlier runs' actors are still exiting: only this run's may be found
    deadline = time.monotonic() + 240
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    pids: list[int] = []
    while time.monotonic() < deadline and proc.poll() is None and not (pids and kill_when()):
        pids = actor_pids(actor_class)
        time.sleep(0.01)
    assert len(pids) == 1 and proc.poll() is None, f"the run has no single {actor_class} to kill"
    os.kill(pids[0], signal.SIGKILL)
    return proc


@pytest.mark.slow
@pytest.mark.parametrize("checkpoint_interval", [0, 3600])
def test_killed_packer_is_replaced_in_run_and_the_output_is_unchanged(checkpoint_interval, reference, crawl,
                                                                      tmp_path):
    """The replacement reopens at the last checkpoint (with 3600 s: none, so from scratch) and the driver
    sends it again every WARC it held since, with the dedup decisions already taken."""
    c, tok = crawl
    ref_out, ref_summary = reference
    out = tmp_path / "out"
    with _held_server(c) as www:  # WARC #5 waits: the packer is killed mid-run, whatever the machine's speed
        cmd = _write_config(tmp_path / "c.yaml", str(c.manifest_path), out, tok, base=www.url,
                            checkpoint_interval=checkpoint_interval)
        proc = _start_and_kill_actor(cmd, "PackerActor", lambda: (out / SHARDS_DIR / "shard-000001.json").exists())
        www.release()
        _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr[-2000:]
    assert "packer actor lost" in stderr and "to a new packer resumed from its last checkpoint" in stderr
    s = _assert_complete_and_identical(out, ref_out, ref_summary)
    assert s["this_run"]["actor_recoveries"]["packer"] == 1
    assert s["this_run"]["processed"] == N_WARCS  # recovered from what the driver held: nothing read twice


@pytest.mark.slow
def test_killed_document_writer_is_restarted_and_the_output_is_unchanged(reference, crawl, tmp_path):
    c, tok = crawl
    ref_out, ref_summary = reference
    out = tmp_path / "out"
    ledger = Ledger(Storage(), str(out))
    with _held_server(c) as www:
        cmd = _write_config(tmp_path / "c.yaml", str(c.manifest_path), out, tok, base=www.url, documents=True)
        proc = _start_and_kill_actor(
            cmd, "DocumentWriter", lambda: (out / "ledger").exists() and len(ledger.checkpoint_urls()) >= 2)
        assert ledger.load().next_ordinal < N_WARCS, "the document writer was not killed mid-run"
        www.release()
        _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr[-2000:]
    s = _assert_complete_and_identical(out, ref_out, ref_summary)
    assert s["this_run"]["processed"] == N_WARCS


@pytest.mark.slow
def test_a_document_writer_that_always_dies_fails_the_run_loudly_and_a_rerun_resumes(reference, crawl, tmp_path):
    """The document writer dies in every write of WARC #3: Ray restarts it and retries the call, then the
    driver sends the WARC again a bounded number of times, then the run exits non-zero saying so; the
    ledger holds WARCs #0-#2 and the same command without the fault finishes the job identically."""
    c, tok = crawl
    ref_out, ref_summary = reference
    out = tmp_path / "out"
    cmd = _write_config(tmp_path / "c.yaml", str(c.manifest_path), out, tok, documents=True)
    first = subprocess.run(cmd, env={**os.environ, FAULT_ENV: "write:3"}, capture_output=True, text=True,
                           timeout=600)
    assert first.returncode == 1, first.stderr[-2000:]
    assert "writer actor lost" in first.stderr  # the driver's own re-sends, after Ray's retries
    assert "writer actors keep dying at WARC #3" in first.stderr and "rerun to resume" in first.stderr
    assert "run aborted:" in first.stderr and "Traceback" not in first.stderr  # one clear line, no stack
    assert Ledger(Storage(), str(out)).load().next_ordinal == 3
    second = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert second.returncode == 0, second.stderr[-2000:]
    s = _assert_complete_and_identical(out, ref_out, ref_summary)
    assert s["this_run"]["resumed_at"] == 3 and s["this_run"]["processed"] == N_WARCS - 3


@pytest.mark.slow
def test_a_shard_writer_that_always_dies_fails_the_run_loudly_and_a_rerun_resumes(reference, crawl, tmp_path):
    """The shard writer dies in every write of shard 3: Ray restarts it and retries, the packer sends the write
    again a bounded number of times, then the run exits non-zero saying so, with no checkpoint counting the
    shard; the same command without the fault finishes the job identically."""
    c, tok = crawl
    ref_out, ref_summary = reference
    out = tmp_path / "out"
    cmd = _write_config(tmp_path / "c.yaml", str(c.manifest_path), out, tok)
    first = subprocess.run(cmd, env={**os.environ, FAULT_ENV: "shard_write:3"}, capture_output=True, text=True,
                           timeout=600)
    assert first.returncode == 1, first.stderr[-2000:]
    assert "shard writer lost while writing shard 3: written again" in first.stderr
    assert "shard writer actors keep dying at shard 3" in first.stderr and "rerun to resume" in first.stderr
    assert "run aborted:" in first.stderr and "Traceback" not in first.stderr
    before = Ledger(Storage(), str(out)).load()
    assert before.packer.shards_closed <= 3 and not (out / SHARDS_DIR / "shard-000003.json").exists()
    second = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert second.returncode == 0, second.stderr[-2000:]
    s = _assert_complete_and_identical(out, ref_out, ref_summary)
    assert s["this_run"]["resumed_at"] == before.next_ordinal


@pytest.mark.slow
def test_sigterm_checkpoints_exits_130_and_a_rerun_resumes(reference, crawl, tmp_path):
    """SIGTERM (what `ray job stop` and Kubernetes send) checkpoints the committed prefix and exits 130,
    not Ray's own handler's exit 15; the same command then finishes the job identically."""
    c, tok = crawl
    ref_out, ref_summary = reference
    out = tmp_path / "out"
    ledger = Ledger(Storage(), str(out))
    with _held_server(c) as www:  # WARC #5 waits: the run is stopped mid-run, whatever the machine's speed
        cmd = _write_config(tmp_path / "c.yaml", str(c.manifest_path), out, tok, base=www.url,
                            checkpoint_interval=3600)
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 240
        while (proc.poll() is None and time.monotonic() < deadline
               and not (out / SHARDS_DIR / "shard-000002.json").exists()):
            time.sleep(0.01)
        assert proc.poll() is None, "the run ended before it could be stopped"
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=300)
        www.release()
        assert proc.returncode == 130, stderr[-2000:]
        done = ledger.load().next_ordinal
        assert 0 < done < N_WARCS  # with a 3600 s interval only the interrupt wrote a checkpoint
        # the report of the committed prefix, which says it is partial
        assert f"the committed prefix's report: {out / 'report.html'}" in stderr
        page = page_data(out / "report.html")
        assert page["partial"] and page["committed"] == done and page["total"] == N_WARCS
        second = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert second.returncode == 0, second.stderr[-2000:]
    s = _assert_complete_and_identical(out, ref_out, ref_summary)
    assert s["this_run"]["resumed_at"] == done and s["this_run"]["processed"] == N_WARCS - done
