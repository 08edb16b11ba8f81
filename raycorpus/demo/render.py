"""HTML for the sample pages: the full site frame around an article, and the odd pages (spam, short, lists).

Nothing here draws random numbers except :func:`document`, which draws the page's analytics tag
first and then one number per related link.
"""

from __future__ import annotations

import hashlib
import html
import json
import random
import re
from dataclasses import dataclass
from datetime import datetime

from raycorpus.demo.text import Article, Block
from raycorpus.demo.vocabulary import NAV_PATHS, Chrome, ShortPage, Site, chrome, english


@dataclass(frozen=True)
class Charset:
    """How an HTML page is encoded and where (if anywhere) the encoding is declared."""

    codec: str  # Python codec used to encode the page
    http: str | None = None  # charset parameter of the HTTP Content-Type
    meta: str | None = None  # charset declared in the HTML head
    http_equiv: bool = False  # old-style <meta http-equiv="Content-Type" ...> instead of <meta charset>

    @property
    def declared(self) -> str:
        return "+".join(w for w, v in (("http", self.http), ("meta", self.meta)) if v) or "none"

    @property
    def content_type(self) -> str:
        return f"text/html; charset={self.http}" if self.http else "text/html"

    def meta_tag(self) -> str:
        if not self.meta:
            return ""
        if self.http_equiv:
            return f'<meta http-equiv="Content-Type" content="text/html; charset={self.meta}">\n'
        return f'<meta charset="{self.meta}">\n'


UTF8 = Charset("utf-8", "utf-8", "utf-8")


def esc(text: str) -> str:
    return html.escape(text, quote=False)


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60] or "page"


def footer_line(site: Site, year: int) -> str:
    """The page's copyright line as text (what boilerplate removal should drop)."""
    return f"© {year} {site.name}. {chrome(site.lang).rights}"


@dataclass(frozen=True)
class _Frame:
    """What the parts of one page's frame share."""

    site: Site
    words: Chrome
    tag: int  # analytics id
    asset: str  # hash in the asset file names

    @property
    def theme(self) -> str:
        return self.site.theme


def document(site: Site, url: str, title: str, main: str, rng: random.Random, charset: Charset, year: int,
             related: list[str], description: str = "") -> str:
    """A full page: head with styles and scripts, cookie banner, header and nav, main, sidebar, footer."""
    tag = rng.randrange(10**6, 10**7)
    asset = hashlib.sha1(f"{site.domain}:{tag}".encode()).hexdigest()[:10]
    frame = _Frame(site, chrome(site.lang), tag, asset)
    links = [(f"/{site.section}/{rng.randrange(10**5, 10**6)}/", r) for r in related]
    return (
        _head(frame, url, title, charset, description)
        + _header(frame)
        + _content(frame, main, links)
        + _footer(frame, year)
    )


def _head(f: _Frame, url: str, title: str, charset: Charset, description: str) -> str:
    t = f.theme
    ld = json.dumps({"@context": "https://schema.org", "@type": "Article", "headline": title, "url": url})
    desc = f'<meta name="description" content="{html.escape(description)}">\n' if description else ""
    return (
        f'<!DOCTYPE html>\n<html lang="{f.site.lang}">\n<head>\n{charset.meta_tag()}'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{esc(title)} | {esc(f.site.name)}</title>\n{desc}"
        f'<link rel="canonical" href="{url}">\n'
        f'<link rel="stylesheet" href="/assets/{t}.{f.asset}.css">\n'
        f"<style>\n.{t}-header{{background:#{f.asset[:6]};padding:12px 24px}}"
        f".{t}-nav li{{display:inline-block;margin-right:16px}}\n"
        ".cookie-banner{position:fixed;bottom:0;left:0;right:0;background:#222;color:#fff;padding:10px}\n"
        "article p{line-height:1.6;max-width:42em}aside.sidebar{float:right;width:280px}\n</style>\n"
        f'<script async src="https://analytics.example-cdn.test/tag.js?id=UA-{f.tag}-1"></script>\n'
        "<script>window.dataLayer=window.dataLayer||[];function gtag(){dataLayer.push(arguments);}"
        f'gtag("js",new Date());gtag("config","UA-{f.tag}-1");</script>\n'
        f'<script type="application/ld+json">{ld}</script>\n'
        "</head>\n"
    )


def _header(f: _Frame) -> str:
    """The body's start: cookie banner, then the header with logo, navigation and search."""
    t, w = f.theme, f.words
    nav = "".join(f'<li><a href="{p}">{esc(label)}</a></li>' for p, label in zip(NAV_PATHS, w.nav, strict=True))
    return (
        f'<body class="{t}-body">\n'
        f'<div id="cookie-consent" class="cookie-banner"><p>{esc(w.cookie)}</p>'
        f'<button type="button">{esc(w.accept)}</button> <a href="/privacy/">{esc(w.learn_more)}</a></div>\n'
        f'<header class="{t}-header site-header"><a class="logo" href="/">{esc(f.site.name)}</a>\n'
        f'<nav class="{t}-nav main-nav"><ul>{nav}</ul></nav>\n'
        f'<form class="search" action="/search"><input type="search" name="q" placeholder="{esc(w.search)}">'
        "</form>\n</header>\n"
    )


