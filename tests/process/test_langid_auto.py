"""filters.langid.backend: auto (the default): what it resolves to, that the English default keeps its fingerprint,
the packaged list of languages lid.176 identifies well (and the rule that made it, rerun on the shared sample), the
ensemble whose lingua holds only the kept scripts' languages against the one with all 75, and the accuracy of the
multilingual default (keep: null) on the validation half of the shared sample."""

import json

import pytest

from raycorpus.config import config_from_dict
from raycorpus.process.filters.langid import DEFAULT_MODEL, LangIdConfig, LanguageFilter, predict_one, verdict
from raycorpus.process.filters.langid_backends import (
    LID176,
    EnsembleBackend,
    FastTextBackend,
    fasttext_languages,
    lingua_codes,
    lingua_languages,
    make_backend,
    resolve_backend,
    script_group,
)
from raycorpus.process.filters.langid_tune import OUT, predictions, read_sample, split, tune
from tests.support.paths import SHARED, need_shared

GOOD = {"input": {"manifest": "m.txt"}, "output": {"path": "out"}, "tokenizer": {"path": "tok.json"}}
SAMPLE = SHARED / "data" / "langid" / "sample_20_per_lang.jsonl"
# The English-only default's config fingerprint, computed on main at 865e16a, before `backend: auto` existed. It must
# not move with auto (a resumed English output is not refused); a deliberate change of another default output changes
# it too: update it there, saying why. Since `filters.langid.early_exit` is on by default (a new output: the scores of
# long pages move), `early_exit: false` gives it back (tests/runtime/test_earlier_defaults.py).
ENGLISH_DEFAULT_BEFORE_AUTO = "575c57c831f81726"
EARLY_EXIT_OFF = {"early_exit": False}

def langid(**settings) -> LangIdConfig:
    return config_from_dict({**GOOD, "filters": {"langid": settings}}).filters.langid


def with_langid(**settings) -> dict:
    return {**GOOD, "filters": {"langid": settings}}


@pytest.mark.parametrize("settings, backend", [
    ({}, "fasttext"),  # the default config: keep [en]
    ({"keep": ["en"]}, "fasttext"),
    ({"keep": ["eng_Latn"], "backend": "auto"}, "fasttext"),
    ({"keep": ["de", "fr", "es", "ja", "ru", "ar"]}, "fasttext"),  # a multilingual list lid.176 is good at
    ({"keep": ["de", "nn"]}, "ensemble"),  # Nynorsk: lid.176 says `no` for half of it
    ({"keep": ["zu"]}, "ensemble"),  # lid.176 has no Zulu
    ({"keep": ["ceb"]}, "ensemble"),  # not measured: not on the list
    ({"keep": None}, "ensemble"),  # every language
    ({"keep": None, "model": "/models/glotlid.bin"}, "fasttext"),  # another model: the list says nothing of it
    ({"keep": None, "backend": "fasttext"}, "fasttext"),  # explicit choices stay as written
    ({"keep": ["en"], "backend": "ensemble"}, "ensemble"),
    ({"keep": ["en"], "backend": "lingua"}, "lingua"),
])
def test_auto_resolves_when_the_config_is_read(settings, backend):
    cfg = langid(**settings)
    assert cfg.backend == backend
    assert cfg.model_dump()["backend"] == backend  # what run.json, the fingerprint and the workers see
    if settings.get("backend", "auto") == "auto":
        assert resolve_backend("auto", cfg.keep, cfg.model) == backend


def test_the_stage_builds_the_backend_auto_means():
    assert isinstance(LanguageFilter(LangIdConfig()).backend, FastTextBackend)
    assert isinstance(LanguageFilter(LangIdConfig(keep=["de", "fr"])).backend, FastTextBackend)
    stage = LanguageFilter(LangIdConfig(keep=["nn", "no"]))
    assert isinstance(stage.backend, EnsembleBackend) and stage.backend.lingua.languages == lingua_languages(["nn"])
    assert LanguageFilter(LangIdConfig(keep=None)).backend.lingua.languages is None  # all 75
    assert isinstance(make_backend("auto", LID176, ["en"]), FastTextBackend)


