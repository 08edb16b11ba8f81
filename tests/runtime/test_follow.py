"""`raycorpus run --follow`: lines appended to the manifest while the run follows are committed as they
appear; stopped by SIGTERM (exit 130) and finished by a plain run, the output is a one-shot build's."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from raycorpus.ingest.storage import Storage
from raycorpus.output.ledger import Ledger
from tests.support.corpus import shard_digests


def _committed(out: Path, ledger: Ledger) -> int:
    return ledger.load().next_ordinal if (out / "ledger").exists() else 0


def _wait_for(out: Path, ledger: Ledger, proc: subprocess.Popen, ordinal: int) -> None:
    """Until the ledger holds WARCs below ``ordinal`` (the run does not finish while it follows)."""
    deadline = time.monotonic() + 240
    while _committed(out, ledger) < ordinal:
        assert proc.poll() is None, "the following run stopped"
        assert time.monotonic() < deadline, f"WARC #{ordinal - 1} never committed"
        time.sleep(0.05)


def test_appended_lines_are_committed_and_the_output_equals_a_one_shot_build(reference, crawl, tmp_path):
    ref_out, ref_summary = reference
    lines = crawl.sample.manifest_path.read_text().split()
    manifest, out, cfg_path = tmp_path / "warc.paths", tmp_path / "out", tmp_path / "c.yaml"
    cfg_path.write_text(json.dumps({
        "input": {"manifest": str(manifest), "base": str(crawl.sample.manifest_path.parent)},
        "output": {"path": str(out), "shard_size_tokens": 5000},
        "tokenizer": {"path": crawl.tokenizer}, "ray": {"workers": 1},
        "run": {"checkpoint_interval_seconds": 0, "progress": "log", "follow_interval_seconds": 0.2}}))
    manifest.write_text("".join(f"{line}\n" for line in lines[:3]))
    ledger = Ledger(Storage(), str(out))
    log = (tmp_path / "follow.log").open("w")
    proc = subprocess.Popen([sys.executable, "-m", "raycorpus.cli", "run", str(cfg_path), "--follow"],
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        _wait_for(out, ledger, proc, 3)
        for chunk in (lines[3:6], lines[6:]):  # two later dumps, appended while the run follows
            with manifest.open("a") as f:
                f.write("".join(f"{line}\n" for line in chunk))
            _wait_for(out, ledger, proc, lines.index(chunk[-1]) + 1)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=120) == 130, (tmp_path / "follow.log").read_text()[-2000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        log.close()
    assert not ledger.load().complete  # the last shard is still open: a plain run closes it
    assert json.loads((out / "run.json").read_text())["warcs"] == 8
    r = subprocess.run([sys.executable, "-m", "raycorpus.cli", "run", str(cfg_path)], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    s = json.loads((out / "summary.json").read_text())
    assert s["complete"] and s["this_run"]["processed"] == 0
    assert shard_digests(out) == shard_digests(ref_out)
    assert (s["docs"], s["tokens"]) == (ref_summary["docs"], ref_summary["tokens"])
    assert [e["ordinal"] for e in ledger.iter_entries()] == list(range(8))


def test_warcs_added_under_a_prefix_are_committed_in_sorted_order(reference, crawl, tmp_path):
    """`input.prefix` instead of a manifest: each WARC is copied in under a hidden name and renamed (as an S3
    object appears whole), while the run follows; the names sort as the reference manifest's lines."""
    import shutil

    ref_out, _ = reference
    lines = crawl.sample.manifest_path.read_text().split()
    warcs, out, cfg_path = tmp_path / "warcs", tmp_path / "out", tmp_path / "c.yaml"
    warcs.mkdir()
    cfg_path.write_text(json.dumps({
        "input": {"prefix": str(warcs)}, "output": {"path": str(out), "shard_size_tokens": 5000},
        "tokenizer": {"path": crawl.tokenizer}, "ray": {"workers": 1},
        "run": {"checkpoint_interval_seconds": 0, "progress": "off", "follow_interval_seconds": 0.2}}))

    def add(names: list[str]) -> None:
        for name in names:
            shutil.copy(crawl.sample.manifest_path.parent / name, warcs / f".{name}")
            (warcs / f".{name}").rename(warcs / name)

    add(lines[:4])
    ledger = Ledger(Storage(), str(out))
    proc = subprocess.Popen([sys.executable, "-m", "raycorpus.cli", "run", str(cfg_path), "--follow"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_for(out, ledger, proc, 4)
        add(lines[4:])
        _wait_for(out, ledger, proc, 8)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=120) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    r = subprocess.run([sys.executable, "-m", "raycorpus.cli", "run", str(cfg_path)], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert shard_digests(out) == shard_digests(ref_out)
    assert [e["warc"] for e in ledger.iter_entries()] == lines


def _follower(tmp_path: Path, lines: list[str]):
    from raycorpus.config import config_from_dict
    from raycorpus.runtime.driver import check_run_identity
    from raycorpus.runtime.follow import Follower, manifest_lines

    manifest, out = tmp_path / "warc.paths", tmp_path / "out"
    manifest.write_text("".join(f"{line}\n" for line in lines))
    cfg = config_from_dict({"input": {"manifest": str(manifest), "base": "s3://commoncrawl/"},
                            "output": {"path": str(out)}, "tokenizer": {"path": "unused.json"},
                            "run": {"follow_interval_seconds": 0.01}})
    ledger, first = Ledger(Storage(), str(out)), manifest_lines(cfg, Storage())
    check_run_identity(ledger, {"manifest": str(manifest), "warcs": first.warcs, "manifest_sha256": first.sha256()},
                       first)
    return manifest, ledger, Follower(cfg, Storage(), ledger, first)


def test_the_follower_waits_until_lines_are_appended_and_records_them(tmp_path):
    lines = [f"crawl-data/CC-MAIN-2025-33/segments/{k}/warc/{k}.warc.gz" for k in range(5)]
    manifest, ledger, follower = _follower(tmp_path, lines[:2])
    ticks = []

    def tick() -> None:  # the run's lease and gauges; here also the crawler that appends the next dump
        ticks.append(1)
        if len(ticks) == 3:
            with manifest.open("a") as f:
                f.write("".join(f"{line}\n" for line in lines[2:]))

    assert follower.wait_for_growth(tick) == 5 and len(ticks) >= 3
    assert ledger.read_run()["warcs"] == 5 and ledger.read_run()["grown_from"][0]["warcs"] == 2
    assert [t.warc for t in follower.tasks(2)] == lines[2:]


def test_a_manifest_changed_otherwise_while_following_stops_the_run_naming_it(tmp_path):
    import pytest

    from raycorpus.output.ledger import LedgerError

    lines = [f"crawl-data/CC-MAIN-2025-33/segments/{k}/warc/{k}.warc.gz" for k in range(3)]
    manifest, _, follower = _follower(tmp_path, lines)
    manifest.write_text("".join(f"{line}\n" for line in [lines[0], "crawl-data/other.warc.gz", lines[2]]))
    with pytest.raises(LedgerError, match=r"a line changed: WARC #1 \(the 2nd WARC line\)"):
        follower.wait_for_growth(lambda: None)
