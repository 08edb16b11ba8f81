"""English words as datatrove sees them: the port of spaCy's tokenizer gives spaCy's own token lists."""

from __future__ import annotations

import functools

import pytest

from raycorpus.process.filters.spacy_tokens import CACHE_SIZE, english_tokens, rules
from tests.support.paths import SHARED, need_shared

TRICKY = [
    "I don't know, you can't say it's fine -- isn't it?",  # contractions, double hyphen
    "Dr. Smith met Mr. Jones at 10:30 a.m. in the U.S. on Jan. 5th.",  # abbreviations, times
    "See https://example.com/path?q=1, or www.test.org/a. Mail me@host.com!",  # URLs, e-mail
    "It costs $5.99 (US$7) or 100km/h, 5%, 3.5kg, 80TB and 20°C.",  # currencies, units
    "Well-known co-operative state-of-the-art 2020-2021 e.g. i.e. etc.",  # hyphens, ranges
    "He said \"yes\" and 'no'... then :) or ;-) -- \u201cquoted\u201d \u2018single\u2019",  # quotes, emoticons
    "cannot gonna wanna im Im dont Wed. z.B. (e.g.) [1] {x} <tag> a/b a:b a=b",  # specials, infixes
    "Ünïcödé naïve café — resume…  tab\tand\nnewline  double  spaces",
]


@functools.cache
def _english():
    spacy = pytest.importorskip("spacy", reason="spaCy is not installed (the test extra): nothing to compare with")
    return spacy.blank("en")


def spacy_tokens(text: str) -> list[str]:
    """datatrove's English words: spaCy's tokens, whitespace ones left out."""
    return [t.text.strip() for t in _english().tokenizer(text) if t.text.strip()]


@pytest.mark.parametrize("text", TRICKY)
def test_tokens_are_spacy_s_on_tricky_text(text):
    assert english_tokens(text) == spacy_tokens(text)


def test_tokens_are_spacy_s_on_real_pages():
    from raycorpus.cli.evaluate import load_trafilatura_eval, shipped_extract_fn

    pages = load_trafilatura_eval(need_shared(SHARED / "data" / "extraction" / "trafilatura-eval"), every=3)
    extract = shipped_extract_fn()
    texts = [extract(html) for _, html, _ in pages]
    assert sum(english_tokens(t) == spacy_tokens(t) for t in texts) == len(texts)


def test_the_chunk_cache_is_bounded_and_changes_nothing():
    text = " ".join(f"w{i}, (x{i}) e.g." for i in range(CACHE_SIZE // 2))  # more distinct chunks than it holds
    first = english_tokens(text)
    assert len(rules("en").chunks) <= CACHE_SIZE
    assert english_tokens(text) == first


def test_every_shipped_language_gives_spacy_s_tokens_on_its_sentences():
    """Each language label datatrove tokenizes with spaCy: lingua's labelled sentences of that language (20
    each), cut by the shipped rules and by ``spacy.blank(code)`` itself."""
    import json

    spacy = pytest.importorskip("spacy", reason="spaCy is not installed (the test extra): nothing to compare with")
    from raycorpus.process.filters.spacy_tokens import _languages, rules_for

    rows = [json.loads(line) for line in need_shared(SHARED / "data" / "langid" / "sample_20_per_lang.jsonl")
            .read_text(encoding="utf-8").splitlines() if line.strip()]
    checked = set()
    for label, code in _languages().items():
        texts = [r["text"] for r in rows if r["lang"] == label]
        if not texts:
            continue
        nlp = spacy.blank(code)
        for text in texts:
            want = [t.text.strip() for t in nlp.tokenizer(text) if t.text.strip()]
            assert rules_for(label).tokens(text) == want, (label, code, text)
        checked.add(label)
    assert len(checked) >= 30, sorted(checked)
