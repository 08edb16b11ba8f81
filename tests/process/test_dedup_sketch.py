"""The OPH verification sketch: its estimator, its place in the index's rows and durable files, and the
indexing of near duplicates."""

from __future__ import annotations

import numpy as np
import pytest

from raycorpus.process.dedup.index import (
    NEAR,
    OPH,
    Deduplicator,
    Layout,
    LocalShards,
    LshShard,
    decode_record,
)
from raycorpus.process.dedup.minhash import MinHasher
from raycorpus.process.dedup.settings import DedupConfig
from raycorpus.process.dedup.shardlog import decode_inserts, encode_inserts
from raycorpus.process.dedup.sketch import OPH_BINS, OphSketch, Signer
from raycorpus.process.pipeline import content_hash
from tests.support.paths import SHARED, need_shared

PAGES = SHARED / "data" / "extraction" / "trafilatura-eval"


def _sets_with_jaccard(rng: np.random.Generator, n: int, j: float) -> tuple[np.ndarray, np.ndarray]:
    """Two sets of ``n`` random 64-bit values with Jaccard ``j`` (up to rounding)."""
    shared = round(2 * n * j / (1 + j))
    base = rng.integers(0, 2**63, 2 * n, dtype=np.uint64)
    return base[:n], np.concatenate([base[:shared], base[n : 2 * n - shared]])


def test_estimate_is_unbiased_with_a_third_of_the_minhash_noise_at_the_threshold():
    rng = np.random.default_rng(0)
    oph, mh = OphSketch(), MinHasher()
    est_oph, est_mh = [], []
    for _ in range(200):
        a, b = _sets_with_jaccard(rng, 3000, 0.8)
        est_oph.append(oph.estimate(oph.sketch(a), oph.sketch(b)))
        est_mh.append(float(np.mean(mh.signature_of(a) == mh.signature_of(b))))
    assert abs(np.mean(est_oph) - 0.8) < 0.005  # the b-bit chance agreement taken out: no bias
    assert np.std(est_oph) < 0.5 * np.std(est_mh)  # ~0.015 against ~0.038 for 112 values
    assert OphSketch().words * 4 == 192  # less than the 224 bytes of 112 x 16-bit values


