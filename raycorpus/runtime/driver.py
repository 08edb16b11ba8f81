"""The driver: wires the work queue and the committer, runs the loop, and reports.

:class:`~raycorpus.runtime.pool.Dispatcher` sends WARCs to a pool of stateless workers and
hands them back as they finish, in any order; :class:`~raycorpus.runtime.committer.Committer`
commits them strictly in manifest order (dedup, tokenizers, the packer, the ledger). The driver
holds the output lock (and refreshes its lease), shows progress, exports the gauges and
builds the run summary.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Iterator

import ray
from ray.exceptions import GetTimeoutError, RayTaskError

from raycorpus import __version__
from raycorpus import counts as ck
from raycorpus.config import Config
from raycorpus.ingest.growth import ManifestLines
from raycorpus.ingest.storage import Storage, join_url
from raycorpus.output.clusters import read_cluster_summary
from raycorpus.output.grow import reopen_finished
from raycorpus.output.ledger import Ledger, LedgerError, LedgerState
from raycorpus.output.lock import OutputLock
from raycorpus.output.summary import DedupStats, RunSummary, ThisRun, build_summary
from raycorpus.process.dedup.index import DEDUP_DIR
from raycorpus.process.dedup.prior import against_changed, dedup_changes, dedup_decision, dedup_keys, open_priors
from raycorpus.process.dedup.shardlog import remove_unnamed
from raycorpus.process.extract_rules import RULES_REVISION
from raycorpus.process.filters.base import FILTER_RULES
from raycorpus.process.tagrecord import write_tag_config
from raycorpus.process.tokenize import load_tokenizer
from raycorpus.runtime.actors import WarcWorker, cpu_seconds, peak_rss_mb
from raycorpus.runtime.cluster import frozen_heap, init_ray
from raycorpus.runtime.committer import Committer
from raycorpus.runtime.follow import Follower, accept_grown, manifest_lines
from raycorpus.runtime.metrics import Metrics, RunState
from raycorpus.runtime.pool import ACTOR_LOST, Dispatcher, RunAborted, Task, WorkerPool, WorkSource, manifest_tasks
from raycorpus.runtime.progress import Progress
from raycorpus.runtime.split import ranges_per_warc, split_tasks

__all__ = ["RunAborted", "RunInterrupted", "check_run_identity", "run_build"]

LEASE_REFRESH_SECONDS = 15.0  # lock.json heartbeat (the lease is 120 s)
REPORT_SECONDS = 1.0

log = logging.getLogger("raycorpus")


class RunInterrupted(Exception):
    """Ctrl-C / SIGTERM: the committed prefix is checkpointed; rerun to resume."""


def check_run_identity(ledger: Ledger, run: dict, lines: ManifestLines | None = None,
                       earlier: dict[str, str] | None = None) -> None:
    """Refuse to resume into an output built from another config, manifest or tokenizer. With the manifest's
    ``lines``, a grown manifest (the original lines, then new ones) is accepted and recorded in run.json.
    ``earlier``: the config's fingerprints under earlier defaults (:meth:`Config.earlier_defaults`), named when the
    output's is one of them."""
    old = ledger.read_run()
    if old is None:
        ledger.write_run(run)
        return
    check_filter_rules(ledger.out_url, old, run.get("filter_rules", 1))  # first: it says why the fingerprint moved too
    for key in ("config_fingerprint", "manifest", "base", "warcs", "tokenizer_sha256", "source", "dedup_against"):
        if key == "warcs" and lines is not None:
            continue
        if key == "dedup_against" and old.get(key) != run.get(key):
            raise LedgerError(f"output {ledger.out_url}: {against_changed(old.get(key), run.get(key))}")
        if old.get(key) != run.get(key):
            changed = dedup_changes(old, run) if key == "config_fingerprint" else []  # name what is known to differ
            before = next((w for w, fp in (earlier or {}).items() if fp == old.get(key)), None)
            raise LedgerError(
                f"output {ledger.out_url} was started with a different {key} "
                f"({old.get(key)!r}, now {run.get(key)!r})"
                + (f": its dedup settings differ ({'; '.join(changed)})" if changed else "")
                + (f": it was started under an earlier default; to finish it, add `{before}` to its config"
                   if before and key == "config_fingerprint" else "; use a new output path or the original settings")
            )
    if "extract_rules" in old and old["extract_rules"] != run.get("extract_rules"):  # (outputs of before: unknown)
        raise LedgerError(f"output {ledger.out_url} was extracted with the extraction rules of revision "
                          f"{old['extract_rules']}; this raycorpus extracts with revision {run.get('extract_rules')}, "
                          "so its documents would come from two extractors: finish it with the raycorpus that started "
                          "it, or start a new output")
    if lines is not None and (old["warcs"], old.get("manifest_sha256")) != (run["warcs"], run["manifest_sha256"]):
        accept_grown(ledger, old, lines)


