"""Text normalisation and 64-bit word / n-gram hashing, shared by dedup and decontamination.

Text is normalised by :func:`normalize` (NFKC, lowercase, punctuation and digits folded
to spaces; the exact-dedup content hash uses it too) and split into words; Han, kana, Thai, Lao,
Khmer and Myanmar characters (scripts written without spaces) are one word each.
:class:`WordHasher` hashes each word (MinHash shingles and the decontamination index are built
from these hashes); :class:`NGramHasher` hashes word n-grams of any length from one prefix sum.
Everything is 64-bit integer arithmetic with constants derived from a seed by splitmix64, so
hashes are identical across processes, machines and ``PYTHONHASHSEED`` (for one Unicode
database, i.e. Python minor version: NFKC, ``str.lower`` and ``\\w`` come from it).
"""

from __future__ import annotations

import functools
import re
import unicodedata

import numpy as np

_WS = re.compile(r"\s+")
_PUNCT_DIGITS = re.compile(r"[\W\d_]+")
# Scripts written without spaces between words: each character is one word.
_STANDALONE_RANGES = (
    (0x0E00, 0x0EFF),  # Thai, Lao
    (0x1000, 0x109F),  # Myanmar
    (0x1780, 0x17FF),  # Khmer
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x31F0, 0x31FF),  # Katakana phonetic extensions
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0x20000, 0x3134F),  # CJK extensions B-G, compatibility supplement
)
# Their NFKC images; no character composes with these, so replacing first is exact.
_NFKC_PRESUBS = (("\xa0", " "), ("\u2026", "..."))
_STANDALONE = re.compile("[" + "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in _STANDALONE_RANGES) + "]")

M64 = (1 << 64) - 1
_F1 = np.uint64(0xFF51AFD7ED558CCD)
_F2 = np.uint64(0xC4CEB9FE1A85EC53)
_NGRAM_BASE = np.uint64(0x9E3779B97F4A7C15)  # odd: invertible mod 2**64
_NGRAM_INV_BASE = np.uint64(pow(int(_NGRAM_BASE), -1, 1 << 64))
_NGRAM_LEN_TAG = 0xD6E8FEB86659FD93


def normalize(text: str) -> str:
    """Lowercase, NFKC, punctuation and digits folded to spaces, whitespace collapsed."""
    t = nfkc(text).lower()
    t = _PUNCT_DIGITS.sub(" ", t)
    return _WS.sub(" ", t).strip()


def folded(text: str) -> np.ndarray:
    """The code points (uint32) of ``nfkc(text).lower()``: what :func:`normalize`, the word hashes and
    the content hash all start from, so one document folds its text once."""
    return np.frombuffer(nfkc(text).lower().encode("utf-32-le", "surrogatepass"), np.uint32)


def normalized_utf8(cp: np.ndarray) -> bytes:
    """``normalize(text).encode("utf-8", "surrogatepass")`` from ``cp = folded(text)``: the characters
    ``normalize`` keeps, each run of folded ones between two of them as one space (no whitespace is
    kept, so collapsing and stripping are implied). One numpy pass for two regex substitutions."""
    kept = np.flatnonzero(_char_classes()[cp])
    if not kept.size:
        return b""
    shift = np.zeros(kept.size, np.intp)  # spaces before each kept character
    np.cumsum(np.diff(kept) > 1, out=shift[1:])
    out = np.full(kept.size + int(shift[-1]), 32, np.uint32)
    out[np.arange(kept.size) + shift] = cp[kept]
    return out.tobytes().decode("utf-32-le", "surrogatepass").encode("utf-8", "surrogatepass")


def words(text: str) -> list[str]:
    """The words :class:`WordHasher` hashes (reference implementation, pure Python)."""
    return _STANDALONE.sub(r" \g<0> ", normalize(text)).split()


def nfkc(text: str) -> str:
    """NFKC; the two commonest web offenders are mapped first so most texts pass the quick check."""
    for char, image in _NFKC_PRESUBS:
        if char in text:
            text = text.replace(char, image)
    return unicodedata.normalize("NFKC", text)


@functools.cache
def _char_classes() -> np.ndarray:
    """Per code point: 0 separator (what ``normalize`` folds), 1 word character, 2 one-character word."""
    classes = np.ones(0x110000, np.uint8)
    every_char = "".join(map(chr, range(0x110000)))
    for m in _PUNCT_DIGITS.finditer(every_char):
        classes[m.start() : m.end()] = 0
    for lo, hi in _STANDALONE_RANGES:
        block = classes[lo : hi + 1]
        block[block == 1] = 2
    return classes


def splitmix64(seed: int, n: int) -> list[int]:
    """``n`` pseudo-random 64-bit constants from ``seed`` (numpy-version independent)."""
    out = []
    state = seed & M64
    for _ in range(n):
        state = (state + 0x9E3779B97F4A7C15) & M64
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        out.append(z ^ (z >> 31))
    return out


