"""Gopher / C4 / FineWeb heuristics: each rule fires on a bad case and not on a good one; odd input never raises."""

import functools
import tempfile
from pathlib import Path

import pytest

from raycorpus.config import config_from_dict
from raycorpus.document import Document
from raycorpus.filters.base import TextView
from raycorpus.filters.c4 import C4Filter
from raycorpus.filters.fineweb import FineWebQualityFilter
from raycorpus.filters.gopher import GopherQualityFilter, GopherRepetitionFilter
from raycorpus.filters.settings import C4Config, FineWebQualityConfig, GopherQualityConfig, GopherRepetitionConfig
from raycorpus.pipeline import WarcProcessor
from raycorpus.sample import write_sample_crawl

NOUNS = "garden river teacher market village engine letter window harvest doctor bridge island".split()


@functools.cache
def _articles() -> tuple[str, ...]:
    """Real-looking English articles: the first documents of the project's own sample crawl."""
    tmp = Path(tempfile.mkdtemp())
    crawl = write_sample_crawl(tmp, n_warcs=1, pages_per_warc=12, seed=7)
    cfg = config_from_dict({"input": {"manifest": "m"}, "output": {"path": str(tmp / "o")}, "tokenizer": {"path": "t"}})
    docs = WarcProcessor(cfg, with_filters=False).process(0, str(crawl.warc_paths[0])).docs
    return tuple(d.text for d in docs if "/posts/" in d.url or "/news/" in d.url or "/article" in d.url)


def good_text(paragraphs=6, seed=0) -> str:
    """Varied English prose with stop words and punctuation and no repetition."""
    paras = [p for t in _articles() for p in t.split("\n\n") if len(p) > 150]
    return "\n\n".join(paras[seed : seed + paragraphs])


def run(f, text):
    return f(Document(text=text, url="", record_id="", date=""), TextView(text))


GQ = GopherQualityFilter(GopherQualityConfig())
GR = GopherRepetitionFilter(GopherRepetitionConfig())
C4 = C4Filter(C4Config())
FW = FineWebQualityFilter(FineWebQualityConfig())


def test_good_prose_passes_every_filter():
    text = good_text()
    for f in (GQ, GR, FW):
        assert run(f, text).reason is None, f.name
    r = run(C4, text)
    assert r.reason is None and r.signals["c4.lines_removed"] == 0


@pytest.mark.parametrize("text, reason", [
    ("the cat and the dog sat with that rat to be of use", "too_few_words"),
    (good_text() + " " + "# " * 400, "hash_ratio"),
    ("\n".join(f"• the {w} of the day and that is all, with more to be seen here now" for w in NOUNS * 5),
     "bullet_lines_ratio"),
    ("\n".join(f"the {w} of the day and that is all, with more to be seen here now..." for w in NOUNS * 5),
     "ellipsis_lines_ratio"),
    (" ".join(["the", "of", "and"] + ["zqxwvkjhgf"] * 300), None),  # mean length 10 + stop words: boundary below
    (" ".join(["the", "of", "and"] + ["a"] * 300), "mean_word_length"),
    (" ".join(["abcd", "efgh"] * 100) + ".", "stop_words"),
])
def test_gopher_quality_rules(text, reason):
    got = run(GQ, text).reason
    if reason is None:
        assert got != "mean_word_length"
    else:
        assert got == reason


def test_gopher_quality_alpha_words_and_word_bounds():
    numbers = good_text(1) + " " + " ".join(str(10**6 + i) for i in range(400))
    assert run(GQ, numbers).reason == "alpha_words_ratio"
    huge = " ".join(["the of and with"] * 30_000)
    assert run(GQ, huge).reason == "too_many_words"


def test_gopher_repetition_rules():
    line = "The river of the town visited that bridge with care and have to be seen."
    assert run(GR, "\n".join([line] * 20 + [good_text(1)])).reason.startswith(("dup_line", "dup_para", "top_"))
    para = good_text(1, seed=3)
    assert run(GR, "\n\n".join([para] * 4 + [good_text(2, seed=4)])).reason.startswith(("dup_para", "dup_line"))
    spam = " ".join(["buy cheap pills now"] * 60)
    assert run(GR, spam).reason.startswith(("top_", "dup_"))
    assert run(GR, good_text(8, seed=5)).reason is None


def test_c4_line_filter_and_document_rules():
    text = good_text(3) + "\nPlease enable JavaScript to view this page and all of it.\nShare\n" \
        "This site uses cookies to improve your experience on it."
    r = run(C4, text)
    assert r.reason is None and r.text is not None
    assert "JavaScript" not in r.text and "cookies" not in r.text and "\nShare" not in r.text
    assert "The " in r.text
    assert run(C4, good_text(3) + "\nLorem ipsum dolor sit amet, consectetur adipiscing.").reason == "lorem_ipsum"
    assert run(C4, good_text(3) + "\nfunction f() { return the value of it; }").reason == "curly_brace"
    assert run(C4, "One sentence only here, with the words of it.").reason == "too_few_sentences"
    assert run(C4Filter(C4Config(drop_curly_brace=False)), good_text(3) + "\nuse { and } in the code of it now.") \
        .reason is None


def test_fineweb_rules():
    short = "\n".join(f"{w} and more" for w in NOUNS * 10)
    assert run(FW, short).reason in ("line_punct_ratio", "short_line_ratio")
    lines = [f"the {w} {i} of the town and that is all of it with care and time to see" for i, w in
             enumerate(NOUNS * 4)]
    assert run(FW, "\n".join(lines)).reason == "line_punct_ratio"
    dup = good_text(4) + "\n" + "\n".join(["The same line is here again and again with care."] * 6)
    assert run(FW, dup).reason == "dup_line_char_ratio"
    many_newlines = "\n".join(f"Word {w}." for w in NOUNS * 30)
    assert run(FW, many_newlines).reason in ("newline_word_ratio", "short_line_ratio")


def test_all_signals_mode_agrees_with_early_exit():
    text = good_text(4)
    for cls, cfg in ((GopherQualityFilter, GopherQualityConfig()), (GopherRepetitionFilter, GopherRepetitionConfig()),
                     (FineWebQualityFilter, FineWebQualityConfig()), (C4Filter, C4Config())):
        fast, full = run(cls(cfg), text), run(cls(cfg, all_signals=True), text)
        assert fast.reason == full.reason
        assert all(full.signals[k] == v for k, v in fast.signals.items())
        assert len(full.signals) >= len(fast.signals)


@pytest.mark.parametrize("text", [
    "", " \n\n ", "x" * 5_000_000, bytes(range(256)).decode("latin-1") * 200, "東京は大きい都市です。" * 500,
    "สวัสดีครับยินดีต้อนรับ" * 300, "bad \ud800 surrogate and more \udfff text", "\n" * 10_000, "{" * 1000,
])
def test_bad_input_never_raises(text):
    for f in (GQ, GR, C4, FW, GopherQualityFilter(GopherQualityConfig(), all_signals=True)):
        r = run(f, text)
        assert r.reason is None or isinstance(r.reason, str)