def check_filter_rules(out_url: str, old_run: dict, revision: int) -> None:
    """Refuse an output whose documents were judged by another revision of the quality stages' definitions (an
    output without the record is revision 1: every raycorpus before the record judged with those)."""
    old = old_run.get("filter_rules", 1)
    if old != revision:
        raise LedgerError(
            f"output {out_url} was filtered with the quality stages' definitions of revision {old}"
            + (" (raycorpus's own, before FineWeb's)" if old == 1 else "") + f"; this raycorpus filters with revision "
            f"{revision} (datatrove's, FineWeb's), so its documents would be judged by two definitions: finish it "
            "with the raycorpus that started it, or start a new output")


def run_build(cfg: Config, token_meta: dict, progress_mode: str | None = None, work: WorkSource | None = None,
              source: dict | None = None, follow: bool = False) -> RunSummary:
    """Build (or resume) the corpus described by ``cfg``; return the run summary. ``work`` is what the pool
    works on (default: the manifest's WARCs and extraction workers; the replay benchmark and ``raycorpus
    select`` bring their own); ``source``: what select reads (a resume refuses another); ``follow``: once every
    WARC is committed, wait for the manifest to grow and commit the new ones, until SIGTERM / Ctrl-C."""
    storage = Storage(cfg.storage)
    lines = manifest_lines(cfg, storage) if work is None else None
    total = work.total if work is not None else lines.warcs
    ledger = Ledger(storage, cfg.output.path)
    lock = OutputLock(storage, cfg.output.path)
    lock.acquire()  # refuses while another live run writes this output
    try:
        priors = tuple(open_priors(storage, cfg.dedup)) if cfg.dedup.enabled else ()  # read-only
        check_run_identity(ledger, {
            "raycorpus": __version__,
            "config_fingerprint": cfg.fingerprint(),
            "manifest": cfg.input.manifest,
            "base": cfg.input.base,
            "warcs": total,
            **({"manifest_sha256": lines.sha256()} if lines is not None else {}),
            "tokenizer_sha256": token_meta["tokenizer_sha256"],
            "token_meta": token_meta,
            **({"source": source} if source is not None else {}),
            **({"dedup_keys": dedup_keys(cfg.dedup), "dedup_decision": dedup_decision(cfg.dedup)}
               if cfg.dedup.enabled else {}),
            **({"dedup_against": [p.identity() for p in priors]} if priors else {}),
            **({"extract_rules": RULES_REVISION} if work is None and cfg.input.format == "warc" else {}),
            "filter_rules": FILTER_RULES,
        }, lines, cfg.earlier_defaults())
        if cfg.filters.mode == "tag":  # what `raycorpus select` compares its config with
            write_tag_config(storage, cfg.output.path, cfg)
        state = ledger.load()
        if state.complete and (state.next_ordinal < total or follow):  # a grown manifest: its new lines continue it
            state = reopen_finished(storage, cfg.output.path, cfg.output.shard_size_tokens, tuple(cfg.output.format))
        if state.complete:
            if state.dedup:  # an output finished by an earlier raycorpus may hold files its checkpoint does not name
                remove_unnamed(storage, join_url(cfg.output.path, DEDUP_DIR), state.dedup)
            return build_summary(cfg.output.path, state, total, ThisRun(resumed_at=total, processed=0),
                                 read_cluster_summary(storage, cfg.output.path))
        init_ray(cfg)
        if work is None:
            work = WorkSource(total, functools.partial(_warc_tasks, cfg, storage, total), WarcWorker,
                              (_shared_resources(cfg, storage), ray.put(load_tokenizer(cfg.tokenizer).to_str())))
        follower = Follower(cfg, storage, ledger, lines) if follow and lines is not None else None
        return _Build(cfg, token_meta, work, ledger, lock, state, priors, follower).run(progress_mode)
    finally:
        lock.release()


