"""An LSH shard that no node can hold: reported within seconds, then the run stops resumably (runtime/dedup.py).

The deterministic form of "the only node offering ``dedup.shard_resources`` is gone": a resource no node of the
session's real Ray cluster has. The run must not wait silently: it warns, naming what the shard needs and which
nodes offer it, and after ``dedup.placement_timeout_seconds`` exits 1 (run aborted, rerun to resume) with the
ledger as it was; the same output then finishes with the resource dropped, byte-identical to an undisturbed build.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from raycorpus.ingest.storage import Storage
from raycorpus.output.ledger import Ledger
from raycorpus.output.shards import SHARDS_DIR
from raycorpus.runtime.dedup import NodeOffer, placement_report
from tests.support.corpus import shard_digests
from tests.support.servers import LocalHTTPServer

N_WARCS = 8
NOWHERE = "lsh_nowhere"  # a custom resource no node of the test cluster offers


def _config(path: Path, manifest: str, out: Path, tokenizer: str, base: str, **dedup) -> list[str]:
    path.write_text(json.dumps({
        "input": {"manifest": manifest, "base": base},
        "output": {"path": str(out), "shard_size_tokens": 5000},
        "tokenizer": {"path": tokenizer}, "ray": {"workers": 2},
        "warc": {"retry_backoff_seconds": 0.1},
        "dedup": dedup,
        "run": {"checkpoint_interval_seconds": 0, "progress": "off"}}))
    return [sys.executable, "-m", "raycorpus.cli", "run", str(path)]


def _interrupt_after_checkpoints(cmd: list[str], out: Path, n: int, www: LocalHTTPServer) -> None:
    """Run until ``n`` checkpoints are written (WARC #5 is held: the run cannot finish first), then SIGTERM."""
    ledger = Ledger(Storage(), str(out))
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while proc.poll() is None and time.monotonic() < deadline and not (
            (out / "ledger").exists() and len(ledger.checkpoint_urls()) >= n):
        time.sleep(0.01)
    assert proc.poll() is None, f"the run ended before it could be interrupted: {proc.communicate()[1][-2000:]}"
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=300)
    www.release()
    assert proc.returncode == 130, stderr[-2000:]