def _content(f: _Frame, main: str, links: list[tuple[str, str]]) -> str:
    """The main content and the sidebar (related links, newsletter box)."""
    w = f.words
    items = "".join(f'<li><a href="{href}">{esc(text)}</a></li>\n' for href, text in links)
    return (
        f'<div class="{f.theme}-wrap">\n<main id="main-content">\n{main}\n</main>\n'
        f'<aside class="sidebar"><h3>{esc(w.related)}</h3>\n<ul>\n{items}</ul>\n'
        f'<h3>{esc(w.newsletter)}</h3><p>{esc(w.newsletter_blurb)}</p>'
        f'<a class="button" href="/newsletter/">{esc(w.subscribe)}</a>'
        "</aside>\n</div>\n"
    )


def _footer(f: _Frame, year: int) -> str:
    w = f.words
    return (
        f'<footer class="{f.theme}-footer site-footer"><nav class="footer-nav">'
        f'<a href="/privacy/">{esc(w.privacy)}</a> | '
        f'<a href="/terms/">{esc(w.terms)}</a> | <a href="/contact/">{esc(w.nav[-1])}</a></nav>\n'
        f'<p class="copyright">&copy; {year} {esc(f.site.name)}. {esc(w.rights)}</p></footer>\n'
        f'<script src="/assets/app.{f.asset}.js" defer></script>\n</body>\n</html>\n'
    )


def _blocks_html(blocks: list[Block]) -> str:
    out = []
    for b in blocks:
        if b.tag == "ul":
            out.append("<ul>\n" + "".join(f"<li>{esc(i)}</li>\n" for i in b.items) + "</ul>")
        else:
            out.append(f"<{b.tag}>{esc(b.text)}</{b.tag}>")
    return "\n".join(out)


def article_main(site: Site, article: Article, published: datetime) -> str:
    """An article's main content: headline, byline with author and date, body."""
    if site.lang == "en":
        when = f"{english().months[published.month - 1]} {published.day}, {published.year}"
    else:
        when = published.strftime("%Y-%m-%d")
    return (
        f'<article class="post">\n<h1>{esc(article.title)}</h1>\n'
        f'<p class="byline">{esc(chrome(site.lang).byline)} '
        f'<a href="/authors/{slug(article.author)}/">{esc(article.author)}</a>'
        f' &middot; <time datetime="{published:%Y-%m-%d}">{when}</time></p>\n'
        f"{_blocks_html(article.blocks)}\n</article>"
    )


def listicle_main(title: str, items: list[str]) -> str:
    lis = "".join(f"<li>{esc(item)}</li>\n" for item in items)
    return f'<article class="listicle">\n<h1>{esc(title)}</h1>\n<ol>\n{lis}</ol>\n</article>'


def not_found_main(lang: str) -> str:
    words = chrome(lang)
    return f"<h1>{words.not_found_title}</h1>\n<p>{words.not_found_text}</p>"


def boilerplate_mains(site: Site) -> tuple[tuple[str, str], ...]:
    """(title, main content) of the pages that are all frame: an empty archive, a login form, a tag list."""
    tags = "".join(f'<li><a href="/topics/{t}/">{t}</a></li>' for t in site.topics)
    return (
        ("Archive", "<h1>Archive</h1>\n<p>No stories found.</p>"),
        ("Sign in", '<h1>Sign in</h1>\n<form action="/login" method="post"><input name="user">'
                    '<input name="password" type="password"><button>Sign in</button></form>'),
        ("Topics", f'<h1>Topics</h1>\n<ul class="tags">{tags}</ul>'),
    )


def short_document(page: ShortPage) -> str:
    """A tiny page without any frame."""
    return f"<html><head><title>{page.title}</title></head><body><p>{page.text}</p></body></html>\n"


def spam_document(title: str, product: str, lines: list[tuple[str, int]], links: list[tuple[str, int]]) -> str:
    """A keyword-stuffed shop page; ``lines`` and ``links`` are (text, link id) pairs."""
    big = product.title()
    anchors = "".join(f'<a href="/go/{k}">{esc(p)}</a> ' for p, k in links)
    body = "\n".join(f'<p>{esc(ln)} <a href="/go/{k}">click here</a></p>' for ln, k in lines)
    return (
        '<!DOCTYPE html>\n<html>\n<head>\n<meta charset="utf-8">\n'
        f"<title>{esc(title)}</title>\n"
        f'<meta name="keywords" content="{", ".join([product] * 12)}">\n'
        f"</head>\n<body>\n<h1>{esc(big.upper())} !!! BEST PRICE !!!</h1>\n{body}\n"
        f'<div style="display:none">{esc(" ".join([product] * 40))}</div>\n<div class="links">{anchors}</div>\n'
        "</body>\n</html>\n"
    )
