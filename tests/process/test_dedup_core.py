"""MinHash signatures, band keys and the BandTable (raycorpus.process.dedup, Ray-free)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from raycorpus.process.dedup.lsh import NO_MATCH, BandTable
from raycorpus.process.dedup.minhash import (
    EMPTY_VALUE,
    PRESETS,
    MinHasher,
    band_keys,
    candidate_probability,
    estimate_jaccard,
    estimate_jaccard_many,
    words,
)

TRICKY = [
    "",
    "   \n\t ",
    "!!! 123 ... ---",
    "one",
    "Hello, World!",
    "a b c d",
    "The ﬁne ﬁsh — costs 12,50 €… \uff26\uff35\uff2c\uff2c width\xa0text",
    "ΟΔΟΣ ΣΟΦΙΑΣ Σ",
    "İstanbul ve İzmir",
    "中文文本没有空格\uff0c日本語のテキストもない。한국어 텍스트 띄어쓰기",
    "ภาษาไทยไม่มีช่องว่าง",
    "mixed\u0301 e\u0301 combining",
    "lone \ud800 surrogate \udfff here",
    "snake_case and tab\tseparated\r\nlines",
]


def _exact_jaccard(a: str, b: str, n: int = 5) -> float:
    def shingles(t: str) -> set[tuple[str, ...]]:
        w = words(t)
        return {tuple(w)} if len(w) < n else {tuple(w[i : i + n]) for i in range(len(w) - n + 1)}

    sa, sb = shingles(a), shingles(b)
    return len(sa & sb) / len(sa | sb)


_LETTERS = np.array(list("abcdefghijklmnopqrstuvwxyz"))


def _text(rng: np.random.Generator, n_words: int) -> list[str]:
    """Random words of 3-8 letters (digits would be folded away by normalize)."""
    return ["".join(rng.choice(_LETTERS, int(rng.integers(3, 9)))) for _ in range(n_words)]


@pytest.fixture(scope="module")
def mh() -> MinHasher:
    return MinHasher()


def test_content_hash_is_over_normalized_text():
    from raycorpus.process.pipeline import content_hash

    assert content_hash("Hello, World!  42 times") == content_hash("hello world times")
    assert content_hash("hello world") != content_hash("hello there world")


def test_content_hash_folds_once_and_hashes_the_normalized_bytes():
    """The content hash is taken from the code points the shingles use (one NFKC + lowercase per document);
    its bytes must be exactly ``normalize``'s, on the tricky texts (the failing cases: separators at the ends,
    only separators, lone surrogates, NFKC and lowercasing that change the length) and on real pages in
    75 languages."""
    import hashlib
    import json

    from raycorpus.process.hashing import folded, normalize, normalized_utf8
    from raycorpus.process.pipeline import content_hash, content_hash_of
    from tests.support.paths import SHARED, need_shared

    sample = need_shared(SHARED / "data" / "langid" / "sample_20_per_lang.jsonl")
    real = [json.loads(line)["text"] for line in sample.read_text().splitlines()]
    texts = [*TRICKY, "_leading and trailing_", "..", "İİ ﬃ", *real]
    for t in texts:
        want = normalize(t).encode("utf-8", "surrogatepass")
        assert normalized_utf8(folded(t)) == want, t
        digest = int.from_bytes(hashlib.blake2b(want, digest_size=8).digest(), "little")
        assert content_hash(t) == content_hash_of(folded(t)) == digest


def test_numpy_tokenizer_matches_words(mh):
    for t in TRICKY:
        w = words(t)
        assert mh.shingle_hashes(t).size == (0 if not w else max(1, len(w) - mh.ngram + 1))
        assert np.array_equal(mh.signature(t), mh.signature(" ".join(w)))
    assert words("中文abc def") == ["中", "文", "abc", "def"]


def test_signature_shapes_and_edge_inputs(mh):
    for t in [*TRICKY, " ".join(["word"] * 50_000), "x" * 100_000, "漢" * 20_000]:
        sig = mh.signature(t)
        assert sig.shape == (112,) and sig.dtype == np.uint64
    assert (mh.signature("") == EMPTY_VALUE).all()
    assert (mh.signature("... 42 !!!") == EMPTY_VALUE).all()
    assert not (mh.signature("one") == EMPTY_VALUE).any()
    assert np.array_equal(mh.signature("Hello, World!"), mh.signature("hello   world"))
    assert not np.array_equal(mh.signature("hello world"), mh.signature("world hello"))
    sigs = mh.signatures(TRICKY)
    assert sigs.shape == (len(TRICKY), 112)
    assert np.array_equal(sigs[5], mh.signature(TRICKY[5]))


def test_signature_deterministic_across_processes(mh):
    texts = [TRICKY[6], TRICKY[9], "a b c d e f g h i j k"]
    code = (
        "import sys; from raycorpus.process.dedup.minhash import MinHasher; m = MinHasher(); "
        f"print(m.signatures({texts!r}).tobytes().hex())"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.strip() == mh.signatures(texts).tobytes().hex()
    assert not np.array_equal(MinHasher(seed=2).signatures(texts), mh.signatures(texts))
    assert np.array_equal(MinHasher(num_perm=256).signatures(texts)[:, :112], mh.signatures(texts))


def test_estimate_tracks_exact_jaccard(mh):
    rng = np.random.default_rng(7)
    errors = []
    for i in range(60):
        base = _text(rng, 800)
        changed = rng.random(len(base)) < [0.005, 0.02, 0.05, 0.1][i % 4]
        variant = [new if c else w for w, c, new in zip(base, changed, _text(rng, len(base)), strict=True)]
        a, b = " ".join(base), " ".join(variant)
        exact = _exact_jaccard(a, b)
        est = estimate_jaccard(mh.signature(a), mh.signature(b))
        sigma = max(np.sqrt(exact * (1 - exact) / mh.num_perm), 0.01)
        assert abs(est - exact) < 4.5 * sigma, (exact, est)
        errors.append(est - exact)
    assert abs(np.mean(errors)) < 0.015
    unrelated = estimate_jaccard(mh.signature(" ".join(_text(rng, 800))), mh.signature(" ".join(_text(rng, 800))))
    assert unrelated < 0.05


def test_estimate_jaccard_many():
    rng = np.random.default_rng(1)
    a = rng.integers(0, 4, (5, 112), dtype=np.uint64)
    b = rng.integers(0, 4, (5, 112), dtype=np.uint64)
    many = estimate_jaccard_many(a, b)
    assert many.shape == (5,)
    assert np.allclose(many, [estimate_jaccard(x, y) for x, y in zip(a, b, strict=True)])
    assert np.allclose(estimate_jaccard_many(a, a[0]), [estimate_jaccard(x, a[0]) for x in a])
    assert estimate_jaccard(a[0], a[0]) == 1.0


def test_band_keys():
    rng = np.random.default_rng(3)
    sigs = np.concatenate(
        [
            rng.integers(0, 2**64, (200, 112), dtype=np.uint64),
            np.zeros((1, 112), np.uint64),
            np.full((1, 112), EMPTY_VALUE),
            np.ones((1, 112), np.uint64),
        ]
    )
    for bands, rows in PRESETS.values():
        keys = band_keys(sigs, bands, rows)
        assert keys.shape == (len(sigs), bands) and keys.dtype == np.uint64
        assert (keys != 0).all()
        assert len(np.unique(keys)) == keys.size  # identical rows in different bands differ too
    same = sigs[:3].copy()
    same[1, 8:16] = same[0, 8:16]  # band 1 of the fineweb preset equal
    k = band_keys(same, 14, 8)
    assert k[0, 1] == k[1, 1] and (k[0, [0, *range(2, 14)]] != k[1, [0, *range(2, 14)]]).all()
    assert np.array_equal(band_keys(sigs[0], 14, 8), band_keys(sigs, 14, 8)[:1])
    with pytest.raises(ValueError):
        band_keys(sigs, 15, 8)


def test_presets_candidate_curves():
    assert PRESETS["fineweb"] == (14, 8)
    fineweb = candidate_probability(np.array([0.5, 0.8, 0.9]), *PRESETS["fineweb"])
    recall = candidate_probability(np.array([0.5, 0.8, 0.9]), *PRESETS["recall"])
    assert 0.9 < fineweb[1] < 0.93 and recall[1] > 0.999
    assert (recall > fineweb).all() and fineweb[0] < 0.06
    for bands, rows in PRESETS.values():
        assert bands * rows <= MinHasher().num_perm


def _reference(ref: dict[int, int], keys: np.ndarray, values: np.ndarray) -> list[int]:
    out = []
    for k, v in zip(keys.tolist(), values.tolist(), strict=True):
        out.append(ref.get(k, int(NO_MATCH)))
        ref.setdefault(k, v)
    return out


@pytest.mark.parametrize("value_dtype", [np.uint64, np.uint32])
def test_band_table_matches_dict(value_dtype):
    rng = np.random.default_rng(11)
    table = BandTable(value_dtype=value_dtype)
    ref: dict[int, int] = {}
    ordinal = 0
    for batch in range(120):
        n = int(rng.integers(0, 4000))
        if batch % 3 == 0:  # small key space: repeats within and across batches
            keys = rng.integers(1, 3000, n, dtype=np.uint64)
        elif batch % 3 == 1:  # keys of one shard of 16 (key % 16 == 5)
            keys = rng.integers(1, 2**60, n, dtype=np.uint64) * np.uint64(16) + np.uint64(5)
        else:
            keys = rng.integers(1, 2**64, n, dtype=np.uint64)
        values = np.arange(ordinal, ordinal + n, dtype=np.uint64)
        ordinal += n
        assert table.query_and_insert(keys, values).tolist() == _reference(ref, keys, values)
    assert len(table) == len(ref) > 100_000
    assert table.load_factor <= table.max_load
    assert table.nbytes == table.capacity * (8 + np.dtype(value_dtype).itemsize)
    keys, values = table.to_arrays()
    assert dict(zip(keys.tolist(), values.tolist(), strict=True)) == ref


def test_band_table_no_match_semantics():
    table = BandTable()
    assert table.query_and_insert(np.array([], np.uint64), np.array([], np.uint64)).size == 0
    out = table.query_and_insert(np.array([7, 8, 7, 7, 9], np.uint64), np.array([10, 11, 12, 13, 14], np.uint64))
    assert out.tolist() == [NO_MATCH, NO_MATCH, 10, 10, NO_MATCH]
    out = table.query_and_insert(np.array([9, 5, 5, 8], np.uint64), np.array([20, 21, 22, 23], np.uint64))
    assert out.tolist() == [14, NO_MATCH, 21, 11]
    assert len(table) == 4
    with pytest.raises(ValueError):
        table.query_and_insert(np.array([1, 0], np.uint64), np.array([1, 2], np.uint64))
    with pytest.raises(ValueError):
        table.query_and_insert(np.array([1, 2], np.uint64), np.array([1], np.uint64))
    with pytest.raises(OverflowError):
        table.query_and_insert(np.array([1], np.uint64), np.array([NO_MATCH]))
    with pytest.raises(OverflowError):
        BandTable(value_dtype=np.uint32).query_and_insert(np.array([1], np.uint64), np.array([2**32], np.uint64))
    assert len(table) == 4  # rejected batches change nothing


def test_band_table_round_trip_and_bulk_insert():
    rng = np.random.default_rng(5)
    keys = rng.integers(1, 2**64, 50_000, dtype=np.uint64)
    values = np.arange(keys.size, dtype=np.uint64)
    table = BandTable(expected_keys=10)
    table.insert_many(np.concatenate([keys, keys[:100]]), np.concatenate([values, values[:100] + 1]))
    assert len(table) == keys.size
    k, v = table.to_arrays()
    rebuilt = BandTable.from_arrays(k, v, value_dtype=np.uint32)
    assert len(rebuilt) == keys.size and rebuilt.value_dtype == np.uint32
    assert rebuilt.query_and_insert(keys, values + 7).tolist() == values.tolist()
    fresh = rng.integers(1, 2**64, 10, dtype=np.uint64)
    assert (rebuilt.query_and_insert(fresh, np.arange(10, dtype=np.uint64)) == NO_MATCH).all()
    presized = BandTable(expected_keys=keys.size)
    capacity = presized.capacity
    presized.insert_many(keys, values)
    assert presized.capacity == capacity  # no growth when sized up front


def test_band_table_growth_keeps_load_above_max_load_over_growth():
    """Grown from empty, the table never holds more than growth x the slots its keys need at max_load."""
    rng = np.random.default_rng(11)
    table = BandTable(value_dtype=np.uint32)
    assert table.growth == 1.25
    lowest, grew = 1.0, 0
    for _ in range(300):
        capacity = table.capacity
        table.insert_many(rng.integers(1, 2**64, 1000, dtype=np.uint64), np.zeros(1000, np.uint32))
        grew += table.capacity != capacity
        if len(table) > 10_000:
            lowest = min(lowest, table.load_factor)
    assert grew > 5 and table.max_load / table.growth * 0.99 <= lowest and table.load_factor <= table.max_load
