"""The synthetic sample crawl: deterministic bytes, CC-shaped records, the pages it says it wrote."""

import hashlib
import html
import json
import os
import re
import subprocess
import sys
from collections import Counter

import pytest
from fastwarc.warc import ArchiveIterator, WarcRecordType
from resiliparse.extract.html2text import extract_plain_text

from raycorpus import counts as ck
from raycorpus.demo import SampleCrawl, SamplePage, write_sample_crawl
from raycorpus.ingest.warc import iter_html_records

MAGIC = {"application/pdf": b"%PDF-1.4\n", "image/png": b"\x89PNG\r\n\x1a\n"}
CYRILLIC = re.compile(r"[\u0400-\u04ff]")
KANA = re.compile(r"[\u3040-\u30ff]")
HAN = re.compile(r"[\u4e00-\u9fff]")
ACCENTED = re.compile(r"[àâçéèêëîôùûüÿäößáíóúñ¿ÀÉÜÖÄÁÍÓÚÑ]")
STOP_WORDS = {"the", "of", "and", "to", "that", "with", "have", "be"}
KIND_KEYS = {"article": "articles", "exact_copy": "exact_copies", "near_copy": "near_copies"}
KINDS = {"article", "exact_copy", "near_copy", "spam", "boilerplate_only", "short", "list_heavy", "non_html",
         "not_found", "redirect", "revisit"}


def digests(sample: SampleCrawl) -> list[str]:
    return [hashlib.sha256(p.read_bytes()).hexdigest() for p in sample.warc_paths]


def is_html_200(p: SamplePage) -> bool:
    return p.record_type == "response" and p.status == 200 and (p.content_type or "").startswith("text/html")


def html_records(sample: SampleCrawl) -> list:
    out = []
    for path in sample.warc_paths:
        with open(path, "rb") as f:
            out += list(iter_html_records(f, Counter(), 8 << 20))
    return out


@pytest.fixture(scope="module")
def sample(crawl) -> SampleCrawl:
    """The crawl the end-to-end tests build (the session's sample crawl)."""
    return crawl.sample


@pytest.fixture(scope="module")
def default(tmp_path_factory) -> SampleCrawl:
    return write_sample_crawl(tmp_path_factory.mktemp("default"))


def test_same_arguments_give_identical_bytes_and_seeds_differ(default, tmp_path):
    again = write_sample_crawl(tmp_path / "again")
    assert digests(again) == digests(default)
    assert again.counts == default.counts and again.pages == default.pages
    assert (tmp_path / "again" / "warc.paths").read_bytes() == default.manifest_path.read_bytes()
    other = write_sample_crawl(tmp_path / "seed1", seed=1)
    assert all(a != b for a, b in zip(digests(other), digests(default), strict=True))
    # no dependence on per-process string hashing either
    code = "import sys; from raycorpus.demo import write_sample_crawl; write_sample_crawl(sys.argv[1])"
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    subprocess.run([sys.executable, "-c", code, str(tmp_path / "sub")], check=True, env=env, timeout=60)
    sub = sorted((tmp_path / "sub").glob("*.warc.gz"))
    assert [hashlib.sha256(p.read_bytes()).hexdigest() for p in sub] == digests(default)


def test_manifest_lists_the_warc_files_relative_to_the_folder(sample):
    names = sample.manifest_path.read_text().splitlines()
    assert sample.manifest_path.name == "warc.paths"
    assert names == [f"CC-SAMPLE-{i:05d}.warc.gz" for i in range(8)] == [p.name for p in sample.warc_paths]
    assert all((sample.manifest_path.parent / n).is_file() for n in names)


def test_counts_describe_the_pages(sample, default):
    for c, n_warcs, per in ((sample, 8, 40), (default, 4, 60)):
        kinds = Counter(KIND_KEYS.get(p.kind, p.kind) for p in c.pages)
        assert {k: c.counts[k] for k in kinds} == dict(kinds)
        assert sum(kinds.values()) == c.counts["pages"] == n_warcs * per == len(c.pages)
        assert c.counts["warcs"] == n_warcs and c.counts["records"] == n_warcs * (1 + 3 * per)
        assert c.counts["html_200"] == sum(map(is_html_200, c.pages))
        assert sum(v for k, v in c.counts.items() if k.startswith("lang:")) == c.counts["articles"]
        assert 0.6 <= c.counts["articles"] / c.counts["pages"] <= 0.8
        assert c.counts["lang:en"] > c.counts["articles"] / 2
        for i in range(n_warcs):  # every file has every kind and every language
            here = Counter(p.kind for p in c.pages if p.warc == i)
            assert set(here) == KINDS
            assert here["revisit"] == 1 and here["non_html"] == 4 and min(here.values()) >= 1
            assert {p.lang for p in c.pages if p.warc == i and p.kind == "article"} == {
                "en", "de", "fr", "es", "ru", "zh", "ja"}
    assert default.counts["articles"] == 176 and sample.counts["articles"] == 216


