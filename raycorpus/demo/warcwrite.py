"""Minimal, deterministic WARC/1.1 writer producing Common-Crawl-shaped files.

Stdlib only. Every record is written as its own gzip member (like ``*.warc.gz``
files from Common Crawl) or uncompressed. Output bytes are a pure function of the
inputs: no wall-clock time, no randomness (gzip mtime is 0, OS byte is fixed,
compression level is fixed), and record ids are derived from seeds or content.
"""

from __future__ import annotations

import base64
import hashlib
import struct
import uuid
import zlib
from collections.abc import Iterable
from http import HTTPStatus
from typing import BinaryIO

__all__ = [
    "REVISIT_PROFILE_IDENTICAL",
    "WARC_VERSION",
    "WarcWriter",
    "crawler_rewrite_headers",
    "gzip_member",
    "record_id",
    "sha1_digest",
    "sniff_payload_type",
]

WARC_VERSION = "WARC/1.1"
REVISIT_PROFILE_IDENTICAL = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
_ID_NAMESPACE = uuid.UUID("6f1b7c36-2a56-5c3e-9d6e-7263636f7270")  # fixed namespace for raycorpus ids
_GZIP_LEVEL = 6

Headers = dict[str, str] | list[tuple[str, str]] | Iterable[tuple[str, str]]


def record_id(seed: str) -> str:
    """Deterministic ``<urn:uuid:...>`` record id derived (uuid5) from ``seed``."""
    return f"<urn:uuid:{uuid.uuid5(_ID_NAMESPACE, seed)}>"


def sha1_digest(data: bytes) -> str:
    """Common Crawl style digest: ``sha1:`` + base32 of the SHA-1 of ``data``."""
    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode("ascii")


def gzip_member(data: bytes, level: int = _GZIP_LEVEL) -> bytes:
    """One self-contained gzip member with a fixed header (mtime 0, OS unknown)."""
    comp = zlib.compressobj(level, zlib.DEFLATED, -zlib.MAX_WBITS)
    body = comp.compress(data) + comp.flush()
    xfl = b"\x02" if level == 9 else (b"\x04" if level == 1 else b"\x00")
    header = b"\x1f\x8b\x08\x00" + b"\x00\x00\x00\x00" + xfl + b"\xff"
    trailer = struct.pack("<II", zlib.crc32(data) & 0xFFFFFFFF, len(data) & 0xFFFFFFFF)
    return header + body + trailer


def _items(headers: Headers | None) -> list[tuple[str, str]]:
    if headers is None:
        return []
    if isinstance(headers, dict):
        return list(headers.items())
    return [(str(k), str(v)) for k, v in headers]


def _check_value(name: str, value: str) -> None:
    if "\r" in value or "\n" in value or "\r" in name or "\n" in name or ":" in name:
        raise ValueError(f"invalid header {name!r}: {value!r}")


def crawler_rewrite_headers(http_headers: Headers, payload_length: int) -> list[tuple[str, str]]:
    """Apply CC's convention for payloads stored decoded.

    ``Content-Encoding``, ``Transfer-Encoding`` and ``Content-Length`` are renamed
    to ``X-Crawler-*``; when any of them was present a ``Content-Length`` with the
    stored (decoded) payload length is appended.
    """
    items = _items(http_headers)
    if not any(k.lower() in ("content-encoding", "transfer-encoding") for k, _ in items):
        return items
    renamed = ("content-encoding", "transfer-encoding", "content-length")
    out = [(f"X-Crawler-{k}", v) if k.lower() in renamed else (k, v) for k, v in items]
    out.append(("Content-Length", str(payload_length)))
    return out


def sniff_payload_type(body: bytes, declared: str | None = None) -> str | None:
    """Cheap content sniffing standing in for CC's Tika-based identified type."""
    head = body[:512].lstrip().lower()
    if not body:
        return None
    if head.startswith(b"%pdf-"):
        return "application/pdf"
    if body.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if body.startswith((b"\xff\xd8\xff",)):
        return "image/jpeg"
    if body.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if head.startswith((b"<!doctype html", b"<html")) or b"<html" in head:
        return "application/xhtml+xml" if b"xhtml" in head[:200] else "text/html"
    if head.startswith((b"{", b"[")):
        return "application/json"
    if declared:
        return declared.split(";", 1)[0].strip().lower()
    return "text/plain"