def _warc_tasks(cfg: Config, storage: Storage, total: int, start: int) -> Iterator[Task]:
    """The manifest's WARCs from ``start`` on, each cut into ranges when ``run.split_warcs`` says so."""
    return split_tasks(manifest_tasks(cfg, storage, start), storage, _ranges(cfg, total - start))


def _ranges(cfg: Config, warcs: int) -> int:
    """Ranges per WARC for a run of ``warcs`` WARCs on the pool's worker count (1: not cut)."""
    return ranges_per_warc(cfg, warcs, WorkerPool(cfg).target_size())


def _manifest_size(cfg: Config, storage: Storage) -> int:
    return manifest_lines(cfg, storage).warcs


class _Build:
    """One run of the loop, from actor start-up to the summary."""

    def __init__(self, cfg: Config, token_meta: dict, work: WorkSource, ledger: Ledger, lock: OutputLock,
                 state: LedgerState, priors: tuple = (), follower: Follower | None = None):
        self.cfg, self.total, self.ledger, self.lock = cfg, work.total, ledger, lock
        self.hold = work.hold
        self.follower = follower
        self.t_init = time.monotonic()
        self.metrics = Metrics(cfg.output.path)
        if follower is not None:
            follower.metrics = self.metrics  # its gauges beside the run's
        # never more workers than tasks (WARCs, or their ranges); following, more come
        left = self.total - state.next_ordinal
        tasks = None if follower is not None else left * _ranges(cfg, left)
        self.pool = WorkerPool(cfg, work.worker, work.worker_args, tasks=tasks)
        self.pool.resize(force=True)  # the workers start (imports, models) while the commit path's actors do
        self.committer = Committer(cfg, token_meta, lock.run_id, ledger, self.metrics, state, priors)
        self.start = self.committer.next_commit
        report = self.committer.report
        self.dispatcher = Dispatcher(cfg, self.pool, work.tasks(self.start), self.metrics,
                                     need_docs=self.committer.writers is not None,
                                     bounds=self.committer.sample_bounds if report is not None else None,
                                     retried=report.retried if report is not None else None)

    def run(self, progress_mode: str | None) -> RunSummary:
        progress = None
        try:
            self.pool.wait_until_any_ready()
            progress = Progress(total=self.total, start=self.start, mode=progress_mode or self.cfg.run.progress)
            progress.update(self.committer.position, inflight=0, workers=len(self.pool.ready), buffered=0)  # where
            # it starts (a resumed run's first line is its ledger's position, whatever the first pass commits)
            with frozen_heap():
                t_start = time.monotonic()  # throughput counts from here: actor start-up is reported apart
                cpu_start = {"driver": cpu_seconds(), "driver_main_thread": time.thread_time(), **self._cpu()}
                self._loop(progress)
                while self.follower is not None:  # until SIGTERM / Ctrl-C (or a manifest changed otherwise)
                    self._follow(progress)
            if self.committer.dedup is not None:  # each LSH shard's slice as one file, which the final checkpoint
                self.committer.dedup.compact(self.committer.next_commit)  # names
            self.committer.finish()
            self._report(progress, force=True)
            wall = time.monotonic() - t_start
            stats = self._run_stats(wall, t_start)
            cpu = {"driver": cpu_seconds(), "driver_main_thread": time.thread_time(), **self._cpu()}
            stats.cpu_seconds = {role: round(cpu[role] - cpu_start.get(role, 0.0), 3) for role in cpu}
            return build_summary(self.cfg.output.path, self.ledger.load(), self.total, stats,
                                 read_cluster_summary(self.ledger.storage, self.cfg.output.path))
        except KeyboardInterrupt:
            if progress is not None:
                progress.close()
            self.committer.checkpoint_on_interrupt()
            raise RunInterrupted from None
        finally:
            if progress is not None:
                progress.close()
            self.committer.close()
            for actor in self.pool.actors():
                ray.kill(actor)

    def _follow(self, progress: Progress) -> None:
        """Checkpoint, wait until the manifest grows (the lease and the gauges kept up), then commit the new WARCs."""
        self.committer.checkpoint()
        beat = [time.monotonic()]

        def tick() -> None:
            if time.monotonic() - beat[0] > LEASE_REFRESH_SECONDS:
                self.lock.refresh()
                beat[0] = time.monotonic()

        self.total = progress.total = self.follower.wait_for_growth(tick)
        self.dispatcher.follow_on(self.follower.tasks(self.committer.next_commit))
        self._loop(progress)

    def _loop(self, progress: Progress) -> None:
        last_beat = last_report = time.monotonic()
        while self.committer.next_commit < self.total:
            if time.monotonic() - last_beat > LEASE_REFRESH_SECONDS:
                self.lock.refresh()
                last_beat = time.monotonic()
            for item in self.dispatcher.step(self.committer.window_end(len(self.pool.ready))):
                self.committer.add(item)
            if self.committer.writers is not None:
                self.committer.writers.resize(self.pool.most)
            self.committer.workers = len(self.pool.ready)
            if self._may_commit():
                self.committer.commit_ready()
            while self.committer.lost:
                self.dispatcher.redo(self.committer.lost.pop())
            if time.monotonic() - last_report > REPORT_SECONDS:
                self._report(progress)
                last_report = time.monotonic()
            else:
                progress.update(self.committer.position, inflight=len(self.dispatcher.inflight),
                                workers=len(self.pool.ready), buffered=len(self.committer.buffer))

    def _may_commit(self) -> bool:
        """Whether to commit now: always, but in a replay that holds commits until a round of ``hold`` WARCs is
        ready (as they are for a head that has fallen behind; no more than the reorder buffer holds)."""
        c = self.committer
        if self.hold <= 1:
            return True
        need = min(self.hold, self.total - c.next_commit, c.window_end(len(self.pool.ready)) - c.next_commit)
        return all(o in c.buffer for o in range(c.next_commit, c.next_commit + need))

    def _report(self, progress: Progress, force: bool = False) -> None:
        c, d = self.committer, self.dispatcher
        in_flight, buffered = (0, 0) if force else (len(d.inflight), len(c.buffer))
        progress.update(c.position, inflight=in_flight, workers=len(self.pool.ready), buffered=buffered)
        self.metrics.run_state(RunState(
            total=self.total, position=c.position, first=c.first, in_flight=in_flight, buffered=buffered,
            workers=len(self.pool.ready), cluster_cpus=ray.cluster_resources().get("CPU", 0.0),
            eta_seconds=progress.eta_seconds(c.position.next_ordinal),
            indexed=c.indexed if c.dedup is not None else None))
        if self.follower is not None:
            self.follower.report(self.total - c.position.next_ordinal)
        else:
            self.metrics.follow_state(self.total - c.position.next_ordinal, 0.0)

    def _cpu(self) -> dict[str, float]:
        """The commit path's CPU seconds by role (the pool's workers come and go: not counted), the
        shard-closing tasks' (off the head), the LSH shards' share spent compacting at the end, and the packer's
        main thread's share (with ``driver_main_thread``: the head's own work, Ray's threads left out)."""
        actors = self.committer.actors()
        closing = _per_role({"shard_closing": [self.committer.packer]}, "closing_cpu_seconds", sum)
        compact = _per_role({"lsh_compact": actors["lsh_shards"]}, "compact_cpu_seconds", sum)
        main = _per_role({"packer_main_thread": [self.committer.packer]}, "main_thread_cpu_seconds", sum)
        return {**_cpu_by_role(actors), **closing, **compact, **main}

    def _run_stats(self, wall: float, t_start: float) -> ThisRun:
        c, s = self.committer, self.dispatcher.stats
        dedup = c.dedup
        return ThisRun(
            resumed_at=self.start,
            docs=c.position.docs - c.first.docs,
            tokens=c.position.tokens - c.first.tokens,
            bytes_read=s.bytes_read,
            processed=s.processed,
            warc_ranges=s.ranges,
            retried=s.retried,
            results_lost=s.results_lost,
            wall_seconds=round(wall, 3),
            startup_seconds=round(t_start - self.t_init, 3),
            workers=self.pool.most,
            warcs_by_node=dict(s.by_node),
            actor_recoveries=c.recoveries,
            dedup=None if dedup is None else _dedup_stats(
                dedup, dedup.prior_docs + self.ledger.load().totals[ck.DEDUP_INDEXED]),
            peak_rss_mb=_peak_memory({"workers": list(self.pool.ready), **c.actors()}),
        )