def test_every_file_parses_into_cc_shaped_records(sample):
    total = 0
    for i, path in enumerate(sample.warc_paths):
        pages = [p for p in sample.pages if p.warc == i]
        with open(path, "rb") as f:
            recs = [(r.record_type, r.headers.get("WARC-Target-URI"), r.headers.get("WARC-Concurrent-To"),
                     r.record_id) for r in ArchiveIterator(f, parse_http=True)]
        total += len(recs)
        assert recs[0][0] == WarcRecordType.warcinfo
        types = Counter(str(t) for t, *_ in recs)
        revisits = sum(p.record_type == "revisit" for p in pages)
        assert types == {"warcinfo": 1, "request": len(pages), "metadata": len(pages),
                         "response": len(pages) - revisits, "revisit": revisits}
        for k, page in enumerate(pages):  # request, response/revisit, metadata per capture, in page order
            req, resp, meta = recs[1 + 3 * k : 4 + 3 * k]
            assert (req[0], meta[0]) == (WarcRecordType.request, WarcRecordType.metadata)
            assert resp[0] == (WarcRecordType.revisit if page.record_type == "revisit" else WarcRecordType.response)
            assert req[1] == resp[1] == meta[1] == page.url
            assert meta[2] == resp[3]
    assert total == sample.counts["records"]
    pages = {p.url for p in sample.pages if p.kind != "revisit"}
    assert len(pages) == sample.counts["pages"] - sample.counts["revisit"]


def test_digests_verify(sample):
    for path in sample.warc_paths:
        with open(path, "rb") as f:
            n_all = sum(1 for _ in ArchiveIterator(f))
        with open(path, "rb") as f:
            n_ok = sum(1 for _ in ArchiveIterator(f, verify_digests=True))
        assert n_ok == n_all == 1 + 3 * 40
        with open(path, "rb") as f:
            for rec in ArchiveIterator(f, record_types=WarcRecordType.response, parse_http=False):
                assert rec.verify_block_digest(), rec.headers["WARC-Target-URI"]


def test_responses_have_the_intended_status_headers_and_types(sample):
    seen = Counter()
    payload_digest: dict[str, str] = {}
    for i, path in enumerate(sample.warc_paths):
        pages = [p for p in sample.pages if p.warc == i]
        with open(path, "rb") as f:
            recs = ArchiveIterator(f, record_types=WarcRecordType.response | WarcRecordType.revisit, parse_http=True)
            for page, rec in zip(pages, recs, strict=True):
                hh = rec.http_headers
                names = [k.lower() for k, _ in hh.astuples()]
                assert rec.headers["WARC-Target-URI"] == page.url
                assert hh.status_code == page.status
                assert hh.get("Content-Type") == page.content_type
                assert "content-encoding" not in names and "transfer-encoding" not in names  # stored decoded
                if page.record_type == "revisit":
                    assert rec.headers["WARC-Refers-To-Target-URI"] == page.url == page.copy_of
                    assert rec.headers["WARC-Payload-Digest"] == payload_digest[page.url]
                    continue
                body = rec.reader.read()
                payload_digest.setdefault(page.url, rec.headers["WARC-Payload-Digest"])
                assert hh.get("Content-Length") == str(len(body))
                seen["x-crawler"] += "x-crawler-content-encoding" in names
                if page.kind == "redirect":
                    assert body == b"" and hh.get("Location") == "https" + page.url[len("http") :] + "/"
                elif page.kind == "non_html":
                    kind = rec.headers["WARC-Identified-Payload-Type"]
                    seen[kind] += 1
                    assert body.startswith(MAGIC.get(kind, b""))
                    if kind == "application/json":
                        assert json.loads(body)["status"] == "ok"
                else:
                    assert body.lstrip().lower().startswith((b"<!doctype html", b"<html"))
                    assert body.decode(page.charset)  # encoded as intended
    assert seen["application/pdf"] == seen["image/png"] == seen["application/json"] == seen["text/plain"] == 8
    assert seen["x-crawler"] > 100
    # exact copies carry the very same payload as their source, near copies do not
    for p in sample.pages:
        if p.kind in ("exact_copy", "near_copy"):
            assert (payload_digest[p.url] == payload_digest[p.copy_of]) == (p.kind == "exact_copy")
    sources = {p.url: p.warc for p in sample.pages if p.kind == "article"}
    assert all(any(p.kind == "exact_copy" and sources[p.copy_of] < i for p in sample.pages if p.warc == i)
               for i in range(1, 8))  # copies across files


