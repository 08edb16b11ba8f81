"""One LSH shard's durable slice: the inserts it took, as segment files under ``dedup/shard-NNNN/``.

A shard keeps the inserts of each WARC (its table keys and the documents it owns) in memory until
the next checkpoint, then writes those of the WARCs below the checkpoint's position as one
segment, ``L0-<first>-<end>.npz`` (WARC ordinals ``first <= o < end``), and the checkpoint names
the shard's files. So a resumed or replaced shard reads its own files only, and a file never
holds a document of a WARC that no checkpoint names. Segments are merged in a background thread,
8 at a time, into files one level up (``L1-...``, ``L2-...``), off the commit path: a shard has a
few dozen files at most and each document is rewritten once per level. A merged file replaces its
parts in the next checkpoint; the parts are deleted once that checkpoint is durable
(:meth:`ShardLog.confirm`). At the end of a build a shard writes its whole slice as one file named by
the end alone, ``L9-000000000-<end>.npz`` (:meth:`ShardLog.compact`), and the final checkpoint names that file
only: two builds of one input end with the same dedup files whatever their checkpoints, worker counts or merge
timing, and the writer removes every file the final checkpoint does not name. Ray-free: the runtime's shard
actor wraps it.
"""

from __future__ import annotations

import io
import os
import shutil
import tempfile
import threading
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from raycorpus.ingest.storage import Storage, join_url

MERGE_FANIN = 8
FINISHED_LEVEL = 9  # the one file a finished build's shard holds (merges stop far below: 8**9 segments)
FIELDS = ("exact_keys", "exact_docnos", "band_keys", "band_docnos", "own_docnos", "own_gids", "own_sigs",
          "paragraphs")
OPTIONAL = ("own_sigs", "paragraphs")  # fields a file may lack (None when read)


def shard_dir(dedup_url: str, index: int) -> str:
    return join_url(dedup_url, f"shard-{index:04d}")


@dataclass(frozen=True)
class ShardFiles:
    """What a checkpoint says of one shard: its files (oldest first), the WARCs they cover (``< upto``)
    and how many documents the whole index held then (the next docno)."""

    files: tuple[str, ...] = ()
    upto: int = 0
    docnos: int = 0

    def to_json(self) -> dict:
        return {"files": list(self.files), "upto": self.upto, "docnos": self.docnos}

    @classmethod
    def from_json(cls, d: dict) -> ShardFiles:
        return cls(tuple(d["files"]), d["upto"], d["docnos"])


def finished_name(upto: int) -> str:
    """The one file of a shard at the end of a build: its inserts of every WARC below ``upto``."""
    return f"L{FINISHED_LEVEL}-{0:09d}-{upto:09d}.npz"


def _level(name: str) -> int:
    return int(name.split("-")[0][1:])


def _span(name: str) -> tuple[int, int]:
    _, first, end = name.removesuffix(".npz").split("-")
    return int(first), int(end)


def encode_inserts(parts: list[tuple]) -> bytes:
    """Insert requests (``LshShard.insert`` arguments), concatenated in order, as one npz (document
    numbers as uint32, which they fit: about 416 bytes per indexed document at the defaults)."""
    arrays = {}
    for i, name in enumerate(FIELDS):
        cols = [p[i] for p in parts if p[i] is not None]
        if cols:
            arrays[name] = np.concatenate(cols)
            if name.endswith("_docnos"):
                arrays[name] = arrays[name].astype(np.uint32)
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def decode_inserts(data: bytes) -> tuple:
    with np.load(io.BytesIO(data), allow_pickle=False) as z:
        empty = np.empty(0, np.uint64)
        return tuple(z[name] if name in z.files else (None if name in OPTIONAL else empty) for name in FIELDS)


