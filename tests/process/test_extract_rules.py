"""The named extraction rules: each on a small page where it matters, and on the shared reference pages
(where the rule changes pages, it removes more boilerplate snippets than it loses article snippets)."""

import pytest

from raycorpus.cli.evaluate import load_readability, load_trafilatura_eval, shipped_extract_fn, snippet_counts
from raycorpus.process.extract import ExtractConfig
from raycorpus.process.extract_rules import drop_calls_to_action, paragraph_span, trie_pattern, trim_head
from tests.process.test_extract import EXTRACTION, PARAGRAPHS, extract, need

BODY = "".join(f"<p>{p}</p>" for p in PARAGRAPHS)
TEXT = "\n\n".join(PARAGRAPHS)


def test_trim_head_drops_the_menu_run_but_keeps_the_title():
    html = ("<html><body><main><article><div><span>News</span> <span>Transport</span></div><div>23.10.2018</div>"
            f"<div>5 min read</div><h1>Council approves new bike lanes</h1>{BODY}</article></main></body></html>")
    text, _ = extract(html)
    assert text == f"Council approves new bike lanes\n\n{TEXT}"
    before, _ = extract(html, trim_head=False)  # what resiliparse keeps
    assert before.startswith("News Transport\n23.10.2018\n5 min read")


def test_trim_head_on_text():
    assert trim_head(f"Home\nNews\n\nBike lanes approved\n\n{TEXT}") == f"Bike lanes approved\n\n{TEXT}"
    # a date, a byline row or a one-word crumb is no title: the title before it stays, they go
    head = "News\n23.10.2018\n\nBike lanes approved\n12:30 | By Jane Doe | 5 min read\n\n"
    assert trim_head(head + TEXT) == f"Bike lanes approved\n\n{TEXT}"
    assert trim_head(f"Home\n23.10.2018\n{TEXT}") == TEXT
    assert trim_head(f"Local news\nBike lanes approved\n{TEXT}", keep=2) == f"Local news\nBike lanes approved\n{TEXT}"
    assert trim_head("only\nshort\nlines") == "only\nshort\nlines"  # no paragraph: nothing to anchor on
    assert trim_head(TEXT) == TEXT


def test_calls_to_action_in_the_second_half_go():
    html = (f"<html><body><main><article><h1>Council approves new bike lanes</h1>{BODY}"
            "<p>Follow us on Twitter for more news from the city!</p></article></main></body></html>")
    assert extract(html)[0].endswith(PARAGRAPHS[-1])
    assert extract(html, drop_calls_to_action=False)[0].endswith("Follow us on Twitter for more news from the city!")


@pytest.mark.parametrize("line", [
    "Subscribe to our newsletter", "Sign up for free updates", "Folgen Sie uns auf Instagram",
    "Siguenos en Telegram, Instagram, Facebook y Twitter", "Find us on Facebook", "Artikel gefallen? Jetzt teilen!",
    "Share this article with your friends!",
    "Du musst eingeloggt sein um Kommentare zu schreiben!",
    "¡Mira lo que tiene nuestro canal de YouTube!", "Join our Telegram channel", "Download our app for iOS and Android",
    "Gib deine E-Mail-Adresse ein, um diesem Blog zu folgen", "If you enjoyed reading this post, tell a friend",
    "Gefällt dir unser Magazin?", "Unterstütze unabhängigen Journalismus", "Support our journalism today",
])
def test_call_to_action_lines(line):
    assert drop_calls_to_action(f"{TEXT}\n{line}") == TEXT
    assert drop_calls_to_action(f"{line}\n{TEXT}") == f"{line}\n{TEXT}"  # the first half is the article's


def test_an_article_about_social_media_keeps_its_sentences():
    text = f"{TEXT}\nThe mayor said on Twitter that the lanes were only a first step."
    assert drop_calls_to_action(text) == text
    text = f"{TEXT}\nThe mayor's office said the new app is available as a download for residents."
    assert drop_calls_to_action(text) == text  # a sentence about an app asks for nothing
    long_line = "The council will share the results. " * 10  # long lines are paragraphs, never dropped
    assert drop_calls_to_action(f"{TEXT}\n{long_line}") == f"{TEXT}\n{long_line}"