def fmix64(h: np.ndarray) -> np.ndarray:
    """MurmurHash3's 64-bit finaliser, in place: a bijection with full avalanche."""
    h ^= h >> 33
    h *= _F1
    h ^= h >> 33
    h *= _F2
    h ^= h >> 33
    return h


def _power_table(base: int | np.uint64, length: int) -> np.ndarray:
    """``base ** i`` mod 2**64 for ``i < length``."""
    table = np.full(length, base, np.uint64)
    table[0] = 1
    np.cumprod(table, out=table)
    return table


class WordHasher:
    """64-bit hash of each normalised word: a polynomial hash (mod 2**64) of its code points,
    taken from prefix sums, finalised with fmix64. The base is the first splitmix64 constant of
    ``seed`` (made odd). Not thread-safe: an instance reuses its work buffers."""

    def __init__(self, seed: int):
        self.base = splitmix64(seed, 1)[0] | 1
        self._inv_base = pow(self.base, -1, 1 << 64)
        self._cap = 0
        self._reserve(4096)

    def _reserve(self, length: int) -> None:
        """Grow the power tables and prefix buffer to texts of ``length`` code points."""
        if length <= self._cap:
            return
        cap = max(length, 2 * self._cap)
        self._pow = _power_table(self.base, cap)
        self._inv_pow = _power_table(self._inv_base, cap)
        self._prefix = np.zeros(cap + 1, np.uint64)
        self._cap = cap

    def word_hashes(self, text: str) -> np.ndarray:
        """64-bit hash of each word of the normalised text, in order."""
        return self.word_hashes_of(folded(text))

    def word_hashes_of(self, cp: np.ndarray) -> np.ndarray:
        """:meth:`word_hashes` of the text whose :func:`folded` code points are ``cp``."""
        return self.words_of(cp)[0]

    def words_of(self, cp: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(the hash of each word, the position in ``cp`` where it starts, where it ends) of the text whose
        :func:`folded` code points are ``cp``."""
        n_cp = cp.size
        cls = _char_classes()[cp]
        boundary = np.ones(n_cp + 1, bool)  # boundary[i]: a word cannot continue from cp[i-1] to cp[i]
        np.logical_not((cls[:-1] == 1) & (cls[1:] == 1), out=boundary[1:n_cp])
        is_word = cls != 0
        starts = np.flatnonzero(is_word & boundary[:n_cp])
        if not starts.size:
            return np.empty(0, np.uint64), starts, starts
        ends = np.flatnonzero(is_word & boundary[1:]) + 1
        self._reserve(n_cp)
        prefix = self._prefix[: n_cp + 1]
        np.multiply(cp, self._pow[:n_cp], out=prefix[1:])
        np.cumsum(prefix[1:], out=prefix[1:])
        return fmix64((prefix[ends] - prefix[starts]) * self._inv_pow[starts]), starts, ends


class NGramHasher:
    """Word n-gram hashes for any n from one prefix sum: ``O(1)`` per n-gram and length.

    The hash of words ``i..i+n`` is the polynomial hash of their word hashes (an odd base,
    so the prefix sums can be divided out), tagged with ``n`` and finalised with fmix64.
    """

    def __init__(self, seed: int) -> None:
        self.words = WordHasher(seed)
        self._pow = self._inv = np.ones(1, np.uint64)

    def word_hashes(self, text: str) -> np.ndarray:
        return self.words.word_hashes(text)

    def _powers(self, n: int) -> None:
        if n <= self._pow.size:
            return
        n = max(n, 2 * self._pow.size)
        self._pow = _power_table(_NGRAM_BASE, n)
        self._inv = _power_table(_NGRAM_INV_BASE, n)

    def spans(self, word_hash: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
        """The hash of words ``starts[i]:ends[i]`` for each ``i`` (an n-gram's hash, :meth:`grams`, for ``n`` words
        from ``i``; any value for an empty span)."""
        m = word_hash.size
        self._powers(m + 1)
        prefix = np.zeros(m + 1, np.uint64)
        np.cumsum(word_hash * self._pow[:m], out=prefix[1:])
        n = (ends - starts).astype(np.uint64)
        return fmix64((prefix[ends] - prefix[starts]) * self._inv[starts] + n * np.uint64(_NGRAM_LEN_TAG))

    def grams(self, word_hash: np.ndarray, lengths: list[int]) -> np.ndarray:
        """Hashes of all ``n``-grams for each ``n`` in ``lengths``, concatenated."""
        m = word_hash.size
        self._powers(m + 1)
        prefix = np.zeros(m + 1, np.uint64)
        np.cumsum(word_hash * self._pow[:m], out=prefix[1:])
        out = [fmix64((prefix[n:] - prefix[: m + 1 - n]) * self._inv[: m + 1 - n]
                      + np.uint64(n * _NGRAM_LEN_TAG % 2**64))
               for n in lengths if n <= m]
        return np.concatenate(out) if out else np.empty(0, np.uint64)
