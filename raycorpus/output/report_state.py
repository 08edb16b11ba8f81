"""The report's data, summed over the committed WARCs: :class:`ReportState`.

The committer adds each WARC's :class:`~raycorpus.process.profile.WarcProfile` at its commit, in
manifest order, with the WARC's dedup decision (which turns the documents that passed the filters into
kept ones and duplicates), as array work: histograms add, the sample pools merge a handful of candidates.
Every checkpoint writes the whole state as one file, ``report/state-NNNNNNNNN.json.zst`` (named by the
checkpoint, written before it), so a resumed run continues from exactly the committed prefix and
``raycorpus report`` reads one file, never the documents. Its size does not grow with the corpus:
histograms have fixed bins, the samples and the duplicate tables have a fixed capacity.

Ray-free.
"""

from __future__ import annotations

import bisect
import json
import time
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import zstandard

from raycorpus.ingest.storage import Storage, join_url
from raycorpus.process.dedup.index import KEEP, KINDS, NO_MATCH, PARAGRAPHS, Decision, split_gid
from raycorpus.process.profile import (
    COUNT,
    NO_BOUND,
    PASSED,
    UNIT,
    SampleBounds,
    SampleDoc,
    WarcProfile,
)

REPORT_DIR = "report"
KEPT, DEDUP = "kept", "dedup"  # outcomes of the documents that passed the filters
TOP_CAPACITY = 1000  # entries of each duplicate table (Misra-Gries: counts are lower bounds past it)
TIMELINE_POINTS = 2000  # at most; halved (every other point) when full
FORMAT = 1


def state_name(seq: int) -> str:
    return f"{REPORT_DIR}/state-{seq:09d}.json.zst"


