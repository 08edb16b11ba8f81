"""The single writer: commits WARCs in manifest order into shards, then checkpoints the ledger.

Ray-free; the runtime's packer actor is a thin wrapper. The order of writes is what makes
resume exact: closed shards and open-shard segments are durable before the checkpoint
that names them, and a checkpoint is the only thing that marks a WARC committed.
"""

from __future__ import annotations

import time
from collections import Counter

import numpy as np

from raycorpus.ledger import Ledger, LedgerError, LedgerState
from raycorpus.shards import ShardPacker
from raycorpus.storage import Storage


class CorpusWriter:
    def __init__(self, storage: Storage, out_url: str, shard_size_tokens: int, token_meta: dict,
                 checkpoint_interval_seconds: float = 30.0, formats: tuple[str, ...] = (),
                 ctx_len: int | None = None, fence=None):
        self.fence = fence  # called before every checkpoint; raises if this run no longer owns the output
        storage.remove_partial_writes(out_url)  # a killed predecessor's half-written temp files
        self.ledger = Ledger(storage, out_url)
        self.state: LedgerState = self.ledger.load()
        self.packer = ShardPacker(storage, out_url, shard_size_tokens, token_meta, self.state.packer, formats, ctx_len)
        self.packer.remove_orphans()
        self.interval = checkpoint_interval_seconds
        self._entries: list[dict] = []
        self._last_ckpt = time.monotonic()
        self.durable_ordinal = self.state.next_ordinal  # everything below is in a checkpoint

    def _expect(self, ordinal: int) -> None:
        if ordinal != self.state.next_ordinal:
            raise LedgerError(f"commit out of order: got WARC #{ordinal}, expected #{self.state.next_ordinal}")

    def commit(self, ordinal: int, warc: str, summary: dict, tokens: np.ndarray, lengths: np.ndarray,
               attempts: int = 1) -> dict:
        """Append one processed WARC's documents. ``warc`` is its manifest line; ``summary`` is
        WarcResult.summary() (which also names the url it was read from)."""
        self._expect(ordinal)
        placed = self.packer.add(ordinal, warc, tokens, lengths)
        counts = Counter(summary["counts"])
        counts["bytes_read"] += summary["bytes_read"]
        counts["tokens"] += placed["tokens"]
        counts["worker_seconds_ms"] += int(summary["seconds"] * 1000)
        self.state.totals.update(counts)
        self.state.committed += 1
        self._entries.append({
            "ordinal": ordinal, "warc": warc, "url": summary.get("url", warc), "status": "committed",
            "attempts": attempts,
            "docs": placed["docs"], "tokens": placed["tokens"],
            "first": placed["first"], "end": placed["end"], "counts": dict(sorted(summary["counts"].items())),
        })
        return self._advance()

    def fail(self, ordinal: int, warc: str, error: str, attempts: int) -> dict:
        """List a WARC as failed (it contributes nothing) and move on."""
        self._expect(ordinal)
        entry = {"ordinal": ordinal, "warc": warc, "status": "failed", "attempts": attempts, "error": error}
        self.state.failed.append(entry)
        self.state.totals["warcs_failed"] += 1
        self._entries.append(entry)
        return self._advance()

    def _advance(self) -> dict:
        self.state.next_ordinal += 1
        if time.monotonic() - self._last_ckpt >= self.interval:
            self.checkpoint()
        return self.progress()

    def checkpoint(self, complete: bool = False) -> dict:
        """Make everything committed so far durable: segments first, then the ledger file."""
        if not self._entries and not complete:
            return self.progress()
        if self.fence is not None:
            self.fence()
        self.state.packer = self.packer.finish() if complete else self.packer.persist_open()
        self.state.complete = complete
        self.state.seq += 1
        self.ledger.write_checkpoint(self.state, self._entries)
        self.packer.drop_obsolete()
        self._entries = []
        self._last_ckpt = time.monotonic()
        self.durable_ordinal = self.state.next_ordinal
        return self.progress()

    def finish(self) -> dict:
        return self.checkpoint(complete=True)

    def progress(self) -> dict:
        p = self.state.packer
        return {
            "next_ordinal": self.state.next_ordinal,
            "durable_ordinal": self.durable_ordinal,
            "committed": self.state.committed,
            "failed": len(self.state.failed),
            "docs": p.docs,
            "tokens": p.tokens,
            "shards": p.shards_closed,
            "checkpoints": self.state.seq,
        }
