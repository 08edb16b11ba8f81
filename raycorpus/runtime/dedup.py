"""The driver's side of online dedup: LSH shard actors over the cluster, decisions at commit, replacements.

Each shard actor holds one slice of the index in memory and its own durable files (see
:mod:`raycorpus.process.dedup.shardlog`); it is placed by Ray wherever its memory reservation
fits (``SPREAD``), not on the driver's node, so a cluster of N nodes holds an index N times larger
than one node. A shard starts from what the last checkpoint names for it plus the dedup records
of the WARCs committed since (normally none): a resumed or replaced shard reads its own slice only.
"""

from __future__ import annotations

import itertools
import logging
import time
from dataclasses import dataclass

import ray
from ray.exceptions import GetTimeoutError, RayActorError

from raycorpus import counts as ck
from raycorpus.config import Config
from raycorpus.output.ledger import Ledger, LedgerState
from raycorpus.process.dedup.arrays import Stacked
from raycorpus.process.dedup.index import Decision, Deduplicator, Layout, WarcRows
from raycorpus.process.dedup.prior import PriorIndex
from raycorpus.process.dedup.shardlog import ShardFiles
from raycorpus.process.results import DedupPayload
from raycorpus.runtime.actors import LshShardActor
from raycorpus.runtime.pool import ActorUnavailableError, RunAborted

log = logging.getLogger("raycorpus")

BYTES_PER_DOC = 510  # tables (URL keys included) + id + 192-byte OPH sketch per indexed document, measured (the
# reservation basis): 240 presized / 299 grown + 200 at 1 M documents
PARAGRAPH_BYTES_PER_DOC = 230  # dedup.paragraphs: ~27 distinct keyed paragraphs per indexed document (the bench
# WARC's, docs/dedup.md) x 8.5 bytes in a shard's key set
MIN_SHARD_MEMORY = 256 * 2**20
RESTART_SECONDS = 120.0
PLACEMENT_REPORT_SECONDS = 5.0  # a shard Ray has not placed by then is reported (Ray itself says nothing)
PLACEMENT_REPORT_EVERY = 60.0  # and again while it waits


class RayShards:
    """:class:`raycorpus.process.dedup.index.ShardSet` over actors. Calls from this one caller run in
    submission order on each actor. A decided WARC's inserts go with the next call each shard gets (the next
    round's query, or a flush), which applies them first: one call per shard and WARC fewer."""

    def __init__(self, actors: list):
        self.actors = actors
        self.pending: list[list[tuple]] = [[] for _ in actors]  # per shard, (ordinal, Taken) not sent yet

    def take_pending(self, upto: int | None = None) -> list[Stacked | None]:
        """Each shard's insert requests not sent yet, of the WARCs below ``upto`` (None: all); None: none."""
        out = []
        for s, pending in enumerate(self.pending):
            send = [p for p in pending if upto is None or p[0] < upto]
            self.pending[s] = pending[len(send):]  # (in manifest order)
            out.append(Stacked(send) if send else None)
        return out

    def forget_pending(self) -> None:
        self.pending = [[] for _ in self.actors]

    def query(self, requests):
        inserts = self.take_pending()
        return ray.get([a.query.remote(Stacked(r), insert=i) for a, r, i in zip(self.actors, requests, inserts,
                                                                                   strict=True)])

    def documents(self, requests):
        return ray.get([a.documents.remote(r) for a, r in zip(self.actors, requests, strict=True)])

    def take(self, requests, ordinal):
        for pending, r in zip(self.pending, requests, strict=True):
            pending.append((ordinal, r))