@dataclass
class TopCounts:
    """The heaviest 64-bit keys of a stream of (key, count) in bounded memory (Misra-Gries, merged a batch at a
    time, as arrays): a key's count is a lower bound, short of the truth by at most ``error``; any key whose
    true count exceeds ``error`` is kept. ``names``: what a key stands for, kept for the keys in the table."""

    capacity: int = TOP_CAPACITY
    keys: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint64))
    counts: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    error: int = 0
    names: dict[int, str] = field(default_factory=dict)
    _named: np.ndarray | None = field(default=None, repr=False, compare=False)  # the keys of ``names``, as an array

    def add(self, keys: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """Add a batch (keys distinct); return which of ``keys`` are in the table now."""
        keys, counts = np.asarray(keys, np.uint64), np.asarray(counts, np.int64)
        at, known = _find(self.keys, keys)  # (the table's keys are sorted)
        totals = self.counts.copy()
        totals[at[known]] += counts[known]
        merged = np.concatenate([self.keys, keys[~known]])
        totals = np.concatenate([totals, counts[~known]])
        order = np.argsort(merged)
        merged, totals = merged[order], totals[order]
        if merged.size > self.capacity:
            cut = int(np.partition(totals, merged.size - self.capacity - 1)[merged.size - self.capacity - 1])
            kept = totals > cut
            merged, totals = merged[kept], totals[kept] - cut
            self.error += cut
        self.keys, self.counts = merged, totals
        if len(self.names) > 2 * self.capacity:
            self.names = {int(k): self.names[int(k)] for k in merged if int(k) in self.names}
            self._named = None
        return _find(merged, keys)[1]

    def named(self, keys: np.ndarray) -> np.ndarray:
        """Which of ``keys`` have a name."""
        if self._named is None:
            self._named = np.fromiter(self.names, np.uint64, len(self.names))
        return np.isin(keys, self._named)

    def name(self, keys: np.ndarray, names: list[str]) -> None:
        self.names.update(zip(keys.tolist(), names, strict=True))
        self._named = None

    def top(self, n: int) -> list[tuple[int, int]]:
        order = np.lexsort((self.keys, -self.counts))[:n]
        return [(int(self.keys[i]), int(self.counts[i])) for i in order]

    def to_json(self) -> dict:
        names = {str(int(k)): self.names[int(k)] for k in self.keys if int(k) in self.names}
        return {"capacity": self.capacity, "keys": [str(int(k)) for k in self.keys], "counts": self.counts.tolist(),
                "error": self.error, "names": names}

    @classmethod
    def from_json(cls, d: dict) -> TopCounts:
        return cls(d["capacity"], np.array([int(k) for k in d["keys"]], np.uint64), np.array(d["counts"], np.int64),
                   d["error"], {int(k): v for k, v in d.get("names", {}).items()})


@dataclass
class ReportState:
    """The report's data over the committed WARCs (see the module doc)."""

    samples_passed: int = 200
    samples_per_reason: int = 20
    signals: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)  # (signal, lang) -> counts per bin
    lengths: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)  # ("chars"|"tokens", outcome) -> COUNT
    langs: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)  # (lang, outcome) -> [docs, chars, tokens]
    similarity: np.ndarray = field(default_factory=lambda: np.zeros(len(UNIT), np.int64))  # best J of near candidates
    clusters: TopCounts = field(default_factory=TopCounts)  # matched document id -> duplicates that named it
    domains: TopCounts = field(default_factory=TopCounts)  # host -> duplicates
    samples: dict[str, list[SampleDoc]] = field(default_factory=dict)  # pool -> the smallest by SampleDoc.order
    timeline: list[list[float]] = field(default_factory=list)  # [unix time, WARCs committed, docs, tokens, workers]
    reasons: Counter = field(default_factory=Counter)  # outcome (kept, a drop reason, dedup:kind) -> documents
    retries: Counter = field(default_factory=Counter)  # error type -> WARC attempts that failed with it
    retry_examples: dict[str, str] = field(default_factory=dict)  # error type -> its latest message
    docs: int = 0  # kept documents (tag mode: those filter mode would keep)
    tokens: int = 0  # their tokens
    warcs: int = 0  # WARCs added
    config: dict = field(default_factory=dict)  # the config of the run that wrote it, as written (exclude_unset)
    versions: dict[str, str] = field(default_factory=dict)  # package -> version, of the run that wrote it
    _bounds: tuple | None = field(default=None, repr=False, compare=False)  # (as of WARCs and sizes, bounds)

    # -- adding a WARC at its commit
    def add(self, ordinal: int, profile: WarcProfile, decision: Decision | None) -> None:
        """Add one committed WARC: its profile and its dedup decision (None: no dedup, every document kept)."""
        self.warcs += 1
        _add_into(self.signals, profile.signals)
        for stage, counts in profile.dropped_chars.items():
            _add_into(self.lengths, {("chars", stage): counts})
        for (lang, stage), n in profile.langs.items():
            self._lang(lang, stage)[:2] += (n, profile.lang_chars[lang, stage])
        kind = decision.kind if decision is not None else np.zeros(profile.open.size, np.uint8)
        kept = profile.open & (kind == KEEP)
        dups = profile.open & (kind != KEEP)
        self.reasons.update(profile.reasons)
        self.reasons[KEPT] += int(kept.sum())
        if decision is not None and dups.any():
            codes, n = np.unique(kind[dups], return_counts=True)
            self.reasons.update({f"dedup:{KINDS[int(c)]}": int(k) for c, k in zip(codes, n, strict=True)})
        self.docs += int(kept.sum())
        self.tokens += int(profile.tokens[kept].sum())
        for outcome, mask in ((KEPT, kept), (DEDUP, dups)):
            self._outcome(profile, outcome, mask)
        if decision is not None:
            self._dedup(profile, decision, dups)
        self._samples(profile.samples, decision)

    def _lang(self, lang: str, outcome: str) -> np.ndarray:
        return self.langs.setdefault((lang, outcome), np.zeros(3, np.int64))

    def _outcome(self, profile: WarcProfile, outcome: str, mask: np.ndarray) -> None:
        if not mask.any():
            return
        chars, tokens = profile.chars[mask], profile.tokens[mask]
        _add_into(self.lengths, {(measure, outcome): np.bincount(bins[mask], minlength=len(COUNT))
                                 for measure, bins in (("chars", profile.char_bin), ("tokens", profile.token_bin))})
        lang = profile.lang[mask]
        n = len(profile.lang_names)
        per = np.rint([np.bincount(lang, weights=w, minlength=n) for w in (None, chars, tokens)]).astype(np.int64)
        for i in np.flatnonzero(per[0]):
            self._lang(profile.lang_names[i], outcome)[:] += per[:, i]

    def _dedup(self, profile: WarcProfile, decision: Decision, dups: np.ndarray) -> None:
        if decision.verified is not None:
            seen = decision.verified[~np.isnan(decision.verified)]
            if seen.size:
                self.similarity += UNIT.histogram(seen)
        if not dups.any():
            return
        named = dups & (decision.dup_of != NO_MATCH)  # (dedup.paragraphs' drops name no document)
        matched, counts = np.unique(decision.dup_of[named], return_counts=True)
        self.clusters.add(matched, counts)
        hosts, counts = np.unique(profile.host[dups], return_counts=True)
        keys = profile.host_keys[hosts]
        unnamed = self.domains.add(keys, counts) & ~self.domains.named(keys)
        if unnamed.any():  # a host new to the table: its name (the WARC's host list is split only then)
            names = profile.host_names()
            self.domains.name(keys[unnamed], [names[h] or "(no host)" for h in hosts[unnamed]])

    def _samples(self, candidates: list[SampleDoc], decision: Decision | None) -> None:
        """Merge a WARC's sample candidates; a passed one is labelled by the dedup decision."""
        bounds = self.bounds()
        by_pool: dict[str, list[SampleDoc]] = {}
        for s in candidates:
            if s.key <= bounds.get(s.pool, NO_BOUND):  # (a worker sent it before it knew the bound)
                by_pool.setdefault(s.pool, []).append(s)
        for pool, new in by_pool.items():
            if pool == PASSED:
                for s in new:
                    _label(s, decision)
            size = self.samples_passed if pool == PASSED else self.samples_per_reason
            kept = self.samples.setdefault(pool, [])  # in order: each new one goes in its place
            for doc in new:
                bisect.insort(kept, doc, key=SampleDoc.order)
            del kept[size:]

    def bounds(self) -> SampleBounds:
        """Per pool whose sample is full, the largest key still in it: a worker sends no document above it. (Asked
        for every WARC sent to a worker: kept until the next WARC is added.)"""
        at = (self.warcs, self.samples_passed, self.samples_per_reason)
        if self._bounds is not None and self._bounds[0] == at:
            return self._bounds[1]
        out = {}
        for pool, docs in self.samples.items():
            size = self.samples_passed if pool == PASSED else self.samples_per_reason
            if len(docs) >= size:
                out[pool] = docs[-1].key
        self._bounds = (at, out)
        return out

    # -- between WARCs
    def retried(self, error: str) -> None:
        """A WARC attempt failed with ``error`` (``Type: message``) and was retried."""
        kind = error.partition(":")[0] or "error"
        self.retries[kind] += 1
        self.retry_examples[kind] = error[:300]

    def checkpoint(self, warcs: int, workers: int, now: float | None = None) -> None:
        """A point of the timeline: at a checkpoint, ``warcs`` WARCs committed, ``workers`` in the pool."""
        self.timeline.append([round(now or time.time(), 3), warcs, self.docs, self.tokens, workers])
        if len(self.timeline) > TIMELINE_POINTS:
            self.timeline = self.timeline[:-1:2] + self.timeline[-1:]

    # -- on storage
    def to_json(self) -> dict:
        return {
            "format": FORMAT, "samples_passed": self.samples_passed, "samples_per_reason": self.samples_per_reason,
            "signals": _hists_json(self.signals), "lengths": _hists_json(self.lengths),
            "langs": [[*k, *map(int, v)] for k, v in sorted(self.langs.items())],
            "similarity": _sparse(self.similarity), "clusters": self.clusters.to_json(),
            "domains": self.domains.to_json(),
            "samples": {pool: [s.to_json() for s in docs] for pool, docs in sorted(self.samples.items())},
            "timeline": self.timeline, "reasons": dict(self.reasons), "retries": dict(self.retries),
            "retry_examples": self.retry_examples,
            "docs": self.docs, "tokens": self.tokens, "warcs": self.warcs, "config": self.config,
            "versions": self.versions,
        }

    @classmethod
    def from_json(cls, d: dict) -> ReportState:
        return cls(
            d["samples_passed"], d["samples_per_reason"], _hists(d["signals"]), _hists(d["lengths"]),
            {(r[0], r[1]): np.array(r[2:], np.int64) for r in d["langs"]}, _dense(d["similarity"], len(UNIT)),
            TopCounts.from_json(d["clusters"]), TopCounts.from_json(d["domains"]),
            {p: [SampleDoc.from_json(s) for s in docs] for p, docs in d["samples"].items()},
            d["timeline"], Counter(d["reasons"]), Counter(d["retries"]), d["retry_examples"], d["docs"], d["tokens"],
            d["warcs"], d.get("config", {}), d.get("versions", {}))

    def encode(self) -> bytes:
        return zstandard.ZstdCompressor(level=3).compress(json.dumps(self.to_json(), ensure_ascii=False).encode())

    @classmethod
    def decode(cls, data: bytes) -> ReportState:
        return cls.from_json(json.loads(zstandard.ZstdDecompressor().decompress(data)))

    @classmethod
    def read(cls, storage: Storage, out_url: str, name: str) -> ReportState:
        return cls.decode(storage.read_bytes(join_url(out_url, name)))


