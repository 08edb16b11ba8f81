"""What every document filter shares: a cached view of the text and the result type.

A filter is a class with a ``name`` and ``__call__(doc, view) -> FilterResult``. It keeps the
document (``reason=None``), or names why it would drop it (``reason="mean_word_length"``), and
may return the numbers it computed (``signals``, written into metadata in tag mode) and, for
modifying stages (C4 line filter, PII), a replacement ``text``. Filters never raise on odd
input; the chain turns a filter that raises anyway into a counted drop ``error:<name>``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property

# A word is a run of letters/digits (with inner apostrophes or hyphens); any other
# non-space character is a token of its own. Scripts without spaces (CJK, Thai) come out as
# long runs, which is what the Gopher statistics expect of them.
WORD_RE = re.compile(r"\w+(?:['\u2019\-]\w+)*|[^\w\s]", re.UNICODE)


class TextView:
    """Lazily computed splits of one text, shared by all filters of the chain."""

    def __init__(self, text: str):
        self.text = text

    @cached_property
    def lines(self) -> list[str]:
        """Non-empty lines, stripped."""
        return [s for s in (ln.strip() for ln in self.text.split("\n")) if s]

    @cached_property
    def paragraphs(self) -> list[str]:
        """Non-empty paragraphs (separated by blank lines), stripped."""
        return [s for s in (p.strip() for p in re.split(r"\n\s*\n", self.text)) if s]

    @cached_property
    def tokens(self) -> list[str]:
        """Words and punctuation marks, in order."""
        return WORD_RE.findall(self.text)

    @cached_property
    def words(self) -> list[str]:
        """Tokens that contain a letter or digit (punctuation marks dropped)."""
        return [t for t in self.tokens if t[0].isalnum() or t[-1].isalnum() or len(t) > 1]

    @cached_property
    def words_lower(self) -> list[str]:
        return [w.lower() for w in self.words]


@dataclass(slots=True)
class FilterResult:
    reason: str | None = None
    signals: dict[str, float | int | str] = field(default_factory=dict)
    text: str | None = None  # replacement text from a modifying stage


KEEP = FilterResult()
