"""raycorpus eval's language ID section: per-language accuracy, confusion pairs and speed per backend."""

from raycorpus.cli.evaluate import norm_lang
from raycorpus.cli.langid_eval import eval_langid_backends, format_langid_backends, real_page_texts
from tests.support.paths import SHARED, SHARED_WARC, need_shared

EXTRACTION = SHARED / "data" / "extraction"

SAMPLE = SHARED / "data" / "langid" / "sample_20_per_lang.jsonl"


def test_reference_labels_and_predictions_meet_in_canonical_codes():
    assert norm_lang("nb") == norm_lang("__label__no") == norm_lang("nob_Latn") == "no"
    assert norm_lang("pt-BR") == "pt" and norm_lang("unknown") == "unknown"


def test_fasttext_report_on_the_shared_sample_and_pages():
    report = eval_langid_backends(need_shared(SAMPLE), need_shared(SHARED_WARC), repeats=1, names=("fasttext",),
                                  loads=None)
    r = report["backends"]["fasttext"]
    assert len(r["per_language"]) == 75 and r["texts"] == 1500
    assert r["per_language"]["zu"] == 0.0 and r["per_language"]["de"] == 1.0  # lid.176 has no Zulu
    assert ["ms", "id", 19] in r["confusion_pairs"]  # its worst pair (nb is "no" for it: counted right)
    assert report["pages"] == len(real_page_texts(SHARED_WARC)) > 100
    assert r["page_median_ms"] > 0
    lines = format_langid_backends(report)
    assert "fasttext  accuracy 0.801 over 75 languages (15 below 0.8; validation half 0.803)" in lines[1]
    assert "ms->id 19" in lines[3] and "zu 0.00" in lines[4] and lines[4].startswith("  per-language accuracy")
    assert lines[-1] == "  backend: auto resolves to fasttext for keep: [en], ensemble for keep: null"


def test_ensemble_report_gives_its_memory_load_time_and_cost_per_page():
    report = eval_langid_backends(need_shared(SAMPLE), need_shared(SHARED_WARC), repeats=1, names=("ensemble",),
                                  extraction_dir=need_shared(EXTRACTION),
                                  loads=[("ensemble", None), ("auto", ("en",)), ("ensemble", ("bg",))])
    assert report["page_sources"]["warc"] > 100 and report["page_sources"]["extraction"] > 900
    assert report["defaults"] == {"keep: [en]": "fasttext", "keep: null": "ensemble"}
    r = report["backends"]["ensemble"]
    assert r["accuracy"] >= 0.95 and r["validation_accuracy"] >= 0.95
    assert 0 < r["page_median_ms"] <= r["page_ms_per_doc"]
    e = report["english_default"]  # auto means fastText for English: the same backend, the same cost
    assert e["auto"]["backend"] == e["fasttext"]["backend"] == "fasttext" and e["memory_mb_more"] < 50
    full, english, cyrillic = report["loads"]
    assert full["lingua_languages"] == 75 and full["memory_mb"] > 500 and full["load_seconds"] > 1
    assert english["resolved"] == "fasttext" and english["lingua_languages"] == 0 and english["memory_mb"] < 50
    assert cyrillic["lingua_languages"] == 8 and cyrillic["memory_mb"] < full["memory_mb"] / 2
    lines = format_langid_backends(report)
    assert any(line.startswith("  ensemble  accuracy") and "pages" in line and " | " in line for line in lines)
    assert any("ensemble       keep null      lingua languages 75: load" in line for line in lines)
    assert any("auto->fasttext keep [en]" in line for line in lines)
    assert any(line.startswith("  English default (keep: [en]): auto means fasttext") for line in lines)
