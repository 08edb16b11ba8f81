"""Token shards: the packer that places documents in commit order and closes shards by size.

Shard ``i`` is three files under ``shards/``:

- ``shard-{i:06d}.tokens``: flat little-endian token ids (uint16 when vocab < 65,536, else uint32)
- ``shard-{i:06d}.idx``: uint64 end offset of every document (in tokens, within the shard)
- ``shard-{i:06d}.json``: sidecar (tokenizer, dtype, counts, source WARCs, sha256 of both files)

The token bytes never pass through the packer. Each worker *stages* its WARC's encoded documents
as one file under ``tokens/`` before it returns (:func:`stage_tokens`); the packer places documents
by their lengths alone and describes the open shard as *pieces* (a staged file and the document
ranges of it that were kept). A closed shard is assembled from its pieces and written by a
*closer* (:func:`write_shard`; the runtime runs it as a task off the head), durable before the
checkpoint that counts it. A checkpoint names the open shard's pieces, so a restart reopens it
exactly where the checkpoint left it; a staged file is deleted once a durable checkpoint no longer
needs it. Shard bytes depend only on the sequence of committed documents.
"""

from __future__ import annotations

import hashlib
import io
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from raycorpus.ingest.storage import Storage, StorageError, join_url
from raycorpus.output.formats import TOKEN_FORMATS, write_formats
from raycorpus.output.streaming_formats import StreamingIndexes

if TYPE_CHECKING:
    from raycorpus.process.dedup.paragraphs import TokenCuts

SHARDS_DIR = "shards"
TOKENS_DIR = "tokens"  # the WARCs' staged token files, until the shards holding their documents close
OPEN_DIR = "open"  # earlier outputs kept the open shard here as segments (still read)


def shard_name(i: int) -> str:
    return f"shard-{i:06d}"


def canonical_json(obj: object) -> bytes:
    return (json.dumps(obj, sort_keys=True, indent=1, ensure_ascii=False) + "\n").encode()


def _url(out_url: str, *parts: str) -> str:
    for p in parts:
        out_url = join_url(out_url, p)
    return out_url


@dataclass(frozen=True, slots=True)
class WarcTokens:
    """A WARC's encoded documents as its worker staged them: the file (under the output; None when
    the WARC has no documents) and every document's length in tokens."""

    file: str | None
    lengths: np.ndarray  # uint64, one per document of the file
    parts: tuple[WarcTokens, ...] = ()  # a WARC cut into ranges: each range's staged tokens, in order (file None)

    @classmethod
    def joined(cls, parts: list[WarcTokens]) -> WarcTokens:
        """The staged tokens of a WARC cut into ranges: its ranges' files, in order."""
        return cls(None, np.concatenate([p.lengths for p in parts]).astype(np.uint64), tuple(parts))

    def pieces(self) -> tuple[WarcTokens, ...]:
        """The staged files' tokens, in document order (one, unless the WARC was cut into ranges)."""
        return self.parts or (self,)


class StagingError(StorageError):
    """A worker could not stage its tokens on the output: the output's fault, not the WARC's."""


def staged_name(ordinal: int, part: int | None = None) -> str:
    return f"{TOKENS_DIR}/{ordinal:09d}.npz" if part is None else f"{TOKENS_DIR}/{ordinal:09d}-{part:04d}.npz"


def stage_tokens(storage: Storage, out_url: str, ordinal: int, tokens: np.ndarray | None,
                 lengths: np.ndarray | None, part: int | None = None) -> WarcTokens:
    """Write WARC ``ordinal``'s documents (tokens, each followed by EOS, concatenated) for the packer
    (``part``: those of one range of the WARC). Same input, same bytes: a retried WARC writes the same
    file again."""
    lengths = np.zeros(0, np.uint64) if lengths is None else np.asarray(lengths, np.uint64)
    if not len(lengths):
        return WarcTokens(None, lengths)
    buf = io.BytesIO()
    np.savez(buf, tokens=tokens, lengths=lengths)
    name = staged_name(ordinal, part)
    try:
        storage.write_atomic(_url(out_url, name), buf.getbuffer())
    except StorageError as e:
        raise StagingError(str(e)) from e
    return WarcTokens(name, lengths)


