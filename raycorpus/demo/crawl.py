"""A synthetic, deterministic, Common-Crawl-shaped sample crawl for demos and tests (no Ray, no data).

:func:`write_sample_crawl` writes ``CC-SAMPLE-{i:05d}.warc.gz`` files (warcinfo, then
request/response/metadata per capture, like CC) plus a ``warc.paths`` manifest. Every
page is produced by a small template grammar over the vocabularies in ``vocab/``: English
articles on several topics (the majority), articles in German, French, Spanish,
Russian, Chinese and Japanese in a mix of legacy charsets and declarations, spam,
boilerplate-only, very short and list-heavy pages, exact and near copies of earlier
articles, non-HTML payloads, 404s, 301 redirects and one revisit record per file.

Output bytes are a pure function of the arguments: all randomness comes from local
``random.Random`` instances seeded with strings, dates derive from the seed, and the
WARC writer is deterministic.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path

from raycorpus.demo.pages import KINDS, Fetch, PageMaker, Planned, SamplePage, plan
from raycorpus.demo.vocabulary import LANGUAGES, page_texts
from raycorpus.demo.warcwrite import WarcWriter, crawler_rewrite_headers, gzip_member, record_id, sha1_digest

__all__ = ["SampleCrawl", "SamplePage", "write_sample_crawl"]

_CHARSET_NAMES = {"utf-8": "UTF-8", "cp1252": "windows-1252", "latin-1": "ISO-8859-1", "cp1251": "windows-1251",
                  "shift_jis": "Shift_JIS"}
_CLD2 = {"en": ("eng", "ENGLISH"), "de": ("deu", "GERMAN"), "fr": ("fra", "FRENCH"), "es": ("spa", "SPANISH"),
         "ru": ("rus", "RUSSIAN"), "zh": ("zho", "Chinese"), "ja": ("jpn", "Japanese")}
_COUNT_KEYS = {"article": "articles", "exact_copy": "exact_copies", "near_copy": "near_copies"}
# The warcinfo record names the module that wrote the crawl before the split; kept for byte-identical output.
_SOFTWARE = "raycorpus.demo.sample (synthetic sample crawl)"


@dataclass
class SampleCrawl:
    warc_paths: list[Path]
    manifest_path: Path  # out_dir / "warc.paths": the WARC file names relative to out_dir, one per line
    counts: dict[str, int]  # per kind, per article language (lang:xx), and totals
    pages: list[SamplePage] = field(default_factory=list)


@dataclass(frozen=True)
class _Capture:
    """When one capture happened and the ids of its three records."""

    date: datetime
    request_id: str
    response_id: str  # of the response or revisit record
    metadata_id: str

    @property
    def warc_date(self) -> str:
        return f"{self.date:%Y-%m-%dT%H:%M:%SZ}"


@dataclass(frozen=True)
class _Response:
    """A written HTTP-200 HTML response that a later revisit record may refer to."""

    capture: _Capture
    fetch: Fetch
    headers: list[tuple[str, str]]


def _http_headers(rng: random.Random, date: datetime, f: Fetch) -> list[tuple[str, str]]:
    """Plausible server headers, then CC's rewrite (payloads are stored decoded)."""
    h = [("Date", format_datetime(date, usegmt=True)), ("Server", rng.choice(page_texts().servers))]
    if f.content_type:
        h.append(("Content-Type", f.content_type))
    h += f.extra
    if f.body:
        modified = date - timedelta(days=rng.randint(1, 400), seconds=rng.randrange(86400))
        h.append(("Last-Modified", format_datetime(modified, usegmt=True)))
        h.append(("ETag", f'"{hashlib.sha1(f.body).hexdigest()[:20]}"'))
        h.append(("Cache-Control", rng.choice(("max-age=300", "public, max-age=3600", "no-cache"))))
    if f.content_type and f.content_type.startswith("text/html"):
        h.append(("Vary", "Accept-Encoding"))
        if rng.random() < 0.5:
            h.append(("X-Frame-Options", "SAMEORIGIN"))
        if rng.random() < 0.3:
            h.append(("Set-Cookie", f"sid={rng.getrandbits(64):016x}; Path=/; HttpOnly; SameSite=Lax"))
    transfer = f.transfer or rng.choices(("gzip", "chunked", "identity"), (6, 2, 2))[0]
    if transfer == "gzip":
        h += [("Content-Encoding", "gzip"), ("Content-Length", str(len(gzip_member(f.body))))]
    elif transfer == "chunked":
        h.append(("Transfer-Encoding", "chunked"))
    else:
        h.append(("Content-Length", str(len(f.body))))
    h.append(("Connection", rng.choice(("keep-alive", "close"))))
    return crawler_rewrite_headers(h, len(f.body))


def _detected(lang: str | None, charset: str, body: bytes) -> list[tuple[str, str]]:
    """The metadata record's charset and CLD2 language fields for an HTML page."""
    iso3, name = _CLD2[lang or "en"]
    cld2 = {"reliable": True, "text-bytes": len(body) // 3, "languages": [
        {"code": lang, "code-iso-639-3": iso3, "text-covered": 0.97, "score": 901.0, "name": name}]}
    return [("charset-detected", _CHARSET_NAMES[charset]),
            ("languages-cld2", json.dumps(cld2, separators=(",", ":")))]


