"""Token shards: the packer that appends documents in commit order and closes shards by size.

Shard ``i`` is three files under ``shards/``:

- ``shard-{i:06d}.tokens``: flat little-endian token ids (uint16 when vocab < 65,536, else uint32)
- ``shard-{i:06d}.idx``: uint64 end offset of every document (in tokens, within the shard)
- ``shard-{i:06d}.json``: sidecar (tokenizer, dtype, counts, source WARCs, sha256 of both files)

The shard being filled is made durable at each checkpoint as *segments* under ``open/``
(the tokens added since the previous checkpoint), so a restart reopens it exactly where
the last checkpoint left it. Shard bytes depend only on the sequence of committed
documents, never on when checkpoints happen.
"""

from __future__ import annotations

import hashlib
import io
import json
from dataclasses import dataclass, field

import numpy as np

from raycorpus.ingest.storage import Storage, join_url
from raycorpus.output.formats import TOKEN_FORMATS, write_formats

SHARDS_DIR = "shards"
OPEN_DIR = "open"


def shard_name(i: int) -> str:
    return f"shard-{i:06d}"


def canonical_json(obj: object) -> bytes:
    return (json.dumps(obj, sort_keys=True, indent=1, ensure_ascii=False) + "\n").encode()


@dataclass
class PackerState:
    """The JSON-able position of the packer, saved in every ledger checkpoint."""

    shard_index: int = 0
    segments: list[str] = field(default_factory=list)  # names under open/ holding the open shard
    sources: list[dict] = field(default_factory=list)  # WARCs that contributed to the open shard
    docs: int = 0  # totals over closed and open shards
    tokens: int = 0
    shards_closed: int = 0

    def to_json(self) -> dict:
        return dict(self.__dict__)

    @classmethod
    def from_json(cls, d: dict) -> PackerState:
        return cls(**d)