def load_staged(storage: Storage, out_url: str, file: str) -> tuple[np.ndarray, np.ndarray]:
    """(tokens, lengths) of a staged file (or of a legacy open-shard segment: the same two arrays)."""
    with np.load(io.BytesIO(storage.read_bytes(_url(out_url, file))), allow_pickle=False) as z:
        return z["tokens"], z["lengths"]


def kept_ranges(index: np.ndarray) -> list[list[int]]:
    """Sorted document indices as ``[start, stop)`` runs: ``[0, 1, 2, 5, 6] -> [[0, 3], [5, 7]]``."""
    if not len(index):
        return []
    cut = np.flatnonzero(np.diff(index) != 1) + 1
    starts = index[np.r_[0, cut]]
    stops = index[np.r_[cut - 1, len(index) - 1]] + 1
    return np.stack([starts, stops], axis=1).tolist()


@dataclass
class PackerState:
    """The JSON-able position of the packer, saved in every ledger checkpoint."""

    shard_index: int = 0
    # the open shard: [{"file": staged file, "ranges": [[start, stop), ...] of its documents, or None: all,
    #                   and with dedup.paragraphs "cuts": [[document, start, stop], ...] token spans it loses}]
    pieces: list[dict] = field(default_factory=list)
    sources: list[dict] = field(default_factory=list)  # WARCs that contributed to the open shard
    docs: int = 0  # totals over closed and open shards
    tokens: int = 0
    shards_closed: int = 0
    open_docs: int = 0
    open_tokens: int | None = 0  # None: not known yet (a legacy state, counted from its segments)

    def to_json(self) -> dict:
        return dict(self.__dict__)

    @classmethod
    def from_json(cls, d: dict) -> PackerState:
        d = dict(d)
        if "segments" in d:  # an earlier output: the open shard as whole segment files under open/
            d["pieces"] = [{"file": f"{OPEN_DIR}/{s}", "ranges": None} for s in d.pop("segments")]
            d["open_docs"] = sum(src["docs"] for src in d["sources"])
            d["open_tokens"] = None
        return cls(**d)

    def files(self) -> set[str]:
        return {p["file"] for p in self.pieces}


@dataclass(frozen=True)
class ShardSpec:
    """Everything a closer needs to write closed shard ``index``."""

    out_url: str
    index: int
    pieces: list[dict]
    sources: list[dict]
    token_meta: dict
    formats: tuple[str, ...] = ()
    ctx_len: int | None = None


def assemble(storage: Storage, spec: ShardSpec) -> tuple[np.ndarray, np.ndarray]:
    """(tokens, document end offsets) of a shard, from its pieces (less the token spans their ``cuts`` name)."""
    tok_parts, len_parts = [], []
    for piece in spec.pieces:
        tokens, lengths = load_staged(storage, spec.out_url, piece["file"])
        ranges = piece["ranges"] if piece["ranges"] is not None else [[0, len(lengths)]]
        offsets = np.zeros(len(lengths) + 1, np.uint64)
        np.cumsum(lengths, out=offsets[1:])
        if piece.get("cuts"):  # dedup.paragraphs: the removed paragraphs' tokens
            tokens, lengths, offsets = _cut(tokens, lengths, offsets, piece["cuts"])
        for a, b in ranges:
            tok_parts.append(tokens[int(offsets[a]) : int(offsets[b])])
            len_parts.append(lengths[a:b])
    dtype = np.dtype(spec.token_meta["dtype"])
    tokens = np.concatenate(tok_parts).astype(dtype, copy=False) if tok_parts else np.zeros(0, dtype)
    return np.ascontiguousarray(tokens), np.cumsum(np.concatenate(len_parts), dtype=np.uint64)


