"""The DOM extraction rule (cut after the article body): on small pages where it matters, and on the shared
reference pages (both sets: it must pay on one and hold on the other)."""

import pytest
from resiliparse.extract.html2text import extract_plain_text
from resiliparse.parse.html import HTMLTree

from raycorpus.cli.evaluate import bow_prf, load_readability, load_trafilatura_eval, shipped_extract_fn, snippet_counts
from raycorpus.process.extract import ExtractConfig
from raycorpus.process.extract_dom import cut_after_article
from tests.process.test_extract import EXTRACTION, PARAGRAPHS, extract, need

BODY = "".join(f"<p>{p}</p>" * 2 for p in PARAGRAPHS)  # 6 paragraphs, ~920 characters
BIO = "Jane Doe has covered cities and transport for the Example Times since 2009 and lives in Leeds."
TEASER = "Why the new tram line will be late again, and what the city says about the costs of it"


def test_what_follows_the_article_body_goes():
    html = (f"<html><body><main><article><h1>Council approves new bike lanes</h1>"
            f"<div class='entry-content'>{BODY}</div><div class='bio'><p>{BIO}</p></div></article>"
            f"<div class='more'><p>{TEASER}.</p></div></main></body></html>")
    text, _ = extract(html)
    assert text.startswith("Council approves new bike lanes") and text.endswith(PARAGRAPHS[-1])
    before, _ = extract(html, cut_after_article=False)  # what resiliparse keeps
    assert BIO in before and TEASER in before


def test_an_article_body_split_in_blocks_is_kept_to_its_last_block():
    blocks = [f"<div class='article-text'>{BODY}</div>"] * 2
    html = (f"<html><body><article>{blocks[0]}<div class='ad'><p>Advertisement</p></div>{blocks[1]}"
            f"<div class='bio'><p>{BIO}</p></div></article></body></html>")
    text, _ = extract(html)
    assert text.count(PARAGRAPHS[0]) == 4 and text.endswith(PARAGRAPHS[-1]) and BIO not in text


def test_without_a_body_class_the_last_long_article_element_is_the_body():
    teaser = f"<article><h3>{TEASER}</h3></article>"  # short: a teaser, not the body
    html = (f"<html><body><main><article><h1>Council approves new bike lanes</h1>{BODY}</article>"
            f"<div class='bio'><p>{BIO}</p></div>{teaser}</main></body></html>")
    text, _ = extract(html)
    assert text.endswith(PARAGRAPHS[-1]) and BIO not in text and TEASER not in text
    assert BIO in extract(html, cut_after_article=False)[0]


@pytest.mark.parametrize("attr", ["class='story-body'", "class='StoryBody-sc-1x'", "class='itemBody'",
                                  "class='w-richtext'", "class='cms-rich-text'", "class='news-text'",
                                  "id='article_maincontent'", "class='fulltext'"])
def test_story_item_and_rich_text_bodies_are_article_bodies(attr):
    """News sites' story bodies, Joomla K2's ``itemBody``, CMS rich-text blocks, full-text containers."""
    html = (f"<html><body><main><h1>Council approves new bike lanes</h1><div {attr}>{BODY}</div>"
            f"<div class='box'><p>{BIO}</p></div></main></body></html>")
    text, _ = extract(html)
    assert text.endswith(PARAGRAPHS[-1]) and BIO not in text
    assert BIO in extract(html, cut_after_article=False)[0]


def test_a_rich_text_block_in_the_sidebar_is_no_article_body():
    html = (f"<html><body><main><h1>Council approves new bike lanes</h1>{BODY}</main>"
            f"<aside><div class='rich-text'><p>{PARAGRAPHS[0]}</p></div></aside></body></html>")
    tree = HTMLTree.parse(html)
    assert not cut_after_article(tree.body)  # under 500 characters: not the body, nothing cut


def test_a_short_body_element_or_none_cuts_nothing():
    short = f"<html><body><div class='post-content'><p>{PARAGRAPHS[0]}</p></div><p>{BIO}</p></body></html>"
    tree = HTMLTree.parse(short)
    assert not cut_after_article(tree.body) and BIO in tree.body.text  # 166 characters: no article body
    tree = HTMLTree.parse(f"<html><body>{BODY}<p>{BIO}</p></body></html>")
    assert not cut_after_article(tree.body) and BIO in tree.body.text


def test_white_space_runs_count_as_one_character_beyond_the_first_2000():
    """The length test reads the first 4 x 500 characters first; text past them still counts."""
    spaced = f"<p>{PARAGRAPHS[0][:40]}{' ' * 2500}{PARAGRAPHS[1]}{PARAGRAPHS[2]}</p>"  # ~420 characters
    page = f"<html><body><div class='post-content'>{spaced}{spaced}</div><p>{BIO}</p></body></html>"
    tree = HTMLTree.parse(page)
    assert cut_after_article(tree.body) and BIO not in tree.body.text  # two runs of spaces and ~840 characters
    page = f"<html><body><div class='post-content'>{spaced}</div><p>{BIO}</p></body></html>"
    tree = HTMLTree.parse(page)
    assert not cut_after_article(tree.body) and BIO in tree.body.text  # 2,900 characters, but ~420 counted


# ---------------------------------------------------------------- on the shared reference pages


def test_cut_after_article_pays_on_trafilatura_eval():
    pages = load_trafilatura_eval(need(EXTRACTION / "trafilatura-eval"), every=2)  # a fixed half of the set
    counts = {}
    for on in (True, False):
        fn = shipped_extract_fn(ExtractConfig(cut_after_article=on))
        tp = fp = 0
        for _, html, item in pages:
            a, b, _, _ = snippet_counts(item, fn(html))
            tp, fp = tp + a, fp + b
        counts[on] = (tp, fp)
    assert counts[True][0] - counts[True][1] > counts[False][0] - counts[False][1], counts


def test_cut_after_article_holds_on_readability():
    pages = load_readability(need(EXTRACTION / "readability"))
    on, off = shipped_extract_fn(), shipped_extract_fn(ExtractConfig(cut_after_article=False))
    f_on = f_off = 0.0
    for _, src, expected in pages:
        ref = extract_plain_text(HTMLTree.parse(expected), main_content=False)
        f_on += bow_prf(on(src), ref)[2]
        f_off += bow_prf(off(src), ref)[2]
    assert f_on >= f_off - 1e-9, (f_on / len(pages), f_off / len(pages))
