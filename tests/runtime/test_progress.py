"""This run's rate, on the progress line and in the summary (runtime/progress.py, the driver's ThisRun).

A resumed run's rate is that of its own work: the documents it committed over its own processing time, not
the output's documents, and not 0 while it has committed WARCs that no checkpoint names yet.
"""

from __future__ import annotations

import io
import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from raycorpus.ingest.storage import Storage
from raycorpus.output.commit import Position
from raycorpus.output.ledger import Ledger
from raycorpus.runtime.progress import Progress, per_second
from tests.support.servers import LocalHTTPServer

N_WARCS = 8
LINE = re.compile(r"WARCs (\d+)/(\d+) \| docs ([\d,]+) \(([\d.,?]+)/s\)")


def _at(next_ordinal: int, docs: int) -> Position:
    return Position(next_ordinal, next_ordinal, next_ordinal, 0, docs, docs * 100, 0, 1)


def test_a_resumed_runs_line_reads_its_own_rate():
    out = io.StringIO()
    progress = Progress(total=8, start=3, mode="log", stream=out)
    progress.update(_at(3, 174), inflight=2, workers=2, buffered=0)  # resumed at WARC #3: nothing done yet
    progress.t0 -= 40.0  # this run has worked 40 s, and committed 20 documents
    progress.update(_at(8, 194), inflight=0, workers=2, buffered=0)
    first, last = (LINE.search(line).groups() for line in out.getvalue().splitlines())
    assert first == ("3", "8", "174", "?")  # no rate before this run has committed anything (it was "0/s")
    assert last[:3] == ("8", "8", "194") and last[3] == "0.5"  # 20 documents in 40 s, not 194 or 0


def test_per_second_keeps_a_slow_rate_visible():
    assert [per_second(r) for r in (None, 0.0, 0.44, 9.96, 10.4, 12345.6)] == ["?", "0.0", "0.4", "10.0", "10",
                                                                                 "12,346"]


def _config(path: Path, manifest: str, out: Path, tokenizer: str, base: str) -> list[str]:
    path.write_text(json.dumps({
        "input": {"manifest": manifest, "base": base},
        "output": {"path": str(out), "shard_size_tokens": 5000},
        "tokenizer": {"path": tokenizer}, "ray": {"workers": 2},
        "warc": {"retry_backoff_seconds": 0.1},
        "run": {"checkpoint_interval_seconds": 0, "progress": "log"}}))
    return [sys.executable, "-m", "raycorpus.cli", "run", str(path)]


def test_a_resumed_runs_summary_rate_is_that_of_its_own_work(crawl, ray_address, tmp_path):
    """Interrupted after two checkpoints (SIGTERM, WARC #5 held so the run cannot finish first), then resumed: the
    resumed run's documents are the ones it added, and its rates are those documents over its own wall time."""
    c, tok = crawl
    out = tmp_path / "out"
    ledger = Ledger(Storage(), str(out))
    with LocalHTTPServer(c.manifest_path.parent, hold=(c.manifest_path.read_text().split()[5],)) as www:
        cmd = _config(tmp_path / "c.json", str(c.manifest_path), out, tok, www.url)
        first = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 300
        while first.poll() is None and time.monotonic() < deadline and not (
                (out / "ledger").exists() and len(ledger.checkpoint_urls()) >= 2):
            time.sleep(0.01)
        assert first.poll() is None, f"the run ended before it could be interrupted: {first.communicate()[1][-2000:]}"
        first.send_signal(signal.SIGTERM)
        assert first.wait(timeout=300) == 130
        first.communicate()
        www.release()
        before = ledger.load()
        assert 0 < before.next_ordinal < N_WARCS and before.packer.docs > 0
        second = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert second.returncode == 0, second.stderr[-3000:]
    after = ledger.load()
    run = json.loads((out / "summary.json").read_text())["this_run"]
    assert run["resumed_at"] == before.next_ordinal and run["processed"] == N_WARCS - before.next_ordinal
    assert run["docs"] == after.packer.docs - before.packer.docs > 0  # this run's documents only
    assert run["tokens"] == after.packer.tokens - before.packer.tokens > 0
    assert run["wall_seconds"] > 0
    assert run["docs_per_second"] == round(run["docs"] / run["wall_seconds"], 1) > 0
    assert run["tokens_per_second"] == round(run["tokens"] / run["wall_seconds"], 1) > 0
    said = re.search(r"this run +(\d+) WARCs in [\d.]+ s: ([\d.,]+) docs/s", second.stdout)
    assert said and int(said[1]) == run["processed"] and float(said[2].replace(",", "")) > 0, second.stdout
    lines = [LINE.search(line).groups() for line in second.stderr.splitlines() if LINE.search(line)]
    assert lines[0][:3] == (str(before.next_ordinal), str(N_WARCS), f"{before.packer.docs:,}") and lines[0][3] == "?"
    assert lines[-1][:3] == (str(N_WARCS), str(N_WARCS), f"{after.packer.docs:,}")
    assert float(lines[-1][3].replace(",", "")) > 0
