"""MinHash signatures over word n-grams and LSH band keys, vectorised with numpy.

Words and their hashes come from :mod:`raycorpus.process.hashing` (normalised text; Han, kana,
Thai, Lao, Khmer and Myanmar characters are one word each). A shingle is ``ngram`` consecutive
words. Everything is 64-bit integer arithmetic with constants derived from ``seed`` by
splitmix64, so signatures are identical across processes, machines and ``PYTHONHASHSEED``
(for one Unicode database, i.e. Python minor version).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from raycorpus.process.hashing import M64, WordHasher, fmix64, normalize, splitmix64, words

# normalize, words and fmix64 are re-exported: they were defined here before raycorpus.process.hashing
__all__ = [
    "EMPTY_VALUE", "PRESETS", "MinHasher", "band_keys", "candidate_probability", "estimate_jaccard",
    "estimate_jaccard_many", "fmix64", "normalize", "words",
]

_CHUNK = 2048  # shingles permuted at a time: bounds the (num_perm, chunk) work buffer

#: Signature of a text without words (min over the empty set).
EMPTY_VALUE = np.uint64(M64)

#: (bands, rows) LSH presets; both fit the default 112 permutations.
PRESETS: dict[str, tuple[int, int]] = {
    "fineweb": (14, 8),  # FineWeb / datatrove: ~0.92 candidate probability at J = 0.8
    "recall": (20, 5),  # >= 0.999 at J = 0.8; more J ~ 0.5 candidates, so verify
}


class MinHasher:
    """MinHash signatures: ``num_perm`` hash functions, min over word ``ngram`` shingles.

    Shingle hash: ``ngram`` consecutive word hashes (:class:`~raycorpus.process.hashing.WordHasher`
    of ``seed``) combined with per-position odd multipliers and finalised with fmix64. Permutation ``i`` is
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
        c = splitmix64(seed, 1 + ngram + 2 * num_perm)
        self._words = WordHasher(seed)  # its base is c[0] | 1
        self._pos_mult = np.array([x | 1 for x in c[1 : 1 + ngram]], np.uint64)
        perms = c[1 + ngram :]  # (a_i, b_i) pairs: a longer signature extends a shorter one
        self._a = np.array([x | 1 for x in perms[0::2]], np.uint64)[:, None]
        self._b = np.array(perms[1::2], np.uint64)[:, None]
        self._work = np.empty(num_perm * _CHUNK, np.uint64)

    def shingle_hashes(self, text: str) -> np.ndarray:
        """64-bit hashes of the text's word shingles, in order (one for a text shorter than ``ngram`` words)."""
        word_hash = self.word_hashes(text)
        if not word_hash.size:
            return word_hash
        return self.combine(word_hash, self.ngram)

    def shingle_hashes_of(self, cp: np.ndarray) -> np.ndarray:
        """:meth:`shingle_hashes` of the text whose :func:`~raycorpus.process.hashing.folded` code points are ``cp``."""
        word_hash = self._words.word_hashes_of(cp)
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
        """64-bit hash of each word of the normalised text, in order (:class:`WordHasher`)."""
        return self._words.word_hashes(text)

    def signature(self, text: str, out: np.ndarray | None = None) -> np.ndarray:
        """The ``(num_perm,)`` uint64 MinHash signature of ``text`` (written into ``out`` if given)."""
        if out is None:
            out = np.empty(self.num_perm, np.uint64)
        return self.signature_of(self.shingle_hashes(text), out)

    def signature_of(self, x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """The signature of a text's :meth:`shingle_hashes` ``x`` (written into ``out`` if given)."""
        if out is None:
            out = np.empty(self.num_perm, np.uint64)
        if not x.size:
            out.fill(EMPTY_VALUE)
        for i in range(0, x.size, _CHUNK):
            chunk = x[i : i + _CHUNK]
            work = self._work[: self.num_perm * chunk.size].reshape(self.num_perm, chunk.size)
            np.multiply(self._a, chunk, out=work)
            work += self._b
            if i:
                np.minimum(out, work.min(axis=1), out=out)
            else:  # the first chunk's minima are the signature so far
                work.min(axis=1, out=out)
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
