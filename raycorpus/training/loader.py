"""A training-data reader over built corpora: (input, target) windows, sharded, shuffled, resumable.

``TokenWindows(path, ctx_len, ...)`` memory-maps the token files of any raycorpus format
(``shards/`` — the default —, ``megatron/``, ``datatrove/`` or ``packed/``) and yields
windows of ``ctx_len + 1`` consecutive tokens as ``(input, target) = (w[:-1], w[1:])``
(``packed/`` rows are such windows already, and their ``ctx_len`` is fixed by the build).

- Windows, not files, are split between data-parallel ranks and dataloader workers: slot
  ``rank * num_workers + worker`` of ``S`` takes every ``S``-th window of the epoch's order,
  so the slots are disjoint and together see every window (with ``drop_last``, each slot
  sees the same number, ``N // S``, as synchronous data parallelism needs).
- The epoch's order is a pure function of ``(seed, epoch)``: files in a seeded permutation,
  windows within a file in a seeded permutation (``shuffle=False``: file and token order).
- Resume is exact and O(1): ``iter_windows(epoch, step)`` starts at the ``step``-th window
  of this slot's stream; ``state(...)`` / ``from_state`` carry (epoch, step); a token
  offset converts with ``step = tokens // ctx_len``.
- ``rehydrate=True`` (raycorpus shards): documents are upsampled by their duplicate-cluster size with FineWeb-2's
  weights (:func:`rehydrated`), as extra passes over the shards, shuffled with them; ``rehydrate_with``: outputs
  built later against this one (``dedup.against``), whose duplicates of its documents count too.

Local files only (it memory-maps them). ``TorchWindows`` wraps it as a torch
``IterableDataset`` that reads the rank from ``torch.distributed`` and the worker from
``torch.utils.data.get_worker_info()``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from raycorpus.output.formats import read_megatron_index


@dataclass
class _File:
    path: Path
    tokens: np.ndarray  # 1-d (flat formats) or (rows, ctx_len + 1) (packed)
    ends: np.ndarray | None  # document ends in tokens (flat formats)

    def windows(self, width: int) -> int:
        return len(self.tokens) if self.tokens.ndim == 2 else len(self.tokens) // width

    def window(self, i: int, width: int) -> np.ndarray:
        if self.tokens.ndim == 2:
            return self.tokens[i]
        return self.tokens[i * width : (i + 1) * width]


@dataclass
class _Pass:
    """One rehydration pass over a shard: the documents given at least ``k`` times (their token ranges, in order),
    read as one token stream."""

    path: Path
    source: np.ndarray  # the shard's tokens
    starts: np.ndarray  # int64 first token of each document of the pass
    offsets: np.ndarray  # int64 where each starts in the pass's stream (0, then cumulative lengths)
    size: int  # tokens in the pass

    @classmethod
    def of(cls, f: _File, chosen: np.ndarray, k: int) -> _Pass:
        ends = np.asarray(f.ends, np.int64)
        starts = np.concatenate([[0], ends[:-1]])[chosen]
        lengths = (ends[chosen] - starts).astype(np.int64)
        return cls(Path(f"{f.path}#pass{k}"), f.tokens, starts, np.concatenate([[0], np.cumsum(lengths)]),
                   int(lengths.sum()))

    def windows(self, width: int) -> int:
        return self.size // width

    def window(self, i: int, width: int) -> np.ndarray:
        lo, hi = i * width, (i + 1) * width
        first = int(np.searchsorted(self.offsets, lo, side="right")) - 1
        last = int(np.searchsorted(self.offsets, hi, side="left"))
        parts = []
        for d in range(first, last):
            a, b = max(lo, int(self.offsets[d])), min(hi, int(self.offsets[d + 1]))
            at = int(self.starts[d]) + a - int(self.offsets[d])
            parts.append(self.source[at : at + b - a])
        return np.concatenate(parts)


def rehydrated(root: Path, files: list[_File], weights: dict[int, int] | None = None,
               later: tuple[str, ...] = ()) -> list[_File | _Pass]:
    """``files`` (a raycorpus output's shards) and their rehydration passes: pass ``k`` of a shard holds, in
    order, its documents given ``k`` times or more (:func:`~raycorpus.process.dedup.clusters.upsampling` of
    their cluster sizes, ``clusters/``), so that every document is seen as many times as its weight, in
    different windows. FineWeb-2 repeats a document in place and shuffles; the passes do that without copies.
    ``later``: outputs built later against this one (``dedup.against``), whose duplicates of its documents count
    in their clusters too."""
    from raycorpus.ingest.storage import Storage
    from raycorpus.output.clusters import CLUSTERS_DIR, sizes_with_later
    from raycorpus.process.dedup.clusters import upsampling

    folder = root / CLUSTERS_DIR
    if not folder.is_dir():
        raise FileNotFoundError(f"{root}: no {CLUSTERS_DIR}/ (cluster sizes): rehydration needs a raycorpus output "
                                "built in filter mode with dedup, by raycorpus 0.1 or later")
    every = sizes_with_later(Storage(), str(root), later) if later else None
    passes: dict[int, list[_Pass]] = {}
    for f in files:
        name = f.path.with_suffix("").name  # shard-NNNNNN
        sizes = np.fromfile(folder / (name + ".sizes"), "<u4") if every is None else every[int(name.split("-")[1])]
        if sizes.size != len(f.ends):
            raise ValueError(f"{folder}: {sizes.size} cluster sizes for the {len(f.ends)} documents of {f.path.name}")
        times = upsampling(sizes, weights)
        for k in range(2, int(times.max(initial=1)) + 1):
            passes.setdefault(k, []).append(_Pass.of(f, np.flatnonzero(times >= k), k))
    return [*files, *(p for k in sorted(passes) for p in passes[k] if p.size)]


SUBDIRS = {"raycorpus": "shards", "megatron": "megatron", "datatrove": "datatrove", "packed": "packed"}


def open_token_files(path: str | Path, fmt: str = "auto") -> tuple[str, list[_File]]:
    """The token files of a built corpus (its root, or one format's folder), in name order, memory-mapped."""
    root = Path(path)
    if fmt == "auto":
        by_folder = {v: k for k, v in SUBDIRS.items()}
        fmt = by_folder.get(root.name) or next((k for k, v in SUBDIRS.items() if (root / v).is_dir()), "")
        if not fmt:
            raise FileNotFoundError(f"{root}: no shards/, megatron/, datatrove/ or packed/ folder (raycorpus output)")
    if fmt not in SUBDIRS:
        raise ValueError(f"unknown format {fmt!r} (one of {', '.join(SUBDIRS)})")
    folder = root / SUBDIRS[fmt] if (root / SUBDIRS[fmt]).is_dir() else root
    files: list[_File] = []
    if fmt == "raycorpus":
        for side in sorted(folder.glob("shard-*.json")):
            meta = json.loads(side.read_text())
            base = side.with_suffix("")
            files.append(_File(base.with_suffix(".tokens"), np.memmap(base.with_suffix(".tokens"), meta["dtype"], "r"),
                               np.memmap(base.with_suffix(".idx"), "<u8", "r")))
    elif fmt == "megatron":
        for idx in sorted(folder.glob("*.idx")):
            dtype, lengths, _, _ = read_megatron_index(idx.read_bytes())
            data = np.memmap(idx.with_suffix(".bin"), dtype.newbyteorder("<"), "r")
            files.append(_File(idx.with_suffix(".bin"), data, np.cumsum(lengths, dtype=np.uint64)))
    elif fmt == "datatrove":
        for ds in sorted(folder.glob("*.ds")):
            size = int(Path(str(ds) + ".metadata").read_text().splitlines()[0].rsplit("|", 1)[1])
            files.append(_File(ds, np.memmap(ds, "<u2" if size == 2 else "<u4", "r"),
                               np.memmap(str(ds) + ".index", "<u8", "r")))
    else:
        for rows in sorted(folder.glob("*.rows.npy")):
            files.append(_File(rows, np.load(rows, mmap_mode="r"), None))
    files = [f for f in files if len(f.tokens)]
    if not files:
        raise FileNotFoundError(f"{folder}: no {fmt} token files")
    return fmt, files


class TokenWindows:
    def __init__(self, path: str | Path, ctx_len: int, *, fmt: str = "auto", rank: int = 0, world_size: int = 1,
                 worker: int = 0, num_workers: int = 1, seed: int = 0, shuffle: bool = True,
                 drop_last: bool = True, rehydrate: bool = False, rehydrate_with: tuple[str, ...] = ()):
        if not (0 <= rank < world_size and 0 <= worker < num_workers):
            raise ValueError(f"rank {rank} of {world_size}, worker {worker} of {num_workers}: out of range")
        self.fmt, self.files = open_token_files(path, fmt)
        if rehydrate:
            if self.fmt != "raycorpus":
                raise ValueError(f"rehydrate reads the cluster sizes of shards/, not {self.fmt}/ (fmt: raycorpus)")
            root = Path(path)
            self.files = rehydrated(root.parent if root.name == SUBDIRS["raycorpus"] else root, self.files,
                                    later=tuple(rehydrate_with))
        if self.fmt == "packed":
            width = self.files[0].tokens.shape[1]
            if ctx_len != width - 1:
                raise ValueError(f"packed rows hold ctx_len {width - 1}, not {ctx_len}")
        self.ctx_len = ctx_len
        self.width = ctx_len + 1
        self.slot = rank * num_workers + worker
        self.slots = world_size * num_workers
        self.seed = seed
        self.shuffle = shuffle
        self.drop_last = drop_last
        self.counts = np.array([f.windows(self.width) for f in self.files], np.int64)
        self.total = int(self.counts.sum())
        self._perm_cache: tuple[int, int, np.ndarray] | None = None

    def __len__(self) -> int:
        """Windows this slot sees per epoch."""
        if self.drop_last:
            return self.total // self.slots
        return len(range(self.slot, self.total, self.slots))

    def _rng(self, *key: int) -> np.random.Generator:
        return np.random.default_rng([self.seed, *key])

    def _file_order(self, epoch: int) -> np.ndarray:
        if not self.shuffle:
            return np.arange(len(self.files))
        return self._rng(epoch).permutation(len(self.files))

    def _window_order(self, epoch: int, f: int) -> np.ndarray | None:
        if not self.shuffle:
            return None
        if self._perm_cache is None or self._perm_cache[:2] != (epoch, f):
            self._perm_cache = (epoch, f, self._rng(epoch, f + 1).permutation(int(self.counts[f])))
        return self._perm_cache[2]

    def locate(self, epoch: int, step: int) -> tuple[int, int]:
        """(file, window within the file) of this slot's ``step``-th window of ``epoch``."""
        order = self._file_order(epoch)
        starts = np.concatenate([[0], np.cumsum(self.counts[order])])
        g = self.slot + step * self.slots
        k = int(np.searchsorted(starts, g, side="right")) - 1
        f = int(order[k])
        i = g - int(starts[k])
        perm = self._window_order(epoch, f)
        return f, int(perm[i]) if perm is not None else i

    def iter_windows(self, epoch: int = 0, step: int = 0, epochs: int | None = 1) -> Iterator[tuple[np.ndarray, ...]]:
        """Yield (input, target) from ``(epoch, step)`` on, through ``epochs`` epochs in all (None: forever)."""
        end_epoch = None if epochs is None else epoch + epochs
        while end_epoch is None or epoch < end_epoch:
            n = len(self)
            order = self._file_order(epoch)
            starts = np.concatenate([[0], np.cumsum(self.counts[order])])
            for s in range(step, n):
                g = self.slot + s * self.slots
                k = int(np.searchsorted(starts, g, side="right")) - 1
                f = int(order[k])
                i = g - int(starts[k])
                perm = self._window_order(epoch, f)
                w = np.asarray(self.files[f].window(int(perm[i]) if perm is not None else i, self.width), np.int64)
                yield w[:-1], w[1:]
            epoch, step = epoch + 1, 0

    def __iter__(self):
        return self.iter_windows(epochs=None)

    @staticmethod
    def state(epoch: int, step: int) -> dict:
        return {"epoch": epoch, "step": step}

    def step_for_tokens(self, tokens: int) -> int:
        """The step at which this slot has consumed ``tokens`` input tokens."""
        return tokens // self.ctx_len


class TorchWindows:
    """A ``torch.utils.data.IterableDataset`` over :class:`TokenWindows` (needs torch)."""

    def __new__(cls, path: str | Path, ctx_len: int, **kwargs):
        import torch
        from torch.utils.data import IterableDataset, get_worker_info

        class _Dataset(IterableDataset):
            def __init__(self, path, ctx_len, epoch=0, step=0, **kw):
                self.path, self.ctx_len, self.epoch, self.step, self.kw = path, ctx_len, epoch, step, kw

            def __iter__(self):
                info = get_worker_info()
                dist = torch.distributed
                rank = dist.get_rank() if dist.is_available() and dist.is_initialized() else 0
                world = dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1
                windows = TokenWindows(self.path, self.ctx_len, rank=rank, world_size=world,
                                       worker=info.id if info else 0, num_workers=info.num_workers if info else 1,
                                       **self.kw)
                for x, y in windows.iter_windows(self.epoch, self.step, epochs=None):
                    yield torch.from_numpy(x), torch.from_numpy(y)

        return _Dataset(path, ctx_len, **kwargs)