def test_trie_pattern_matches_what_the_flat_alternation_matches():
    import re

    words = ["sig", "sign", "share", "subscri", "log", "facebook"]
    trie, flat = re.compile(trie_pattern(words)), re.compile("|".join(words))
    for s in ["signal", "si", "sharing", "subscribed", "blog", "Facebook".lower(), "nothing", "sig"]:
        assert bool(trie.search(s)) == bool(flat.search(s)), s


def test_the_fallback_takes_the_page_when_main_content_keeps_too_little():
    html = (f'<html><body><div><div><div class="entry share">{BODY}</div></div></div>'
            "<div><a href='/'>Home</a> <a href='/imprint'>Imprint</a></div></body></html>")
    # resiliparse takes the container for a share widget; without the rescue the fallback brings it back
    assert extract(html, rescue_content=False, fallback_chars=0) == ("Home Imprint", None)
    text, _ = extract(html, rescue_content=False)
    assert all(p in text for p in PARAGRAPHS) and "Imprint" not in text  # the paragraphs, not the link row


def test_paragraph_span():
    assert paragraph_span(f"Home\nMenu\n{TEXT}\nImprint\nContact") == TEXT
    assert paragraph_span("Home\nMenu") == ""


def test_rescue_only_on_short_text_gives_what_the_old_rescue_gave():
    html = f'<html><body><div><div><div class="entry share">{BODY}</div></div></div></body></html>'
    assert extract(html) == extract(html, rescue_below_chars=None, fallback_chars=0)


# ---------------------------------------------------------------- on the shared reference pages

RULES = {"trim_head": {"trim_head": False}, "drop_calls_to_action": {"drop_calls_to_action": False},
         "fallback": {"fallback_chars": 0}}


def _snippets(pages, cfg: ExtractConfig) -> tuple[int, int, int]:
    """(with-snippets found, without-snippets found, pages) over the pages."""
    fn = shipped_extract_fn(cfg)
    tp = fp = 0
    for _, html, item in pages:
        a, b, _, _ = snippet_counts(item, fn(html))
        tp, fp = tp + a, fp + b
    return tp, fp, len(pages)


@pytest.mark.parametrize("rule", list(RULES))
def test_each_rule_gains_snippets_on_trafilatura_eval(rule):
    pages = load_trafilatura_eval(need(EXTRACTION / "trafilatura-eval"), every=3)  # a fixed third of the set
    tp_on, fp_on, _ = _snippets(pages, ExtractConfig())
    tp_off, fp_off, _ = _snippets(pages, ExtractConfig(**RULES[rule]))
    assert (tp_on, fp_on) != (tp_off, fp_off), "the rule changes nothing on these pages"
    assert (tp_on - fp_on) >= (tp_off - fp_off), (rule, tp_on, fp_on, tp_off, fp_off)


def test_shipped_keeps_more_of_the_readability_text_than_bare_on_short_pages():
    from resiliparse.extract.html2text import extract_plain_text
    from resiliparse.parse.html import HTMLTree

    from raycorpus.cli.evaluate import bow_prf, resiliparse_extract_fn

    pages = load_readability(need(EXTRACTION / "readability"), every=2)
    shipped, bare = shipped_extract_fn(), resiliparse_extract_fn()
    f_shipped = f_bare = 0.0
    for _, src, expected in pages:
        ref = extract_plain_text(HTMLTree.parse(expected), main_content=False)
        f_shipped += bow_prf(shipped(src), ref)[2]
        f_bare += bow_prf(bare(src), ref)[2]
    assert f_shipped >= f_bare


def test_the_new_rules_change_the_fingerprint_and_switched_off_keep_the_old_one():
    import yaml

    from raycorpus.config import config_from_dict
    from raycorpus.process.extract import RULES_OFF_AS_BEFORE
    from tests.support.paths import REPO

    raw = yaml.safe_load((REPO / "configs/demo.yaml").read_text())
    old = {**raw, "extract": {**raw.get("extract", {}), **RULES_OFF_AS_BEFORE}}
    without_keys = config_from_dict(old).model_dump(mode="json")
    assert config_from_dict(raw).fingerprint() != config_from_dict(old).fingerprint()
    # the old values are left out of the hash: the same fingerprint as a config of before these fields
    assert all(without_keys["extract"][k] == v for k, v in RULES_OFF_AS_BEFORE.items())
