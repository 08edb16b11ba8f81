"""A committed WARC's durable dedup record, in two files, so that the head writes a few KB per WARC:

- ``dedup/NNNNNNNNN.keys.npz``: the keys of every document the WARC brought to dedup (content hashes, 32-bit
  signatures, URL keys), written by the worker that processed it, before it returned (off the head). Same input,
  same bytes: a retried WARC writes the same file again.
- ``dedup/NNNNNNNNN.npz``: which of those documents the index took, and which of them as near duplicates (one
  bit each), written by the packer when the WARC is committed.

Together they give the WARC's :class:`IndexRecord`, which rebuilds a lost LSH shard (its files plus the records
of the WARCs committed after them). A record written before the split (every field in ``NNNNNNNNN.npz``) reads
as before."""

from __future__ import annotations

import io

import numpy as np

from raycorpus.ingest.storage import Storage, join_url
from raycorpus.process.dedup.index import IndexRecord, Layout, RecordRows, decode_record, make_gids, record_name


def keys_name(ordinal: int) -> str:
    return f"{ordinal:09d}.keys.npz"


def encode_keys(hashes: np.ndarray, sigs: np.ndarray | None, urls: np.ndarray | None, layout: Layout) -> bytes:
    """The keys file of a WARC's decided documents (signatures with near dedup, URL keys with URL dedup)."""
    arrays = {"hashes": np.asarray(hashes, np.uint64)}
    if layout.near and sigs is not None:
        arrays["sigs"] = np.asarray(sigs, np.uint32)
    if layout.url and urls is not None:
        arrays["urls"] = np.asarray(urls, np.uint64)
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def encode_rows(rows: RecordRows) -> bytes:
    """The packer's part: which decided documents the index took (and which of those are near duplicates)."""
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
        hashes, sigs, urls = (z[k] if k in z.files else None for k in ("hashes", "sigs", "urls"))
    if hashes.size != rows.index.size:
        raise ValueError(f"WARC #{ordinal}: its dedup record names {rows.index.size} documents, its keys file has "
                         f"{hashes.size}")
    i = rows.index
    return IndexRecord(make_gids(ordinal, i.size)[i], hashes[i], None if sigs is None else sigs[i],
                       None if urls is None else urls[i], rows.near)


def read_record(storage: Storage, dedup_url: str, ordinal: int) -> tuple[IndexRecord, int]:
    """WARC ``ordinal``'s record (either form) and the bytes read for it."""
    data = storage.read_bytes(join_url(dedup_url, record_name(ordinal)))
    rows = decode_rows(data)
    if rows is None:
        return decode_record(data), len(data)
    keys = storage.read_bytes(join_url(dedup_url, keys_name(ordinal)))
    return join_record(ordinal, rows, keys), len(data) + len(keys)
