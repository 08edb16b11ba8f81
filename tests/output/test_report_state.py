"""The report's data summed at commit (ReportState): real WARC results, real dedup decisions."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from raycorpus.ingest.storage import Storage
from raycorpus.output.report_state import DEDUP, KEPT, ArrivedBounds, ReportState, TopCounts
from raycorpus.process.dedup.index import KEEP, Deduplicator, Layout, LocalShards
from raycorpus.process.pipeline import WarcProcessor
from raycorpus.process.profile import NO_BOUND, PASSED, SampleDoc
from raycorpus.process.tokenize import TokenEncoder, load_tokenizer
from tests.support.corpus import make_config


@pytest.fixture(scope="module")
def results(crawl, tmp_path_factory):
    """Every WARC of the sample crawl processed once (no sample bounds), with its dedup decision in order."""
    c, tok = crawl
    cfg = make_config(str(c.manifest_path), str(tmp_path_factory.mktemp("o")), tok,
                      output={"report": {"samples_passed": 12, "samples_per_reason": 3}})
    p = WarcProcessor(cfg, encoder=TokenEncoder(cfg.tokenizer, load_tokenizer(cfg.tokenizer).to_str()))
    layout = Layout.from_config(cfg.dedup, 1)
    dedup = Deduplicator(layout, cfg.dedup.threshold, LocalShards(layout))
    out = []
    for ordinal, warc in enumerate(c.warc_paths):
        r = p.process(ordinal, str(warc))
        decision, _ = dedup.decide(ordinal, *r.dedup_payload().rows(None))
        out.append((r, decision))
    return cfg, p, out


def state_of(results, bounded: bool, p: WarcProcessor | None = None) -> ReportState:
    """Sum the WARCs in order; ``bounded``: each WARC processed again with the bounds the state gives."""
    state = ReportState(12, 3)
    for r, decision in results:
        profile = p.process(r.ordinal, r.url, bounds=state.bounds()).profile if bounded else r.profile
        state.add(r.ordinal, profile, decision)
    return state


def test_kept_and_duplicates_follow_the_dedup_decision(results):
    _, _, rs = results
    state = state_of(rs, bounded=False)
    kept = sum(int(d.keep.sum()) for _, d in rs)
    dups = sum(int((~d.keep).sum()) for _, d in rs)
    assert dups > 0 and state.docs == kept
    assert state.tokens == sum(int(r.lengths[d.keep].sum()) for r, d in rs)
    assert sum(int(v[0]) for (_, outcome), v in state.langs.items() if outcome == KEPT) == kept
    assert sum(int(v[0]) for (_, outcome), v in state.langs.items() if outcome == DEDUP) == dups
    assert int(state.lengths["tokens", KEPT].sum()) == kept and int(state.lengths["chars", DEDUP].sum()) == dups
    assert int(state.clusters.counts.sum()) == dups and state.clusters.error == 0
    assert int(state.domains.counts.sum()) == dups
    hosts = {d.url.split("/")[2].removeprefix("www.") for r, _ in rs for d in r.docs}
    assert set(state.domains.names.values()) <= hosts
    # every near duplicate was verified; so were candidates found below the threshold
    near = sum(int((d.kind == 2).sum()) for _, d in rs)
    assert int(state.similarity.sum()) >= near > 0


def test_passed_samples_are_labelled_by_dedup(results):
    _, _, rs = results
    state = state_of(rs, bounded=False)
    by_id = {(r.ordinal, i): (d, r.docs[i]) for r, d in rs for i in range(len(r.docs))}
    labels = set()
    for s in state.samples[PASSED]:
        decision, doc = by_id[s.warc, s.index]
        assert s.record_id == doc.record_id
        labels.add(s.label)
        assert (s.label == KEPT) == (decision.kind[s.index] == KEEP)
        assert bool(s.dup_of) == (s.label != KEPT)
    keys = sorted((s.key, s.warc) for r, _ in rs for s in r.profile.samples if s.pool == PASSED)
    assert [(s.key, s.warc) for s in state.samples[PASSED]] == keys[:12]


def test_the_sample_does_not_depend_on_the_bounds_sent(results):
    """Workers that see the head's bounds send fewer candidates, and the sample is the same."""
    _, p, rs = results
    free, bounded = state_of(rs, bounded=False), state_of(rs, bounded=True, p=p)
    assert free.to_json() == bounded.to_json()
    sent_free = sum(len(r.profile.samples) for r, _ in rs)
    state = ReportState(12, 3)
    sent = 0
    for r, decision in rs:
        profile = p.process(r.ordinal, r.url, bounds=state.bounds()).profile
        sent += len(profile.samples)
        state.add(r.ordinal, profile, decision)
    assert sent < sent_free


