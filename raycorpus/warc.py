"""WARC reading: HTTP 200 HTML response records from a stream, decoded to str.

fastwarc parses the container; this module picks the records worth extracting and
decodes their payload: HTTP charset, then the HTML meta charset, then strict UTF-8,
then detection (uchardet guesses iso8859-11 for some UTF-8 pages, so UTF-8 is tried
before it).
"""

from __future__ import annotations

import codecs
import gzip
import zlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

from fastwarc.warc import ArchiveIterator, WarcRecordType
from resiliparse.parse.encoding import bytes_to_str, detect_encoding, map_encoding_to_html5

HTML_TYPES = ("text/html", "application/xhtml+xml")
_HTML_SNIFF = (b"<!doctype html", b"<html", b"<head", b"<body", b"<title", b"<meta", b"<div", b"<p>")


@dataclass(slots=True)
class HtmlRecord:
    url: str
    record_id: str
    date: str
    html: str
    charset: str  # the encoding the payload was decoded with
    charset_source: str  # http | meta | utf-8 | detected
    payload_bytes: int


def _norm_codec(name: str | None, from_meta: bool = False) -> str | None:
    """A Python codec for a charset label, remapped as browsers do (WHATWG: latin-1 -> cp1252,
    gb2312 -> gbk, ...); None for an unknown label."""
    if not name:
        return None
    name = name.strip().strip("\"'").lower()
    try:
        codecs.lookup(name)
    except LookupError:
        return None
    enc = map_encoding_to_html5(name) or name
    if from_meta and enc.startswith("utf-16"):
        return "utf-8"  # a meta tag readable as ASCII cannot be UTF-16 (WHATWG)
    return codecs.lookup(enc).name


def _meta_charset(body: bytes) -> str | None:
    """Charset from <meta charset> / http-equiv in the first 2 KiB, if declared."""
    head = body[:2048].lower()
    i = head.find(b"charset=")
    if i < 0:
        return None
    j = i + len(b"charset=")
    while j < len(head) and head[j : j + 1] in b"\"' ":
        j += 1
    k = j
    while k < len(head) and (head[k : k + 1].isalnum() or head[k : k + 1] in b"-_:."):
        k += 1
    return _norm_codec(head[j:k].decode("ascii", "ignore"), from_meta=True)


def decode_html(body: bytes, http_charset: str | None) -> tuple[str, str, str]:
    """Decode an HTML payload; return (text, encoding, where the encoding came from)."""
    for source, enc in (("http", _norm_codec(http_charset)), ("meta", _meta_charset(body))):
        if enc:
            try:
                return body.decode(enc), enc, source
            except (UnicodeDecodeError, LookupError):
                pass  # a declared charset that does not fit the bytes: keep looking
    try:
        return body.decode("utf-8"), "utf-8", "utf-8"
    except UnicodeDecodeError:
        pass
    enc = _norm_codec(detect_encoding(body, from_html_meta=False)) or "utf-8"
    return bytes_to_str(body, enc, errors="replace"), enc, "detected"


def _is_html(content_type: str | None, body: bytes) -> bool:
    if content_type:
        return content_type.split(";")[0].strip().lower() in HTML_TYPES
    head = body[:1024].lstrip().lower()
    return head.startswith(_HTML_SNIFF) or b"<html" in head


def _dechunk(body: bytes) -> bytes:
    """Undo HTTP chunked transfer encoding; return the input if it is not chunked."""
    out, pos = bytearray(), 0
    while True:
        eol = body.find(b"\r\n", pos)
        if eol < 0:
            return body
        try:
            size = int(body[pos:eol].split(b";")[0].strip(), 16)
        except ValueError:
            return body
        if size == 0:
            return bytes(out)
        start = eol + 2
        if start + size > len(body):
            return body
        out += body[start : start + size]
        pos = start + size + 2


def _decompress(body: bytes, encoding: str, limit: int) -> bytes:
    """Undo gzip/deflate content encoding when the payload really is compressed.

    Common Crawl stores decoded payloads (and renames the header), so a
    Content-Encoding header often describes bytes that are no longer compressed.
    """
    enc = encoding.strip().lower()
    try:
        if enc in ("gzip", "x-gzip") and body[:2] == b"\x1f\x8b":
            d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif enc == "deflate" and body[:1] in (b"\x78",):
            d = zlib.decompressobj()
        else:
            return body
        out = d.decompress(body, limit + 1)
        return out
    except (zlib.error, gzip.BadGzipFile):
        return body


def iter_html_records(
    stream: BinaryIO, counts: Counter, max_record_bytes: int, quirks_mode: bool = True
) -> Iterator[HtmlRecord]:
    """Yield decoded HTTP-200 HTML responses; count every record seen and every skip.

    ``counts`` gets ``records`` and ``responses`` plus skip reasons
    ``skip:not_200``, ``skip:not_html``, ``skip:too_large``.
    """
    it = ArchiveIterator(
        stream,
        record_types=WarcRecordType.any_type,
        parse_http=True,
        quirks_mode=quirks_mode,
    )
    for rec in it:
        counts["records"] += 1
        if rec.record_type != WarcRecordType.response:
            continue
        counts["responses"] += 1
        if not rec.is_http:
            counts["skip:not_http"] += 1
            continue
        if rec.http_headers.status_code != 200:
            counts["skip:not_200"] += 1
            continue
        if rec.content_length > max_record_bytes + 65536:
            counts["skip:too_large"] += 1
            continue
        body = rec.reader.read(max_record_bytes + 1)
        if len(body) > max_record_bytes:
            counts["skip:too_large"] += 1
            continue
        hh = rec.http_headers
        if (hh.get("Transfer-Encoding") or "").lower() == "chunked":
            body = _dechunk(body)
        if hh.get("Content-Encoding"):
            body = _decompress(body, hh.get("Content-Encoding"), max_record_bytes)
            if len(body) > max_record_bytes:
                counts["skip:too_large"] += 1
                continue
        if not _is_html(rec.http_content_type, body):
            counts["skip:not_html"] += 1
            continue
        html, enc, source = decode_html(body, rec.http_charset)
        counts[f"charset:{source}"] += 1
        yield HtmlRecord(
            url=rec.headers.get("WARC-Target-URI", ""),
            record_id=rec.record_id or "",
            date=rec.headers.get("WARC-Date", ""),
            html=html,
            charset=enc,
            charset_source=source,
            payload_bytes=len(body),
        )
