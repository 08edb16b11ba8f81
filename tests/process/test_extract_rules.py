"""The named extraction rules: each on a small page where it matters, and on the shared reference pages
(where the rule changes pages, it removes more boilerplate snippets than it loses article snippets)."""

import re

import pytest

from raycorpus.cli.evaluate import load_readability, load_trafilatura_eval, shipped_extract_fn, snippet_counts
from raycorpus.process import extract as extract_module
from raycorpus.process import extract_dom, extract_rules
from raycorpus.process.extract import ExtractConfig, clean_lines
from raycorpus.process.extract_rules import (
    Caseless,
    drop_calls_to_action,
    exact_lower,
    paragraph_span,
    trie_pattern,
    trim_head,
)
from tests.process.test_extract import EXTRACTION, PARAGRAPHS, extract, need

LONG_S, DOTLESS_I = "\u017f", "\u0131"
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


# ---------------------------------------------------------------- case-insensitive rules on lower-cased text


def _caseless_patterns() -> list[Caseless]:
    """Every rule pattern that takes the lower-case fast path, in the three extraction modules."""
    return [value for module in (extract_module, extract_dom, extract_rules) for value in vars(module).values()
            if isinstance(value, Caseless)]


def test_the_lower_case_path_finds_what_ignorecase_finds_for_every_character():
    """The fast path matches lower-case patterns case-sensitively in ``exact_lower(text)``. That is exact only if,
    for each letter the patterns use, ``re.IGNORECASE`` matches the characters whose ``lower()`` is that letter, and
    every character keeps its length: checked over all of Unicode, outside the characters ``exact_lower`` refuses."""
    patterns = _caseless_patterns()
    assert len(patterns) >= 4  # heading, boilerplate line, disclosure, article-body tokens
    every = "".join(chr(cp) for cp in range(0x110000) if not 0xD800 <= cp < 0xE000)
    exact = "".join(ch for ch in every if exact_lower(ch) is not None)
    assert len(exact) < len(every)  # capital I with dot, dotless i and long s are refused
    assert all(len(ch.lower()) == 1 for ch in exact)
    lowered: dict[str, set[str]] = {}
    for ch in exact:
        lowered.setdefault(ch.lower(), set()).add(ch)
    for pattern in patterns:
        source = re.sub(r"\\[a-zA-Z]", "", pattern.lower.pattern)  # without escapes (\W, \s, \b ...)
        assert source == source.lower(), "a rule pattern's letters must be lower case"
        for letter in {ch for ch in source if ch.isalpha()}:
            assert set(re.findall(re.escape(letter), exact, re.IGNORECASE)) == lowered[letter], letter


def test_text_with_a_long_s_or_a_dotless_i_takes_the_case_folding_path():
    """``re.IGNORECASE`` folds the long s to s, ``str.lower`` does not: such a text must not be lower-cased."""
    body = "\n\n".join(PARAGRAPHS)
    see_also = f"{LONG_S}ee al{LONG_S}o"  # "see also" with long s: boilerplate to re.IGNORECASE
    assert exact_lower(f"{see_also}: x") is None and exact_lower("Read more: \u0130stanbul") is None
    for line in (f"{see_also}: another {LONG_S}tory", "READ MORE: \u0130stanbul'da yeni k\u00f6pr\u00fc",
                 f"Related: \u00c7{DOTLESS_I}k{DOTLESS_I}\u015f"):
        assert clean_lines(f"{body}\n\n{line}\n\n{body}", 1.0) == f"{body}\n\n{body}"
    assert Caseless("see also").on(False).match(see_also) and not Caseless("see also").on(True).match(see_also)
    assert Caseless("see also").search(f"x {see_also}") and Caseless("see also").search("x SEE ALSO")  # either path


def test_the_rules_give_the_same_text_on_both_paths_on_real_pages():
    """The lower-case path changes only the speed: on the reference pages the line rules keep the same lines when
    the text is run through the case-folding path instead."""
    need(EXTRACTION / "trafilatura-eval")
    texts = [html for _, html, _ in load_trafilatura_eval(EXTRACTION / "trafilatura-eval", 8)]
    raw = [extract(html, clean_lines=False, trim_tail=False, trim_head=False, drop_calls_to_action=False)[0] or ""
           for html in texts]
    marker = LONG_S  # a line holding a long s sends the text down the case-folding path
    changed = 0
    for text in raw:
        fast, folded = clean_lines(text, 0.7), clean_lines(f"{text}\n{marker}", 0.7)
        assert folded.removesuffix(marker).rstrip() == fast.rstrip()
        changed += fast != text
    assert changed > len(raw) // 4  # the rules did drop lines on these pages
