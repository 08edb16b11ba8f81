"""The labelled near-duplicate sets of ``raycorpus eval`` (the extraction set and the web set), their fixed tuning /
validation halves, the parameter search on the tuning halves, and the figures on the validation halves."""

from __future__ import annotations

import numpy as np
import pytest

from raycorpus.process.dedup import nearset, neartune
from raycorpus.process.dedup.minhash import MinHasher
from raycorpus.process.dedup.nearset import THRESHOLD, stable_hash
from raycorpus.process.dedup.settings import DedupConfig
from tests.support.paths import SHARED, SHARED_WARC, need_shared

EXTRACTION = SHARED / "data" / "extraction"
READABILITY = EXTRACTION / "readability"


def _web(every: int):
    from raycorpus.process.dedup import nearweb

    return nearweb.build(need_shared(READABILITY), need_shared(SHARED_WARC), every=every)


def _check_halves(ns: nearset.NearSet) -> None:
    half = ns.halves()
    assert half.dtype == bool and half.shape == (len(ns.texts),)
    assert np.array_equal(half, ns.halves())  # deterministic
    assert 0.25 < half.mean() < 0.75  # both halves hold a real share of the documents
    for p in np.unique(ns.page):  # all versions of one page in one half
        assert len(set(half[ns.page == p].tolist())) == 1
    a, b = ns.pairs[ns.jaccard >= THRESHOLD].T
    assert (half[a] == half[b]).all()  # no true duplicate links the two halves
    cluster = ns.clusters()
    for c in np.unique(cluster).tolist():  # a cluster's half: a bit of the hash of the seed and its first page's name
        assert half[cluster == c].all() == (stable_hash(f"{nearset.SPLIT_SEED}:{ns.page_names[c]}") & 1 == 0)
    other = ns.halves(seed=nearset.SPLIT_SEED + 1)
    assert not np.array_equal(half, other)  # the seed decides


@pytest.mark.slow
def test_the_split_is_by_cluster_deterministic_and_seeded():
    old = nearset.build(need_shared(EXTRACTION), every=40)
    _check_halves(old)
    assert np.array_equal(old.halves(), nearset.build(EXTRACTION, every=40).halves())  # the same on a rebuild
    web = _web(every=12)
    _check_halves(web)
    again = _web(every=12)
    assert again.texts == web.texts and np.array_equal(again.halves(), web.halves())
    # the split of a subset: the halves of its two parts are the subsets' own
    sub = web.subset(web.halves())
    assert sub.halves().all()


@pytest.mark.slow
def test_the_web_sets_labels_are_the_exact_jaccard():
    """Every pair within a page is labelled, and every pair of the set with J >= 0.8 (checked by brute force);
    each label is the Jaccard of the two word-5-gram sets."""
    ns = _web(every=15)
    kinds = {k for name in ns.extractor for k in name.split("+")}
    assert kinds == {"article", "whole-page", "boilerplate", "comments", "timestamp", "truncation", "reorder",
                     "syndication"}
    assert 0.2 < ns.true_duplicate.mean() < 0.8
    mh = MinHasher()
    shingles = [set(mh.shingle_hashes(t).tolist()) for t in ns.texts]
    labelled = {(int(a), int(b)): j for (a, b), j in zip(ns.pairs, ns.jaccard, strict=True)}
    n = len(ns.texts)
    for i in range(n):
        for k in range(i + 1, n):
            if ns.page[i] == ns.page[k]:
                assert (i, k) in labelled  # every pair within a page
            exact = len(shingles[i] & shingles[k]) / len(shingles[i] | shingles[k])
            if exact >= THRESHOLD:
                assert (i, k) in labelled, (i, k, exact)
            if (i, k) in labelled:
                assert labelled[(i, k)] == exact
    truth = np.zeros(n, bool)
    for (_, k), j in labelled.items():
        truth[k] |= j >= THRESHOLD
    assert np.array_equal(truth, ns.true_duplicate)


