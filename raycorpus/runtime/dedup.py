"""The driver's side of online dedup: LSH shard actors, decisions at commit, rebuild after a loss."""

from __future__ import annotations

import logging

import ray

from raycorpus.config import Config
from raycorpus.output.ledger import Ledger
from raycorpus.process.dedup.index import Decision, Deduplicator, Layout
from raycorpus.process.results import DedupPayload
from raycorpus.runtime.actors import LshShardActor
from raycorpus.runtime.cluster import on_this_node

log = logging.getLogger("raycorpus")


class RayShards:
    """:class:`raycorpus.process.dedup.index.ShardSet` over actors. Calls from this one caller run in
    submission order on each actor, so WARC k's inserts land before WARC k+1's queries."""

    def __init__(self, actors: list):
        self.actors = actors
        self._pending: list[ray.ObjectRef] = []

    def _settle(self) -> None:
        pending, self._pending = self._pending, []
        ray.get(pending)  # surfaces a failed insert or a dead actor before anything else is asked

    def query(self, requests):
        self._settle()
        return ray.get([a.query.remote(*r) for a, r in zip(self.actors, requests, strict=True)])

    def documents(self, requests):
        return ray.get([a.documents.remote(r) for a, r in zip(self.actors, requests, strict=True)])

    def insert(self, requests):
        self._pending = [a.insert.remote(*r) for a, r in zip(self.actors, requests, strict=True)]


def default_shards(cfg: Config) -> int:
    if cfg.dedup.shards:
        return cfg.dedup.shards
    return max(1, int(ray.cluster_resources().get("CPU", 1.0) // 16))


class DedupStage:
    """Owns the shard actors; ``decide`` is called once per processed WARC, in manifest order."""

    def __init__(self, cfg: Config, ledger: Ledger):
        self.cfg = cfg
        self.ledger = ledger
        self.layout = Layout.from_config(cfg.dedup, default_shards(cfg))
        self.actors = [self._start(i) for i in range(self.layout.n_shards)]
        self.shards = RayShards(self.actors)
        self.dedup = Deduplicator(self.layout, cfg.dedup.threshold, self.shards)
        self.restarts = 0

    def _start(self, index: int):
        return LshShardActor.options(num_cpus=0, max_restarts=0, scheduling_strategy=on_this_node()).remote(
            self.layout, index, self.cfg)

    def _indexed_ordinals(self) -> list[int]:
        return [e["ordinal"] for e in self.ledger.iter_entries()
                if e.get("status") == "committed" and e.get("counts", {}).get("dedup_indexed")]

    def rebuild(self, actors: list | None = None) -> int:
        """Load committed WARCs' records (from the ledger) into ``actors`` (default: all); return
        how many WARCs they came from. Every shard counts the same documents, or this raises."""
        ordinals = self._indexed_ordinals()
        if not ordinals:
            return 0
        counts = set(ray.get([a.load.remote(ordinals) for a in (actors or self.actors)]))
        if actors is None:
            self.dedup.next_docno = counts.pop() if len(counts) == 1 else -1
        if counts - {self.dedup.next_docno} or self.dedup.next_docno < 0:
            raise RuntimeError(f"dedup records disagree with the index ({counts}, {self.dedup.next_docno} "
                               "documents): the output folder was changed by hand")
        return len(ordinals)

    def replace_lost(self, is_alive) -> int:
        """Start new actors for the dead ones and rebuild them; return how many were replaced.

        The caller has made every earlier WARC durable in the ledger first, so the rebuilt
        shards hold exactly the committed documents, as the live ones do.
        """
        lost = [i for i, a in enumerate(self.actors) if not is_alive(a)]
        for i in lost:
            self.actors[i] = self._start(i)
        self.shards._pending = []
        if lost:
            n = self.rebuild([self.actors[i] for i in lost])
            self.restarts += len(lost)
            log.warning("LSH shard(s) %s lost: restarted and rebuilt from %d committed WARCs", lost, n)
        return len(lost)

    def decide(self, ordinal: int, payload: DedupPayload) -> tuple[Decision, bytes]:
        """(decision, record); in tag mode only the documents filter mode would keep take part."""
        eligible, sigs = payload.eligible, payload.signatures
        if eligible is None:
            return self.dedup.decide(ordinal, payload.hashes, sigs)
        decision, record = self.dedup.decide(ordinal, payload.hashes[eligible],
                                             None if sigs is None else sigs[eligible])
        return decision.expand(eligible), record

    def stats(self) -> list[dict]:
        return ray.get([a.stats.remote() for a in self.actors])

    def kill(self) -> None:
        for a in self.actors:
            ray.kill(a)
