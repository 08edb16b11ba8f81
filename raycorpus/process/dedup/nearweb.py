"""A second near-duplicate set: other pages than :mod:`~.nearset`'s, with the copies the web makes.

Pages: the readability test pages (``source.html.gz``) and every HTTP-200 HTML response of the WARCs under
``warc_dir``, read by raycorpus's own reader (:func:`~raycorpus.ingest.warc.iter_html_records`; a file it cannot
read is skipped), each text once (a page whose normalised main text equals an earlier page's is left out). A page's
*article* is the shipped extractor's text of it (``ExtractConfig()``); its *site's boilerplate* is the lines of
resiliparse's whole-page text before and after the article.

Versions of a page: the article, the whole-page text, and ``VARIANTS`` copies of the article, each made by one to
three of these edits (strengths drawn from a per-page seed, so a page's versions do not depend on the others):

- ``boilerplate``: header and footer lines of its own site or of another page's site (3-35 % of its words);
- ``comments``: a comment section of 2-40 % of its words (a count, then commenters, relative dates and
  sentences of another page);
- ``timestamp``: a dateline, an "updated" line, a reading time or a view count, with other dates and words;
- ``truncation``: a teaser: the first 65-99 % of the words, then a "read more" or paywall line;
- ``reorder``: one to three paragraphs moved elsewhere;
- ``syndication``: the copy on another site: that site's boilerplate, a credit line, the headline reworded,
  the last paragraph (often a bio or a call to action) dropped, a few words edited.

Ground truth is that of :func:`nearset.labelled`: exact word-5-gram Jaccard of every pair within a page and of
every pair across pages that shares one of 56 two-row bands (pages of one site are sometimes near duplicates of
each other, as the shop pages of the ClueWeb WARC are). Versions of fewer than ``MIN_WORDS`` words, and versions
whose normalised text equals an earlier version's of the page, are left out.
"""

from __future__ import annotations

import gzip
import re
from collections import Counter
from pathlib import Path

import numpy as np
from resiliparse.extract.html2text import extract_plain_text
from resiliparse.parse.html import HTMLTree

from raycorpus.ingest.warc import HtmlRecord, WarcFormatError, decode_html, iter_html_records
from raycorpus.process.dedup.nearset import MIN_WORDS, NearSet, labelled, stable_hash
from raycorpus.process.extract import ExtractConfig, Extractor
from raycorpus.process.hashing import normalize

VARIANTS = 20  # edited copies of each page's article
EDITS = ("reorder", "truncation", "timestamp", "comments", "syndication", "boilerplate")  # in the order applied
_SENTENCE = re.compile(r"(?<=[.!?\u3002\uff01\uff1f])\s*")
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
           "November", "December")
_NAMES = ("Anna K.", "mike_d", "Sofia Ramirez", "dave", "kwame", "Lena Schmidt", "JT", "oldtimer", "Priya",
          "Marco B.", "guest", "Yuki", "hans_w", "Chris P.", "nadia", "Tom", "reader123", "Ola N.")
_SITES = ("The Conversation", "Reuters", "the Associated Press", "Medium", "our partner site", "Global Voices",
          "the author's blog", "ProPublica", "Kaiser Health News", "The Local", "a regional daily")


def page_records(readability_dir: Path | None, warc_dir: Path | None) -> list[tuple[str, str]]:
    """(name, html) of the set's pages: the readability pages in name order, then the WARCs' HTML responses in
    path and record order (``warc/<path>:<k>``, the k-th HTML response of that file)."""
    out = []
    if readability_dir is not None and (Path(readability_dir) / "test-pages").is_dir():
        for d in sorted((Path(readability_dir) / "test-pages").iterdir()):
            if (d / "source.html.gz").is_file():
                out.append((f"readability/{d.name}", decode_html(gzip.decompress((d / "source.html.gz").read_bytes()),
                                                                 None)[0]))
    if warc_dir is not None and Path(warc_dir).is_dir():
        root = Path(warc_dir)
        for path in sorted(p for p in root.rglob("*") if p.is_file() and p.name.endswith((".warc", ".warc.gz"))):
            try:
                with path.open("rb") as f:
                    records = list(iter_html_records(f, Counter(), 8 << 20))
            except WarcFormatError:
                continue  # the shared folder holds broken WARCs on purpose (readers' test files)
            out += [(f"warc/{path.relative_to(root).as_posix()}:{k}", rec.html) for k, rec in enumerate(records)]
    return out


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.split("\n") if line.strip()]


