"""The demo vocabularies: every file loads into typed values, and the templates only use slots that exist."""

import re
import string
from importlib import resources

import pytest

from raycorpus.demo import vocabulary as v

TOKEN = re.compile(r"\{(?:a_)?([a-z]+)\d?\}")


def slot_names(template: str) -> set[str]:
    return set(TOKEN.findall(template))


def test_every_vocabulary_file_is_read_by_a_loader():
    files = {f.name for f in resources.files("raycorpus.demo").joinpath("vocab").iterdir() if f.name.endswith(".json")}
    expected = {"english.json", "english_topics.json", "chrome.json", "sites.json", "pages.json"}
    assert files == expected | {f"{lang}.json" for lang in v.LANGUAGES}


def test_loaders_return_typed_values_once():
    en = v.english()
    assert v.english() is en and v.grammar("de") is v.grammar("de")
    assert isinstance(en, v.English) and all(isinstance(x, tuple) and x for x in en.slots[en.topics[0]].values())
    assert len(en.persons) == len(set(en.persons)) > 100 and len(en.months) == 12
    for lang in ("en", *v.LANGUAGES):
        assert isinstance(v.chrome(lang), v.Chrome) and len(v.chrome(lang).nav) == len(v.NAV_PATHS)
    assert all(isinstance(p, v.ShortPage) for p in v.page_texts().short_pages)


@pytest.mark.parametrize("topic", v.english().topics)
def test_english_templates_use_known_slots(topic):
    en = v.english()
    slots = en.slots[topic]
    assert {"verb", "verbs", "verbed", "person", "year", "pct"} <= set(slots)
    assert len(slots["verb"]) == len(slots["verbs"]) == len(slots["verbed"])
    for deck in (en.sentences, en.openers, en.tails, en.questions, en.quotes, en.titles, en.headings, en.items):
        for template in deck:
            assert slot_names(template) <= set(slots), template


@pytest.mark.parametrize("lang", v.LANGUAGES)
def test_each_language_grammar_is_complete(lang):
    g = v.grammar(lang)
    assert g.sentences and g.titles and g.spaced == (lang not in ("zh", "ja"))
    assert len(g.slots["v"]) == len(g.slots["vp"]) and g.slots["name"]
    for template in g.sentences + g.titles:
        assert slot_names(template) <= set(g.slots), template
    marked = ["|" in t and t.rsplit("|", 1)[1] in ("m", "f", "n") for t in g.slots.get("thing", ())]
    assert all(marked) or not any(marked)  # gendered languages mark every noun that adjectives agree with


def test_sites_and_page_texts_fit_the_vocabularies():
    sites = v.sites()
    assert set(sites.languages) == set(v.LANGUAGES)
    assert all(s.lang == lang for lang, s in sites.languages.items())
    assert all(s.lang == "en" and s.topics and set(s.topics) <= set(v.english().topics) for s in sites.english)
    assert sites.spam and all(s.lang == "en" for s in sites.spam)
    fields = {name for line in v.page_texts().spam_lines for _, name, _, _ in string.Formatter().parse(line) if name}
    assert fields == {"p", "P"}
