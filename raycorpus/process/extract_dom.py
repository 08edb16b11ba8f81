"""Extraction rules on the resiliparse DOM, run once on a page's tree before the main-content pass.

resiliparse's main-content pass decides by tag, class / id and ARIA role alone, element by element;
it never asks where the article's body ends. One rule adds that:

- ``cut_after_article``: the article body is the last element whose class or id names one
  (``entry-content``, ``article-body``, ``post-content``, ``itemprop=articleBody`` ..., the
  vocabulary content management systems use and trafilatura's first body XPath lists; news sites'
  ``story-body``, Joomla K2's ``itemBody``, ``rich-text`` / ``news-text`` blocks, ``fulltext``) holding at
  least ``ARTICLE_MIN_CHARS`` characters. Everything after it in document order (the following
  siblings of it and of each of its ancestors: author boxes, newsletter blurbs, related stories,
  comments, footers) goes. The *last* such element, because articles are often split into several
  body blocks by images or ads; nothing before the body is touched. A page without such a class
  falls back on its last ``<article>`` element of that size (trafilatura's second body XPath).

Measured and left out: a link-density rule (trafilatura's / jusText's: a ``<div>`` shorter than 100
characters, 300 when last, whose link text is over 80 % of its text or whose links are mostly under
10 characters, goes). On all divs it gained 0.0036 F1 on trafilatura-eval alone (readability flat)
but only 0.0009 next to ``cut_after_article``, which removes the same tail blocks, and it cost more
than the extraction itself (a Python wrapper and a text per ``<div>``); on ``div:has(> a)`` only,
+0.0004 next to it, -0.0001 on readability, and +0.56x bare time.

The rule's F1 on both reference sets is in ``raycorpus eval``'s ablation.
"""

from __future__ import annotations

from collections.abc import Callable

from resiliparse.parse.html import DOMNode

from raycorpus.process.extract_rules import Caseless

ARTICLE_MIN_CHARS = 500
# the class / id tokens of an article body (regex, case-insensitive) on these tags; the CSS query is a cheap superset
# (one attribute-substring test per word: 160 selectors, one per tag and token, cost more than the extraction)
_CONTAINERS = frozenset({"article", "div", "main", "section"})
# searched in the whole class attribute at once: no alternative spans white space, so none matches across two tokens
_BODY_TOKENS = Caseless(r"(?:entry|article|art|page|text)-content|article__content|article(?:-|__)?body|body-text"
                        r"|post[-_]?(?:text|body|content)|post-?entry|article-?text|(?:^|\s)(?:post|entry)(?:\s|$)"
                        # news sites' story bodies, Joomla K2's itemBody, CMS rich-text blocks, full-text containers
                        r"|story[-_]?body|item[-_]?body|rich[-_]?text|news[-_]?text|article[-_]?main[-_]?content"
                        r"|fulltext")
# on the container tags only (`:is`: 22 matches a page instead of 40 on the bench pages, 0.20 ms instead of 0.29)
ARTICLE_BODY_QUERY = "[itemprop=articleBody], :is(" + ", ".join(sorted(_CONTAINERS)) + "):is(" + ", ".join(
    [f"[{attr}*={word} i]" for attr in ("class", "id") for word in ("content", "body", "text", "entry")]
    + ["[class~=post]", "[class~=entry]"]) + ")"
# with the fallback's <article> elements in the same pass (1.8 more a page; a second pass cost 0.03 ms a page)
_BODY_OR_ARTICLE_QUERY = ARTICLE_BODY_QUERY + ", article"


def _holds(node: DOMNode, min_chars: int) -> bool:
    """Whether the node's text, white space runs counted as one, is ``min_chars`` characters or longer. Its first
    ``4 * min_chars`` characters decide most nodes: their count is never more than the whole's. (``str.split`` is ~3x
    faster than a regex substitution here, on the same white space.)"""
    text = node.text or ""
    head = text[: 4 * min_chars]
    if len(" ".join(head.split())) >= min_chars:
        return True
    return len(text) > len(head) and len(" ".join(text.split())) >= min_chars


def cut_after_article(body: DOMNode, min_chars: int = ARTICLE_MIN_CHARS) -> bool:
    """Remove everything after the last article-body element of at least ``min_chars`` characters (else after the
    last such ``<article>``); return whether there was one."""
    found = body.query_selector_all(_BODY_OR_ARTICLE_QUERY).values()
    last = _last_long(found, min_chars, _is_article_body)
    if last is None:
        last = _last_long(found, min_chars, _is_article)
    if last is None:
        return False
    node = last
    while node is not None and node.tag != "body":
        after = node.next
        while after is not None:  # each sibling's wrapper made once (a resiliparse node wrapper costs ~2 µs)
            after, gone = after.next, after
            gone.remove()  # detached, freed with the tree (decompose frees it now: 1.5x slower)
        node = node.parent
    return True


def _last_long(nodes: list[DOMNode], min_chars: int, test: Callable[[DOMNode], bool]) -> DOMNode | None:
    """The last of ``nodes`` that passes ``test`` and holds ``min_chars`` characters or more."""
    return next((node for node in reversed(nodes) if test(node) and _holds(node, min_chars)), None)


def _is_article(node: DOMNode) -> bool:
    return node.tag == "article"


def _is_article_body(node: DOMNode) -> bool:
    if node.tag not in _CONTAINERS:
        return False
    if node.getattr("itemprop") == "articleBody":
        return True
    names = f"{node.getattr('class') or ''}\n{node.getattr('id') or ''}"  # no token matches across the line break
    return _BODY_TOKENS.search(names) is not None