def _words(lines: list[str]) -> int:
    return sum(len(line.split()) for line in lines)


def site_boilerplate(article: str, whole: str) -> tuple[list[str], list[str]]:
    """(header lines, footer lines): the whole page's lines before the article's first line and after its last."""
    own = set(_lines(article))
    lines = _lines(whole)
    at = [i for i, line in enumerate(lines) if line in own]
    if not at:
        return [], []
    return [x for x in lines[: at[0]] if x not in own], [x for x in lines[at[-1] + 1 :] if x not in own]


class _Page:
    def __init__(self, name: str, article: str, whole: str):
        self.name, self.article, self.whole = name, article, whole
        self.paras = _lines(article)
        self.head, self.tail = site_boilerplate(article, whole)
        self.sentences = [s.strip() for s in _SENTENCE.split(" ".join(self.paras)) if len(s.split()) >= 3]


def _take(lines: list[str], words: int, rng: np.random.Generator, from_end: bool = False) -> list[str]:
    """A contiguous run of ``lines`` of about ``words`` words (from the start, or ending at the end)."""
    if not lines or words <= 0:
        return []
    out: list[str] = []
    seq = lines[::-1] if from_end else lines[int(rng.integers(0, max(1, len(lines) // 3))) :]
    for line in seq:
        if _words(out) >= words:
            break
        out.append(line)
    return out[::-1] if from_end else out


class _Editor:
    """The edits of one page's variants (``rng``: the page's own generator; ``pages``: every page, for other sites'
    boilerplate and other pages' sentences)."""

    def __init__(self, page: _Page, pages: list[_Page], index: int, rng: np.random.Generator):
        self.page, self.pages, self.index, self.rng = page, pages, index, rng

    def _other(self, need: str) -> _Page:
        """Another page that has ``need`` (``head``, ``tail`` or ``sentences``), or this one."""
        others = [p for k, p in enumerate(self.pages) if k != self.index and getattr(p, need)]
        return others[int(self.rng.integers(len(others)))] if others else self.page

    def boilerplate(self, paras: list[str], site: _Page | None = None) -> list[str]:
        rng, n = self.rng, _words(paras)
        if site is None:
            own = self.page.head or self.page.tail
            site = self.page if own and rng.random() < 0.5 else self._other("head")
        share = rng.uniform(0.03, 0.35)
        head_share = rng.uniform(0.3, 1.0)
        head = _take(site.head, int(n * share * head_share), rng)
        tail = _take(site.tail or site.head, int(n * share * (1 - head_share)), rng, from_end=True)
        return [*head, *paras, *tail]

    def comments(self, paras: list[str]) -> list[str]:
        rng, n = self.rng, _words(paras)
        src = self._other("sentences").sentences or ["Great article, thanks."]
        want = int(n * rng.uniform(0.02, 0.4))
        out = [f"{int(rng.integers(1, 400))} Comments", "Leave a reply"]
        while _words(out) < want + 4:
            k = int(rng.integers(0, len(src)))
            body = " ".join(src[k : k + int(rng.integers(1, 4))])
            unit = str(rng.choice(("minutes", "hours", "days", "weeks", "months")))
            out += [f"{rng.choice(_NAMES)} says:", f"{int(rng.integers(2, 30))} {unit} ago", body, "Reply"]
        return [*paras, *out]

    def timestamp(self, paras: list[str]) -> list[str]:
        rng = self.rng
        day, month, year = int(rng.integers(1, 29)), str(rng.choice(_MONTHS)), int(rng.integers(2009, 2026))
        lines = [
            f"Published {rng.choice(_WEEKDAYS)}, {month} {day}, {year} at {int(rng.integers(1, 13))}:"
            f"{int(rng.integers(10, 60))} {rng.choice(('am', 'pm'))}",
            f"Updated {int(rng.integers(2, 23))} hours ago",
            f"Last modified: {day} {rng.choice(_MONTHS)} {year}",
            f"{int(rng.integers(2, 15))} min read",
            f"{int(rng.integers(100, 90000))} views",
        ]
        chosen = [lines[k] for k in sorted(rng.choice(len(lines), int(rng.integers(1, 4)), replace=False))]
        at = min(1, len(paras))  # below the headline
        return [*paras[:at], *chosen, *paras[at:]]

    def truncation(self, paras: list[str]) -> list[str]:
        rng = self.rng
        keep = int(_words(paras) * rng.uniform(0.65, 0.99))
        out: list[str] = []
        for p in paras:
            w = p.split()
            if _words(out) + len(w) > keep:
                rest = keep - _words(out)
                if rest > 0:
                    out.append(" ".join(w[:rest]) + " ...")
                break
            out.append(p)
        end = ("Read more", "Continue reading", "Subscribe to read the full story.",
               "This article is for subscribers only. Log in or subscribe to continue reading.")
        return [*out, str(rng.choice(end))]

    def reorder(self, paras: list[str]) -> list[str]:
        rng, out = self.rng, list(paras)
        if len(out) < 3:
            return out
        for _ in range(int(rng.integers(1, 4))):
            out.insert(int(rng.integers(1, len(out))), out.pop(int(rng.integers(1, len(out)))))
        return out

    def syndication(self, paras: list[str]) -> list[str]:
        rng = self.rng
        site = self._other("head")
        out = list(paras)
        if out:  # the headline as the other site writes it
            out[0] = str(rng.choice((f"{out[0]} | {rng.choice(_SITES)}", f"Opinion: {out[0]}", f"WATCH: {out[0]}",
                                     f"{out[0]} (updated)")))
        if len(out) > 4 and rng.random() < 0.6:
            out = out[:-1]
        vocab = " ".join(site.sentences).split() or ["the"]
        words = [p.split() for p in out]
        flat = [(i, j) for i, w in enumerate(words) for j in range(len(w))]
        for k in rng.choice(len(flat), int(len(flat) * rng.uniform(0.0, 0.01)), replace=False) if flat else ():
            i, j = flat[int(k)]
            words[i][j] = vocab[int(rng.integers(len(vocab)))]
        out = [" ".join(w) for w in words]
        credit = str(rng.choice((f"This article originally appeared on {rng.choice(_SITES)}.",
                                 f"Republished with permission from {rng.choice(_SITES)}.",
                                 f"Source: {rng.choice(_SITES)}")))
        out = [*out, credit] if rng.random() < 0.5 else [credit, *out]
        return self.boilerplate(out, site)

    def variant(self) -> tuple[str, str]:
        """(name, text) of one variant: one to three edits, applied in the order of ``EDITS`` (what changes the
        article first, then what a site adds around it)."""
        rng = self.rng
        edits = [EDITS[k] for k in sorted(rng.choice(len(EDITS), int(rng.integers(1, 4)), replace=False))]
        paras = self.page.paras
        for edit in edits:
            paras = getattr(self, edit)(paras)
        return "+".join(edits), "\n".join(paras)


def build(readability_dir: Path | None, warc_dir: Path | None, seed: int = 0, every: int = 1,
          variants: int = VARIANTS) -> NearSet:
    """The set of the pages of ``readability_dir`` and ``warc_dir`` (every ``every``-th page)."""
    extractor = Extractor(ExtractConfig())
    pages: list[_Page] = []
    seen: set[str] = set()
    for name, html in page_records(readability_dir, warc_dir)[::every]:
        rec = HtmlRecord(url="", record_id="", date="", html=html, charset="utf-8", charset_source="utf-8",
                         payload_bytes=len(html))
        article = extractor(rec)[0] or ""
        norm = normalize(article)
        if len(norm.split()) < MIN_WORDS or norm in seen:
            continue
        seen.add(norm)
        pages.append(_Page(name, article, extract_plain_text(HTMLTree.parse(html), main_content=False)))
    texts, page, kinds = [], [], []
    for p, pg in enumerate(pages):
        editor = _Editor(pg, pages, p, np.random.default_rng([seed, stable_hash(pg.name)]))
        versions = [("article", pg.article), ("whole-page", pg.whole)]
        versions += [editor.variant() for _ in range(variants)]
        norms: set[str] = set()
        for kind, text in versions:
            norm = normalize(text)
            if len(norm.split()) >= MIN_WORDS and norm not in norms:
                norms.add(norm)
                texts.append(text)
                page.append(p)
                kinds.append(kind)
    return labelled(texts, np.array(page, np.int64), kinds, [pg.name for pg in pages], seed)

