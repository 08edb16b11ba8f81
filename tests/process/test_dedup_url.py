"""URL dedup: the normalisation rules, the keys, and the decision (URL before content hash and bands)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from raycorpus.ingest.warc import iter_html_records
from raycorpus.process.dedup.index import EXACT, KEEP, NEAR, URL, Deduplicator, Layout, LocalShards, decode_record
from raycorpus.process.dedup.lsh import NO_MATCH
from raycorpus.process.dedup.settings import DedupConfig
from raycorpus.process.dedup.sketch import Signer
from raycorpus.process.dedup.urlkey import TRACKING_PARAMS, normalize_url, url_key
from raycorpus.process.pipeline import content_hash
from tests.support.paths import SHARED, need_shared


@pytest.mark.parametrize("raw, expected", [
    ("HTTP://Example.COM/Path", "http://example.com/Path"),  # scheme and host lowercased, the path's case kept
    ("http://example.com:80/a", "http://example.com/a"),  # default ports dropped
    ("https://example.com:443/a", "https://example.com/a"),
    ("https://example.com:80/a", "https://example.com:80/a"),  # not https's default: kept
    ("http://example.com:8080/a", "http://example.com:8080/a"),
    ("http://example.com/a#section-2", "http://example.com/a"),  # fragment dropped
    ("http://example.com", "http://example.com/"),  # an empty path is /
    ("http://example.com?b=1", "http://example.com/?b=1"),
    ("https://bücher.de/Straße", "https://xn--bcher-kva.de/Straße"),  # IDNA host; the path as it is
    ("https://XN--BCHER-KVA.de/", "https://xn--bcher-kva.de/"),
    ("http://example.com./a", "http://example.com/a"),  # the root label's dot
    ("http://[2001:DB8::1]:80/a", "http://[2001:db8::1]/a"),
    ("  http://example.com/a \n", "http://example.com/a"),
])
def test_each_rule(raw, expected):
    assert normalize_url(raw) == expected
    assert normalize_url(expected) == expected  # idempotent


def test_tracking_parameters_go_and_the_others_keep_their_order():
    url = ("https://shop.example/item?z=9&utm_source=news&id=42&fbclid=AbC&UTM_Campaign=x&a=1&gclid=7"
           "&_ga=2.1&mc_cid=5&a=0&spm=a.b")
    assert normalize_url(url) == "https://shop.example/item?z=9&id=42&a=1&a=0"
    assert normalize_url("https://ex.com/?utm_source=a&fbclid=b") == "https://ex.com/"
    assert normalize_url("https://ex.com/p?b=2&a=1") != normalize_url("https://ex.com/p?a=1&b=2")  # order is kept
    assert normalize_url("https://ex.com/p?ref=x") == "https://ex.com/p?ref=x"  # a real parameter stays
    assert {"fbclid", "gclid", "msclkid", "mc_eid", "igshid", "_gl"} <= TRACKING_PARAMS


def test_keys_tell_different_urls_apart_and_equal_ones_together():
    same = ["HTTP://WWW.Example.com:80/News/1?id=3&utm_medium=email#top", "http://www.example.com/News/1?id=3"]
    assert len({url_key(u) for u in same}) == 1
    different = ["http://www.example.com/news/1?id=3", "https://www.example.com/News/1?id=3",
                 "http://www.example.com/News/1?id=4", "http://www.example.com/News/1", "http://example.com/News/1?id=3",
                 "http://www.example.com:8080/News/1?id=3"]
    assert len({url_key(u) for u in [same[0], *different]}) == 1 + len(different)
    assert url_key("") == 0  # no URL: no key
    # its own hash family: the same bytes hashed as a URL and as a text give unrelated keys
    assert url_key("http://a.example/") != content_hash("http://a.example/")


def _warc_urls() -> list[str]:
    """The URLs of the HTML pages in real crawls, as the pipeline reads them: a Common Crawl excerpt
    (CC-MAIN-2020-34), one page of CC-MAIN-2024-22 and Dolma's wget crawls (``<url>`` headers)."""
    urls = []
    for rel in ("resiliparse/tests/data/warcfile.warc.gz", "whirlwind/whirlwind.warc.gz",
                "dolma/tests/data/warc/sample-0000.warc.gz", "dolma/tests/data/warc/sample-0001.warc.gz"):
        with open(need_shared(SHARED / "data" / "warc" / rel), "rb") as f:
            urls += [r.url for r in iter_html_records(f, Counter(), 2**26, False)]
    return urls


