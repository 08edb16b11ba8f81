"""WARC reading: HTTP 200 HTML response records from a stream, decoded to str; or, from a
Common Crawl WET file, the ``conversion`` records' plain text (``input.format: wet``).

fastwarc parses the container; this module picks the records worth extracting and
decodes their payload: HTTP charset, then the HTML meta charset, then strict UTF-8,
then detection (uchardet guesses iso8859-11 for some UTF-8 pages, so UTF-8 is tried
before it).

Broken input: a bad record is skipped with a counted reason (``skip:bad_http``,
``skip:too_large``, ``skip:bad_content_encoding``, ``skip:binary`` ...) and never fails the
WARC; a file that is not readable as WARC at all (no record, a corrupt gzip member, a
header past fastwarc's limit) raises :class:`WarcFormatError` naming the problem, so the
driver retries it and then lists it as failed. Payloads are read up to
``max_record_bytes`` only: a larger record is skipped without being read into memory.
"""

from __future__ import annotations

import codecs
import functools
import gzip
import re
import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import BinaryIO, TypeVar

from fastwarc.warc import ArchiveIterator, WarcRecord, WarcRecordType
from resiliparse.parse.encoding import bytes_to_str, detect_encoding, map_encoding_to_html5

from raycorpus import counts as ck
from raycorpus.ingest.storage import StorageError

HTML_TYPES = ("text/html", "application/xhtml+xml")
_HTML_SNIFF = (b"<!doctype html", b"<html", b"<head", b"<body", b"<title", b"<meta", b"<div", b"<p>")


class WarcFormatError(ValueError):
    """The file cannot be read as a WARC (the message says where and why)."""


@dataclass(slots=True)
class HtmlRecord:
    url: str
    record_id: str
    date: str
    html: str
    charset: str  # the encoding the payload was decoded with
    charset_source: str  # http | meta | utf-8 | detected
    payload_bytes: int


@dataclass(slots=True)
class TextRecord:
    """A WET ``conversion`` record: a page's plain text as Common Crawl extracted it."""

    url: str
    record_id: str  # the response record's id (WARC-Refers-To), so WET and WARC documents share ids
    date: str
    text: str
    payload_bytes: int


_R = TypeVar("_R", HtmlRecord, TextRecord)


@functools.lru_cache(maxsize=1024)  # a WARC's pages share a few labels; the lookups cost ~4 µs a page
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


def _declared(body: bytes, http_charset: str | None) -> Iterator[tuple[str, str | None]]:
    """The declared encodings in order, the meta one looked for only when asked (most pages decode with the HTTP
    one)."""
    yield "http", _norm_codec(http_charset)
    yield "meta", _meta_charset(body)


def decode_html(body: bytes, http_charset: str | None) -> tuple[str, str, str]:
    """Decode an HTML payload; return (text, encoding, where the encoding came from)."""
    for source, enc in _declared(body, http_charset):
        if enc and enc.startswith("utf-16") and b"\x00" not in body[:1024]:
            continue  # UTF-16 markup is full of NUL bytes: a label on 8-bit bytes would decode them to CJK noise
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


_NOT_TEXT = re.compile("[\x00-\x08\x0b\x0e-\x1f\ufffd]")  # C0 controls but tab, LF, FF, CR; U+FFFD
# every byte but the C0 controls _NOT_TEXT matches (UTF-8 encodes no other character with a byte below 0x80)
_TEXT_BYTES = bytes(range(0x100)).translate(None, bytes(range(0x09)) + b"\x0b" + bytes(range(0x0e, 0x20)))


def looks_binary(text: str, sample: int = 4096) -> bool:
    """True when the start of a decoded payload is mostly not text (random bytes, images or
    compressed data labelled text/html): over 5 % replacement or control characters."""
    head = text[:sample]
    # the characters _NOT_TEXT matches, counted from the UTF-8 bytes (~5x faster than the regex's findall)
    not_text = len(head.encode("utf-8", "surrogatepass").translate(None, _TEXT_BYTES))
    if not head.isascii():
        not_text += head.count("\ufffd")
    return not_text > 0.05 * len(head)


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


def _decompress(body: bytes, encoding: str, limit: int) -> bytes | None:
    """Undo gzip/deflate content encoding when the payload really is compressed; None if it is corrupt.

    Common Crawl stores decoded payloads (and renames the header), so a
    Content-Encoding header often describes bytes that are no longer compressed.
    A truncated stream gives what it holds; at most ``limit + 1`` bytes are inflated.
    """
    enc = encoding.strip().lower()
    try:
        if enc in ("gzip", "x-gzip") and body[:2] == b"\x1f\x8b":
            d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif enc == "deflate" and body[:1] in (b"\x78",):
            d = zlib.decompressobj()
        else:
            return body
        return d.decompress(body, limit + 1)
    except (zlib.error, gzip.BadGzipFile):
        return None


def iter_html_records(
    stream: BinaryIO, counts: Counter, max_record_bytes: int, quirks_mode: bool = True
) -> Iterator[HtmlRecord]:
    """Yield decoded HTTP-200 HTML responses; count every record seen and every skip.

    ``counts`` gets ``records`` and ``responses`` plus skip reasons ``skip:not_http``,
    ``skip:bad_http``, ``skip:not_200``, ``skip:too_large``, ``skip:bad_content_encoding``,
    ``skip:not_html`` and ``skip:binary``. Raises :class:`WarcFormatError` when the stream
    holds no WARC record or stops being readable (records already yielded stay valid, but
    the WARC as a whole must then be retried or listed as failed).
    """
    return _iter_records(stream, counts, WarcRecordType.response, quirks_mode,
                         lambda rec: _read_html(rec, counts, max_record_bytes, quirks_mode))