def test_identical_disjoint_and_tiny_documents():
    oph = OphSketch()
    rng = np.random.default_rng(1)
    a, b = rng.integers(0, 2**63, 500, dtype=np.uint64), rng.integers(0, 2**63, 500, dtype=np.uint64)
    assert oph.estimate(oph.sketch(a), oph.sketch(a[::-1])) == 1.0  # order does not matter
    assert oph.estimate(oph.sketch(a), oph.sketch(b)) < 0.15
    tiny = oph.values(a[:3])  # 3 shingles, 1536 bins: every bin densified from one of the three
    assert tiny.shape == (1536,) and oph.estimate(oph.sketch(a[:3]), oph.sketch(a[:3].copy())) == 1.0
    for bits in (2, 4, 8, 16):  # packed agreement counts equal the unpacked ones
        s = OphSketch(1536 // bits, bits)
        va, vb = s.values(a), s.values(np.concatenate([a[:400], b[:100]]))
        assert s.agree(s.pack(va), s.pack(vb)) == np.count_nonzero(va == vb)


def test_near_threshold_pairs_of_real_pages_the_minhash_check_got_wrong():
    """The failing case: on variants of real pages, pairs with J just under 0.8 that 112 x 16-bit MinHash
    accepts (or just over that it rejects); the OPH sketch decides fewer of them wrongly."""
    import gzip

    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.html import HTMLTree

    from raycorpus.ingest.warc import decode_html
    from raycorpus.process.dedup.benchmark import build_labelled_docs, labelled_pairs

    paths = sorted(need_shared(PAGES).glob("**/*.html.gz"))[::8]
    texts = [extract_plain_text(HTMLTree.parse(decode_html(gzip.decompress(p.read_bytes()), None)[0]),
                                main_content=True) for p in paths]
    docs, group = build_labelled_docs(texts)
    rows = Signer().signatures(docs)
    pairs, exact = labelled_pairs(docs, group, rows[:, :112].astype(np.uint64))
    near = (exact >= 0.7) & (exact < 0.9)
    old = Layout.from_config(DedupConfig(verify_sketch="minhash", verify_margin=0), 1)
    new = Layout.from_config(DedupConfig(), 1)
    wrong = {}
    for name, lay in (("minhash", old), ("oph", new)):
        stored = lay.stored(rows)
        est = np.array([lay.estimate(stored[i], stored[j]) for i, j in pairs[near]])
        wrong[name] = (est >= 0.8 + lay.margin) != (exact[near] >= 0.8)
    assert near.sum() > 100
    assert wrong["minhash"].sum() > 1.5 * wrong["oph"].sum(), {k: int(v.sum()) for k, v in wrong.items()}
    fixed = wrong["minhash"] & ~wrong["oph"]
    assert fixed.any()  # pairs the old check decided wrongly and the sketch decides right


def test_rows_carry_the_sketch_and_the_shards_persist_it():
    rng = np.random.default_rng(3)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    texts = [" ".join("".join(rng.choice(letters, 5)) for _ in range(300)) for _ in range(6)]
    rows = Signer().signatures(texts)
    assert rows.shape == (6, 112 + OPH.words) and rows.dtype == np.uint32
    assert np.array_equal(rows[:, :112], MinHasher().signatures(texts).astype(np.uint32))  # the bands' values
    cfg = DedupConfig()
    layout = Layout.from_config(cfg, 2)
    live = Deduplicator(layout, cfg.threshold, LocalShards(layout))
    hashes = np.array([content_hash(t) for t in texts], np.uint64)
    _, record = live.decide(0, hashes, rows)
    for i, shard in enumerate(live.shards.shards):
        rebuilt = LshShard(layout, i)
        rebuilt.load([decode_record(record)])
        request = rebuilt.slice_of(decode_record(record), 0)
        again = LshShard(layout, i)
        again.insert(*decode_inserts(encode_inserts([request])))  # a shard's segment file, written and read
        for other in (rebuilt, again):
            docnos = np.arange(i, 6, 2, dtype=np.uint64)
            gids, sketches = other.documents(docnos)
            live_gids, live_sketches = shard.documents(docnos)
            assert np.array_equal(gids, live_gids) and np.array_equal(sketches, live_sketches)
            assert np.array_equal(sketches, rows[docnos.astype(np.intp), 112:])
    with pytest.raises(ValueError, match="sketch words"):
        layout.stored(rows[:, :112])  # MinHash values alone cannot be verified by the sketch


def test_a_copy_of_a_dropped_version_is_found_through_it():
    """a, b = a with 1 word in 50 changed, c = b with another 1 in 100 changed: J(b, c) >= 0.8 > J(a, c).
    Only kept documents indexed, c is kept (b was dropped); with near duplicates indexed, c is b's copy."""
    rng = np.random.default_rng(4)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    words = ["".join(rng.choice(letters, 6)) for _ in range(2000)]
    b_words = list(words)
    for i in range(0, 2000, 50):
        b_words[i] = "changed"
    c_words = list(b_words)
    for i in range(25, 2000, 100):
        c_words[i] = "again"
    a, b, c = " ".join(words), " ".join(b_words), " ".join(c_words)
    mh = MinHasher()
    sets = [set(mh.shingle_hashes(t).tolist()) for t in (a, b, c)]
    jac = [len(x & y) / len(x | y) for x, y in ((sets[0], sets[1]), (sets[1], sets[2]), (sets[0], sets[2]))]
    assert jac[0] >= 0.8 and jac[1] >= 0.8 > jac[2] + 0.05, jac
    rows = Signer().signatures([a, b, c])
    hashes = np.array([content_hash(t) for t in (a, b, c)], np.uint64)
    for index_duplicates, want in ((False, [0, NEAR, 0]), (True, [0, NEAR, NEAR])):
        cfg = DedupConfig(index_duplicates=index_duplicates)
        layout = Layout.from_config(cfg, 2)
        dd = Deduplicator(layout, cfg.threshold, LocalShards(layout))
        kinds = [int(dd.decide(o, hashes[o : o + 1], rows[o : o + 1])[0].kind[0]) for o in range(3)]
        assert kinds == want


def test_near_duplicate_set_of_real_pages():
    """Versions of real pages from several extractors, with exact Jaccard; every 40th page."""
    from raycorpus.process.dedup import nearset

    ns = nearset.build(need_shared(SHARED / "data" / "extraction"), every=40)
    assert len(set(ns.extractor)) >= 5 and len(ns.texts) > 60
    assert (ns.pairs[:, 0] < ns.pairs[:, 1]).all()  # (earlier, later) in the set's order
    mh = MinHasher()
    i, j = ns.pairs[np.argmin(np.abs(ns.jaccard - 0.8))]
    a, b = set(mh.shingle_hashes(ns.texts[i]).tolist()), set(mh.shingle_hashes(ns.texts[j]).tolist())
    assert ns.jaccard[np.argmin(np.abs(ns.jaccard - 0.8))] == len(a & b) / len(a | b)
    truth = ns.true_duplicate
    assert 0.2 < truth.mean() < 0.8  # versions of one page are often, not always, near duplicates
    assert truth[ns.pairs[ns.jaccard >= 0.8, 1]].all() and not truth[0]
    assert nearset.clean_lines("Home | News\nThis line has at least six words in it.") == \
        "This line has at least six words in it."
    # a half of the set (the held-out check of `raycorpus eval`): its documents in order, its pairs renumbered
    half = ns.page % 2 == 1
    sub = ns.subset(half)
    kept = np.flatnonzero(half)
    assert sub.texts == [ns.texts[k] for k in kept] and (sub.page == ns.page[half]).all()
    original = {(int(a), int(b)): j for (a, b), j in zip(ns.pairs, ns.jaccard, strict=True)}
    assert {(int(kept[a]), int(kept[b])): j for (a, b), j in zip(sub.pairs, sub.jaccard, strict=True)} == \
        {p: j for p, j in original.items() if half[p[0]] and half[p[1]]}
    assert (sub.true_duplicate == truth[half]).all()  # versions of a page are in the same half


def test_an_empty_half_scores_zero_instead_of_failing():
    """``raycorpus eval --dedup-every`` larger than the set leaves a half with no document."""
    from raycorpus.process.dedup import nearset
    from raycorpus.process.dedup.neareval import document_level

    ns = nearset.build(need_shared(SHARED / "data" / "extraction"), every=40)
    empty = ns.subset(np.zeros(len(ns.texts), bool))
    score = document_level(empty, DedupConfig(), rows=np.zeros((0, 1), np.uint32))
    assert (score["docs"], score["tp"], score["fp"], score["fn"]) == (0, 0, 0, 0)


def _reference_sketch(sk: OphSketch, shingles: np.ndarray) -> np.ndarray:
    """The sketch as first written (densification candidates drawn per try, values packed by shifts):
    the tabled densification and the packbits packing must give these words bit for bit."""
    from raycorpus.process.hashing import fmix64

    if not shingles.size:
        return np.zeros(sk.words, np.uint32)
    h = np.sort(fmix64(np.asarray(shingles, np.uint64) * sk._a + sk._b))
    b = ((h >> np.uint64(32)) * np.uint64(sk.bins)) >> np.uint64(32)
    first = np.ones(h.size, bool)
    np.not_equal(b[1:], b[:-1], out=first[1:])
    filled, vals = np.zeros(sk.bins, bool), np.zeros(sk.bins, np.uint32)
    filled[b[first].astype(np.intp)] = True
    vals[b[first].astype(np.intp)] = (h[first] & np.uint64((1 << sk.bits) - 1)).astype(np.uint32)
    todo, t0 = np.flatnonzero(~filled).astype(np.uint64), 1
    while todo.size:
        t = np.arange(t0, t0 + 32, dtype=np.uint64)[None, :]
        cand = (fmix64(todo[:, None] * sk._c + t) % np.uint64(sk.bins)).astype(np.intp)
        hit = filled[cand]
        found = hit.any(axis=1)
        vals[todo[found].astype(np.intp)] = vals[cand[found, hit[found].argmax(axis=1)]]
        todo, t0 = todo[~found], t0 + 32
    v = vals.reshape(sk.words, sk.per_word)
    return np.bitwise_or.reduce(v << sk._shifts[0], axis=-1).astype(np.uint32)


@pytest.mark.parametrize("bits", [1, 2])
def test_sketch_is_bit_identical_to_the_first_implementation(bits):
    """Real pages (every 4th of trafilatura-eval, all sizes) and the failing cases of the tabled densification:
    documents of 1-3 shingles, whose empty bins need candidates past the table's first 32 tries."""
    import gzip

    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.html import HTMLTree

    from raycorpus.ingest.warc import decode_html

    sk, mh = OphSketch(OPH_BINS, bits, seed=1), MinHasher()
    docs = [np.array([7], np.uint64), np.array([1, 2, 3], np.uint64), np.empty(0, np.uint64)]
    for p in sorted(need_shared(PAGES).glob("**/*.html.gz"))[::4]:
        html = decode_html(gzip.decompress(p.read_bytes()), None)[0]
        docs.append(mh.shingle_hashes(extract_plain_text(HTMLTree.parse(html), main_content=True)))
    assert len(docs) > 200
    for x in docs:
        np.testing.assert_array_equal(sk.sketch(x), _reference_sketch(sk, x))
