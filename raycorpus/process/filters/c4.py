"""C4's line and page rules (Raffel et al. 2020), as datatrove's ``C4QualityFilter`` applies them.

A modifying stage: lines that fail a line rule are removed, and the document is dropped when
a kept line contains "lorem ipsum" or a curly brace, or fewer than ``min_sentences`` sentences
remain. As in datatrove (and TensorFlow Datasets' C4), the rules run per line in this order:
too long word (line removed), fewer than ``min_words_per_line`` words, Wikipedia citation
markers removed, no terminal punctuation, "lorem ipsum" (page dropped), "javascript", "{"
(page dropped), policy boilerplate. So a "{" or "lorem ipsum" on a line already removed
(e.g. a two-word line) does not drop the page.

Deliberate differences from datatrove:

* Sentences are counted as ". ", "! ", "? " (or with a closing double quote before the space)
  plus one per kept line, instead of with NLTK's Punkt (much slower; it knows abbreviations).
* Kept lines are joined by one newline, or by a blank line where the original had one or more
  blank lines between them (datatrove joins everything by single newlines, losing paragraphs).
* Terminal punctuation also accepts typographic closing quotes and CJK full stops.
* In a language written without spaces (a script-aware view, ``filters.language_defaults``), a
  line's words are :func:`~raycorpus.process.filters.words.count_words`' and a CJK full stop
  inside a line is a sentence break (FineWeb-2 itself runs no C4 rules).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import Field

from raycorpus.process.document import Document
from raycorpus.process.filters.base import Filter, FilterResult, StageSettings, TextView
from raycorpus.process.filters.registry import register
from raycorpus.process.filters.words import count_words

CITATION_RE = re.compile(r"\[\d*]|\[edit]|\[citation needed]")
END_PUNCTUATION = (".", "?", "!", '"', "'", "\u201d", "\u2019", "。", "\uff01", "\uff1f")
POLICY_SUBSTRINGS = ("terms of use", "privacy policy", "cookie policy", "uses cookies", "use of cookies", "use cookies")
# inside a (stripped) line, an end mark and a space (maybe after a closing double quote) start a sentence
SENTENCE_BREAKS = (". ", "! ", "? ")
QUOTED_BREAKS = {f"{close} ": tuple(f"{mark}{close} " for mark in ".!?") for close in ('"', "\u201d")}


class C4Config(StageSettings):
    terminal_punctuation: bool = Field(False, description="keep only lines ending in terminal punctuation")
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


@register
class C4Filter(Filter):
    """Removes boilerplate lines; drops pages with placeholder text, code or too few sentences."""

    name = "c4"
    settings = C4Config
    thresholds = frozenset({"min_sentences"})

    def __init__(self, cfg: C4Config, all_signals: bool = False):
        self.cfg = cfg
        self.all_signals = all_signals
        # (?<!\S): start only at the start of a run, so the search stays linear in the line
        self._long_word = re.compile(rf"(?<!\S)\S{{{cfg.max_word_length + 1},}}") if cfg.max_word_length > 0 else None

    def __call__(self, doc: Document, view: TextView) -> FilterResult:
        cfg = self.cfg
        text = view.text
        lower = text.lower()
        # whole-text tests first, so that the per-line loop only checks what can occur
        citations = CITATION_RE.search(text) is not None
        lorem = cfg.drop_lorem_ipsum and "lorem ipsum" in lower
        javascript = cfg.drop_javascript_lines and "javascript" in lower
        curly = cfg.drop_curly_brace and "{" in text
        policy = cfg.drop_policy_lines and any(p in lower for p in POLICY_SUBSTRINGS)
        lowered = lorem or javascript or policy
        min_words = cfg.min_words_per_line
        long_word, max_chars = self._long_word, cfg.max_word_length

        reason = None
        page_hits = {"lorem_ipsum": 0, "curly_brace": 0}
        out: list[str] = []
        lines = kept = 0
        blank = False  # a blank line since the last kept line
        for line in text.split("\n"):
            line = line.strip()
            if not line:
                blank = True
                continue
            lines += 1
            if long_word is not None and len(line) > max_chars and long_word.search(line):
                continue
            if min_words > 0 and (count_words(line) if view.script_aware
                                  else len(line.split(None, min_words - 1))) < min_words:
                continue
            if citations:
                line = CITATION_RE.sub("", line).rstrip()
                if not line:
                    continue
            if cfg.terminal_punctuation and (not line.endswith(END_PUNCTUATION) or line.endswith("...")):
                continue
            if lowered:
                line_l = line.lower()
                if lorem and "lorem ipsum" in line_l:
                    page_hits["lorem_ipsum"] = 1
                    reason = reason or "lorem_ipsum"
                    if not self.all_signals:
                        return FilterResult(reason=reason, signals={"c4.lorem_ipsum": 1})
                if javascript and "javascript" in line_l:
                    continue
            if curly and "{" in line:
                page_hits["curly_brace"] = 1
                reason = reason or "curly_brace"
                if not self.all_signals:
                    return FilterResult(reason=reason, signals={"c4.curly_brace": 1})
            if policy and any(p in line_l for p in POLICY_SUBSTRINGS):
                continue
            if kept:
                out.append("\n\n" if blank else "\n")
            out.append(line)
            kept += 1
            blank = False

        new_text = "".join(out)
        signals: dict[str, float | int | str] = {"c4.lines": lines, "c4.lines_removed": lines - kept}
        if self.all_signals or kept < cfg.min_sentences:  # else it has enough: a kept line is a sentence
            breaks = count_breaks(new_text) + (count_spaceless_breaks(new_text) if view.script_aware else 0)
            signals["c4.sentences"] = sentences = kept + breaks
            reason = reason or sentence_verdict(sentences, cfg)
        if cfg.drop_lorem_ipsum:
            signals["c4.lorem_ipsum"] = page_hits["lorem_ipsum"]
        if cfg.drop_curly_brace:
            signals["c4.curly_brace"] = page_hits["curly_brace"]
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


# CJK full stops end a sentence without a space after them; one at a line's end is that line's sentence
SPACELESS_BREAK_RE = re.compile("[\u3002\uff01\uff1f](?=[^\\n\u3002\uff01\uff1f\u300d\u300f\uff09)])")


def count_spaceless_breaks(text: str) -> int:
    """Sentence breaks inside the lines of a text written without spaces: a CJK full stop,
    exclamation or question mark with more of the line after it."""
    return len(SPACELESS_BREAK_RE.findall(text))


def count_breaks(text: str) -> int:
    """Sentence breaks inside the lines of ``text`` (str.count is much faster than a regex)."""
    n = sum(map(text.count, SENTENCE_BREAKS))
    for close, breaks in QUOTED_BREAKS.items():
        if close in text:
            n += sum(map(text.count, breaks))
    return n
