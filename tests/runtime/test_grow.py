"""Grown manifests end to end: a rerun with the original lines followed by new ones continues the output
as if it had been one build; any other change to the manifest is refused, naming it."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from raycorpus.ingest.storage import Storage
from raycorpus.output.ledger import Ledger, LedgerError
from tests.support.corpus import make_config, run, shard_digests
from tests.support.servers import LocalHTTPServer


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("# a comment line is not a WARC line\n" + "".join(line + "\n" for line in lines))
    return path


def _lines(crawl) -> list[str]:
    return crawl.sample.manifest_path.read_text().split()


def test_grown_manifest_gives_the_one_shot_bytes(reference, crawl, tmp_path):
    ref_out, ref_summary = reference
    lines = _lines(crawl)
    manifest, out = tmp_path / "warc.paths", tmp_path / "out"
    base = {"base": str(crawl.sample.manifest_path.parent)}
    first = run(make_config(str(_write(manifest, lines[:5])), str(out), crawl.tokenizer, input=base))
    assert first["complete"] and first["warcs"]["total"] == 5
    last = json.loads(sorted((out / "shards").glob("*.json"))[-1].read_text())
    assert last["tokens"] < 5000, "the first build ends in a partly filled shard: the grown build fills it on"
    s = run(make_config(str(_write(manifest, lines)), str(out), crawl.tokenizer, input=base))
    assert s["complete"] and s["this_run"]["resumed_at"] == 5 and s["this_run"]["processed"] == 3
    assert shard_digests(out) == shard_digests(ref_out)
    assert (s["docs"], s["tokens"]) == (ref_summary["docs"], ref_summary["tokens"])
    entries = list(Ledger(Storage(), str(out)).iter_entries())
    assert [e["ordinal"] for e in entries] == list(range(8)) and [e["warc"] for e in entries] == lines
    assert not list((out / "tokens").glob("*")), "a finished output keeps no staged tokens"
    info = json.loads((out / "run.json").read_text())
    assert info["warcs"] == 8 and info["grown_from"][0]["warcs"] == 5
    again = run(make_config(str(manifest), str(out), crawl.tokenizer, input=base))  # nothing new: nothing to do
    assert again["this_run"]["processed"] == 0 and shard_digests(out) == shard_digests(ref_out)


@pytest.mark.parametrize("change, message", [
    (lambda ls: [ls[0], "crawl-data/elsewhere.warc.gz", *ls[2:]], r"a line changed: WARC #1 \(the 2nd WARC line\)"),
    (lambda ls: [ls[0], *ls[2:]], r"a line removed: WARC #1 \(the 2nd WARC line\)"),
    (lambda ls: [ls[1], ls[0], *ls[2:]], r"lines reordered: WARC #0 \(the 1st WARC line\) is now"),
    (lambda ls: ls[:3], r"lines removed: the manifest has 3 WARC lines, the output was started with 5"),
])
def test_any_other_change_is_refused_naming_it(reference, crawl, tmp_path, change, message):
    lines = _lines(crawl)
    manifest, out = tmp_path / "warc.paths", tmp_path / "out"
    base = {"base": str(crawl.sample.manifest_path.parent)}
    run(make_config(str(_write(manifest, lines[:5])), str(out), crawl.tokenizer, input=base))
    before = (out / "run.json").read_bytes()
    _write(manifest, change(lines))  # grown to 8 WARC lines, or cut to 3, and one change among the first 5
    with pytest.raises(LedgerError, match=message):
        run(make_config(str(manifest), str(out), crawl.tokenizer, input=base))
    assert (out / "run.json").read_bytes() == before


def test_grown_run_killed_and_resumed_gives_the_one_shot_bytes(reference, crawl, tmp_path):
    ref_out, _ = reference
    lines = _lines(crawl)
    manifest, out, cfg_path = tmp_path / "warc.paths", tmp_path / "out", tmp_path / "c.yaml"
    root = crawl.sample.manifest_path.parent
    with LocalHTTPServer(root, hold=(lines[6],)) as www:  # WARC #6 waits: the kill lands in the grown part
        cfg_path.write_text(json.dumps({
            "input": {"manifest": str(manifest), "base": www.url},
            "output": {"path": str(out), "shard_size_tokens": 5000},
            "tokenizer": {"path": crawl.tokenizer}, "ray": {"workers": 1},
            "run": {"checkpoint_interval_seconds": 0, "progress": "off"}}))
        cmd = [sys.executable, "-m", "raycorpus.cli", "run", str(cfg_path)]
        _write(manifest, lines[:4])
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)  # does not read WARC #6
        assert r.returncode == 0, r.stderr[-2000:]
        _write(manifest, lines)
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        ledger = Ledger(Storage(), str(out))
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and proc.poll() is None and ledger.load().next_ordinal < 6:
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        www.release()
        assert ledger.load().next_ordinal == 6, "the driver was not killed in the grown part"
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert shard_digests(out) == shard_digests(ref_out)
    assert [e["ordinal"] for e in Ledger(Storage(), str(out)).iter_entries()] == list(range(8))
    r = subprocess.run([sys.executable, "-m", "raycorpus.cli", "verify", str(out)], capture_output=True, text=True)
    assert r.returncode == 0 and "FAIL" not in r.stdout, r.stdout


def _legacy_output(out: Path, lines: list[str], committed: int, complete: bool) -> Ledger:
    """run.json as raycorpus wrote it before grown manifests (no manifest_sha256), and a ledger listing
    the first ``committed`` WARCs."""
    from raycorpus.output.ledger import LedgerState

    ledger = Ledger(Storage(), str(out))
    ledger.write_run({"config_fingerprint": "f", "manifest": "m", "base": None, "warcs": len(lines),
                      "tokenizer_sha256": "t"})
    state = LedgerState(seq=1, next_ordinal=committed, committed=committed, complete=complete)
    ledger.write_checkpoint(state, [{"ordinal": k, "warc": line, "status": "committed"}
                                    for k, line in enumerate(lines[:committed])])
    return ledger


def test_an_output_from_before_the_hash_resumes_with_its_own_manifest_and_then_may_grow(tmp_path):
    from raycorpus.ingest.growth import ManifestLines
    from raycorpus.runtime.driver import check_run_identity

    lines = [f"crawl-data/CC-MAIN-2025-33/segments/{k}/warc/{k}.warc.gz" for k in range(8)]
    run_of = {"config_fingerprint": "f", "manifest": "m", "base": None, "tokenizer_sha256": "t"}
    ledger = _legacy_output(tmp_path / "half", lines[:5], committed=3, complete=False)
    with pytest.raises(LedgerError, match="resume it with its own manifest first"):
        check_run_identity(ledger, run_of | {"warcs": 8, "manifest_sha256": ManifestLines(lines).sha256()},
                           ManifestLines(lines))
    own = ManifestLines(lines[:5])
    check_run_identity(ledger, run_of | {"warcs": 5, "manifest_sha256": own.sha256()}, own)  # resumes as before
    assert ledger.read_run()["manifest_sha256"] == own.sha256()  # and records the hash from now on
    done = _legacy_output(tmp_path / "done", lines[:5], committed=5, complete=True)
    check_run_identity(done, run_of | {"warcs": 8, "manifest_sha256": ManifestLines(lines).sha256()},
                       ManifestLines(lines))
    assert done.read_run()["warcs"] == 8 and done.read_run()["grown_from"] == [{"warcs": 5, "manifest_sha256": None}]
