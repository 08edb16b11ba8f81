"""The fastText language ID's cheaper paths against the full-window path of before, on real extracted pages
(the ../shared WARCs and extraction test pages): the direct call of the model's predict gives the same
(label, score) as fasttext_predict; the early exit (filters.langid.early_exit) gives the same labels and keep
decisions, and off it is the output and fingerprint of before."""

from __future__ import annotations

import pytest

from raycorpus.config import ConfigError, config_from_dict
from raycorpus.process.filters.langcodes import canonical_or_raw
from raycorpus.process.filters.langid import LangIdConfig, LanguageFilter, predict_one
from raycorpus.process.filters.langid_backends import (
    EARLY_MARGIN,
    LID176,
    MAX_CHARS,
    UNKNOWN,
    WINDOWS,
    FastTextBackend,
    make_backend,
)
from raycorpus.process.filters.langid_early import labelled_documents
from raycorpus.process.filters.langid_tune import read_sample, split
from raycorpus.process.filters.resources import fasttext_line, fasttext_predict
from tests.support.paths import SHARED, need_shared


def full_window_answer(backend: FastTextBackend, text: str) -> tuple[str, float]:
    """The answer of before: every window, through fasttext_predict (the model's Python wrapper)."""
    found = fasttext_predict(backend.model, fasttext_line(text, MAX_CHARS, WINDOWS))
    return (canonical_or_raw(found[0][0]), found[0][1]) if found else UNKNOWN


@pytest.fixture(scope="module")
def pages() -> list[str]:
    from raycorpus.cli.langid_eval import extraction_page_texts, real_page_texts

    texts = real_page_texts(need_shared(SHARED / "data" / "warc"))
    texts += extraction_page_texts(need_shared(SHARED / "data" / "extraction"))
    assert len(texts) > 1000
    return texts


@pytest.fixture(scope="module")
def backend() -> FastTextBackend:
    return FastTextBackend(LID176)


def test_direct_predict_gives_the_answer_of_the_wrapper_on_real_pages(pages, backend):
    for text in pages:
        line = fasttext_line(text, MAX_CHARS, WINDOWS)
        assert backend.top(line) == full_window_answer(backend, text)


@pytest.mark.parametrize("text", ["caf\udce9 au lait", "\ud800", "", " ", "\x00", "日本語のテキスト"])
def test_direct_predict_on_odd_lines(backend, text):
    assert backend.top(text) == full_window_answer(backend, text)


def kept(answer: tuple[str, float]) -> bool:
    return answer[0] == "en" and answer[1] >= 0.65  # keep: [en] at the default threshold


def test_early_exit_gives_the_labels_and_decisions_of_the_full_window_path_on_real_pages(pages, backend):
    early = make_backend("fasttext", LID176, ["en"], early_exit=True)
    exits = 0
    for text in pages:
        full, fast = full_window_answer(backend, text), predict_one(early, text)
        assert fast[0] == full[0] and kept(fast) == kept(full), text[:200]
        if len(text) <= MAX_CHARS or fast[1] < EARLY_MARGIN:
            assert fast == full  # predicted as before: a short text, or an early answer below the margin
        exits += fast != full
    assert exits > len(pages) // 2  # most long pages stop at the first prediction


def test_early_exit_keeps_the_accuracy_on_labelled_documents_of_the_validation_half(backend):
    rows = read_sample(need_shared(SHARED / "data" / "langid" / "sample_20_per_lang.jsonl"))
    docs = labelled_documents(rows, split(rows)[1])
    early = FastTextBackend(LID176, early_exit=True)
    full = [full_window_answer(backend, d)[0] for _, d in docs]
    fast = [early(d)[0] for _, d in docs]
    assert fast == full  # every label the same, so the accuracy too
    assert sum(f == lang for f, (lang, _) in zip(fast, docs, strict=True)) / len(docs) >= 0.8


def test_early_exit_is_on_by_default_with_lid176_off_keeps_the_old_fingerprint_and_is_fasttext_only():
    good = {"input": {"manifest": "m.txt"}, "output": {"path": "out"}, "tokenizer": {"path": "tok.json"}}
    plain = config_from_dict(good).fingerprint()
    off = config_from_dict({**good, "filters": {"langid": {"early_exit": False}}})
    on = config_from_dict({**good, "filters": {"langid": {"early_exit": True}}})
    assert on.fingerprint() == plain != off.fingerprint()
    assert off.model_dump()["filters"]["langid"]["early_exit"] is False  # (stored as written; the fingerprint omits it)
    stage = LanguageFilter(on.filters.langid)
    assert isinstance(stage.backend, FastTextBackend) and stage.backend.early_exit
    assert LanguageFilter(LangIdConfig()).backend.early_exit
    assert not LangIdConfig(model="/models/glotlid.bin").early_exit  # chosen on lid.176: off for another model
    assert not LangIdConfig(keep=None).early_exit  # (the ensemble)
    with pytest.raises(ConfigError, match="early_exit"):
        config_from_dict({**good, "filters": {"langid": {"early_exit": True, "backend": "ensemble"}}})