def default_shards(cfg: Config) -> int:
    if cfg.dedup.shards:
        return cfg.dedup.shards
    return max(1, int(ray.cluster_resources().get("CPU", 1.0) // 16))


def shard_memory(cfg: Config, shards: int) -> int | None:
    """Bytes of Ray memory one shard reserves: ``dedup.shard_memory``, or its share of ``expected_docs``
    (None when neither is known: the index's size is then unknown)."""
    if cfg.dedup.shard_memory:
        return cfg.dedup.shard_memory
    if not cfg.dedup.expected_docs:
        return None
    per_doc = BYTES_PER_DOC + (PARAGRAPH_BYTES_PER_DOC if cfg.dedup.paragraphs.enabled else 0)
    return max(MIN_SHARD_MEMORY, int(cfg.dedup.expected_docs / shards * per_doc * 1.25))



def shard_needs(cfg: Config, memory: int | None) -> dict[str, float]:
    """What one LSH shard actor reserves, by Ray resource name: ``dedup.shard_resources``, CPUs and memory."""
    needs = {k: float(v) for k, v in cfg.dedup.shard_resources.items()}
    if cfg.dedup.shard_cpus:
        needs["CPU"] = cfg.dedup.shard_cpus
    if memory:
        needs["memory"] = float(memory)
    return needs


@dataclass(frozen=True)
class NodeOffer:
    """One node of the cluster as Ray lists it (``ray.nodes()``): where, whether alive, its resources in all."""

    address: str
    alive: bool
    resources: dict[str, float]

    def holds(self, needs: dict[str, float]) -> bool:
        return all(self.resources.get(k, 0.0) >= v for k, v in needs.items())


def cluster_nodes() -> list[NodeOffer]:
    return [NodeOffer(n.get("NodeManagerAddress") or n.get("NodeID", "?"), bool(n.get("Alive")),
                      dict(n.get("Resources") or {})) for n in ray.nodes()]


def _need_text(needs: dict[str, float]) -> str:
    """``lsh: 1 (dedup.shard_resources), 2.00 GiB memory (dedup.shard_memory)``: each need and its setting."""
    said = {"CPU": "dedup.shard_cpus", "memory": "dedup.shard_memory or expected_docs"}
    return ", ".join((f"{v / 2**30:.2f} GiB memory" if k == "memory" else f"{k}: {v:g}")
                     + f" ({said.get(k, 'dedup.shard_resources')})" for k, v in needs.items()) or "nothing"


def placement_report(needs: dict[str, float], nodes: list[NodeOffer], seen: frozenset[str] = frozenset()) -> str:
    """Why a shard is not placed: what it needs (``dedup.shard_resources``, CPUs, memory) and which nodes offer
    it. Ray lists a dead node without its resources, so ``seen``: the nodes this run saw offering it."""
    alive = [n.address for n in nodes if n.alive and n.holds(needs)]
    text = f"each needs {_need_text(needs)}"
    if alive:
        return f"{text}; live nodes that offer it: {', '.join(alive)} (taken now, or Ray is still starting its process)"
    missing = sorted(k for k, v in needs.items() if not any(n.alive and n.resources.get(k, 0.0) >= v for n in nodes))
    lacking = f"no live node offers {', '.join(missing)}" if missing else "no live node offers all of it together"
    dead = sorted({n.address for n in nodes if not n.alive})
    lost = [a for a in dead if a in seen]
    if lost:
        return f"{text}; {lacking}; the nodes that offered it, now dead: {', '.join(lost)}"
    if dead:
        return f"{text}; {lacking}; dead nodes (what they offered is not known): {', '.join(dead)}"
    return f"{text}; {lacking}; no node of this cluster offers it"


def _placed_now(actors: list, indexes: list[int], which: list[int], feasible: bool) -> list[int]:
    """Which of the shards ``which`` Ray has given a process on a node (its constructor may still be loading
    files), from Ray's actor table; where that table cannot say (a private API), those a live node could hold."""
    out = []
    for i, actor in zip(indexes, actors, strict=True):
        if i in which:
            try:
                entry = ray._private.state.state.actor_table(actor._actor_id.hex())
                placed = bool(entry and (entry.get("Address") or {}).get("Port"))
            except Exception:  # another Ray version
                placed = feasible
            if placed:
                out.append(i)
    return out


class DedupStage:
    """Owns the shard actors; ``decide`` is called once per processed WARC, in manifest order."""

    def __init__(self, cfg: Config, ledger: Ledger, state: LedgerState, priors: tuple[PriorIndex, ...] = ()):
        self.cfg, self.ledger, self.priors = cfg, ledger, priors
        self.prior_docs = sum(p.docnos for p in priors)  # dedup.against: numbered before this build's documents
        n = len(state.dedup) if state.dedup else default_shards(cfg)  # a resumed index keeps its shard count
        if priors and not state.dedup and not cfg.dedup.shards:  # the earlier index's count: a shard reads its own
            n = len(priors[0].shards)  # files only (another count reads every file of it, see dedup/prior.py)
        if state.dedup and cfg.dedup.shards and cfg.dedup.shards != n:
            log.warning("dedup.shards is %d but this output's index has %d shards: keeping %d", cfg.dedup.shards, n, n)
        self.layout = Layout.from_config(cfg.dedup, n)
        self.reads: list[dict] = [{}] * n  # what each shard read when it (last) started
        self.offering: set[str] = set()  # nodes seen offering what a shard needs (reported if they are lost)
        self.actors = self._start_all(state, range(n))
        self.shards = RayShards(self.actors)
        self.dedup = Deduplicator(self.layout, cfg.dedup.threshold, self.shards,
                                  self.prior_docs + state.totals[ck.DEDUP_INDEXED], cfg.dedup.paragraphs.threshold)
        self.restarts = 0
        self.starts: list[tuple[int, int]] = []  # the last round's WARCs: (ordinal, first docno)
        self.rounds = 0  # rounds decided by this run

    def _start_all(self, state: LedgerState, indexes) -> list:
        """Start shards from the state's files plus the records of the WARCs committed after them."""
        durable = state.dedup or [ShardFiles()] * self.layout.n_shards
        indexed = self._indexed_since(min(durable[i].upto for i in indexes), state.next_ordinal)
        memory = shard_memory(self.cfg, self.layout.n_shards)
        actors = [LshShardActor.options(
            num_cpus=self.cfg.dedup.shard_cpus, **({"memory": memory} if memory else {}),
            resources=dict(self.cfg.dedup.shard_resources), scheduling_strategy="SPREAD", max_restarts=0,
        ).remote(self.layout, i, self.cfg, durable[i], [o for o in indexed if o >= durable[i].upto], self.priors)
            for i in indexes]
        try:
            ready = self._await_ready(actors, list(indexes), shard_needs(self.cfg, memory))
        except BaseException:
            for a in actors:
                ray.kill(a)
            raise
        expected = self.prior_docs + state.totals[ck.DEDUP_INDEXED]
        if any(r["docnos"] != expected for r in ready):
            raise RuntimeError(f"dedup shards hold {sorted({r['docnos'] for r in ready})} documents, the ledger says "
                               f"{expected}: the output folder was changed by hand")
        for i, r in zip(indexes, ready, strict=True):
            self.reads[i] = {k: v for k, v in r.items() if k != "docnos"}
        return actors

    def _await_ready(self, actors: list, indexes: list[int], needs: dict[str, float]) -> list[dict]:
        """The shards' ``ready()`` answers. A shard Ray has not placed on a node is reported after a few seconds
        (what it needs, which nodes offer it), and once ``dedup.placement_timeout_seconds`` have passed the run
        stops (RunAborted: the ledger is consistent). A placed shard loading its files is waited for."""
        refs = [a.ready.remote() for a in actors]
        self.offering |= {n.address for n in cluster_nodes() if n.alive and n.holds(needs)}  # Ray forgets a dead one's
        start = time.monotonic()
        limit = self.cfg.dedup.placement_timeout_seconds
        report_at, warned, placed = start + PLACEMENT_REPORT_SECONDS, False, set()
        while True:
            done, waiting = ray.wait(refs, num_returns=len(refs), timeout=1.0, fetch_local=False)
            ray.get(done)  # a shard that died starting raises here, at once
            if not waiting:
                if warned:
                    log.warning("LSH shard(s) %s placed and started after %.0f s", indexes, time.monotonic() - start)
                return ray.get(refs)
            now = time.monotonic()
            unknown = [i for i, r in zip(indexes, refs, strict=True) if r in waiting and i not in placed]
            if not unknown or (now < report_at and now - start < limit):
                continue
            nodes = cluster_nodes()
            placed |= set(_placed_now(actors, indexes, unknown, any(n.alive and n.holds(needs) for n in nodes)))
            unplaced = [i for i in unknown if i not in placed]
            if not unplaced:
                continue
            why = placement_report(needs, nodes, frozenset(self.offering))
            if now - start >= limit:
                raise RunAborted(f"LSH shard(s) {unplaced} could not be placed on a node within {limit:g} s "
                                 f"(dedup.placement_timeout_seconds): {why}; the ledger is consistent: offer the "
                                 "resource on a live node (or change dedup.shard_resources) and rerun to resume")
            log.warning("LSH shard(s) %s not placed on a node after %.0f s: %s; waiting up to %g s "
                        "(dedup.placement_timeout_seconds)", unplaced, now - start, why, limit)
            report_at, warned = now + PLACEMENT_REPORT_EVERY, True

    def _indexed_since(self, first: int, end: int) -> list[int]:
        """Committed WARCs ``first <= ordinal < end`` that added documents (or paragraph keys) to the index (they
        have records)."""
        if first >= end:
            return []
        return [e["ordinal"] for e in self.ledger.entries_since(first) if e["ordinal"] < end
                and e["status"] == "committed" and (e["counts"].get("dedup_indexed") or e["counts"].get(
                    "dedup_paragraphs"))]  # (a WARC whose kept documents all went for their paragraphs: keys only)

    def replace_lost(self, is_alive) -> int:
        """Start new actors for the dead ones from the last checkpoint (which the caller has just
        written: it names every earlier WARC); return how many were replaced."""
        lost = [i for i, a in enumerate(self.actors) if not is_alive(a)]
        if lost:
            for i, actor in zip(lost, self._restart(lost), strict=True):
                self.actors[i] = actor
            self.shards.forget_pending()  # a new shard read them from the records; the others took theirs
            self.restarts += len(lost)
            log.warning("LSH shard(s) %s lost: restarted from their files and the WARCs committed since", lost)
        return len(lost)

    def _restart(self, lost: list[int]) -> list:
        """Ray may place a replacement on the very node that was just lost, before it knows the node is
        gone (its health checks take up to ~30 s): such a start fails, and is tried again."""
        deadline = time.monotonic() + RESTART_SECONDS
        while True:
            try:
                return self._start_all(self.ledger.load(), lost)
            except (RayActorError, ActorUnavailableError) as e:
                if time.monotonic() > deadline:
                    raise RunAborted(f"LSH shard(s) {lost} could not be started again within {RESTART_SECONDS:g} s "
                                     f"({e.__class__.__name__}); the ledger is consistent, rerun to resume") from None
                time.sleep(2.0)

    def decide(self, round_: list[tuple[int, DedupPayload]]) -> list[Decision]:
        """The decisions of a round of WARCs (``(ordinal, payload)``, consecutive in manifest order but for failed
        ones), one query per shard for all of them (their ``rows`` say what each record holds: the packer builds
        and writes it from the payload); in tag mode only the documents filter mode would keep take part."""
        warcs = []
        for ordinal, payload in round_:
            hashes, sigs, urls = payload.rows(payload.eligible)
            warcs.append(WarcRows(ordinal, hashes, sigs, urls, payload.keys, payload.paragraphs))
        first = self.dedup.next_docno
        decisions = self.dedup.decide_round(warcs)
        self.rounds += 1
        befores = itertools.accumulate((d.indexed for d in decisions[:-1]), initial=first)
        self.starts = [(o, docno) for (o, _), docno in zip(round_, befores, strict=True)]
        return [d if p.eligible is None else d.expand(p.eligible) for d, (_, p) in zip(decisions, round_, strict=True)]

    def _docnos_below(self, upto: int) -> int:
        """The documents indexed by the WARCs below ``upto`` (the last round may reach beyond it)."""
        return next((docno for o, docno in self.starts if o >= upto), self.dedup.next_docno)

    def flush(self, upto: int) -> list[ray.ObjectRef]:
        """Have every shard write what it took below ``upto`` (called once every WARC below it is decided)."""
        inserts = self.shards.take_pending(upto)
        docnos = self._docnos_below(upto)
        return [a.flush.remote(upto, docnos, insert=i) for a, i in zip(self.actors, inserts, strict=True)]

    def confirm(self, upto: int) -> None:
        """The checkpoint at ``upto`` is durable: the shards may delete the files it no longer names."""
        for a in self.actors:
            a.confirm.remote(upto)

    def stats(self) -> list[dict | None]:
        """Each shard's figures; None for a shard that no longer answers (lost after the last decision: its files
        stay as the last checkpoint named them)."""
        refs = [a.stats.remote() for a in self.actors]
        out: list[dict | None] = []
        for ref in refs:
            try:
                out.append(ray.get(ref, timeout=60))
            except (RayActorError, ActorUnavailableError, GetTimeoutError):
                out.append(None)
        return out

    def kill(self) -> None:
        for a in self.actors:
            ray.kill(a)

    def compact(self, upto: int) -> None:
        """The end of the build (every WARC below ``upto`` decided): each shard writes its slice as one file, which
        the final checkpoint names. A shard lost by now keeps the files the last checkpoint named for it."""
        inserts = self.shards.take_pending()  # the last WARCs', not sent yet
        refs = [a.compact.remote(upto, self.dedup.next_docno, insert=i) for a, i in zip(self.actors, inserts,
                                                                                         strict=True)]
        for i, ref in enumerate(refs):
            try:
                ray.get(ref)
            except (RayActorError, ActorUnavailableError):
                log.warning("LSH shard %d was lost before the end: its files stay as the last checkpoint named them", i)
