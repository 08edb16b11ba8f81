"""English words as datatrove's FineWeb filters see them: spaCy's rule-based English tokenizer, without spaCy.

datatrove 0.10.1 splits a text into words with ``spacy.blank("en")`` (its English word tokenizer), and FineWeb's
thresholds were set on those words: punctuation marks are tokens of their own, ``don't`` is ``do`` + ``n't``,
``U.S.`` and URLs stay whole, a hyphen between letters is a token. This module reproduces that tokenizer's
algorithm (whitespace, then prefixes, suffixes and special cases, URLs, infixes, then the special cases that
span affixes) on spaCy's own rules, shipped as data (``raycorpus/data/spacy_en_tokenizer.json``, MIT licence
beside it). On the 1,111 pages of ``../shared`` every token list equals spaCy's (``tests/process/filters``).

Cost: spaCy's tokenizer takes ~30x ``WORD_RE``'s time. Here a chunk between spaces is tokenized once and
cached (web text repeats its chunks), and a chunk of letters alone is one token without any rule: the words
of a page cost about what ``WORD_RE`` costs once the cache is warm (``docs/benchmarks.md``).
"""

from __future__ import annotations

import json
import re
from importlib import resources
from itertools import chain

_DATA = json.loads((resources.files("raycorpus") / "data" / "spacy_en_tokenizer.json").read_text(encoding="utf-8"))
_PREFIX = re.compile(_DATA["prefix"])
_SUFFIX = re.compile(_DATA["suffix"])
_INFIX = re.compile(_DATA["infix"])
_URL = re.compile(_DATA["url"])
SPECIALS: dict[str, tuple[str, ...]] = {k: tuple(v) for k, v in _DATA["specials"].items()}
_SUFFIX_ALNUM_ENDS = _DATA.get("suffix_alnum_ends")  # the letters and digits a suffix can end with
_ALNUM_PREFIXES = ("US$", "C$", "A$")  # the only prefixes that start with a letter or digit
_SUFFIX_TAIL = 16  # a suffix is searched for in the last characters first (see _suffix_len)
CACHE_SIZE = 200_000  # chunks remembered per process (then the cache starts again)


def _prefix_len(s: str) -> int:
    if s[0].isalnum() and not s.startswith(_ALNUM_PREFIXES):
        return 0
    m = _PREFIX.match(s)
    return m.end() if m else 0


def _suffix_len(s: str) -> int:
    """The length of the suffix spaCy's ``suffix_search`` finds (its leftmost match ending the string). Searched
    from near the end first: a match that starts before that point must reach it."""
    if not s or (_SUFFIX_ALNUM_ENDS is not None and s[-1].isalnum() and s[-1] not in _SUFFIX_ALNUM_ENDS):
        return 0
    tail = max(0, len(s) - _SUFFIX_TAIL)
    m = _SUFFIX.search(s, tail)
    if m is not None and tail and m.start() == tail:
        m = _SUFFIX.search(s)
    return m.end() - m.start() if m else 0


def _split_affixes(s: str, specials: dict) -> tuple[list[str], str, list[str]]:
    """spaCy's ``Tokenizer._split_affixes``: (prefixes, what is left, suffixes)."""
    prefixes: list[str] = []
    suffixes: list[str] = []
    last = 0
    while s and len(s) != last:
        if s in specials:
            break
        last = len(s)
        pre = _prefix_len(s)
        if pre and s[pre:] in specials:
            prefixes.append(s[:pre])
            return prefixes, s[pre:], suffixes
        suf = _suffix_len(s[pre:])
        if suf and s[:-suf] in specials:
            suffixes.append(s[-suf:])
            return prefixes, s[:-suf], suffixes
        if pre and suf and pre + suf <= len(s):
            prefixes.append(s[:pre])
            suffixes.append(s[-suf:])
            s = s[pre:-suf]
        elif pre:
            prefixes.append(s[:pre])
            s = s[pre:]
        elif suf:
            suffixes.append(s[-suf:])
            s = s[:-suf]
    return prefixes, s, suffixes


def _infixes(s: str) -> list[str]:
    """spaCy's ``_attach_tokens`` on what the affixes left: the string cut at its infixes."""
    if s.isalnum() or _URL.match(s):
        return [s]
    out, start = [], 0
    for m in _INFIX.finditer(s):
        a, b = m.start(), m.end()
        if a == 0:
            continue
        if a != start:
            out.append(s[start:a])
        if a != b:
            out.append(s[a:b])
        start = b
    if s[start:]:
        out.append(s[start:])
    return out