def test_english_default_keeps_its_fingerprint():
    assert config_from_dict(with_langid(**EARLY_EXIT_OFF)).fingerprint() == ENGLISH_DEFAULT_BEFORE_AUTO
    for settings in ({"keep": ["en"]}, {"keep": ["en"], "backend": "auto"}, {"keep": ["en"], "backend": "fasttext"},
                     {"keep": ["eng_Latn"]}):
        assert config_from_dict(with_langid(**settings, **EARLY_EXIT_OFF)).fingerprint() == ENGLISH_DEFAULT_BEFORE_AUTO
        assert config_from_dict(with_langid(**settings)).fingerprint() == config_from_dict(GOOD).fingerprint()


def test_keep_null_fingerprints_as_the_ensemble_it_means():
    # keep: null was built with fastText before: a resumed old output is refused (backend: fasttext finishes it)
    auto = config_from_dict(with_langid(keep=None)).fingerprint()
    assert auto == config_from_dict(with_langid(keep=None, backend="ensemble")).fingerprint()
    assert auto != config_from_dict(with_langid(keep=None, backend="fasttext")).fingerprint()
    # an ensemble with a keep list loads only the kept scripts' languages: not the output of before, another print
    lists = [config_from_dict(with_langid(keep=["nn"], backend=b)).fingerprint() for b in ("auto", "ensemble")]
    assert lists[0] == lists[1] != config_from_dict(with_langid(keep=["nn"], backend="lingua")).fingerprint()


def test_packaged_list_of_languages():
    table = json.loads(OUT.read_text(encoding="utf-8"))
    assert fasttext_languages() == frozenset(table["languages"])
    assert "en" in table["languages"] and "nn" not in table["languages"] and "zu" not in table["languages"]
    assert table["generated_by"].startswith("python -m raycorpus.process.filters.langid_tune")
    for lang in table["languages"]:  # every listed language met the rule on the tuning half
        assert table["per_language"][lang]["tuning"]["fasttext"]["f1"] >= table["theta"], lang
    assert table["model"] == LID176 == DEFAULT_MODEL


def test_lingua_script_groups_are_linguas_own():
    from lingua import Language

    groups = {"Latn": Language.all_with_latin_script(), "Cyrl": Language.all_with_cyrillic_script(),
              "Arab": Language.all_with_arabic_script(), "Deva": Language.all_with_devanagari_script()}
    for script, languages in groups.items():
        assert lingua_languages([next(iter(languages)).iso_code_639_1.name.lower()]) == frozenset(
            code for code in lingua_codes() if script_group(code) == script)
        assert len(lingua_languages([next(iter(languages)).iso_code_639_1.name.lower()])) == len(languages)
    assert lingua_languages(["zh"]) == lingua_languages(["ja"]) == {"zh", "ja"}  # Han
    assert lingua_languages(["ceb"]) == lingua_languages(["en"])  # a language lingua lacks: its script's
    assert lingua_languages(["am"]) == frozenset()  # Ethiopic: lingua has no language of it
    assert lingua_languages(None) is None and len(lingua_codes()) == 75


@pytest.fixture(scope="module")
def rows():
    return read_sample(need_shared(SAMPLE))


@pytest.fixture(scope="module")
def full_ensemble():
    return EnsembleBackend(DEFAULT_MODEL, None)  # lingua with all 75 languages, as before this change


@pytest.mark.parametrize("keep", [["nn", "no"], ["bs", "hr", "sr"], ["zu", "xh"], ["bg"], ["hi", "nn"], ["zh"],
                                  ["ceb"]])
def test_ensemble_with_the_kept_scripts_languages_labels_as_the_full_one(rows, full_ensemble, keep):
    restricted = make_backend("ensemble", DEFAULT_MODEL, keep)
    assert restricted.lingua.languages == lingua_languages(keep) != lingua_codes()
    scripts = {script_group(k) for k in keep}
    kept = frozenset(keep)
    for lang, text in rows:
        mine, full = predict_one(restricted, text), predict_one(full_ensemble, text)
        if script_group(lang) in scripts:  # a text lingua can be asked about: the same label and score
            assert mine == full, (lang, text, mine, full)
        # every text: the same decision (a text in another script is kept by neither)
        assert (verdict(*mine, kept, 0.65, {}) is None) == (verdict(*full, kept, 0.65, {}) is None), (lang, text)


