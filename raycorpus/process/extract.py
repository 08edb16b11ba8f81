"""Main-content extraction: resiliparse, with a boilerplate pre-pass and a line cleaner.

1. Parse. A page nested deeper than ``max_depth`` is dropped (resiliparse's main-content pass
   is quadratic in nesting depth: 50,000 nested divs take 30 s).
   On the DOM (:mod:`raycorpus.process.extract_dom`, switchable): what follows the article body
   (the last ``entry-content`` / ``article-body`` / ``post-content`` ... element, else the last
   ``<article>``, of 500+ characters) is removed.
2. resiliparse ``extract_plain_text`` with main-content heuristics, also skipping the elements
   matched by ``skip_selectors`` (comment forms, author boxes, related posts, newsletter and
   cookie boxes ...), in C.
3. Line rules (each switchable, see :mod:`raycorpus.process.extract_rules`): boilerplate headings
   ("Related posts", "Kommentare", "Teilen") and lines ("Read more: ...", "© ...", "Foto: ...",
   "Advertisement", "Figure 2: ...", "This entry was posted in ...", affiliate / advertising
   disclosures, captions ending in a © credit) are dropped, such a heading in the last part of the
   text ends it; the short lines after the last paragraph (tags, links, buttons) and before the
   first one but the title (menus, breadcrumbs, dates) go; calls to subscribe / follow / share /
   download the app / support the site in the second half go.
4. Rescue: when the text came out short, an element whose class resiliparse mistakes for a share /
   social widget but that holds several paragraphs (``<div class="entry share">``) loses that class
   and 2-3 run once more.
5. Fallback: when the text is still shorter than ``fallback_chars``, the whole page's text (same
   skips and line rules) from its first to its last paragraph-like line is taken if it is longer.

A page is given ``timeout_seconds`` (a SIGALRM timer, where extraction runs in the main thread
as in a Ray actor): past it the page is dropped as ``timeout``. resiliparse holds the GIL, so
the timer acts between its C calls, not inside one. Measured: a 4 MB page of 240-deep blocks
passes every guard and takes 5.7 s; with a 0.05 s limit it is dropped after 0.06-0.3 s. One
long C++ call (main content of 20,000 nested divs: 1.7 s, 50,000: 30 s) ends first; what keeps
such calls short is the deterministic ``max_depth`` guard (and ``warc.max_record_bytes``), and
the backstop for a call that never returns is ``warc.timeout_seconds`` (the worker is killed
and replaced). A timeout depends on the machine, so a page dropped for it is the one place the
output can differ between runs: the default is far above what a capped page costs.
"""

from __future__ import annotations

import re
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from pydantic import BaseModel, ConfigDict, Field, field_validator
from resiliparse.extract.html2text import extract_plain_text
from resiliparse.parse.html import DOMNode, HTMLTree

from raycorpus.ingest.warc import HtmlRecord
from raycorpus.process.extract_dom import cut_after_article
from raycorpus.process.extract_rules import (
    Caseless,
    drop_calls_to_action,
    exact_lower,
    is_paragraph,
    paragraph_span,
    trim_head,
)

# an element holding three sibling paragraphs is an article container, whatever its class says
_NOT_ARTICLE = ":not(:has(p ~ p ~ p))"
BOILERPLATE_SELECTORS: tuple[str, ...] = tuple(
    f"{selector}{_NOT_ARTICLE}"
    for selector in (
        "[role=contentinfo]",
        # comment forms (comment sections themselves: the ``comments`` option)
        "#respond", "#commentform", "[class*=comment-form i]", ".nocomments",
        # related posts, author boxes and bylines
        "[class*=related i]", "[class*=author i]", "[class*=byline i]", "[class*=mini-bio i]",
        # image captions and credits
        "[class*=caption i]", "[class*=copyright i]",
        # newsletter / subscription / paywall boxes, cookie and consent banners
        "[class*=newsletter i]", "[id*=newsletter i]", "[class*=subscri i]", "[id*=paywall i]",
        "[class*=cookie i]", "[id*=cookie i]", "[id*=consent i]", "[class*=gdpr i]",
        # breadcrumbs, pagination, tags, ratings, social plugins
        "[class*=breadcrumb i]", "[class*=pagination i]", "[class*=post-tags i]", "[class*=rating i]",
        "[class*=sociable i]",
    )
)

