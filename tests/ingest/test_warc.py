"""WARC reading and charset decoding, on the real samples in ../shared/data/warc."""

import json
import re
from collections import Counter

import pytest

from raycorpus import counts as ck
from raycorpus.ingest.warc import decode_html, iter_html_records
from tests.support.paths import SHARED_WARC, need_shared

CJK = re.compile(r"[\u3040-\u30ff\u4e00-\u9fff]")
CYRILLIC = re.compile(r"[\u0400-\u04ff]")


def read(rel: str) -> tuple[list, Counter]:
    counts: Counter = Counter()
    with open(need_shared(SHARED_WARC / rel), "rb") as f:
        return list(iter_html_records(f, counts, 8 << 20)), counts


def test_record_counts_match_warcio_on_every_real_warc():
    stats = json.loads(need_shared(SHARED_WARC / "EXPECTED_warcio_stats.json").read_text())
    checked = 0
    for rel, exp in stats.items():
        if exp["err"] or ".arc" in rel:  # broken files belong to the reliability tests; ARC is not WARC
            continue
        recs, counts = read(rel)
        assert counts[ck.RECORDS] == exp["records"], rel
        assert counts[ck.RESPONSES] == exp["types"].get("response", 0), rel
        # every HTML response is either kept or skipped because its status is not 200
        assert len(recs) <= exp["html_responses"] <= len(recs) + counts[ck.skip("not_200")], rel
        checked += 1
    assert checked >= 30


def test_clueweb_euc_jp_decodes_to_japanese():
    recs, _ = read("resiliparse/tests/data/clueweb-quirk.warc.gz")  # WARC/0.18, malformed headers
    assert len(recs) == 29
    for r in recs:
        assert r.charset == "euc_jp"
        assert "\ufffd" not in r.html
        assert len(CJK.findall(r.html)) > 300


def test_common_crawl_excerpt_charsets():
    recs, _ = read("resiliparse/tests/data/warcfile.warc.gz")
    assert len(recs) == 16
    by = Counter(r.charset for r in recs)
    assert by["utf-8"] >= 5 and by["gbk"] >= 3 and by["cp1252"] == 2  # iso-8859-1 labels read as cp1252
    assert sum("\ufffd" in r.html for r in recs) == 0
    assert any(r.charset == "cp1251" and len(CYRILLIC.findall(r.html)) > 100 for r in recs)
    assert {r.charset_source for r in recs} >= {"http", "meta"}


def test_cc_record_fields():
    (r,), _ = read("whirlwind/whirlwind.warc.gz")
    assert r.url == "https://an.wikipedia.org/wiki/Escopete"
    assert r.record_id.startswith("<urn:uuid:") and r.date.startswith("2024-05")
    assert "Escopete" in r.html


def test_chunked_payload_is_dechunked():
    (r,), _ = read("warcio/test/data/example-iana.org-chunked.warc")
    assert r.html.lstrip().lower().startswith("<!doctype html")


@pytest.mark.parametrize(
    "body, http, expected, source",
    [
        ("<p>Grüße aus München — ça va? 東京</p>".encode(), None, "utf-8", "utf-8"),  # no declaration at all
        ("<p>Grüße aus München</p>".encode("cp1252"), "utf-8", "cp1252", "detected"),  # HTTP header lies
        (b'<meta charset="koi8-r"><p>' + "Привет, мир".encode("koi8-r"), None, "koi8-r", "meta"),
        ("<p>สวัสดีครับ ยินดีต้อนรับ</p>".encode(), None, "utf-8", "utf-8"),  # Thai UTF-8: not iso8859-11
        (b"<p>caf\xe9</p>", "ISO-8859-1", "cp1252", "http"),
        (b"<p>x</p>", "no-such-charset", "utf-8", "utf-8"),
        (b'<meta charset="utf-16"><p>plain ascii</p>', None, "utf-8", "meta"),
    ],
)
def test_decode_order(body, http, expected, source):
    text, enc, src = decode_html(body, http)
    assert (enc, src) == (expected, source)
    assert "\ufffd" not in text


def test_looks_binary_counts_the_characters_it_always_counted():
    """The control / replacement characters are counted as they always were (a ``str.translate`` deleting them,
    then a regex, now the UTF-8 bytes): every code point is counted as before, and so is every real page's head
    and a binary payload."""
    import random

    from raycorpus.ingest.warc import looks_binary

    counted = {*range(9), 11, *range(14, 32), 0xFFFD}
    every = "".join(map(chr, range(0x110000)))
    for start in range(0, len(every), 4096):  # each block of 4,096 code points: its count and its verdict
        head = every[start : start + 4096]
        n = sum(ord(c) in counted for c in head)
        assert looks_binary(head) == (n > 0.05 * len(head))
    assert looks_binary("".join(map(chr, range(32))) * 10) and not looks_binary("\t\n\f\r text" * 100)
    # counted from the UTF-8 bytes (and U+FFFD): each character counts once, at the 5 % threshold, in an ASCII, a
    # Latin-1, a CJK and a surrogate-holding head
    for c in map(chr, sorted(counted)):
        for filler in ("a", "\xe9", "\u4e2d", "\ud800"):
            assert not looks_binary(c * 5 + filler * 95) and looks_binary(c * 6 + filler * 94), (c, filler)
    noise = random.Random(0).randbytes(8192).decode("latin-1")  # random bytes read as a 1-byte charset
    assert looks_binary(noise.encode("latin-1").decode("utf-8", "replace"))
    with open(need_shared(SHARED_WARC / "whirlwind" / "whirlwind.warc.gz"), "rb") as f:
        pages = list(iter_html_records(f, Counter(), 8 << 20))
    assert pages and not any(looks_binary(p.html) for p in pages)


# sha256 of every record read from every shared WARC (both quirks modes), pinned when the read stage was made cheaper
# (issue 29): the code of before (e2cf59b) and of after give this same digest
READ_DIGEST = "d2755b2e21ce57f053c17a8f73df7b571d1fd1cdcd3ef6c05e4c50714f73edb4"


def records_digest() -> str:
    """The digest of the records read (and the counts) from every shared ``*.warc.gz``."""
    import hashlib

    h = hashlib.sha256()
    for path in sorted(need_shared(SHARED_WARC).rglob("*.warc.gz")):
        for quirks in (True, False):
            counts: Counter = Counter()
            with open(path, "rb") as f:
                for r in iter_html_records(f, counts, 8 << 20, quirks):
                    fields = (r.url, r.record_id, r.date, r.charset, r.charset_source, str(r.payload_bytes), r.html)
                    h.update("\x00".join(fields).encode("utf-8", "surrogatepass") + b"\x01")
            h.update(repr(sorted((str(k), v) for k, v in counts.items())).encode())
    return h.hexdigest()


def test_the_records_read_from_every_shared_warc_are_those_of_before():
    """Reading and decoding are pure: any change of a record (text, charset, counts) changes this digest."""
    assert records_digest() == READ_DIGEST
