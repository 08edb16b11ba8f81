"""The work queue: a pool of stateless WARC workers and the dispatcher that feeds it.

WARCs are sent to the least busy worker (bounded in flight per worker, and by the reorder window
the committer allows), finish in any order and come back as :class:`Finished`. A failed attempt
is retried with jittered exponential backoff; a WARC still running after ``warc.timeout_seconds``
has its worker killed (the call then fails and is retried); after ``warc.max_attempts`` the WARC
comes back as failed, to be listed in its place in the order.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import queue
import random
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import ray
from ray.exceptions import ObjectLostError, RayActorError, RayTaskError

from raycorpus.config import Config
from raycorpus.ingest.manifest import iter_input_entries
from raycorpus.ingest.split import WarcPart
from raycorpus.ingest.storage import Storage
from raycorpus.output.shards import StagingError
from raycorpus.process.profile import SampleBounds
from raycorpus.process.results import WarcSummary
from raycorpus.runtime import faults
from raycorpus.runtime.actors import WarcWorker
from raycorpus.runtime.metrics import Metrics
from raycorpus.runtime.split import RangeGather

try:  # Ray >= 2.10
    from ray.exceptions import ActorUnavailableError
except ImportError:  # pragma: no cover
    ActorUnavailableError = RayActorError

ACTOR_LOST = (RayActorError, ActorUnavailableError)
RESULT_PULL_SECONDS = 300.0  # longest wait for a finished WARC's results to reach the driver's node
WORKER_START_SECONDS = 300.0
EXPIRE_EVERY_SECONDS = 1.0  # how often the WARCs in flight are checked against warc.timeout_seconds


class RunAborted(RuntimeError):
    """The run cannot go on (actors keep dying, no worker can start); the ledger is consistent: rerun to resume."""


@dataclass
class Task:
    ordinal: int
    warc: str  # the manifest line: the WARC's identity in shards and ledger
    url: str  # where it is read from ("" for a line rejected as unsafe: never read)
    attempts: int = 0
    error: str = ""
    started: float = 0.0  # monotonic time of the current attempt's dispatch
    timed_out: bool = False
    part: WarcPart | None = None  # a WARC cut into ranges (run.split_warcs): this task is one of them
    parts: int = 1  # the WARC's ranges


@dataclass
class Finished:
    """A WARC done with the pool: processed (its results in the object store), or failed for good."""

    task: Task
    summary: WarcSummary | None = None  # None: listed as failed (task.error says why)
    docs: ray.ObjectRef | None = None  # the documents (text, metadata): only for the document writers
    dedup: ray.ObjectRef | None = None  # DedupPayload
    staged: ray.ObjectRef | None = None  # WarcTokens: the tokens the worker staged


@dataclass
class WorkSource:
    """What the pool works on: how many WARCs, the tasks from an ordinal on, and the worker actor class
    (``ready()``, ``process(ordinal, url) -> (WarcSummary, docs, DedupPayload)``) with its arguments after cfg."""

    total: int
    tasks: Callable[[int], Iterator[Task]]
    worker: type = WarcWorker
    worker_args: tuple = ()
    hold: int = 1  # commit only once this many WARCs are ready in order (or the rest): the replay's saturated head


@dataclass
class DispatchStats:
    processed: int = 0  # WARCs processed this run
    ranges: int = 0  # of them, record ranges of WARCs cut into ranges (run.split_warcs)
    retried: int = 0
    results_lost: int = 0  # finished WARCs processed again: their results went with their node before commit
    bytes_read: int = 0
    by_node: Counter = field(default_factory=Counter)  # node id -> WARCs its workers processed


def manifest_tasks(cfg: Config, storage: Storage, start: int) -> Iterator[Task]:
    entries = iter_input_entries(cfg.input, storage)
    for ordinal, (warc, url, problem) in enumerate(itertools.islice(entries, cfg.input.limit)):
        if ordinal >= start:
            yield Task(ordinal, warc, url, error=problem or "")


def error_text(e: BaseException) -> str:
    cause = e.cause if isinstance(e, RayTaskError) and getattr(e, "cause", None) else e
    text = f"{type(cause).__name__}: {cause}"
    return text.splitlines()[0][:500] if text else type(cause).__name__


class WorkerPool:
    """Stateless extraction actors, sized from cluster CPUs and re-checked periodically."""

    def __init__(self, cfg: Config, worker: type = WarcWorker, args: tuple = (), tasks: int | None = None):
        """``tasks``: how many tasks this run has; the pool never starts more workers than that (a small job
        does not pay for workers it cannot use)."""
        self.cfg = cfg
        self.worker, self.args = worker, args  # the actor class and what it is started with after cfg
        self.tasks = tasks
        self.ready: dict[ray.actor.ActorHandle, int] = {}  # actor -> tasks in flight
        self.starting: dict[ray.ObjectRef, ray.actor.ActorHandle] = {}
        self.most = 0  # the most workers ready at once
        self._last_check = 0.0
        self._loads: list[tuple[int, int, ray.actor.ActorHandle]] = []  # (tasks, seq, actor): a heap, with stale rows
        self._seq = itertools.count()

    def target_size(self) -> int:
        if self.cfg.ray.workers:
            n = self.cfg.ray.workers
        else:
            n = max(1, int(ray.cluster_resources().get("CPU", 1.0) // self.cfg.ray.worker_cpus))
            n = min(n, self.cfg.ray.max_workers or n)
        return max(1, min(n, self.tasks)) if self.tasks is not None else n

    def resize(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last_check < self.cfg.ray.resize_interval_seconds:
            return
        self._last_check = now
        missing = self.target_size() - len(self.ready) - len(self.starting)
        for _ in range(max(0, missing)):
            actor = self.worker.options(num_cpus=self.cfg.ray.worker_cpus, max_restarts=0,
                                        **faults.actor_options()).remote(self.cfg, *self.args)
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
                self._set_load(actor, 0)
            except ACTOR_LOST:
                pass  # its node went away while it started; resize() will try again
        self.most = max(self.most, len(self.ready))

    def wait_until_any_ready(self, timeout: float = WORKER_START_SECONDS) -> None:
        deadline = time.monotonic() + timeout
        while not self.ready:
            if not self.starting:
                self.resize(force=True)
            ray.wait(list(self.starting), num_returns=1, timeout=1.0)
            self.poll_starting()
            if time.monotonic() > deadline:
                raise RunAborted(f"no extraction worker could start within {timeout:g} s: "
                                 "does the cluster have a free CPU?")

    def pick(self) -> ray.actor.ActorHandle | None:
        """The ready worker with the fewest tasks in flight (the earliest ready among equals), from a heap: a
        dispatch does not pass over every worker (10,000 with 10,000 workers)."""
        while self._loads:
            load, _, actor = self._loads[0]
            if self.ready.get(actor) == load:
                return actor
            heapq.heappop(self._loads)  # stale: its load changed since, or it is gone
        return None

    def took(self, actor) -> None:
        """``actor`` was sent a task."""
        self._set_load(actor, self.ready[actor] + 1)

    def done(self, actor) -> None:
        """A task of ``actor`` ended (if it is still in the pool)."""
        if actor in self.ready:
            self._set_load(actor, self.ready[actor] - 1)

    def _set_load(self, actor, load: int) -> None:
        self.ready[actor] = load
        if len(self._loads) > 4 * len(self.ready) + 64:  # mostly stale rows: rebuilt
            self._loads = [(n, next(self._seq), a) for a, n in self.ready.items()]
            heapq.heapify(self._loads)
        else:
            heapq.heappush(self._loads, (load, next(self._seq), actor))

    def capacity(self) -> int:
        """Tasks the pool takes now: ``in_flight_per_worker`` each, but one each while workers are still
        starting (a small job's work would otherwise queue on the first worker ready while the others idle)."""
        return len(self.ready) * (1 if self.starting else self.cfg.ray.in_flight_per_worker)

    def remove(self, actor) -> None:
        self.ready.pop(actor, None)
        try:
            ray.kill(actor)
        except Exception:
            pass

    def actors(self) -> list:
        return [*self.ready, *self.starting.values()]


class Dispatcher:
    """Feeds the pool from the manifest and hands back WARCs as they finish (in completion order)."""

    def __init__(self, cfg: Config, pool: WorkerPool, tasks: Iterator[Task], metrics: Metrics,
                 need_docs: bool = True, bounds: Callable[[int], SampleBounds | None] | None = None,
                 retried: Callable[[str], None] | None = None):
        """``need_docs``: the documents' text is written by the commit path (documents/, parquet, the dedup
        audit), so it is pulled with the tokens; else it stays where it was made. ``bounds(ordinal)``: the report's
        sample bounds, sent with each WARC; ``retried(error)``: told of every attempt that failed and is retried."""
        self.cfg, self.pool, self.tasks, self.metrics = cfg, pool, tasks, metrics
        self.need_docs = need_docs
        self.bounds, self.retried = bounds, retried
        self.inflight: dict[ray.ObjectRef, tuple[Task, ray.actor.ActorHandle, tuple]] = {}
        self._done: queue.SimpleQueue = queue.SimpleQueue()  # the calls that ended, in the order they did
        self.retry_heap: list[tuple[float, int, Task]] = []
        self.peeked: Task | None = None  # the next task from ``tasks``, not sent yet (past the window)
        self.exhausted = False
        self.gather = RangeGather(need_docs)  # the ranges of WARCs cut into ranges, until each WARC's last
        self.killed: set = set()  # workers killed for a timeout
        self._expired_at = 0.0  # when the timeouts were last looked at
        self.stats = DispatchStats()

    def step(self, window_end: int) -> list[Finished]:
        """One turn: resize, send what fits below ``window_end`` (ordinal), abandon timed-out WARCs,
        collect what finished (waiting up to 0.25 s for one)."""
        self.pool.resize()
        self.pool.poll_starting()
        out = self._dispatch(window_end)
        self._expire()
        out += self._collect()
        if not self.pool.ready:
            self.pool.wait_until_any_ready()
        return out

    def redo(self, task: Task) -> None:
        """Process a finished WARC again: its results were lost with their node before it was committed
        (not an attempt of its own: the WARC did nothing wrong)."""
        self.stats.results_lost += 1
        task.attempts -= 1  # sent again, but the WARC did not fail
        heapq.heappush(self.retry_heap, (time.monotonic(), task.ordinal, task))

    def follow_on(self, tasks: Iterator[Task]) -> None:
        """Follow mode: the manifest grew; its new WARCs come from ``tasks``."""
        self.tasks, self.exhausted = tasks, False

    def _next_task(self, window_end: int) -> Task | None:
        while self.retry_heap and self.retry_heap[0][0] <= time.monotonic():
            task = heapq.heappop(self.retry_heap)[2]
            if not self.gather.dropped(task):  # a range of a WARC failed for good: not retried
                return task
        if self.peeked is None and not self.exhausted:
            self.peeked = next(self.tasks, None)
            self.exhausted = self.peeked is None
        if self.peeked is None or self.peeked.ordinal >= window_end:
            return None
        task, self.peeked = self.peeked, None
        return task

    def _dispatch(self, window_end: int) -> list[Finished]:
        out = []
        while len(self.inflight) < self.pool.capacity():
            task = self._next_task(window_end)
            if task is None:
                break
            if not task.url:  # a manifest line rejected as unsafe: never read, listed as failed in its place
                out.append(Finished(task))
                continue
            actor = self.pool.pick()
            task.attempts += 1
            task.started, task.timed_out = time.monotonic(), False
            bounds = self.bounds(task.ordinal) if self.bounds is not None else None
            args: list = [task.ordinal, task.url]
            if task.part is not None or bounds is not None:
                args.append(task.part)
            if bounds is not None:
                args.append(bounds)
            ended, *results = actor.process.remote(*args)  # (ended: a marker that travels with the reply)
            self.inflight[ended] = (task, actor, tuple(results))
            ended.future().add_done_callback(lambda _, ref=ended: self._done.put(ref))
            self.pool.took(actor)
        return out

    def _expire(self) -> None:
        """Abandon WARCs past the timeout: killing the worker fails the call, which is then retried. Looked at
        once a second (a pass over every WARC in flight: 10,000 with 10,000 workers)."""
        now = time.monotonic()
        if now - self._expired_at < EXPIRE_EVERY_SECONDS:
            return
        self._expired_at = now
        for task, actor, _ in list(self.inflight.values()):
            if not task.timed_out and now - task.started > self.cfg.warc.timeout_seconds:
                task.timed_out = True
                self.killed.add(actor)
                self.pool.remove(actor)

    def _collect(self) -> list[Finished]:
        if not self.inflight:
            time.sleep(0.05)
            return []
        out = []
        for ref in self._finished():
            task, actor, data_refs = self.inflight.pop(ref)
            self.pool.done(actor)
            meta, docs, dedup, staged = data_refs
            try:
                summary = ray.get(meta)
                # copy the results to this node, beside the commit path's actors: a worker node
                # lost while the WARC waits in the reorder buffer no longer takes them with it
                needed = [dedup, staged, *([docs] if self.need_docs else [])]
                ray.wait(needed, num_returns=len(needed), timeout=RESULT_PULL_SECONDS)
            except ObjectLostError:  # the WARC finished, then its node died before its summary reached this one
                _settle(data_refs)
                self.pool.remove(actor)  # it went with that node: a new worker takes its place
                self.pool.resize(force=True)
                self.redo(task)
                continue
            except (RayTaskError, *ACTOR_LOST) as e:
                _settle(data_refs)
                if isinstance(getattr(e, "cause", None), StagingError):
                    raise e.cause from None  # the output cannot be written: stop, as the packer would
                if (failed := self._failed(task, actor, e)) is not None:
                    out.append(self.gather.fail(failed) if task.parts > 1 else failed)
                continue
            item = Finished(task, summary, docs if self.need_docs else None, dedup, staged)
            if task.parts > 1 and (item := self.gather.add(item)) is None:
                continue  # a range: the WARC comes back when its last range is in
            self.stats.processed += 1
            self.stats.ranges += task.parts if task.parts > 1 else 0
            self.stats.by_node[item.summary.node] += 1
            self.stats.bytes_read += item.summary.bytes_read
            out.append(item)
        return out

    def _finished(self) -> list[ray.ObjectRef]:
        """Every call that has ended, or (none yet) the first to end within 0.25 s. Ray tells of each call as it
        ends (a callback on its first result, a marker that travels with the reply, so its other results stay
        where they are until read): nothing here passes over the calls in flight (10,000 with 10,000 workers;
        one ``ray.wait`` over them costs ~7 ms of CPU)."""
        done = []
        try:
            done.append(self._done.get(timeout=0.25))
            while True:
                done.append(self._done.get_nowait())
        except queue.Empty:
            pass
        return [ref for ref in done if ref in self.inflight]  # (not those given up since)

    def _failed(self, task: Task, actor, e: BaseException) -> Finished | None:
        """Schedule a retry with backoff, or give the WARC up (returned as failed; a range of a WARC already
        given up: None)."""
        if self.gather.dropped(task):
            return None
        task.error = (f"timed out after {self.cfg.warc.timeout_seconds:g} s (warc.timeout_seconds)"
                      if task.timed_out else error_text(e))
        if actor in self.killed and not task.timed_out:
            task.attempts -= 1  # lost with a worker killed for another WARC's timeout: not its fault
        if isinstance(e, ACTOR_LOST):
            self.pool.remove(actor)
            self.pool.resize(force=True)
        if task.attempts >= self.cfg.warc.max_attempts:
            return Finished(task)
        self.stats.retried += 1
        self.metrics.inc("raycorpus_warc_retries_total")
        if self.retried is not None:
            self.retried(task.error)
        delay = self.cfg.warc.retry_backoff_seconds * 2 ** (task.attempts - 1) * random.uniform(0.5, 1.5)
        heapq.heappush(self.retry_heap, (time.monotonic() + delay, task.ordinal, task))
        return None


def _settle(refs) -> None:
    """Read a failed call's other results (errors too), so Ray does not report them as unhandled."""
    for ref in refs:
        with contextlib.suppress(Exception):  # the call's error, already handled through its first result
            ray.get(ref, timeout=0)
