"""A round (several WARCs decided with one query per shard) takes the decisions each WARC takes alone, after the
WARCs before it, and leaves the shards as they would be: the head's overlay plays the tables' part for the keys
the round's WARCs share."""

from __future__ import annotations

import numpy as np
import pytest

from raycorpus.process.dedup.arrays import Repeats
from raycorpus.process.dedup.index import KEEP, Deduplicator, Layout, LocalShards, WarcRows, split_gid
from raycorpus.process.dedup.settings import DedupConfig
from tests.process.test_dedup_arrays import LAYOUTS, crawls  # noqa: F401 (a fixture)


def _rounds(n: int, sizes: list[int]) -> list[list[int]]:
    out, at, i = [], 0, 0
    while at < n:
        out.append(list(range(at, min(n, at + sizes[i % len(sizes)]))))
        at, i = out[-1][-1] + 1, i + 1
    return out


def _state(shards: LocalShards) -> list:
    return [([a.tobytes() for a in s.exact.to_arrays() + s.bands.to_arrays()], s._gids[: s._n].tolist(),
             None if s._sigs is None else s._sigs[: s._n].tobytes()) for s in shards.shards]


def _decide(layout: Layout, cfg: DedupConfig, crawl, rounds: list[list[int]]) -> tuple[list, list, int]:
    shards = LocalShards(layout)
    dd = Deduplicator(layout, cfg.threshold, shards)
    out, across = [], 0
    for r in rounds:
        decided = dd.decide_round([WarcRows(o, *crawl[o]) for o in r])
        for o, d in zip(r, decided, strict=True):
            out.append((d.kind.tolist(), d.dup_of.tolist(), d.jaccard.tobytes(), d.verified.tobytes(), d.indexed,
                        d.rows.index.tolist(), None if d.rows.near is None else d.rows.near.tolist()))
            dup = d.dup_of[d.kind != KEEP]
            across += sum(1 for g in dup.tolist() if r[0] <= split_gid(g)[0] < o)  # a match made in the round
    return out, _state(shards), across


@pytest.mark.parametrize("name", LAYOUTS)
@pytest.mark.parametrize("shards", [1, 3])
def test_a_round_decides_what_each_warc_decides_alone(crawls, name, shards):  # noqa: F811
    cfg = DedupConfig(**LAYOUTS[name])
    layout = Layout.from_config(cfg, shards)
    across = 0
    for crawl in crawls:
        crawl = [*crawl[:3], tuple(np.asarray(a)[:0] for a in crawl[0]), *crawl[3:]]  # an empty WARC in a round
        alone, state, _ = _decide(layout, cfg, crawl, _rounds(len(crawl), [1]))
        for sizes in ([len(crawl)], [2, 3], [3, 1]):
            decided, after, n = _decide(layout, cfg, crawl, _rounds(len(crawl), sizes))
            assert decided == alone, sizes
            assert after == state, sizes
            across += n
    assert across > 0  # the rounds held duplicates of each other's documents


def test_repeats_are_the_keys_several_warcs_share_in_order():
    keys = np.array([5, 7, 9, 7, 5, 5, 11, 9], np.uint64)
    warc = np.array([0, 0, 0, 1, 1, 1, 2, 2], np.uint16)
    pos = np.array([0, 1, 2, 0, 1, 2, 0, 1], np.uint32)
    r = Repeats.of(keys, warc, pos)
    assert r.group.tolist() == [0, 0, 0, 1, 1, 2, 2]  # 5 (three times), 7, 9; 11 only once
    assert list(zip(r.warc.tolist(), r.pos.tolist(), strict=True)) == [(0, 0), (1, 1), (1, 2), (0, 1), (1, 0),
                                                                       (0, 2), (2, 1)]
    assert Repeats.of(keys[:3], warc[:3], pos[:3]).group.size == 0  # one WARC: nothing to repeat
    joined = Repeats.join([r, Repeats.none(), r])
    assert joined.groups == 6 and joined.group[-1] == 5


def _repeats_by_one_sort(keys: np.ndarray, warc: np.ndarray, pos: np.ndarray) -> list[tuple[int, int, int]]:
    """(group, WARC, position) of every key several WARCs hold, from one stable sort of all the keys."""
    order = np.argsort(keys, kind="stable")
    out, group = [], 0
    for key in np.unique(keys):
        at = order[keys[order] == key]
        if len(set(warc[at].tolist())) > 1:
            out += [(group, int(warc[i]), int(pos[i])) for i in at]
            group += 1
    return out


@pytest.mark.parametrize("seed", range(4))
def test_repeats_of_hashed_keys_match_one_sort_of_them_all(seed):
    """Only the keys that may repeat are sorted stably (those whose top bits a repeated key has): the groups are those
    of sorting every key, with keys that share their top bits and are not repeated among them."""
    rng = np.random.default_rng(seed)
    n = 20_000
    keys = rng.integers(1, 2**64 - 1, n, dtype=np.uint64)
    at = rng.choice(n, 640, replace=False)
    keys[at[:300]] = keys[at[300:600]]  # repeated keys, within a WARC and across WARCs
    keys[at[600:]] = keys[at[:40]] ^ np.uint64(1)  # a repeated key's top bits, not repeated
    warc = np.sort(rng.integers(0, 6, n)).astype(np.uint16)
    pos = np.arange(n, dtype=np.uint32)
    r = Repeats.of(keys, warc, pos)
    got = list(zip(r.group.tolist(), r.warc.tolist(), r.pos.tolist(), strict=True))
    assert got == _repeats_by_one_sort(keys, warc, pos)
    assert r.groups > 50
