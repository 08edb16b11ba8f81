"""Words as datatrove's FineWeb filters see them: spaCy's rule-based tokenizers, without spaCy.

datatrove 0.10.1 splits a text into words with ``spacy.blank(lang)`` (English for FineWeb; per language for
FineWeb-2, where datatrove assigns spaCy), and FineWeb's thresholds were set on those words: punctuation marks
are tokens of their own, ``don't`` is ``do`` + ``n't``, ``U.S.`` and URLs stay whole, a hyphen between
letters is a token. :class:`SpacyRules` reproduces that tokenizer's algorithm (whitespace, then the token
match, prefixes, suffixes and special cases, URLs, infixes, then the special cases that span affixes) on
spaCy's own rules, shipped as data (``raycorpus/data/spacy/<code>.json.gz``, MIT licence in
``raycorpus/data/spacy_LICENSE.txt``); ``raycorpus/data/spacy/languages.json`` maps a language label to the
spaCy rules datatrove uses for it. On the pages of ``../shared`` every token list equals spaCy's
(``tests/process/test_spacy_tokens.py``).

Cost: spaCy's tokenizer takes ~30x ``WORD_RE``'s time. Here a chunk between spaces is tokenized once and
cached (web text repeats its chunks), and a chunk of letters alone is one token without any rule: the words
of a page cost about what ``WORD_RE`` costs once the cache is warm (``docs/benchmarks.md``).
"""

from __future__ import annotations

import gzip
import json
import re
from functools import cache
from importlib import resources
from itertools import chain

_DIR = resources.files("raycorpus") / "data" / "spacy"
_SUFFIX_TAIL = 16  # a suffix is searched for in the last characters first (see _suffix_len)
CACHE_SIZE = 200_000  # chunks remembered per language and process (then the cache starts again)
_LAST_MARKS = frozenset(',;!?)]}":')  # after letters, a suffix of its own in every shipped language (checked)
_FIRST_MARKS = frozenset('(["{')  # before letters, a prefix of its own


