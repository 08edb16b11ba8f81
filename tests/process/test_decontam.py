"""Benchmark decontamination: the n-gram index, the filter stage, and catch rates on real benchmarks."""

from __future__ import annotations

import csv
import gzip
import json

import pytest

from raycorpus.process.document import Document
from raycorpus.process.filters.base import TextView
from raycorpus.process.filters.decontam import DecontamFilter, build_index
from raycorpus.process.filters.settings import BenchmarkSource, DecontamConfig
from tests.support.paths import SHARED, need_shared

QUESTION = ("Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May. "
            "How many clips did Natalia sell altogether in April and May?")
SHORT_Q = "Which planet in the solar system has the most moons today?"  # 11 words: 8-grams
PAGE = ("The harbour town grew around its fish market, which still opens before dawn. Traders arrive from the "
        "coast with crates of sardines, and the cafes fill with people who have worked through the night. "
        "In summer the square hosts concerts, and the old lighthouse is open to visitors on weekends.")


def _doc(text: str) -> Document:
    return Document(text=text, url="https://example.com/", record_id="<urn:x>", date="")


def _flag(stage: DecontamFilter, text: str) -> str | None:
    return stage(_doc(text), TextView(text)).reason


@pytest.fixture()
def sources(tmp_path):
    (tmp_path / "math.jsonl").write_text(json.dumps({"question": QUESTION, "answer": "72"}) + "\n")
    folder = tmp_path / "quiz"
    folder.mkdir()
    with (folder / "astro.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["question", "choice0", "choice1"])
        w.writerow([SHORT_Q, "Saturn", "Jupiter"])
    (folder / "more.jsonl.gz").write_bytes(gzip.compress(json.dumps(
        {"question": "Name the longest river that flows through the continent of South America", "choice0": "x",
         "choice1": "y"}).encode() + b"\n"))
    return [BenchmarkSource(name="math", path=str(tmp_path / "math.jsonl"), fields=["question", "answer"]),
            BenchmarkSource(name="quiz", path=str(folder), fields=["question", "choice0", "choice1"])]


def test_verbatim_and_edited_items_are_caught_and_clean_text_is_not(sources):
    cfg = DecontamConfig(enabled=True, benchmarks=sources)
    index = build_index(cfg)
    assert index.stats["math"] == {"items": 1, "fields_indexed": 1, "fields_too_short": 1}
    assert index.stats["quiz"]["items"] == 2 and index.stats["quiz"]["fields_too_short"] == 4
    stage = DecontamFilter(cfg, index)
    assert _flag(stage, PAGE) is None
    assert _flag(stage, PAGE + "\n\n" + QUESTION) == "math"
    # case, punctuation, numbers and one replaced word in the middle do not hide it
    edited = QUESTION.upper().replace(",", "").replace("48", "12").replace("half as many", "half as few")
    assert _flag(stage, PAGE + " " + edited + " " + PAGE) == "math"
    assert _flag(stage, "Quiz night! " + SHORT_Q.lower()) == "quiz"  # a short field, from a folder of CSVs
    assert _flag(stage, "longest river that flows through the continent of south america, they said") == "quiz"
    assert _flag(stage, "Which planet in the solar system has rings?") is None  # too little of it


def test_phrases_shared_by_many_items_are_not_evidence(tmp_path):
    template = "which of the following statements best describes the role of the {}"
    rows = [{"q": template.format(w)} for w in ("kidney", "liver", "heart", "lung")]
    path = tmp_path / "b.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    src = [BenchmarkSource(name="b", path=str(path), fields=["q"])]
    loose = DecontamFilter(DecontamConfig(enabled=True, benchmarks=src, max_item_share=10))
    strict = DecontamFilter(DecontamConfig(enabled=True, benchmarks=src, max_item_share=3))
    text = "Which of the following statements best describes the role of the teacher in class?"
    assert _flag(loose, text) == "b" and _flag(strict, text) is None
    assert _flag(strict, template.format("kidney")) == "b"  # the item-specific n-gram still counts


def test_bad_sources_name_the_benchmark(tmp_path):
    path = tmp_path / "b.jsonl"
    path.write_text(json.dumps({"question": QUESTION}) + "\n")
    with pytest.raises(ValueError, match=r"'b'.*no field 'prompt'"):
        build_index(DecontamConfig(enabled=True, benchmarks=[
            BenchmarkSource(name="b", path=str(path), fields=["prompt"])]))
    with pytest.raises(FileNotFoundError, match="'gone'"):
        build_index(DecontamConfig(enabled=True, benchmarks=[
            BenchmarkSource(name="gone", path=str(tmp_path / "none"), fields=["q"])]))


def test_config_refuses_decontam_without_benchmarks():
    from raycorpus.config import ConfigError, config_from_dict

    base = {"input": {"manifest": "m"}, "output": {"path": "o"}, "tokenizer": {"path": "t.json"}}
    with pytest.raises(ConfigError, match=r"filters.decontam.*without benchmarks"):
        config_from_dict({**base, "filters": {"decontam": {"enabled": True}}})


def test_catch_rates_on_real_benchmarks_injected_into_real_pages():
    """GSM8K, HumanEval, MMLU and MT-Bench items injected into extracted real pages (every 4th item)."""
    from raycorpus.cli.evaluate import eval_decontam
    from raycorpus.process.dedup.benchmark import load_texts

    decontam = need_shared(SHARED / "data" / "decontam")
    pages = need_shared(SHARED / "data" / "extraction" / "trafilatura-eval")
    r = eval_decontam(decontam, load_texts(pages), every=4)
    assert r["false_positives"] == 0 and r["clean_pages"] > 800
    b = r["benchmarks"]
    assert set(b) == {"gsm8k", "humaneval", "mmlu", "mtbench"}
    assert all(v["verbatim"] >= 0.999 for v in b.values()), b
    assert all(b[k]["light_edit"] >= 0.98 for k in ("gsm8k", "humaneval")), b
    assert b["mtbench"]["light_edit"] >= 0.9, b  # 20 items tested here: one miss is 0.95
    assert b["mmlu"]["light_edit"] >= 0.93, b  # short questions: one edited word can leave no 8-gram