class WarcWriter:
    """Write WARC/1.1 records to a binary file object (one gzip member per record)."""

    def __init__(self, fileobj: BinaryIO, gzip_records: bool = True) -> None:
        self.fileobj = fileobj
        self.gzip_records = gzip_records
        self.warcinfo_id: str | None = None
        self.records_written = 0
        self.bytes_written = 0

    # ------------------------------------------------------------------ core
    def write_record(self, record_type: str, headers: Headers, block: bytes) -> str:
        """Write one record and return its ``WARC-Record-ID``.

        ``headers`` may carry ``WARC-Record-ID`` (used as is); otherwise an id is
        derived from the record's type, headers, block digest and its position in
        this writer. ``Content-Length`` and ``WARC-Block-Digest`` are computed and
        any caller-supplied values for them are ignored.
        """
        items = _items(headers)
        rid: str | None = None
        date: str | None = None
        rest: list[tuple[str, str]] = []
        for k, v in items:
            _check_value(k, v)
            low = k.lower()
            if low == "warc-record-id":
                rid = v
            elif low == "warc-date":
                date = v
            elif low in ("content-length", "warc-block-digest", "warc-type"):
                continue
            else:
                rest.append((k, v))
        block_digest = sha1_digest(block)
        if rid is None:
            seed = "\n".join(
                [record_type, str(self.records_written), block_digest] + [f"{k}: {v}" for k, v in items]
            )
            rid = record_id(seed)
        lines = [WARC_VERSION, f"WARC-Type: {record_type}"]
        if date is not None:
            lines.append(f"WARC-Date: {date}")
        lines.append(f"WARC-Record-ID: {rid}")
        lines.append(f"Content-Length: {len(block)}")
        lines.extend(f"{k}: {v}" for k, v in rest)
        lines.append(f"WARC-Block-Digest: {block_digest}")
        data = ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8") + block + b"\r\n\r\n"
        if self.gzip_records:
            data = gzip_member(data)
        self.fileobj.write(data)
        self.records_written += 1
        self.bytes_written += len(data)
        return rid

    def _linked(self, headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
        if self.warcinfo_id is not None:
            headers.append(("WARC-Warcinfo-ID", self.warcinfo_id))
        return headers

    # ------------------------------------------------------------ record kinds
    def warcinfo(self, fields: dict[str, str], filename: str, date: str, record_id: str | None = None) -> str:
        """Write the ``warcinfo`` record (application/warc-fields); later records link to it."""
        block = "".join(f"{k}: {v}\r\n" for k, v in fields.items()).encode("utf-8")
        headers: list[tuple[str, str]] = [("WARC-Date", date), ("WARC-Filename", filename)]
        if record_id is not None:
            headers.append(("WARC-Record-ID", record_id))
        headers.append(("Content-Type", "application/warc-fields"))
        self.warcinfo_id = self.write_record("warcinfo", headers, block)
        return self.warcinfo_id

    def request(
        self,
        url: str,
        date: str,
        record_id: str | None = None,
        http_headers: Headers | None = None,
        method: str = "GET",
        extra_headers: Headers | None = None,
    ) -> str:
        """Write a CC-like ``request`` record (``application/http;msgtype=request``)."""
        path, host = _split_url(url)
        if http_headers is None:
            http_headers = [
                ("User-Agent", "CCBot/2.0 (https://commoncrawl.org/faq/)"),
                ("Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"),
                ("Accept-Language", "en-US,en;q=0.5"),
                ("Accept-Encoding", "br,gzip"),
                ("Host", host),
                ("Connection", "Keep-Alive"),
            ]
        block = _http_block(f"{method} {path} HTTP/1.1", _items(http_headers), b"")
        headers: list[tuple[str, str]] = [("WARC-Date", date)]
        if record_id is not None:
            headers.append(("WARC-Record-ID", record_id))
        headers.append(("Content-Type", "application/http; msgtype=request"))
        self._linked(headers)
        headers.extend(_items(extra_headers))
        headers.append(("WARC-Target-URI", url))
        return self.write_record("request", headers, block)

    def response(
        self,
        url: str,
        date: str,
        status: int,
        http_headers: Headers,
        body: bytes,
        record_id: str | None = None,
        extra_headers: Headers | None = None,
        identified_type: str | None = None,
        reason: str | None = None,
    ) -> str:
        """Write a ``response`` record whose block is the HTTP status line, headers and body.

        Adds ``WARC-Target-URI``, ``WARC-Payload-Digest`` (SHA-1 of ``body``) and
        ``WARC-Identified-Payload-Type`` (sniffed unless given; omitted for empty bodies).
        ``http_headers`` are written verbatim (see :func:`crawler_rewrite_headers`).
        """
        hdrs = _items(http_headers)
        block = _http_block(_status_line(status, reason), hdrs, body)
        headers: list[tuple[str, str]] = [("WARC-Date", date)]
        if record_id is not None:
            headers.append(("WARC-Record-ID", record_id))
        headers.append(("Content-Type", "application/http; msgtype=response"))
        self._linked(headers)
        headers.extend(_items(extra_headers))
        headers.append(("WARC-Target-URI", url))
        headers.append(("WARC-Payload-Digest", sha1_digest(body)))
        if identified_type is None:
            declared = next((v for k, v in hdrs if k.lower() == "content-type"), None)
            identified_type = sniff_payload_type(body, declared)
        if identified_type:
            headers.append(("WARC-Identified-Payload-Type", identified_type))
        return self.write_record("response", headers, block)

    def metadata(
        self,
        url: str,
        date: str,
        refers_to: str,
        fields: dict[str, str] | list[tuple[str, str]],
        record_id: str | None = None,
        link_header: str = "WARC-Concurrent-To",
    ) -> str:
        """Write a CC-like ``metadata`` record (application/warc-fields).

        CC links metadata to its response via ``WARC-Concurrent-To``; pass
        ``link_header="WARC-Refers-To"`` for the other common convention.
        """
        block = "".join(f"{k}: {v}\r\n" for k, v in _items(fields)).encode("utf-8")
        headers: list[tuple[str, str]] = [("WARC-Date", date)]
        if record_id is not None:
            headers.append(("WARC-Record-ID", record_id))
        headers.append(("Content-Type", "application/warc-fields"))
        self._linked(headers)
        headers.append((link_header, refers_to))
        headers.append(("WARC-Target-URI", url))
        return self.write_record("metadata", headers, block)

    def revisit(
        self,
        url: str,
        date: str,
        refers_to: str,
        refers_to_uri: str,
        refers_to_date: str,
        payload_digest: str,
        status: int,
        http_headers: Headers,
        record_id: str | None = None,
        extra_headers: Headers | None = None,
    ) -> str:
        """Write a ``revisit`` record with the identical-payload-digest profile (headers only)."""
        block = _http_block(_status_line(status, None), _items(http_headers), b"")
        headers: list[tuple[str, str]] = [("WARC-Date", date)]
        if record_id is not None:
            headers.append(("WARC-Record-ID", record_id))
        headers.append(("Content-Type", "application/http; msgtype=response"))
        self._linked(headers)
        headers.extend(_items(extra_headers))
        headers += [
            ("WARC-Target-URI", url),
            ("WARC-Profile", REVISIT_PROFILE_IDENTICAL),
            ("WARC-Refers-To", refers_to),
            ("WARC-Refers-To-Target-URI", refers_to_uri),
            ("WARC-Refers-To-Date", refers_to_date),
            ("WARC-Payload-Digest", payload_digest),
        ]
        return self.write_record("revisit", headers, block)


def _status_line(status: int, reason: str | None) -> str:
    if reason is None:
        try:
            reason = HTTPStatus(status).phrase
        except ValueError:
            reason = ""
    return f"HTTP/1.1 {status} {reason}".rstrip()


def _http_block(first_line: str, headers: list[tuple[str, str]], body: bytes) -> bytes:
    lines = [first_line]
    for k, v in headers:
        _check_value(k, v)
        lines.append(f"{k}: {v}")
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1", errors="strict")
    return head + body


def _split_url(url: str) -> tuple[str, str]:
    """Return (path-with-query, host) for an absolute http(s) URL."""
    rest = url.split("://", 1)[1] if "://" in url else url
    host, sep, path = rest.partition("/")
    path = "/" + path if sep else "/"
    path = path.split("#", 1)[0]
    return path, host
