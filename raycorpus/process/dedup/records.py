"""A committed WARC's durable dedup record, in two files, so that the head writes a few KB per WARC:

- ``dedup/NNNNNNNNN.keys.npz``: the keys of every document the WARC brought to dedup (content hashes, 32-bit
  signatures, URL keys), written by the worker that processed it, before it returned (off the head). Same input,
  same bytes: a retried WARC writes the same file again.
- ``dedup/rows-BBBBBBBBB.npz``: which of those documents the index took, and which of them as near duplicates (one
  bit each), for the committed WARCs of a block of :data:`BLOCK_WARCS` ordinals (block ``ordinal // BLOCK_WARCS``),
  written by the packer (:class:`RowBlocks`): once the block's last WARC is committed, and at every checkpoint that
  ends inside it (so the rows a checkpoint names are durable). One write per block, not per WARC: on S3 a PUT
  costs the packer 2-3 ms of CPU and more of wall time. The final bytes hold the block's committed WARCs in ordinal
  order, whatever the rounds, checkpoints or restarts. A block also holds its WARCs' duplicate links
  (:class:`~raycorpus.process.dedup.clusters.DupLinks`: each dropped duplicate and the document it names), from
  which the build's cluster sizes come (:mod:`raycorpus.output.clusters`); a block written before the links has
  none and stays so when a resumed build rewrites it (that output gets no cluster sizes).

Together they give the WARC's :class:`IndexRecord`, which rebuilds a lost LSH shard (its files plus the records
of the WARCs committed after them). Outputs written before the blocks keep one rows file per WARC,
``dedup/NNNNNNNNN.npz``, and those before the split every field in it: both read as before."""

from __future__ import annotations

import io

import numpy as np

from raycorpus.ingest.storage import NotFound, Storage, join_url
from raycorpus.process.dedup.clusters import DupLinks
from raycorpus.process.dedup.index import IndexRecord, Layout, RecordRows, decode_record, make_gids, record_name
from raycorpus.process.dedup.paragraphs import Paragraphs

BLOCK_WARCS = 16  # WARC ordinals per rows file


def block_name(block: int) -> str:
    return f"rows-{block:09d}.npz"


def keys_name(ordinal: int) -> str:
    return f"{ordinal:09d}.keys.npz"


def encode_keys(hashes: np.ndarray, sigs: np.ndarray | None, urls: np.ndarray | None, layout: Layout,
                paragraphs: Paragraphs | None = None) -> bytes:
    """The keys file of a WARC's decided documents (signatures with near dedup, URL keys with URL dedup; with
    dedup.paragraphs, each document's number of keyed paragraphs and their keys)."""
    arrays = {"hashes": np.asarray(hashes, np.uint64)}
    if paragraphs is not None:
        keyed = paragraphs.keys != 0
        arrays["para_n"] = np.add.reduceat(keyed, np.cumsum(paragraphs.counts, dtype=np.int64) - paragraphs.counts,
                                           dtype=np.uint32) if paragraphs.counts.size else np.zeros(0, np.uint32)
        arrays["para_keys"] = paragraphs.keys[keyed]
    if layout.near and sigs is not None:
        arrays["sigs"] = np.asarray(sigs, np.uint32)
    if layout.url and urls is not None:
        arrays["urls"] = np.asarray(urls, np.uint64)
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def encode_rows(rows: RecordRows) -> bytes:
    """One WARC's rows as the packer wrote them before the blocks (``NNNNNNNNN.npz``): which decided documents the
    index took (and which of those are near duplicates). The packer now writes blocks (:func:`encode_block`);
    this stays the definition of the older files that :class:`RecordReader` still reads."""
    index = np.asarray(rows.index, bool)
    arrays = {"n": np.array([index.size], np.uint64), "index": np.packbits(index)}
    if rows.near is not None:
        arrays["near"] = np.packbits(np.asarray(rows.near, bool))
        arrays["n_near"] = np.array([rows.near.size], np.uint64)
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def decode_rows(data: bytes) -> RecordRows | None:
    """The rows of a record in the split form; None for a whole record (written before the split)."""
    with np.load(io.BytesIO(data)) as z:
        if "index" not in z.files:
            return None
        index = np.unpackbits(z["index"], count=int(z["n"][0])).astype(bool)
        near = np.unpackbits(z["near"], count=int(z["n_near"][0])).astype(bool) if "near" in z.files else None
    return RecordRows(index, near)


