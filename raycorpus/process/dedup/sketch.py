"""A verification sketch with more, smaller samples than the MinHash signature: b-bit one-permutation hashing.

The LSH bands need MinHash values; verifying a band candidate needs only an estimate of its
Jaccard near the threshold, and there the 112 MinHash values are the limit (standard deviation
``sqrt(J (1 - J) / 112) = 0.038`` at J = 0.8), whatever bits are kept of each. This sketch
spends the same memory on ``bins`` samples of ``bits`` bits: one hash per shingle, split into
``bins`` ranges by its high bits (one-permutation hashing, OPH); each bin keeps the low ``bits``
bits of its smallest hash, and an empty bin borrows the value of a non-empty bin chosen by a
per-bin hash sequence (optimal densification, Shrivastava 2017), the same sequence in every
document. Two documents' values in a bin agree with probability ``J + (1 - J) 2**-bits``, so the
estimate is ``(agree - 2**-bits) / (1 - 2**-bits)`` (b-bit collision correction). Cost: one pass
over the shingle hashes (each bin's minimum by ``np.minimum.at``, no sort) and the densification of the
empty bins, most from a table of candidates built once. Values are packed into uint32 words (``32 / bits``
bins a word, bin ``i`` at bits ``bits * (i % per_word)`` of word ``i // per_word``).
"""

from __future__ import annotations

import numpy as np

from raycorpus.process.hashing import fmix64, folded, splitmix64

_SALT = 0x4F50485F534B5448  # "OPH_SKTH": the sketch's constants differ from the MinHasher's
_TRIES = 32  # densification candidates drawn at a time per empty bin
EMPTY = np.uint64((1 << 64) - 1)  # no hash in the bin (yet)
_WORD = {8: np.dtype("u1"), 16: np.dtype("<u2"), 32: np.dtype("<u4")}  # a look's hits, try t at bit t


