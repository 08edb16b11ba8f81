"""The per-WARC decision as arrays takes the decisions the one-document-at-a-time decision took.

:mod:`tests.support.dedup_reference` is the decision as it was written before (a Python loop over the documents
in record order); here both decide the same crawls, WARC by WARC, under every kind of layout, on documents made
to collide in every way: URLs, texts, near copies, inside one WARC and across WARCs."""

from __future__ import annotations

import dataclasses
import pickle

import numpy as np
import pytest

from raycorpus.process.dedup.arrays import Asked, Earlier, Hits, ShardSplit, Stacked, Taken, group_starts
from raycorpus.process.dedup.index import KEEP, NEAR, URL, Deduplicator, Layout, LocalShards
from raycorpus.process.dedup.lsh import NO_MATCH
from raycorpus.process.dedup.settings import DedupConfig
from raycorpus.process.dedup.sketch import Signer
from raycorpus.process.pipeline import content_hash
from tests.process.test_dedup_index import _edit, _text
from tests.support.dedup_reference import ReferenceDeduplicator

LAYOUTS = {
    "defaults": {},
    "url": {"url": True},
    "no verification": {"url": True, "verify": False},
    "minhash, kept only": {"verify_sketch": "minhash", "index_duplicates": False, "verify_margin": 0},
    "exact only": {"near": False},
    "near only": {"exact": False, "url": False},
    "url + near": {"url": True, "exact": False},
}


def _crawl(seed: int, warcs: int = 6, docs: int = 60) -> list[list[tuple[str, str]]]:
    """WARCs of (url, text): fresh pages, exact copies, near copies (1-6 words changed, some of them near the
    threshold), repeated URLs with new texts, documents without a URL; in the same WARC and in later ones."""
    rng = np.random.default_rng(seed)
    seen: list[tuple[str, str]] = []
    out = []
    for w in range(warcs):
        warc = []
        for _ in range(2 if w == 0 else docs):  # a first WARC of 2: some shards own no document yet
            r = rng.random()
            url, text = seen[int(rng.integers(len(seen)))] if seen else ("", "")
            if not seen or r < 0.35:
                url, text = f"https://site{int(rng.integers(8))}.example/{int(rng.integers(10**6))}", _text(rng, 60)
            elif r < 0.5:
                pass  # the same page again
            elif r < 0.75:
                text = _edit(text, rng, int(rng.integers(1, 7)))
                url = url if rng.random() < 0.3 else f"https://mirror.example/{int(rng.integers(10**6))}"
            elif r < 0.85:
                text = _text(rng, 60)  # the same URL, another text
            else:
                url = ""  # no URL (key 0)
            warc.append((url, text))
            seen.append((url, text))
        out.append(warc)
    return out


