"""What FineWeb's filters count, as datatrove 0.10.1 counts it: the pieces the Gopher, C4 and FineWeb stages share.

* ``TERMINAL_PUNCTUATION`` and ``PUNCTUATION``: datatrove's sets (``datatrove.utils.text``): a line "ends in
  punctuation" when it ends with one of the first; a word "is a symbol" when every character is in the second.
* :func:`duplicates`: the items after the first occurrence of each, and their characters.
* :func:`ngram_chars`: per n, the characters of the commonest n-gram (times its count, words joined by one space)
  and of the n-grams found again in a left-to-right scan that jumps over each repeat (datatrove's
  ``find_top_duplicate`` and ``find_all_duplicate``), computed with hashed arrays.
* :func:`sentence_count`: spaCy's sentencizer on a line's tokens (datatrove's ``split_into_sentences``).

Sets shipped as data (``raycorpus/data/datatrove_text.json``, licences beside it).
"""

from __future__ import annotations

import json
import unicodedata
from collections import Counter
from collections.abc import Collection, Iterator
from functools import cache
from importlib import resources

import numpy as np

_DATA = json.loads((resources.files("raycorpus") / "data" / "datatrove_text.json").read_text(encoding="utf-8"))
TERMINAL_PUNCTUATION: tuple[str, ...] = tuple(_DATA["terminal_punctuation"])
PUNCTUATION: frozenset[str] = frozenset(_DATA["punctuation"])
SENTENCE_ENDS: frozenset[str] = frozenset(_DATA["sentence_ends"])
_K = np.uint64(0x9E3779B97F4A7C15)  # odd multiplier of the polynomial n-gram hash (mod 2**64)


def duplicates(items: list[str]) -> tuple[int, int]:
    """Occurrences after the first of each item, and their characters (datatrove's ``find_duplicates``)."""
    counts = Counter(items)
    if len(counts) == len(items):
        return 0, 0
    return len(items) - len(counts), sum(len(s) * (c - 1) for s, c in counts.items() if c > 1)


def is_symbol(word: str) -> bool:
    """Every character is punctuation (datatrove's ``PUNCTUATION_SET``): not a word for the Gopher counts."""
    return not word.isalnum() and all(c in PUNCTUATION for c in word)


@cache
def is_punct(token: str) -> bool:
    """spaCy's ``is_punct``: every character is in a Unicode punctuation category."""
    return all(unicodedata.category(c).startswith("P") for c in token)


def sentence_count(tokens: list[str]) -> int:
    """Sentences spaCy's sentencizer finds in a line's tokens: one, plus one at each token that is neither
    punctuation nor a sentence end and follows a sentence end since the last such token."""
    if not tokens:
        return 0
    count, seen_end = 1, False
    for token in tokens:
        if token in SENTENCE_ENDS:
            seen_end = True
        elif seen_end and not is_punct(token):
            count += 1
            seen_end = False
    return count


def ngram_chars(words: list[str], top_ns: Collection[int], dup_ns: Collection[int]
                ) -> Iterator[tuple[int, int, int]]:
    """Yield ``(n, top characters, duplicate characters)`` for n = 2 .. max(top_ns, dup_ns) while an n-gram fits.

    Top: characters of the commonest n-gram joined by spaces, times its count (the first such n-gram in the
    text among equally common ones; a text without a repeat still has one). Duplicate: characters (joined
    without spaces) of the n-grams a left-to-right scan meets again, the scan jumping over each repeat. Only
    n-grams whose (n-1)-gram repeats can repeat, so each round hashes only those positions."""
    m = len(words)
    max_n = max([*top_ns, *dup_ns], default=0)
    if m < 2 or max_n < 2:
        return
    lens = np.fromiter(map(len, words), np.int64, m)
    ends = np.concatenate(([0], np.cumsum(lens)))  # characters of words[i:j] = ends[j] - ends[i]
    ids = np.empty(m + max_n, np.uint64)  # padded with distinct values: an n-gram past the end never repeats
    ids[:m] = np.fromiter(map(hash, words), np.int64, m).view(np.uint64)
    ids[m:] = np.arange(max_n, dtype=np.uint64) * _K + _K
    pos, h = np.arange(m - 1), ids[: m - 1]
    for n in range(2, min(max_n, m) + 1):
        h = h * _K + ids[pos + (n - 1)]
        order = np.argsort(h, kind="stable")
        s = h[order]
        same = s[1:] == s[:-1]
        repeated = np.zeros(s.size, bool)
        repeated[1:] = same
        repeated[:-1] |= same
        keep = np.sort(order[repeated])  # positions whose n-gram occurs again, in text order
        top = dup = 0
        if n in top_ns:
            top = _top_chars(n, pos, h, keep, ends)
        if n in dup_ns and keep.size:
            dup = _scan_chars(n, pos[keep], h[keep], ends, m)
        yield n, top, dup
        pos, h = pos[keep], h[keep]
        pos, h = pos[pos <= m - n - 1], h[pos <= m - n - 1]  # room for an (n+1)-gram


def _top_chars(n: int, pos: np.ndarray, h: np.ndarray, keep: np.ndarray, ends: np.ndarray) -> int:
    """Characters of the commonest n-gram times its count; without a repeat, the text's first n-gram."""
    if not keep.size:
        return int(ends[n] - ends[0]) + n - 1
    _, first, counts = np.unique(h[keep], return_index=True, return_counts=True)
    most = counts.max()
    start = int(pos[keep][first[counts == most].min()])  # among the commonest, the one that comes first
    return (int(ends[start + n] - ends[start]) + n - 1) * int(most)


def _scan_chars(n: int, starts: np.ndarray, hashes: np.ndarray, ends: np.ndarray, m: int) -> int:
    """datatrove's ``find_all_duplicate`` over the positions whose n-gram repeats (the others never count)."""
    seen: set[int] = set()
    total, at = 0, 0
    for p, g in zip(starts.tolist(), hashes.tolist(), strict=True):
        if p < at or p > m - n:
            continue
        if g in seen:
            total += int(ends[p + n] - ends[p])
            at = p + n
        else:
            seen.add(g)
            at = p + 1
    return total
