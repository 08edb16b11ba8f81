"""What a worker keeps of one WARC for the report, beside its documents: a :class:`WarcProfile`.

* **Histograms** of every quality signal a stage computed, per language (``tag`` mode: of every
  document; ``filter`` mode: of the documents that reached the rule), and of the characters of the
  documents each stage dropped. Bins are fixed (:func:`scale_of`), so histograms add up over WARCs.
* **Per language and outcome**, the documents and characters dropped by each stage.
* **Per document that passed the filters** (the rows dedup decides at commit): its language, characters,
  tokens and host, so the head can count kept and duplicate documents by language, length and domain
  from the WARC's dedup decision, as arrays.
* **A sample**: per pool (``passed``, or a drop reason) the documents with the smallest 64-bit hash of
  their record id, at most ``samples_passed`` / ``samples_per_reason`` of them and only those below the
  bound the head sent (the pool's current k-th smallest key: nothing above it can enter the corpus-wide
  sample). So the corpus-wide sample is the same whatever the worker count, and after the first WARCs a
  WARC sends almost none.

Ray-free. A profile is a few kilobytes; it travels to the head in the WARC's summary.
"""

from __future__ import annotations

import hashlib
import itertools
from collections import Counter, defaultdict
from dataclasses import dataclass, field, replace
from functools import cache
from urllib.parse import urlsplit

import numpy as np

from raycorpus.process.document import Document

PASSED = "passed"  # the pool of documents that passed the filters (dedup labels each at commit)
NO_BOUND = 2**64 - 1
UNKNOWN_LANG = ""  # a document dropped before language ID


@dataclass(frozen=True)
class Scale:
    """Fixed histogram bins: bin ``i`` holds ``edges[i] <= v < edges[i + 1]``; the last is open above."""

    name: str
    edges: np.ndarray

    def bins(self, values: np.ndarray) -> np.ndarray:
        idx = np.searchsorted(self.edges, np.asarray(values, np.float64), side="right") - 1
        return np.clip(idx, 0, len(self.edges) - 1)

    def histogram(self, values) -> np.ndarray:
        return np.bincount(self.bins(np.asarray(values, np.float64)), minlength=len(self.edges)).astype(np.int64)

    def __len__(self) -> int:
        return len(self.edges)


def _count_edges() -> np.ndarray:
    """0, 1, ..., 31 exactly, then 24 bins a decade up to 10**9 (a length or a word count)."""
    logs = np.round(np.logspace(np.log10(32), 9, int(24 * (9 - np.log10(32))) + 1))
    return np.unique(np.concatenate([np.arange(32), logs]))


UNIT = Scale("unit", np.round(np.arange(101) / 100, 2))  # fractions and scores: 0.01 wide, the last [1, inf)
COUNT = Scale("count", _count_edges())
WORD_LENGTH = Scale("word_length", np.round(np.arange(121) / 4, 2))  # 0.25 wide up to 30
SCALES = {s.name: s for s in (UNIT, COUNT, WORD_LENGTH)}
_UNIT_SUFFIXES = ("_frac", "_ratio", "_gram", "score", "quality", "jaccard")


@cache
def scale_of(signal: str) -> Scale:
    """The bins of a signal, by its name (``gopher_quality.words``, ``lang_score``, ``c4.sentences``)."""
    base = signal.rsplit(".", 1)[-1]
    if base == "mean_word_length":
        return WORD_LENGTH
    if base.endswith(_UNIT_SUFFIXES):
        return UNIT
    return COUNT


def sample_key(record_id: str) -> int:
    """The 64-bit hash a document is sampled by: of its record id, so two outputs of the same crawl
    sample the same documents (``raycorpus report --against``)."""
    return int.from_bytes(hashlib.blake2b(record_id.encode(), digest_size=8, person=b"rc-sample").digest(), "little")


