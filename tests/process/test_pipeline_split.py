"""A WARC processed as record ranges (run.split_warcs) and joined in range order gives the whole WARC's
result: the same documents, hashes, signatures, URL keys, counts and bytes read."""

from __future__ import annotations

from raycorpus import counts as ck
from raycorpus.ingest.split import plan_ranges
from raycorpus.process.pipeline import WarcProcessor
from raycorpus.process.results import DedupPayload, WarcSummary
from tests.support.corpus import make_config


def _untimed(counts) -> dict:
    return {k: n for k, n in counts.items() if k.kind is not ck.Kind.TIME}


def test_ranges_joined_give_the_whole_warcs_result(real_warc, tmp_path):
    cfg = make_config(str(real_warc), str(tmp_path / "out"), str(tmp_path / "tokenizer.json"))
    proc = WarcProcessor(cfg)
    whole = proc.process(0, str(real_warc))
    parts = plan_ranges(proc.storage, str(real_warc), 3, min_bytes=1)
    results = [proc.process(0, str(real_warc), part) for part in parts]
    assert len(parts) == 3 and all(r.docs for r in results)  # every range has documents of its own
    assert [(d.url, d.record_id, d.text) for r in results for d in r.docs] == [
        (d.url, d.record_id, d.text) for d in whole.docs] and len(whole.docs) > 50
    joined = DedupPayload.joined([r.dedup_payload() for r in results])
    expected = whole.dedup_payload()
    for field in ("hashes", "signatures", "url_hashes"):
        assert (getattr(joined, field) == getattr(expected, field)).all(), field
    summary = WarcSummary.joined([r.summary() for r in results])
    assert _untimed(summary.counts) == _untimed(whole.counts) and summary.docs == len(whole.docs)
    assert summary.bytes_read == whole.bytes_read == real_warc.stat().st_size
    assert [r.bytes_read for r in results] == [p.size for p in parts]
