"""The driver's dedup stage (raycorpus/runtime/dedup.py) on the session's Ray cluster."""

from __future__ import annotations

import pytest

from raycorpus.ingest.storage import Storage
from raycorpus.output.ledger import Ledger, LedgerState
from raycorpus.output.summary import DedupStats
from tests.support.corpus import make_config


@pytest.mark.integration
def test_a_shard_lost_after_the_last_decision_leaves_its_memory_out_of_the_summary(ray_address, tmp_path):
    """An LSH shard actor that dies once every WARC is decided (found by the fault soak, benchmarks/soak.py seed
    1001: the shard's node lost as the run ended) no longer fails a finished run at its summary: the index's
    memory figures, which need every shard's answer, are left out."""
    import ray

    from raycorpus.runtime.dedup import DedupStage
    from raycorpus.runtime.driver import _dedup_stats

    out = tmp_path / "out"
    cfg = make_config("unused.paths", str(out), "unused.json", dedup={"shards": 2})
    stage = DedupStage(cfg, Ledger(Storage(), str(out)), LedgerState())
    try:
        whole = _dedup_stats(stage, 0)
        assert whole.shards == 2 and whole.table_bytes and whole.signature_bytes is not None
        ray.kill(stage.actors[1])
        _wait_until_dead(stage.actors[1])  # (a call sent right after the kill may still be answered)
        stats = _dedup_stats(stage, 0)
    finally:
        stage.kill()
    assert stats.model_dump() == DedupStats(
        shards=2, restarts=0, rounds=0, indexed_docs=0, indexed_docs_in_shards=None, table_bytes=None,
        signature_bytes=None, bytes_per_doc=None, start_reads=whole.start_reads).model_dump()
    assert "table_bytes" not in stats.model_dump(mode="json")  # summary.json: not measured, so absent


def _wait_until_dead(actor, timeout: float = 120.0) -> None:
    import time

    import ray
    from ray.exceptions import RayActorError

    from raycorpus.runtime.pool import ActorUnavailableError

    deadline = time.monotonic() + timeout
    while True:
        try:
            ray.get(actor.stats.remote(), timeout=30)
        except (RayActorError, ActorUnavailableError):
            return
        assert time.monotonic() < deadline, "the killed shard actor still answers"
        time.sleep(0.2)
