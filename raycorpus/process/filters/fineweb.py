"""FineWeb's own line rules (Penedo et al. 2024), as datatrove 0.10.1's ``FineWebQualityFilter`` applies them.

A document is dropped when fewer than ``min_line_punct_ratio`` of its lines end in punctuation (datatrove's
``TERMINAL_PUNCTUATION``), more than ``max_short_line_ratio`` of them have at most ``short_line_chars``
characters, more than ``max_dup_line_char_ratio`` of its characters (newlines left out) are in repeated lines,
or it has more than ``max_newline_word_ratio`` newlines per word (datatrove's comparisons: ``<`` and ``>``).
Lines are split at each newline, blank ones left out and the others not stripped; words are datatrove's
(:attr:`TextView.tokens`, punctuation marks included); every newline of the text counts.
"""

from __future__ import annotations

from collections.abc import Iterator

from pydantic import Field

from raycorpus.process.filters.base import RuleFilter, StageSettings, TextView
from raycorpus.process.filters.fineweb_text import TERMINAL_PUNCTUATION
from raycorpus.process.filters.gopher import line_duplicates
from raycorpus.process.filters.langtable import LanguageSettings
from raycorpus.process.filters.registry import register


class FineWebQualityConfig(StageSettings):
    min_line_punct_ratio: float = Field(
        0.12, description="drop when the share of lines ending in punctuation is below this")
    max_short_line_ratio: float = Field(
        0.67, description="drop when the share of short lines (see short_line_chars) is above this")
    short_line_chars: int = Field(30, description="a line of at most this many characters is short")
    max_dup_line_char_ratio: float = Field(
        0.01, description="drop when the share of characters in repeated lines is above this")
    max_newline_word_ratio: float = Field(
        0.3, description="drop when line breaks per word (words and punctuation marks) exceed this")


@register
class FineWebQualityFilter(RuleFilter):
    """Drops list-like documents: few punctuated lines, many short or repeated lines."""

    name = "fineweb"
    settings = FineWebQualityConfig
    cfg: FineWebQualityConfig

    thresholds = frozenset({"min_line_punct_ratio", "max_short_line_ratio", "max_dup_line_char_ratio",
                            "max_newline_word_ratio"})

    @classmethod
    def language_settings(cls, lang: LanguageSettings) -> dict[str, object]:
        return {"min_line_punct_ratio": lang.line_punct_thr, "max_newline_word_ratio": lang.new_line_ratio,
                "max_short_line_ratio": lang.short_line_thr, "max_dup_line_char_ratio": lang.char_duplicates_ratio}

    def _signals(self, view: TextView) -> Iterator[tuple[str, float]]:
        text = view.text
        lines = [ln for ln in text.split("\n") if ln.strip()]
        n = len(lines) or 1  # no line: every ratio is 0, and line punctuation drops it
        yield "line_punct_ratio", sum(1 for s in lines if s.endswith(TERMINAL_PUNCTUATION)) / n
        limit = self.cfg.short_line_chars
        yield "short_line_ratio", sum(1 for s in lines if len(s) <= limit) / n
        chars = len(text) - text.count("\n")
        yield "dup_line_char_ratio", line_duplicates(view)[1] / chars if chars else 0.0
        words = len(view.tokens)
        yield "newline_word_ratio", text.count("\n") / words if words else float(text.count("\n") > 0)

    @classmethod
    def signal_names(cls, cfg: FineWebQualityConfig) -> list[str]:
        return ["line_punct_ratio", "short_line_ratio", "dup_line_char_ratio", "newline_word_ratio"]

    @staticmethod
    def verdict(key: str, value: float, cfg: FineWebQualityConfig) -> str | None:
        if key == "line_punct_ratio":
            return key if value < cfg.min_line_punct_ratio else None
        if key == "short_line_ratio":
            return key if value > cfg.max_short_line_ratio else None
        if key == "dup_line_char_ratio":
            return key if value > cfg.max_dup_line_char_ratio else None
        return key if value > cfg.max_newline_word_ratio else None
