"""The captures of a sample WARC: which kinds of page it holds (:func:`plan`) and how each is made.

A :class:`PageMaker` turns one planned capture into a :class:`Fetch` (the HTTP response to write and
the :class:`SamplePage` that describes it). It remembers the English articles it made, so that later
captures can copy them exactly or nearly.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from raycorpus.demo import payloads
from raycorpus.demo.render import (
    UTF8,
    Charset,
    article_main,
    boilerplate_mains,
    document,
    footer_line,
    listicle_main,
    not_found_main,
    short_document,
    slug,
    spam_document,
)
from raycorpus.demo.text import (
    Article,
    Block,
    Templates,
    english_article,
    english_sentence,
    english_templates,
    english_title,
    language_article,
    paragraph,
    related_titles,
    title_case,
)
from raycorpus.demo.vocabulary import LANGUAGES, Site, chrome, english, page_texts, sites


@dataclass(frozen=True)
class SamplePage:
    """What was written for one capture (for tests and for reading the demo's numbers)."""

    warc: int  # index of the WARC file
    url: str
    kind: str  # one of KINDS: article, exact_copy, near_copy, spam, ..., redirect, revisit
    record_type: str  # response | revisit
    status: int
    content_type: str | None  # HTTP Content-Type as served
    lang: str | None = None
    charset: str | None = None  # Python codec the HTML is encoded with
    declared: str | None = None  # where that charset is declared: http, meta, http+meta or none
    title: str | None = None
    paragraphs: tuple[str, ...] = ()  # article text (articles and their copies)
    footer: str | None = None  # the page's copyright line (boilerplate main-content extraction drops)
    copy_of: str | None = None  # source URL of copies and revisits


KINDS = ("article", "exact_copy", "near_copy", "spam", "boilerplate_only", "short", "list_heavy", "non_html",
         "not_found", "redirect", "revisit")


@dataclass
class Fetch:
    """One HTTP response to write (before CC's header rewriting) and its description."""

    status: int
    content_type: str | None
    body: bytes
    page: SamplePage
    extra: list[tuple[str, str]] = field(default_factory=list)  # more HTTP headers
    transfer: str | None = None  # gzip | chunked | identity; random when None


@dataclass(frozen=True)
class ArticlePage:
    """An article placed on a site: where it is served and how it is encoded."""

    site: Site
    url: str
    article: Article
    published: datetime
    charset: Charset = UTF8


@dataclass(frozen=True)
class Source:
    """An English article that later copies can be made of."""

    warc: int
    page: ArticlePage
    fetch: Fetch


@dataclass(frozen=True)
class Planned:
    """One capture in a WARC's plan: its kind and what that kind needs to know."""

    kind: str  # one of KINDS
    lang: str = "en"  # article: its language
    charset: Charset | None = None  # article: its encoding; None: drawn from EN_CHARSETS
    payload: str = ""  # non_html: pdf | png | json | txt
    from_earlier_warc: bool = False  # exact_copy: copy an article of an earlier file


CHARSET_PAGES: tuple[tuple[str, Charset], ...] = (
    ("de", Charset("cp1252", "windows-1252")),  # legacy charset in the HTTP header
    ("fr", Charset("latin-1", None, "iso-8859-1", http_equiv=True)),  # only in <meta http-equiv>
    ("ru", Charset("cp1251", None, "windows-1251")),  # only in <meta charset>
    ("ja", Charset("shift_jis", "Shift_JIS")),  # only in the HTTP header
    ("zh", UTF8),
    ("es", UTF8),
)
NO_CHARSET = Charset("utf-8")  # UTF-8 declared nowhere
EN_CHARSETS = (UTF8, Charset("utf-8", "UTF-8", "utf-8"), Charset("utf-8", None, "utf-8"), Charset("utf-8", "utf-8"))
EN_CHARSET_WEIGHTS = (6, 2, 1, 1)


def plan(per: int, warc: int, rng: random.Random) -> list[Planned]:
    """The page kinds of one WARC: an English article first, then the special kinds (the rarer ones
    dropped when ``per`` is small), the rest English articles, in shuffled order."""
    specials = [Planned("article", lang, cs) for lang, cs in CHARSET_PAGES]
    specials += [Planned("article", ("de", "fr", "es")[warc % 3], NO_CHARSET)]
    specials += [Planned("non_html", payload=k) for k in ("pdf", "png", "json", "txt")]
    specials += [Planned("not_found"), Planned("redirect"), Planned("revisit"),
                 Planned("exact_copy", from_earlier_warc=warc > 0), Planned("near_copy"), Planned("spam"),
                 Planned("boilerplate_only"), Planned("short"), Planned("list_heavy")]
    specials += [Planned("exact_copy"), Planned("near_copy"), Planned("spam")] * max(0, per // 30 - 1)
    specials += [Planned("article", rng.choice(LANGUAGES), UTF8) for _ in range(per // 20)]
    slots = specials[: per - 1]
    slots += [Planned("article")] * (per - 1 - len(slots))
    rng.shuffle(slots)
    return [Planned("article"), *slots]


@dataclass(frozen=True)
class _Payload:
    url: str
    content_type: str
    body: bytes
    transfer: str | None = "identity"


def _pdf_payload(rng: random.Random, t: Templates, n: int, titles: list[str]) -> _Payload:
    body = payloads.pdf([titles[0], ""] + [english_sentence(t) for _ in range(6)])
    return _Payload(f"https://cdn.example-site.test/reports/{n}/{slug(titles[0])}.pdf", "application/pdf", body)


def _png_payload(rng: random.Random, t: Templates, n: int, titles: list[str]) -> _Payload:
    return _Payload(f"https://cdn.example-site.test/images/{n}/photo.png", "image/png", payloads.png(rng))


def _json_payload(rng: random.Random, t: Templates, n: int, titles: list[str]) -> _Payload:
    results = [{"id": n * 100 + k, "title": ti, "url": f"https://news.example-site.test/news/{slug(ti)}"}
               for k, ti in enumerate(titles)]
    body = json.dumps({"status": "ok", "page": n, "results": results}, indent=2).encode("utf-8")
    return _Payload(f"https://api.example-site.test/v1/articles?page={n}", "application/json; charset=utf-8", body,
                    "gzip")


def _txt_payload(rng: random.Random, t: Templates, n: int, titles: list[str]) -> _Payload:
    body = (titles[0] + "\n\n" + "\n\n".join(paragraph(t, None) for _ in range(3)) + "\n").encode("utf-8")
    return _Payload(f"https://files.example-site.test/notes/{n}.txt", "text/plain; charset=utf-8", body, None)


_PAYLOADS = {"pdf": _pdf_payload, "png": _png_payload, "json": _json_payload, "txt": _txt_payload}


def _insert_sentence(rng: random.Random, t: Templates, text: str) -> str:
    """``text`` with a new English sentence at a random sentence boundary."""
    cuts = [0] + [m.end() for m in re.finditer(r'[.?!] (?=[A-Z"])', text)] + [len(text) + 1]
    at = rng.choice(cuts)
    return " ".join(x for x in (text[: max(at - 1, 0)], english_sentence(t), text[at:]) if x)


Maker = Callable[[random.Random, int, datetime, Planned], Fetch]


class PageMaker:
    """Makes the captures of the current WARC (``warc``); one method per page kind but revisit.

    Every method takes the capture's ``rng``, ``n`` (unique in the crawl, keeps URLs distinct),
    its ``date`` and its :class:`Planned` entry.
    """

    def __init__(self) -> None:
        self.warc = 0
        self.sources: list[Source] = []
        self._makers: dict[str, Maker] = {
            "article": self.article, "exact_copy": self.exact_copy, "near_copy": self.near_copy,
            "spam": self.spam, "boilerplate_only": self.boilerplate_only, "short": self.short,
            "list_heavy": self.list_heavy, "not_found": self.not_found, "redirect": self.redirect,
            "non_html": self.non_html,
        }

    def make(self, rng: random.Random, n: int, date: datetime, planned: Planned) -> Fetch:
        return self._makers[planned.kind](rng, n, date, planned)

    # ------------------------------------------------------------------ helpers
    def _article_fetch(self, rng: random.Random, where: ArticlePage, year: int, kind: str,
                       copy_of: str | None = None) -> Fetch:
        site, article, cs = where.site, where.article, where.charset
        first = article.paragraphs[0]
        desc = " ".join(first.split()[:25]) if article.lang not in ("zh", "ja") else first[:60]
        main = article_main(site, article, where.published)
        doc = document(site, where.url, article.title, main, rng, cs, year, related_titles(rng, site), desc)
        page = SamplePage(self.warc, where.url, kind, "response", 200, cs.content_type, article.lang, cs.codec,
                          cs.declared, article.title, article.paragraphs, footer_line(site, year), copy_of)
        return Fetch(200, cs.content_type, doc.encode(cs.codec), page)

    def _framed_fetch(self, rng: random.Random, site: Site, url: str, title: str, main: str, kind: str,
                      date: datetime, status: int = 200) -> Fetch:
        """A UTF-8 page in the site's frame around ``main``."""
        doc = document(site, url, title, main, rng, UTF8, date.year, related_titles(rng, site))
        page = SamplePage(self.warc, url, kind, "response", status, UTF8.content_type, site.lang, "utf-8",
                          UTF8.declared, title, footer=footer_line(site, date.year))
        return Fetch(status, UTF8.content_type, doc.encode("utf-8"), page)

    # ------------------------------------------------------------------ page kinds
    def article(self, rng: random.Random, n: int, date: datetime, planned: Planned) -> Fetch:
        published = date - timedelta(days=rng.randint(0, 900), seconds=rng.randrange(86400))
        cs = planned.charset
        if cs is None:
            cs = rng.choices(EN_CHARSETS, EN_CHARSET_WEIGHTS)[0]
        if planned.lang == "en":
            site = rng.choice(sites().english)
            article = english_article(rng, rng.choice(site.topics))
            url = f"https://{site.domain}/{site.section}/{published:%Y/%m}/{slug(article.title)}-{n}.html"
        else:
            site = sites().languages[planned.lang]
            article = language_article(rng, planned.lang)
            url = f"https://{site.domain}/{site.section}/{published:%Y/%m}/{n}/"
        where = ArticlePage(site, url, article, published, cs)
        fetch = self._article_fetch(rng, where, date.year, "article")
        if planned.lang == "en":
            self.sources.append(Source(self.warc, where, fetch))
        return fetch

    def exact_copy(self, rng: random.Random, n: int, date: datetime, planned: Planned) -> Fetch:
        pool = [s for s in self.sources if s.warc < self.warc] if planned.from_earlier_warc else self.sources
        src = rng.choice(pool)
        path = src.page.url.split("/", 3)[3]
        url = rng.choice((
            f"{src.page.url}?utm_source=newsletter&utm_medium=email&utm_campaign={n}",
            f"https://{src.page.site.domain}/amp/{n}/{path}",
            f"https://www.news-mirror.test/{n}/{path}",
        ))
        page = replace(src.fetch.page, warc=self.warc, url=url, kind="exact_copy", copy_of=src.page.url)
        return Fetch(200, src.fetch.content_type, src.fetch.body, page)

    def near_copy(self, rng: random.Random, n: int, date: datetime, planned: Planned) -> Fetch:
        """An earlier English article with one paragraph rewritten, one sentence added, or on another site."""
        src = rng.choice(self.sources).page
        blocks = list(src.article.blocks)
        t = english_templates(rng, src.article.topic)
        k = rng.choice([i for i, b in enumerate(blocks) if b.tag == "p"])
        variant = rng.choice(("paragraph", "sentence", "boilerplate"))
        site = src.site
        if variant == "paragraph":
            blocks[k] = Block("p", paragraph(t, None))
        elif variant == "sentence":
            blocks[k] = Block("p", _insert_sentence(rng, t, blocks[k].text))
        else:
            site = rng.choice([s for s in sites().english if s != src.site])
        article = replace(src.article, blocks=blocks)
        url = f"https://{site.domain}/{site.section}/{date:%Y/%m}/{slug(article.title)}-{n}.html"
        where = ArticlePage(site, url, article, src.published)
        return self._article_fetch(rng, where, date.year, "near_copy", src.url)

    def spam(self, rng: random.Random, n: int, date: datetime, planned: Planned) -> Fetch:
        texts = page_texts()
        site = rng.choice(sites().spam)
        product = rng.choice(texts.spam_products)
        big = product.title()
        title = f"Buy {big} | Cheap {big} | Best {big} Online | {site.name}"
        lines = [rng.choice(texts.spam_lines).format(p=product, P=product.upper())
                 for _ in range(rng.randint(12, 30))]
        links = [(p, rng.randrange(10**6)) for p in rng.sample(texts.spam_products, 6)]
        lines_linked = [(ln, rng.randrange(10**6)) for ln in lines]
        doc = spam_document(title, product, lines_linked, links)
        url = f"https://{site.domain}/{site.section}/buy-{slug(product)}-{n}.html"
        page = SamplePage(self.warc, url, "spam", "response", 200, UTF8.content_type, "en", "utf-8",
                          UTF8.declared, title)
        return Fetch(200, UTF8.content_type, doc.encode("utf-8"), page)

    def boilerplate_only(self, rng: random.Random, n: int, date: datetime, planned: Planned) -> Fetch:
        site = rng.choice(sites().english)
        title, main = rng.choice(boilerplate_mains(site))
        url = f"https://{site.domain}/{slug(title)}/?page={n}"
        return self._framed_fetch(rng, site, url, title, main, "boilerplate_only", date)

    def short(self, rng: random.Random, n: int, date: datetime, planned: Planned) -> Fetch:
        site = rng.choice(sites().english)
        short = rng.choice(page_texts().short_pages)
        url = f"https://{site.domain}/{slug(short.title)}/{n}"
        page = SamplePage(self.warc, url, "short", "response", 200, "text/html", "en", "utf-8", "none", short.title,
                          (short.text,))
        return Fetch(200, "text/html", short_document(short).encode("utf-8"), page)

    def list_heavy(self, rng: random.Random, n: int, date: datetime, planned: Planned) -> Fetch:
        site = rng.choice(sites().english)
        t = english_templates(rng, rng.choice(site.topics))
        count = rng.randint(15, 30)
        title = title_case(t.fill(f"{count} {{adj}} {{thing}} ideas for {{agent}}"))
        items = [t.line("item", english().items) for _ in range(count)]
        url = f"https://{site.domain}/{site.section}/lists/{slug(title)}-{n}.html"
        return self._framed_fetch(rng, site, url, title, listicle_main(title, items), "list_heavy", date)

    def not_found(self, rng: random.Random, n: int, date: datetime, planned: Planned) -> Fetch:
        site = rng.choice(sites().english)
        url = f"https://{site.domain}/{site.section}/{n}/old-page.html"
        title = chrome("en").not_found_title
        return self._framed_fetch(rng, site, url, title, not_found_main("en"), "not_found", date, status=404)

    def redirect(self, rng: random.Random, n: int, date: datetime, planned: Planned) -> Fetch:
        site = rng.choice(sites().english)
        path = f"{site.section}/{n}"
        url = f"http://{site.domain}/{path}"
        page = SamplePage(self.warc, url, "redirect", "response", 301, None)
        return Fetch(301, None, b"", page, [("Location", f"https://{site.domain}/{path}/")], "identity")

    def non_html(self, rng: random.Random, n: int, date: datetime, planned: Planned) -> Fetch:
        """A PDF, PNG, JSON or plain-text payload, its text drawn from an English topic."""
        t = english_templates(rng, rng.choice(english().topics))
        titles = [english_title(t, t.draw("title", english().titles)) for _ in range(rng.randint(3, 8))]
        p = _PAYLOADS[planned.payload](rng, t, n, titles)
        page = SamplePage(self.warc, p.url, "non_html", "response", 200, p.content_type, title=titles[0])
        return Fetch(200, p.content_type, p.body, page, transfer=p.transfer)