@pytest.mark.slow
def test_the_rule_chooses_on_the_tuning_halves():
    points = [(14, 8, "oph 1536x1"), (14, 8, "oph 768x2"), (14, 6, "oph 768x2")]
    sets = {"extraction": nearset.build(need_shared(EXTRACTION), every=40), "web": _web(every=12)}
    report = neartune.tune(sets, points=points)
    tuning = {name: ns.subset(ns.halves()) for name, ns in sets.items()}
    rows = {name: neartune.Rows(ns, DedupConfig()) for name, ns in tuning.items()}
    scored = neartune.score_grid(tuning, rows, DedupConfig(), points)
    assert report["chosen"] == neartune.choose(scored, tuple(sets))  # from the tuning halves' figures alone
    c = report["chosen"]
    point = neartune.Point(c["bands"], c["rows"], c["sketch"], c["margin"]).config()
    assert report["validation"]["chosen"] == neartune.validation_scores(sets, point)
    for name, ns in sets.items():  # the validation figures are the validation half's
        assert report["validation"]["chosen"][name]["docs"] == int((~ns.halves()).sum())


def test_choose_precision_first_then_the_worst_halfs_recall():
    def pt(margin, p1, r1, p2, r2, bands=14):
        return {"bands": bands, "rows": 8, "sketch": "oph 768x2", "margin": margin, "bytes_per_doc": float(bands),
                "a": {"precision": p1, "recall": r1}, "b": {"precision": p2, "recall": r2}}

    scored = [pt(0.0, 0.98, 0.99, 0.99, 0.99), pt(0.01, 0.99, 0.95, 0.995, 0.90), pt(0.02, 0.995, 0.93, 0.999, 0.91),
              pt(0.02, 0.995, 0.93, 0.999, 0.91, bands=12)]
    assert neartune.choose(scored, ("a", "b")) == scored[3]  # P >= 0.99 on both; best worst recall; fewer bytes
    with pytest.raises(ValueError, match="no grid point"):
        neartune.choose(scored[:1], ("a", "b"))
    assert all(neartune.bytes_per_doc(b, s) <= neartune.BUDGET for b, _, s in neartune.grid())
    assert neartune.bytes_per_doc(14, "oph 768x2") == 492.5 and neartune.bytes_per_doc(15, "oph 768x2") > 500
    assert neartune.sketch_name(DedupConfig()) == "oph 768x2"
    from raycorpus.process.dedup.index import Layout

    before = DedupConfig(oph_bits=1, verify_margin=0.005)  # the defaults of before
    assert Layout.from_config(neartune.Point(14, 8, "oph 1536x1", 0.005).config(), 2) == Layout.from_config(before, 2)


# ---------------------------------------------------------------- the figures on the validation halves

#: measured with the defaults (14 x 8, OPH 768 x 2 bits, margin 0.0125) on the validation halves, 2026-12-06:
#: extraction P 0.9971 R 0.9429, web P 0.9883 R 0.8881 (docs/benchmarks.md); the floors leave room for a changed
#: extractor version, not for a worse index
FLOORS = {"extraction": (0.995, 0.935), "web": (0.985, 0.875)}
TARGET = (0.99, 0.95)  # issue 27: P >= 0.99 and R >= 0.95 at J >= 0.8 on both validation halves


@pytest.fixture(scope="module")
def validation():
    sets = neartune.load_sets(need_shared(EXTRACTION), need_shared(SHARED_WARC))
    assert set(sets) == {"extraction", "web"}
    return neartune.validation_scores(sets, DedupConfig())


@pytest.mark.slow
def test_the_defaults_on_the_validation_halves_stay_at_their_measured_figures(validation):
    for name, (p, r) in FLOORS.items():
        assert validation[name]["precision"] >= p and validation[name]["recall"] >= r, (name, validation[name])


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason="target not met: the parameters chosen on the tuning halves give P 0.9971 / "
                   "R 0.9429 (extraction) and P 0.9883 / R 0.8881 (web) on the validation halves; no point of the "
                   "grid within 500 B reaches R 0.95 at P 0.99 on the web set's tuning half (docs/dedup.md)")
def test_the_defaults_meet_the_target_on_both_validation_halves(validation):
    for name in FLOORS:
        assert validation[name]["precision"] >= TARGET[0] and validation[name]["recall"] >= TARGET[1], name
