"""Text from templates: sentences, paragraphs and whole articles in English and six other languages.

Every function takes the page's ``random.Random`` and draws from it in a fixed order, so the
text of a page is a pure function of the generator's seed.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from raycorpus.demo.vocabulary import Grammar, Site, Slots, english, grammar

_TOKEN = re.compile(r"\{(a_)?([a-z]+)(\d?)\}")
_GENDERS = {"m": 0, "f": 1, "n": 2}


def cap(text: str) -> str:
    """Upper-case the first letter (after any leading quote or inverted punctuation)."""
    for k, ch in enumerate(text):
        if ch.isalpha():
            return text[:k] + ch.upper() + text[k + 1 :]
    return text


def title_case(text: str) -> str:
    small = english().small_title_words
    words = text.split(" ")
    return " ".join(
        w if (k and w in small) or not w[:1].isalpha() else w[:1].upper() + w[1:] for k, w in enumerate(words)
    )


class Templates:
    """Fills templates for one page; templates are drawn without replacement so a page rarely repeats one."""

    def __init__(self, rng: random.Random, slots: Slots) -> None:
        self.rng = rng
        self.slots = slots
        self._decks: dict[str, list[str]] = {}

    def draw(self, deck: str, items: tuple[str, ...]) -> str:
        pool = self._decks.get(deck)
        if not pool:
            pool = self._decks[deck] = list(items)
            self.rng.shuffle(pool)
        return pool.pop()

    def fill(self, template: str) -> str:
        """Replace ``{slot}``, ``{slot2}`` (a different value) and ``{a_slot}`` (with a/an).

        A value ``noun|f`` sets the grammatical gender that later ``m|f|n`` form lists agree with.
        """
        used: dict[str, str] = {}
        gender = 0

        def sub(m: re.Match[str]) -> str:
            nonlocal gender
            article, name, n = m.groups()
            options = self.slots[name]
            value = self.rng.choice(options)
            while n and len(options) > 1 and value == used.get(name):
                value = self.rng.choice(options)
            used.setdefault(name, value)
            parts = value.split("|")
            if parts[-1] in _GENDERS:
                gender, value = _GENDERS[parts[-1]], parts[0]
            elif len(parts) > 1:
                value = parts[min(gender, len(parts) - 1)]
            if article:
                value = ("an " if value[0] in "aeiou" else "a ") + value
            return value

        return _TOKEN.sub(sub, template)

    def line(self, deck: str, items: tuple[str, ...]) -> str:
        """Draw a template from ``items`` and fill it, capitalised."""
        return cap(self.fill(self.draw(deck, items)))


def english_templates(rng: random.Random, topic: str) -> Templates:
    return Templates(rng, english().slots[topic])


def english_sentence(t: Templates) -> str:
    en = english()
    r = t.rng.random()
    if r < 0.06:
        return t.line("quote", en.quotes)
    if r < 0.12:
        return t.line("question", en.questions)
    s = t.fill(t.draw("core", en.sentences))
    if t.rng.random() < 0.35 and not s.startswith(en.no_opener):
        s = t.fill(t.draw("opener", en.openers)) + ", " + s
    if t.rng.random() < 0.3:
        s += ", " + t.fill(t.draw("tail", en.tails))
    return cap(s) + "."


def english_title(t: Templates, title: str) -> str:
    return title_case(cap(t.fill(title)))


def _size(text: str, spaced: bool) -> int:
    """Length in words (about two characters per word for Chinese and Japanese)."""
    return len(text.split()) if spaced else len(text) // 2


def paragraph(t: Templates, lang: Grammar | None, lo: int = 20, hi: int = 150) -> str:
    """Sentences (English when ``lang`` is None) until a target of ``lo..hi`` words, never exceeding ``hi``."""
    spaced = lang is None or lang.spaced
    target = t.rng.randint(lo, hi)
    out: list[str] = []
    n = 0
    while n < target:
        s = english_sentence(t) if lang is None else t.line("sentence", lang.sentences)
        k = _size(s, spaced)
        if out and n + k > hi:
            break
        out.append(s)
        n += k
    return (" " if spaced else "").join(out)


@dataclass(frozen=True)
class Block:
    """One block of an article's body: a paragraph (``p``), a heading (``h2``) or a bullet list (``ul``)."""

    tag: str
    text: str = ""
    items: tuple[str, ...] = ()  # for ``ul``


@dataclass
class Article:
    lang: str
    topic: str  # English articles only
    title: str
    author: str
    blocks: list[Block]

    @property
    def paragraphs(self) -> tuple[str, ...]:
        return tuple(b.text for b in self.blocks if b.tag == "p")


def english_article(rng: random.Random, topic: str) -> Article:
    en = english()
    t = english_templates(rng, topic)
    n = rng.randint(3, 10)
    blocks: list[Block] = []
    has_list = False
    for k in range(n):
        if k and n >= 5 and rng.random() < 0.25:
            blocks.append(Block("h2", t.line("heading", en.headings)))
        blocks.append(Block("p", paragraph(t, None)))
        if k and not has_list and rng.random() < 0.15:
            blocks.append(Block("ul", items=tuple(t.line("item", en.items) for _ in range(rng.randint(3, 6)))))
            has_list = True
    title = english_title(t, rng.choice(en.titles))
    return Article("en", topic, title, rng.choice(en.persons), blocks)


def language_article(rng: random.Random, code: str) -> Article:
    lang = grammar(code)
    t = Templates(rng, lang.slots)
    blocks = [Block("p", paragraph(t, lang)) for _ in range(rng.randint(3, 8))]
    title = cap(t.fill(rng.choice(lang.titles)))
    return Article(code, "", title, rng.choice(lang.slots["name"]), blocks)


def related_titles(rng: random.Random, site: Site) -> list[str]:
    """Headlines for a page's "related stories" sidebar, in the site's language."""
    if site.lang == "en":
        t = english_templates(rng, rng.choice(site.topics))
        return [english_title(t, t.draw("title", english().titles)) for _ in range(rng.randint(3, 5))]
    t = Templates(rng, grammar(site.lang).slots)
    return [t.line("title", grammar(site.lang).titles) for _ in range(3)]
