r"""Script-aware words for the languages written without spaces between words.

``WORD_RE`` (in :mod:`base`) finds runs of letters: in Chinese, Japanese, Thai, Khmer, Lao or
Burmese such a run is a whole clause or line, so word counts, mean word length, stop words and
word n-grams mean nothing there (and Python's ``\w`` does not match the Thai, Lao, Khmer and
Myanmar vowel signs and tone marks, so ``WORD_RE`` also cuts their words at every mark).
:func:`script_tokens` cuts the text with a dependency-free rule:

* Han and Kana: a run is cut into character pairs from its start (an odd run ends with a single
  character). Most Chinese words are one or two characters; FineWeb-2's mean word length bounds
  are 1-5 (cmn_Hani) and 1-6 (jpn_Jpan). Pairs rather than single characters keep the Gopher
  n-gram rules near their meaning: a duplicate 5-gram is then ~10 characters, about five real
  words, where five single characters repeat in any long article (measured on real zh/ja pages:
  the README's quality chain section). A repeated phrase that starts at another parity is cut
  differently, so duplicate n-grams are undercounted rather than overcounted. Stop words of
  these scripts are counted where they occur in the text (``GopherQualityFilter``), not as words.
* Thai, Lao, Khmer, Myanmar: a character cluster is a letter with the combining marks after it
  (vowel signs, tone marks); a word is two clusters (mean 2.4 characters on real Thai sentences;
  FineWeb-2's Thai bounds are 2-10). Their stop words are counted in the text too.

Words of other scripts (Latin words in a Chinese page) are ``WORD_RE``'s words, except that a
combining mark stays with the letter before it (Python's ``\w`` does not match the vowel signs of
Devanagari, Bengali, Tamil and the other Indic scripts, so ``WORD_RE`` cuts Hindi words at every
one of them). The chain uses these tokens for the languages written without spaces and those
whose script has such marks (:func:`~raycorpus.process.filters.multilingual.script_aware`);
Latin, Cyrillic, Greek, Hangul, Armenian and Georgian text keeps ``WORD_RE`` (English unchanged).
"""

from __future__ import annotations

import re
import unicodedata

_HAN_KANA = (
    "\u3005\u3007\u3021-\u3029\u3040-\u309f\u30a0-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003134f"
)
_SEA = "\u0e00-\u0e7f\u0e80-\u0eff\u1780-\u17ff\u19e0-\u19ff\u1000-\u109f\ua9e0-\ua9ff\uaa60-\uaa7f"
# combining marks that belong to the letter before them (Thai, Lao, Khmer, Myanmar)
_MARKS = (
    "\u0e31\u0e34-\u0e3a\u0e47-\u0e4e\u0eb1\u0eb4-\u0ebc\u0ec8-\u0ecd\u17b4-\u17d3\u17dd"
    "\u102b-\u103e\u1056-\u1059\u105e-\u1060\u1062-\u1064\u1067-\u106d\u1071-\u1074\u1082-\u108d\u108f\u109a-\u109d"
)
SPACELESS_RE = re.compile(f"[{_HAN_KANA}{_SEA}]")


def _mark_ranges() -> str:
    """A character class body of every combining mark (Unicode categories Mn, Mc, Me) in the BMP."""
    out, start, prev = [], None, None
    for cp in range(0x300, 0x10000):
        if unicodedata.category(chr(cp)).startswith("M"):
            if start is None:
                start = cp
            prev = cp
        elif start is not None:
            out.append(f"\\u{start:04x}" + (f"-\\u{prev:04x}" if prev != start else ""))
            start = None
    return "".join(out)


# a word of another script: letters and digits, each with the combining marks after it (Python's \w
# does not match the vowel signs of Devanagari, Bengali, Tamil, ...: WORD_RE cuts those words at each)
_OTHER_WORD = rf"(?:[^\W{_HAN_KANA}{_SEA}][{_mark_ranges()}]*)+"
SCRIPT_TOKEN_RE = re.compile(
    f"[{_HAN_KANA}]{{1,2}}|(?:[{_SEA}][{_MARKS}]*){{1,2}}"  # two Han/Kana characters, two Thai/... clusters
    f"|{_OTHER_WORD}(?:['\u2019\\-]{_OTHER_WORD})*"  # a word of another script, as WORD_RE
    rf"|[^\w\s{_SEA}]"  # a punctuation mark or symbol
)

#: language ID labels of the languages written without spaces (these get script-aware words)
SPACELESS_LABELS = frozenset({"zh", "ja", "th", "km", "lo", "my", "wuu", "yue"})


def script_tokens(text: str) -> list[str]:
    """Words and punctuation marks of ``text``, with the spaceless scripts cut as the module doc says."""
    return SCRIPT_TOKEN_RE.findall(text)


def count_words(line: str) -> int:
    """Words of one line: whitespace-separated, or :func:`script_tokens`' words where a spaceless script occurs."""
    if SPACELESS_RE.search(line) is None:
        return len(line.split())
    return sum(1 for t in SCRIPT_TOKEN_RE.findall(line) if t[0].isalnum() or t[-1].isalnum() or len(t) > 1)
