"""The fastText language ID's cheaper paths against the full-window path of before, on real extracted pages
(the ../shared WARCs and extraction test pages): the direct call of the model's predict gives the same
(label, score) as fasttext_predict."""

from __future__ import annotations

import pytest

from raycorpus.process.filters.langcodes import canonical_or_raw
from raycorpus.process.filters.langid_backends import LID176, MAX_CHARS, UNKNOWN, WINDOWS, FastTextBackend
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
