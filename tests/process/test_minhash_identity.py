"""The MinHash + sketch stage bit for bit against plain references: the signature is the minimum of every
permutation over every shingle, the OPH sketch is its first implementation (sorted hashes, densification drawn try
by try, values packed by shifts), and a Signer row is the two side by side. Synthetic shingle sets of every size
(the densification's hard cases are documents of a few shingles) and the real pages of ../shared."""

from __future__ import annotations

import numpy as np
import pytest

from raycorpus.process.dedup.minhash import _CHUNK, EMPTY_VALUE, MinHasher
from raycorpus.process.dedup.sketch import OPH_BITS, OphSketch, Signer, oph_sketch
from tests.process.test_dedup_sketch import _reference_sketch
from tests.support.paths import SHARED, need_shared


def reference_signature(mh: MinHasher, x: np.ndarray) -> np.ndarray:
    """``min_x (a_i * x + b_i) mod 2**64`` for every permutation ``i`` (all shingles at once)."""
    if not x.size:
        return np.full(mh.num_perm, EMPTY_VALUE, np.uint64)
    return (mh._a * np.asarray(x, np.uint64)[None, :] + mh._b).min(axis=1)


def reference_row(signer: Signer, text: str) -> np.ndarray:
    x = signer.minhasher.shingle_hashes(text)
    sig = reference_signature(signer.minhasher, x).astype(np.uint32)
    return np.concatenate([sig, _reference_sketch(signer.sketch, x)]) if signer.sketch is not None else sig


def shingle_sets(rng: np.random.Generator) -> list[np.ndarray]:
    sizes = [0, 1, 2, 3, 5, 8, 13, 30, 60, 100, 250, 700, 1500, _CHUNK, _CHUNK + 1, 3 * _CHUNK + 17]
    return [rng.integers(0, 2**63, size, dtype=np.int64).view(np.uint64) * np.uint64(2) + np.uint64(1)
            for size in sizes] + [np.arange(k, dtype=np.uint64) for k in (1, 4, 40)]


def test_signature_equals_the_minimum_over_all_shingles():
    mh = MinHasher()
    out = np.empty(mh.num_perm, np.uint64)
    for x in shingle_sets(np.random.default_rng(29)):
        np.testing.assert_array_equal(mh.signature_of(x), reference_signature(mh, x))
        np.testing.assert_array_equal(mh.signature_of(x, out=out), reference_signature(mh, x))  # out reused


@pytest.mark.parametrize("bins,bits", [(1536, 1), (768, 2), (384, 4), (192, 8)])
def test_sketch_equals_its_first_implementation_at_every_size(bins, bits):
    sk = OphSketch(bins, bits, seed=3)
    for x in shingle_sets(np.random.default_rng(bins)):
        np.testing.assert_array_equal(sk.sketch(x), _reference_sketch(sk, x))


def test_signer_rows_of_real_pages_equal_the_references():
    from pathlib import Path

    from raycorpus.cli.parity import shared_texts

    need_shared(SHARED / "data" / "extraction")
    texts = [text for _, text in shared_texts(Path(SHARED / "data"))][::3]
    texts += ["", "one", "two words", "a b c d e", "short text of six words"]
    for signer in (Signer(), Signer(bits=1), Signer(sketch=False)):
        for text in texts:
            np.testing.assert_array_equal(signer.signature(text), reference_row(signer, text), text[:80])
    assert oph_sketch().bits == OPH_BITS
