"""MinHash signatures over word n-grams and LSH band keys, vectorised with numpy.

Text is normalised by :func:`normalize` (NFKC, lowercase, punctuation and digits folded
to spaces; the exact-dedup content hash uses it too) and split into words; Han, kana, Thai, Lao,
Khmer and Myanmar characters (scripts written without spaces) are one word each. A
shingle is ``ngram`` consecutive words. Everything is 64-bit integer arithmetic with
constants derived from ``seed`` by splitmix64, so signatures are identical across
processes, machines and ``PYTHONHASHSEED`` (for one Unicode database, i.e. Python minor
version: NFKC, ``str.lower`` and ``\\w`` come from it).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Sequence

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

_M64 = (1 << 64) - 1
_F1 = np.uint64(0xFF51AFD7ED558CCD)
_F2 = np.uint64(0xC4CEB9FE1A85EC53)
_CHUNK = 2048  # shingles permuted at a time: bounds the (num_perm, chunk) work buffer

#: Signature of a text without words (min over the empty set).
EMPTY_VALUE = np.uint64(_M64)

#: (bands, rows) LSH presets; both fit the default 112 permutations.
PRESETS: dict[str, tuple[int, int]] = {
    "fineweb": (14, 8),  # FineWeb / datatrove: ~0.92 candidate probability at J = 0.8
    "recall": (20, 5),  # >= 0.999 at J = 0.8; more J ~ 0.5 candidates, so verify
}


def normalize(text: str) -> str:
    """Lowercase, NFKC, punctuation and digits folded to spaces, whitespace collapsed."""
    t = _nfkc(text).lower()
    t = _PUNCT_DIGITS.sub(" ", t)
    return _WS.sub(" ", t).strip()


def words(text: str) -> list[str]:
    """The words :class:`MinHasher` shingles (reference implementation, pure Python)."""
    return _STANDALONE.sub(r" \g<0> ", normalize(text)).split()


def _nfkc(text: str) -> str:
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


def _splitmix64(seed: int, n: int) -> list[int]:
    """``n`` pseudo-random 64-bit constants from ``seed`` (numpy-version independent)."""
    out = []
    state = seed & _M64
    for _ in range(n):
        state = (state + 0x9E3779B97F4A7C15) & _M64
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
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


class MinHasher:
    """MinHash signatures: ``num_perm`` hash functions, min over word ``ngram`` shingles.

    Shingle hash: a polynomial hash (mod 2**64) of each word's code points, taken from
    prefix sums, finalised with fmix64; ``ngram`` consecutive word hashes are combined
    with per-position odd multipliers and finalised again. Permutation ``i`` is
    ``h_i(x) = a_i * x + b_i mod 2**64`` (``a_i`` odd, so a bijection); the first ``k``
    entries of a signature do not depend on ``num_perm``. Not thread-safe: an instance
    reuses its work buffers.
    """

    def __init__(self, num_perm: int = 112, ngram: int = 5, seed: int = 1):
        if num_perm < 1 or ngram < 1:
            raise ValueError("num_perm and ngram must be >= 1")
        self.num_perm = num_perm
        self.ngram = ngram
        self.seed = seed
        c = _splitmix64(seed, 1 + ngram + 2 * num_perm)
        self._base = c[0] | 1
        self._inv_base = pow(self._base, -1, 1 << 64)
        self._pos_mult = np.array([x | 1 for x in c[1 : 1 + ngram]], np.uint64)
        perms = c[1 + ngram :]  # (a_i, b_i) pairs: a longer signature extends a shorter one
        self._a = np.array([x | 1 for x in perms[0::2]], np.uint64)[:, None]
        self._b = np.array(perms[1::2], np.uint64)[:, None]
        self._work = np.empty(num_perm * _CHUNK, np.uint64)
        self._cap = 0
        self._reserve(4096)

    def _reserve(self, length: int) -> None:
        """Grow the power tables and prefix buffer to texts of ``length`` code points."""
        if length <= self._cap:
            return
        cap = max(length, 2 * self._cap)
        self._pow = np.full(cap, self._base, np.uint64)
        self._pow[0] = 1
        np.cumprod(self._pow, out=self._pow)
        self._inv_pow = np.full(cap, self._inv_base, np.uint64)
        self._inv_pow[0] = 1
        np.cumprod(self._inv_pow, out=self._inv_pow)
        self._prefix = np.zeros(cap + 1, np.uint64)
        self._cap = cap

    def shingle_hashes(self, text: str) -> np.ndarray:
        """64-bit hashes of the text's word shingles, in order (one for a text shorter than ``ngram`` words)."""
        word_hash = self.word_hashes(text)
        if not word_hash.size:
            return word_hash
        return self.combine(word_hash, self.ngram)

    def combine(self, word_hash: np.ndarray, n: int) -> np.ndarray:
        """Hashes of every ``n`` consecutive words (``n <= ngram``; one hash when there are fewer words)."""
        n_words = word_hash.size
        if n_words < n:
            return fmix64(np.atleast_1d(np.sum(word_hash * self._pos_mult[:n_words], dtype=np.uint64)))
        n_sh = n_words - n + 1
        sh = word_hash[:n_sh] * self._pos_mult[0]
        for k in range(1, n):
            sh += word_hash[k : k + n_sh] * self._pos_mult[k]
        return fmix64(sh)

    def word_hashes(self, text: str) -> np.ndarray:
        """64-bit hash of each word of the normalised text, in order."""
        cp = np.frombuffer(_nfkc(text).lower().encode("utf-32-le", "surrogatepass"), np.uint32)
        n_cp = cp.size
        cls = _char_classes()[cp]
        boundary = np.ones(n_cp + 1, bool)  # boundary[i]: a word cannot continue from cp[i-1] to cp[i]
        np.logical_not((cls[:-1] == 1) & (cls[1:] == 1), out=boundary[1:n_cp])
        is_word = cls != 0
        starts = np.flatnonzero(is_word & boundary[:n_cp])
        if not starts.size:
            return np.empty(0, np.uint64)
        ends = np.flatnonzero(is_word & boundary[1:]) + 1
        self._reserve(n_cp)
        prefix = self._prefix[: n_cp + 1]
        np.multiply(cp, self._pow[:n_cp], out=prefix[1:])
        np.cumsum(prefix[1:], out=prefix[1:])
        return fmix64((prefix[ends] - prefix[starts]) * self._inv_pow[starts])

    def signature(self, text: str, out: np.ndarray | None = None) -> np.ndarray:
        """The ``(num_perm,)`` uint64 MinHash signature of ``text`` (written into ``out`` if given)."""
        if out is None:
            out = np.empty(self.num_perm, np.uint64)
        out.fill(EMPTY_VALUE)
        x = self.shingle_hashes(text)
        for i in range(0, x.size, _CHUNK):
            chunk = x[i : i + _CHUNK]
            work = self._work[: self.num_perm * chunk.size].reshape(self.num_perm, chunk.size)
            np.multiply(self._a, chunk, out=work)
            work += self._b
            np.minimum(out, work.min(axis=1), out=out)
        return out

    def signatures(self, texts: Sequence[str]) -> np.ndarray:
        """``(len(texts), num_perm)`` uint64 signatures."""
        out = np.empty((len(texts), self.num_perm), np.uint64)
        for i, text in enumerate(texts):
            self.signature(text, out=out[i])
        return out