def join_record(ordinal: int, rows: RecordRows, keys: bytes) -> IndexRecord:
    """The WARC's record from its rows and its keys file."""
    with np.load(io.BytesIO(keys)) as z:
        hashes, sigs, urls, para_n, para_keys = (z[k] if k in z.files else None
                                                 for k in ("hashes", "sigs", "urls", "para_n", "para_keys"))
    if hashes.size != rows.index.size:
        raise ValueError(f"WARC #{ordinal}: its dedup record names {rows.index.size} documents, its keys file has "
                         f"{hashes.size}")
    i = rows.index
    seen = None
    if rows.paragraphs is not None:
        if para_n is None:
            raise ValueError(f"WARC #{ordinal}: its dedup rows name paragraphs, its keys file has none")
        seen = para_keys[np.repeat(rows.paragraphs, para_n.astype(np.int64))]
    return IndexRecord(make_gids(ordinal, i.size)[i], hashes[i], None if sigs is None else sigs[i],
                       None if urls is None else urls[i], rows.near, seen)


def encode_block(rows: dict[int, RecordRows], links: dict[int, DupLinks] | None = None) -> bytes:
    """The rows of a block's committed WARCs (each as :func:`encode_rows` packs it), in ordinal order, and the
    links of those that dropped duplicates (None: a block as written before links)."""
    linked = sorted(o for o in links or {} if len(links[o]))
    ordinals = sorted(rows)
    index = [np.packbits(np.asarray(rows[o].index, bool)) for o in ordinals]
    near = [np.packbits(np.asarray(rows[o].near, bool)) for o in ordinals if rows[o].near is not None]
    seen = [np.packbits(np.asarray(rows[o].paragraphs, bool)) for o in ordinals if rows[o].paragraphs is not None]
    arrays = {"ordinals": np.array(ordinals, np.uint64),
              "n": np.array([rows[o].index.size for o in ordinals], np.uint64),
              "n_near": np.array([-1 if rows[o].near is None else rows[o].near.size for o in ordinals], np.int64),
              "index": np.concatenate(index or [np.zeros(0, np.uint8)]),
              "near": np.concatenate(near or [np.zeros(0, np.uint8)])}
    if seen:  # dedup.paragraphs: the documents whose paragraphs were made seen (the rows of the others: -1)
        arrays |= {"n_para": np.array([-1 if rows[o].paragraphs is None else rows[o].paragraphs.size
                                       for o in ordinals], np.int64), "para": np.concatenate(seen)}
    if links is not None:
        arrays |= {"links_ordinals": np.array(linked, np.uint64),
                   "links_n": np.array([len(links[o]) for o in linked], np.uint64),
                   "links_rows": np.concatenate([links[o].rows for o in linked] or [np.zeros(0, np.uint32)]),
                   "links_dup_of": np.concatenate([links[o].dup_of for o in linked] or [np.zeros(0, np.uint64)])}
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def decode_links(data: bytes) -> dict[int, DupLinks] | None:
    """The duplicate links of a block's WARCs (those that dropped some); None for a block written before links."""
    with np.load(io.BytesIO(data)) as z:
        if "links_ordinals" not in z.files:
            return None
        ordinals, n, rows, dup_of = (z[k] for k in ("links_ordinals", "links_n", "links_rows", "links_dup_of"))
    ends = np.cumsum(n.astype(np.int64))
    return {o: DupLinks(rows[e - k : e], dup_of[e - k : e])
            for o, k, e in zip(ordinals.tolist(), n.tolist(), ends.tolist(), strict=True)}


