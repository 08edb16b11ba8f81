"""The Gopher repetition stage's computation against its definition: :func:`ngram_chars` (exact word ids and sorted
arrays) gives the values of a plain reference (datatrove's ``find_top_duplicate`` / ``find_all_duplicate``, n-grams
as word tuples), and :func:`paragraphs` / :func:`lines` give datatrove's regular-expression splits, on random texts
and on every real page of ../shared."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pytest

from raycorpus.process.filters.base import TextView
from raycorpus.process.filters.fineweb_text import ngram_chars
from raycorpus.process.filters.gopher import LINE_BREAK, PARAGRAPH_BREAK, lines, paragraphs
from tests.support.paths import SHARED, need_shared

TOP_NS = {2: 0.2, 3: 0.18, 4: 0.16}
DUP_NS = {n: 0.1 for n in range(5, 11)}


def reference(words: list[str], top_ns=TOP_NS, dup_ns=DUP_NS) -> list[tuple[int, int, int]]:
    """datatrove's definitions, written plainly: per n while an n-gram fits, the commonest n-gram's characters
    (joined by spaces) times its count, first seen first among equals; and the characters (joined without
    spaces) of the n-grams a left-to-right scan meets again, jumping over each."""
    out = []
    for n in range(2, min(max([*top_ns, *dup_ns]), len(words)) + 1):
        grams = [tuple(words[i : i + n]) for i in range(len(words) - n + 1)]
        top = dup = 0
        if n in top_ns:
            gram, count = Counter(grams).most_common(1)[0]
            top = len(" ".join(gram)) * count
        if n in dup_ns:
            seen: set[tuple[str, ...]] = set()
            i = 0
            while i < len(grams):
                if grams[i] in seen:
                    dup += len("".join(grams[i]))
                    i += n
                else:
                    seen.add(grams[i])
                    i += 1
        out.append((n, top, dup))
    return out


def random_words(rng: random.Random) -> list[str]:
    """Words from a small vocabulary with copied runs: many repeats, overlapping ones and jumps."""
    vocab = [rng.choice(["a", "bb", "ccc", "a b", ".", "dd"]) + str(i) for i in range(rng.randint(1, 12))]
    words = [rng.choice(vocab) for _ in range(rng.randint(0, 60))]
    for _ in range(rng.randint(0, 3)):  # a passage copied elsewhere
        if words:
            i, j = sorted(rng.sample(range(len(words) + 1), 2)) if len(words) > 1 else (0, 1)
            k = rng.randint(0, len(words))
            words[k:k] = words[i:j]
    return words


def test_ngram_chars_equal_the_reference_on_random_texts():
    rng = random.Random(29)
    for _ in range(3000):
        words = random_words(rng)
        assert list(ngram_chars(words, TOP_NS, DUP_NS)) == reference(words), words


def test_ngram_chars_only_the_sizes_asked_for():
    words = "x y x y x y z x y x y".split()
    got = list(ngram_chars(words, {3: 0.1}, {6: 0.1}))
    assert got == reference(words, {3: 0.1}, {6: 0.1})
    assert [n for n, _, _ in got] == [2, 3, 4, 5, 6]
    assert list(ngram_chars(words, {}, {})) == [] and list(ngram_chars(["x"], TOP_NS, DUP_NS)) == []


def test_n_grams_are_word_tuples_compared_exactly():
    """Equal strings that are distinct objects are the same word; "ab c" and "a bc" are different 2-grams (as
    before; datatrove's scan, which joins without spaces, would count the second)."""
    words = ["ab", "c", "a", "bc", "".join(["a", "b"]), "c"]
    assert list(ngram_chars(words, {2: 0.1}, {})) == reference(words, {2: 0.1}, {}) == [(2, 8, 0)]


def test_splits_equal_datatrove_s_regular_expressions_on_random_texts():
    rng = random.Random(7)
    for _ in range(50_000):
        text = "".join(rng.choice("a\n\n \r\tb\u2028") for _ in range(rng.randint(0, 16)))
        assert paragraphs(text) == PARAGRAPH_BREAK.split(text.strip()), repr(text)
        assert lines(text) == LINE_BREAK.split(text), repr(text)


@pytest.mark.slow  # ~1,100 pages extracted, each n-gram size counted plainly in Python
def test_real_pages_give_the_reference_s_values():
    from raycorpus.cli.parity import shared_texts

    need_shared(SHARED / "data" / "extraction")
    texts = [text for _, text in shared_texts(Path(SHARED / "data"))]
    assert len(texts) > 1000
    for text in texts:
        assert paragraphs(text) == PARAGRAPH_BREAK.split(text.strip())
        assert lines(text) == LINE_BREAK.split(text)
        for aware in (False, True):  # spaCy's English tokens, and the script-aware words
            words = TextView(text, aware).tokens
            assert list(ngram_chars(words, TOP_NS, DUP_NS)) == reference(words), text[:200]