# one class or id value test at a selector's start (no quotes: a quoted value may hold a ``]``)
_ATTRIBUTE_TEST = re.compile(r"\[(class|id)\s*[~|^$*]?=[^\]\"']*\]")


def group_attribute_tests(selectors: tuple[str, ...]) -> list[str]:
    """The same selectors, with those that begin with a class / id value test and end alike grouped into
    ``[class]:is(test, test, ...)rest``: lexbor tests the attribute's presence once (an element keeps its class and
    id apart) before the value tests, instead of looking the attribute up for each (0.06 ms a page less for the
    default ``skip_selectors``; they match the same elements)."""
    groups: dict[tuple[str, str], list[str]] = {}
    kept: list[str] = []
    for selector in selectors:
        test = _ATTRIBUTE_TEST.match(selector)
        if test is None or "," in selector:
            kept.append(selector)
        else:
            groups.setdefault((test.group(1), selector[test.end():]), []).append(test.group(0))
    return kept + [f"[{attr}]:is({', '.join(tests)}){rest}" for (attr, rest), tests in groups.items()]


# class tokens resiliparse takes for share / social widgets (its social_cls_regex) on an article container
_RESCUE_SELECTOR = ", ".join(group_attribute_tests(tuple(
    f"[class~={token} i]:has(p ~ p ~ p)"
    for token in ("share", "sharing", "social", "socialmedia", "follow", "like", "likes", "engagement",
                  "facebook", "twitter", "syndication")
)))
_RESCUE_MAX = 8  # rescued elements per page (a page full of them is not an article)


class ExtractConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    main_content: bool = Field(True, description="resiliparse main-content heuristics")
    alt_texts: bool = Field(False, description="keep image alt texts")
    links: bool = Field(False, description="append link targets")
    list_bullets: bool = Field(True, description="bullets / numbers for list items")
    form_fields: bool = Field(False, description="keep form field values")
    noscript: bool = Field(False, description="keep <noscript> content")
    comments: bool = Field(False, description="keep comment sections as main content")
    post_meta: bool = Field(True, description="keep the post meta data (dates, bylines) resiliparse recognises")
    hidden_elements: bool = Field(False, description="keep elements hidden by class names")
    skip_selectors: tuple[str, ...] = Field(BOILERPLATE_SELECTORS, description="CSS selectors of boilerplate "
                                                                               "elements to skip; () for none")
    rescue_content: bool = Field(True, description="keep multi-paragraph blocks whose class resiliparse takes "
                                                   "for a share / social widget")
    clean_lines: bool = Field(True, description="drop boilerplate headings and lines (share, related, comments, "
                                                "read more, copyright, photo credits)")
    cut_tail_at: float = Field(0.7, ge=0, le=1, description="a boilerplate heading after this share of the text "
                                                            "ends it (1: never); needs clean_lines")
    trim_tail: bool = Field(True, description="drop the short lines after the last paragraph-like line")
    rescue_below_chars: int | None = Field(1000, ge=1, description="try the rescue only when the main text is "
                                                                   "shorter (a dropped article leaves little text); "
                                                                   "null: on every page (the output of before)")
    trim_head: bool = Field(True, description="drop the short lines before the first paragraph-like line but the "
                                              "last title-like one")
    drop_calls_to_action: bool = Field(True, description="drop short lines in the second half of the text that ask "
                                                         "to subscribe, sign up, log in, follow, share or support "
                                                         "the site")
    fallback_chars: int = Field(250, ge=0, description="main content shorter than this: take the whole page's text "
                                                       "from its first to its last paragraph instead (0: never)")
    cut_after_article: bool = Field(True, description="drop what follows the last article-body element (class or "
                                                      "id entry-content, article-body, post-content ...): author "
                                                      "boxes, related stories, comments, footers")
    max_depth: int = Field(256, ge=8, description="drop pages whose DOM is this many elements deep or deeper, "
                                                  "counted from <html> (reason too_deep)")
    min_chars: int = Field(1, ge=1, description="drop documents whose extracted text is shorter")
    timeout_seconds: float = Field(10.0, gt=0, description="drop a page whose extraction takes longer (reason "
                                                           "timeout); a resiliparse call is interrupted when it "
                                                           "returns, warc.timeout_seconds is the hard backstop")

    @field_validator("skip_selectors")
    @classmethod
    def _parseable(cls, selectors: tuple[str, ...]) -> tuple[str, ...]:
        """A selector resiliparse cannot parse would drop every page: refuse it here."""
        for selector in selectors:
            try:
                extract_plain_text("<p>x</p>", skip_elements=[selector])
            except Exception as e:
                raise ValueError(f"skip_selectors: {selector!r} is not a CSS selector resiliparse can use ({e})") from e
        return selectors


