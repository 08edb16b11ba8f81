"""Cutting a gzip WARC into record ranges (run.split_warcs): cuts at record members only, found from the
content, and the ranges read one after the other give exactly the whole file's records."""

from __future__ import annotations

import functools
import gzip
import http.server
import io
import itertools
import threading

import pytest
from fastwarc.warc import ArchiveIterator

from raycorpus.ingest.split import WarcPart, next_record_member, open_part, plan_ranges, starts_record
from raycorpus.ingest.storage import Storage, StorageError
from tests.support.servers import LocalHTTPServer


def _record_ids(storage: Storage, url: str, part: WarcPart | None) -> list[str]:
    with open_part(storage, url, part) as f:
        return [rec.record_id for rec in ArchiveIterator(f)]


@pytest.mark.parametrize("parts", [2, 3, 8])
def test_ranges_of_a_real_warc_hold_its_records_once_in_order(real_warc, parts):
    storage, url = Storage(), str(real_warc)
    ranges = plan_ranges(storage, url, parts, min_bytes=1)
    size = real_warc.stat().st_size
    assert len(ranges) == parts and [r.index for r in ranges] == list(range(parts))
    assert ranges[0].start == 0 and ranges[-1].end == size
    assert all(a.end == b.start and a.size > 0 for a, b in itertools.pairwise(ranges))
    data = real_warc.read_bytes()
    assert all(starts_record(data, r.start) for r in ranges)
    whole = _record_ids(storage, url, None)
    assert [i for r in ranges for i in _record_ids(storage, url, r)] == whole and len(whole) == 395
    assert plan_ranges(storage, url, parts, min_bytes=1) == ranges  # from the content: the same cuts every time


def test_a_cut_is_the_first_record_member_at_or_after_its_target(real_warc):
    data = real_warc.read_bytes()
    target = len(data) // 3
    at = data.find(b"\x1f\x8b\x08", target)
    while not starts_record(data, at):
        at = data.find(b"\x1f\x8b\x08", at + 1)
    with open(real_warc, "rb") as f:
        f.seek(target)
        assert next_record_member(f, target, len(data)) == at > target


def test_what_is_not_cut(real_warc, tmp_path):
    storage = Storage()
    plain = tmp_path / "plain.warc"  # uncompressed
    plain.write_bytes(gzip.decompress(real_warc.read_bytes()))
    one_member = tmp_path / "one-member.warc.gz"  # gzip of the whole file: no record member after the first
    one_member.write_bytes(gzip.compress(plain.read_bytes()))
    for path in (plain, one_member):
        assert plan_ranges(storage, str(path), 4, min_bytes=1) == [WarcPart(0, 0, path.stat().st_size)], path.name
    small = real_warc.stat().st_size
    assert plan_ranges(storage, str(real_warc), 4, min_bytes=small) == [WarcPart(0, 0, small)]  # under 2 ranges' worth


def test_gzip_magic_that_is_not_a_record_member_is_not_a_cut():
    record = gzip.compress(b"WARC/1.0\r\nWARC-Type: warcinfo\r\n\r\n")
    other = gzip.compress(b"not a WARC record header")
    garbage = b"\x1f\x8b\x08" + bytes(range(200))
    data = garbage + other + record
    assert not starts_record(data, 0) and not starts_record(data, len(garbage))
    assert starts_record(data, len(garbage) + len(other))
    assert next_record_member(io.BytesIO(data), 0, len(data)) == len(garbage) + len(other)
    assert next_record_member(io.BytesIO(garbage + other), 0, len(garbage + other)) == len(garbage + other)


class _NoRangeHandler(http.server.SimpleHTTPRequestHandler):
    """Python's file server: it ignores Range and sends the whole file (200)."""

    def log_message(self, *args) -> None:
        pass


@pytest.mark.slow  # starts HTTP servers on loopback
def test_http_input_is_cut_only_where_the_server_honours_range(real_warc):
    storage = Storage()
    local = plan_ranges(storage, str(real_warc), 4, min_bytes=1)
    with LocalHTTPServer(real_warc.parent) as www:  # Range support
        url = www.url + real_warc.name
        assert plan_ranges(storage, url, 4, min_bytes=1) == local
        assert [i for r in local for i in _record_ids(storage, url, r)] == _record_ids(storage, str(real_warc), None)
    handler = functools.partial(_NoRangeHandler, directory=str(real_warc.parent))
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            url = f"http://127.0.0.1:{server.server_address[1]}/{real_warc.name}"
            with pytest.raises(StorageError, match="does not honour Range"):
                plan_ranges(storage, url, 4, min_bytes=1)  # the driver then reads the WARC whole
        finally:
            server.shutdown()