def test_bounds_from_warcs_not_committed_yet_change_no_report(results):
    """A run's first window is sent before any commit: each WARC that arrives, in any order, drops the candidates
    that the WARCs before it that arrived already bound, and the sample of every committed prefix is unchanged."""
    _, _, rs = results
    for seed in range(3):
        arrived, kept = ArrivedBounds(12, 3), {}
        for i in np.random.default_rng(seed).permutation(len(rs)):
            r = rs[i][0]
            bounds = arrived.before(r.ordinal)
            kept[r.ordinal] = [s for s in r.profile.samples if s.key <= bounds.get(s.pool, NO_BOUND)]
            arrived.add(r.ordinal, kept[r.ordinal])
        assert sum(map(len, kept.values())) < sum(len(r.profile.samples) for r, _ in rs)
        for end in range(1, len(rs) + 1):
            free, cut = ReportState(12, 3), ReportState(12, 3)
            for r, decision in rs[:end]:
                free.add(r.ordinal, copy.deepcopy(r.profile), decision)
                trimmed = copy.deepcopy(r.profile)
                trimmed.samples = copy.deepcopy(kept[r.ordinal])
                cut.add(r.ordinal, trimmed, decision)
            assert cut.to_json() == free.to_json()


def test_the_bound_of_a_warc_comes_from_the_arrived_candidates_before_it():
    def docs(pool: str, keys: list[int]) -> list[SampleDoc]:
        return [SampleDoc(k, pool, 0, -1, "", "", "", 0, "") for k in keys]

    a = ArrivedBounds(2, 1)
    a.add(5, docs(PASSED, [50, 10, 70]) + docs("c4:x", [9]))
    a.add(9, docs(PASSED, [20]))
    a.add(7, docs(PASSED, [30, 40]))
    a.add(2, docs(PASSED, [60, 61]))
    # the pool's size-th smallest of every candidate sent by the WARCs before: a bound in every prefix holding them
    assert a.before(2) == {} and a.before(3) == {PASSED: 61}
    assert a.before(6) == {PASSED: 50, "c4:x": 9} and a.before(8) == {PASSED: 30, "c4:x": 9}
    assert a.before(100) == {PASSED: 20, "c4:x": 9} == a.before(101)
    a.add(200, docs(PASSED, [1]))  # (what every arrived WARC bounds changes)
    assert a.before(100) == {PASSED: 20, "c4:x": 9} and a.before(201) == {PASSED: 10, "c4:x": 9}
    a.forget_below(6)  # committed: the report's own pools bound them
    assert a.before(100) == {PASSED: 30} and a.before(8) == {PASSED: 40} and a.before(7) == {}
    assert a.before(201) == {PASSED: 20}


def test_state_round_trips_through_its_file(results, tmp_path):
    _, _, rs = results
    state = state_of(rs, bounded=False)
    state.retried("OSError: connection reset")
    state.checkpoint(warcs=len(rs), workers=2, now=1000.0)
    Storage().write_atomic(str(tmp_path / "s.json.zst"), state.encode())
    again = ReportState.read(Storage(), str(tmp_path), "s.json.zst")
    assert again.to_json() == state.to_json()
    assert again.timeline == [[1000.0, len(rs), state.docs, state.tokens, 2]]
    assert isinstance(again.samples[PASSED][0], SampleDoc)


def test_timeline_stays_bounded():
    state = ReportState()
    for i in range(5000):
        state.checkpoint(warcs=i, workers=1, now=float(i))
    assert len(state.timeline) <= 2001 and state.timeline[0][1] == 0 and state.timeline[-1][1] == 4999


def test_top_counts_are_exact_below_capacity_and_lower_bounds_past_it():
    rng = np.random.default_rng(0)
    truth: dict[int, int] = {}
    top = TopCounts(capacity=20)
    for _ in range(200):  # batches: a few heavy keys among many light ones
        keys = np.concatenate([rng.integers(0, 5, 20), rng.integers(1000, 6000, 40)]).astype(np.uint64)
        uniq, counts = np.unique(keys, return_counts=True)
        for k, c in zip(uniq.tolist(), counts.tolist(), strict=True):
            truth[k] = truth.get(k, 0) + c
        top.add(uniq, counts)
    for k, c in zip(top.keys.tolist(), top.counts.tolist(), strict=True):
        assert c <= truth[k] <= c + top.error
    heavy = sorted(truth, key=truth.get, reverse=True)[:5]
    assert [k for k, _ in top.top(5)] == heavy and top.error < min(truth[k] for k in heavy)
    small = TopCounts(capacity=100)
    small.add(np.array([7, 2**63 + 1], np.uint64), np.array([3, 1]))
    small.add(np.array([7], np.uint64), np.array([2]))
    assert small.top(5) == [(7, 5), (2**63 + 1, 1)] and small.error == 0
    assert TopCounts.from_json(json.loads(json.dumps(small.to_json()))).top(5) == small.top(5)