# the rules added with trim_head at the values that reproduce the output of before them: a config that sets them so
# keeps its fingerprint (Config.fingerprint leaves these keys out), and an older output resumes
RULES_OFF_AS_BEFORE = {"rescue_below_chars": None, "trim_head": False, "drop_calls_to_action": False,
                    "fallback_chars": 0, "cut_after_article": False}


class Extractor:
    """resiliparse main-content extraction with the options from config; never raises."""

    name = "extract"

    def __init__(self, cfg: ExtractConfig):
        self.cfg = cfg
        self.min_chars = cfg.min_chars
        # max_depth elements from <html> down, so max_depth - 2 below <body>: a forward search from <body>, linear in
        # the elements (a chain of max_depth ``*`` matched from every element up cost their summed depth: 0.14 vs
        # 0.10 ms a page, and 18.8 vs 0.5 ms for 10,000 leaves 250 deep)
        self.depth_test = ":has(> " + " > ".join(["*"] * (cfg.max_depth - 2)) + ")"
        self.options = dict(
            main_content=cfg.main_content,
            alt_texts=cfg.alt_texts,
            links=cfg.links,
            list_bullets=cfg.list_bullets,
            form_fields=cfg.form_fields,
            noscript=cfg.noscript,
            comments=cfg.comments,
            post_meta=cfg.post_meta,
            hidden_elements=cfg.hidden_elements,
            skip_elements=group_attribute_tests(cfg.skip_selectors) or None,
        )

    def __call__(self, rec: HtmlRecord) -> tuple[str | None, str | None]:
        """Return (text, None) or (None, drop reason)."""
        try:
            with time_limit(self.cfg.timeout_seconds):
                return self._extract(rec)
        except ExtractTimeout:
            return None, "timeout"

    def _extract(self, rec: HtmlRecord) -> tuple[str | None, str | None]:
        try:
            tree = HTMLTree.parse(rec.html)
            body = tree.body
            if body is not None and body.matches(self.depth_test):
                return None, "too_deep"
            if body is not None:
                self._prune(body)
            text = self._main_text(tree)
            main = self.cfg.main_content
            short = self._short(text, self.cfg.rescue_below_chars)
            if main and self.cfg.rescue_content and body is not None and short and rescue(body):
                text = self._main_text(tree)  # resiliparse took the article for a share widget: once more
            if main and len(text) < self.cfg.fallback_chars:
                whole = extract_plain_text(tree, preserve_formatting=True, **{**self.options, "main_content": False})
                text = max(text, paragraph_span(self._clean(whole)), key=len)
        except Exception as e:  # a page that breaks the parser is one dropped document
            return None, f"error:{type(e).__name__}"
        if len(text) < self.min_chars:
            return None, "empty"
        return text, None

    def _prune(self, body: DOMNode) -> None:
        """The DOM rules that are switched on (:mod:`raycorpus.process.extract_dom`), once per page."""
        if self.cfg.main_content and self.cfg.cut_after_article:
            cut_after_article(body)

    @staticmethod
    def _short(text: str, below: int | None) -> bool:
        return below is None or len(text) < below

    def _main_text(self, tree: HTMLTree) -> str:
        return self._clean(extract_plain_text(tree, preserve_formatting=True, **self.options))

    def _clean(self, text: str) -> str:
        """The line rules that are switched on, in order."""
        if self.cfg.clean_lines:
            text = clean_lines(text, self.cfg.cut_tail_at)
        if self.cfg.trim_tail:
            text = trim_tail(text)
        if self.cfg.trim_head:
            text = trim_head(text)
        if self.cfg.drop_calls_to_action:
            text = drop_calls_to_action(text)
        return text.strip()


