"""C4's line and page rules (Raffel et al. 2020), as datatrove 0.10.1's ``C4QualityFilter`` applies them for
FineWeb (``filter_no_terminal_punct=False``: ``terminal_punctuation`` is off by default).

A modifying stage: lines that fail a line rule are removed, and the document is dropped when a kept line
contains "lorem ipsum" or a curly brace, or fewer than ``min_sentences`` sentences remain. As in datatrove,
each line (split at line breaks and stripped) goes through, in this order: a word (between spaces) longer
than ``max_word_length`` (line removed), Wikipedia citation markers removed, no terminal punctuation (when on),
fewer than ``min_words_per_line`` words (counted before the markers went), "lorem ipsum" (page dropped),
"javascript", "{" (page dropped), policy boilerplate. Sentences are spaCy's sentencizer's on the line's tokens
(:func:`~raycorpus.process.filters.fineweb_text.sentence_count`); kept lines are joined by one newline.

raycorpus's variants, documented options: ``keep_paragraphs`` joins kept lines by a blank line where the
original had one (datatrove's single newlines lose the paragraphs); in a language written without spaces (a
script-aware view) a line's words are :func:`~raycorpus.process.filters.words.count_words`' (datatrove's
whitespace words would remove every line; FineWeb-2 runs no C4 rules).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import Field

from raycorpus.process.document import Document
from raycorpus.process.filters.base import Filter, FilterResult, StageSettings, TextView
from raycorpus.process.filters.fineweb_text import sentence_count
from raycorpus.process.filters.registry import register
from raycorpus.process.filters.spacy_tokens import rules_for
from raycorpus.process.filters.words import count_words, script_tokens

CITATION_RE = re.compile(r"\[\d*]|\[edit]|\[citation needed]")
END_PUNCTUATION = (".", "?", "!", '"', "'")  # datatrove's (terminal_punctuation: on)
POLICY_SUBSTRINGS = ("terms of use", "privacy policy", "cookie policy", "uses cookies", "use of cookies", "use cookies")


class C4Config(StageSettings):
    terminal_punctuation: bool = Field(False, description="keep only lines ending in terminal punctuation (. ? ! \" ')"
                                       ", not in an ellipsis")
    min_words_per_line: int = Field(3, description="remove lines with fewer words than this")
    drop_javascript_lines: bool = Field(True, description="remove lines that contain \"javascript\"")
    drop_policy_lines: bool = Field(
        True, description="remove lines about terms of use, privacy or cookie policies")
    min_sentences: int = Field(
        5, description="drop the document when fewer sentences than this remain after the line rules")
    drop_lorem_ipsum: bool = Field(True, description="drop the document when a kept line contains \"lorem ipsum\"")
    drop_curly_brace: bool = Field(True, description="drop the document when a kept line contains a curly brace")
    max_word_length: int = Field(
        1000, description="remove lines with a word longer than this many characters (0: no limit)")
    keep_paragraphs: bool = Field(
        False, description="join kept lines by a blank line where the text had one (raycorpus's variant; FineWeb "
        "joins them by one newline, which loses the paragraphs and changes what the FineWeb stage counts)")


@register
class C4Filter(Filter):
    """Removes boilerplate lines; drops pages with placeholder text, code or too few sentences."""

    name = "c4"
    settings = C4Config
    thresholds = frozenset({"min_sentences"})

    def __init__(self, cfg: C4Config, all_signals: bool = False):
        self.cfg = cfg
        self.all_signals = all_signals

    def __call__(self, doc: Document, view: TextView) -> FilterResult:
        cfg, text = self.cfg, view.text
        lower = text.lower()
        # whole-text tests first, so that the per-line loop only checks what can occur
        citations = CITATION_RE.search(text) is not None
        lorem = cfg.drop_lorem_ipsum and "lorem ipsum" in lower
        javascript = cfg.drop_javascript_lines and "javascript" in lower
        curly = cfg.drop_curly_brace and "{" in text
        policy = cfg.drop_policy_lines and any(p in lower for p in POLICY_SUBSTRINGS)
        reason = None
        hits = {"lorem_ipsum": 0, "curly_brace": 0}
        kept: list[tuple[str, bool]] = []  # (line, a blank line before it)
        lines, blank = 0, False
        for raw in text.splitlines():
            line = raw.strip()
            if not line:
                blank = True
                continue
            lines += 1
            if (rule := self._line_rule(line, view.script_aware, citations)) is None:
                continue
            line, line_l = rule
            if lorem and "lorem ipsum" in line_l:
                hits["lorem_ipsum"], reason = 1, reason or "lorem_ipsum"
                if not self.all_signals:
                    return FilterResult(reason=reason, signals={"c4.lorem_ipsum": 1})
            if javascript and "javascript" in line_l:
                continue
            if curly and "{" in line:
                hits["curly_brace"], reason = 1, reason or "curly_brace"
                if not self.all_signals:
                    return FilterResult(reason=reason, signals={"c4.curly_brace": 1})
            if policy and any(p in line_l for p in POLICY_SUBSTRINGS):
                continue
            kept.append((line, blank))
            blank = False
        return self._result(text, kept, lines, reason, hits, view)

    def _line_rule(self, line: str, script_aware: bool, citations: bool) -> tuple[str, str] | None:
        """The line as kept (citations removed) and lower-cased, or None: a line rule removes it."""
        cfg = self.cfg
        words = line.split()
        if cfg.max_word_length > 0 and len(line) > cfg.max_word_length and any(
                len(w) > cfg.max_word_length for w in words):
            return None
        if citations:
            line = CITATION_RE.sub("", line)
        if cfg.terminal_punctuation and (not line.endswith(END_PUNCTUATION) or line.endswith("...")):
            return None
        if (count_words(line) if script_aware else len(words)) < cfg.min_words_per_line:
            return None
        return line, line.lower()

    def _result(self, text: str, kept: list[tuple[str, bool]], lines: int, reason: str | None,
                hits: dict[str, int], view: TextView) -> FilterResult:
        cfg = self.cfg
        if cfg.keep_paragraphs:
            new_text = "".join((("\n\n" if blank else "\n") if i else "") + ln
                               for i, (ln, blank) in enumerate(kept)).strip()
        else:
            new_text = "\n".join(ln for ln, _ in kept).strip()
        signals: dict[str, float | int | str] = {"c4.lines": lines, "c4.lines_removed": lines - len(kept)}
        if self.all_signals or len(kept) < cfg.min_sentences:  # else enough: each kept line holds a sentence
            split = script_tokens if view.script_aware else rules_for(view.lang).tokens
            signals["c4.sentences"] = sentences = sum(sentence_count(split(ln)) for ln, _ in kept)
            reason = reason or sentence_verdict(sentences, cfg)
        if cfg.drop_lorem_ipsum:
            signals["c4.lorem_ipsum"] = hits["lorem_ipsum"]
        if cfg.drop_curly_brace:
            signals["c4.curly_brace"] = hits["curly_brace"]
        return FilterResult(reason=reason, signals=signals, text=new_text if new_text != text else None)

    @classmethod
    def signal_rule(cls, signal: str, settings: C4Config, lang: str | None) -> Callable[[float], bool] | None:
        if signal == "c4.sentences":
            return lambda n: sentence_verdict(int(n), settings) is not None
        on = {"c4.lorem_ipsum": settings.drop_lorem_ipsum, "c4.curly_brace": settings.drop_curly_brace}.get(signal)
        return (lambda hit: hit >= 1) if on else None

    @classmethod
    def decide(cls, signals: Mapping[str, Any], settings: C4Config, recorded: str | None) -> str | None:
        if recorded in PAGE_REASONS:  # lorem ipsum, a curly brace, a raised error: settings that must match
            return recorded
        return sentence_verdict(int(signals["c4.sentences"]), settings)


PAGE_REASONS = ("lorem_ipsum", "curly_brace", "error")


def sentence_verdict(sentences: int, cfg: C4Config) -> str | None:
    """The page rule on the sentences left (the live stage's and ``raycorpus select``'s)."""
    return "too_few_sentences" if sentences < cfg.min_sentences else None