def remove_unnamed(storage: Storage, dedup_url: str, named: list[ShardFiles]) -> list[str]:
    """Delete every file under the shards' folders that ``named`` (a checkpoint's shard files) does not name: the
    parts of merges and of the end's compaction, a killed writer's temp files. Only once nothing writes there (the
    writer, at the end of a build). Returns what it deleted."""
    gone = []
    for i, files in enumerate(named):
        for url in storage.list(shard_dir(dedup_url, i)):
            if url.rsplit("/", 1)[-1] not in files.files:
                storage.delete(url)
                gone.append(url)
    return gone


def write_concatenation(storage: Storage, dir_url: str, parts: list[str], name: str) -> None:
    """``parts``' inserts, concatenated in order, written as the file ``name``: through local temp files, one part's
    field in memory at a time (a shard's whole slice is never in memory twice). The same arrays give the same bytes
    (stored, fixed dates, fields in :data:`FIELDS` order) however they were cut into parts."""
    with tempfile.TemporaryDirectory(prefix="raycorpus-compact-") as tmp:
        local = []
        for i, part in enumerate(parts):
            local.append(os.path.join(tmp, f"{i}.npz"))
            with storage.open_read(join_url(dir_url, part)) as src, open(local[-1], "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 22)
        out = os.path.join(tmp, name)
        with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED, allowZip64=True) as z:
            for field in FIELDS:
                _write_field(z, field, local)
        storage.write_file_atomic(join_url(dir_url, name), out)


def _header(path: str, field: str) -> tuple[tuple[int, ...], np.dtype] | None:
    with zipfile.ZipFile(path) as z:
        if f"{field}.npy" not in z.namelist():
            return None
        with z.open(f"{field}.npy") as f:
            major, _ = np.lib.format.read_magic(f)
            read = np.lib.format.read_array_header_1_0 if major == 1 else np.lib.format.read_array_header_2_0
            shape, _, dtype = read(f)
    return shape, dtype


def _write_field(z: zipfile.ZipFile, field: str, parts: list[str]) -> None:
    """One field of every part, end to end, as one ``.npy`` member (absent where no part has it)."""
    headers = [(p, h) for p in parts if (h := _header(p, field)) is not None]
    if not headers:
        return
    filled = [h for _, h in headers if h[0][0]] or [headers[0][1]]  # the dtype and row shape of parts with rows
    dtype = np.result_type(*(d for _, d in filled))
    shape = (sum(h[0][0] for _, h in headers), *filled[0][0][1:])
    info = zipfile.ZipInfo(f"{field}.npy", date_time=(1980, 1, 1, 0, 0, 0))
    with z.open(info, "w", force_zip64=True) as f:
        np.lib.format.write_array_header_2_0(f, {"descr": np.lib.format.dtype_to_descr(np.dtype(dtype)),
                                                 "fortran_order": False, "shape": shape})
        for path, (rows, _) in headers:
            if rows[0]:
                with np.load(path, allow_pickle=False) as npz:
                    f.write(np.ascontiguousarray(npz[field], dtype=dtype).tobytes())