def test_reader_yields_exactly_the_http_200_html_pages(sample):
    for i, path in enumerate(sample.warc_paths):
        pages = [p for p in sample.pages if p.warc == i]
        counts: Counter = Counter()
        with open(path, "rb") as f:
            recs = list(iter_html_records(f, counts, 8 << 20))
        assert [r.url for r in recs] == [p.url for p in pages if is_html_200(p)]
        assert counts[ck.skip("not_200")] == sum(p.kind in ("not_found", "redirect") for p in pages)
        assert counts[ck.skip("not_html")] == sum(p.kind == "non_html" for p in pages) == 4
    assert len(html_records(sample)) == sample.counts["html_200"]


def test_charset_pages_decode_correctly(sample):
    pages = [p for p in sample.pages if is_html_200(p)]
    expected_codec = {"utf-8": "utf-8", "cp1252": "cp1252", "latin-1": "cp1252", "cp1251": "cp1251",
                      "shift_jis": "shift_jis"}
    expected_source = {"http": "http", "http+meta": "http", "meta": "meta", "none": "utf-8"}
    variants = Counter()
    for page, rec in zip(pages, html_records(sample), strict=True):
        assert "\ufffd" not in rec.html, page.url
        assert rec.charset == expected_codec[page.charset]
        assert rec.charset_source == expected_source[page.declared]
        for par in page.paragraphs:
            assert html.escape(par, quote=False) in rec.html
        text = " ".join(page.paragraphs)
        if page.kind == "article":
            script = {"ru": CYRILLIC, "ja": KANA, "zh": HAN, "de": ACCENTED, "fr": ACCENTED, "es": ACCENTED}
            if page.lang in script:
                assert len(script[page.lang].findall(text)) > 5, page.url
            variants[(page.warc, page.lang, page.charset, page.declared)] += 1
    for i in range(8):  # every file has each charset test page
        for variant in (("de", "cp1252", "http"), ("fr", "latin-1", "meta"), ("ru", "cp1251", "meta"),
                        ("ja", "shift_jis", "http"), ("zh", "utf-8", "http+meta")):
            assert variants[(i, *variant)] >= 1, (i, variant)
        assert sum(v for (w, lang, _, where), v in variants.items() if w == i and where == "none" and lang != "en")


def test_main_content_extraction_keeps_the_article_and_drops_the_boilerplate(sample):
    checked = 0
    for page, rec in zip([p for p in sample.pages if is_html_200(p)], html_records(sample), strict=True):
        if page.kind not in ("article", "exact_copy", "near_copy"):
            continue
        text = extract_plain_text(rec.html, main_content=True)
        for par in page.paragraphs:
            assert par in text, page.url
        assert page.footer and page.footer not in text and page.footer in extract_plain_text(rec.html)
        if page.lang == "en":
            assert "we use cookies" not in text.lower() and "Related stories" not in text
        checked += 1
    assert checked == sample.counts["articles"] + sample.counts["exact_copies"] + sample.counts["near_copies"]


def test_english_articles_read_like_text(sample):
    articles = [p for p in sample.pages if p.kind == "article" and p.lang == "en"]
    grams: dict[str, set] = {}
    for p in articles:
        assert 3 <= len(p.paragraphs) <= 10
        for par in p.paragraphs:
            words = par.split()
            assert 20 <= len(words) <= 150 and par[-1] in ".?!"
        words = re.findall(r"[a-z']+", " ".join(p.paragraphs).lower())
        assert len(STOP_WORDS & set(words)) >= 5
        grams[p.url] = {tuple(words[k : k + 13]) for k in range(len(words) - 12)}
    urls = list(grams)
    pairs = [(a, b) for k, a in enumerate(urls) for b in urls[k + 1 :]]
    sharing = sum(bool(grams[a] & grams[b]) for a, b in pairs)
    assert sharing / len(pairs) < 0.02  # two articles rarely share a long n-gram


def test_small_and_invalid_sizes(tmp_path):
    tiny = write_sample_crawl(tmp_path / "tiny", n_warcs=1, pages_per_warc=1)
    assert tiny.counts["pages"] == tiny.counts["articles"] == tiny.counts["lang:en"] == 1
    assert len(html_records(tiny)) == 1
    with pytest.raises(ValueError):
        write_sample_crawl(tmp_path / "none", n_warcs=0)
    assert not (tmp_path / "none").exists()


def test_the_old_module_path_still_imports(monkeypatch):
    import importlib

    import raycorpus.demo

    monkeypatch.delitem(sys.modules, "raycorpus.demo.sample", raising=False)
    with pytest.warns(DeprecationWarning, match="raycorpus.demo.sample moved"):
        old = importlib.import_module("raycorpus.demo.sample")
    assert old.write_sample_crawl is raycorpus.demo.write_sample_crawl and old.SampleCrawl is SampleCrawl
