"""Named, individually switchable extraction rules (beyond resiliparse's own main-content pass).

Each rule is general web boilerplate knowledge, not a fit to test pages:

- ``trim_head``: the run of short lines before the first paragraph-like line (menus, breadcrumbs,
  dates, "5 min read") goes, but the last title-like one (two words or more, mostly letters, no
  ``|``: not a date, byline row or crumb) stays.
- ``fallback``: when main-content extraction keeps less than ``fallback_chars`` characters (the
  heuristics missed the article: one-paragraph layouts, ``<br>``-only text), the whole page's text is
  taken from its first to its last paragraph-like line instead (trafilatura's baseline fallback does
  the like).
- ``drop_calls_to_action``: in the second half of the text, short lines asking the reader to
  subscribe, sign up, log in, follow, share, join a channel, download an app, enter an e-mail address or
  support the site (newsletter boxes, social prompts, paywall and donation notes).

Measured and left out (no gain on either reference set, or a loss on one, and slower): class / id
vocabularies of trafilatura's ``OVERALL_DISCARD_XPATH`` as extra ``skip_selectors`` (navigation,
share bars, ads, teasers, hidden blocks: resiliparse's own class regexes already catch them), and
removing repeated short lines.
"""

from __future__ import annotations

import re

# the revision of the extraction rules' vocabularies (regexes, class names, here and in extract / extract_dom):
# raised whenever a change to them changes the text extracted under the same config. An output records it, and a
# resume under another revision is refused (its documents would come from two extractors).
# 2: 2026-12-05 (story / rich-text article bodies, disclosures, captions, post meta lines ...)
RULES_REVISION = 2

# the only characters on which ``re.IGNORECASE`` and ``str.lower`` disagree for the letters the rules' patterns use
# (capital I with dot, dotless i, long s: checked over all of Unicode in the tests)
_FOLD_EXCEPTIONS = ("\u0130", "\u0131", "\u017f")


def exact_lower(text: str) -> str | None:
    """``text.lower()`` where a lower-case pattern matched case-sensitively in it finds what it finds with
    ``re.IGNORECASE`` in ``text`` (line for line and character for character); None where it would not."""
    # three substring tests (none at all in a text of 1-byte characters): ~20x faster than a regex class search
    capital_i, dotless_i, long_s = _FOLD_EXCEPTIONS
    return None if capital_i in text or dotless_i in text or long_s in text else text.lower()


class Caseless:
    """A case-insensitive regex of lower-case letters, compiled twice: case-sensitively for the text from
    :func:`exact_lower` (2-3x faster: ``re`` skips case folding and tests each branch's first character) and with
    ``re.IGNORECASE`` for any other text."""

    def __init__(self, pattern: str, flags: int = 0):
        self.lower = re.compile(pattern, flags)
        self.any = re.compile(pattern, flags | re.IGNORECASE)

    def on(self, lowered: bool) -> re.Pattern[str]:
        """The pattern for text that is (``lowered``) or is not the output of :func:`exact_lower`."""
        return self.lower if lowered else self.any

    def search(self, text: str) -> re.Match[str] | None:
        """``re.IGNORECASE`` search in ``text`` (on its lower case where that is exact); for many lines of one text,
        lower the text once and use :meth:`on`."""
        lower = exact_lower(text)
        return self.any.search(text) if lower is None else self.lower.search(lower)


_WIDE = re.compile(r"[\u1100-\u115f\u2e80-\ua4cf\uac00-\ud7a3\uf900-\ufaff\uff00-\uff60]")
_SENTENCE_END = re.compile(r"[.!?:;\"“”»«)\]。\uff01\uff1f」』]\s*$")


def is_paragraph(line: str) -> bool:
    """A paragraph-like line: long, or medium and ending like a sentence (CJK characters count double)."""
    n = len(line) + len(_WIDE.findall(line))
    return n >= 100 or (n >= 30 and _SENTENCE_END.search(line) is not None)


def trim_head(text: str, keep: int = 1) -> str:
    """Drop the short lines before the first paragraph-like line, but the last ``keep`` title-like ones (dates,
    bylines and breadcrumbs are no title); a text without a paragraph-like line is left as it is."""
    lines = text.split("\n")
    i = next((n for n, line in enumerate(lines) if is_paragraph(line.strip())), None)
    if i is None:
        return text
    start, seen = i, 0
    while start > 0 and seen < keep:  # back to the ``keep``-th title-like line before it
        start -= 1
        seen += _title_like(lines[start])
    if seen < keep:
        return "\n".join(lines[i:])
    return "\n".join([*(line for line in lines[start:i] if not line.strip() or _title_like(line)), *lines[i:]])


