"""What a worker keeps of a WARC for the report (WarcProfile), on the sample crawl's real WARC records."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from raycorpus import counts as ck
from raycorpus.ingest.split import plan_ranges
from raycorpus.ingest.storage import Storage
from raycorpus.process.pipeline import WarcProcessor
from raycorpus.process.profile import COUNT, PASSED, UNIT, WORD_LENGTH, WarcProfile, sample_key, scale_of
from raycorpus.process.tokenize import TokenEncoder, load_tokenizer
from tests.support.corpus import make_config


def processor(crawl, tmp_path, mode: str = "filter", **report) -> WarcProcessor:
    c, tok = crawl
    cfg = make_config(str(c.manifest_path), str(tmp_path / "out"), tok, filters={"mode": mode},
                      output={"report": report} if report else {})
    return WarcProcessor(cfg, encoder=TokenEncoder(cfg.tokenizer, load_tokenizer(cfg.tokenizer).to_str()))


TEXT_STAGES = ["lang", "gopher_repetition", "gopher_quality", "c4", "fineweb", "badwords", "pii"]


def test_the_profile_agrees_with_the_warcs_counters(crawl, tmp_path):
    p = processor(crawl, tmp_path)
    for ordinal, warc in enumerate(crawl.sample.warc_paths[:3]):
        r = p.process(ordinal, str(warc))
        prof = r.profile
        drops = {}
        for key, n in ck.of_kind(r.counts, ck.Kind.DROP).items():
            drops[key.name] = drops.get(key.name, 0) + n
        by_stage = {}
        for (_lang, stage), n in prof.langs.items():
            by_stage[stage] = by_stage.get(stage, 0) + n
        assert by_stage == drops
        # one row per document dedup decides, with its tokens as staged
        assert len(prof.lang) == len(prof.chars) == len(prof.host) == len(r.docs) and prof.open.all()
        assert np.array_equal(prof.tokens, r.lengths)
        assert [prof.lang_names[i] for i in prof.lang] == [d.metadata["lang"] for d in r.docs]
        assert prof.chars.tolist() == [len(d.text) for d in r.docs]
        # a signal counts every document that reached its stage: those kept, or dropped there or later
        reached = len(r.docs) + sum(drops.get(s, 0) for s in TEXT_STAGES[TEXT_STAGES.index("gopher_quality"):])
        words = sum(int(h.sum()) for (name, _), h in prof.signals.items() if name == "gopher_quality.words")
        assert words == reached
        assert sum(int(h.sum()) for (name, _), h in prof.signals.items() if name == "lang_score") == (
            len(r.docs) + sum(drops.get(s, 0) for s in TEXT_STAGES))


def test_a_profile_travels_whole(crawl, tmp_path):
    """Pickled (as Ray sends it to the head), with its histograms packed into one array each: every field comes back
    equal, and the histograms can be added to as before."""
    prof = processor(crawl, tmp_path).process(0, str(crawl.sample.warc_paths[0])).profile
    back = pickle.loads(pickle.dumps(prof, protocol=5))
    assert prof.signals and prof.dropped_chars
    for f in prof.__slots__:
        a, b = getattr(prof, f), getattr(back, f)
        if isinstance(a, dict) and f in ("signals", "dropped_chars"):
            assert list(a) == list(b) and all(np.array_equal(a[k], b[k]) and a[k].dtype == b[k].dtype for k in a)
        elif isinstance(a, np.ndarray):
            assert np.array_equal(a, b) and a.dtype == b.dtype, f
        else:
            assert a == b, f
    assert WarcProfile.joined([back, back]).signals.keys() == prof.signals.keys()
    assert pickle.loads(pickle.dumps(WarcProfile())).signals == {}


def test_the_sample_is_the_smallest_keys_of_each_pool(crawl, tmp_path):
    p = processor(crawl, tmp_path, samples_passed=5, samples_per_reason=1, sample_chars=100)
    r = p.process(0, str(crawl.sample.warc_paths[0]))
    passed = [s for s in r.profile.samples if s.pool == PASSED]
    want = sorted((sample_key(d.record_id), i) for i, d in enumerate(r.docs))[:5]
    assert [(s.key, s.index) for s in passed] == want
    for s in passed:
        doc = r.docs[s.index]
        assert s.text == doc.text[:100] and s.chars == len(doc.text) and s.url == doc.url
        assert s.signals["gopher_quality.words"] > 0 and s.lang == doc.metadata["lang"]
    dropped = [s for s in r.profile.samples if s.pool != PASSED]
    assert len({s.pool for s in dropped}) == len(dropped)  # one per reason
    assert {s.pool for s in dropped} == {k.label for k in ck.of_kind(r.counts, ck.Kind.DROP)}


def test_bounds_only_hold_back_documents_that_could_not_be_sampled(crawl, tmp_path):
    p = processor(crawl, tmp_path, samples_passed=5, samples_per_reason=2)
    url = str(crawl.sample.warc_paths[0])
    free = p.process(0, url).profile.samples
    cut = sorted(s.key for s in free if s.pool == PASSED)[2]
    bounded = p.process(0, url, bounds={PASSED: cut}).profile.samples
    assert [s.key for s in bounded if s.pool == PASSED] == sorted(s.key for s in free if s.pool == PASSED)[:3]
    assert [s.key for s in bounded if s.pool != PASSED] == [s.key for s in free if s.pool != PASSED]


def test_tag_mode_profiles_every_document_and_samples_as_filter_mode_drops(crawl, tmp_path):
    url = str(crawl.sample.warc_paths[1])
    filtered = processor(crawl, tmp_path).process(1, url).profile
    tagged_result = processor(crawl, tmp_path / "tag", "tag").process(1, url)
    tagged = tagged_result.profile
    assert tagged.langs == filtered.langs  # each document counts under its first (would-)drop reason
    assert len(tagged.open) == len(tagged_result.docs) and tagged.open.sum() == len(filtered.open)
    assert [(s.pool, s.key) for s in tagged.samples] == [(s.pool, s.key) for s in filtered.samples]
    # tag mode computes every signal of every document
    words = sum(int(h.sum()) for (name, _), h in tagged.signals.items() if name == "gopher_quality.words")
    assert words == len(tagged_result.docs)


def test_a_warc_cut_into_ranges_profiles_as_the_whole(crawl, tmp_path):
    p = processor(crawl, tmp_path, samples_passed=4, samples_per_reason=2)
    url = str(crawl.sample.warc_paths[2])
    whole = p.process(2, url).profile
    parts = plan_ranges(Storage(), url, 3, min_bytes=1)
    assert len(parts) > 1
    joined = WarcProfile.joined([p.process(2, url, part).profile for part in parts])
    assert joined.signals.keys() == whole.signals.keys()
    assert all(np.array_equal(joined.signals[k], whole.signals[k]) for k in whole.signals)
    assert joined.langs == whole.langs and joined.lang_chars == whole.lang_chars
    assert [joined.lang_names[i] for i in joined.lang] == [whole.lang_names[i] for i in whole.lang]
    assert [joined.host_names()[i] for i in joined.host] == [whole.host_names()[i] for i in whole.host]
    for f in ("chars", "tokens", "open"):
        assert np.array_equal(getattr(joined, f), getattr(whole, f))
    # each range keeps its own smallest keys: the whole WARC's smallest are among them
    for pool in {s.pool for s in whole.samples}:
        keys = sorted(s.key for s in joined.samples if s.pool == pool)
        assert keys[: sum(s.pool == pool for s in whole.samples)] == [s.key for s in whole.samples if s.pool == pool]
    # a passed document's row is its row in the whole WARC (dedup's decision labels it by that row)
    rows = {s.key: s.index for s in joined.samples}
    assert all(rows[s.key] == s.index for s in whole.samples)
    assert any(s.index > 0 for s in whole.samples if s.pool == PASSED)


@pytest.mark.parametrize(("name", "scale"), [("gopher_repetition.dup_5_gram", UNIT), ("lang_score", UNIT),
                                             ("fineweb.line_punct_ratio", UNIT), ("gopher_quality.words", COUNT),
                                             ("gopher_quality.mean_word_length", WORD_LENGTH),
                                             ("c4.sentences", COUNT), ("model_quality", UNIT)])
def test_signals_get_bins_that_hold_their_thresholds(name, scale):
    assert scale_of(name) is scale


def test_bins_are_exact_where_thresholds_sit():
    # a value on a bin edge falls in the bin it opens; counts are exact up to 31
    assert UNIT.bins(np.array([0.0, 0.15, 0.1499, 1.0, 7.0])).tolist() == [0, 15, 14, 100, 100]
    assert COUNT.bins(np.array([0, 1, 2, 31, 50, 10**12])).tolist()[:4] == [0, 1, 2, 31]
    assert COUNT.edges[COUNT.bins(np.array([50]))[0]] <= 50 < COUNT.edges[COUNT.bins(np.array([50]))[0] + 1]
    assert COUNT.bins(np.array([10**12]))[0] == len(COUNT) - 1