def host_keys(hosts: list[str]) -> np.ndarray:
    """A 64-bit key of each host (the duplicate-domain table is keyed by it)."""
    return np.fromiter((int.from_bytes(hashlib.blake2b(h.encode(), digest_size=8).digest(), "little")
                        for h in hosts), np.uint64, len(hosts))


def host_of(url: str) -> str:
    try:
        return (urlsplit(url).hostname or "").removeprefix("www.")
    except ValueError:
        return ""


@dataclass(slots=True)
class SampleDoc:
    """One sampled document as the report's browser shows it."""

    key: int  # sample_key(record_id)
    pool: str  # PASSED, or the drop reason (``stage:reason``)
    warc: int  # the WARC's ordinal
    index: int  # PASSED: its row among the WARC's documents (dedup's decision); else -1
    url: str
    record_id: str
    lang: str
    chars: int  # of the whole text (``text`` may be cut)
    text: str
    signals: dict[str, float] = field(default_factory=dict)
    label: str = ""  # what became of it: ``kept``, ``dedup:near``, or the drop reason (set at commit for PASSED)
    dup_of: str = ""  # a duplicate: the id (``<WARC>/<index>``) of the document it matched
    jaccard: float | None = None

    def order(self) -> tuple[int, int, str, str]:
        """Samples are the smallest by this (the key, then ties broken alike in every run)."""
        return self.key, self.warc, self.record_id, self.url

    def to_json(self) -> dict:
        return {f: getattr(self, f) for f in self.__slots__}

    @classmethod
    def from_json(cls, d: dict) -> SampleDoc:
        return cls(**d)


SampleBounds = dict[str, int]  # pool -> the largest key that can still enter the corpus-wide sample


@dataclass(slots=True)
class WarcProfile:
    """The report's part of one WARC (or of one range of it)."""

    signals: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)  # (signal, lang) -> counts per bin
    dropped_chars: dict[str, np.ndarray] = field(default_factory=dict)  # stage -> characters histogram (COUNT)
    langs: Counter = field(default_factory=Counter)  # (lang, stage) -> documents the stage dropped
    lang_chars: Counter = field(default_factory=Counter)  # (lang, stage) -> their characters
    reasons: Counter = field(default_factory=Counter)  # drop reason (tag mode: the first would-drop one) -> documents
    lang_names: list[str] = field(default_factory=list)  # the languages ``lang`` indexes
    lang: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint16))  # per decided document
    chars: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint32))
    tokens: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint32))
    char_bin: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint8))  # COUNT bin of chars (and tokens):
    token_bin: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint8))  # binned here, not on the head
    host: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint32))
    hosts: str = ""  # the hosts ``host`` indexes, joined by newlines (split only when needed)
    host_keys: np.ndarray = field(default_factory=lambda: np.zeros(0, np.uint64))  # a 64-bit key of each of them
    open: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))  # passed the filters (tag mode: no would_drop)
    samples: list[SampleDoc] = field(default_factory=list)

    def host_names(self) -> list[str]:
        return self.hosts.split("\n") if self.hosts else []

    _HISTOGRAMS = ("signals", "dropped_chars")  # sent as one array each: ~60 small arrays cost the head ~0.3 ms

    def __getstate__(self) -> dict:
        state = {f: getattr(self, f) for f in self.__slots__}
        for f in self._HISTOGRAMS:
            hists = state[f]
            state[f] = (list(hists), [a.size for a in hists.values()],
                        np.concatenate(list(hists.values())) if hists else np.zeros(0, np.int64))
        return state

    def __setstate__(self, state: dict) -> None:
        for f in self._HISTOGRAMS:
            keys, sizes, flat = state[f]
            ends = list(itertools.accumulate(sizes))
            state[f] = {k: flat[end - n : end] for k, n, end in zip(keys, sizes, ends, strict=True)}
        for f, value in state.items():
            object.__setattr__(self, f, value)

    @classmethod
    def joined(cls, parts: list[WarcProfile]) -> WarcProfile:
        """The profile of a WARC cut into ranges, from its ranges' (in order)."""
        out = cls()
        langs: dict[str, int] = {}
        hosts: dict[str, int] = {}
        lang_rows, host_rows = [], []
        for p in parts:
            _add_into(out.signals, p.signals)
            _add_into(out.dropped_chars, p.dropped_chars)
            out.langs.update(p.langs)
            out.lang_chars.update(p.lang_chars)
            out.reasons.update(p.reasons)
            lang_map = np.array([langs.setdefault(x, len(langs)) for x in p.lang_names], np.uint16)
            host_map = np.array([hosts.setdefault(x, len(hosts)) for x in p.host_names()], np.uint32)
            lang_rows.append(lang_map[p.lang] if p.lang.size else p.lang)
            host_rows.append(host_map[p.host] if p.host.size else p.host)
            rows = sum(r.size for r in lang_rows[:-1])  # the part's rows follow the earlier parts'
            out.samples += [replace(x, index=x.index + rows) if x.index >= 0 else x for x in p.samples]
        out.lang_names, out.hosts, out.host_keys = list(langs), "\n".join(hosts), host_keys(list(hosts))
        out.lang, out.host = np.concatenate(lang_rows).astype(np.uint16), np.concatenate(host_rows).astype(np.uint32)
        for f in ("chars", "tokens", "char_bin", "token_bin", "open"):
            setattr(out, f, np.concatenate([getattr(p, f) for p in parts]))
        return out

    def shorten(self, tokens: np.ndarray, chars: np.ndarray) -> None:
        """Each document less what it lost after the worker measured it (dedup.paragraphs' removed paragraphs)."""
        self.tokens = (self.tokens.astype(np.int64) - tokens).astype(np.uint32)
        self.chars = (self.chars.astype(np.int64) - chars).astype(np.uint32)
        self.token_bin = COUNT.bins(self.tokens).astype(np.uint8)
        self.char_bin = COUNT.bins(self.chars).astype(np.uint8)