def test_real_urls_from_crawls():
    urls = _warc_urls()
    assert len(urls) >= 40
    for u in urls:
        norm = normalize_url(u)
        assert normalize_url(norm) == norm
        scheme, rest = u.split("://", 1)
        host, _, tail = rest.partition("/")
        assert norm == f"{scheme}://{host.lower()}/{tail}", u  # these carry no port, fragment or tracking parameter
        # the same page behind a campaign link, an uppercase host, the default port and a fragment: one key
        port = {"http": ":80", "https": ":443"}[scheme]
        sep = "&" if "?" in tail else "?"
        dressed = f"{scheme.upper()}://{host.upper()}{port}/{tail}{sep}utm_source=feed&fbclid=x#comments"
        assert url_key(dressed) == url_key(u), u
    distinct = set(urls)
    assert len({url_key(u) for u in distinct}) == len(distinct)  # different pages keep different keys


# -- the decision


@pytest.fixture(scope="module")
def mh() -> Signer:
    return Signer()  # MinHash values, then the OPH sketch (the default verification)


def _words(seed: int, n: int = 150) -> str:
    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    return " ".join("".join(rng.choice(letters, int(rng.integers(3, 9)))) for _ in range(n))  # no digits: they fold


def _batch(mh: Signer, pages: list[tuple[str, str]]) -> tuple:
    urls, texts = zip(*pages, strict=True) if pages else ((), ())
    hashes = np.array([content_hash(t) for t in texts], np.uint64)
    sigs = mh.signatures(list(texts)) if texts else np.empty((0, mh.width), np.uint32)
    return hashes, sigs, np.array([url_key(u) for u in urls], np.uint64)


def _dedup(n_shards: int = 1, **cfg) -> Deduplicator:
    c = DedupConfig(**cfg)
    layout = Layout.from_config(c, n_shards)
    return Deduplicator(layout, c.threshold, LocalShards(layout))


@pytest.mark.parametrize("n_shards", [1, 3])
def test_a_recrawl_at_the_same_url_is_a_url_duplicate_of_the_first_copy(mh, n_shards):
    a, b, c = _words(1), _words(2), _words(3)
    dd = _dedup(n_shards)
    d0, _ = dd.decide(0, *_batch(mh, [("http://ex.com/a", a), ("http://ex.com/b", b)]))
    assert d0.kind.tolist() == [KEEP, KEEP]
    # WARC 1: /a recrawled with new content (URL), /b's text copied at a new URL (exact), a page twice in one WARC
    warc1 = [("HTTP://EX.com:80/a#x", c), ("http://ex.com/copy", b), ("http://ex.com/new?utm_source=z", _words(4)),
             ("http://ex.com/new", _words(5))]
    d1, rec = dd.decide(1, *_batch(mh, warc1))
    assert d1.kind.tolist() == [URL, EXACT, KEEP, URL]
    assert [int(g) for g in d1.dup_of] == [0 << 24 | 0, 0 << 24 | 1, int(NO_MATCH), 1 << 24 | 2]
    assert np.isnan(d1.jaccard[0]) and d1.jaccard[1] == 1.0
    assert d1.counts() == {"url": 2, "exact": 1, "near": 0}
    assert decode_record(rec).urls.tolist() == [url_key("http://ex.com/new")]  # only the kept document's key


def test_url_comes_first_and_a_dropped_document_inserts_none_of_its_keys(mh):
    a = _words(1)
    dd = _dedup()
    dd.decide(0, *_batch(mh, [("http://ex.com/a", a)]))
    # same URL and same text: counted once, as a URL duplicate
    d1, _ = dd.decide(1, *_batch(mh, [("http://ex.com/a", a)]))
    assert d1.kind.tolist() == [URL]
    # an exact copy at /x is dropped, and so its URL is not indexed: a later page at /x is new
    d2, _ = dd.decide(2, *_batch(mh, [("http://ex.com/x", a), ("http://ex.com/x", _words(9))]))
    assert d2.kind.tolist() == [EXACT, KEEP]
    near = " ".join([*a.split()[:-3], "p", "q", "r"])
    d3, _ = dd.decide(3, *_batch(mh, [("http://ex.com/y", near)]))
    assert d3.kind.tolist() == [NEAR]