def _cut(tokens: np.ndarray, lengths: np.ndarray, offsets: np.ndarray, cuts: list[list[int]]
         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A staged file's tokens, lengths and offsets without the spans ``[[doc, start, stop], ...]`` (token offsets
    within each document)."""
    keep = np.ones(tokens.size, bool)
    lengths = lengths.astype(np.uint64, copy=True)
    for doc, start, stop in cuts:
        keep[int(offsets[doc]) + start : int(offsets[doc]) + stop] = False
        lengths[doc] -= np.uint64(stop - start)
    out = np.zeros(lengths.size + 1, np.uint64)
    np.cumsum(lengths, out=out[1:])
    return tokens[keep], lengths, out


def write_shard(storage: Storage, spec: ShardSpec) -> None:
    """Write a closed shard's files (and its other token formats): tokens, idx, then the sidecar."""
    tokens, ends = assemble(storage, spec)
    tok_bytes = memoryview(tokens).cast("B")  # hashed and written as it is, not copied
    idx_bytes = ends.astype("<u8").tobytes()
    name = shard_name(spec.index)
    sidecar = {
        "shard": spec.index,
        "format": "raycorpus-flat-v1",
        "tokens": len(tokens),
        "docs": len(ends),
        **spec.token_meta,
        "sources": spec.sources,
        "sha256": {
            "tokens": hashlib.sha256(tok_bytes).hexdigest(),
            "idx": hashlib.sha256(idx_bytes).hexdigest(),
        },
    }
    write_formats(storage, spec.out_url, name, spec.formats, tokens, ends, sidecar, spec.token_meta, spec.ctx_len,
                  canonical_json)
    storage.write_atomic(_url(spec.out_url, SHARDS_DIR, name + ".tokens"), tok_bytes)
    storage.write_atomic(_url(spec.out_url, SHARDS_DIR, name + ".idx"), idx_bytes)
    storage.write_atomic(_url(spec.out_url, SHARDS_DIR, name + ".json"), canonical_json(sidecar))


class InlineCloser:
    """Writes closed shards at once, in this process (the runtime's closer sends them off the head)."""

    def __init__(self, storage: Storage):
        self.storage = storage

    def submit(self, spec: ShardSpec) -> None:
        write_shard(self.storage, spec)

    def wait(self) -> None:
        """Return once every submitted shard is durable."""