class ExtractTimeout(BaseException):
    """Raised by the :func:`time_limit` timer (a BaseException, so no ``except Exception`` on the way swallows
    it)."""


def _raise_timeout(signum: int, frame: object) -> None:
    raise ExtractTimeout


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise :class:`ExtractTimeout` in the block after ``seconds`` (a no-op outside the main thread,
    where signals cannot be used)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGALRM, _raise_timeout)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def rescue(body: DOMNode) -> int:
    """Clear the class of multi-paragraph blocks that resiliparse would drop as social widgets; return how
    many were cleared."""
    found = body.query_selector_all(_RESCUE_SELECTOR)
    n = min(len(found), _RESCUE_MAX)
    for i in range(n):  # indexing a collection is O(len): keep it short
        found[i].setattr("class", "")
    return n


_HEADING_PHRASES = r"""
(?:related|similar|recommended|popular|trending|latest|recent|more|other)\s(?:posts?|articles?|stories|news|content
  |reading|topics|links|videos)
|you\s(?:may|might|could)\s(?:also\s)?(?:like|enjoy|be\sinterested\sin)|read\s(?:more|next|also)|see\salso
|explore\sfurther|à\sdécouvrir|(?:zum\s)?weiterlesen
|more\s(?:from|on|about|in)\s.{1,40}|most\s(?:read|popular|viewed)|recommended(?:\sfor\syou)?|further\sreading
|(?:das|dies|diese[rs]?)\s(?:\w+\s)?könnte\s(?:dich|sie|ihnen)\s(?:auch\s)?interessieren|auch\sinteressant|auch\slesen|schon\sgelesen|siehe\sauch
|(?:weitere|ähnliche|verwandte|neueste|aktuelle|beliebte|meistgelesene|passende)\s(?:artikel|beiträge|themen|news
  |nachrichten|meldungen|posts|links|informationen)
|mehr\s(?:zum\sthema|zu\sdiesem\sthema|aus\s.{1,40}|von\s.{1,40}|zu\s.{1,40}|artikel|beiträge|news|themen|infos)
|lesen\ssie\s(?:auch|mehr|weiter)(?:\s.{1,40})?|weiterführende\slinks|empfehlungen|top\sthemen
|à\slire\saussi|vous\saimerez\saussi|articles\ssimilaires|lea\stambién|le\spuede\sinteresar|te\spuede\sinteresar
|noticias\srelacionadas|leggi\sanche|potrebbe\sinteressarti|artigos\srelacionados|leia\stambém|lees\sook
|(?:\d+\s)?(?:comments?|kommentare?|commentaires?|comentarios?|commenti|comentários|reacties|reactions?|responses?)
  (?:\s\(\d+\))?
|(?:comments\s(?:are\s)?closed|kommentare\ssind\sgeschlossen|commentaires\sfermés|los\scomentarios\sestán\scerrados)
|wie\s(?:bewerten|finden)\ssie\s(?:diesen|den)\s(?:artikel|beitrag)|war\sdieser\s(?:artikel|beitrag)\shilfreich
|was\sthis\s(?:article|page|post)\shelpful|rate\sthis\s(?:article|post|page)
|leave\sa\s(?:reply|comment)|post\s(?:a|your)\scomments?|add\s(?:a\s)?comment|write\sa\scomment
|(?:schreibe|hinterlasse|hinterlassen\ssie)\s(?:jetzt\s)?(?:einen|eine)\s(?:kommentar|antwort)
|kommentar\s(?:verfassen|schreiben|hinzufügen|abgeben)|kommentieren|laisser\sun\scommentaire|deja\sun\scomentario
|share(?:\sthis|\son|\sit|\sarticle|\spost|\spage|\sthis\s(?:article|post|page|story))?
|(?:diesen\s|den\s)?(?:artikel|beitrag|seite)\s(?:teilen|empfehlen)|teile\sdiesen\s(?:beitrag|artikel)
|jetzt\steilen|mit\sfreunden\steilen|teilen|sharing\sis\scaring|partager(?:\scet\sarticle)?|compartir(?:\snota)?
|condividi|compartilhe|delen|follow\sus|folgen?\s(?:sie\s)?uns.{0,40}|suivez-nous|síguenos
|about\sthe\sauthor|über\s(?:den|die)\s(?:autor|autorin)|zum\sautor|zur\sautorin|à\spropos\sde\sl'auteur
|sobre\sel\sautor
|(?:subscribe|sign\sup)\s(?:to|for)\s(?:our\s)?newsletter|newsletter(?:\sabonnieren|\sanmeldung)?
|zum\snewsletter\sanmelden|abonnieren|tags?|schlagworte|schlagwörter|stichworte|themen|kategorien?|categories
|filed\sunder
"""
_HEADING = Caseless(r"^[\W\d]*(?:" + _HEADING_PHRASES + r")[\s:.!?…»\u203a>)\-\u2013\u2014\d]*$", re.VERBOSE)
_BOILERPLATE_LINE = Caseless(
    r"""^\W*(?:
    (?:read|see)\s(?:more|also)|lesen\ssie\s(?:auch|mehr|hier)|auch\slesen|mehr\szum\sthema|à\slire\saussi
    |lea\s(?:también|más)|le\spuede\sinteresar|te\spuede\sinteresar|leia\stambém|leggi\sanche
    |vea\stambién|lee\stambién|ver\stambién|mira\stambién|veja\stambém|leia\smais|voir\saussi|lire\saussi
    |vedi\sanche|lees\sook|zie\sook|lees\smeer|also\sread|related|(?:zum\s)?weiterlesen)\s*:.*
    |^\W*(?:advertisements?|advertising|anzeigen?|werbung|publicidad|publicité|pubblicità|reklame|advertentie
    |sponsored(?:\scontent)?)\W*$
    |^\W*(?:©|\(c\)\s|copyright\b).{0,200}$
    |^\W*(?:photo|foto|bild|image|picture|credits?|crédito|crédit|fotos?|bildquelle)\s*:.{0,120}$
    |^\W*(?:abbildung|abb\.|figure|fig\.)\s?\d{0,3}\s*:.{0,200}$
    |^\W*(?:lea|puedes\sver|mira|lee\smás|te\srecomendamos|recomendado)\s*:.*
    |^\W*(?:drucken|print(?:\sthis\s(?:page|article))?|seite\sdrucken|artikel\sdrucken|imprimer|imprimir|stampa
    |zurück(?:\szur\s(?:übersicht|startseite))?|back(?:\sto\s(?:top|overview|home))?|nach\soben|to\stop
    |bildergalerie|galerie|gallery)\W*$
    |^\W*(?:this\s(?:entry|post)\swas\sposted\s|dieser\s(?:eintrag|beitrag)\swurde\s.{0,80}(?:veröffentlicht|abgelegt
    |verschlagwortet)|der\sbeitrag\swurde\sam\s.{0,120}veröffentlicht|(?:erstellt|veröffentlicht)\sam\s.{5,60}\sund
    \sabgelegt\sunter|posted\sin\s.{1,80}\s(?:tagged|bookmark\sthe\spermalink)).{0,300}$
    """,
    re.VERBOSE,
)
# an image caption ending in its credit ("... | © AFP / Name"); looked for only in short lines holding a ©
_CAPTION_CREDIT = re.compile(r"(?:\||\s)\s*©\s?[^.©]{1,60}$")
CAPTION_MAX = 260