_LETTER = re.compile(r"[^\W\d_]")


def _title_like(line: str) -> bool:
    """A line that can be a title: two words or more, mostly letters, no ``|`` separators (not a date,
    time, byline row or breadcrumb)."""
    s = line.strip()
    return len(s.split()) >= 2 and "|" not in s and len(_LETTER.findall(s)) >= 0.6 * len(s.replace(" ", ""))


def paragraph_span(text: str) -> str:
    """The text from its first to its last paragraph-like line ("" when there is none)."""
    lines = text.split("\n")
    idx = [i for i, line in enumerate(lines) if is_paragraph(line.strip())]
    return "\n".join(lines[idx[0] : idx[-1] + 1]) if idx else ""


_CALL_TO_ACTION = re.compile(
    r"""newsletter|\b(?:subscribe|subscription|sign\x20?up|log\x20?in|register|abonnieren|abonnez|abónate|suscr[ií]b
    |anmelden|einloggen|eingeloggt|registriert?)\b
    |\b(?:follow|folge|folgen\ssie)\s(?:us|uns|me|mir)\b|síguenos|siguenos|suivez-nous|segue-nos|seguici
    |\b(?:us|uns|nous|nos|me|mir)\s(?:on|auf|en|in|sur|no|su)\s(?:facebook|twitter|instagram|telegram|whatsapp|linkedin|youtube|tiktok)\b
    |\b(?:share|teilen|partager|compartir|compartilhe|condividi)\b[^?!]{0,40}[?!]
    |\b(?:canal|kanal|channel)\b[^.!?]{0,25}\b(?:youtube|telegram|whatsapp)\b
    |\b(?:youtube|telegram|whatsapp)[-\s]?(?:canal|kanal|channel)\b
    |\bdownload\b[^.!?]{0,60}\bapps?\b|\b(?:enter|gib|geben\ssie)\s(?:your|deine|ihre)\s(?:e-?mail|email)
    |\bif\syou\s(?:enjoyed|liked)\s(?:reading\s)?this\b|\bgefällt\s(?:dir|ihnen)\s(?:unser|dieser|der|das)\b
    |\bunterstütze\b|\bsupport\s(?:us|our\s(?:work|journalism))\b""",
    re.IGNORECASE | re.VERBOSE,
)


def trie_pattern(words: list[str]) -> str:
    """One regex alternation of ``words`` factored by common prefixes (Python's ``re`` tries every branch of
    a flat alternation at every position; a factored one fails on the first character)."""
    trie: dict = {}
    for word in words:
        node = trie
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}

    def emit(node: dict) -> str:
        branches = [re.escape(ch) + emit(child) if ch else "" for ch, child in sorted(node.items())]
        if len(branches) == 1:
            return branches[0]
        optional = "" in branches
        alt = "(?:" + "|".join(b for b in branches if b) + ")"
        return alt + "?" if optional else alt

    return emit(trie)


# a cheap test first: a line that asks for something holds one of these (lower-cased; no word spans a line)
_CTA_WORDS = re.compile(trie_pattern(
    ["newsletter", "subscri", "sign up", "signup", "log in", "login", "regist", "abonn", "abón", "suscr", "anmeld",
     "einlogg", "eingelogg", "follow", "folge", "síguenos", "siguenos", "suivez", "segue-nos", "seguici", "facebook",
     "twitter", "instagram", "telegram", "whatsapp", "linkedin", "youtube", "tiktok", "share", "teilen", "partager",
     "compart", "condivid", "download", "enter your", "gib deine", "geben sie ihre", "you enjoyed", "you liked",
     "gefällt dir", "gefällt ihnen", "unterstütze", "support us", "support our"]))


def drop_calls_to_action(text: str, after: float = 0.5, max_len: int = 300) -> str:
    """Drop lines shorter than ``max_len`` past ``after`` of the text that ask the reader to subscribe,
    sign up, log in, follow, share, join a channel, download an app, enter an e-mail address or support the site."""
    cut = text.rfind("\n", 0, int(after * len(text))) + 1  # the tail: from the line holding that point on
    tail = text[cut:]
    lines = tail.split("\n")
    if not _CTA_WORDS.search("\n".join(line for line in lines if len(line) < max_len).lower()):
        return text  # (most texts: one search, over the short lines only)
    kept = [line for line in lines
            if len(line) >= max_len or not _CTA_WORDS.search(line.lower()) or not _CALL_TO_ACTION.search(line)]
    return text[:cut] + "\n".join(kept)
