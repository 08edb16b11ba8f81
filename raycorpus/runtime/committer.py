"""The committer: WARCs in manifest order through dedup and into the single writer.

Finished WARCs wait in a bounded reorder buffer until every earlier one is there. Then, in
manifest order, the dedup decision is taken (once) and the packer places the kept documents
(the workers tokenized them and staged the tokens on storage; closed shards are written by tasks
off the head) and later checkpoints the ledger; when the output has
document files (documents/, parquet, the dedup audit), a document writer writes them first.
Every WARC sent stays in the resend log until a durable checkpoint names it: if the packer or a
writer is lost, a new packer reopens at its last checkpoint and gets every WARC it has not taken
again, with the same dedup decision, so nothing is read or decided twice.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from dataclasses import dataclass

import numpy as np
import ray
from ray.exceptions import GetTimeoutError, ObjectLostError, RayActorError, RayTaskError

from raycorpus import counts as ck
from raycorpus.config import Config
from raycorpus.output.commit import Position
from raycorpus.output.ledger import Ledger, LedgerState
from raycorpus.output.report_state import ArrivedBounds, ReportState, tighter, versions
from raycorpus.process.dedup.clusters import DupLinks
from raycorpus.process.dedup.output import DedupVerdict
from raycorpus.process.dedup.paragraphs import TokenCuts
from raycorpus.process.profile import NO_BOUND
from raycorpus.process.results import WarcSummary
from raycorpus.runtime import faults
from raycorpus.runtime.actors import DocumentWriter, PackerActor, PackerItem, RecordSource, needs_documents
from raycorpus.runtime.closer import ShardWritersLost
from raycorpus.runtime.cluster import on_this_node
from raycorpus.runtime.dedup import DedupStage
from raycorpus.runtime.metrics import Metrics
from raycorpus.runtime.pool import ACTOR_LOST, Finished, RunAborted, Task, error_text

MAX_RECOVERIES_AT_ONE_WARC = 3  # packer / tokenizer losses before the same WARC; then the run fails
MAX_DEDUP_RETRIES = 3
MAX_ROUND = 16  # WARCs decided with one query per LSH shard: those ready in order, up to this many
INTERRUPT_CHECKPOINT_SECONDS = 60.0  # longest a Ctrl-C / SIGTERM waits for its best-effort checkpoint

log = logging.getLogger("raycorpus")


@dataclass
class Sent:
    """A WARC sent to the packer, held until a durable checkpoint names it."""

    task: Task
    summary: WarcSummary | None  # None: listed as failed
    staged: ray.ObjectRef | None = None  # WarcTokens from the worker: what a replacement packer is sent
    keep: np.ndarray | None = None  # the documents dedup keeps (None: all)
    verdict: DedupVerdict | None = None
    record: RecordSource | None = None  # the documents the WARC added to the dedup index (the packer writes it)
    docs: ray.ObjectRef | None = None  # for the document writer; released once the packer has taken the WARC
    written: ray.ObjectRef | None = None  # the document writer's call
    cuts: TokenCuts | None = None  # dedup.paragraphs: the token spans of its removed paragraphs


class Committer:
    def __init__(self, cfg: Config, token_meta: dict, run_id: str, ledger: Ledger, metrics: Metrics,
                 state: LedgerState, priors: tuple = ()):
        self.cfg, self.token_meta, self.run_id, self.metrics = cfg, token_meta, run_id, metrics
        self.tag = cfg.filters.mode == "tag"
        self.packer = self._start_packer()  # starts while the writers and the LSH shards start
        self.writers = WriterPool(cfg, token_meta) if needs_documents(cfg) else None
        self.dedup = DedupStage(cfg, ledger, state, priors) if cfg.dedup.enabled else None
        self.report = _report_state(cfg, ledger, state)  # None: output.report off
        self.arrived = (ArrivedBounds(self.report.samples_passed, self.report.samples_per_reason)
                        if self.report is not None else None)
        self.workers = 0  # the pool's size, as the driver last said (the report's timeline)
        self.position: Position = ray.get(self.packer.progress.remote())
        self.first = self.position  # where this run started
        self.next_commit = self.position.next_ordinal  # the next WARC to take from the buffer
        self.indexed = state.totals[ck.DEDUP_INDEXED]  # documents in the LSH index
        self.buffer: dict[int, Finished] = {}  # the reorder buffer
        self.decided: dict[int, tuple] = {}  # (summary, verdict, record, cuts) of buffered WARCs decided in a round
        self.calls: deque[ray.ObjectRef] = deque()  # packer.commit / fail calls, in manifest order
        self.sent: deque[Sent] = deque()  # the resend log
        self.recoveries = {"packer": 0, "writer": 0}
        self.lost: list[Task] = []  # WARCs whose results were lost before their commit: the pool redoes them
        self._stuck_at = (-1, 0)  # (packer position, recoveries there)
        self._checkpointed = (self.next_commit, time.monotonic())  # (position, when) of the last checkpoint call
        self._confirmed = self.position.durable_ordinal  # the shards know checkpoints up to here are durable

    def _start_packer(self, replacement: bool = False):
        return PackerActor.options(num_cpus=0, max_restarts=0, scheduling_strategy=on_this_node(),
                                   **faults.actor_options()).remote(self.cfg, self.token_meta, self.run_id,
                                                                    replacement)

    def window_end(self, workers: int) -> int:
        """The first ordinal the pool may not start yet: the reorder buffer is bounded."""
        return self.next_commit + (self.cfg.ray.reorder_buffer or 4 * max(1, workers))

    def add(self, item: Finished) -> None:
        """A finished WARC into the reorder buffer; its report sample candidates that no report can take (see
        :class:`ArrivedBounds`) are dropped now, so that a buffered WARC holds only a few."""
        profile = item.summary.profile if item.summary is not None else None
        if self.arrived is not None and profile is not None:
            self.arrived.forget_below(self.next_commit)
            bounds = self.sample_bounds(item.task.ordinal)
            profile.samples = [s for s in profile.samples if s.key <= bounds.get(s.pool, NO_BOUND)]
            self.arrived.add(item.task.ordinal, profile.samples)
        self.buffer[item.task.ordinal] = item

    def commit_ready(self) -> None:
        """Send every WARC whose turn has come, a run of them (see :meth:`_next_run`) per packer call, then collect
        the packer calls that are done. ``next_commit`` passes a run once it is sent: a checkpoint (or a shard's
        replacement, which checkpoints first) never names WARCs the packer was not sent."""
        while self.next_commit in self.buffer:
            sending = self._next_run()
            if not sending:
                break
            self.sent.extend(sending)
            self._send(sending)
            self.next_commit += len(sending)
            self._checkpoint_if_due()
        while self.calls and (len(self.calls) > 8 or _is_ready(self.calls[0])):
            self._collect(self.calls.popleft())

    def _next_run(self) -> list[Sent]:
        """The WARCs ready in order from the next commit, decided (a round's, taken when the run is empty, so that
        a round is decided only once the runs before it are sent), up to ``MAX_ROUND`` or the one after which a
        checkpoint is due."""
        out: list[Sent] = []
        ordinal = self.next_commit
        while ordinal in self.buffer and len(out) < MAX_ROUND:
            item = self.buffer[ordinal]
            if item.summary is not None and self.dedup is not None and ordinal not in self.decided:
                if out:
                    break
                self._decide_round()
                if ordinal not in self.decided:  # its node died before its results reached this node
                    log.warning("WARC #%d: its results were lost with their node; processing it again", ordinal)
                    self.lost.append(self.buffer.pop(ordinal).task)
                    break
            del self.buffer[ordinal]
            out.append(self._committed(item))
            ordinal += 1
            if self._checkpoint_due(ordinal):
                break
        return out

    def _committed(self, item: Finished) -> Sent:
        """A WARC whose turn has come, counted (metrics, report, index) and ready to send."""
        if item.summary is None:
            return Sent(item.task, None)
        summary, verdict, record, cuts = self.decided.pop(item.task.ordinal) if self.dedup is not None else (
            item.summary, None, None, None)
        self.metrics.warc_committed(summary)
        self._add_to_report(summary, verdict)
        self.indexed += summary.counts[ck.DEDUP_INDEXED]
        keep = verdict.decision.keep if verdict is not None and not self.tag else None
        return Sent(item.task, summary, item.staged, keep, verdict, record, item.docs, cuts=cuts)

    def _checkpoint_due(self, upto: int) -> bool:
        """Every ``run.checkpoint_interval_seconds`` (0: after every WARC), a checkpoint of what was sent."""
        at, when = self._checkpointed
        return upto > at and time.monotonic() - when >= self.cfg.run.checkpoint_interval_seconds

    def _checkpoint_if_due(self) -> None:
        if self._checkpoint_due(self.next_commit):
            self.calls.append(self._checkpoint_call("checkpoint"))

    def _checkpoint_call(self, method: str) -> ray.ObjectRef:
        """``packer.checkpoint`` / ``finish`` of everything sent, after the LSH shards wrote their part (with the
        report's data as of here)."""
        flushes = self.dedup.flush(self.next_commit) if self.dedup is not None else None
        self._checkpointed = (self.next_commit, time.monotonic())
        report = None
        if self.report is not None:
            self.report.checkpoint(self.next_commit, self.workers)
            report = self.report.encode()
        return getattr(self.packer, method).remote(flushes, report)

    def _add_to_report(self, summary: WarcSummary, verdict: DedupVerdict | None) -> None:
        """The WARC's profile into the report's data, with its dedup decision; the packer does not need it."""
        profile, summary.profile = summary.profile, None
        if self.report is not None and profile is not None:
            self.report.add(summary.ordinal, profile, verdict.decision if verdict is not None else None)

    def sample_bounds(self, ordinal: int) -> dict[str, int] | None:
        """What WARC ``ordinal``'s worker need not send for the report's sample (see :mod:`raycorpus.process.profile`):
        the committed pools' bounds, and those of the WARCs before it that arrived."""
        if self.report is None:
            return None
        return tighter(self.report.bounds(), self.arrived.before(ordinal))

    def _decide_round(self) -> None:
        """Take the dedup decisions (in manifest order, once) of the WARCs ready in order from the next commit on,
        up to ``MAX_ROUND``, with one query per LSH shard for all of them, and count each into its summary. A WARC
        whose results were lost ends the round before it (it stays undecided)."""
        items, ordinal = [], self.next_commit
        while ordinal in self.buffer and len(items) < MAX_ROUND:
            if self.buffer[ordinal].summary is not None:
                items.append(self.buffer[ordinal])
            ordinal += 1
        payloads = _payloads(items)
        items = items[: len(payloads)]
        if not items:
            return
        for _ in range(MAX_DEDUP_RETRIES):
            try:
                decisions = self.dedup.decide([(i.task.ordinal, p) for i, p in zip(items, payloads, strict=True)])
                break
            except ACTOR_LOST:  # replace lost shards from the last checkpoint, which must hold every earlier WARC
                self._packer_call("checkpoint")
                self.dedup.replace_lost(_is_alive)
        else:
            raise RunAborted("LSH shard actors keep dying; the ledger is consistent, rerun to resume")
        for item, payload, decision in zip(items, payloads, decisions, strict=True):
            summary = item.summary
            decision.count_into(summary.counts, self.tag)
            verdict = DedupVerdict(decision, self.cfg.dedup.audit, self.cfg.dedup.against)
            record, links = None, DupLinks.of(decision)
            seen = decision.rows.paragraphs is not None and decision.rows.paragraphs.any()  # (keys the index took)
            if decision.indexed or len(links) or seen:
                keys = None if payload.keys is not None or not (decision.indexed or seen) else [item.dedup]
                record = RecordSource(decision.rows if decision.indexed or seen else None, keys,
                                      links if len(links) else None)
            cuts = None
            if decision.paragraphs is not None and decision.paragraphs.any():
                cuts = TokenCuts.of(payload.paragraphs, decision.paragraphs, decision.keep)
                if summary.profile is not None:  # the report counts what the shards hold
                    summary.profile.shorten(*payload.paragraphs.removed_per_doc(decision.paragraphs))
            self.decided[item.task.ordinal] = (summary, verdict, record, cuts)

    def _send(self, items: list[Sent]) -> None:
        """``items`` (in manifest order, at least one) to the packer in one call, their documents to the writers
        first."""
        out, staged, written = [], [], []
        for item in items:
            task = item.task
            if item.summary is None:
                out.append(PackerItem(task.ordinal, task.warc, task.attempts, error=task.error))
                continue
            if self.writers is not None and item.docs is not None:  # not taken by the packer yet: (re-)write
                item.written = self.writers.next().write.remote(task.ordinal, task.warc, item.docs, item.verdict)
            if item.written is not None:
                written.append(item.written)
            staged.append(item.staged)
            out.append(PackerItem(task.ordinal, task.warc, task.attempts, item.summary, item.keep, item.record,
                                  cuts=item.cuts))
        self.calls.append(self.packer.take.remote(out, *staged, *written))

    def _note(self, position: Position) -> None:
        self.position = position
        if self.dedup is not None and position.durable_ordinal > self._confirmed:
            self.dedup.confirm(position.durable_ordinal)
            self._confirmed = position.durable_ordinal
        while self.sent and self.sent[0].task.ordinal < position.durable_ordinal:
            self.sent.popleft()
        for item in self.sent:
            if item.task.ordinal >= position.next_ordinal:
                break
            item.docs = None

    def _collect(self, ref: ray.ObjectRef) -> None:
        try:
            self._note(_position(ref))
        except ACTOR_LOST as e:  # the packer, or the document writer of this WARC
            self._recover(e)

    def _recover(self, error: BaseException) -> None:
        """Replace a lost packer (it reopens at its last checkpoint) and send again, in order, every
        WARC it has not taken; a WARC whose document writer was lost is written again."""
        self.calls.clear()  # the calls after a failed one fail too (out of order): all are sent again below
        writing = [i.written for i in self.sent if i.written is not None]
        if writing:  # let the document writers finish before a new packer cleans up
            ray.wait(writing, num_returns=len(writing), fetch_local=False)
        try:
            position = ray.get(self.packer.progress.remote())
            role = "writer"
        except ACTOR_LOST:
            role = "packer"
            self.packer = self._start_packer(replacement=True)
            position = ray.get(self.packer.progress.remote())
        self.recoveries[role] += 1
        at = position.next_ordinal
        self._stuck_at = (at, self._stuck_at[1] + 1 if self._stuck_at[0] == at else 1)
        if self._stuck_at[1] > MAX_RECOVERIES_AT_ONE_WARC:
            raise RunAborted(f"{role} actors keep dying at WARC #{at} ({error_text(error)}); "
                             "the ledger is consistent, rerun to resume")
        resend = [i for i in self.sent if i.task.ordinal >= at]
        if [i.task.ordinal for i in resend] != list(range(at, self.next_commit)):
            raise RunAborted(f"{role} actor lost and WARC #{at} is no longer held by the driver "
                             f"({error_text(error)}); the ledger is consistent, rerun to resume")
        how = " to a new packer resumed from its last checkpoint" if role == "packer" else ""
        log.warning("%s actor lost (%s): WARCs #%d-#%d sent again%s", role, error_text(error), at,
                    self.next_commit - 1, how)
        for start in range(0, len(resend), MAX_ROUND):
            self._send(resend[start : start + MAX_ROUND])
        self._checkpointed = (at, 0.0)  # and a checkpoint of them when one is due
        self._checkpoint_if_due()

    def _packer_call(self, method: str) -> None:
        """``checkpoint`` or ``finish`` once everything sent is taken, through packer losses."""
        while True:
            while self.calls:
                self._collect(self.calls.popleft())
            try:
                self._note(_position(self._checkpoint_call(method)))
                return
            except ACTOR_LOST as e:
                self._recover(e)

    def checkpoint(self) -> None:
        """Everything sent is taken and in a durable checkpoint (follow mode, before it waits)."""
        self._packer_call("checkpoint")

    def finish(self) -> None:
        """Everything sent is written and the ledger marks the output complete."""
        self._packer_call("finish")

    def checkpoint_on_interrupt(self) -> None:
        """Ctrl-C / SIGTERM: let the packer take what was sent, then checkpoint it (best effort:
        the last checkpoint on storage is consistent anyway)."""
        deadline = time.monotonic() + INTERRUPT_CHECKPOINT_SECONDS  # for all of it: the exit is never held long
        try:
            for ref in self.calls:
                ray.get(ref, timeout=max(0.1, deadline - time.monotonic()))
            ray.get(self._checkpoint_call("checkpoint"), timeout=max(0.1, deadline - time.monotonic()))
        except (GetTimeoutError, RayActorError, RayTaskError):
            pass

    def actors(self) -> dict[str, list]:
        """The commit path's actors by role (for peak memory and teardown)."""
        return {"writers": self.writers.actors if self.writers is not None else [], "packer": [self.packer],
                "lsh_shards": self.dedup.actors if self.dedup is not None else []}

    def close(self) -> None:
        if self.dedup is not None:
            self.dedup.kill()
        for actor in [self.packer, *(self.writers.actors if self.writers is not None else [])]:
            ray.kill(actor)  # on a shared cluster, free the CPUs now rather than at driver exit


def _report_state(cfg: Config, ledger: Ledger, state: LedgerState) -> ReportState | None:
    """The report's data as of the last checkpoint (new, or for an output written before the report: from
    here on), or None when ``output.report`` is off."""
    r = cfg.output.report
    if not r.enabled:
        return None
    report = ReportState() if state.report is None else ReportState.read(ledger.storage, ledger.out_url, state.report)
    report.samples_passed, report.samples_per_reason = r.samples_passed, r.samples_per_reason
    report.config, report.versions = cfg.model_dump(mode="json", exclude_unset=True), versions()  # as written
    return report


class WriterPool:
    """Document writer actors, taken in turn; sized from ``ray.writers`` or one per 32 workers."""

    PER_WORKERS = 32

    def __init__(self, cfg: Config, token_meta: dict):
        self.cfg, self.token_meta = cfg, token_meta
        self.actors: list = []
        self._turn = 0
        self.resize(1)

    def resize(self, workers: int) -> None:
        want = self.cfg.ray.writers or max(1, -(-workers // self.PER_WORKERS))
        while len(self.actors) < want:
            self.actors.append(DocumentWriter.options(  # off the head: spread over the cluster
                num_cpus=self.cfg.ray.writer_cpus, max_restarts=-1, max_task_retries=3, scheduling_strategy="SPREAD",
                **faults.actor_options()).remote(self.cfg, self.token_meta))

    def next(self):
        self._turn = (self._turn + 1) % len(self.actors)
        return self.actors[self._turn]


def _position(ref: ray.ObjectRef) -> Position:
    """A packer call's answer; shard writers that keep dying stop the run (the packer is not lost)."""
    try:
        return ray.get(ref)
    except RayTaskError as e:
        if isinstance(getattr(e, "cause", None), ShardWritersLost):
            raise RunAborted(f"{e.cause}; the ledger is consistent, rerun to resume") from None
        raise


def _payloads(items: list[Finished]) -> list:
    """The items' dedup payloads, up to the first whose object was lost with its node."""
    try:
        return ray.get([i.dedup for i in items])
    except ObjectLostError:
        out = []
        for item in items:
            try:
                out.append(ray.get(item.dedup))
            except ObjectLostError:
                break
        return out


def _is_ready(ref: ray.ObjectRef) -> bool:
    done, _ = ray.wait([ref], timeout=0)
    return bool(done)


def _is_alive(actor) -> bool:
    try:
        ray.get(actor.stats.remote(), timeout=60)
        return True
    except (*ACTOR_LOST, GetTimeoutError):
        return False
