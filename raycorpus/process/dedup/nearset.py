"""A near-duplicate set from real pages: versions of each page from several extractors, exact Jaccard.

Each HTML page of the extraction test sets (``trafilatura-eval`` and ``readability`` under
``extraction_dir``) is extracted several ways: resiliparse with different options, its text
after a line cleaning of our own (C4-like: lines of at least ``MIN_LINE_WORDS`` words), and,
where installed, trafilatura (three settings) and readability-lxml. Those versions of one article
are what a crawl holds when one page is stored by different pipelines or at different times.
Versions of fewer than ``MIN_WORDS`` words and copies with the same normalised text as an
earlier version (the exact stage's job, not near dedup's) are left out.

Ground truth is the exact Jaccard of word-5-gram sets, on the index's normalisation and shingle
hashes (:meth:`MinHasher.shingle_hashes`): within each page for every pair, and across pages
for every pair sharing one of 56 two-row bands (a pair with J >= 0.8 misses all of them with
probability ``(1 - 0.8**2)**56 = 1e-25``). Documents come in a fixed shuffled order; a document
is a true duplicate if an earlier one has J >= ``THRESHOLD`` with it.
"""

from __future__ import annotations

import gzip
import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from resiliparse.extract.html2text import extract_plain_text
from resiliparse.parse.html import HTMLTree

from raycorpus.ingest.warc import decode_html
from raycorpus.process.dedup.minhash import MinHasher, band_keys
from raycorpus.process.hashing import normalize

THRESHOLD = 0.8
SPLIT_SEED = 27  # the seed of the tuning / validation halves (NearSet.halves)
MIN_WORDS = 50
MIN_LINE_WORDS = 6

Extract = Callable[[str], str]


def _resiliparse(**options) -> Extract:
    return lambda html: extract_plain_text(HTMLTree.parse(html), **options)


def clean_lines(text: str, min_words: int = MIN_LINE_WORDS) -> str:
    """Our own line cleaning: keep the lines of at least ``min_words`` words (drops menus, bylines, links)."""
    return "\n".join(line for line in text.split("\n") if len(line.split()) >= min_words)


def _trafilatura(**options) -> Extract | None:
    try:
        from trafilatura import extract
    except ImportError:
        return None
    return lambda html: extract(html, **options) or ""


def _readability() -> Extract | None:
    try:
        from readability import Document
    except ImportError:
        return None
    whole = _resiliparse(main_content=False)
    return lambda html: whole(Document(html).summary())


def extractors() -> tuple[dict[str, Extract], dict[str, str]]:
    """(name -> html-to-text function, name -> why it is skipped) of the versions' extractors."""
    main, whole = _resiliparse(main_content=True), _resiliparse(main_content=False)
    found: dict[str, Extract | None] = {
        "resiliparse-main": main,
        "resiliparse-main-alt": _resiliparse(main_content=True, alt_texts=True, links=True, form_fields=True,
                                             noscript=True, comments=False),
        "resiliparse-whole": whole,
        "resiliparse-whole-cleaned": lambda html: clean_lines(whole(html)),
        "resiliparse-main-cleaned": lambda html: clean_lines(main(html)),
        "trafilatura": _trafilatura(),
        "trafilatura-recall": _trafilatura(favor_recall=True, include_comments=False),
        "trafilatura-precision": _trafilatura(favor_precision=True, include_tables=False),
        "readability-lxml": _readability(),
    }
    skipped = {k: ("trafilatura is not installed (pip install trafilatura)" if k.startswith("trafilatura")
                   else "readability-lxml is not installed (pip install readability-lxml 'lxml[html-clean]')")
               for k, v in found.items() if v is None}
    return {k: v for k, v in found.items() if v is not None}, skipped


def page_files(extraction_dir: Path) -> list[Path]:
    """The gzip'd HTML pages of the extraction test sets, in path order."""
    root = Path(extraction_dir)
    traf = sorted((root / "trafilatura-eval").glob("**/*.html.gz"))
    readab = sorted((root / "readability" / "test-pages").glob("*/source.html.gz"))
    return traf + readab


