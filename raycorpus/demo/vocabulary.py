"""The demo crawl's vocabularies, read once from the JSON files in ``raycorpus/demo/vocab/``.

Each loader is cached: the files are parsed on first use and the typed values shared after.
``vocab/README.md`` describes the files and the template notation.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

# The article languages besides English, in the order the counts list them.
LANGUAGES = ("de", "fr", "es", "ru", "zh", "ja")
YEARS = tuple(str(y) for y in range(1890, 2024))  # slot {year}, in every language
PERCENTS = tuple(str(p) for p in range(11, 90, 3))  # slot {pct}

Slots = dict[str, tuple[str, ...]]


@cache
def _read(name: str) -> Any:
    return json.loads(resources.files(__package__).joinpath("vocab", name).read_text(encoding="utf-8"))


def _tuples(table: dict[str, list[str]]) -> Slots:
    return {k: tuple(v) for k, v in table.items()}


@dataclass(frozen=True)
class Grammar:
    """A small grammar for one non-English language: slot vocabularies and sentence/title templates."""

    slots: Slots  # includes ``v``/``vp`` (verb, past form) and ``year``
    sentences: tuple[str, ...]
    titles: tuple[str, ...]
    spaced: bool = True  # False for Chinese and Japanese (no spaces between words)


@dataclass(frozen=True)
class English:
    """English templates and, per topic, the slot vocabularies they are filled from."""

    topics: tuple[str, ...]  # in file order (the generator draws from it)
    slots: dict[str, Slots]  # topic -> slot -> values
    persons: tuple[str, ...]
    sentences: tuple[str, ...]  # sentence cores: [opener, ] core [, tail] + "."
    openers: tuple[str, ...]
    no_opener: tuple[str, ...]  # cores starting with one of these never get an opener
    tails: tuple[str, ...]
    questions: tuple[str, ...]
    quotes: tuple[str, ...]
    titles: tuple[str, ...]
    headings: tuple[str, ...]
    items: tuple[str, ...]
    small_title_words: frozenset[str]  # kept lower-case in title case
    months: tuple[str, ...]


@dataclass(frozen=True)
class Chrome:
    """The words of a site's frame (navigation, cookie banner, sidebar, footer) in one language."""

    nav: tuple[str, ...]  # six labels for the paths in NAV_PATHS
    cookie: str
    accept: str
    learn_more: str
    related: str
    newsletter: str
    newsletter_blurb: str
    subscribe: str
    rights: str
    privacy: str
    terms: str
    byline: str
    search: str
    not_found_title: str
    not_found_text: str


NAV_PATHS = ("/", "/news/", "/topics/", "/opinion/", "/about/", "/contact/")


@dataclass(frozen=True)
class Site:
    domain: str
    name: str
    lang: str
    section: str
    topics: tuple[str, ...] = ()
    theme: str = "site"


@dataclass(frozen=True)
class Sites:
    english: tuple[Site, ...]
    languages: dict[str, Site]  # one site per language in LANGUAGES
    spam: tuple[Site, ...]


@dataclass(frozen=True)
class ShortPage:
    title: str
    text: str


@dataclass(frozen=True)
class PageTexts:
    """Texts of the pages that are not articles, and of the HTTP headers."""

    servers: tuple[str, ...]
    short_pages: tuple[ShortPage, ...]
    spam_products: tuple[str, ...]
    spam_lines: tuple[str, ...]  # str.format templates: {p} the product, {P} in capitals


def third_person(verb: str) -> str:
    if verb.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if verb.endswith("y") and verb[-2:-1] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def _topic_slots(general: Slots, table: dict[str, Any]) -> Slots:
    """One topic's slots: the general ones, the topic's words, and ``verb``/``verbs``/``verbed`` forms."""
    verbs: dict[str, str] = table["verbs"]
    words = {k: tuple(v) for k, v in table.items() if k != "verbs"}
    base = tuple(verbs)
    forms = {"verb": base, "verbs": tuple(map(third_person, base)), "verbed": tuple(verbs.values())}
    return {**general, **words, **forms}


@cache
def english() -> English:
    raw = _read("english.json")
    persons = tuple(f"{first} {last}" for first in raw["first_names"] for last in raw["last_names"])
    general = {"person": persons, **_tuples(raw["slots"]), "year": YEARS, "pct": PERCENTS}
    topics = _read("english_topics.json")
    texts = {k: tuple(raw[k]) for k in ("sentences", "openers", "no_opener", "tails", "questions", "quotes",
                                         "titles", "headings", "items", "months")}
    return English(
        topics=tuple(topics),
        slots={topic: _topic_slots(general, table) for topic, table in topics.items()},
        persons=persons,
        small_title_words=frozenset(raw["small_title_words"]),
        **texts,
    )


@cache
def grammar(lang: str) -> Grammar:
    """The grammar of one language in LANGUAGES; its verbs become the slots ``v`` and ``vp``."""
    raw = _read(f"{lang}.json")
    verbs: dict[str, str] = raw["verbs"]
    slots = _tuples(raw["slots"]) | {"v": tuple(verbs), "vp": tuple(verbs.values()), "year": YEARS}
    return Grammar(slots, tuple(raw["sentences"]), tuple(raw["titles"]), raw["spaced"])


@cache
def chrome(lang: str) -> Chrome:
    raw = _read("chrome.json")[lang]
    return Chrome(**{**raw, "nav": tuple(raw["nav"])})


def _site(raw: dict[str, Any]) -> Site:
    return Site(**{**raw, "topics": tuple(raw.get("topics", ()))})


@cache
def sites() -> Sites:
    raw = _read("sites.json")
    return Sites(
        english=tuple(map(_site, raw["english"])),
        languages={lang: _site(site) for lang, site in raw["languages"].items()},
        spam=tuple(map(_site, raw["spam"])),
    )


@cache
def page_texts() -> PageTexts:
    raw = _read("pages.json")
    return PageTexts(
        servers=tuple(raw["servers"]),
        short_pages=tuple(ShortPage(**p) for p in raw["short_pages"]),
        spam_products=tuple(raw["spam_products"]),
        spam_lines=tuple(raw["spam_lines"]),
    )