def test_an_indexed_near_duplicate_claims_neither_its_url_nor_its_text(mh):
    """With index_duplicates (the default) a near duplicate inserts its band keys and sketch, so a later copy
    of it is found through it; not its URL key or content hash: a later page at its URL is judged on its own
    (the first KEPT copy at a URL wins), and an exact copy of it is a near duplicate (J 1) of it."""
    a = _words(1, 300)
    a_near = " ".join([*a.split()[:-3], "p", "q", "r"])
    for n in (1, 3):
        dd = _dedup(n)
        dd.decide(0, *_batch(mh, [("http://ex.com/a", a)]))
        d1, rec = dd.decide(1, *_batch(mh, [("http://ex.com/b", a_near)]))
        assert d1.kind.tolist() == [NEAR] and d1.indexed == 1
        r = decode_record(rec)
        assert r.near.tolist() == [True] and r.urls.tolist() == [url_key("http://ex.com/b")]
        d2, _ = dd.decide(2, *_batch(mh, [("http://ex.com/b", _words(7)), ("http://ex.com/c", a_near)]))
        assert d2.kind.tolist() == [KEEP, NEAR] and d2.dup_of[1] == 1 << 24 and d2.jaccard[1] == 1.0
        # only kept documents indexed (as before): the near duplicate is not a candidate at all
        old = _dedup(n, index_duplicates=False)
        old.decide(0, *_batch(mh, [("http://ex.com/a", a)]))
        assert old.decide(1, *_batch(mh, [("http://ex.com/b", a_near)]))[0].indexed == 0


def test_url_dedup_off_or_without_urls(mh):
    pages = [("http://ex.com/a", _words(1)), ("http://ex.com/a", _words(2))]
    off, _ = _dedup(url=False).decide(0, *_batch(mh, pages))
    assert off.kind.tolist() == [KEEP, KEEP]
    hashes, sigs, _ = _batch(mh, pages)
    no_urls, _ = _dedup().decide(0, hashes, sigs, np.zeros(2, np.uint64))  # documents without a URL (key 0)
    assert no_urls.kind.tolist() == [KEEP, KEEP]
    assert not DedupConfig(url=False, exact=False, near=False).enabled and DedupConfig(exact=False, near=False).enabled


def test_url_keys_survive_a_rebuild_from_records(mh):
    for n in (1, 3):
        live = _dedup(n)
        records = [live.decide(o, *_batch(mh, [(f"http://ex.com/{o}/{i}", _words(o * 10 + i)) for i in range(5)]))[1]
                   for o in range(3)]
        layout = live.layout
        rebuilt = LocalShards(layout)
        assert {s.load(decode_record(r) for r in records) for s in rebuilt.shards} == {live.next_docno}
        assert [s.stats() for s in rebuilt.shards] == [s.stats() for s in live.shards.shards]
        again = Deduplicator(layout, 0.8, rebuilt, next_docno=live.next_docno)
        d, _ = again.decide(3, *_batch(mh, [("http://EX.com/1/2", _words(99))]))
        assert d.kind.tolist() == [URL]


def test_url_keys_sketches_and_near_duplicates_survive_a_rebuild_from_records(mh):
    """Records of WARCs with kept documents and indexed near duplicates (URL keys, MinHash + sketch rows,
    the near mask) rebuild shards that hold what the live ones hold and decide the same."""
    base = [_words(i, 300) for i in range(6)]
    for n in (1, 3):
        live = _dedup(n)
        records = []
        for o in range(3):  # each WARC: new pages, and near versions of the previous WARC's pages
            pages = [(f"http://ex.com/{o}/{i}", _words(o * 10 + i, 300)) for i in range(3)]
            pages += [(f"http://ex.com/v{o}/{i}", " ".join([*base[i].split()[:-(o + 2)], *"xyz"[: o + 2]]))
                      for i in range(3)]
            d, rec = live.decide(o, *_batch(mh, pages))
            records.append(rec)
        assert d.counts()["near"] == 3
        rebuilt = LocalShards(live.layout)
        assert {s.load(decode_record(r) for r in records) for s in rebuilt.shards} == {live.next_docno}
        assert [s.stats() for s in rebuilt.shards] == [s.stats() for s in live.shards.shards]
        later = [("http://ex.com/v2/0", _words(50, 300)), ("http://ex.com/w", base[1]),
                 ("http://ex.com/1/1", _words(51, 300))]
        fresh = Deduplicator(live.layout, 0.8, rebuilt, next_docno=live.next_docno)
        a, _ = live.decide(3, *_batch(mh, later))
        b, _ = fresh.decide(3, *_batch(mh, later))
        assert a.kind.tolist() == b.kind.tolist() == [KEEP, EXACT, URL]  # the near copy's URL is free
        assert a.dup_of.tolist() == b.dup_of.tolist()
