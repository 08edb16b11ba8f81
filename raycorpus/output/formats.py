"""Trainer formats written beside each closed shard (``output.format``), and readers for them.

Every closed shard ``shards/shard-NNNNNN.{tokens,idx,json}`` (the canonical, checksummed
copy) can also be written as:

- ``megatron/shard-NNNNNN.{bin,idx}``: the indexed dataset of Megatron-LM / Megatron-Core /
  NeMo / GPT-NeoX (``MMIDIDX`` header, version 1, dtype code, sequence count, document
  count, int32 sequence lengths, int64 byte pointers, int64 document indices); one sequence
  per document. uint32 token ids are written as int32 (Megatron has no uint32; ids < 2**31).
- ``datatrove/shard-NNNNNN.{ds,ds.index,ds.metadata}``: what datatrove's DocumentTokenizer
  writes (tokens of 2 or 4 bytes, uint64 document ends, ``tokenizer|token_size`` metadata).
- ``packed/shard-NNNNNN.{rows,docs}.npy``: whole rows of ``ctx_len + 1`` tokens (input =
  row[:-1], target = row[1:]) and, per token, the index of its document within the shard,
  from which a trainer builds a block-diagonal document mask or varlen offsets. The last
  ``< ctx_len + 1`` tokens of a shard are not in any row (the sidecar counts them).

- ``mds/`` (MosaicML streaming) and ``litdata/`` (Lightning litdata): one document per sample / item,
  with an ``index.json`` kept by the packer (:mod:`raycorpus.output.streaming_formats`).

Each folder also gets the shard's JSON sidecar (tokenizer name and sha256, dtype, EOS id,
source WARCs), so any file can be traced back to its crawl. All are array copies.
"""

from __future__ import annotations

import io
import struct

import numpy as np

from raycorpus.ingest.storage import Storage, join_url
from raycorpus.output.streaming_formats import STREAMING_FORMATS, write_streaming_format

TOKEN_FORMATS = ("megatron", "datatrove", "packed", *STREAMING_FORMATS)
MEGATRON_HEADER = b"MMIDIDX\x00\x00"
_MEGATRON_CODES = {np.dtype(np.uint8): 1, np.dtype(np.int8): 2, np.dtype(np.int16): 3, np.dtype(np.int32): 4,
                   np.dtype(np.int64): 5, np.dtype(np.float64): 6, np.dtype(np.float32): 7,
                   np.dtype(np.uint16): 8}
_MEGATRON_DTYPES = {v: k for k, v in _MEGATRON_CODES.items()}


def megatron_dtype(dtype: np.dtype) -> np.dtype:
    dtype = np.dtype(dtype)
    if dtype == np.uint32:
        return np.dtype("<i4")
    if dtype.newbyteorder("=") not in _MEGATRON_CODES:
        raise ValueError(f"no Megatron dtype code for {dtype}")
    return dtype


def megatron_index(ends: np.ndarray, dtype: np.dtype) -> bytes:
    """The ``.idx`` of documents ending at ``ends`` (one sequence per document)."""
    ends = np.asarray(ends, np.int64)
    lengths = np.diff(ends, prepend=0)
    dt = megatron_dtype(dtype)
    pointers = (ends - lengths) * dt.itemsize
    n = len(ends)
    return b"".join([
        MEGATRON_HEADER,
        struct.pack("<Q", 1),
        struct.pack("<B", _MEGATRON_CODES[dt.newbyteorder("=")]),
        struct.pack("<Q", n),
        struct.pack("<Q", n + 1),
        lengths.astype("<i4").tobytes(),
        pointers.astype("<i8").tobytes(),
        np.arange(n + 1, dtype="<i8").tobytes(),
    ])


def read_megatron_index(data: bytes) -> tuple[np.dtype, np.ndarray, np.ndarray, np.ndarray]:
    """(dtype, sequence lengths, byte pointers, document indices) of a Megatron ``.idx``."""
    if data[:9] != MEGATRON_HEADER or struct.unpack("<Q", data[9:17])[0] != 1:
        raise ValueError("not a Megatron MMIDIDX v1 index")
    dtype = _MEGATRON_DTYPES[data[17]]
    n_seq, n_doc = struct.unpack("<QQ", data[18:34])
    off = 34
    lengths = np.frombuffer(data, "<i4", n_seq, off)
    off += 4 * n_seq
    pointers = np.frombuffer(data, "<i8", n_seq, off)
    off += 8 * n_seq
    docs = np.frombuffer(data, "<i8", n_doc, off)
    return dtype, lengths, pointers, docs


def packed_rows(tokens: np.ndarray, ends: np.ndarray, ctx_len: int) -> tuple[np.ndarray, np.ndarray]:
    """(rows, docs): ``(R, ctx_len + 1)`` tokens and the document index of each token."""
    width = ctx_len + 1
    n_rows = len(tokens) // width
    rows = np.asarray(tokens[: n_rows * width]).reshape(n_rows, width)
    ends = np.asarray(ends, np.int64)
    lengths = np.diff(ends, prepend=0)
    docs = np.repeat(np.arange(len(ends), dtype=np.uint32), lengths)[: n_rows * width]
    return rows, docs.reshape(n_rows, width)


def _npy(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=False)
    return buf.getvalue()


def write_formats(storage: Storage, out_url: str, name: str, formats: tuple[str, ...], tokens: np.ndarray,
                  ends: np.ndarray, sidecar: dict, token_meta: dict, ctx_len: int | None, dumps) -> None:
    """Write closed shard ``name`` in each of ``formats`` (atomically, file by file); ``dumps`` serialises
    the sidecar."""
    tok_bytes = None

    def put(folder: str, filename: str, data: bytes) -> None:
        storage.write_atomic(join_url(join_url(out_url, folder), filename), data)

    for fmt in formats:
        if fmt == "megatron":
            dt = megatron_dtype(tokens.dtype)
            put(fmt, name + ".bin", tokens.astype(dt.newbyteorder("<"), copy=False).tobytes())
            put(fmt, name + ".idx", megatron_index(ends, tokens.dtype))
        elif fmt == "datatrove":
            tok_bytes = tok_bytes or tokens.astype(tokens.dtype.newbyteorder("<"), copy=False).tobytes()
            put(fmt, name + ".ds", tok_bytes)
            put(fmt, name + ".ds.index", np.asarray(ends, "<u8").tobytes())
            meta = f"{token_meta['tokenizer']}|{tokens.dtype.itemsize}\n{len(tokens)}\n{len(tokens)}T"
            put(fmt, name + ".ds.metadata", meta.encode())
        elif fmt == "packed":
            if not ctx_len:
                raise ValueError("the packed format needs output.ctx_len")
            rows, docs = packed_rows(tokens, ends, ctx_len)
            put(fmt, name + ".rows.npy", _npy(rows))
            put(fmt, name + ".docs.npy", _npy(docs))
            packed = {"ctx_len": ctx_len, "rows": len(rows), "tail_tokens_not_in_rows": len(tokens) - rows.size}
            put(fmt, name + ".json", dumps({**sidecar, "packed": packed}))
            continue
        elif fmt in STREAMING_FORMATS:
            write_streaming_format(put, fmt, name, tokens, ends, sidecar, dumps)
            continue
        else:
            raise ValueError(f"unknown token format {fmt!r}")
        put(fmt, name + ".json", dumps(sidecar))