@dataclass
class NearSet:
    """Documents in their fixed order, their page and extractor, and the exact-Jaccard ground truth."""

    texts: list[str]
    page: np.ndarray  # int: the page each document is a version of
    extractor: list[str]
    pairs: np.ndarray  # (m, 2) document pairs (i < j in order) whose Jaccard was computed
    jaccard: np.ndarray  # (m,) exact word-5-gram Jaccard of each pair
    skipped: dict[str, str] = field(default_factory=dict)  # extractor -> reason it has no versions
    page_names: list[str] = field(default_factory=list)  # the name of each page (by page number)

    def subset(self, keep: np.ndarray) -> NearSet:
        """The documents where ``keep`` (a bool per document) holds, in their order, with their pairs."""
        index = np.full(len(self.texts), -1)
        index[keep] = np.arange(int(keep.sum()))
        both = keep[self.pairs[:, 0]] & keep[self.pairs[:, 1]]
        return NearSet([t for t, k in zip(self.texts, keep, strict=True) if k], self.page[keep],
                       [e for e, k in zip(self.extractor, keep, strict=True) if k], index[self.pairs[both]],
                       self.jaccard[both], self.skipped, self.page_names)

    def clusters(self) -> np.ndarray:
        """Per document, its cluster: the smallest page number of its page's group, pages grouped by every pair of
        their versions with J >= THRESHOLD (connected components), so no true duplicate links two clusters."""
        n = int(self.page.max()) + 1 if self.page.size else 0
        root = np.arange(n)

        def find(x: int) -> int:
            while root[x] != x:
                root[x] = root[root[x]]
                x = int(root[x])
            return x

        for a, b in self.page[self.pairs[self.jaccard >= THRESHOLD]]:
            ra, rb = find(int(a)), find(int(b))
            if ra != rb:
                root[max(ra, rb)] = min(ra, rb)
        return np.array([find(int(p)) for p in self.page], np.int64)

    def halves(self, seed: int = SPLIT_SEED) -> np.ndarray:
        """Per document: True in the tuning half, False in the validation half. A cluster's half is a bit of the
        hash of ``seed`` and its first page's name, so all versions of a page (and every page a true duplicate
        links to it) are in one half, and a page keeps its half in any subset of the set's pages."""
        cluster = self.clusters()
        bit = {c: stable_hash(f"{seed}:{self._page_name(int(c))}") & 1 for c in np.unique(cluster).tolist()}
        return np.array([bit[c] == 0 for c in cluster.tolist()], bool)

    def _page_name(self, p: int) -> str:
        return self.page_names[p] if p < len(self.page_names) else str(p)

    @property
    def true_duplicate(self) -> np.ndarray:
        """Per document: an earlier document has J >= THRESHOLD with it."""
        out = np.zeros(len(self.texts), bool)
        out[self.pairs[self.jaccard >= THRESHOLD, 1]] = True
        return out


def _versions(html: str, fns: dict[str, Extract]) -> list[tuple[str, str]]:
    """(extractor, text) of a page's distinct versions of at least MIN_WORDS words."""
    seen: set[str] = set()
    out = []
    for name, fn in fns.items():
        try:
            text = fn(html)
        except Exception:  # an extractor that fails on a page gives that page no version
            continue
        norm = normalize(text)
        if len(norm.split()) >= MIN_WORDS and norm not in seen:
            seen.add(norm)
            out.append((name, text))
    return out


def stable_hash(name: str) -> int:
    """A 64-bit number of ``name``, the same in every process (Python's ``hash`` of a str is salted)."""
    return int.from_bytes(hashlib.blake2b(name.encode(), digest_size=8).digest(), "little")


def exact_jaccard(a: np.ndarray, b: np.ndarray) -> float:
    """Jaccard of two sets given as unique sorted arrays."""
    inter = np.intersect1d(a, b, assume_unique=True).size
    return inter / max(1, a.size + b.size - inter)


def build(extraction_dir: Path, seed: int = 0, every: int = 1) -> NearSet:
    """The near-duplicate set of the pages under ``extraction_dir`` (every ``every``-th page)."""
    fns, skipped = extractors()
    root = Path(extraction_dir)
    texts, page, names, page_names = [], [], [], []
    for p, path in enumerate(page_files(root)[::every]):
        page_names.append(path.relative_to(root).as_posix())
        html = decode_html(gzip.decompress(path.read_bytes()), None)[0]
        for name, text in _versions(html, fns):
            texts.append(text)
            page.append(p)
            names.append(name)
    return labelled(texts, np.array(page, np.int64), names, page_names, seed, skipped)


def labelled(texts: list[str], page: np.ndarray, names: list[str], page_names: list[str], seed: int = 0,
             skipped: dict[str, str] | None = None) -> NearSet:
    """Versions of pages (``page[i]``: the page text ``i`` is a version of, named ``page_names[page[i]]``; ``names``:
    how each was made) as a labelled set: in a fixed shuffled order, with the exact Jaccard of every pair within a
    page and of every pair across pages sharing one of 56 two-row bands."""
    order = np.random.default_rng(seed).permutation(len(texts))
    texts, page, names = [texts[i] for i in order], np.asarray(page, np.int64)[order], [names[i] for i in order]
    mh = MinHasher()
    shingles = [np.unique(mh.shingle_hashes(t)) for t in texts]
    pairs = _pairs(page, mh.signatures(texts)) if texts else np.empty((0, 2), np.int64)
    jac = np.array([exact_jaccard(shingles[i], shingles[j]) for i, j in pairs])
    return NearSet(texts, page, names, pairs, jac, dict(skipped or {}), list(page_names))


def _pairs(page: np.ndarray, sigs: np.ndarray) -> np.ndarray:
    """Every pair within a page and every pair sharing one of 56 two-row bands, as (earlier, later)."""
    n = page.size
    codes = []
    for p in np.unique(page):
        members = np.flatnonzero(page == p)
        i, j = np.triu_indices(members.size, 1)
        codes.append(members[i] * n + members[j])
    keys = band_keys(sigs, 56, 2)
    flat = keys.ravel()
    order = np.argsort(flat, kind="stable")
    docs, sk = order // 56, flat[order]
    starts = np.flatnonzero(np.r_[True, sk[1:] != sk[:-1]])
    ends = np.r_[starts[1:], flat.size]
    for s, e in zip(starts, ends, strict=True):
        if e - s > 1:
            members = np.unique(docs[s:e])
            i, j = np.triu_indices(members.size, 1)
            codes.append(members[i] * n + members[j])
    codes_all = np.unique(np.concatenate(codes)) if codes else np.empty(0, np.int64)
    return np.stack([codes_all // n, codes_all % n], axis=1)
