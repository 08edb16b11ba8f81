"""The single writer: commits WARCs in manifest order into shards, then checkpoints the ledger.

Ray-free; the runtime's packer actor is a thin wrapper. The order of writes is what makes
resume exact: closed shards (and the staged token files of the open one) are durable before
the checkpoint that names them, and a checkpoint is the only thing that marks a WARC committed.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass

import numpy as np

from raycorpus import counts as ck
from raycorpus.ingest.storage import Storage, join_url
from raycorpus.output.ledger import LEDGER_DIR, Ledger, LedgerError, LedgerState
from raycorpus.output.report_state import REPORT_DIR, state_name
from raycorpus.output.shards import OPEN_DIR, SHARDS_DIR, ShardPacker, WarcTokens
from raycorpus.process.dedup.index import DEDUP_DIR
from raycorpus.process.dedup.paragraphs import TokenCuts
from raycorpus.process.dedup.shardlog import remove_unnamed
from raycorpus.process.results import WarcSummary


@dataclass(frozen=True, slots=True)
class Position:
    """Where the writer stands: every WARC below ``next_ordinal`` is committed (or listed as failed),
    every WARC below ``durable_ordinal`` is in a checkpoint on storage. ``docs`` and ``tokens``: what the
    committed WARCs placed in the output (checkpointed or not yet: the progress line and the rates count them as
    they are committed); ``shards``: the closed shards as the writer's checkpointed state counts them."""

    next_ordinal: int
    durable_ordinal: int
    committed: int
    failed: int
    docs: int
    tokens: int
    shards: int
    checkpoints: int


