"""filters.langid: labels in any spelling, the backend setting, and the fastText + lingua ensemble on real
labelled sentences of the confusable groups (the shared 75-language sample)."""

import json
from collections import defaultdict

import pytest

from raycorpus.config import ConfigError, config_from_dict
from raycorpus.process.document import Document
from raycorpus.process.filters.base import TextView
from raycorpus.process.filters.langcodes import canonical
from raycorpus.process.filters.langid import DEFAULT_MODEL, LanguageFilter, predict, predict_one
from raycorpus.process.filters.langid_backends import BACKENDS, make_backend
from raycorpus.process.filters.settings import LangIdConfig
from tests.support.cli import MINIMAL, run_config
from tests.support.paths import SHARED, need_shared

GOOD = {"input": {"manifest": "m.txt"}, "output": {"path": "out"}, "tokenizer": {"path": "tok.json"}}
SAMPLE = SHARED / "data" / "langid" / "sample_20_per_lang.jsonl"


def with_langid(**langid) -> dict:
    return {**GOOD, "filters": {"langid": langid}}


def test_keep_and_thresholds_accept_every_spelling_and_are_stored_canonical():
    a = config_from_dict(with_langid(keep=["nob_Latn", "__label__cmn_Hani"], thresholds={"nb": 0.5}))
    b = config_from_dict(with_langid(keep=["no", "zh"], thresholds={"no": 0.5}))
    assert a.filters.langid.keep == ["no", "zh"] and a.filters.langid.thresholds == {"no": 0.5}
    assert a.fingerprint() == b.fingerprint()


def test_backend_fasttext_keeps_the_fingerprint_and_another_backend_changes_it():
    pytest.importorskip("lingua", reason="lingua-language-detector (the multilingual extra) not installed")
    plain = config_from_dict(with_langid(keep=["en"]))
    assert config_from_dict(with_langid(keep=["en"], backend="fasttext")).fingerprint() == plain.fingerprint()
    assert config_from_dict(with_langid(keep=["eng_Latn"])).fingerprint() == plain.fingerprint()
    assert config_from_dict(with_langid(keep=["en"], backend="ensemble")).fingerprint() != plain.fingerprint()


@pytest.mark.parametrize("langid, field, expected", [
    ({"keep": ["en", "klingon"]}, "filters.langid.keep", "unknown language label 'klingon'"),
    ({"keep": ["tlh_Latn"]}, "filters.langid.keep", "not a language the classifier can output"),
    ({"thresholds": {"xx": 0.5}}, "filters.langid.thresholds", "unknown language label 'xx'"),
    ({"backend": "cld3"}, "filters.langid.backend", "'fasttext', 'ensemble' or 'lingua'"),
])
def test_bad_labels_and_backends_are_config_errors_naming_the_field(langid, field, expected):
    with pytest.raises(ConfigError) as e:
        config_from_dict(with_langid(**langid))
    assert f"  {field}" in str(e.value) and expected in str(e.value)


def test_cli_unknown_keep_label_exits_2(tmp_path):
    r = run_config(tmp_path, MINIMAL + "filters: {langid: {keep: [en, xx_Latn]}}\n")
    assert r.returncode == 2
    assert "filters.langid.keep" in r.stderr and "unknown language label 'xx_Latn'" in r.stderr


def run(stage: LanguageFilter, text: str):
    d = Document(text=text, url="", record_id="", date="")
    return stage(d, TextView(text)), d


@pytest.fixture(scope="module")
def sample() -> dict[str, list[str]]:
    by_lang = defaultdict(list)
    for line in need_shared(SAMPLE).read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        by_lang[canonical(row["lang"])].append(row["text"])
    return by_lang


@pytest.fixture(scope="module")
def lingua():
    pytest.importorskip("lingua", reason="lingua-language-detector (the multilingual extra) not installed")
    return {name: make_backend(name, DEFAULT_MODEL) for name in BACKENDS}  # lingua's models load once


def labels(backends, texts: list[str], backend: str) -> list[str]:
    return [predict_one(backends[backend], text)[0] for text in texts]


def right(backends, texts: list[str], lang: str, backend: str) -> int:
    return sum(label == lang for label in labels(backends, texts, backend))


def test_ensemble_tells_apart_what_lid176_confuses(sample, lingua):
    # lid.176 says `no` for half the Nynorsk, hr/sr/sh for Bosnian, and has no Zulu, Xhosa, Maori at all
    for lang in ("nn", "bs", "zu", "xh", "mi", "so"):
        fast, ens = right(lingua, sample[lang], lang, "fasttext"), right(lingua, sample[lang], lang, "ensemble")
        assert ens > fast, (lang, fast, ens)
    for lang in ("no", "da", "sv", "hr", "sr", "hi", "mr", "en", "de"):  # the neighbours stay right
        assert right(lingua, sample[lang], lang, "ensemble") >= 0.8 * len(sample[lang]), lang


def test_ensemble_keeps_malay_and_indonesian_in_their_group(sample, lingua):
    # the hardest pair: neither model separates them well on single sentences (see README), but the
    # ensemble never leaves the pair, and it finds more Malay than lid.176 (which says `id` for 19 of 20)
    for lang in ("ms", "id"):
        assert set(labels(lingua, sample[lang], "ensemble")) <= {"ms", "id"}
    assert right(lingua, sample["ms"], "ms", "ensemble") > right(lingua, sample["ms"], "ms", "fasttext")


def test_ensemble_is_deterministic_and_keep_takes_any_spelling(sample, lingua):
    texts = sample["nn"] + sample["bs"] + sample["ms"]
    first = [predict_one(lingua["ensemble"], text) for text in texts]
    assert predict(texts, backend="ensemble") == first  # another detector: the same labels and scores
    stage = LanguageFilter(LangIdConfig(keep=["nob_Latn", "nno_Latn"], threshold=0.0, backend="ensemble"))
    for text in sample["no"][:5] + sample["nn"][:5]:
        res, d = run(stage, text)
        assert res.reason is None and d.metadata["lang"] in {"no", "nn"}
    res, d = run(stage, sample["da"][0])
    assert res.reason == "not_kept:da" and d.metadata["lang"] == "da"


def test_lingua_backend_labels_languages_lid176_lacks(sample, lingua):
    for lang in ("lg", "sn", "st", "tn", "ts"):
        assert right(lingua, sample[lang], lang, "lingua") >= 0.8 * len(sample[lang]), lang


def test_stage_languages_take_any_spelling():
    cfg = config_from_dict({**GOOD, "filters": {"gopher_quality": {"languages": ["nob_Latn", "eng_Latn", "x-mine"]}}})
    assert cfg.filters.gopher_quality.languages == ["no", "en", "x-mine"]  # another model's label as written
