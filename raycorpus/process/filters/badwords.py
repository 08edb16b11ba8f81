"""Bad-words filter (C4 / LDNOOBW style), with one word list per language label.

The list is chosen by ``doc.metadata["lang"]`` (``en`` when language ID did not run); a
language without a list keeps every document. In languages written with spaces an entry
matches whole words of ``view.words_lower`` (an entry of several words, a run of them) and the
ratio is matches / words. In scripts without spaces (``NO_SPACE``: Chinese, Japanese, Thai, ...)
entries are found as substrings of the lowercased text and the ratio is matched characters /
non-space characters. ``max_ratio`` 0 drops a document with a single match.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from pydantic import Field

from raycorpus.process.document import Document
from raycorpus.process.filters.base import Filter, FilterResult, StageSettings, TextView
from raycorpus.process.filters.registry import register
from raycorpus.process.filters.resources import read_word_list

NO_SPACE = frozenset({"zh", "ja", "th", "lo", "km", "my", "bo", "wuu", "yue"})


class BadWordsConfig(StageSettings):
    lists: dict[str, str] = Field(
        default_factory=lambda: {"en": "package:badwords_en.txt"},
        description="language label -> word list file",
    )
    max_ratio: float = Field(0.0, ge=0, description="drop when bad words / words exceeds this (0: any one)")


class _SpacedList:
    def __init__(self, entries: list[str]):
        words, phrases = set(), set()
        for e in entries:
            toks = TextView(e).words_lower
            if len(toks) == 1:
                words.add(toks[0])
            elif toks:
                phrases.add(" ".join(toks))
        self.words = frozenset(words)
        self.phrases = sorted(phrases)

    def ratio(self, view: TextView) -> tuple[int, float]:
        words = view.words_lower
        if not words:
            return 0, 0.0
        n = sum(map(self.words.__contains__, words))
        if self.phrases:
            joined = f" {' '.join(words)} "
            n += sum(joined.count(f" {p} ") for p in self.phrases)
        return n, min(1.0, n / len(words))


class _SubstringList:
    def __init__(self, entries: list[str]):
        entries = sorted({e for e in entries if e}, key=len, reverse=True)
        self.pattern = re.compile("|".join(map(re.escape, entries))) if entries else None

    def ratio(self, view: TextView) -> tuple[int, float]:
        if self.pattern is None:
            return 0, 0.0
        matches = self.pattern.findall(view.text.lower())
        if not matches:
            return 0, 0.0
        chars = len(view.text) - sum(view.text.count(c) for c in " \t\n\r\f\v\u3000")
        return len(matches), min(1.0, sum(map(len, matches)) / max(chars, 1))


@register
class BadWordsFilter(Filter):
    """Drops (``bad_words``) documents whose bad-word ratio exceeds ``max_ratio``; signals
    ``badwords.count`` and ``badwords.ratio``."""

    name = "badwords"
    settings = BadWordsConfig
    removable = True

    def __init__(self, cfg: BadWordsConfig):
        self.max_ratio = cfg.max_ratio
        self.lists = {
            lang: (_SubstringList if lang in NO_SPACE else _SpacedList)(read_word_list(spec))
            for lang, spec in cfg.lists.items()
        }

    @classmethod
    def signal_rule(cls, signal: str, settings: BadWordsConfig, lang: str | None) -> Callable[[float], bool] | None:
        return (lambda ratio: ratio > settings.max_ratio) if signal == "badwords.ratio" else None

    def __call__(self, doc: Document, view: TextView) -> FilterResult:
        words = self.lists.get(str(doc.metadata.get("lang") or "en"))
        if words is None:
            return FilterResult()
        n, ratio = words.ratio(view)
        signals = {"badwords.count": n, "badwords.ratio": round(ratio, 6)}
        if n and ratio > self.max_ratio:
            return FilterResult(reason="bad_words", signals=signals)
        return FilterResult(signals=signals)