def versions() -> dict[str, str]:
    """The versions of what decides an output's bytes and speed (this process's)."""
    import platform
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": platform.python_version()}
    for package in ("raycorpus", "ray", "fastwarc", "resiliparse", "tokenizers", "fasttext-predict", "numpy"):
        try:
            out[package] = version(package)
        except PackageNotFoundError:
            continue
    return out


class ArrivedBounds:
    """Sample bounds from WARCs that arrived but are not committed yet: the WARCs of a run's first window are
    sent before any commit, so the committed pools bound nothing and each would carry its worker's whole
    candidates (~1.6 MB on a CC-sized WARC) until its turn. Every committed prefix that holds WARC k holds every
    WARC before it, so the pool's size-th smallest candidate of the WARCs before k that arrived bounds what k
    can add to that pool, in every report of the build. Per pool, the arrived candidates' keys (sorted) and
    WARCs; those of committed WARCs are forgotten (the report's own pools hold them)."""

    def __init__(self, samples_passed: int, samples_per_reason: int):
        self.sizes = (samples_passed, samples_per_reason)
        self.keys: dict[str, np.ndarray] = {}  # per pool, uint64 keys, ascending
        self.ordinals: dict[str, np.ndarray] = {}  # the WARC of each
        self._last = -1  # the last WARC that arrived
        self._all: SampleBounds | None = None  # the bounds every arrived WARC sets (None: not known since a change)

    def add(self, ordinal: int, candidates: list[SampleDoc]) -> None:
        """WARC ``ordinal``'s candidates, as kept."""
        self._all, self._last = None, max(self._last, ordinal)
        keys: dict[str, list[int]] = {}
        for s in candidates:
            keys.setdefault(s.pool, []).append(s.key)
        for pool, new in keys.items():
            k = np.concatenate([self.keys.get(pool, np.zeros(0, np.uint64)), np.array(new, np.uint64)])
            o = np.concatenate([self.ordinals.get(pool, np.zeros(0, np.int64)), np.full(len(new), ordinal, np.int64)])
            order = np.argsort(k, kind="stable")
            self.keys[pool], self.ordinals[pool] = k[order], o[order]

    def before(self, ordinal: int) -> SampleBounds:
        """Per pool, the bound the arrived WARCs before ``ordinal`` set (those of them all, asked for every WARC sent
        to a worker, are kept until a WARC arrives or is committed)."""
        if self._all is not None and ordinal > self._last:
            return self._all
        out = {}
        for pool, keys in self.keys.items():
            size = self.sizes[0] if pool == PASSED else self.sizes[1]
            if not size or keys.size < size:  # (the usual case once the report's pools are full: a few arrived)
                continue
            below = np.flatnonzero(self.ordinals[pool] < ordinal)
            if below.size >= size:
                out[pool] = int(keys[below[size - 1]])
        if ordinal > self._last:
            self._all = out
        return out

    def forget_below(self, ordinal: int) -> None:
        """The WARCs before ``ordinal`` are committed."""
        self._all = None
        for pool, ordinals in list(self.ordinals.items()):
            if ordinals.min() < ordinal:
                keep = ordinals >= ordinal
                if not keep.any():  # (a pool none of the buffered WARCs adds to is not looked at again)
                    del self.keys[pool], self.ordinals[pool]
                    continue
                self.keys[pool], self.ordinals[pool] = self.keys[pool][keep], ordinals[keep]


