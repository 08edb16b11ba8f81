"""Benchmark decontamination: drop documents that share a long word n-gram with a benchmark item.

The index is every n-gram of every configured field of every benchmark item, over the
same normalised words as dedup (NFKC, lowercase, punctuation and digits folded). A field
of ``L`` words contributes its ``n``-grams with ``n = clamp(L // 2, min_words, ngram)``:
long fields use the configured length (13, as GPT-3), and shorter ones a length for which
one edited word still leaves an intact n-gram on one side of it. Fields shorter than
``min_words`` are not indexed (counted in the index stats). n-grams shared by more than
``max_item_share`` items (template phrasing such as "which of the following is") are left
out, since they say nothing about one item.

The index is built once per run (:func:`build_index`) and broadcast to the workers; a
document is checked by hashing its words once and probing each n-gram length.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from raycorpus.ingest.storage import Storage
from raycorpus.process.document import Document
from raycorpus.process.filters.base import Filter, FilterResult, StageSettings, TextView
from raycorpus.process.filters.registry import register
from raycorpus.process.hashing import NGramHasher

_SEED = 0xDEC0  # word-hash seed of the n-gram index; fixed so an index is valid across runs
_BITMAP_BITS = 24  # 2 MiB prefilter: one random read per n-gram, a sorted-table search only on a hit


class BenchmarkSource(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str = Field(description="drop reason suffix: decontam:<name>")
    path: str = Field(description="JSONL / CSV file (optionally .gz), or a folder of them; local or s3://")
    fields: list[str] = Field(min_length=1, description="fields whose text is indexed (lists are flattened)")
    format: Literal["auto", "jsonl", "csv"] = Field("auto", description="file format (auto: from the file name)")


class DecontamConfig(StageSettings):
    """Drop documents sharing a long word n-gram with a benchmark item (GPT-3 style, 13 words)."""

    enabled: bool = Field(False, description="run the stage (off by default: it needs benchmark files)")
    benchmarks: list[BenchmarkSource] = Field(
        default_factory=list, description="the benchmark files: a list of {name, path, fields, format}")
    ngram: int = Field(13, ge=4, le=64, description="n-gram length for long fields")
    min_words: int = Field(8, ge=4, description="shortest field indexed; shorter fields use n = max(min, L // 2)")
    max_item_share: int = Field(10, ge=1, description="leave out n-grams found in more benchmark items than this")

    @model_validator(mode="after")
    def _needs_sources(self) -> DecontamConfig:
        if self.enabled and not self.benchmarks:
            raise ValueError("enabled without benchmarks: list the benchmark files to decontaminate against")
        if self.min_words > self.ngram:
            raise ValueError(f"min_words ({self.min_words}) must be <= ngram ({self.ngram})")
        return self


def ngram_hasher() -> NGramHasher:
    """The hasher of the index: word n-grams of :mod:`raycorpus.process.hashing` with the index's seed."""
    return NGramHasher(_SEED)


@dataclass
class DecontamIndex:
    ngram: int
    names: list[str]
    lengths: list[int] = field(default_factory=list)  # n-gram lengths present
    table: np.ndarray = field(default_factory=lambda: np.empty(0, np.uint64))  # sorted unique hashes
    owners: np.ndarray = field(default_factory=lambda: np.empty(0, np.uint16))  # benchmark per hash
    bitmap: np.ndarray = field(default_factory=lambda: np.zeros(1 << (_BITMAP_BITS - 3), np.uint8))
    stats: dict[str, dict] = field(default_factory=dict)

    def add(self, grams: np.ndarray, owners: np.ndarray) -> None:
        order = np.argsort(grams, kind="stable")
        self.table, self.owners = grams[order], owners[order]
        bit = self.table >> np.uint64(64 - _BITMAP_BITS)
        np.bitwise_or.at(self.bitmap, (bit >> np.uint64(3)).astype(np.intp),
                         (np.uint8(1) << (bit & np.uint64(7)).astype(np.uint8)))

    def match(self, word_hash: np.ndarray, hasher: NGramHasher) -> tuple[str, int] | None:
        """The benchmark of the first indexed n-gram in the text, or None."""
        if not self.table.size:
            return None
        h = hasher.grams(word_hash, self.lengths)
        bit = h >> np.uint64(64 - _BITMAP_BITS)
        maybe = (self.bitmap[(bit >> np.uint64(3)).astype(np.intp)] >> (bit & np.uint64(7)).astype(np.uint8)) & 1
        h = h[maybe.astype(bool)]
        if not h.size:
            return None
        pos = np.searchsorted(self.table, h)
        pos[pos == self.table.size] = 0
        hit = np.flatnonzero(self.table[pos] == h)
        if not hit.size:
            return None
        return self.names[int(self.owners[pos[hit[0]]])], int(hit[0])