class ShardPacker:
    def __init__(self, storage: Storage, out_url: str, shard_size_tokens: int, token_meta: dict,
                 state: PackerState | None = None, formats: tuple[str, ...] = (), ctx_len: int | None = None):
        self.storage = storage
        self.formats = tuple(f for f in formats if f in TOKEN_FORMATS)
        self.ctx_len = ctx_len
        self.out_url = out_url
        self.shard_size = shard_size_tokens
        self.token_meta = token_meta
        self.dtype = np.dtype(token_meta["dtype"])
        self.state = state or PackerState()
        self._chunks: list[np.ndarray] = []  # tokens of the open shard
        self._lengths: list[np.ndarray] = []  # doc lengths of the open shard
        self._persisted = 0  # how many chunks are already in segments
        self._open_tokens = 0
        self._open_docs = 0
        self._seg_seq = 0
        self.obsolete: list[str] = []  # segment urls to delete once a checkpoint no longer names them
        for name in self.state.segments:
            self._load_segment(name)
        self._persisted = len(self._chunks)
        self._seg_seq = len(self.state.segments)

    # -- paths
    def _url(self, *parts: str) -> str:
        url = self.out_url
        for p in parts:
            url = join_url(url, p)
        return url

    def _load_segment(self, name: str) -> None:
        with np.load(io.BytesIO(self.storage.read_bytes(self._url(OPEN_DIR, name))), allow_pickle=False) as z:
            tokens, lengths = z["tokens"].astype(self.dtype, copy=False), z["lengths"]
        self._append_chunk(tokens, lengths)

    def _append_chunk(self, tokens: np.ndarray, lengths: np.ndarray) -> None:
        if len(lengths):
            self._chunks.append(tokens)
            self._lengths.append(lengths)
            self._open_tokens += len(tokens)
            self._open_docs += len(lengths)

    # -- appending
    def add(self, ordinal: int, warc: str, tokens: np.ndarray, lengths: np.ndarray) -> dict:
        """Append one WARC's documents; close shards as they fill. Returns where the docs went."""
        tokens = np.asarray(tokens, dtype=self.dtype)
        lengths = np.asarray(lengths, dtype=np.uint64)
        first = (self.state.shard_index, self._open_docs)
        ends = np.cumsum(lengths, dtype=np.uint64)
        doc, tok = 0, 0
        n = len(lengths)
        while doc < n:
            room = self.shard_size - self._open_tokens
            # smallest k such that docs [doc, k) fill the shard (a shard closes after the doc that fills it)
            k = int(np.searchsorted(ends, tok + room, side="left")) + 1
            k = min(k, n)
            end_tok = int(ends[k - 1])
            self._note_source(ordinal, warc, k - doc)
            self._append_chunk(tokens[tok:end_tok], lengths[doc:k])
            doc, tok = k, end_tok
            if self._open_tokens >= self.shard_size:
                self._close_shard()
        self.state.docs += n
        self.state.tokens += len(tokens)
        last = (self.state.shard_index, self._open_docs)
        return {"docs": n, "tokens": len(tokens), "first": list(first), "end": list(last)}

    def _note_source(self, ordinal: int, warc: str, docs: int) -> None:
        src = self.state.sources
        if src and src[-1]["ordinal"] == ordinal:
            src[-1]["docs"] += docs
        else:
            src.append({"ordinal": ordinal, "warc": warc, "first_doc": self._open_docs, "docs": docs})

    def _close_shard(self) -> None:
        if not self._open_docs:
            return
        tokens = np.concatenate(self._chunks) if len(self._chunks) != 1 else self._chunks[0]
        tokens = np.ascontiguousarray(tokens.astype(self.dtype, copy=False))
        ends = np.cumsum(np.concatenate(self._lengths), dtype=np.uint64)
        tok_bytes = memoryview(tokens).cast("B")  # hashed and written as it is, not copied
        idx_bytes = ends.astype("<u8").tobytes()
        name = shard_name(self.state.shard_index)
        sidecar = {
            "shard": self.state.shard_index,
            "format": "raycorpus-flat-v1",
            "tokens": len(tokens),
            "docs": len(ends),
            **self.token_meta,
            "sources": self.state.sources,
            "sha256": {
                "tokens": hashlib.sha256(tok_bytes).hexdigest(),
                "idx": hashlib.sha256(idx_bytes).hexdigest(),
            },
        }
        sidecar_bytes = canonical_json(sidecar)
        write_formats(self.storage, self.out_url, name, self.formats, tokens, ends,
                      sidecar, self.token_meta, self.ctx_len, canonical_json)
        self.storage.write_atomic(self._url(SHARDS_DIR, name + ".tokens"), tok_bytes)
        self.storage.write_atomic(self._url(SHARDS_DIR, name + ".idx"), idx_bytes)
        self.storage.write_atomic(self._url(SHARDS_DIR, name + ".json"), sidecar_bytes)
        self.obsolete += [self._url(OPEN_DIR, s) for s in self.state.segments]
        self.state.segments = []
        self.state.sources = []
        self.state.shard_index += 1
        self.state.shards_closed += 1
        self._chunks, self._lengths = [], []
        self._persisted = self._open_tokens = self._open_docs = 0
        self._seg_seq = 0

    # -- durability
    def persist_open(self) -> PackerState:
        """Write the open shard's new tokens as a segment; return the state to checkpoint."""
        if self._persisted < len(self._chunks):
            toks = np.concatenate(self._chunks[self._persisted :])
            lens = np.concatenate(self._lengths[self._persisted :])
            buf = io.BytesIO()
            np.savez(buf, tokens=toks, lengths=lens)
            name = f"{shard_name(self.state.shard_index)}.seg-{self._seg_seq:06d}.npz"
            self.storage.write_atomic(self._url(OPEN_DIR, name), buf.getbuffer())
            self.state.segments.append(name)
            self._seg_seq += 1
            self._persisted = len(self._chunks)
        return PackerState.from_json(json.loads(json.dumps(self.state.to_json())))

    def finish(self) -> PackerState:
        """Close the last, partly filled shard (end of the manifest)."""
        self._close_shard()
        return self.persist_open()

    def drop_obsolete(self) -> None:
        for url in self.obsolete:
            self.storage.delete(url)
        self.obsolete = []

    def remove_orphans(self) -> None:
        """Delete open/ segments that no checkpoint names (written after the last checkpoint)."""
        keep = {self._url(OPEN_DIR, s) for s in self.state.segments}
        for url in self.storage.list(self._url(OPEN_DIR)):
            if url not in keep:
                self.storage.delete(url)


def read_shard(storage: Storage, out_url: str, i: int) -> tuple[np.ndarray, np.ndarray, dict]:
    """Return (tokens, doc end offsets, sidecar) of closed shard ``i``."""
    base = join_url(join_url(out_url, SHARDS_DIR), shard_name(i))
    meta = json.loads(storage.read_bytes(base + ".json"))
    tokens = np.frombuffer(storage.read_bytes(base + ".tokens"), dtype=np.dtype(meta["dtype"]))
    ends = np.frombuffer(storage.read_bytes(base + ".idx"), dtype="<u8")
    return tokens, ends, meta


def iter_documents(storage: Storage, out_url: str):
    """Yield every document's tokens, shard by shard, in commit order."""
    names = sorted(u for u in storage.list(join_url(out_url, SHARDS_DIR)) if u.endswith(".json"))
    for i in range(len(names)):
        tokens, ends, _ = read_shard(storage, out_url, i)
        start = 0
        for e in ends:
            yield tokens[start:int(e)]
            start = int(e)
