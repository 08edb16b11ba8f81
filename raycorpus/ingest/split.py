"""Cutting one gzip WARC into byte ranges at record boundaries, so several workers can share it.

A gzip WARC (Common Crawl's layout) is a series of gzip members, one per record. A range boundary
is the first member at or after a byte target that decompresses to a WARC record header
(``WARC/1.0``): found from the file's content alone, so every worker, every retry and every run
cuts the same WARC at the same offsets. Range ``k`` holds the records whose member starts in
``[start_k, start_{k+1})``; read one after the other, the ranges give exactly the records of the
whole file, in order. An uncompressed WARC, a file not in gzip members, or an input the storage cannot
read from an offset (an HTTP server without Range support) is not cut: :func:`plan_ranges` gives
it back whole.
"""

from __future__ import annotations

import contextlib
import io
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

from raycorpus.ingest.storage import Storage

MIN_RANGE_BYTES = 1 << 20  # a range smaller than this costs more in overhead than it gives back
SCAN_CHUNK_BYTES = 1 << 16  # read this much at a time while looking for a record's member
MAX_SCAN_BYTES = 16 << 20  # look this far past a target at most; no record member there: no cut at that target
_PROBE_BYTES = 4096  # compressed bytes handed to zlib to see a member's first decompressed bytes
_GZIP_MEMBER = b"\x1f\x8b\x08"  # gzip magic + deflate
_RECORD_HEAD = re.compile(rb"WARC/\d+\.\d+\r?\n")


@dataclass(frozen=True, slots=True)
class WarcPart:
    """Range ``index`` of a WARC cut into ranges: the records whose gzip member starts in ``[start, end)``."""

    index: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return self.end - self.start


def starts_record(data: bytes | memoryview, at: int) -> bool:
    """Whether a gzip member starts at ``data[at]`` and decompresses to a WARC record header."""
    if data[at : at + 3] != _GZIP_MEMBER:
        return False
    inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        head = inflate.decompress(bytes(data[at : at + _PROBE_BYTES]), 32)
    except zlib.error:
        return False
    return _RECORD_HEAD.match(head) is not None


def next_record_member(stream: BinaryIO, offset: int, size: int) -> int:
    """The offset of the first record member at or after ``offset`` (``stream`` is positioned there), or
    ``size`` when there is none within :data:`MAX_SCAN_BYTES`."""
    buf = b""
    base = offset  # file offset of buf[0]
    while True:
        more = stream.read(SCAN_CHUNK_BYTES)
        buf += more
        eof = not more or base + len(buf) >= size
        limit = len(buf) if eof else len(buf) - _PROBE_BYTES  # a candidate needs its probe bytes read
        at = buf.find(_GZIP_MEMBER, 0, max(0, limit) + 2)
        while 0 <= at < limit:
            if starts_record(buf, at):
                return base + at
            at = buf.find(_GZIP_MEMBER, at + 1, limit + 2)
        if eof or base + len(buf) - offset >= MAX_SCAN_BYTES:
            return size
        keep = max(0, limit)
        base, buf = base + keep, buf[keep:]


def plan_ranges(storage: Storage, url: str, parts: int, min_bytes: int = MIN_RANGE_BYTES) -> list[WarcPart]:
    """At most ``parts`` ranges of at least about ``min_bytes`` covering the whole file, cut at record members
    found from byte targets ``k * size / parts``; one range (the whole file) when it cannot be cut."""
    size = storage.size(url)
    parts = min(parts, size // max(1, min_bytes))
    if parts < 2:
        return [WarcPart(0, 0, size)]
    with storage.open_read(url) as f:
        if f.read(2) != _GZIP_MEMBER[:2]:
            return [WarcPart(0, 0, size)]  # not gzip: not cut
    starts = [0]
    for k in range(1, parts):
        target = k * size // parts
        if starts[-1] >= target:
            continue  # the previous cut is the first record member at or after this target too
        with storage.open_read(url, target) as f:
            cut = next_record_member(f, target, size)
        if cut >= size:
            break  # no record member after this target: nor after the later ones
        starts.append(cut)
    ends = [*starts[1:], size]
    return [WarcPart(i, a, b) for i, (a, b) in enumerate(zip(starts, ends, strict=True))]


class _Window(io.RawIOBase):
    """The bytes of ``stream`` up to ``end`` (an absolute offset); ``tell()`` is the absolute position."""

    def __init__(self, stream: io.BufferedReader, end: int):
        super().__init__()
        self._stream, self._end = stream, end

    def readable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._stream.tell()

    def readinto(self, buffer) -> int:
        left = self._end - self._stream.tell()
        view = memoryview(buffer).cast("B")[: max(0, left)]
        return self._stream.readinto(view) if len(view) else 0


@contextlib.contextmanager
def open_part(storage: Storage, url: str, part: WarcPart | None) -> Iterator[BinaryIO]:
    """A stream of the whole file (``part`` None) or of one range of it."""
    with storage.open_read(url, part.start if part else 0) as stream:
        yield stream if part is None else _Window(stream, part.end)