class OphSketch:
    """``bins`` one-permutation-hashing samples of ``bits`` bits each, packed into ``words`` uint32."""

    def __init__(self, bins: int = 1536, bits: int = 1, seed: int = 1):
        if bits not in (1, 2, 4, 8, 16) or bins < 1 or bins * bits % 32:
            raise ValueError(f"{bins} bins x {bits} bits: bits must be 1, 2, 4, 8 or 16 and fill whole uint32 words")
        self.bins, self.bits = bins, bits
        self.per_word = 32 // bits
        self.words = bins * bits // 32
        a, b, c = splitmix64(seed ^ _SALT, 3)
        self._a, self._b, self._c = np.uint64(a | 1), np.uint64(b), np.uint64(c)
        self._shifts = (np.arange(self.per_word, dtype=np.uint32) * np.uint32(bits))[None, :]
        fold = 0
        for i in range(self.per_word):
            fold |= 1 << (i * bits)
        self._low = np.uint32(fold)  # the lowest bit of each value in a word
        self.chance = 2.0 ** -bits
        self._first_tries = self._candidates(np.arange(bins, dtype=np.uint64), 1)  # (bins, _TRIES), built once
        self._looks: dict[tuple[int, int], np.ndarray] = {}

    def values(self, shingles: np.ndarray) -> np.ndarray:
        """``(bins,)`` uint32: the low ``bits`` bits of each bin's smallest hash, empty bins densified."""
        if not np.asarray(shingles).size:
            return np.zeros(self.bins, np.uint32)
        h = np.asarray(shingles, np.uint64) * self._a
        h += self._b
        fmix64(h)
        b = h >> np.uint64(32)
        b *= np.uint64(self.bins)
        b >>= np.uint64(32)  # the range split: the bin of each hash
        b = b.astype(np.intp)
        smallest = np.full(self.bins, EMPTY, np.uint64)
        np.minimum.at(smallest, b, h)
        vals = (smallest & np.uint64((1 << self.bits) - 1)).astype(np.uint32)
        filled = np.zeros(self.bins, bool)
        filled[b] = True
        if not filled.all():
            self._densify(vals, filled)
        return vals

    def _candidates(self, bins: np.ndarray, t0: int) -> np.ndarray:
        """``(len(bins), _TRIES)``: bin ``i``'s densification candidates ``t0 .. t0 + _TRIES - 1``."""
        t = np.arange(t0, t0 + _TRIES, dtype=np.uint64)[None, :]
        x = fmix64(bins[:, None] * self._c + t)
        x -= x // np.uint64(self.bins) * np.uint64(self.bins)  # x % bins (numpy divides by a scalar faster)
        return x.astype(np.intp)

    def _densify(self, vals: np.ndarray, filled: np.ndarray) -> None:
        """Each empty bin ``i`` takes the value of the first non-empty bin in its sequence
        ``fmix64(i * c + t) % bins`` (t = 1, 2, ...): a function of the bin alone, so two documents
        that share the chosen bin's sample agree there as often as in a sampled bin. The first
        ``_TRIES`` candidates of every bin come from a table built once, looked at 8, 16 or 32 at a time
        (fewer the more bins are filled: most empty bins find theirs in the first look)."""
        todo = np.flatnonzero(~filled)
        share = 1.0 - todo.size / self.bins
        width = 8 if share >= 0.35 else 16 if share >= 0.18 else 32  # a miss for < 5 % of the empty bins
        t0 = 0  # the look's first try, counted from 0
        while todo.size:
            if t0 < _TRIES:
                cand = np.take(self._look(t0, width), todo, axis=0)
            else:  # rare: a bin whose first candidates were all empty (a document of few shingles)
                cand, width = self._candidates(todo.astype(np.uint64), t0 + 1), _TRIES
            hits = np.packbits(filled[cand].ravel(), bitorder="little").view(_WORD[width])  # try t at bit t
            rows = np.flatnonzero(hits)
            hit = hits[rows]
            tries = np.bitwise_count((hit & (~hit + 1)) - 1)  # the lowest set bit: the first filled candidate
            vals[todo[rows]] = vals[cand.ravel()[rows * width + tries]]
            todo = todo[hits == 0]
            t0 += width

    def _look(self, t0: int, width: int) -> np.ndarray:
        """``(bins, width)``: the table's tries ``t0 .. t0 + width - 1`` (from 0), contiguous (made once)."""
        key = (t0, width)
        if key not in self._looks:
            self._looks[key] = np.ascontiguousarray(self._first_tries[:, t0 : t0 + width])
        return self._looks[key]

    def pack(self, vals: np.ndarray) -> np.ndarray:
        """``(..., bins)`` values -> ``(..., words)`` uint32."""
        if self.bits == 1:  # bin i at bit i % 32 of word i // 32: little-endian bit and byte order
            bits = np.packbits(np.asarray(vals, np.uint8), axis=-1, bitorder="little")
            return bits.view("<u4").astype(np.uint32)
        v = np.asarray(vals, np.uint32).reshape(*vals.shape[:-1], self.words, self.per_word)
        return np.bitwise_or.reduce(v << self._shifts, axis=-1).astype(np.uint32)

    def sketch(self, shingles: np.ndarray) -> np.ndarray:
        """The packed ``(words,)`` uint32 sketch of a document's shingle hashes (zeros for none)."""
        if not np.asarray(shingles).size:
            return np.zeros(self.words, np.uint32)
        return self.pack(self.values(shingles))

    def agree(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Bins whose values agree, row-wise over packed sketches (broadcasting)."""
        x = np.bitwise_xor(a, b, dtype=np.uint32)
        any_bit = x.copy()
        for s in range(1, self.bits):  # shifts of x itself: a value's bits only, never the next value's
            any_bit |= x >> np.uint32(s)
        differ = np.bitwise_count(any_bit & self._low).sum(axis=-1, dtype=np.int64)
        return self.bins - differ

    def estimate(self, a: np.ndarray, b: np.ndarray) -> np.ndarray | float:
        """Jaccard estimated from packed sketches: ``(agree / bins - 2**-bits) / (1 - 2**-bits)``, >= 0."""
        m = self.agree(a, b) / self.bins
        est = np.maximum(0.0, (m - self.chance) / (1.0 - self.chance))
        return float(est) if np.ndim(est) == 0 else est


#: The index's OPH verification sketch takes 192 bytes (112 x 16-bit values took 224), so that tables + id + sketch
#: stay under 500 bytes per indexed document at any table load: ``1536 / bits`` bins of ``bits`` bits
#: (``dedup.oph_bits``). The default, 768 bins of 2 bits, was chosen on the tuning halves of the near-duplicate sets
#: (:mod:`raycorpus.process.dedup.neartune`); 1536 x 1 was the only shape before.
OPH_BYTES = 192
OPH_BITS = 2
OPH_BINS = OPH_BYTES * 8 // OPH_BITS


def oph_sketch(bits: int = OPH_BITS, seed: int = 1) -> OphSketch:
    """The index's sketch with ``bits`` bits a bin (``OPH_BYTES`` bytes whatever the bits)."""
    return OphSketch(OPH_BYTES * 8 // bits, bits, seed)


class Signer:
    """A document's row for the dedup index: its ``num_perm`` MinHash values (low 32 bits; the bands'),
    followed, with ``verify_sketch: oph``, by the packed OPH sketch (:func:`oph_sketch` of ``bits``) that
    verification keeps. One pass over the shingles feeds both. Not thread-safe (the MinHasher's buffers)."""

    def __init__(self, num_perm: int = 112, ngram: int = 5, seed: int = 1, sketch: bool = True,
                 bits: int = OPH_BITS):
        from raycorpus.process.dedup.minhash import MinHasher

        self.minhasher = MinHasher(num_perm, ngram, seed)
        self.sketch = oph_sketch(bits, seed) if sketch else None
        self.width = num_perm + (self.sketch.words if self.sketch else 0)

    def signature(self, text: str) -> np.ndarray:
        """The ``(width,)`` uint32 row of ``text``."""
        return self.signature_of(folded(text))

    def signature_of(self, cp: np.ndarray) -> np.ndarray:
        """The row of the text whose :func:`~raycorpus.process.hashing.folded` code points are ``cp``."""
        x = self.minhasher.shingle_hashes_of(cp)
        row = np.empty(self.width, np.uint32)
        row[: self.minhasher.num_perm] = self.minhasher.signature_of(x)  # the low 32 bits
        if self.sketch is not None:
            row[self.minhasher.num_perm :] = self.sketch.sketch(x)
        return row

    def signatures(self, texts) -> np.ndarray:
        """``(len(texts), width)`` uint32 rows."""
        out = np.empty((len(texts), self.width), np.uint32)
        for i, t in enumerate(texts):
            out[i] = self.signature(t)
        return out
