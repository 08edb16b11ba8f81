"""MosaicML streaming (MDS) and Lightning litdata copies of the closed shards, written natively.

Both are a folder of binary shards plus one ``index.json`` naming them, which their readers open:

- ``mds/shard-NNNNNN.mds``: an MDS v2 shard (``streaming.base.format.mds``): uint32 sample count,
  uint32 sample offsets (count + 1), the shard's JSON config, then one sample per document: a uint32
  column size and the column ``tokens`` encoded ``ndarray:uint16`` / ``ndarray:uint32`` (one byte
  ``ndim << 2 | shape dtype``, the length in that shape dtype, the token ids). Read with
  ``streaming.StreamingDataset(local=".../mds")``; each sample is ``{"tokens": array}``.
- ``litdata/chunk-0-N.bin``: a litdata chunk (``litdata.streaming.writer``): uint32 item count,
  uint32 byte offsets (count + 1), then the items, one per document, serialised ``no_header_numpy``
  (the raw token ids), ``item_loader: TokensLoader`` in the config. Read with
  ``litdata.StreamingDataset(".../litdata", item_loader=TokensLoader(block_size=...))``: blocks of
  a chunk's tokens (litdata refuses another item loader for such a folder).

Each shard's entry of ``index.json`` goes into its sidecar (``mds/shard-NNNNNN.json``,
``litdata/shard-NNNNNN.json``: the provenance sidecar of every format plus the entry under the
format's name), written by the closer; :class:`StreamingIndexes` gathers the entries in shard order
and writes ``index.json`` before the checkpoint that counts the shards. Same shards, same bytes:
nothing here depends on time or on which writer closed a shard.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np

from raycorpus.ingest.storage import Storage, join_url

STREAMING_FORMATS = ("mds", "litdata")
INDEX = "index.json"
MAX_SHARD_BYTES = 2**32 - 1  # both formats address a shard's bytes with uint32 offsets
MDS_CONFIG = {"column_names": ["tokens"], "column_sizes": [None], "compression": None, "format": "mds",
              "hashes": [], "size_limit": None, "version": 2}
_MDS_DTYPES = {np.dtype(np.uint16): "uint16", np.dtype(np.uint32): "uint32"}
_LITDATA_DTYPE_CODES = {np.dtype(np.uint16): 5, np.dtype(np.uint32): 6}  # litdata.constants._NUMPY_DTYPES_MAPPING
_LITDATA_DATA_SPEC = '[1, {"type": null, "context": null, "children_spec": []}]'  # one leaf: an array


def _json(obj: object) -> bytes:
    return json.dumps(obj, sort_keys=True).encode()


def _check_size(fmt: str, size: int) -> None:
    if size > MAX_SHARD_BYTES:
        raise ValueError(f"a {fmt} shard of {size:,} bytes is over the format's 4 GiB limit: lower "
                         "output.shard_size_tokens")


def mds_config(dtype: np.dtype) -> dict:
    return {**MDS_CONFIG, "column_encodings": [f"ndarray:{_MDS_DTYPES[np.dtype(dtype)]}"]}


def mds_shard(tokens: np.ndarray, ends: np.ndarray) -> memoryview:
    """The ``.mds`` file of documents ``tokens[ends[i-1]:ends[i]]`` (each one sample)."""
    config = _json(mds_config(tokens.dtype))
    ends = np.asarray(ends, np.int64)
    lengths = np.diff(ends, prepend=0)
    if len(lengths) and lengths.min() < 1:
        raise ValueError("MDS cannot hold an empty document")
    shape_code = np.select([lengths < 2**8, lengths < 2**16], [0, 1], 2)  # uint8 / uint16 / uint32 length
    shape_bytes = 1 << shape_code
    head_bytes = 4 + 1 + shape_bytes  # column size, ndim | shape dtype, the length
    col_sizes = 1 + shape_bytes + lengths * tokens.dtype.itemsize
    sample_sizes = 4 + col_sizes
    n = len(lengths)
    start = 4 + 4 * (n + 1) + len(config)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(sample_sizes, out=offsets[1:])
    offsets += start
    _check_size("mds", int(offsets[-1]))
    out = np.empty(int(offsets[-1]), np.uint8)
    out[:4] = np.frombuffer(np.uint32(n).tobytes(), np.uint8)
    out[4 : 4 + 4 * (n + 1)] = np.frombuffer(offsets.astype("<u4").tobytes(), np.uint8)
    out[4 + 4 * (n + 1) : start] = np.frombuffer(config, np.uint8)
    starts = offsets[:-1]
    _put_column(out, starts, col_sizes.astype("<u4"))  # a sample's head: its column's size,
    out[starts + 4] = (1 << 2) | shape_code  # ndim 1 | the shape dtype's code, the length in that dtype
    for code, dtype in enumerate(("<u1", "<u2", "<u4")):
        sel = shape_code == code
        _put_column(out, starts[sel] + 5, lengths[sel].astype(dtype))
    _place_documents(out, tokens, ends, starts + head_bytes)
    return out.data


def _put_column(out: np.ndarray, starts: np.ndarray, values: np.ndarray) -> None:
    """Write ``values[i]`` (little-endian bytes) at ``out[starts[i]:]``, for every ``i``."""
    as_bytes = values.view(np.uint8).reshape(len(values), values.dtype.itemsize)
    for j in range(values.dtype.itemsize):
        out[starts + j] = as_bytes[:, j]


def _place_documents(out: np.ndarray, tokens: np.ndarray, ends: np.ndarray, starts: np.ndarray) -> None:
    """Copy document ``i`` (its tokens' bytes) to ``out[starts[i]:]``."""
    src = memoryview(tokens.astype(tokens.dtype.newbyteorder("<"), copy=False)).cast("B")
    dst = memoryview(out)
    a = 0
    for b, s in zip((np.asarray(ends, np.int64) * tokens.dtype.itemsize).tolist(), starts.tolist(), strict=True):
        dst[s : s + b - a] = src[a:b]
        a = b


def mds_entry(name: str, data: bytes | memoryview, docs: int, dtype: np.dtype) -> dict:
    """The shard's entry of the MDS ``index.json``."""
    return {**mds_config(dtype), "raw_data": {"basename": name + ".mds", "bytes": len(data), "hashes": {}},
            "samples": docs, "zip_data": None}


def litdata_chunk(tokens: np.ndarray, ends: np.ndarray) -> bytes:
    """A litdata chunk of documents ``tokens[ends[i-1]:ends[i]]`` (each one item)."""
    n = len(ends)
    head = 4 + 4 * (n + 1)
    offsets = head + np.concatenate([[0], np.asarray(ends, np.int64)]) * tokens.dtype.itemsize
    _check_size("litdata", int(offsets[-1]))
    body = tokens.astype(tokens.dtype.newbyteorder("<"), copy=False)
    return b"".join([np.uint32(n).tobytes(), offsets.astype("<u4").tobytes(), memoryview(body).cast("B")])


def litdata_chunk_name(name: str) -> str:
    """``shard-000012`` -> ``chunk-0-12.bin``: litdata's own naming (its cache counts ``chunk-*.bin`` files)."""
    return f"chunk-0-{int(name.rsplit('-', 1)[1])}.bin"


def litdata_entry(name: str, data: bytes | memoryview, docs: int, tokens: int) -> dict:
    """The shard's entry of the litdata ``index.json`` (``dim``: its tokens, which TokensLoader cuts into blocks)."""
    return {"chunk_bytes": len(data), "chunk_size": docs, "dim": tokens, "filename": litdata_chunk_name(name)}


def litdata_config(dtype: np.dtype, shard_size_tokens: int | None) -> dict:
    """``chunk_bytes``: the target size of a chunk (a shard's, which closes after the document that fills it)."""
    chunk_bytes = shard_size_tokens * np.dtype(dtype).itemsize if shard_size_tokens else None
    return {"chunk_bytes": chunk_bytes, "chunk_size": None, "compression": None, "compression_batch_size": None,
            "compression_level": None, "data_format": [f"no_header_numpy:{_LITDATA_DTYPE_CODES[np.dtype(dtype)]}"],
            "data_spec": _LITDATA_DATA_SPEC, "encryption": None, "ipc_compression": None,
            "item_loader": "TokensLoader"}


def write_streaming_format(put, fmt: str, name: str, tokens: np.ndarray, ends: np.ndarray,
                           sidecar: dict, dumps) -> None:
    """Write closed shard ``name`` as ``fmt`` (``put(folder, filename, data)`` writes atomically): the
    data file, then the sidecar with the shard's index entry."""
    if fmt == "mds":
        data = mds_shard(tokens, ends)
        put(fmt, name + ".mds", data)
        entry = mds_entry(name, data, len(ends), tokens.dtype)
    elif fmt == "litdata":
        data = litdata_chunk(tokens, ends)
        put(fmt, litdata_chunk_name(name), data)
        entry = litdata_entry(name, data, len(ends), len(tokens))
    else:
        raise ValueError(f"unknown streaming format {fmt!r}")
    put(fmt, name + ".json", dumps({**sidecar, fmt: entry}))


class StreamingIndexes:
    """Keeps ``index.json`` of the MDS / litdata folders listing every closed shard, in shard order.

    The packer calls :meth:`update` once the closed shards are durable and before the checkpoint that
    counts them; the entries come from the shards' sidecars (read once each: an index written earlier
    gives the first ones on a restart)."""

    def __init__(self, storage: Storage, out_url: str, formats: tuple[str, ...], dtype: str, closed: int,
                 shard_size_tokens: int | None = None):
        self.storage = storage
        self.shard_size_tokens = shard_size_tokens
        self.out_url = out_url
        self.dtype = np.dtype(dtype)
        written = {f: self._written(f) for f in formats if f in STREAMING_FORMATS}
        self.entries: dict[str, list[dict]] = {f: w[:closed] for f, w in written.items()}
        # an index naming more shards than are closed (a finished output's last shard reopened to grow it)
        # is written again at the next update, even if no shard closed by then
        self.stale = {f for f, w in written.items() if len(w) > closed}

    def _url(self, fmt: str, filename: str) -> str:
        return join_url(join_url(self.out_url, fmt), filename)

    def _written(self, fmt: str) -> list[dict]:
        url = self._url(fmt, INDEX)
        if not self.storage.exists(url):
            return []
        obj = json.loads(self.storage.read_bytes(url))
        return obj["shards"] if fmt == "mds" else obj["chunks"]

    def update(self, closed: int) -> None:
        """Write each ``index.json`` naming shards ``0 .. closed - 1`` (if it does not yet)."""
        from raycorpus.output.shards import shard_name

        for fmt, entries in self.entries.items():
            if len(entries) == closed and fmt not in self.stale:
                continue
            self.stale.discard(fmt)
            del entries[closed:]
            for i in range(len(entries), closed):
                entries.append(json.loads(self.storage.read_bytes(self._url(fmt, shard_name(i) + ".json")))[fmt])
            self.storage.write_atomic(self._url(fmt, INDEX), self.index(fmt))

    def index(self, fmt: str) -> bytes:
        entries = self.entries[fmt]
        if fmt == "mds":
            return _json({"shards": entries, "version": 2})
        # litdata keys its local cache by updated_at: a hash of the chunk list, new whenever the index grows
        stamp = hashlib.sha256(_json(entries)).hexdigest()[:16]
        config = litdata_config(self.dtype, self.shard_size_tokens)
        return _json({"chunks": entries, "config": config, "updated_at": stamp})


def _take_column(data: np.ndarray, starts: np.ndarray, dtype: str) -> np.ndarray:
    """The little-endian ``dtype`` values at ``data[starts[i]:]`` (the reverse of :func:`_put_column`)."""
    width = np.dtype(dtype).itemsize
    cols = np.stack([data[starts + j] for j in range(width)], axis=1) if len(starts) else np.zeros((0, width))
    return np.ascontiguousarray(cols, np.uint8).view(dtype).ravel()


def read_mds_shard(data: bytes) -> tuple[np.ndarray, np.ndarray]:
    """(tokens, document end offsets) of an ``.mds`` shard this module wrote."""
    raw = np.frombuffer(data, np.uint8)
    n = int(np.frombuffer(data, "<u4", 1)[0])
    offsets = np.frombuffer(data, "<u4", n + 1, 4).astype(np.int64)
    config = json.loads(data[4 + 4 * (n + 1) : int(offsets[0])])
    dtype = np.dtype(config["column_encodings"][0].split(":")[1]).newbyteorder("<")
    codes = raw[offsets[:-1] + 4].astype(np.int64) & 3
    lengths = np.zeros(n, np.int64)
    for code, width in enumerate(("<u1", "<u2", "<u4")):
        sel = codes == code
        lengths[sel] = _take_column(raw, offsets[:-1][sel] + 5, width)
    starts = offsets[:-1] + 5 + (1 << codes)
    ends = np.cumsum(lengths)
    tokens = np.empty(int(ends[-1]) if n else 0, dtype)
    out, src = memoryview(tokens).cast("B"), memoryview(data).cast("B")
    size = dtype.itemsize
    for s, a, b in zip(starts.tolist(), ((ends - lengths) * size).tolist(), (ends * size).tolist(), strict=True):
        out[a:b] = src[s : s + b - a]
    return tokens, ends.astype(np.uint64)


def read_litdata_chunk(data: bytes, dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """(tokens, document end offsets) of a litdata chunk of ``no_header_numpy`` items."""
    n = int(np.frombuffer(data, "<u4", 1)[0])
    offsets = np.frombuffer(data, "<u4", n + 1, 4).astype(np.int64)
    dtype = np.dtype(dtype).newbyteorder("<")
    tokens = np.frombuffer(data, dtype, (int(offsets[-1]) - int(offsets[0])) // dtype.itemsize, int(offsets[0]))
    return tokens, ((offsets[1:] - offsets[0]) // dtype.itemsize).astype(np.uint64)


def streaming_format_problems(storage: Storage, out_url: str, fmt: str, sidecars: list[dict]) -> list[str]:
    """What is wrong with ``fmt``'s copy of the closed shards whose canonical sidecars are ``sidecars``: the
    index names each in order, and each holds the same tokens and document ends (by their sha256)."""
    from raycorpus.output.shards import shard_name

    index = StreamingIndexes(storage, out_url, (fmt,), "<u2", len(sidecars)).entries[fmt]
    if len(index) != len(sidecars):
        return [f"index.json names {len(index)} of {len(sidecars)} shards"]
    bad = []
    for i, (entry, side) in enumerate(zip(index, sidecars, strict=True)):
        name = shard_name(i)
        file = entry["raw_data"]["basename"] if fmt == "mds" else entry["filename"]
        if file != (name + ".mds" if fmt == "mds" else litdata_chunk_name(name)):
            bad.append(f"{name}: index.json names {file}")
            continue
        data = storage.read_bytes(join_url(join_url(out_url, fmt), file))
        tokens, ends = read_mds_shard(data) if fmt == "mds" else read_litdata_chunk(data, np.dtype(side["dtype"]))
        if (hashlib.sha256(memoryview(np.ascontiguousarray(tokens)).cast("B")).hexdigest() != side["sha256"]["tokens"]
                or hashlib.sha256(ends.astype("<u8").tobytes()).hexdigest() != side["sha256"]["idx"]):
            bad.append(f"{name}: tokens differ from shards/")
    return bad
