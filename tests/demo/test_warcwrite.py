"""The deterministic WARC writer: records read back by fastwarc exactly as written."""

import io

import pytest
from fastwarc.warc import ArchiveIterator, WarcRecordType

from raycorpus.demo.warcwrite import WarcWriter, crawler_rewrite_headers, record_id, sha1_digest

URL = "https://news.example-site.test/news/2025/01/a-story.html"
DATE = "2025-01-02T03:04:05Z"
BODY = '<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>Grüße</title></head><body>ß</body></html>'.encode()
HEADERS = [
    ("Date", "Thu, 02 Jan 2025 03:04:05 GMT"),
    ("Content-Type", "text/html; charset=utf-8"),
    ("X-Crawler-Content-Encoding", "gzip"),
    ("Set-Cookie", "sid=1; Path=/"),
    ("Set-Cookie", "lang=en; Path=/"),
    ("Content-Length", str(len(BODY))),
]


def write_one(gzip_records: bool, body: bytes = BODY) -> tuple[bytes, str]:
    buf = io.BytesIO()
    rid = WarcWriter(buf, gzip_records=gzip_records).response(URL, DATE, 200, HEADERS, body)
    return buf.getvalue(), rid


@pytest.mark.parametrize("gzip_records", [True, False])
def test_a_response_reads_back_identically(gzip_records):
    data, rid = write_one(gzip_records)
    assert data.startswith(b"\x1f\x8b" if gzip_records else b"WARC/1.1\r\n")
    (rec,) = ArchiveIterator(io.BytesIO(data), parse_http=True, verify_digests=True)
    assert rec.record_type == WarcRecordType.response
    assert rec.record_id == rid and rid.startswith("<urn:uuid:")
    assert rec.headers["WARC-Target-URI"] == URL and rec.headers["WARC-Date"] == DATE
    assert rec.headers["WARC-Payload-Digest"] == sha1_digest(BODY)
    assert rec.headers["WARC-Identified-Payload-Type"] == "text/html"
    assert rec.http_headers.status_code == 200
    assert list(rec.http_headers.astuples()) == HEADERS  # order and repeated names kept
    assert rec.http_charset == "utf-8"
    assert rec.reader.read() == BODY
    # both digests checked explicitly (the block digest must be verified before HTTP parsing)
    rec = next(ArchiveIterator(io.BytesIO(data), parse_http=False))
    assert rec.verify_block_digest()
    rec = next(ArchiveIterator(io.BytesIO(data), parse_http=False))
    rec.parse_http()
    assert rec.verify_payload_digest()


def test_a_corrupted_payload_fails_digest_verification():
    data, _ = write_one(False)
    bad = data.replace(b"<body>", b"<bodx>")
    assert len(list(ArchiveIterator(io.BytesIO(bad)))) == 1
    assert list(ArchiveIterator(io.BytesIO(bad), verify_digests=True)) == []


def test_bytes_are_a_pure_function_of_the_inputs():
    for gz in (True, False):
        assert write_one(gz) == write_one(gz)
        assert write_one(gz)[0] != write_one(gz, BODY + b" ")[0]
    assert record_id("x") == record_id("x") != record_id("y")


def test_a_capture_links_request_response_metadata_and_revisit():
    buf = io.BytesIO()
    w = WarcWriter(buf)
    info = w.warcinfo({"software": "test"}, "t.warc.gz", DATE)
    req = w.request(URL, DATE)
    resp = w.response(URL, DATE, 200, HEADERS, BODY)
    meta = w.metadata(URL, DATE, resp, {"fetchTimeMs": "12"})
    rev = w.revisit(URL, DATE, resp, URL, DATE, sha1_digest(BODY), 200, HEADERS[:2])
    recs = list(ArchiveIterator(io.BytesIO(buf.getvalue()), parse_http=False, verify_digests=True))
    assert [r.record_type for r in recs] == [WarcRecordType.warcinfo, WarcRecordType.request,
                                              WarcRecordType.response, WarcRecordType.metadata,
                                              WarcRecordType.revisit]
    assert [r.record_id for r in recs] == [info, req, resp, meta, rev]
    assert all(r.headers["WARC-Warcinfo-ID"] == info for r in recs[1:])
    assert recs[3].headers["WARC-Concurrent-To"] == resp and recs[4].headers["WARC-Refers-To"] == resp
    assert recs[4].headers["WARC-Payload-Digest"] == sha1_digest(BODY)
    assert len(set(r.record_id for r in recs)) == 5


def test_crawler_rewrite_headers_follows_common_crawl():
    h = [("Content-Type", "text/html"), ("Content-Encoding", "gzip"), ("Content-Length", "999")]
    assert crawler_rewrite_headers(h, 4321) == [
        ("Content-Type", "text/html"),
        ("X-Crawler-Content-Encoding", "gzip"),
        ("X-Crawler-Content-Length", "999"),
        ("Content-Length", "4321"),
    ]
    chunked = crawler_rewrite_headers([("Transfer-Encoding", "chunked")], 10)
    assert chunked == [("X-Crawler-Transfer-Encoding", "chunked"), ("Content-Length", "10")]
    plain = [("Content-Type", "image/png"), ("Content-Length", "10")]
    assert crawler_rewrite_headers(plain, 10) == plain
