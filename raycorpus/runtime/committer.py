"""The committer: WARCs in manifest order through dedup, the tokenizers and the single writer.

Finished WARCs wait in a bounded reorder buffer until every earlier one is there. Then, in
manifest order, the dedup decision is taken (once), a tokenizer encodes the kept documents and
the packer appends them and later checkpoints the ledger. Every WARC sent stays in the resend
log until a durable checkpoint names it: if the packer or a tokenizer is lost, a new packer
reopens at its last checkpoint and gets every WARC it has not taken again, with the same dedup
decision, so nothing is read or decided twice.
"""

from __future__ import annotations

import itertools
import logging
from collections import deque
from dataclasses import dataclass

import ray
from ray.exceptions import GetTimeoutError, RayActorError, RayTaskError

from raycorpus import counts as ck
from raycorpus.config import Config
from raycorpus.output.commit import Position
from raycorpus.output.ledger import Ledger
from raycorpus.process.dedup.output import DedupVerdict
from raycorpus.process.results import WarcSummary
from raycorpus.runtime import faults
from raycorpus.runtime.actors import PackerActor, TokenizerActor
from raycorpus.runtime.cluster import on_this_node
from raycorpus.runtime.dedup import DedupStage
from raycorpus.runtime.metrics import Metrics
from raycorpus.runtime.pool import ACTOR_LOST, Finished, RunAborted, Task, error_text

MAX_RECOVERIES_AT_ONE_WARC = 3  # packer / tokenizer losses before the same WARC; then the run fails
MAX_DEDUP_RETRIES = 3

log = logging.getLogger("raycorpus")


@dataclass
class Sent:
    """A WARC sent to the packer, held until a durable checkpoint names it."""

    task: Task
    summary: WarcSummary | None  # None: listed as failed
    docs: ray.ObjectRef | None = None  # its documents, released once the packer has taken the WARC
    verdict: DedupVerdict | None = None
    encoded: ray.ObjectRef | None = None  # the tokenizer's output, what a replacement packer is sent


