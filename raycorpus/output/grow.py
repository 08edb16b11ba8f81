"""Reopen a finished output for the new lines of a grown manifest (core, no Ray).

A finished build closed its last, partly filled shard. A one-shot build of the grown manifest
would have gone on filling that shard, so a grown build reopens it first: its tokens are staged
again as one file (under ``tokens/``, like a worker's), the open shard is set back to it (same
pieces order, same sources), and a checkpoint records that before anything else happens. Shards
closed by size stay as they are. Byte for byte, the shards that follow are those of a one-shot
build, and a kill at any point leaves a ledger that resumes: until the new checkpoint is durable
the output is still the finished one; after it, the shard's old files are stale copies a close
writes again, and they are deleted here right away.
"""

from __future__ import annotations

import io

import numpy as np

from raycorpus.ingest.storage import Storage, join_url
from raycorpus.output.formats import TOKEN_FORMATS
from raycorpus.output.ledger import Ledger, LedgerState
from raycorpus.output.shards import SHARDS_DIR, TOKENS_DIR, read_shard, shard_name

__all__ = ["listed_lines", "reopen_finished"]


def reopen_finished(storage: Storage, out_url: str, shard_size_tokens: int, formats: tuple[str, ...] = ()
                    ) -> LedgerState:
    """Turn a complete output into one that resumes at its end, its last shard open again if a finished
    run closed it partly filled; return the new state. Idempotent (an incomplete output is left as it is)."""
    ledger = Ledger(storage, out_url)
    state = ledger.load()
    if not state.complete:
        return state
    p = state.packer
    last = p.shard_index - 1
    reopened = None
    if p.shards_closed and not p.pieces:
        tokens, ends, meta = read_shard(storage, out_url, last)
        if len(tokens) < shard_size_tokens:  # closed by the finish, not by size: a one-shot build fills it on
            reopened = last
            file = f"{TOKENS_DIR}/reopened-{last:06d}.npz"
            buf = io.BytesIO()
            np.savez(buf, tokens=tokens, lengths=np.diff(ends, prepend=np.uint64(0)).astype(np.uint64))
            storage.write_atomic(join_url(out_url, file), buf.getbuffer())
            p.pieces = [{"file": file, "ranges": None}]
            p.sources = meta["sources"]
            p.shard_index, p.shards_closed = last, p.shards_closed - 1
            p.open_docs, p.open_tokens = int(meta["docs"]), int(meta["tokens"])
    state.complete = False
    state.seq += 1
    ledger.write_checkpoint(state, [])
    if reopened is not None:
        _delete_shard_files(storage, out_url, reopened, formats)
    return state


def _delete_shard_files(storage: Storage, out_url: str, index: int, formats: tuple[str, ...]) -> None:
    prefix = shard_name(index) + "."
    for folder in (SHARDS_DIR, *(f for f in formats if f in TOKEN_FORMATS)):
        for url in sorted(storage.list(join_url(out_url, folder)), key=lambda u: not u.endswith(".json")):
            if url.rsplit("/", 1)[-1].startswith(prefix):  # the sidecar first: readers list shards by it
                storage.delete(url)


def listed_lines(ledger: Ledger) -> dict[int, str]:
    """The manifest line of every WARC the ledger lists (committed or failed), by ordinal."""
    return {e["ordinal"]: e["warc"] for e in ledger.iter_entries()}