class _CrawlWriter:
    """Writes the WARC files in crawl order; its :class:`PageMaker` remembers articles across files."""

    def __init__(self, seed: int, per: int) -> None:
        self.seed = seed
        self.per = per
        rng = random.Random(f"{seed}:start")
        self.start = datetime(2024, 1, 1, tzinfo=UTC) + timedelta(days=rng.randrange(600),
                                                                  seconds=rng.randrange(86400))
        self.maker = PageMaker()
        self.pages: list[SamplePage] = []

    def write_warc(self, writer: WarcWriter, warc: int, filename: str) -> None:
        """Write one WARC file: warcinfo, then request, response (or revisit) and metadata per page."""
        self.maker.warc = warc
        t0 = self.start + timedelta(hours=3 * warc)
        self._warcinfo(writer, warc, filename, t0)
        responses: list[_Response] = []  # revisit candidates
        for j, planned in enumerate(plan(self.per, warc, random.Random(f"{self.seed}:plan:{warc}"))):
            self.pages.append(self._capture(writer, warc, j, planned, t0, responses))

    def _warcinfo(self, writer: WarcWriter, warc: int, filename: str, t0: datetime) -> None:
        fields = {
            "software": _SOFTWARE,
            "hostname": f"sample-crawler-{warc:02d}",
            "format": "WARC File Format 1.1",
            "conformsTo": "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/",
            "isPartOf": f"RAYCORPUS-SAMPLE-{self.seed}",
            "description": "Synthetic Common-Crawl-shaped sample: every page is generated, none is real",
            "operator": "raycorpus",
            "robots": "classic",
            "http-header-user-agent": "CCBot/2.0 (https://commoncrawl.org/faq/)",
        }
        writer.warcinfo(fields, filename, f"{t0:%Y-%m-%dT%H:%M:%SZ}", record_id(f"{self.seed}:{warc}:warcinfo"))

    def _capture(self, writer: WarcWriter, warc: int, j: int, planned: Planned, t0: datetime,
                 responses: list[_Response]) -> SamplePage:
        """Write the request, response (or revisit) and metadata records of capture ``j``."""
        rng = random.Random(f"{self.seed}:{warc}:{j}")
        date = t0 + timedelta(seconds=9 * j + rng.randrange(9))
        cap = _Capture(date, *(record_id(f"{self.seed}:{warc}:{j}:{r}") for r in ("request", "response", "metadata")))
        fields = [("fetchTimeMs", str(rng.randint(30, 1500)))]
        if planned.kind == "revisit":
            page = self._revisit(writer, rng.choice(responses), cap, warc)
        else:
            fetch = self.maker.make(rng, warc * self.per + j, date, planned)
            page = fetch.page
            headers = _http_headers(rng, date, fetch)
            writer.request(page.url, cap.warc_date, cap.request_id)
            writer.response(page.url, cap.warc_date, fetch.status, headers, fetch.body, cap.response_id)
            if page.status == 200 and page.charset:
                responses.append(_Response(cap, fetch, headers))
                fields += _detected(page.lang, page.charset, fetch.body)
        writer.metadata(page.url, cap.warc_date, cap.response_id, fields, cap.metadata_id)
        return page

    @staticmethod
    def _revisit(writer: WarcWriter, src: _Response, cap: _Capture, warc: int) -> SamplePage:
        """A revisit record of an earlier response in this file (same payload, new Date header)."""
        url = src.fetch.page.url
        headers = [("Date", format_datetime(cap.date, usegmt=True)) if k == "Date" else (k, v) for k, v in src.headers]
        writer.request(url, cap.warc_date, cap.request_id)
        writer.revisit(url, cap.warc_date, src.capture.response_id, url, src.capture.warc_date,
                       sha1_digest(src.fetch.body), 200, headers, cap.response_id)
        return replace(src.fetch.page, warc=warc, kind="revisit", record_type="revisit", copy_of=url)

    def counts(self, n_warcs: int) -> dict[str, int]:
        pages = self.pages
        counts = {"warcs": n_warcs, "pages": len(pages), "records": n_warcs + 3 * len(pages),
                  "html_200": sum(p.record_type == "response" and p.status == 200 and p.charset is not None
                                  for p in pages)}
        for kind in KINDS:
            counts[_COUNT_KEYS.get(kind, kind)] = sum(p.kind == kind for p in pages)
        for lang in ("en", *LANGUAGES):
            counts[f"lang:{lang}"] = sum(p.kind == "article" and p.lang == lang for p in pages)
        return counts


def write_sample_crawl(out_dir: str | Path, n_warcs: int = 4, pages_per_warc: int = 60, seed: int = 0) -> SampleCrawl:
    """Write ``n_warcs`` sample ``.warc.gz`` files and ``warc.paths`` into ``out_dir`` (created if needed).

    The files are byte-identical for the same arguments. ``counts`` has one entry per page kind
    (``articles`` in all languages, ``exact_copies``, ``near_copies``, ``spam``, ``boilerplate_only``,
    ``short``, ``list_heavy``, ``non_html``, ``not_found``, ``redirect``, ``revisit``), the original
    articles per language (``lang:en`` ...), and ``warcs``, ``pages``, ``records`` and ``html_200``
    (the HTTP-200 HTML responses a reader should yield).
    """
    if n_warcs < 1 or pages_per_warc < 1:
        raise ValueError("n_warcs and pages_per_warc must be at least 1")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    crawl = _CrawlWriter(seed, pages_per_warc)
    paths = []
    for i in range(n_warcs):
        path = out / f"CC-SAMPLE-{i:05d}.warc.gz"
        with open(path, "wb") as f:
            crawl.write_warc(WarcWriter(f), i, path.name)
        paths.append(path)
    manifest = out / "warc.paths"
    manifest.write_text("".join(f"{p.name}\n" for p in paths), encoding="utf-8")
    return SampleCrawl(paths, manifest, crawl.counts(n_warcs), crawl.pages)