class Committer:
    def __init__(self, cfg: Config, token_meta: dict, run_id: str, ledger: Ledger, metrics: Metrics, indexed: int = 0):
        self.cfg, self.token_meta, self.run_id, self.metrics = cfg, token_meta, run_id, metrics
        self.tag = cfg.filters.mode == "tag"
        self.packer = self._start_packer()
        self.position: Position = ray.get(self.packer.progress.remote())
        self.first = self.position  # where this run started
        self.next_commit = self.position.next_ordinal  # the next WARC to take from the buffer
        self.tokenizers = [
            TokenizerActor.options(num_cpus=0, max_restarts=-1, max_task_retries=3,
                                   scheduling_strategy=on_this_node(), **faults.actor_options()).remote(cfg)
            for _ in range(cfg.ray.tokenizers)
        ]
        self._next_tokenizer = itertools.cycle(self.tokenizers)
        self.dedup = DedupStage(cfg, ledger) if cfg.dedup.enabled else None
        if self.dedup is not None and self.next_commit:
            self.dedup.rebuild()
        self.indexed = indexed  # documents in the LSH index
        self.buffer: dict[int, Finished] = {}  # the reorder buffer
        self.calls: deque[ray.ObjectRef] = deque()  # packer.commit / fail calls, in manifest order
        self.sent: deque[Sent] = deque()  # the resend log
        self.recoveries = {"packer": 0, "tokenizer": 0}
        self._stuck_at = (-1, 0)  # (packer position, recoveries there)

    def _start_packer(self, replacement: bool = False):
        return PackerActor.options(num_cpus=0, max_restarts=0, scheduling_strategy=on_this_node(),
                                   **faults.actor_options()).remote(self.cfg, self.token_meta, self.run_id,
                                                                    replacement)

    def window_end(self, workers: int) -> int:
        """The first ordinal the pool may not start yet: the reorder buffer is bounded."""
        return self.next_commit + (self.cfg.ray.reorder_buffer or 4 * max(1, workers))

    def add(self, item: Finished) -> None:
        self.buffer[item.task.ordinal] = item

    def commit_ready(self) -> None:
        """Send every WARC whose turn has come, then collect the packer calls that are done."""
        while self.next_commit in self.buffer:
            item = self.buffer.pop(self.next_commit)
            if item.summary is None:
                self.sent.append(Sent(item.task, None))
            else:
                summary, verdict = self._decide(item) if self.dedup is not None else (item.summary, None)
                self.metrics.warc_committed(summary)
                self.indexed += summary.counts[ck.DEDUP_INDEXED]
                self.sent.append(Sent(item.task, summary, item.docs, verdict))
            self._send(self.sent[-1])
            self.next_commit += 1
        while self.calls and (len(self.calls) > 8 or _is_ready(self.calls[0])):
            self._collect(self.calls.popleft())

    def _decide(self, item: Finished) -> tuple[WarcSummary, DedupVerdict]:
        """Take the WARC's dedup decision (in manifest order, once) and count it into its summary."""
        payload = ray.get(item.dedup)
        for _ in range(MAX_DEDUP_RETRIES):
            try:
                decision, record = self.dedup.decide(item.task.ordinal, payload)
                break
            except ACTOR_LOST:  # rebuild lost shards from the ledger, which must hold every earlier WARC
                self._packer_call("checkpoint")
                self.dedup.replace_lost(_is_alive)
        else:
            raise RunAborted("LSH shard actors keep dying; the ledger is consistent, rerun to resume")
        summary = item.summary
        decision.count_into(summary.counts, self.tag)
        return summary, DedupVerdict(decision, record if decision.indexed else None, self.cfg.dedup.audit)

    def _send(self, item: Sent) -> None:
        task = item.task
        if item.summary is None:
            self.calls.append(self.packer.fail.remote(task.ordinal, task.warc, task.error, task.attempts))
            return
        if item.docs is not None:  # not taken by the packer yet: (re-)encode, deterministically
            item.encoded = next(self._next_tokenizer).encode.remote(task.ordinal, task.warc, item.docs, item.verdict)
        self.calls.append(self.packer.commit.remote(task.ordinal, task.warc, item.summary, item.encoded,
                                                    task.attempts))

    def _note(self, position: Position) -> None:
        self.position = position
        while self.sent and self.sent[0].task.ordinal < position.durable_ordinal:
            self.sent.popleft()
        for item in self.sent:
            if item.task.ordinal >= position.next_ordinal:
                break
            item.docs = None

    def _collect(self, ref: ray.ObjectRef) -> None:
        try:
            self._note(ray.get(ref))
        except ACTOR_LOST as e:  # the packer, or the tokenizer that encoded this WARC
            self._recover(e)

    def _recover(self, error: BaseException) -> None:
        """Replace a lost packer (it reopens at its last checkpoint) and send again, in order, every
        WARC it has not taken; a WARC whose tokenizer was lost is encoded again."""
        self.calls.clear()  # the calls after a failed one fail too (out of order): all are sent again below
        encoding = [i.encoded for i in self.sent if i.encoded is not None]
        if encoding:  # let the tokenizers finish writing before a new writer cleans up
            ray.wait(encoding, num_returns=len(encoding), fetch_local=False)
        try:
            position = ray.get(self.packer.progress.remote())
            role = "tokenizer"
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
        for item in resend:
            self._send(item)

    def _packer_call(self, method: str) -> None:
        """``checkpoint`` or ``finish`` once everything sent is taken, through packer losses."""
        while True:
            while self.calls:
                self._collect(self.calls.popleft())
            try:
                self._note(ray.get(getattr(self.packer, method).remote()))
                return
            except ACTOR_LOST as e:
                self._recover(e)

    def finish(self) -> None:
        """Everything sent is written and the ledger marks the output complete."""
        self._packer_call("finish")

    def checkpoint_on_interrupt(self) -> None:
        """Ctrl-C / SIGTERM: let the packer take what was sent, then checkpoint it (best effort:
        the last checkpoint on storage is consistent anyway)."""
        try:
            for ref in self.calls:
                ray.get(ref, timeout=60)
            ray.get(self.packer.checkpoint.remote(), timeout=60)
        except (GetTimeoutError, RayActorError, RayTaskError):
            pass

    def actors(self) -> dict[str, list]:
        """The commit path's actors by role (for peak memory and teardown)."""
        return {"tokenizers": self.tokenizers, "packer": [self.packer],
                "lsh_shards": self.dedup.actors if self.dedup is not None else []}

    def close(self) -> None:
        if self.dedup is not None:
            self.dedup.kill()
        for actor in [self.packer, *self.tokenizers]:
            ray.kill(actor)  # on a shared cluster, free the CPUs now rather than at driver exit


def _is_ready(ref: ray.ObjectRef) -> bool:
    done, _ = ray.wait([ref], timeout=0)
    return bool(done)


def _is_alive(actor) -> bool:
    try:
        ray.get(actor.stats.remote(), timeout=60)
        return True
    except (*ACTOR_LOST, GetTimeoutError):
        return False