def test_restricted_ensemble_keeps_what_the_full_one_keeps_on_real_pages(full_ensemble):
    from raycorpus.cli.langid_eval import real_page_texts
    from tests.support.paths import SHARED_WARC

    pages = real_page_texts(need_shared(SHARED_WARC))
    full = [predict_one(full_ensemble, text) for text in pages]
    for keep in (["nn", "no"], ["bs", "hr", "sr"], ["bg"], ["zh"], ["ja", "ko", "th"]):
        restricted, kept = make_backend("ensemble", DEFAULT_MODEL, keep), frozenset(keep)
        for text, theirs in zip(pages, full, strict=True):
            mine = predict_one(restricted, text)
            assert (verdict(*mine, kept, 0.65, {}) is None) == (verdict(*theirs, kept, 0.65, {}) is None), keep
            if verdict(*theirs, kept, 0.65, {}) is None:
                assert mine == theirs  # a kept page: the same label and score


def test_split_is_fixed_and_per_language(rows):
    tuning, validation = split(rows)
    assert len(tuning) == len(validation) == 750 and not set(tuning) & set(validation)
    assert split(rows) == (tuning, validation) and split(rows, seed=1) != (tuning, validation)
    per = {lang: sum(rows[i][0] == lang for i in tuning) for lang, _ in rows}
    assert set(per.values()) == {10}


def test_packaged_list_is_what_the_rule_gives_on_the_shared_sample(rows):
    table = tune(rows, *predictions(rows))
    packaged = json.loads(OUT.read_text(encoding="utf-8"))
    assert table["languages"] == packaged["languages"] and table["theta"] == packaged["theta"]
    assert table["per_language"] == packaged["per_language"]


def test_multilingual_default_accuracy_on_the_validation_half(rows):
    stage = LanguageFilter(LangIdConfig(keep=None))  # default settings but keep: null -> the ensemble
    preds = stage.predict([text for _, text in rows])
    _, validation = split(rows)

    def accuracy(idx):
        return sum(preds[i][0] == rows[i][0] for i in idx) / len(idx)

    assert accuracy(validation) >= 0.95, accuracy(validation)
    assert accuracy(range(len(rows))) >= 0.95


def test_select_names_the_backend_auto_resolved_to():
    """select re-decides from the tag run's labels: a `keep` that makes auto mean another backend is refused with
    the backend to write, and writing it (or keeping auto's resolution) is accepted."""
    from raycorpus.config import ConfigError
    from raycorpus.process.select import check_select_config
    from raycorpus.process.tagrecord import tag_config_dump
    from tests.support.corpus import make_config

    def config(**langid):
        return make_config("/tmp/manifest", "/tmp/unused", "/tmp/tokenizer.json", filters={"langid": langid})

    english_tag = tag_config_dump(make_config("/tmp/manifest", "/tmp/unused", "/tmp/tokenizer.json",
                                              filters={"mode": "tag"}))
    with pytest.raises(ConfigError, match=r"filters\.langid\.backend: the tag run labelled languages with fasttext, "
                                          r"and these langid settings mean ensemble .* write backend: fasttext"):
        check_select_config(english_tag, config(keep=None))
    check_select_config(english_tag, config(keep=None, backend="fasttext"))
    check_select_config(english_tag, config(keep=["en", "de", "fr"]))  # auto means fasttext for them too
    # a tag run from before the early exit's default: the setting to write is named
    before = tag_config_dump(make_config("/tmp/manifest", "/tmp/unused", "/tmp/tokenizer.json",
                                         filters={"mode": "tag", "langid": {"early_exit": False}}))
    with pytest.raises(ConfigError, match=r"filters\.langid\.early_exit: the tag run predicted languages with "
                                          r"early_exit: false .* write early_exit: false"):
        check_select_config(before, config())
    check_select_config(before, config(early_exit=False))
    # one written before the default: early_exit left out of its dump and of its written fields (it was off)
    from raycorpus.process.tagrecord import EXPLICIT, upgraded

    stored = json.loads(json.dumps(before))
    del stored["filters"]["langid"]["early_exit"]
    stored[EXPLICIT]["langid"].remove("early_exit")
    with pytest.raises(ConfigError, match=r"write early_exit: false"):
        check_select_config(upgraded(stored), config())
    check_select_config(upgraded(stored), config(early_exit=False))