def iter_items(source: BenchmarkSource, storage: Storage) -> Iterator[list[str]]:
    """Each item of a benchmark file (or folder of files) as its configured fields' texts."""
    urls = [source.path]
    if not storage.exists(source.path):
        urls = sorted(u for u in storage.list(source.path) if _format(u, source.format))
        if not urls:
            raise FileNotFoundError(f"decontam benchmark {source.name!r}: no file at {source.path}")
    for url in urls:
        data = storage.read_bytes(url)
        if url.endswith(".gz"):
            data = gzip.decompress(data)
        text = data.decode("utf-8-sig")
        fmt = _format(url, source.format)
        if fmt == "csv":
            rows: Iterator[dict] = csv.DictReader(io.StringIO(text))
        else:
            rows = (json.loads(line) for line in text.splitlines() if line.strip())
        for row in rows:
            missing = [f for f in source.fields if f not in row]
            if missing:
                raise ValueError(f"decontam benchmark {source.name!r}: {url} has no field {missing[0]!r}")
            yield [t for f in source.fields for t in _texts(row[f])]


def _format(url: str, fmt: str) -> str | None:
    name = url.removesuffix(".gz")
    if fmt != "auto":
        return fmt if name.endswith((".jsonl", ".json", ".csv")) or "." not in name.rsplit("/", 1)[-1] else None
    if name.endswith((".jsonl", ".json")):
        return "jsonl"
    if name.endswith(".csv"):
        return "csv"
    return None


def _texts(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [t for v in value for t in _texts(v)]
    return [] if value is None else [str(value)]


def build_index(cfg: DecontamConfig, storage: Storage | None = None) -> DecontamIndex:
    storage = storage or Storage()
    index = DecontamIndex(ngram=cfg.ngram, names=[b.name for b in cfg.benchmarks])
    hasher = ngram_hasher()
    grams, owners, items = [], [], []
    lengths: set[int] = set()
    for b_id, source in enumerate(cfg.benchmarks):
        n_items = fields = short = 0
        for item_id, texts in enumerate(iter_items(source, storage)):
            n_items += 1
            for text in texts:
                wh = hasher.word_hashes(text)
                if wh.size < cfg.min_words:
                    short += 1
                    continue
                fields += 1
                n = max(cfg.min_words, min(cfg.ngram, wh.size // 2))
                lengths.add(n)
                g = np.unique(hasher.grams(wh, [n]))
                grams.append(g)
                owners.append(np.full(g.size, b_id, np.uint16))
                items.append(np.full(g.size, (b_id << 32) | item_id, np.uint64))
        index.stats[source.name] = {"items": n_items, "fields_indexed": fields, "fields_too_short": short}
    if grams:
        g, o, it = np.concatenate(grams), np.concatenate(owners), np.concatenate(items)
        order = np.lexsort((it, g))
        g, o, it = g[order], o[order], it[order]
        first = np.ones(g.size, bool)
        first[1:] = g[1:] != g[:-1]
        new_item = first.copy()
        new_item[1:] |= it[1:] != it[:-1]
        share = np.add.reduceat(new_item.astype(np.int64), np.flatnonzero(first))  # distinct items per n-gram
        keep = share <= cfg.max_item_share
        index.add(g[first][keep], o[first][keep])
    index.lengths = sorted(lengths)
    return index


@register
class DecontamFilter(Filter):
    """Drops (reason: the benchmark's name) documents sharing an indexed n-gram with a benchmark item.
    The index is the stage's shared resource: built once per run, one copy for every worker."""

    name = "decontam"
    settings = DecontamConfig
    removable = True

    @classmethod
    def shared_resource(cls, settings: DecontamConfig, storage: Storage | None) -> DecontamIndex:
        return build_index(settings, storage)

    def __init__(self, cfg: DecontamConfig, index: DecontamIndex | None = None):
        """``index``: the shared resource; None builds it here."""
        self.index = index if index is not None else build_index(cfg)
        self.hasher = ngram_hasher()

    def __call__(self, doc: Document, view: TextView) -> FilterResult:
        hit = self.index.match(self.hasher.word_hashes(doc.text), self.hasher)
        if hit is None:
            return FilterResult(signals={"decontam.benchmark": None})
        name, _ = hit
        return FilterResult(reason=name, signals={"decontam.benchmark": name})
