"""Gopher repetition and quality rules (Rae et al. 2021, App. A), as datatrove 0.10.1 implements them for
FineWeb, decision for decision (``raycorpus.cli.parity`` and ``tests/process/filters/test_parity.py`` compare
them with datatrove's own classes).

datatrove's definitions, which FineWeb's and FineWeb-2's thresholds were set on:

* Words are datatrove's: spaCy's English tokens (:attr:`TextView.tokens`), punctuation marks included; for the
  languages written without spaces, the script-aware words (:mod:`~raycorpus.process.filters.words`) stand in
  for datatrove's jieba / SudachiPy tokenizers (a documented difference).
* Paragraphs are split at two or more newlines, lines at one or more; repeated items count after their first
  occurrence. Character fractions are over ``len(text)``; the top n-gram joins its words with spaces and a text
  without a repeat still has one (its first n-gram); duplicate n-grams are those a left-to-right scan meets
  again, the scan jumping over each repeat, joined without spaces.
* Quality: the word count and mean word length are over the words that are not all punctuation
  (datatrove's ``PUNCTUATION_SET``); the hash, ellipsis and alphabetic ratios are over all tokens; bullets are
  lines starting with "•" or "-"; stop words count once each (distinct), in their exact case.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import TypeVar

from pydantic import Field

from raycorpus.process.filters.base import RuleFilter, StageSettings, TextView
from raycorpus.process.filters.fineweb_text import duplicates, is_symbol, ngram_chars
from raycorpus.process.filters.langtable import LanguageSettings
from raycorpus.process.filters.registry import register

BULLETS = ("•", "-")  # datatrove's: a line starting with one of these (after its leading spaces) is a bullet
ELLIPSES = ("...", "…")
PARAGRAPH_BREAK = re.compile(r"\n{2,}")  # datatrove's splits; paragraphs() and lines() give the same, faster
LINE_BREAK = re.compile(r"\n+")

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
        description="the stop words counted for min_stop_words (each counts once, in its exact case)")


def paragraphs(text: str) -> list[str]:
    """``PARAGRAPH_BREAK.split(text.strip())`` with ``str.split``: a run of 2k or 2k + 1 newlines leaves k - 1 empty
    pieces and, when odd, a newline at the start of the next piece (a stripped text neither starts nor ends with
    one)."""
    pieces = text.strip().split("\n\n")
    if len(pieces) == 1 or "\n\n\n" not in text:
        return pieces
    return [p.removeprefix("\n") for p in pieces if p]


def lines(text: str) -> list[str]:
    """``LINE_BREAK.split(text)`` with ``str.split``: a run of newlines leaves empty pieces between its newlines,
    which the regular expression does not (an empty first or last piece it does keep)."""
    pieces = text.split("\n")
    if len(pieces) < 3 or "\n\n" not in text:
        return pieces
    return [pieces[0], *[p for p in pieces[1:-1] if p], pieces[-1]]


def cached(view: TextView, key: str, compute: Callable[[TextView], T]) -> T:
    """``compute(view)``, computed once per view (so once per document for all filters)."""
    try:
        return view.__dict__[key]
    except KeyError:
        value = view.__dict__[key] = compute(view)
        return value


def line_duplicates(view: TextView) -> tuple[int, int]:
    """Repeated non-empty lines (datatrove's FineWeb filter: lines split at one newline, blank ones left out)."""
    return cached(view, "_line_duplicates",
                  lambda v: duplicates([ln for ln in v.text.split("\n") if ln.strip()]))


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
        cfg, text = self.cfg, view.text
        yield "chars", len(text)  # an empty text is dropped first (datatrove: "empty")
        chars = len(text) or 1
        for name, items in (("para", paragraphs(text)), ("line", lines(text))):
            dups, dup_chars = duplicates(items)
            yield f"dup_{name}_frac", dups / len(items)
            yield f"dup_{name}_char_frac", dup_chars / chars
        tops, dups_n = cfg.top_n_grams, cfg.dup_n_grams
        stream = ngram_chars(view.tokens, tops, dups_n)
        for n in range(2, max([*tops, *dups_n], default=0) + 1):
            _, top, dup = next(stream, (n, 0, 0))  # an n longer than the text: no n-gram, no rule
            if n in tops:
                yield f"top_{n}_gram", top / chars
            if n in dups_n:
                yield f"dup_{n}_gram", dup / chars

    @classmethod
    def signal_names(cls, cfg: GopherRepetitionConfig) -> list[str]:
        names = ["chars", "dup_para_frac", "dup_para_char_frac", "dup_line_frac", "dup_line_char_frac"]
        for n in range(2, max([*cfg.top_n_grams, *cfg.dup_n_grams], default=0) + 1):
            names += [f"{kind}_{n}_gram" for kind, ns in (("top", cfg.top_n_grams), ("dup", cfg.dup_n_grams))
                      if n in ns]
        return names

    @staticmethod
    def verdict(key: str, value: float, cfg: GopherRepetitionConfig) -> str | None:
        if key == "chars":
            return "empty" if value == 0 else None
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
        self.stop_words = frozenset(cfg.stop_words)
        self.stop_word_list = tuple(dict.fromkeys(cfg.stop_words))

    def count_stop_words(self, view: TextView) -> int:
        """Distinct stop words among the words (datatrove: ``len(stop_words & set(words))``); in a script-aware
        view (a language written without spaces, whose words are cut by rule), those found in the text."""
        if view.script_aware:
            return sum(1 for w in self.stop_word_list if w in view.text)
        return len(self.stop_words.intersection(view.tokens))

    def _signals(self, view: TextView) -> Iterator[tuple[str, float | int]]:
        tokens, text = view.tokens, view.text
        n_tokens = len(tokens) or 1  # no token: no word either, so the first rule drops it
        words = [w for w in tokens if not is_symbol(w)]
        n = len(words)
        yield "words", n
        yield "mean_word_length", sum(map(len, words)) / n if n else 0.0
        yield "hash_ratio", text.count("#") / n_tokens
        yield "ellipsis_ratio", (text.count("...") + text.count("…")) / n_tokens
        lines = text.splitlines() or [""]
        yield "bullet_lines_ratio", sum(1 for s in lines if s.lstrip().startswith(BULLETS)) / len(lines)
        yield "ellipsis_lines_ratio", sum(1 for s in lines if s.rstrip().endswith(ELLIPSES)) / len(lines)
        alpha = sum(1 for w in tokens if w.isalpha() or any(map(str.isalpha, w)))
        yield "alpha_words_ratio", alpha / n_tokens
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