class ShardLog:
    def __init__(self, storage: Storage, dir_url: str, durable: ShardFiles):
        """``durable``: what the last durable checkpoint names for this shard."""
        self.storage, self.dir_url, self.durable = storage, dir_url, durable
        self.files: list[str] = list(durable.files)
        self.upto, self.docnos = durable.upto, durable.docnos
        self.pending: list[tuple[int, tuple]] = []  # (ordinal, insert request), in commit order
        self.bytes_read = 0  # what load() read: a shard reads its own slice only
        self._lock = threading.Lock()
        self._merging: threading.Thread | None = None
        self._merged_away: list[str] = []  # replaced by a merge since the last flush
        self._unnamed_at: dict[int, list[str]] = {}  # flush position -> files its checkpoint no longer names

    def load(self) -> Iterator[tuple]:
        """The inserts of the durable files, in commit order."""
        for name in self.durable.files:
            data = self.storage.read_bytes(join_url(self.dir_url, name))
            self.bytes_read += len(data)
            yield decode_inserts(data)

    def remove_orphans(self) -> None:
        """At start: files the durable checkpoint does not name are a killed run's: remove them."""
        names = {u.rsplit("/", 1)[-1] for u in self.storage.list(self.dir_url)}
        for name in names - set(self.durable.files):
            self.storage.delete(join_url(self.dir_url, name))

    def add(self, ordinal: int, request: tuple) -> None:
        if ordinal >= self.upto:  # a WARC already in the files is not logged twice
            self.pending.append((ordinal, request))

    def flush(self, upto: int, docnos: int) -> ShardFiles:
        """Write the inserts of WARCs below ``upto`` (``docnos`` documents indexed in all) as a segment;
        return the files a checkpoint at ``upto`` names."""
        if self._merging is not None and len(self.files) > 4 * MERGE_FANIN:
            self._merging.join()  # merges run behind the flushes; if they fall far behind, let one finish
        current = self._segment(upto, docnos)
        self._start_merge()
        return current

    def _segment(self, upto: int, docnos: int) -> ShardFiles:
        """Write the inserts of WARCs below ``upto`` as a segment; the files a checkpoint at ``upto`` names."""
        with self._lock:
            taken = [r for o, r in self.pending if o < upto]
            self.pending = [(o, r) for o, r in self.pending if o >= upto]
            if taken:
                name = f"L0-{self.upto:09d}-{upto:09d}.npz"
                self.storage.write_atomic(join_url(self.dir_url, name), encode_inserts(taken))
                self.files.append(name)
            self.upto, self.docnos = max(self.upto, upto), max(self.docnos, docnos)
            if self._merged_away:
                self._unnamed_at.setdefault(upto, []).extend(self._merged_away)
                self._merged_away = []
            return ShardFiles(tuple(self.files), self.upto, self.docnos)

    def compact(self, upto: int, docnos: int) -> ShardFiles:
        """The end of a build (every WARC below ``upto`` inserted): the shard's whole slice as one file,
        :func:`finished_name` of ``upto``, which the final checkpoint names alone. The files it replaces stay
        until that checkpoint is durable (the writer then removes every file it does not name)."""
        self.close()  # a merge in flight first: nothing is written here after this
        self._segment(upto, docnos)  # what is still in memory
        with self._lock:
            parts, name = list(self.files), finished_name(self.upto)
        if parts and parts != [name]:
            write_concatenation(self.storage, self.dir_url, parts, name)
            with self._lock:
                self.files = [name]
        return ShardFiles(tuple(self.files), self.upto, self.docnos)

    def confirm(self, upto: int) -> None:
        """The checkpoint at ``upto`` (and every earlier one) is durable: delete what they no longer name."""
        with self._lock:
            done = [u for u in self._unnamed_at if u <= upto]
            names = [n for u in done for n in self._unnamed_at.pop(u)]
        for name in names:
            self.storage.delete(join_url(self.dir_url, name))

    def _mergeable(self) -> list[str]:
        """The oldest MERGE_FANIN consecutive files of one level (files stay in commit order)."""
        run: list[str] = []
        for name in self.files:
            run = [*run, name] if run and _level(name) == _level(run[0]) else [name]
            if len(run) == MERGE_FANIN:
                return run
        return []

    def _start_merge(self) -> None:
        with self._lock:
            if self._merging is not None and self._merging.is_alive():
                return
            parts = self._mergeable()
            if parts:
                self._merging = threading.Thread(target=self._merge, args=(parts,), daemon=True)
                self._merging.start()

    def _merge(self, parts: list[str]) -> None:
        data = [decode_inserts(self.storage.read_bytes(join_url(self.dir_url, n))) for n in parts]
        first, end = _span(parts[0])[0], _span(parts[-1])[1]
        name = f"L{_level(parts[0]) + 1}-{first:09d}-{end:09d}.npz"
        self.storage.write_atomic(join_url(self.dir_url, name), encode_inserts(data))
        with self._lock:
            at = self.files.index(parts[0])
            self.files[at : at + len(parts)] = [name]
            self._merged_away += parts

    def close(self) -> None:
        if self._merging is not None:
            self._merging.join()