class SpacyRules:
    """One language's tokenizer rules and its chunk cache."""

    def __init__(self, data: dict):
        self.code = data["code"]
        self.prefix = re.compile(data["prefix"])
        self.suffix = re.compile(data["suffix"])
        self.infix = re.compile(data["infix"])
        self.url = re.compile(data["url"]) if data.get("url") else None
        self.token_match = re.compile(data["token_match"]) if data.get("token_match") else None
        self.specials: dict[str, tuple[str, ...]] = {k: tuple(v) for k, v in data["specials"].items()}
        self.alnum_prefix_firsts = frozenset(data["prefix_alnum_firsts"])  # letters or digits a prefix starts with
        self.suffix_alnum_ends = frozenset(data["suffix_alnum_ends"])  # letters or digits a suffix ends with
        self.letters_are_one_token = data["letters_are_one_token"]  # no rule cuts a chunk of letters alone
        self.common_shapes = data.get("common_shapes", False)  # _common_shape's rule holds for this language
        self.dot_after = frozenset(data.get("dot_split_after", ""))  # letters after which "." is a suffix
        self.affixed = self._affixed_specials()
        self.longest = max(map(len, self.affixed), default=0)
        self.chunks = _Chunks(self)

    def tokens(self, text: str) -> list[str]:
        """The non-whitespace tokens ``spacy.blank(code)`` makes of ``text`` (datatrove's ``split_into_words``)."""
        return list(chain.from_iterable(map(self.chunks.__getitem__, text.split())))

    def _chunk(self, chunk: str) -> tuple[str, ...]:
        if self.letters_are_one_token and chunk.isalpha() and chunk not in self.specials:
            return (chunk,)
        common = self._common_shape(chunk)
        return self._join_specials(list(common) if common is not None else self.chunk_tokens(chunk))

    def _token_match(self, s: str) -> bool:
        return self.token_match is not None and self.token_match.match(s) is not None

    def _common_shape(self, chunk: str) -> tuple[str, ...] | None:
        """The tokens of a word with one punctuation mark after or before it (most chunks that are not plain
        words), without running the rules; None for any other chunk."""
        if not self.common_shapes or chunk in self.specials or len(chunk) < 2:
            return None
        word, last = chunk[:-1], chunk[-1]
        if word.isalpha() and (last in _LAST_MARKS or (last == "." and word[-1] in self.dot_after)):
            return (*self.specials.get(word, (word,)), last)
        first, word = chunk[0], chunk[1:]
        if first in _FIRST_MARKS and word.isalpha():
            return (first, *self.specials.get(word, (word,)))
        return None

    def _prefix_len(self, s: str) -> int:
        if s[0].isalnum() and s[0] not in self.alnum_prefix_firsts:
            return 0
        m = self.prefix.match(s)
        return m.end() if m else 0

    def _suffix_len(self, s: str) -> int:
        """The length of the suffix spaCy's ``suffix_search`` finds (its leftmost match ending the string).
        Searched from near the end first: a match that starts before that point must reach it."""
        if not s or (s[-1].isalnum() and s[-1] not in self.suffix_alnum_ends):
            return 0
        tail = max(0, len(s) - _SUFFIX_TAIL)
        m = self.suffix.search(s, tail)
        if m is not None and tail and m.start() == tail:
            m = self.suffix.search(s)
        return m.end() - m.start() if m else 0

    def _split_affixes(self, s: str, specials: dict) -> tuple[list[str], str, list[str]]:
        """spaCy's ``Tokenizer._split_affixes``: (prefixes, what is left, suffixes)."""
        prefixes: list[str] = []
        suffixes: list[str] = []
        last = 0
        while s and len(s) != last:
            if self._token_match(s) or s in specials:
                break
            last = len(s)
            pre = self._prefix_len(s)
            if pre and s[pre:] in specials:
                prefixes.append(s[:pre])
                return prefixes, s[pre:], suffixes
            suf = self._suffix_len(s[pre:])
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

    def _infixes(self, s: str) -> list[str]:
        """spaCy's ``_attach_tokens`` on what the affixes left: the string cut at its infixes."""
        if s.isalnum() or self._token_match(s) or (self.url is not None and self.url.match(s)):
            return [s]
        out, start = [], 0
        for m in self.infix.finditer(s):
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

    def chunk_tokens(self, chunk: str, specials: dict | None = None) -> list[str]:
        """The tokens of a string without whitespace, before the special cases that span affixes."""
        specials = self.specials if specials is None else specials
        prefixes, rest, suffixes = self._split_affixes(chunk, specials)
        middle = list(specials[rest]) if rest in specials else self._infixes(rest) if rest else []
        return prefixes + middle + suffixes[::-1]

    def _affixed_specials(self) -> dict[tuple[str, ...], tuple[str, ...]]:
        """spaCy's final special-case pass: a special case that holds an affix (``:)``, ``z.B.``) is matched on
        the tokens the affix rules made of it."""
        out = {}
        for key, pieces in self.specials.items():
            cut = tuple(self.chunk_tokens(key, {}))
            if len(cut) > 1:
                out[cut] = pieces
        return out

    def _join_specials(self, tokens: list[str]) -> tuple[str, ...]:
        """Replace runs of tokens that spell an affixed special case by its tokens (longest first)."""
        if len(tokens) < 2 or not self.longest:
            return tuple(tokens)
        out: list[str] = []
        i, n = 0, len(tokens)
        while i < n:
            for length in range(min(self.longest, n - i), 1, -1):
                hit = self.affixed.get(tuple(tokens[i:i + length]))
                if hit is not None:
                    out.extend(hit)
                    i += length
                    break
            else:
                out.append(tokens[i])
                i += 1
        return tuple(out)


class _Chunks(dict):
    """chunk -> its tokens, computed on first sight (``map(cache.__getitem__, chunks)`` stays in C on a hit)."""

    def __init__(self, rules: SpacyRules):
        super().__init__()
        self.rules = rules

    def __missing__(self, chunk: str) -> tuple[str, ...]:
        if len(self) >= CACHE_SIZE:
            self.clear()
        tokens = self[chunk] = self.rules._chunk(chunk)
        return tokens


@cache
def _languages() -> dict[str, str]:
    return json.loads((_DIR / "languages.json").read_text(encoding="utf-8"))


@cache
def rules(code: str) -> SpacyRules:
    """The rules of spaCy language ``code`` (``en``, ``de``, ``xx``, ...), loaded once per process."""
    return SpacyRules(json.loads(gzip.decompress((_DIR / f"{code}.json.gz").read_bytes())))


def rules_for(lang: str | None) -> SpacyRules:
    """The rules datatrove's tokenizer uses for documents labelled ``lang`` (English for a language datatrove
    tokenizes otherwise, or an unknown one)."""
    return rules(_languages().get(lang or "en", "en"))


def english_tokens(text: str) -> list[str]:
    """``spacy.blank("en")``'s tokens of ``text``: datatrove's English words."""
    return rules("en").tokens(text)