def test_a_shard_no_node_can_hold_stops_the_run_resumably(reference, crawl, tmp_path):
    c, tok = crawl
    ref_out, _ = reference
    out = tmp_path / "out"
    ledger = Ledger(Storage(), str(out))
    with LocalHTTPServer(c.manifest_path.parent, hold=(c.manifest_path.read_text().split()[5],)) as www:
        args = (str(c.manifest_path), out, tok, www.url)
        _interrupt_after_checkpoints(_config(tmp_path / "a.json", *args), out, 2, www)
        before = ledger.load()
        checkpoints = ledger.checkpoint_urls()
        assert 0 < before.next_ordinal < N_WARCS

        # the resume asks for a resource no node has: it cannot start its LSH shard
        stuck = subprocess.run(_config(tmp_path / "b.json", *args, shard_resources={NOWHERE: 1},
                                       placement_timeout_seconds=8), capture_output=True, text=True, timeout=300)
        err = stuck.stderr
        assert stuck.returncode == 1, err[-3000:]
        warning = err.find("LSH shard(s) [0] not placed on a node after")
        aborted = err.find("raycorpus: run aborted: LSH shard(s) [0] could not be placed on a node within 8 s "
                           "(dedup.placement_timeout_seconds)")
        assert 0 <= warning < aborted, err[-3000:]  # reported while it waited, then stopped
        for said in (f"each needs {NOWHERE}: 1 (dedup.shard_resources)", f"no live node offers {NOWHERE}",
                     "no node of this cluster offers it"):
            assert err.count(said) == 2, (said, err[-3000:])  # in the warning and in the final message
        assert "the ledger is consistent" in err[aborted:] and "rerun to resume" in err[aborted:]
        assert "Traceback" not in err
        assert ledger.load().next_ordinal == before.next_ordinal and ledger.checkpoint_urls() == checkpoints

        # the same output, the resource dropped (not part of the output): it resumes where it stood
        done = subprocess.run(_config(tmp_path / "c.json", *args), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["complete"] and summary["this_run"]["resumed_at"] == before.next_ordinal
    cpu = summary["this_run"]["cpu_seconds"]  # the end of the build's compaction: a share of the shards' CPU
    assert 0 <= cpu["lsh_compact"] <= cpu["lsh_shards"]
    for role in ("driver", "packer"):  # the head's own work: a share of its processes' CPU (Ray's threads beside it)
        assert 0 < cpu[f"{role}_main_thread"] <= cpu[role]
    assert shard_digests(out) == shard_digests(ref_out)
    assert sorted(f"{SHARDS_DIR}/{p.name}" for p in (out / SHARDS_DIR).iterdir()) == sorted(
        k for k in shard_digests(ref_out) if k.startswith(f"{SHARDS_DIR}/"))


def test_placement_report_names_what_a_shard_needs_and_the_nodes_that_offer_it():
    """The message's diagnosis from the cluster's node list (``ray.nodes()``, which lists a dead node without its
    resources): the hand check's case (the one node offering the resource, seen earlier, is dead), a dead node
    not seen, a resource nobody offers, and live nodes that offer it but are full."""
    needs = {"lsh": 1.0, "memory": 2.0**30}
    head = NodeOffer("127.0.0.2", True, {"CPU": 1.0, "memory": 4.0 * 2**30})
    dead = NodeOffer("127.0.0.3", False, {})
    assert placement_report(needs, [head, dead], frozenset({"127.0.0.3"})) == (
        "each needs lsh: 1 (dedup.shard_resources), 1.00 GiB memory (dedup.shard_memory or expected_docs); no live "
        "node offers lsh; the nodes that offered it, now dead: 127.0.0.3")
    assert placement_report(needs, [head, dead]).endswith(
        "no live node offers lsh; dead nodes (what they offered is not known): 127.0.0.3")
    assert placement_report({"lsh": 1.0}, [head]).endswith("no live node offers lsh; no node of this cluster offers it")
    small = NodeOffer("127.0.0.4", True, {"lsh": 1.0, "memory": 2.0**29})
    assert "no live node offers all of it together" in placement_report(needs, [head, small])
    live = NodeOffer("127.0.0.5", True, {"lsh": 1.0, "memory": 2.0**31})
    assert placement_report(needs, [head, live, dead]).endswith(
        "live nodes that offer it: 127.0.0.5 (taken now, or Ray is still starting its process)")


@pytest.mark.parametrize("bad", [0, -5, "soon"])
def test_placement_timeout_must_be_a_positive_number(bad, tmp_path):
    from raycorpus.config import ConfigError, load_config

    path = tmp_path / "c.yaml"
    path.write_text(json.dumps({"input": {"manifest": "m.paths"}, "output": {"path": "out"},
                                "tokenizer": {"path": "t.json"}, "dedup": {"placement_timeout_seconds": bad}}))
    with pytest.raises(ConfigError, match="dedup.placement_timeout_seconds"):
        load_config(str(path))


def test_a_shard_reserves_memory_for_paragraph_keys_when_paragraph_dedup_is_on():
    from raycorpus.config import config_from_dict
    from raycorpus.runtime.dedup import BYTES_PER_DOC, PARAGRAPH_BYTES_PER_DOC, shard_memory

    raw = {"input": {"manifest": "m"}, "output": {"path": "o"}, "tokenizer": {"path": "t"},
           "dedup": {"expected_docs": 100_000_000}}
    off = shard_memory(config_from_dict(raw), 4)
    raw["dedup"]["paragraphs"] = {"enabled": True}
    on = shard_memory(config_from_dict(raw), 4)
    assert off == int(25_000_000 * BYTES_PER_DOC * 1.25)
    assert on == int(25_000_000 * (BYTES_PER_DOC + PARAGRAPH_BYTES_PER_DOC) * 1.25)