def _add_into(total: dict, part: dict) -> None:
    for key, counts in part.items():
        total[key] = total[key] + counts if key in total else counts.copy()


class ProfileRecorder:
    """Builds one WARC's :class:`WarcProfile` as the worker processes it.

    The pipeline calls :meth:`signal` for every signal a stage computes (through the chain),
    :meth:`dropped` for every dropped record and :meth:`decided` for every document that reaches dedup,
    in record order, then :meth:`finish` with the documents' token counts.
    """

    def __init__(self, ordinal: int, samples_passed: int, samples_per_reason: int, sample_chars: int,
                 bounds: SampleBounds | None = None):
        self.ordinal = ordinal
        self.sizes = (samples_passed, samples_per_reason)
        self.sample_chars = sample_chars
        self.bounds = bounds or {}
        self.values: dict[tuple[str, str], list[float]] = defaultdict(list)
        self.doc_signals: dict[str, float] = {}  # the current document's
        self.dropped_lengths: dict[str, list[int]] = defaultdict(list)
        self.langs: Counter = Counter()
        self.lang_chars: Counter = Counter()
        self.reasons: Counter = Counter()
        self.lang_index: dict[str, int] = {}
        self.host_index: dict[str, int] = {}
        self.rows: list[tuple[int, int, int, bool]] = []  # (lang, chars, host, open) per decided document
        self.pools: dict[str, list[SampleDoc]] = defaultdict(list)  # sample candidates per pool
        self.local_bound: dict[str, int] = {}  # pool -> the largest key of its smallest ``size`` so far

    def signal(self, name: str, value: float | int | str | None, lang: str | None) -> None:
        if not isinstance(value, int | float):  # a label (``lang``) or a value the stage left unset
            return
        self.values[name, lang or UNKNOWN_LANG].append(float(value))
        self.doc_signals[name] = value

    def dropped(self, url: str, record_id: str, reason: str, doc: Document | None) -> None:
        """A record dropped with ``reason`` (``stage:reason``); ``doc`` None: before it had a text."""
        stage = reason.partition(":")[0]
        lang = _lang(doc)
        self.langs[lang, stage] += 1
        self.reasons[reason] += 1
        if doc is not None:
            self.lang_chars[lang, stage] += len(doc.text)
            self.dropped_lengths[stage].append(len(doc.text))
        self._offer(reason, url, record_id, doc, -1, lang)
        self.doc_signals = {}

    def decided(self, doc: Document, index: int) -> None:
        """A document that reaches dedup (row ``index`` of the WARC's documents). In tag mode a document a
        stage would drop reaches it too (kept in the output), but counts and is sampled as that drop."""
        lang = _lang(doc)
        would = doc.metadata.get("would_drop")
        host = self.host_index.setdefault(host_of(doc.url), len(self.host_index))
        self.rows.append((self.lang_index.setdefault(lang, len(self.lang_index)), len(doc.text), host, not would))
        if would:
            self.dropped(doc.url, doc.record_id, str(would[0]), doc)
            return
        self._offer(PASSED, doc.url, doc.record_id, doc, index, lang)
        self.doc_signals = {}

    def _offer(self, pool: str, url: str, record_id: str, doc: Document | None, index: int, lang: str) -> None:
        """Keep the document as a sample candidate of ``pool`` if its key can still enter the pool's sample."""
        size = self._size(pool)
        key = sample_key(record_id)
        if not size or key > min(self.bounds.get(pool, NO_BOUND), self.local_bound.get(pool, NO_BOUND)):
            return
        text = doc.text if doc is not None else ""
        cands = self.pools[pool]
        cands.append(SampleDoc(key, pool, self.ordinal, index, url, record_id, lang, len(text),
                               text[: self.sample_chars], dict(self.doc_signals),
                               label=pool if pool != PASSED else ""))
        if len(cands) >= 2 * size:  # keep the smallest ``size``: amortised, and a bound for the next ones
            cands.sort(key=SampleDoc.order)
            del cands[size:]
            self.local_bound[pool] = cands[-1].key

    def finish(self, tokens: np.ndarray | None) -> WarcProfile:
        rows = np.array(self.rows, np.int64).reshape(-1, 4)
        n = len(rows)
        tokens = np.zeros(n, np.uint32) if tokens is None else np.asarray(tokens, np.uint32)
        p = WarcProfile(
            signals={k: scale_of(k[0]).histogram(v) for k, v in self.values.items()},
            dropped_chars={s: COUNT.histogram(v) for s, v in self.dropped_lengths.items()},
            langs=self.langs, lang_chars=self.lang_chars, reasons=self.reasons, lang_names=list(self.lang_index),
            lang=rows[:, 0].astype(np.uint16),
            chars=rows[:, 1].astype(np.uint32), host=rows[:, 2].astype(np.uint32), hosts="\n".join(self.host_index),
            host_keys=host_keys(list(self.host_index)), open=rows[:, 3].astype(bool),
            tokens=tokens, char_bin=COUNT.bins(rows[:, 1]).astype(np.uint8),
            token_bin=COUNT.bins(tokens).astype(np.uint8),
            samples=[s for pool, cands in sorted(self.pools.items()) for s in smallest(cands, self._size(pool))])
        return p

    def _size(self, pool: str) -> int:
        return self.sizes[0] if pool == PASSED else self.sizes[1]


def smallest(samples: list[SampleDoc], size: int) -> list[SampleDoc]:
    """The ``size`` samples that come first by :meth:`SampleDoc.order`, in that order."""
    return sorted(samples, key=SampleDoc.order)[:size]


def _lang(doc: Document | None) -> str:
    lang = doc.metadata.get("lang") if doc is not None else None
    return lang if isinstance(lang, str) else UNKNOWN_LANG
