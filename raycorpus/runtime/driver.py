"""The driver: the work queue and the in-order committer.

WARCs are dispatched to a pool of stateless workers (bounded in flight), finish in any
order, and are committed strictly in manifest order through a bounded reorder buffer:
tokenizer actors encode, the packer actor writes shards and then the ledger. Failed WARCs
are retried with backoff, then committed as failed at their place in the order.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import os
import random
import signal
import threading
import time
from collections import Counter, deque
from collections.abc import Iterator
from dataclasses import dataclass

import ray
from ray.exceptions import GetTimeoutError, RayActorError, RayTaskError

from raycorpus import __version__
from raycorpus.config import Config
from raycorpus.ingest.manifest import count_manifest, iter_manifest_entries
from raycorpus.ingest.storage import Storage
from raycorpus.output.commit import fault_env
from raycorpus.output.ledger import Ledger, LedgerError
from raycorpus.output.lock import OutputLock
from raycorpus.output.summary import build_summary
from raycorpus.runtime.actors import PackerActor, TokenizerActor, WarcWorker, on_this_node, peak_rss_mb
from raycorpus.runtime.dedup import DedupStage
from raycorpus.runtime.metrics import Metrics
from raycorpus.runtime.progress import Progress

try:  # Ray >= 2.10
    from ray.exceptions import ActorUnavailableError
except ImportError:  # pragma: no cover
    ActorUnavailableError = RayActorError

ACTOR_LOST = (RayActorError, ActorUnavailableError)
LEASE_REFRESH_SECONDS = 15.0  # lock.json heartbeat (the lease is 120 s)
RESULT_PULL_SECONDS = 300.0  # longest wait for a finished WARC's results to reach the driver's node
MAX_RECOVERIES_AT_ONE_WARC = 3  # packer / tokenizer losses before the same WARC; then the run fails

log = logging.getLogger("raycorpus")


class RunInterrupted(Exception):
    """Ctrl-C / SIGTERM: the committed prefix is checkpointed; rerun to resume."""


class RunAborted(RuntimeError):
    """The run cannot go on (actors keep dying, no worker can start); the ledger is consistent: rerun to resume."""


@dataclass
class Task:
    ordinal: int
    warc: str  # the manifest line: the WARC's identity in shards and ledger
    url: str  # where it is read from
    attempts: int = 0
    error: str = ""
    started: float = 0.0  # monotonic time of the current attempt's dispatch
    timed_out: bool = False


@dataclass
class Sent:
    """A WARC sent to the packer, held until a durable checkpoint names it: if the packer or a
    tokenizer is lost it is sent again from here, with the same dedup decision (never taken twice)."""

    task: Task
    summary: dict | None  # None: listed as failed
    docs: ray.ObjectRef | None = None  # its documents, released once the packer has taken the WARC
    decision: dict | None = None
    encoded: ray.ObjectRef | None = None  # the tokenizer's output, what a replacement packer is sent


def _fault_options() -> dict:
    """Test-only: actor options that let RAYCORPUS_FAULT reach the actors."""
    env = fault_env()
    return {"runtime_env": {"env_vars": env}} if env else {}


def init_ray(cfg: Config) -> None:
    """Join RAY_ADDRESS / ray.address if given, else start a private local Ray."""
    if ray.is_initialized():
        return
    # ray.init installs its own SIGTERM handler (exit 15); keep the caller's (the CLI's: checkpoint, exit 130)
    previous = signal.getsignal(signal.SIGTERM) if threading.current_thread() is threading.main_thread() else None
    try:
        _start_or_join(cfg)
    finally:
        if callable(previous):
            signal.signal(signal.SIGTERM, previous)


def _start_or_join(cfg: Config) -> None:
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    address = cfg.ray.address or os.environ.get("RAY_ADDRESS")
    if address:
        ray.init(address=address, log_to_driver=True)
    else:
        if cfg.ray.loopback_only:
            # Ray's single-machine mode (its default on macOS/Windows): the node address is 127.0.0.1, so
            # every Ray process and the metrics endpoint bind to loopback instead of all interfaces.
            # Ray reads this at import; set it for the processes it starts and for this one.
            os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
            ray._private.ray_constants.ENABLE_RAY_CLUSTER = False
        ray.init(
            num_cpus=cfg.ray.num_cpus,
            object_store_memory=cfg.ray.object_store_memory,
            include_dashboard=cfg.ray.dashboard,
            dashboard_host=cfg.ray.dashboard_host,
            _metrics_export_port=cfg.ray.metrics_export_port,
            log_to_driver=True,
        )


def check_run_identity(ledger: Ledger, run: dict) -> None:
    """Refuse to resume into an output built from another config, manifest or tokenizer."""
    old = ledger.read_run()
    if old is None:
        ledger.write_run(run)
        return
    for key in ("config_fingerprint", "manifest", "base", "warcs", "tokenizer_sha256"):
        if old.get(key) != run.get(key):
            raise LedgerError(
                f"output {ledger.out_url} was started with a different {key} "
                f"({old.get(key)!r}, now {run.get(key)!r}); use a new output path or the original settings"
            )


class WorkerPool:
    """Stateless extraction actors, sized from cluster CPUs and re-checked periodically."""

    def __init__(self, cfg: Config, decontam_index: ray.ObjectRef | None = None):
        self.cfg = cfg
        self.decontam_index = decontam_index  # one copy in the object store, shared by every worker
        self.ready: dict[ray.actor.ActorHandle, int] = {}  # actor -> tasks in flight
        self.starting: dict[ray.ObjectRef, ray.actor.ActorHandle] = {}
        self._last_check = 0.0

    def target_size(self) -> int:
        if self.cfg.ray.workers:
            return self.cfg.ray.workers
        cpus = ray.cluster_resources().get("CPU", 1.0)
        n = max(1, int(cpus // self.cfg.ray.worker_cpus))
        return min(n, self.cfg.ray.max_workers or n)

    def resize(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last_check < self.cfg.ray.resize_interval_seconds:
            return
        self._last_check = now
        missing = self.target_size() - len(self.ready) - len(self.starting)
        for _ in range(max(0, missing)):
            actor = WarcWorker.options(num_cpus=self.cfg.ray.worker_cpus, max_restarts=0,
                                       **_fault_options()).remote(self.cfg, self.decontam_index)
            self.starting[actor.ready.remote()] = actor
        self.poll_starting()

    def poll_starting(self) -> None:
        if not self.starting:
            return
        done, _ = ray.wait(list(self.starting), num_returns=len(self.starting), timeout=0)
        for ref in done:
            actor = self.starting.pop(ref)
            try:
                ray.get(ref)
                self.ready[actor] = 0
            except ACTOR_LOST:
                pass  # its node went away while it started; resize() will try again

    def wait_until_any_ready(self, timeout: float = 300.0) -> None:
        deadline = time.monotonic() + timeout
        while not self.ready:
            if not self.starting:
                self.resize(force=True)
            ray.wait(list(self.starting), num_returns=1, timeout=1.0)
            self.poll_starting()
            if time.monotonic() > deadline:
                raise RunAborted("no extraction worker could start within 300 s: does the cluster have a free CPU?")

    def pick(self) -> ray.actor.ActorHandle | None:
        if not self.ready:
            return None
        return min(self.ready, key=self.ready.get)

    def capacity(self) -> int:
        return len(self.ready) * self.cfg.ray.in_flight_per_worker

    def remove(self, actor) -> None:
        self.ready.pop(actor, None)
        try:
            ray.kill(actor)
        except Exception:
            pass


def _manifest_tasks(cfg: Config, storage: Storage, start: int) -> Iterator[Task]:
    entries = iter_manifest_entries(cfg.input.manifest, cfg.input.base, storage)
    for ordinal, (warc, url, problem) in enumerate(itertools.islice(entries, cfg.input.limit)):
        if ordinal >= start:
            yield Task(ordinal, warc, url, error=problem or "")


def _error_text(e: BaseException) -> str:
    cause = e.cause if isinstance(e, RayTaskError) and getattr(e, "cause", None) else e
    text = f"{type(cause).__name__}: {cause}"
    return text.splitlines()[0][:500] if text else type(cause).__name__


def run_build(cfg: Config, token_meta: dict, progress_mode: str | None = None) -> dict:
    """Build (or resume) the corpus described by ``cfg``; return the run summary."""
    storage = Storage(cfg.storage)
    total = count_manifest(cfg.input.manifest, cfg.input.base, storage)
    if cfg.input.limit:
        total = min(total, cfg.input.limit)
    ledger = Ledger(storage, cfg.output.path)
    lock = OutputLock(storage, cfg.output.path)
    lock.acquire()  # refuses while another live run writes this output
    try:
        return _run_locked(cfg, token_meta, progress_mode, storage, total, ledger, lock)
    finally:
        lock.release()


def _run_locked(cfg: Config, token_meta: dict, progress_mode: str | None, storage: Storage, total: int,
                ledger: Ledger, lock: OutputLock) -> dict:
    check_run_identity(ledger, {
        "raycorpus": __version__,
        "config_fingerprint": cfg.fingerprint(),
        "manifest": cfg.input.manifest,
        "base": cfg.input.base,
        "warcs": total,
        "tokenizer_sha256": token_meta["tokenizer_sha256"],
        "token_meta": token_meta,
    })
    state = ledger.load()
    if state.complete:
        return build_summary(cfg, ledger.load(), total, run_stats={"resumed_at": total, "processed": 0})

    init_ray(cfg)
    t_init = time.monotonic()

    def start_packer(replacement: bool = False):
        return PackerActor.options(num_cpus=0, max_restarts=0, scheduling_strategy=on_this_node(),
                                   **_fault_options()).remote(
            cfg, token_meta, lock.run_id, replacement)

    packer = start_packer()
    start = ray.get(packer.progress.remote())["next_ordinal"]
    tokenizers = [
        TokenizerActor.options(num_cpus=0, max_restarts=-1, max_task_retries=3,
                               scheduling_strategy=on_this_node(), **_fault_options()).remote(cfg)
        for _ in range(cfg.ray.tokenizers)
    ]
    dedup = DedupStage(cfg, ledger) if cfg.dedup.enabled else None
    if dedup is not None and start:
        dedup.rebuild()
    from raycorpus.process.filters import Chain

    resources = Chain.shared_resources(cfg.filters, storage)  # built once per run (decontam's n-gram index)
    pool = WorkerPool(cfg, ray.put(resources))  # one copy in the object store, shared by every worker
    pool.resize(force=True)
    pool.wait_until_any_ready()

    queue = _manifest_tasks(cfg, storage, start)
    retry_heap: list[tuple[float, int, Task]] = []
    inflight: dict[ray.ObjectRef, tuple[Task, ray.actor.ActorHandle, tuple]] = {}
    finished: dict[int, tuple[Task, dict | None, tuple]] = {}
    commits: deque[ray.ObjectRef] = deque()  # packer.commit / fail calls, in manifest order
    sent: deque[Sent] = deque()  # what those were sent, until a durable checkpoint names it
    recoveries = {"packer": 0, "tokenizer": 0}
    stuck_at = (-1, 0)  # (packer position, recoveries there)
    next_commit = start
    highest_dispatched = start - 1
    exhausted = False
    processed = retried = bytes_read = 0
    processed_by_node: Counter[str] = Counter()  # node id -> WARCs its workers processed
    rr = itertools.cycle(tokenizers)
    progress = Progress(total=total, start=start, mode=progress_mode or cfg.run.progress)
    t_start = time.monotonic()  # throughput counts from here: actor start-up is reported apart
    max_workers = len(pool.ready)
    last = first = ray.get(packer.progress.remote())
    metrics = Metrics(cfg.output.path)
    reported = dict(first)  # what the token / shard counters have been advanced to
    indexed = state.totals.get("dedup_indexed", 0)  # documents in the LSH index

    def report_metrics() -> None:
        done = last["next_ordinal"]
        for kind, n in (("total", total), ("committed", last["committed"]), ("failed", last["failed"]),
                        ("in_flight", len(inflight)), ("buffered", len(finished)),
                        ("pending", total - done - len(inflight) - len(finished))):
            metrics.set("raycorpus_warcs", max(0, n), state=kind)
        eta = progress.eta_seconds(done)
        metrics.set("raycorpus_eta_seconds", 0.0 if done >= total else (eta if eta is not None else -1.0))
        metrics.set("raycorpus_workers", len(pool.ready))
        metrics.set("raycorpus_cluster_cpus", ray.cluster_resources().get("CPU", 0.0))
        for key, name in (("tokens", "raycorpus_tokens_total"), ("shards", "raycorpus_shards_total")):
            metrics.inc(name, last[key] - reported[key])
            reported[key] = last[key]
        if dedup is not None:
            metrics.set("raycorpus_lsh_indexed_docs", indexed)

    def reorder_limit() -> int:
        return cfg.ray.reorder_buffer or 4 * max(1, len(pool.ready))

    def next_task() -> Task | None:
        nonlocal exhausted
        if retry_heap and retry_heap[0][0] <= time.monotonic():
            return heapq.heappop(retry_heap)[2]
        if exhausted or highest_dispatched - next_commit + 1 >= reorder_limit():
            return None
        task = next(queue, None)
        if task is None:
            exhausted = True
        return task

    def send(item: Sent) -> None:
        task = item.task
        if item.summary is None:
            commits.append(packer.fail.remote(task.ordinal, task.warc, task.error, task.attempts))
            return
        if item.docs is not None:  # not taken by the packer yet: (re-)encode, deterministically
            item.encoded = next(rr).encode.remote(task.ordinal, task.warc, item.docs, item.decision)
        commits.append(packer.commit.remote(task.ordinal, task.warc, item.summary, item.encoded, task.attempts))

    def note(position: dict) -> None:
        nonlocal last
        last = position
        while sent and sent[0].task.ordinal < position["durable_ordinal"]:
            sent.popleft()
        for item in sent:
            if item.task.ordinal >= position["next_ordinal"]:
                break
            item.docs = None

    def collect(ref: ray.ObjectRef) -> None:
        try:
            note(ray.get(ref))
        except ACTOR_LOST as e:  # the packer, or the tokenizer that encoded this WARC
            recover(e)

    def recover(error: BaseException) -> None:
        """Replace a lost packer (it reopens at its last checkpoint) and send again, in order, every
        WARC it has not taken; a WARC whose tokenizer was lost is encoded again."""
        nonlocal packer, stuck_at
        commits.clear()  # the calls after a failed one fail too (out of order): all are sent again below
        encoding = [i.encoded for i in sent if i.encoded is not None]
        if encoding:  # let the tokenizers finish writing before a new writer cleans up
            ray.wait(encoding, num_returns=len(encoding), fetch_local=False)
        try:
            position = ray.get(packer.progress.remote())
            role = "tokenizer"
        except ACTOR_LOST:
            role = "packer"
            packer = start_packer(replacement=True)
            position = ray.get(packer.progress.remote())
        recoveries[role] += 1
        at = position["next_ordinal"]
        stuck_at = (at, stuck_at[1] + 1 if stuck_at[0] == at else 1)
        if stuck_at[1] > MAX_RECOVERIES_AT_ONE_WARC:
            raise RunAborted(f"{role} actors keep dying at WARC #{at} ({_error_text(error)}); "
                               "the ledger is consistent, rerun to resume")
        resend = [i for i in sent if i.task.ordinal >= at]
        if [i.task.ordinal for i in resend] != list(range(at, next_commit)):
            raise RunAborted(f"{role} actor lost and WARC #{at} is no longer held by the driver "
                               f"({_error_text(error)}); the ledger is consistent, rerun to resume")
        log.warning("%s actor lost (%s): WARCs #%d-#%d sent again%s", role, _error_text(error), at,
                    next_commit - 1, " to a new packer resumed from its last checkpoint" if role == "packer" else "")
        for item in resend:
            send(item)

    def packer_call(method: str) -> None:
        """``checkpoint`` or ``finish`` once everything sent is taken, through packer losses."""
        while True:
            while commits:
                collect(commits.popleft())
            try:
                note(ray.get(getattr(packer, method).remote()))
                return
            except ACTOR_LOST as e:
                recover(e)

    def dedup_decide(task: Task, summary: dict, dedup_ref: ray.ObjectRef) -> tuple[dict, dict]:
        payload = ray.get(dedup_ref)
        for _ in range(3):
            try:
                decision, record = dedup.decide(task.ordinal, payload)
                break
            except ACTOR_LOST:  # rebuild lost shards from the ledger, which must hold every earlier WARC
                packer_call("checkpoint")
                dedup.replace_lost(_is_alive)
        else:
            raise RunAborted("LSH shard actors keep dying; the ledger is consistent, rerun to resume")
        counts = dict(summary["counts"])
        tag = cfg.filters.mode == "tag"
        for kind, n in decision.counts().items():
            if n:
                counts[f"{'tag' if tag else 'drop'}:dedup:{kind}"] = n
                if not tag:
                    counts["kept"] -= n
        counts["dedup_indexed"] = decision.indexed
        info = {"kind": decision.kind, "dup_of": decision.dup_of, "jaccard": decision.jaccard,
                "record": record if decision.indexed else None, "audit": cfg.dedup.audit,
                "eligible": decision.eligible}
        return {**summary, "counts": counts}, info

    dedup_stats: dict = {}
    memory: dict = {}
    killed: set = set()  # workers killed for a timeout
    try:
        last_beat = last_report = time.monotonic()
        while next_commit < total:
            if time.monotonic() - last_beat > LEASE_REFRESH_SECONDS:
                lock.refresh()
                last_beat = time.monotonic()
            pool.resize()
            pool.poll_starting()
            # dispatch
            while len(inflight) < pool.capacity():
                task = next_task()
                if task is None:
                    break
                if not task.url:  # a manifest line rejected as unsafe: never read, listed as failed in its place
                    finished[task.ordinal] = (task, None, (None, None))
                    highest_dispatched = max(highest_dispatched, task.ordinal)
                    continue
                actor = pool.pick()
                task.attempts += 1
                task.started, task.timed_out = time.monotonic(), False
                meta_ref, *data_refs = actor.process.remote(task.ordinal, task.url)
                inflight[meta_ref] = (task, actor, tuple(data_refs))
                pool.ready[actor] += 1
                highest_dispatched = max(highest_dispatched, task.ordinal)
            # abandon WARCs past the timeout: killing the worker fails the call, which is then retried
            now = time.monotonic()
            for task, actor, _ in list(inflight.values()):
                if not task.timed_out and now - task.started > cfg.warc.timeout_seconds:
                    task.timed_out = True
                    killed.add(actor)
                    pool.remove(actor)
            # collect
            if inflight:
                done, _ = ray.wait(list(inflight), num_returns=1, timeout=0.25)
            else:
                done = []
                time.sleep(0.05)
            for ref in done:
                task, actor, data_refs = inflight.pop(ref)
                if actor in pool.ready:
                    pool.ready[actor] -= 1
                try:
                    summary = ray.get(ref)
                    # copy the results to this node, beside the commit path's actors: a worker node
                    # lost while the WARC waits in the reorder buffer no longer takes them with it
                    ray.wait(list(data_refs), num_returns=len(data_refs), timeout=RESULT_PULL_SECONDS)
                    finished[task.ordinal] = (task, summary, data_refs)
                    processed += 1
                    processed_by_node[summary.get("node", "")] += 1
                    bytes_read += summary["bytes_read"]
                except (RayTaskError, *ACTOR_LOST) as e:
                    task.error = (f"timed out after {cfg.warc.timeout_seconds:g} s (warc.timeout_seconds)"
                                  if task.timed_out else _error_text(e))
                    if actor in killed and not task.timed_out:
                        task.attempts -= 1  # lost with a worker killed for another WARC's timeout: not its fault
                    if isinstance(e, ACTOR_LOST):
                        pool.remove(actor)
                        pool.resize(force=True)
                    if task.attempts < cfg.warc.max_attempts:
                        retried += 1
                        metrics.inc("raycorpus_warc_retries_total")
                        delay = cfg.warc.retry_backoff_seconds * 2 ** (task.attempts - 1)
                        delay *= random.uniform(0.5, 1.5)
                        heapq.heappush(retry_heap, (time.monotonic() + delay, task.ordinal, task))
                    else:
                        finished[task.ordinal] = (task, None, (None, None))
            if not pool.ready:
                pool.wait_until_any_ready()
            # commit in manifest order
            while next_commit in finished:
                task, summary, (docs_ref, dedup_ref) = finished.pop(next_commit)
                if summary is None:
                    sent.append(Sent(task, None))
                else:
                    decision = None
                    if dedup is not None:
                        summary, decision = dedup_decide(task, summary, dedup_ref)
                    metrics.warc_committed(summary)
                    indexed += summary["counts"].get("dedup_indexed", 0)
                    sent.append(Sent(task, summary, docs_ref, decision))
                send(sent[-1])
                next_commit += 1
            while commits and (len(commits) > 8 or _is_ready(commits[0])):
                collect(commits.popleft())
            progress.update(last, inflight=len(inflight), workers=len(pool.ready), buffered=len(finished))
            if time.monotonic() - last_report > 1.0:
                report_metrics()
                last_report = time.monotonic()
            max_workers = max(max_workers, len(pool.ready))
        packer_call("finish")
        progress.update(last, inflight=0, workers=len(pool.ready), buffered=0)
        report_metrics()
        dedup_stats = _dedup_stats(dedup, ledger.load().totals.get("dedup_indexed", 0))
        memory = _peak_memory(pool, tokenizers, packer, dedup)
    except KeyboardInterrupt:
        progress.close()
        _checkpoint_committed(packer, commits)
        raise RunInterrupted from None
    finally:
        progress.close()
        if dedup is not None:
            dedup.kill()
        for actor in [packer, *tokenizers, *pool.ready, *pool.starting.values()]:
            ray.kill(actor)  # on a shared cluster, free the CPUs now rather than at driver exit
    return build_summary(cfg, ledger.load(), total, run_stats={
        "resumed_at": start,
        "docs": last["docs"] - first["docs"],
        "tokens": last["tokens"] - first["tokens"],
        "bytes_read": bytes_read,
        "processed": processed,
        "retried": retried,
        "wall_seconds": round(time.monotonic() - t_start, 3),
        "startup_seconds": round(t_start - t_init, 3),
        "workers": max_workers,
        "warcs_by_node": dict(processed_by_node),
        "actor_recoveries": recoveries,
        **({"dedup": dedup_stats} if dedup is not None else {}),
        "peak_rss_mb": memory,
    })


def _peak_memory(pool: WorkerPool, tokenizers: list, packer, dedup: DedupStage | None) -> dict:
    """Peak RSS per role (the largest of each group), in MB; best effort."""
    groups = {"workers": list(pool.ready), "tokenizers": tokenizers, "packer": [packer],
              "lsh_shards": dedup.actors if dedup is not None else []}
    out = {"driver": peak_rss_mb()}
    for role, actors in groups.items():
        if actors:
            try:
                out[role] = max(ray.get([a.peak_rss_mb.remote() for a in actors], timeout=30))
            except (GetTimeoutError, RayTaskError, *ACTOR_LOST):
                pass
    return out


def _is_alive(actor) -> bool:
    try:
        ray.get(actor.stats.remote(), timeout=60)
        return True
    except (*ACTOR_LOST, GetTimeoutError):
        return False


def _dedup_stats(dedup: DedupStage | None, docs: int) -> dict:
    if dedup is None:
        return {}
    shards = dedup.stats()
    table = sum(s["table_bytes"] for s in shards)
    sig = sum(s["signature_bytes"] for s in shards)
    return {
        "shards": len(shards),
        "restarts": dedup.restarts,
        "indexed_docs": docs,
        "indexed_docs_in_shards": sum(s["documents"] for s in shards),
        "table_bytes": table,
        "signature_bytes": sig,
        "bytes_per_doc": round((table + sig) / docs, 1) if docs else None,
    }


def _is_ready(ref: ray.ObjectRef) -> bool:
    done, _ = ray.wait([ref], timeout=0)
    return bool(done)


def _checkpoint_committed(packer, commits: deque) -> None:
    """On interrupt: let the packer finish what was sent, then checkpoint it."""
    try:
        for ref in commits:
            ray.get(ref, timeout=60)
        ray.get(packer.checkpoint.remote(), timeout=60)
    except (GetTimeoutError, RayActorError, RayTaskError):
        pass  # the last checkpoint on disk is still consistent