# affiliate and advertising disclosures, anywhere in a line shorter than DISCLOSURE_MAX; each holds one of the hints
# (lower-cased), which are looked for first
_DISCLOSURE = Caseless(
    r"""\baffiliate[-\s]?(?:links?|partner)|\benthält\s(?:werbung|affiliate)|\bwerbung\b[^.]{0,30}\benthält
    |\b(?:may|might)\s(?:receive|earn|get)\s(?:a\s)?(?:small\s)?(?:compensation|commission)|advertising\sdisclosure
    |\bunbezahlte\swerbung|\bthis\s(?:post|article|page)\s(?:contains|may\scontain)\sreferences\sto\sproducts""",
    re.VERBOSE,
)
_DISCLOSURE_HINTS = ("affiliate", "werbung", "compensation", "commission", "disclosure", "references to products")
DISCLOSURE_MAX = 300
_BLANK_RUN = re.compile(r"\n(?:[ \t]*\n){2,}")


def clean_lines(text: str, cut_tail_at: float = 1.0) -> str:
    """Drop boilerplate headings and lines (see-also links, ad labels, credits and captions, print / back links,
    post meta lines; short lines disclosing affiliate links or advertising; image captions ending in a © credit); a
    boilerplate heading past ``cut_tail_at`` of the text ends it."""
    out: list[str] = []
    pos, cut = 0, cut_tail_at * len(text)
    lower = exact_lower(text)  # the rules match its lines (most texts), else the lines themselves
    lines = text.split("\n")
    keys = lines if lower is None else lower.split("\n")
    rules = (_HEADING, _BOILERPLATE_LINE, _DISCLOSURE)
    heading, boilerplate, disclosure = (rule.on(lower is not None) for rule in rules)
    disclosures = _lines_with_hints(lower, _DISCLOSURE_HINTS) if lower is not None else range(len(lines))
    for i, (line, key) in enumerate(zip(lines, keys, strict=True)):
        s = key.strip()
        pos += len(line) + 1
        if not s:  # (no rule matches an empty line)
            out.append(line)
            continue
        if len(s) <= 80 and heading.match(s):
            if pos > cut:
                break
            continue
        if boilerplate.match(s) or (i in disclosures and len(s) < DISCLOSURE_MAX and disclosure.search(s)) \
                or ("©" in s and len(s) <= CAPTION_MAX and _CAPTION_CREDIT.search(s)):
            continue
        out.append(line)
    return _BLANK_RUN.sub("\n\n", "\n".join(out))  # no gap of empty lines where lines went


def _lines_with_hints(lower: str, hints: tuple[str, ...]) -> set[int]:
    """The numbers of the lines of the lower-cased text ``lower`` that hold one of ``hints``."""
    found: set[int] = set()
    for hint in hints:
        at = lower.find(hint)
        while at >= 0:
            found.add(lower.count("\n", 0, at))
            at = lower.find(hint, at + 1)
    return found


def trim_tail(text: str) -> str:
    """Drop the short lines after the last paragraph-like line (tag lists, link rows, buttons)."""
    lines = text.split("\n")
    for i in range(len(lines) - 1, -1, -1):
        if is_paragraph(lines[i].strip()):
            return "\n".join(lines[: i + 1])
    return text