def _shared_resources(cfg: Config, storage: Storage) -> ray.ObjectRef:
    """What the chain's stages need built once per run (decontam's benchmark n-gram index), put in the
    object store once and shared by every worker."""
    from raycorpus.process.filters import Chain

    return ray.put(Chain.shared_resources(cfg.filters, storage))


def _per_role(groups: dict[str, list], method: str, combine) -> dict[str, float]:
    """``combine`` of every actor's ``method()`` answer, per role; best effort (a role that does not answer
    in 30 s is left out)."""
    out = {}
    for role, actors in groups.items():
        if actors:
            try:
                out[role] = combine(ray.get([getattr(a, method).remote() for a in actors], timeout=30))
            except (GetTimeoutError, RayTaskError, *ACTOR_LOST):
                pass
    return out


def _cpu_by_role(groups: dict[str, list]) -> dict[str, float]:
    """CPU seconds used so far by each role's processes (summed over the role's actors)."""
    return _per_role(groups, "cpu_seconds", sum)


def _peak_memory(groups: dict[str, list]) -> dict[str, float]:
    """Peak RSS per role (the largest of each group), in MB."""
    return {"driver": peak_rss_mb(), **_per_role(groups, "peak_rss_mb", max)}


def _dedup_stats(dedup, docs: int) -> DedupStats:
    """The index at the end of the run. Its memory needs every shard's answer: a shard lost after the last decision
    (its files are as the final checkpoint names them) leaves those figures out instead of failing the run."""
    shards = dedup.stats()
    lost = [i for i, s in enumerate(shards) if s is None]
    if lost:
        log.warning("LSH shard(s) %s lost after the last WARC's decision: the index's memory is left out of the "
                    "summary (its files are complete)", lost)

    def total(key: str) -> int | None:
        return None if lost else sum(s[key] for s in shards)

    table, sig = total("table_bytes"), total("signature_bytes")
    return DedupStats(
        shards=len(shards),
        restarts=dedup.restarts,
        rounds=dedup.rounds,
        indexed_docs=docs,  # with dedup.against, the earlier outputs' documents too (prior_docs of them)
        prior_docs=dedup.prior_docs or None,
        indexed_docs_in_shards=total("documents"),
        table_bytes=table,
        signature_bytes=sig,
        bytes_per_doc=round((table + sig) / docs, 1) if docs and table is not None and sig is not None else None,
        start_reads=dedup.reads,  # per shard: its own files and the records of WARCs after them
    )