def _rows(signer: Signer, warc: list[tuple[str, str]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    from raycorpus.process.dedup.urlkey import url_key

    hashes = np.array([content_hash(t) for _, t in warc], np.uint64)
    urls = np.array([url_key(u) if u else 0 for u, _ in warc], np.uint64)
    return hashes, signer.signatures([t for _, t in warc]), urls


@pytest.fixture(scope="module")
def crawls():
    signer = Signer()
    return [[_rows(signer, w) for w in _crawl(seed)] for seed in range(3)]


def _decisions(dd, crawl, keys_layout: Layout | None = None) -> list:
    out = []
    for ordinal, (hashes, sigs, urls) in enumerate(crawl):
        keys = keys_layout.warc_keys(hashes, sigs, urls) if keys_layout is not None else None
        d, record = dd.decide(ordinal, hashes, sigs, urls, **({"keys": keys} if keys is not None else {}))
        out.append((d.kind.tolist(), d.dup_of.tolist(), d.jaccard.tobytes(), d.verified.tobytes(), d.indexed, record))
    return out


@pytest.mark.parametrize("name", LAYOUTS)
@pytest.mark.parametrize("shards", [1, 3])
def test_the_array_decision_is_the_one_document_at_a_time_decision(crawls, name, shards):
    cfg = DedupConfig(**LAYOUTS[name])
    layout = Layout.from_config(cfg, shards)
    kinds = set()
    for crawl in crawls:
        ref = _decisions(ReferenceDeduplicator(layout, cfg.threshold, LocalShards(layout)), crawl)
        new = _decisions(Deduplicator(layout, cfg.threshold, LocalShards(layout)), crawl)
        worker = _decisions(Deduplicator(layout, cfg.threshold, LocalShards(layout)), crawl,
                            Layout.from_config(cfg, 1))  # the keys as a worker computes them
        assert new == ref
        assert worker == ref
        kinds |= {k for warc in ref for k in warc[0]}
    assert 0 in kinds and len(kinds) >= 2 + ("exact" in name or name == "defaults")  # kept and duplicates here


def test_earlier_rows_of_one_key_and_of_several():
    keys = np.array([5, 7, 5, 9, 5, 7], np.uint64)
    e = Earlier.of_keys(keys, valid=np.array([True, True, True, True, False, True]))
    assert [e.of(i).tolist() for i in range(6)] == [[], [], [0], [], [], [1]]  # row 4 is not valid: none
    cols = np.array([[1, 2], [3, 2], [1, 4], [5, 6], [3, 1]], np.uint64)
    e = Earlier.of_columns(cols)
    assert [e.of(i).tolist() for i in range(5)] == [[], [0], [0], [], [0, 1, 2]]
    owner, earlier = e.pairs(np.array([2, 4]))
    assert owner.tolist() == [2, 4, 4, 4] and earlier.tolist() == [0, 0, 1, 2]


def test_a_shard_split_routes_in_order_and_joins_back():
    route = np.array([2, 0, 2, 1, 0, 2])
    split = ShardSplit.of(route, 3)
    items = np.arange(10, 16, dtype=np.uint64)
    assert [p.tolist() for p in split.parts(items)] == [[11, 14], [13], [10, 12, 15]]
    assert split.join([p * 2 for p in split.parts(items)]).tolist() == (items * 2).tolist()


def test_group_starts_marks_where_each_run_of_equal_values_begins():
    assert group_starts(np.array([3, 3, 5, 7, 7, 7], np.uint64)).tolist() == [0, 2, 3]
    assert group_starts(np.array([4], np.intp)).tolist() == [0]
    keys = np.sort(np.random.default_rng(5).integers(0, 40, 500)).astype(np.uint64)
    assert keys[group_starts(keys)].tolist() == np.unique(keys).tolist()  # what the decision takes it for


def _chains(seed: int, warcs: int = 4, docs: int = 80) -> list[list[tuple[str, str]]]:
    """WARCs where a few pages come back again and again: long chains of URL, exact and near relations inside a
    WARC, some of whose first members are dropped (so a later member must name another kept one, or none)."""
    rng = np.random.default_rng(seed)
    pages = [(f"https://site.example/{i}", _text(rng, 60)) for i in range(4)]
    out = []
    for _ in range(warcs):
        warc = []
        for _ in range(docs):
            url, text = pages[int(rng.integers(len(pages)))]
            r = rng.random()
            if r < 0.3:
                text = _edit(text, rng, int(rng.integers(1, 4)))  # a near copy, under the same URL or another
                url = url if rng.random() < 0.5 else f"https://mirror.example/{int(rng.integers(10**6))}"
            elif r < 0.45:
                url = f"https://other.example/{int(rng.integers(10**6))}"  # the same text elsewhere
            elif r < 0.55:
                text = _text(rng, 60)  # the same URL, another text
            warc.append((url, text))
        out.append(warc)
    return out


@pytest.mark.parametrize("name", ["defaults", "url", "minhash, kept only", "url + near"])
def test_long_chains_inside_a_warc_are_decided_as_one_by_one(name):
    cfg = DedupConfig(**LAYOUTS[name])
    layout = Layout.from_config(cfg, 2)
    signer = Signer()
    for seed in range(3):
        crawl = [_rows(signer, w) for w in _chains(seed)]
        ref = _decisions(ReferenceDeduplicator(layout, cfg.threshold, LocalShards(layout)), crawl)
        assert _decisions(Deduplicator(layout, cfg.threshold, LocalShards(layout)), crawl) == ref
        kinds = {k for warc in ref for k in warc[0]}
        assert {KEEP, NEAR} <= kinds and (URL in kinds) == layout.url  # (every kind of relation was decided)


def test_stacked_items_cross_a_pickle_whole_in_a_few_buffers():
    rng = np.random.default_rng(3)
    asked = [Asked(o, rng.integers(1, 2**63, o + 2, dtype=np.uint64), rng.integers(1, 2**63, 3 * o, dtype=np.uint64),
                   None, np.arange(3 * o, dtype=np.uint32), o) for o in range(5)]  # (one WARC with no band key)
    taken = [(o, Taken.of(o, rng.random(9) < 0.5, rng.random(9) < 0.5,
                          None if o == 1 else rng.integers(0, 9, (o, 4), dtype=np.uint32))) for o in range(3)]
    for items in (asked, taken, [(Hits.of(np.array([7, NO_MATCH], np.uint64)),) * 2] * 3, []):
        data = pickle.dumps(Stacked(items), protocol=5, buffer_callback=(buffers := []).append)
        back = pickle.loads(data, buffers=buffers)
        assert len(back) == len(items) and bool(back) == bool(items)
        for got, want in zip(back, items, strict=True):
            assert _fields(got) == _fields(want)
        if items is asked:  # each array field's values and lengths once over the items, not once per item (15)
            assert len(buffers) == 2 * 3


def _fields(x) -> list:
    """A dataclass's or a tuple's values, arrays as (dtype, shape, contents), nested ones too."""
    values = [getattr(x, f.name) for f in dataclasses.fields(x)] if dataclasses.is_dataclass(x) else list(x)
    return [(v.dtype, v.shape, v.tolist()) if isinstance(v, np.ndarray) else
            _fields(v) if dataclasses.is_dataclass(v) or isinstance(v, tuple) else v for v in values]