class CorpusWriter:
    def __init__(self, storage: Storage, out_url: str, shard_size_tokens: int, token_meta: dict,
                 checkpoint_interval_seconds: float = 30.0, formats: tuple[str, ...] = (),
                 ctx_len: int | None = None, fence=None, whole_output: bool = True, dedup_files=None, closer=None,
                 on_complete=None):
        """``whole_output``: this run starts here, so every half-written temp file under ``out_url`` is
        a killed predecessor's; False (a writer replaced mid-run) cleans only the folders it alone writes.
        ``dedup_files(upto, docnos, durable) -> list[ShardFiles]``: before each checkpoint, has the LSH shards
        write what they took below ``upto`` and returns their files, which the checkpoint names.
        ``closer``: writes closed shards (default: here, at once, :class:`~raycorpus.output.shards.InlineCloser`).
        ``on_complete(shards, next_ordinal)``: at the final checkpoint, once every shard and record is written and
        before the ledger marks the build complete (the cluster sizes, :mod:`raycorpus.output.clusters`)."""
        self.fence = fence  # called before every checkpoint; raises if this run no longer owns the output
        self.on_complete = on_complete
        self.dedup_files = dedup_files
        self.ledger = Ledger(storage, out_url)
        self.state: LedgerState = self.ledger.load()
        self.packer = ShardPacker(storage, out_url, shard_size_tokens, token_meta, self.state.packer, formats, ctx_len,
                                  closer)
        own = (SHARDS_DIR, OPEN_DIR, LEDGER_DIR, *self.packer.formats)
        self.storage, self.own = storage, [join_url(out_url, folder) for folder in own]
        for url in [out_url] if whole_output else self.own:
            storage.remove_partial_writes(url)  # half-written temp files of a killed writer
        if whole_output:  # no worker of this run is staging yet
            self.packer.remove_orphans()
            self._remove_report_orphans()
        self.interval = checkpoint_interval_seconds
        self._entries: list[dict] = []
        self._last_ckpt = time.monotonic()
        self.durable_ordinal = self.state.next_ordinal  # everything below is in a checkpoint

    def _expect(self, ordinal: int) -> None:
        if ordinal != self.state.next_ordinal:
            raise LedgerError(f"commit out of order: got WARC #{ordinal}, expected #{self.state.next_ordinal}")

    def commit(self, ordinal: int, warc: str, summary: WarcSummary, staged: WarcTokens,
               keep: np.ndarray | None = None, attempts: int = 1, cuts: TokenCuts | None = None) -> Position:
        """Append one processed WARC's documents (``staged`` by its worker; ``keep``: which of them, None:
        all; ``cuts``: the token spans they lose). ``warc`` is its manifest line; ``summary.url`` where it was
        read from."""
        self._expect(ordinal)
        placed = self.packer.add(ordinal, warc, staged, keep, cuts)
        counts = Counter(summary.counts)
        counts[ck.BYTES_READ] += summary.bytes_read
        counts[ck.STORAGE_RETRIES] += summary.storage.retries  # the worker's storage requests retried for it
        counts[ck.STORAGE_THROTTLED] += summary.storage.throttled
        counts[ck.TOKENS] += placed["tokens"]
        counts[ck.WORKER_MS] += int(summary.seconds * 1000)
        self.state.totals.update(counts)
        self.state.committed += 1
        self._entries.append({
            "ordinal": ordinal, "warc": warc, "url": summary.url, "status": "committed",
            "attempts": attempts,
            "docs": placed["docs"], "tokens": placed["tokens"],
            "first": placed["first"], "end": placed["end"], "counts": ck.to_json(summary.counts),
        })
        return self._advance()

    def fail(self, ordinal: int, warc: str, error: str, attempts: int) -> Position:
        """List a WARC as failed (it contributes nothing) and move on."""
        self._expect(ordinal)
        entry = {"ordinal": ordinal, "warc": warc, "status": "failed", "attempts": attempts, "error": error}
        self.state.failed.append(entry)
        self.state.totals[ck.WARCS_FAILED] += 1
        self._entries.append(entry)
        return self._advance()

    def _advance(self) -> Position:
        self.state.next_ordinal += 1
        if time.monotonic() - self._last_ckpt >= self.interval:
            self.checkpoint()
        return self.progress()

    def checkpoint(self, complete: bool = False, report: bytes | None = None) -> Position:
        """Make everything committed so far durable: closed shards first, then the ledger file. ``report``: the
        report's data as of here (:class:`~raycorpus.output.report_state.ReportState`), written before the
        ledger file that names it."""
        if not self._entries and not complete:
            return self.progress()
        if self.fence is not None:
            self.fence()
        self.state.packer = self.packer.finish() if complete else self.packer.persist_open()
        if complete and self.on_complete is not None:
            self.on_complete(self.state.packer.shards_closed, self.state.next_ordinal)
        if self.dedup_files is not None:  # the LSH shards' files, flushed up to this position
            self.state.dedup = self.dedup_files(self.state.next_ordinal, self.state.totals[ck.DEDUP_INDEXED],
                                                self.state.dedup)
        self.state.complete = complete
        self.state.seq += 1
        replaced = self.state.report
        if report is not None:
            self.state.report = state_name(self.state.seq)
            self.storage.write_atomic(join_url(self.ledger.out_url, self.state.report), report)
        self.ledger.write_checkpoint(self.state, self._entries)
        if replaced is not None and replaced != self.state.report:
            self.storage.delete(join_url(self.ledger.out_url, replaced))
        self.packer.drop_obsolete()
        self.ledger.compact()
        self._entries = []
        self._last_ckpt = time.monotonic()
        self.durable_ordinal = self.state.next_ordinal
        return self.progress()

    def finish(self, report: bytes | None = None) -> Position:
        """The last checkpoint; then every shard is written, so a temp file left in this writer's folders is
        a shard-closing task's that died with its node mid-write (its shard was written again since). Like the
        staged token files, the LSH shards' files the final checkpoint does not name go too."""
        position = self.checkpoint(complete=True, report=report)
        for url in self.own:
            self.storage.remove_partial_writes(url)
        if self.dedup_files is not None and self.state.dedup:
            remove_unnamed(self.storage, join_url(self.ledger.out_url, DEDUP_DIR), self.state.dedup)
        return position

    def _remove_report_orphans(self) -> None:
        """Report files no checkpoint names: a killed run's, written for a checkpoint it did not write."""
        named = join_url(self.ledger.out_url, self.state.report) if self.state.report else None
        for url in self.storage.list(join_url(self.ledger.out_url, REPORT_DIR)):
            if url != named and url.rsplit("/", 1)[-1].startswith("state-"):
                self.storage.delete(url)

    def progress(self) -> Position:
        placed = self.packer.state  # as of the last commit (self.state.packer: as of the last checkpoint)
        return Position(self.state.next_ordinal, self.durable_ordinal, self.state.committed, len(self.state.failed),
                        placed.docs, placed.tokens, self.state.packer.shards_closed, self.state.seq)