class ShardPacker:
    def __init__(self, storage: Storage, out_url: str, shard_size_tokens: int, token_meta: dict,
                 state: PackerState | None = None, formats: tuple[str, ...] = (), ctx_len: int | None = None,
                 closer=None):
        self.storage = storage
        self.formats = tuple(f for f in formats if f in TOKEN_FORMATS)
        self.ctx_len = ctx_len
        self.out_url = out_url
        self.shard_size = shard_size_tokens
        self.token_meta = token_meta
        self.state = state or PackerState()
        self.closer = closer or InlineCloser(storage)
        self.obsolete: list[str] = []  # urls of staged files to delete once a checkpoint no longer names them
        self._released: set[str] = set()  # staged files whose documents are all in closed shards
        self.indexes = StreamingIndexes(storage, out_url, self.formats, token_meta["dtype"], self.state.shards_closed,
                                        shard_size_tokens)
        if self.state.open_tokens is None:
            self.state.open_tokens = sum(int(load_staged(storage, out_url, f)[1].sum()) for f in self.state.files())

    # -- appending
    def add(self, ordinal: int, warc: str, staged: WarcTokens, keep: np.ndarray | None = None,
            cuts: TokenCuts | None = None) -> dict:
        """Place one WARC's documents (``keep``: which of the staged ones; None: all; ``cuts``: the token spans
        they lose, dedup.paragraphs' removed paragraphs); close shards as they fill. Returns where they went."""
        first = (self.state.shard_index, self.state.open_docs)
        n = total = done = 0
        for piece in staged.pieces():  # a WARC cut into ranges: each range's file in turn, as one WARC
            m = len(piece.lengths)
            docs, tokens = self._place(ordinal, warc, piece, None if keep is None else keep[done : done + m],
                                       None if cuts is None or not len(cuts) else (cuts, done))
            n, total, done = n + docs, total + tokens, done + m
        self.state.docs += n
        self.state.tokens += total
        last = (self.state.shard_index, self.state.open_docs)
        return {"docs": n, "tokens": total, "first": list(first), "end": list(last)}

    def _place(self, ordinal: int, warc: str, staged: WarcTokens, keep: np.ndarray | None,
               cuts: tuple[TokenCuts, int] | None = None) -> tuple[int, int]:
        """Place the kept documents of one staged file (``cuts``: the WARC's, and the file's first document in the
        WARC); (documents, tokens) placed."""
        index = np.arange(len(staged.lengths)) if keep is None else np.flatnonzero(keep)
        lengths = staged.lengths
        if cuts is not None:
            first = cuts[1]
            lengths = lengths - cuts[0].removed_per_doc(first + lengths.size)[first : first + lengths.size].astype(
                np.uint64)
            cut_at, cut_rows = cuts[0].in_file(first, index)  # (by the kept documents' order: a slice per piece)
        lengths = lengths[index]
        ends = np.cumsum(lengths, dtype=np.uint64)
        doc, n = 0, len(lengths)
        if staged.file is not None and not n:
            self._released.add(staged.file)
        while doc < n:
            room = self.shard_size - self.state.open_tokens
            # smallest k such that docs [doc, k) fill the shard (a shard closes after the doc that fills it)
            k = min(int(np.searchsorted(ends, (ends[doc - 1] if doc else 0) + room, side="left")) + 1, n)
            self._note_source(ordinal, warc, k - doc)
            piece = {"file": staged.file, "ranges": kept_ranges(index[doc:k])}
            if cuts is not None and (mine := cut_rows[slice(*np.searchsorted(cut_at, (doc, k)))].tolist()):
                piece["cuts"] = mine
            self.state.pieces.append(piece)
            self.state.open_docs += k - doc
            self.state.open_tokens += int(ends[k - 1] - (ends[doc - 1] if doc else 0))
            doc = k
            if self.state.open_tokens >= self.shard_size:
                self._close_shard()
        return n, int(ends[-1]) if n else 0

    def _note_source(self, ordinal: int, warc: str, docs: int) -> None:
        src = self.state.sources
        if src and src[-1]["ordinal"] == ordinal:
            src[-1]["docs"] += docs
        else:
            src.append({"ordinal": ordinal, "warc": warc, "first_doc": self.state.open_docs, "docs": docs})

    def _close_shard(self) -> None:
        if not self.state.open_docs:
            return
        self.closer.submit(ShardSpec(self.out_url, self.state.shard_index, self.state.pieces, self.state.sources,
                                     self.token_meta, self.formats, self.ctx_len))
        self._released |= self.state.files()
        self.state.pieces, self.state.sources = [], []
        self.state.shard_index += 1
        self.state.shards_closed += 1
        self.state.open_docs = self.state.open_tokens = 0

    # -- durability
    def persist_open(self) -> PackerState:
        """Wait until every closed shard is durable; return the state to checkpoint (the open shard's
        documents are already durable: the workers staged them)."""
        self.closer.wait()
        self.indexes.update(self.state.shards_closed)  # the closed shards' index.json, before the checkpoint
        named = self.state.files()
        self.obsolete += [_url(self.out_url, f) for f in sorted(self._released - named)]
        self._released &= named
        return PackerState.from_json(json.loads(json.dumps(self.state.to_json())))

    def finish(self) -> PackerState:
        """Close the last, partly filled shard (end of the manifest); every staged file goes."""
        self._close_shard()
        state = self.persist_open()
        listed = set(self.obsolete)
        self.obsolete += [u for u in self._staged_urls() if u not in listed]
        return state

    def drop_obsolete(self) -> None:
        self.storage.delete_many(self.obsolete)
        self.obsolete = []

    def _staged_urls(self) -> list[str]:
        return [u for d in (TOKENS_DIR, OPEN_DIR) for u in self.storage.list(_url(self.out_url, d))]

    def remove_orphans(self) -> None:
        """Delete staged files no checkpoint names (a killed run's, of WARCs it had not committed). Only
        where no worker of this run can be staging yet: at its start."""
        keep = {_url(self.out_url, f) for f in self.state.files()}
        for url in self._staged_urls():
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