def iter_text_records(
    stream: BinaryIO, counts: Counter, max_record_bytes: int, quirks_mode: bool = True
) -> Iterator[TextRecord]:
    """Yield the text of a WET file's ``conversion`` records (Common Crawl's extracted plain text);
    count every record seen (``records``; ``responses`` counts the conversion records) and every
    skip (``skip:too_large``, ``skip:empty``, ``skip:binary``). Errors as :func:`iter_html_records`."""
    return _iter_records(stream, counts, WarcRecordType.conversion, quirks_mode,
                         lambda rec: _read_text(rec, counts, max_record_bytes))


def _iter_records(stream: BinaryIO, counts: Counter, wanted: WarcRecordType, quirks_mode: bool,
                  read: Callable[[WarcRecord], _R | None]) -> Iterator[_R]:
    """Every record of type ``wanted`` that ``read`` turns into a value (the others are counted by it)."""
    it = ArchiveIterator(
        stream,
        record_types=WarcRecordType.any_type,
        parse_http=False,  # per record, so one oversized HTTP header skips one record, not the WARC
        quirks_mode=quirks_mode,
    )
    records = 0
    try:
        for rec in it:
            records += 1
            counts[ck.RECORDS] += 1
            if rec.record_type != wanted:
                continue
            counts[ck.RESPONSES] += 1
            value = read(rec)
            if value is not None:
                yield value
    except StorageError:
        raise  # the storage layer's own error (not found, retries exhausted) already says what happened
    except OSError as e:  # fastwarc: corrupt gzip member, header past its limit, ...
        raise WarcFormatError(f"unreadable WARC after {records} records (byte {_position(stream)}): {e}") from e
    if records == 0:
        raise WarcFormatError(
            f"no WARC record in {_position(stream)} bytes: not a WARC file, or compressed with something "
            "other than gzip / lz4 / zstd"
        )


def _position(stream: BinaryIO) -> int | str:
    try:
        return stream.tell()
    except (OSError, ValueError):
        return "?"


def _read_html(rec: WarcRecord, counts: Counter, max_record_bytes: int, quirks_mode: bool) -> HtmlRecord | None:
    """One response record as an :class:`HtmlRecord`, or None with the skip reason counted."""
    if not rec.is_http:
        counts[ck.skip("not_http")] += 1
        return None
    try:
        rec.parse_http(quirks_mode=quirks_mode)
    except OSError:  # HTTP headers over fastwarc's limit or unparseable
        counts[ck.skip("bad_http")] += 1
        return None
    hh = rec.http_headers
    if hh is None or hh.status_code != 200:  # no status line at all counts here too
        counts[ck.skip("not_200")] += 1
        return None
    if rec.content_length > max_record_bytes + 65536:
        counts[ck.skip("too_large")] += 1  # not read: fastwarc skips the rest of the record as it streams on
        return None
    body = rec.reader.read(max_record_bytes + 1)
    if len(body) > max_record_bytes:
        counts[ck.skip("too_large")] += 1
        return None
    if (hh.get("Transfer-Encoding") or "").lower() == "chunked":
        body = _dechunk(body)
    if content_encoding := hh.get("Content-Encoding"):
        decoded = _decompress(body, content_encoding, max_record_bytes)
        if decoded is None:
            counts[ck.skip("bad_content_encoding")] += 1
            return None
        if len(decoded) > max_record_bytes:
            counts[ck.skip("too_large")] += 1
            return None
        body = decoded
    if not _is_html(rec.http_content_type, body):
        counts[ck.skip("not_html")] += 1
        return None
    html, enc, source = decode_html(body, rec.http_charset)
    if looks_binary(html):
        counts[ck.skip("binary")] += 1
        return None
    counts[ck.charset(source)] += 1
    return HtmlRecord(
        url=_target_uri(rec),
        record_id=rec.record_id or "",
        date=rec.headers.get("WARC-Date", ""),
        html=html,
        charset=enc,
        charset_source=source,
        payload_bytes=len(body),
    )


def _target_uri(rec: WarcRecord) -> str:
    return rec.headers.get("WARC-Target-URI", "").strip().removeprefix("<").removesuffix(">")


def _read_text(rec: WarcRecord, counts: Counter, max_record_bytes: int) -> TextRecord | None:
    """One conversion record as a :class:`TextRecord`, or None with the skip reason counted.
    Common Crawl writes WET text as UTF-8; bytes that are not are replaced (U+FFFD), and a payload
    that is then mostly not text is skipped as ``skip:binary``."""
    if rec.content_length > max_record_bytes:
        counts[ck.skip("too_large")] += 1
        return None
    text = rec.reader.read(max_record_bytes + 1).decode("utf-8", errors="replace")
    if looks_binary(text):
        counts[ck.skip("binary")] += 1
        return None
    if not text.strip():
        counts[ck.skip("empty")] += 1
        return None
    counts[ck.charset("wet")] += 1
    refers_to = rec.headers.get("WARC-Refers-To", "").strip()
    return TextRecord(url=_target_uri(rec), record_id=refers_to or rec.record_id or "",
                      date=rec.headers.get("WARC-Date", ""), text=text, payload_bytes=rec.content_length)