def chunk_tokens(chunk: str, specials: dict = SPECIALS) -> list[str]:
    """The tokens of a string without whitespace, before the special cases that span affixes."""
    prefixes, rest, suffixes = _split_affixes(chunk, specials)
    middle = list(specials[rest]) if rest in specials else _infixes(rest) if rest else []
    return prefixes + middle + suffixes[::-1]


def _affixed_specials() -> dict[tuple[str, ...], tuple[str, ...]]:
    """spaCy's final special-case pass: a special case that holds an affix (``:)``, ``z.B.``) is matched on the
    tokens the affix rules made of it."""
    out = {}
    for key, pieces in SPECIALS.items():
        cut = tuple(chunk_tokens(key, {}))
        if len(cut) > 1:
            out[cut] = pieces
    return out


_AFFIXED = _affixed_specials()
_LONGEST = max(map(len, _AFFIXED))


def _join_specials(tokens: list[str]) -> tuple[str, ...]:
    """Replace runs of tokens that spell an affixed special case by its tokens (longest first)."""
    if len(tokens) < 2:
        return tuple(tokens)
    out: list[str] = []
    i, n = 0, len(tokens)
    while i < n:
        for length in range(min(_LONGEST, n - i), 1, -1):
            hit = _AFFIXED.get(tuple(tokens[i:i + length]))
            if hit is not None:
                out.extend(hit)
                i += length
                break
        else:
            out.append(tokens[i])
            i += 1
    return tuple(out)


_LAST_MARKS = frozenset(',;!?)]}":')  # after letters, always a suffix of its own (tested on every shared page)
_FIRST_MARKS = frozenset('(["{')  # before letters, always a prefix of its own


def _common_shape(chunk: str) -> tuple[str, ...] | None:
    """The tokens of a chunk that is a word with one punctuation mark after or before it (most chunks that are
    not plain words), without running the rules; None for any other chunk."""
    if chunk in SPECIALS or len(chunk) < 2:
        return None
    word, last = chunk[:-1], chunk[-1]
    if word.isalpha() and (last in _LAST_MARKS or (last == "." and word[-1].islower())):
        return (*SPECIALS.get(word, (word,)), last)
    first, word = chunk[0], chunk[1:]
    if first in _FIRST_MARKS and word.isalpha():
        return (first, *SPECIALS.get(word, (word,)))
    return None


class _Chunks(dict):
    """chunk -> its tokens, computed on first sight."""

    def __missing__(self, chunk: str) -> tuple[str, ...]:
        if len(self) >= CACHE_SIZE:
            self.clear()
        if chunk.isalpha() and chunk not in SPECIALS:
            tokens: tuple[str, ...] = (chunk,)
        else:
            common = _common_shape(chunk)
            tokens = _join_specials(list(common) if common is not None else chunk_tokens(chunk))
        self[chunk] = tokens
        return tokens


_CHUNKS = _Chunks()


def english_tokens(text: str) -> list[str]:
    """The non-whitespace tokens ``spacy.blank("en")`` makes of ``text`` (datatrove's ``split_into_words``)."""
    return list(chain.from_iterable(map(_CHUNKS.__getitem__, text.split())))


def dump(path: str) -> None:
    """Write the data file from the installed spaCy (run when upgrading the reference)."""
    import spacy

    tok = spacy.blank("en").tokenizer
    data = {
        "source": f"spaCy {spacy.__version__} (MIT licence, spacy_LICENSE.txt): spacy.blank('en').tokenizer's prefix, "
                  "suffix and infix patterns, URL pattern and special cases, as datatrove 0.10.1's English word "
                  "tokenizer uses them; written by raycorpus.process.filters.spacy_tokens.dump",
        "prefix": tok.prefix_search.__self__.pattern,
        "suffix": tok.suffix_search.__self__.pattern,
        "infix": tok.infix_finditer.__self__.pattern,
        "url": tok.url_match.__self__.pattern,
        "specials": {k: [p[65] for p in v] for k, v in sorted(tok.rules.items()) if not k.isspace()},
    }
    from spacy.lang.char_classes import _currency, _units

    suffix = re.compile(data["suffix"])  # a suffix ending in a letter or digit: a unit or currency after a
    ends = {w[-1] for w in f"{_units} {_currency}".split() if w[-1].isalnum()}  # number, or 's (checked)
    ends |= {c for c in map(chr, range(0x110000)) if c.isalnum() and any(suffix.search(x + c) for x in
                                                                          ("0", "'", "\u2019", "a'", "a\u2019", "°"))}
    data["suffix_alnum_ends"] = "".join(sorted(ends))
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False, indent=0, sort_keys=True)