def tighter(a: SampleBounds, b: SampleBounds) -> SampleBounds:
    """Per pool, the smaller of two bounds."""
    return {pool: min(a.get(pool, NO_BOUND), b.get(pool, NO_BOUND)) for pool in a.keys() | b.keys()}


def _label(sample: SampleDoc, decision: Decision | None) -> None:
    """A passed document's outcome: kept, or the duplicate it was found to be (with what it matched)."""
    code = int(decision.kind[sample.index]) if decision is not None else KEEP
    if code == KEEP:
        sample.label = KEPT
        return
    sample.label = f"dedup:{KINDS[code]}"
    if code != PARAGRAPHS:
        sample.dup_of = "/".join(map(str, split_gid(int(decision.dup_of[sample.index]))))
    j = float(decision.jaccard[sample.index])
    sample.jaccard = None if np.isnan(j) else round(j, 4)


def _add_into(total: dict, part: dict) -> None:
    for key, counts in part.items():
        if key in total and len(total[key]) == len(counts):
            total[key] += counts  # (the total is this state's own array)
        else:
            total[key] = np.asarray(counts, np.int64).copy()


def _find(table: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each of ``keys`` is in the sorted ``table``, and whether it is there."""
    at = np.searchsorted(table, keys)
    if not table.size:
        return at, np.zeros(keys.size, bool)
    return at, table[np.minimum(at, table.size - 1)] == keys


def _sparse(counts: np.ndarray) -> dict:
    nz = np.flatnonzero(counts)
    return {"n": len(counts), "i": nz.tolist(), "c": counts[nz].tolist()}


def _dense(d: dict, n: int | None = None) -> np.ndarray:
    out = np.zeros(n or d["n"], np.int64)
    out[d["i"]] = d["c"]
    return out


def _hists_json(hists: dict[tuple[str, str], np.ndarray]) -> list:
    return [[a, b, _sparse(v)] for (a, b), v in sorted(hists.items())]


def _hists(rows: list) -> dict[tuple[str, str], np.ndarray]:
    return {(a, b): _dense(d) for a, b, d in rows}

