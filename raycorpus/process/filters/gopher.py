"""Gopher repetition and quality rules (Rae et al. 2021, App. A), as datatrove implements them.

Deliberate differences from datatrove's ``GopherRepetitionFilter`` / ``GopherQualityFilter``:

* Words are ``TextView.words`` (runs of letters/digits; punctuation marks are not words), not
  NLTK tokens. So n-grams are over words only, and the symbol, alpha and stop-word ratios are
  per word, as the paper states them (datatrove counts punctuation tokens as non-alphabetic
  words, which fails ordinary prose with many commas).
* n-gram character fractions are over the characters of words (the paper's definition), not
  over ``len(text)``; a "top" n-gram must occur at least twice (a single occurrence is no
  repetition, and would fail any very short text); duplicate n-gram characters are those
  covered by any repeated n-gram, overlaps counted once (the paper), where datatrove skips
  ahead greedily.
* Lines and paragraphs are ``TextView.lines`` / ``.paragraphs``: stripped, blank ones dropped
  (extracted text separates blocks by blank lines, which would dilute every per-line ratio).
* Bullets are a set of bullet glyphs (datatrove: only "•" and "-"); stop words also count in
  Capitalized and UPPER case (datatrove: exact case only).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Iterator
from itertools import filterfalse
from typing import TypeVar

import numpy as np
from pydantic import Field

from raycorpus.process.filters.base import RuleFilter, StageSettings, TextView
from raycorpus.process.filters.langtable import LanguageSettings
from raycorpus.process.filters.registry import register

# bullet glyphs, hyphen bullet U+2043, hyphen, en and em dash, asterisk
BULLETS = ("•", "‣", "◦", "\u2043", "∙", "●", "○", "▪", "■", "□", "►", "▶", "➢", "✓", "✔", "-", "\u2013", "—", "*")
ELLIPSES = ("...", "…")
_K = np.uint64(0x9E3779B97F4A7C15)  # odd multiplier of the polynomial n-gram hash (mod 2**64)

T = TypeVar("T")


class GopherRepetitionConfig(StageSettings):
    dup_line_frac: float = Field(0.30, description="drop when the share of lines that repeat an earlier line "
                                 "exceeds this")
    dup_para_frac: float = Field(0.30, description="drop when the share of paragraphs that repeat an earlier "
                                 "paragraph exceeds this")
    dup_line_char_frac: float = Field(0.20, description="drop when the share of characters in repeated lines "
                                      "exceeds this")
    dup_para_char_frac: float = Field(0.20, description="drop when the share of characters in repeated "
                                      "paragraphs exceeds this")
    top_n_grams: dict[int, float] = Field(
        default_factory=lambda: {2: 0.20, 3: 0.18, 4: 0.16},
        description="n -> limit: drop when the most frequent repeated word n-gram covers more than this share of "
        "the words' characters")
    dup_n_grams: dict[int, float] = Field(
        default_factory=lambda: {5: 0.15, 6: 0.14, 7: 0.13, 8: 0.12, 9: 0.11, 10: 0.10},
        description="n -> limit: drop when the word n-grams that occur more than once cover more than this share "
        "of the words' characters"
    )


class GopherQualityConfig(StageSettings):
    min_words: int = Field(50, description="drop documents with fewer words (too_few_words)")
    max_words: int = Field(100_000, description="drop documents with more words (too_many_words)")
    min_avg_word_length: float = Field(3, description="drop when the mean word length is below this")
    max_avg_word_length: float = Field(10, description="drop when the mean word length is above this")
    max_symbol_word_ratio: float = Field(
        0.1, description="drop when '#' characters per word, or ellipses per word, exceed this")
    max_bullet_lines_ratio: float = Field(0.9, description="drop when the share of lines starting with a bullet "
                                          "exceeds this")
    max_ellipsis_lines_ratio: float = Field(0.3, description="drop when the share of lines ending in an ellipsis "
                                            "exceeds this")
    min_alpha_words_ratio: float = Field(0.8, description="drop when the share of words holding a letter is below "
                                         "this")
    min_stop_words: int = Field(2, description="drop documents with fewer stop words than this")
    stop_words: list[str] = Field(
        default_factory=lambda: ["the", "be", "to", "of", "and", "that", "have", "with"],
        description="the stop words counted for min_stop_words (in any of lower, Capitalized or UPPER case)")


def cached(view: TextView, key: str, compute: Callable[[TextView], T]) -> T:
    """``compute(view)``, computed once per view (so once per document for all filters)."""
    try:
        return view.__dict__[key]
    except KeyError:
        value = view.__dict__[key] = compute(view)
        return value


def duplicates(items: list[str]) -> tuple[int, int]:
    """Occurrences after the first of each item, and their characters."""
    counts = Counter(items)
    if len(counts) == len(items):
        return 0, 0
    return len(items) - len(counts), sum(len(s) * (c - 1) for s, c in counts.items() if c > 1)


def line_duplicates(view: TextView) -> tuple[int, int]:
    return cached(view, "_line_duplicates", lambda v: duplicates(v.lines))


def word_lengths(view: TextView) -> np.ndarray:
    return cached(view, "_word_lengths", lambda v: np.fromiter(map(len, v.words), np.int64, len(v.words)))


def ngram_fractions(
    words: list[str], lens: np.ndarray, top_ns: Collection[int], dup_ns: Collection[int]
) -> Iterator[tuple[int, float, float]]:
    """Yield ``(n, top n-gram char fraction, duplicate n-gram char fraction)`` for n = 2, 3, ...

    Both are over the characters of all words; each is only computed (else 0) for the ``n`` in
    ``top_ns`` / ``dup_ns``. Stops once no n-gram repeats (no longer one can then): the missing
    fractions are 0. Each round hashes only the n-grams that start where the (n-1)-gram
    repeated (a repeated n-gram's prefix repeats), so the work shrinks fast on ordinary text.
    """
    m = len(words)
    total = int(lens.sum())
    max_n = max([*top_ns, *dup_ns], default=0)
    if m < 2 or total == 0 or max_n < 2:
        return
    # word hashes, padded with distinct values: an n-gram running past the end never repeats
    ids = np.empty(m + max_n, np.uint64)
    ids[:m] = np.fromiter(map(hash, words), np.int64, m).view(np.uint64)
    ids[m:] = np.arange(max_n, dtype=np.uint64) * _K + _K
    ends = np.concatenate(([0], np.cumsum(lens)))  # chars of words[i:j] = ends[j] - ends[i]
    pos = np.arange(m - 1)  # starts of the n-grams still in play, and their hashes
    h = ids[: m - 1]
    for n in range(2, max_n + 1):
        h = h * _K + ids[pos + (n - 1)]
        order = np.argsort(h)
        s = h[order]
        same = s[1:] == s[:-1]
        if not same.any():
            return
        top = dup = 0.0
        if n in top_ns:
            bounds = np.flatnonzero(np.concatenate(([True], ~same, [True])))
            sizes = np.diff(bounds)
            most = int(sizes.max())
            first = pos[order[bounds[:-1][sizes == most]]]
            top = int((ends[first + n] - ends[first]).max()) * most / total
        repeated = np.zeros(s.size, bool)
        repeated[1:] = same
        repeated[:-1] |= same
        keep = order[repeated]
        pos, h = pos[keep], h[keep]
        if n in dup_ns:
            edges = np.zeros(m + 1, np.int32)
            edges[pos] += 1
            edges[pos + n] -= 1
            dup = int(lens[np.cumsum(edges[:m]) > 0].sum()) / total
        yield n, top, dup


@register
class GopherRepetitionFilter(RuleFilter):
    """Drops documents made of repeated lines, paragraphs or n-grams."""

    name = "gopher_repetition"
    settings = GopherRepetitionConfig
    thresholds = frozenset({"dup_line_frac", "dup_para_frac", "dup_line_char_frac", "dup_para_char_frac",
                            "top_n_grams", "dup_n_grams"})
    cfg: GopherRepetitionConfig

    @classmethod
    def language_settings(cls, lang: LanguageSettings) -> dict[str, object]:
        off = 1.0  # a fraction is never above 1: FineWeb-2's 0 (datatrove: rule off)
        return {"dup_line_frac": lang.dup_line_frac, "top_n_grams": dict(lang.top_n_grams),
                "dup_n_grams": dict(lang.dup_n_grams), "dup_para_frac": lang.dup_para_frac or off,
                "dup_line_char_frac": lang.dup_line_char_frac or off,
                "dup_para_char_frac": lang.dup_para_char_frac or off}

    @classmethod
    def select_problem(cls, tagged: GopherRepetitionConfig, settings: GopherRepetitionConfig) -> str | None:
        """An n the tag run did not measure (each n's fraction does not depend on the others')."""
        for field in ("top_n_grams", "dup_n_grams"):
            if set(getattr(settings, field)) - set(getattr(tagged, field)):
                return field
        return None

    def _signals(self, view: TextView) -> Iterator[tuple[str, float]]:
        cfg = self.cfg
        chars = len(view.text)
        items = view.paragraphs
        dups, dup_chars = duplicates(items)
        yield "dup_para_frac", dups / len(items) if items else 0.0
        yield "dup_para_char_frac", dup_chars / chars if chars else 0.0
        items = view.lines
        dups, dup_chars = line_duplicates(view)
        yield "dup_line_frac", dups / len(items) if items else 0.0
        yield "dup_line_char_frac", dup_chars / chars if chars else 0.0

        tops, dups_n = cfg.top_n_grams, cfg.dup_n_grams
        stream = ngram_fractions(view.words, word_lengths(view), tops, dups_n)
        for n in range(2, max([*tops, *dups_n], default=0) + 1):
            _, top, dup = next(stream, (n, 0.0, 0.0))
            if n in tops:
                yield f"top_{n}_gram", top
            if n in dups_n:
                yield f"dup_{n}_gram", dup

    @classmethod
    def signal_names(cls, cfg: GopherRepetitionConfig) -> list[str]:
        names = ["dup_para_frac", "dup_para_char_frac", "dup_line_frac", "dup_line_char_frac"]
        for n in range(2, max([*cfg.top_n_grams, *cfg.dup_n_grams], default=0) + 1):
            names += [f"{kind}_{n}_gram" for kind, ns in (("top", cfg.top_n_grams), ("dup", cfg.dup_n_grams))
                      if n in ns]
        return names

    @staticmethod
    def verdict(key: str, value: float, cfg: GopherRepetitionConfig) -> str | None:
        if key.endswith("_gram"):  # top_3_gram, dup_7_gram
            kind, n, _ = key.split("_")
            limit = (cfg.top_n_grams if kind == "top" else cfg.dup_n_grams)[int(n)]
        else:
            limit = getattr(cfg, key)
        return key if value > limit else None


QUALITY_SIGNALS = ["words", "mean_word_length", "hash_ratio", "ellipsis_ratio", "bullet_lines_ratio",
                   "ellipsis_lines_ratio", "alpha_words_ratio", "stop_words"]


@register
class GopherQualityFilter(RuleFilter):
    """Drops documents whose words, symbols and lines do not look like prose."""

    name = "gopher_quality"
    settings = GopherQualityConfig
    thresholds = frozenset({"min_words", "max_words", "min_avg_word_length", "max_avg_word_length",
                            "max_symbol_word_ratio", "max_bullet_lines_ratio", "max_ellipsis_lines_ratio",
                            "min_alpha_words_ratio", "min_stop_words"})

    @classmethod
    def language_settings(cls, lang: LanguageSettings) -> dict[str, object]:
        return {"stop_words": list(lang.stop_words), "min_avg_word_length": lang.min_avg_word_length,
                "max_avg_word_length": lang.max_avg_word_length,
                "min_alpha_words_ratio": lang.max_non_alpha_words_ratio, "min_stop_words": lang.min_stop_words}

    def __init__(self, cfg: GopherQualityConfig, all_signals: bool = False):
        super().__init__(cfg, all_signals)
        # matching case variants is 3x faster than lowercasing every word
        self.stop_words = frozenset(v for w in cfg.stop_words for v in (w, w.lower(), w.capitalize(), w.upper()))
        self.stop_word_list = tuple(dict.fromkeys(cfg.stop_words))

    def count_stop_words(self, view: TextView) -> int:
        """Stop words among the words; in a script-aware view (a language written without spaces,
        whose words are cut by rule), every occurrence of a stop word in the text."""
        if view.script_aware:
            return sum(map(view.text.count, self.stop_word_list))
        return sum(map(self.stop_words.__contains__, view.words))

    def _signals(self, view: TextView) -> Iterator[tuple[str, float | int]]:
        words = view.words
        n = len(words)
        yield "words", n
        yield "mean_word_length", int(word_lengths(view).sum()) / n if n else 0.0
        text = view.text
        yield "hash_ratio", text.count("#") / n if n else 0.0
        yield "ellipsis_ratio", (text.count("...") + text.count("…")) / n if n else 0.0

        lines = view.lines
        yield "bullet_lines_ratio", sum(1 for s in lines if s.startswith(BULLETS)) / len(lines) if lines else 0.0
        yield "ellipsis_lines_ratio", sum(1 for s in lines if s.endswith(ELLIPSES)) / len(lines) if lines else 0.0

        # most words are all letters (str.isalpha, in C); look into the others only
        no_letter = sum(1 for w in filterfalse(str.isalpha, words) if not any(map(str.isalpha, w)))
        yield "alpha_words_ratio", (n - no_letter) / n if n else 0.0
        yield "stop_words", self.count_stop_words(view)

    @classmethod
    def signal_names(cls, cfg: GopherQualityConfig) -> list[str]:
        return QUALITY_SIGNALS

    @staticmethod
    def verdict(key: str, value: float | int, cfg: GopherQualityConfig) -> str | None:
        if key == "words":
            return "too_few_words" if value < cfg.min_words else "too_many_words" if value > cfg.max_words else None
        if key == "mean_word_length":
            return None if cfg.min_avg_word_length <= value <= cfg.max_avg_word_length else key
        if key == "alpha_words_ratio":
            return key if value < cfg.min_alpha_words_ratio else None
        if key == "stop_words":
            return key if value < cfg.min_stop_words else None
        limit = {"hash_ratio": cfg.max_symbol_word_ratio, "ellipsis_ratio": cfg.max_symbol_word_ratio,
                 "bullet_lines_ratio": cfg.max_bullet_lines_ratio,
                 "ellipsis_lines_ratio": cfg.max_ellipsis_lines_ratio}[key]
        return key if value > limit else None
