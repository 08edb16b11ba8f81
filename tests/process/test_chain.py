"""The quality chain as a whole: filter vs tag mode, errors become counted drops, audit outputs."""

from collections import Counter

from raycorpus.config import config_from_dict
from raycorpus.counts import Key
from raycorpus.demo import write_sample_crawl
from raycorpus.ingest.storage import Storage
from raycorpus.output.docfiles import read_jsonl_zst
from raycorpus.process.document import Document
from raycorpus.process.filters import Chain
from raycorpus.process.filters.base import Filter, FilterResult
from raycorpus.process.pipeline import WarcProcessor

OFF = {k: {"enabled": False} for k in ("url", "langid", "gopher_repetition", "gopher_quality", "c4", "fineweb",
                                       "badwords", "pii", "model_quality")}


class Raises(Filter):
    name = "boom"

    def __call__(self, doc, view):
        raise ZeroDivisionError


class DropsShort(Filter):
    name = "short"

    def __call__(self, doc, view):
        n = len(view.words)
        return FilterResult(reason="too_short" if n < 5 else None, signals={"short.words": n})


class Upper(Filter):
    name = "upper"

    def __call__(self, doc, view):
        return FilterResult(text=doc.text.upper())


def chain(mode, *stages):
    c = Chain(config_from_dict({"input": {"manifest": "m"}, "output": {"path": "o"}, "tokenizer": {"path": "t"},
                                "filters": {"mode": mode, **OFF}}).filters)
    c.stages = [(s, None) for s in stages]
    return c


def doc(text):
    return Document(text=text, url="http://x.test/", record_id="<urn:uuid:1>", date="")


def test_filter_mode_drops_at_first_reason_and_counts_it():
    counts = Counter()
    c = chain("filter", Upper(), DropsShort(), Raises())
    d = doc("two words")
    assert c(d, counts) == "short:too_short"
    assert counts[Key.parse("drop:short:too_short")] == 1 and d.text == "TWO WORDS"
    assert "short.words" not in d.metadata  # signals only in tag mode


def test_a_stage_that_raises_is_a_counted_drop_not_a_failed_warc():
    counts = Counter()
    assert chain("filter", Raises()).__call__(doc("a b c d e f"), counts) == "error:boom"
    assert counts[Key.parse("drop:error:boom")] == 1


def test_tag_mode_keeps_everything_and_records_all_signals():
    counts = Counter()
    c = chain("tag", DropsShort(), Raises())
    d = doc("two words")
    assert c(d, counts) is None
    assert d.metadata["short.words"] == 2
    assert d.metadata["would_drop"] == ["short:too_short", "error:boom"]
    assert counts[Key.parse("tag:short:too_short")] == 1 and not any(k.text().startswith("drop:") for k in counts)


def test_exclusions_are_written_with_reasons(tmp_path):
    crawl = write_sample_crawl(tmp_path / "crawl", n_warcs=1, pages_per_warc=30)
    cfg = config_from_dict({
        "input": {"manifest": str(crawl.manifest_path)}, "output": {"path": str(tmp_path / "out")},
        "tokenizer": {"path": "t"},
        "filters": {**OFF, "gopher_quality": {"enabled": True}, "exclusions": {"enabled": True}},
    })
    res = WarcProcessor(cfg).process(0, str(crawl.warc_paths[0]))
    rows = read_jsonl_zst(Storage(), str(tmp_path / "out" / "exclusions" / "000000000.jsonl.zst"))
    dropped = sum(v for k, v in res.counts.items() if k.text().startswith("drop:"))
    assert dropped == len(rows) > 0
    assert all(r["reason"].startswith(("gopher_quality:", "extract:")) for r in rows)
    assert {r["record_id"] for r in rows}.isdisjoint(d.record_id for d in res.docs)