def band_keys(sigs: np.ndarray, bands: int, rows: int) -> np.ndarray:
    """``(n, bands)`` uint64 LSH keys from the first ``bands * rows`` signature entries.

    Key of band ``j``: fmix64 chained over its rows, starting from a per-band seed, so
    equal rows in different bands give different keys. Never 0 (an empty table slot).
    """
    sigs = np.atleast_2d(np.asarray(sigs, np.uint64))
    if bands < 1 or rows < 1 or bands * rows > sigs.shape[1]:
        raise ValueError(f"{bands} bands x {rows} rows do not fit signatures of {sigs.shape[1]} values")
    v = sigs[:, : bands * rows].reshape(len(sigs), bands, rows)
    keys = np.empty((len(sigs), bands), np.uint64)
    keys[:] = fmix64(np.arange(1, bands + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15))
    for r in range(rows):
        keys ^= v[:, :, r]
        fmix64(keys)
    return np.maximum(keys, np.uint64(1), out=keys)


def estimate_jaccard(a: np.ndarray, b: np.ndarray) -> float:
    """Jaccard similarity estimated from two signatures: the fraction of equal entries."""
    return float(np.count_nonzero(np.asarray(a) == np.asarray(b)) / np.asarray(a).size)


def estimate_jaccard_many(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise :func:`estimate_jaccard` of ``(n, num_perm)`` signatures (broadcasting) -> ``(n,)`` float64."""
    eq = np.asarray(a) == np.asarray(b)
    return np.count_nonzero(eq, axis=-1) / eq.shape[-1]


def candidate_probability(j: float | np.ndarray, bands: int, rows: int) -> float | np.ndarray:
    """LSH probability that a pair with Jaccard ``j`` shares at least one band: ``1 - (1 - j**r)**b``."""
    return 1.0 - (1.0 - np.asarray(j, np.float64) ** rows) ** bands
