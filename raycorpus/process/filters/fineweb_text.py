"""What FineWeb's filters count, as datatrove 0.10.1 counts it: the pieces the Gopher, C4 and FineWeb stages share.

* ``TERMINAL_PUNCTUATION`` and ``PUNCTUATION``: datatrove's sets (``datatrove.utils.text``): a line "ends in
  punctuation" when it ends with one of the first; a word "is a symbol" when every character is in the second.
* :func:`duplicates`: the items after the first occurrence of each, and their characters.
* :func:`ngram_chars`: per n, the characters of the commonest n-gram (times its count, words joined by one space)
  and of the n-grams found again in a left-to-right scan that jumps over each repeat (datatrove's
  ``find_top_duplicate`` and ``find_all_duplicate``), computed exactly with sorted arrays of word ids.
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
    without spaces) of the n-grams a left-to-right scan meets again, the scan jumping over each repeat.

    Exact, no hashing: a word's id is the position of its first occurrence (one dict pass), and an n-gram's group
    is a dense number for the pair (its (n-1)-gram's group, its last word's id), found by one sort per n. An
    n-gram at p can repeat only if the (n-1)-grams at p and p + 1 both do, so each round sorts only those
    positions (on web pages, a sixth of the words at n = 3 and fewer after)."""
    m = len(words)
    max_n = max([*top_ns, *dup_ns], default=0)
    if m < 2 or max_n < 2:
        return
    vocab: dict[str, int] = {}
    ids = np.fromiter(map(vocab.setdefault, words, range(m)), np.int64, m)  # a word's first position
    last, n = min(max_n, m), 2
    # candidates for n: the positions p whose (n-1)-grams at p and p + 1 both repeat, with the group of p's
    repeats = np.bincount(ids, minlength=m)[ids] > 1
    pos = np.flatnonzero(repeats[:-1] & repeats[1:])
    group = ids[pos]
    while n <= last and pos.size:
        key = group * m + ids[pos + (n - 1)]  # < (m + 1) * m: exact in int64 for any text that fits in memory
        order = key.argsort()
        s = key[order]
        first = np.empty(s.size, bool)  # the first of its n-gram in sorted order
        first[0] = True
        np.not_equal(s[1:], s[:-1], out=first[1:])
        groups = np.cumsum(first)  # a dense number per distinct n-gram, in sorted order
        repeated = ~first
        repeated[:-1] |= repeated[1:]
        top = _top_chars(words, n, pos[order], groups, repeated) if n in top_ns else 0
        pos, group = pos[order[repeated]], groups[repeated]  # the positions whose n-gram repeats
        dup = _scan_chars(words, n, pos, group) if n in dup_ns and pos.size else 0
        yield n, top, dup
        next_repeats = np.zeros(m + 1, bool)
        next_repeats[pos] = True
        keep = next_repeats[pos + 1]
        pos, group = pos[keep], group[keep]
        n += 1
    for k in range(n, last + 1):  # no k-gram repeats: the top one is the first
        yield k, len(" ".join(words[:k])) if k in top_ns else 0, 0


def _top_chars(words: list[str], n: int, pos: np.ndarray, groups: np.ndarray, repeated: np.ndarray) -> int:
    """Characters of the commonest n-gram times its count (of those equally common, the one that occurs first);
    without a repeat, the text's first n-gram. ``pos`` and ``groups``: the candidates in sorted order."""
    if not repeated.any():
        return len(" ".join(words[:n]))
    counts = np.bincount(groups)
    most = counts.max()
    start = int(pos[counts[groups] == most].min())
    return len(" ".join(words[start : start + n])) * int(most)


def _scan_chars(words: list[str], n: int, pos: np.ndarray, groups: np.ndarray) -> int:
    """datatrove's ``find_all_duplicate`` over the positions whose n-gram repeats (the others never count)."""
    order = pos.argsort()
    seen: set[int] = set()
    total, at = 0, 0
    for p, g in zip(pos[order].tolist(), groups[order].tolist(), strict=True):
        if p < at:
            continue
        if g in seen:
            total += len("".join(words[p : p + n]))
            at = p + n
        else:
            seen.add(g)
            at = p + 1
    return total