def decode_block(data: bytes) -> dict[int, RecordRows]:
    with np.load(io.BytesIO(data)) as z:
        ordinals, n, n_near, index, near = (z[k] for k in ("ordinals", "n", "n_near", "index", "near"))
        n_para, para = (z["n_para"], z["para"]) if "n_para" in z.files else (np.full(n.size, -1), None)
    out, at, at_near, at_para = {}, 0, 0, 0
    for ordinal, size, size_near, size_para in zip(ordinals.tolist(), n.tolist(), n_near.tolist(), n_para.tolist(),
                                                   strict=True):
        nbytes = -(-size // 8)
        bits = np.unpackbits(index[at : at + nbytes], count=size).astype(bool)
        at += nbytes
        near_bits = None
        if size_near >= 0:
            nbytes = -(-size_near // 8)
            near_bits = np.unpackbits(near[at_near : at_near + nbytes], count=size_near).astype(bool)
            at_near += nbytes
        seen = None
        if size_para >= 0:
            nbytes = -(-size_para // 8)
            seen = np.unpackbits(para[at_para : at_para + nbytes], count=size_para).astype(bool)
            at_para += nbytes
        out[ordinal] = RecordRows(bits, near_bits, seen)
    return out


class RowBlocks:
    """The packer's side of the rows files: the current block's rows, written when its last WARC is committed
    (:meth:`passed`) or a checkpoint ends inside it (:meth:`flush`). A packer that starts (a resumed build, a
    replacement) takes the rows of its block's WARCs below ``next_ordinal`` from the file the last checkpoint
    wrote; rows past it (a block completed after that checkpoint) go at the next flush, and are committed again,
    the same, as the build goes on."""

    def __init__(self, storage: Storage, dedup_url: str, next_ordinal: int):
        self.storage, self.dedup_url = storage, dedup_url
        self.block = next_ordinal // BLOCK_WARCS
        try:
            data = storage.read_bytes(self._url(self.block))
            written, links = decode_block(data), decode_links(data)
        except NotFound:
            written, links = {}, {}
        self.legacy = links is None  # (written before links: rewritten without them)
        links = links or {}
        self.rows: dict[int, RecordRows] = {o: r for o, r in written.items() if o < next_ordinal}
        self.links: dict[int, DupLinks] = {o: k for o, k in links.items() if o < next_ordinal}
        self.unwritten = len(self.rows) != len(written) or len(self.links) != len(links)  # (rewritten without them)

    def add(self, ordinal: int, rows: RecordRows | None, links: DupLinks | None = None) -> None:
        """WARC ``ordinal``'s rows (None: the index took none of its documents) and duplicate links."""
        self.passed(ordinal)
        if rows is not None:
            self.rows[ordinal] = rows
        if links is not None and len(links):
            self.links[ordinal] = links
        self.unwritten = True

    def passed(self, next_ordinal: int) -> None:
        """Every WARC below ``next_ordinal`` is committed: the blocks before its own are complete."""
        if next_ordinal // BLOCK_WARCS > self.block:
            self.flush()
            self.block, self.rows, self.links, self.legacy = next_ordinal // BLOCK_WARCS, {}, {}, False

    def flush(self) -> None:
        if self.unwritten:
            if self.rows or self.links:
                self.storage.write_atomic(self._url(self.block),
                                          encode_block(self.rows, None if self.legacy else self.links))
            else:  # only rows past the checkpoint were there: an undisturbed build has no such file
                self.storage.delete(self._url(self.block))
            self.unwritten = False

    def _url(self, block: int) -> str:
        return join_url(self.dedup_url, block_name(block))


class RecordReader:
    """Committed WARCs' records (:func:`read_record`), reading each rows block once for a run of ordinals."""

    def __init__(self, storage: Storage, dedup_url: str):
        self.storage, self.dedup_url = storage, dedup_url
        self._block: tuple[int, dict[int, RecordRows]] | None = None  # (block, its rows): the last one read

    def read(self, ordinal: int) -> tuple[IndexRecord, int]:
        """WARC ``ordinal``'s record (any form) and the bytes read for it (a block's, the first time)."""
        rows, read = self.rows(ordinal)
        if rows is None:  # before the blocks: a file per WARC
            data = self.storage.read_bytes(join_url(self.dedup_url, record_name(ordinal)))
            rows, read = decode_rows(data), len(data)
            if rows is None:
                return decode_record(data), read
        keys = self.storage.read_bytes(join_url(self.dedup_url, keys_name(ordinal)))
        return join_record(ordinal, rows, keys), read + len(keys)

    def rows(self, ordinal: int) -> tuple[RecordRows | None, int]:
        """WARC ``ordinal``'s rows from its block (None: not in one) and the bytes read for them."""
        block = ordinal // BLOCK_WARCS
        read = 0
        if self._block is None or self._block[0] != block:
            try:
                data = self.storage.read_bytes(join_url(self.dedup_url, block_name(block)))
                self._block, read = (block, decode_block(data)), len(data)
            except NotFound:
                self._block = (block, {})
        return self._block[1].get(ordinal), read


def read_record(storage: Storage, dedup_url: str, ordinal: int) -> tuple[IndexRecord, int]:
    """WARC ``ordinal``'s record (any form) and the bytes read for it."""
    return RecordReader(storage, dedup_url).read(ordinal)
