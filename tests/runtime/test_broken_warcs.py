"""Broken input: a corpus of bad WARC files built here plus the real broken ones in ../shared.

Every file is either processed (exactly its readable records come out, bad records skipped with
a counted reason) or refused with a :class:`WarcFormatError` naming the problem; the Ray run over
all of them beside good WARCs finishes, lists the refused ones as failed after ``max_attempts``
and keeps the good WARCs' documents exactly as a run without the bad files does.
"""

from __future__ import annotations

import bz2
import gzip
import io
import json
import random
import shutil
import subprocess
import sys
import textwrap
import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from raycorpus import counts as ck
from raycorpus.demo.warcwrite import WarcWriter, gzip_member, record_id
from raycorpus.ingest.storage import Storage
from raycorpus.ingest.warc import HtmlRecord, WarcFormatError, iter_html_records
from raycorpus.output.docfiles import read_jsonl_zst
from raycorpus.output.ledger import Ledger
from raycorpus.process.extract import ExtractConfig, Extractor
from raycorpus.process.pipeline import WarcProcessor
from tests.support.corpus import make_config, make_crawl, make_tokenizer, run
from tests.support.paths import SHARED_WARC, need_shared

DATE = "2025-08-01T00:00:00Z"
HTML = [("Content-Type", "text/html; charset=utf-8")]
HUGE_RECORD_BYTES = 200 * 2**20


def page(i: int) -> bytes:
    """A small, real-looking English article (distinct per i, unlike any page of the sample crawl)."""
    paras = "".join(
        f"<p>Report {i}, part {j}: the harbour committee met on Tuesday to discuss the repairs of the old "
        f"pier, which the storm of {1900 + i} had damaged, and agreed to ask the town for {j + 3} new "
        "boats before the summer season begins.</p>"
        for j in range(6)
    )
    return f"<!doctype html><html><head><title>Harbour report {i}</title></head><body><article>{paras}" \
           f"</article></body></html>".encode()


def url(i: int) -> str:
    return f"http://broken.example/{i}"


def warc_bytes(responses: list[tuple[str, int, list, bytes]], gz: bool = True) -> bytes:
    """A well-formed WARC: warcinfo, then one response record per entry."""
    buf = io.BytesIO()
    w = WarcWriter(buf, gzip_records=gz)
    w.warcinfo({"software": "raycorpus tests"}, "broken.warc.gz", DATE)
    for u, status, headers, body in responses:
        w.response(u, DATE, status, headers, body)
    return buf.getvalue()


def three_pages(gz: bool = True) -> bytes:
    return warc_bytes([(url(i), 200, HTML, page(i)) for i in range(3)], gz)


def gzip_members(data: bytes) -> list[bytes]:
    out, pos = [], 0
    while pos < len(data):
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        d.decompress(data[pos:])
        end = len(data) - len(d.unused_data)
        out.append(data[pos:end])
        pos = end
    return out


def raw_record(headers: list[tuple[str, str]], block: bytes, content_length: str | None = None) -> bytes:
    """An uncompressed WARC record written by hand (so its headers can be wrong)."""
    length = str(len(block)) if content_length is None else content_length
    lines = ["WARC/1.1", *(f"{k}: {v}" for k, v in headers), f"Content-Length: {length}"]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("utf-8", "surrogateescape") + block + b"\r\n\r\n"


def response(u: str, block: bytes, record_type: str = "response",
             content_type: str = "application/http; msgtype=response") -> bytes:
    return raw_record([("WARC-Type", record_type), ("WARC-Record-ID", record_id(u + record_type)),
                       ("WARC-Date", DATE), ("WARC-Target-URI", u), ("Content-Type", content_type)], block)


def http(body: bytes, *headers: str, status: str = "HTTP/1.1 200 OK") -> bytes:
    head = "\r\n".join([status, "Content-Type: text/html", *headers]) + "\r\n\r\n"
    return head.encode("latin-1") + body


def around(*middle: bytes) -> bytes:
    """Good page 0, the given records, good page 2 (uncompressed)."""
    return response(url(0), http(page(0))) + b"".join(middle) + response(url(2), http(page(2)))


def lie_about_length(record: bytes, delta: int) -> bytes:
    """Change the WARC Content-Length of an uncompressed record by ``delta`` (the block stays)."""
    head, sep, rest = record.partition(b"Content-Length: ")
    num, _, tail = rest.partition(b"\r\n")
    return head + sep + str(int(num) + delta).encode() + b"\r\n" + tail


def with_lying_member(delta: int) -> bytes:
    """Gzip-per-record WARC whose second response claims ``delta`` more (or fewer) block bytes."""
    members = gzip_members(three_pages())
    members[2] = gzip_member(lie_about_length(gzip.decompress(members[2]), delta))
    return b"".join(members)


def chunked(body: bytes, pieces: int = 3) -> bytes:
    step = len(body) // pieces + 1
    chunks = [body[i:i + step] for i in range(0, len(body), step)]
    return b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in chunks) + b"0\r\n\r\n"


def nested(depth: int) -> bytes:
    return b"<html><body>" + b"<div>" * depth + page(7)[60:] + b"</div>" * depth + b"</body></html>"


GZ_PAGE = gzip.compress(page(1), mtime=0)


@dataclass(frozen=True)
class Case:
    """A bad file and what reading it must give: exactly ``urls`` (in order), or an error containing ``error``."""

    build: Callable[[], bytes]
    urls: tuple[str, ...] = ()
    error: str | None = None
    counts: dict = field(default_factory=dict)  # counters that must have these values
    drops: dict = field(default_factory=dict)  # WarcProcessor drop counters (extraction) that must have these values


NO_RECORD = "no WARC record"
GZIP_ERROR = "Gzip decompression error"
U = tuple(url(i) for i in range(3))

CASES: dict[str, Case] = {
    # --- not a WARC at all: refused with the reason
    "zero_bytes": Case(lambda: b"", error="no WARC record in 0 bytes"),
    "random_bytes": Case(lambda: random.Random(1).randbytes(8192), error=NO_RECORD),
    "random_after_gzip_magic": Case(lambda: b"\x1f\x8b\x08\x00" + random.Random(2).randbytes(8192),
                                    error=GZIP_ERROR),
    "plain_text": Case(lambda: b"this is not a WARC file\n" * 200, error=NO_RECORD),
    "bare_html": Case(lambda: page(1) * 3, error=NO_RECORD),
    "bzip2_compressed_warc": Case(lambda: bz2.compress(three_pages(gz=False)), error=NO_RECORD),
    "unknown_warc_version": Case(lambda: three_pages(gz=False).replace(b"WARC/1.1", b"WARC/9.0"), error=NO_RECORD),
    # --- a gzip member cut in half or damaged in the middle: the stream cannot go on
    "gzip_member_cut_in_half_mid_file": Case(
        lambda: b"".join((m[: len(m) // 2] if i == 2 else m) for i, m in enumerate(gzip_members(three_pages()))),
        error="unreadable WARC after 2 records"),
    "gzip_first_member_cut_in_half": Case(
        lambda: b"".join((m[: len(m) // 2] if i == 0 else m) for i, m in enumerate(gzip_members(three_pages()))),
        error="unreadable WARC after 0 records"),
    "gzip_member_flipped_byte": Case(
        lambda: b"".join((m[:60] + bytes([m[60] ^ 0xFF]) + m[61:] if i == 3 else m)
                         for i, m in enumerate(gzip_members(three_pages()))),
        error=GZIP_ERROR),
    "warc_header_over_limit": Case(
        lambda: around(raw_record([("WARC-Type", "response"), ("X-Padding", "p" * 100_000)], http(page(1)))),
        error="Maximum header length exceeded"),
    # --- truncated files and lying Content-Lengths: every readable record comes out
    "gzip_last_member_cut_in_half": Case(
        lambda: b"".join((m[: len(m) // 2] if i == 3 else m) for i, m in enumerate(gzip_members(three_pages()))),
        urls=U[:2]),
    "truncated_uncompressed_file": Case(lambda: three_pages(gz=False)[:-300], urls=U),
    "content_length_too_long": Case(lambda: around(lie_about_length(response(url(1), http(page(1))), 500)),
                                    urls=U[:2]),
    "content_length_too_short": Case(lambda: around(lie_about_length(response(url(1), http(page(1))), -500)),
                                     urls=U),
    "content_length_too_long_gzip": Case(lambda: with_lying_member(500), urls=U[:2]),
    "content_length_too_short_gzip": Case(lambda: with_lying_member(-500), urls=U),
    "content_length_a_terabyte": Case(lambda: with_lying_member(10**12), urls=U[:1],
                                      counts={"skip:too_large": 1}),
    "content_length_not_a_number": Case(
        lambda: around(response(url(1), http(page(1))).replace(b"Content-Length: ", b"Content-Length: x")),
        urls=(U[0], U[2])),
    "garbage_between_records": Case(lambda: around(b"garbage line\r\nmore garbage\r\n\r\n" * 20), urls=(U[0], U[2])),
    "trailing_garbage": Case(lambda: three_pages(gz=False) + random.Random(3).randbytes(3000), urls=U),
    "whole_file_one_gzip_member": Case(lambda: gzip.compress(three_pages(gz=False), mtime=0), urls=U),
    "warc_0_18": Case(lambda: three_pages(gz=False).replace(b"WARC/1.1", b"WARC/0.18"), urls=U),
    # --- bad HTTP: the record is skipped with its reason, the rest read
    "http_without_headers": Case(lambda: around(response(url(1), page(1))), urls=(U[0], U[2]),
                                 counts={"skip:not_200": 1}),
    "http_status_line_only": Case(lambda: around(response(url(1), b"HTTP/1.1 200 OK\r\n\r\n" + page(1))), urls=U),
    "http_status_not_a_number": Case(lambda: around(response(url(1), http(page(1), status="HTTP/1.1 abc OK"))),
                                     urls=(U[0], U[2]), counts={"skip:not_200": 1}),
    "http_header_over_limit": Case(lambda: around(response(url(1), http(page(1), "X-Padding: " + "p" * 200_000))),
                                   urls=(U[0], U[2]), counts={"skip:bad_http": 1}),
    # --- transfer and content encodings
    "chunked_payload": Case(lambda: around(response(url(1), http(chunked(page(1)), "Transfer-Encoding: chunked"))),
                            urls=U),
    "chunk_sizes_lie": Case(lambda: around(response(url(1), http(b"ffff\r\n" + page(1) + b"\r\n0\r\n\r\n",
                                                                 "Transfer-Encoding: chunked"))), urls=U),
    "gzip_payload": Case(lambda: around(response(url(1), http(GZ_PAGE, "Content-Encoding: gzip"))), urls=U),
    "deflate_payload": Case(lambda: around(response(url(1), http(zlib.compress(page(1)), "Content-Encoding: deflate"))),
                            urls=U),
    "chunked_gzip_payload": Case(lambda: around(response(url(1), http(chunked(GZ_PAGE), "Transfer-Encoding: chunked",
                                                                      "Content-Encoding: gzip"))), urls=U),
    "corrupt_gzip_payload": Case(lambda: around(response(url(1), http(GZ_PAGE[:20] + b"\xff" * 40 + GZ_PAGE[60:],
                                                                      "Content-Encoding: gzip"))),
                                 urls=(U[0], U[2]), counts={"skip:bad_content_encoding": 1}),
    "gzip_bomb_payload": Case(lambda: around(response(url(1), http(gzip.compress(b"<p>" + b"a" * (64 << 20), mtime=0),
                                                                   "Content-Encoding: gzip"))),
                              urls=(U[0], U[2]), counts={"skip:too_large": 1}),
    "brotli_payload_kept_encoded": Case(lambda: around(response(url(1), http(random.Random(4).randbytes(4000),
                                                                             "Content-Encoding: br"))),
                                        urls=(U[0], U[2]), counts={"skip:binary": 1}),
    "random_bytes_labelled_html": Case(lambda: around(response(url(1), http(random.Random(5).randbytes(4000)))),
                                       urls=(U[0], U[2]), counts={"skip:binary": 1}),
    # --- charsets
    "unknown_charset_label": Case(lambda: around(response(url(1), http(page(1)).replace(
        b"text/html", b"text/html; charset=x-no-such-charset"))), urls=U),
    "charset_label_lies": Case(lambda: around(response(url(1), http(page(1).replace(b"harbour", "hárbour".encode(
        "cp1252"))).replace(b"text/html", b"text/html; charset=utf-8"))), urls=U),
    "utf16_label_on_8bit_bytes": Case(lambda: around(response(url(1), http(page(1)).replace(
        b"text/html", b"text/html; charset=utf-16"))), urls=U),
    # --- pathological or odd documents: the record is read, extraction drops it with a reason
    "nested_10000_levels": Case(lambda: around(response(url(1), http(nested(10_000)))), urls=U,
                                drops={"drop:extract:too_deep": 1}),
    "nul_bytes_in_html": Case(lambda: around(response(url(1), http(page(1).replace(b"harbour", b"har\x00bour")))),
                              urls=U),
    "empty_payload": Case(lambda: around(response(url(1), http(b""))), urls=U, drops={"drop:extract:empty": 1}),
    # --- records without documents
    "revisits_only": Case(lambda: response(url(1), http(b""), record_type="revisit") * 3),
    "metadata_only": Case(lambda: response(url(1), b"fetchTimeMs: 12\r\n", "metadata", "application/warc-fields")),
    "warcinfo_only": Case(lambda: warc_bytes([])),
    "twenty_thousand_tiny_records": Case(lambda: response(url(1), b"k: v\r\n", "metadata",
                                                          "application/warc-fields") * 20_000,
                                         counts={"records": 20_000}),
    # --- odd URIs and ids are data: kept as written (angle brackets of WARC/1.0 examples removed)
    "angle_bracket_target_uri": Case(lambda: around(response(f"<{url(1)}>", http(page(1)))), urls=U),
    "odd_target_uris": Case(lambda: response("ht tp://a b/<x>\u00e9", http(page(1))) + response("", http(page(2))),
                            urls=("ht tp://a b/<x>\u00e9", "")),
}


def read_case(data: bytes) -> tuple[list[HtmlRecord], Counter]:
    counts: Counter = Counter()
    return list(iter_html_records(io.BufferedReader(io.BytesIO(data)), counts, 8 << 20)), counts


def test_corpus_has_at_least_30_generated_bad_files_each_way():
    assert len(CASES) >= 30
    assert sum(c.error is not None for c in CASES.values()) >= 10
    assert sum(c.error is None for c in CASES.values()) >= 20


def test_builders_are_deterministic():
    assert all(case.build() == case.build() for case in CASES.values())


@pytest.mark.parametrize("name", sorted(CASES))
def test_reading_gives_exactly_the_readable_records_or_a_clear_error(name: str):
    case = CASES[name]
    data = case.build()
    if case.error is not None:
        with pytest.raises(WarcFormatError, match=case.error):
            read_case(data)
        return
    recs, counts = read_case(data)
    counts = ck.to_json(counts)  # the ledger's spelling of the counters
    assert tuple(r.url for r in recs) == case.urls
    for key, n in case.counts.items():
        assert counts.get(key, 0) == n, (key, counts)
    assert all("\ufffd" not in r.html for r in recs)


@pytest.fixture(scope="module")
def processor(tmp_path_factory) -> WarcProcessor:
    out = tmp_path_factory.mktemp("proc")
    return WarcProcessor(make_config(str(out / "warc.paths"), str(out / "out"), str(out / "tok.json")),
                         with_filters=False)


def test_the_processor_keeps_or_drops_every_record_with_a_reason(processor, tmp_path):
    """Through the whole per-WARC chain: a processed file accounts for every HTML record (kept or a counted
    drop), a refused one raises WarcFormatError; nothing else escapes."""
    for name, case in CASES.items():
        path = tmp_path / f"{name}.warc"
        path.write_bytes(case.build())
        if case.error is not None:
            with pytest.raises(WarcFormatError, match=case.error):
                processor.process(0, str(path))
            continue
        result = processor.process(0, str(path))
        c = ck.to_json(result.counts)  # the ledger's spelling of the counters
        drops = sum(v for k, v in c.items() if k.startswith("drop:"))
        assert c.get("html", 0) == len(case.urls) == c.get("kept", 0) + drops, name
        for key, n in case.drops.items():
            assert c.get(key, 0) == n, (name, key, c)
        assert [d.url for d in result.docs] == [u for u in case.urls if u != url(1) or not case.drops], name


def test_charset_edge_cases_decode_to_the_real_text():
    recs, _ = read_case(CASES["charset_label_lies"].build())
    assert "hárbour" in recs[1].html and recs[1].charset_source == "detected"
    recs, _ = read_case(CASES["utf16_label_on_8bit_bytes"].build())
    assert "Harbour report 1" in recs[1].html and recs[1].charset == "utf-8"
    recs, _ = read_case(CASES["unknown_charset_label"].build())
    assert recs[1].charset == "utf-8"
    recs, _ = read_case(CASES["chunked_gzip_payload"].build())
    assert recs[1].html == page(1).decode()
    recs, _ = read_case(CASES["angle_bracket_target_uri"].build())
    assert recs[1].url == url(1)


# ---------------------------------------------------------------- the real broken files in ../shared

SHARED_CASES: dict[str, tuple[int, str | None]] = {  # path -> (records yielded, error substring)
    "warcio/test/data/example-bad-non-chunked.warc.gz": (1, None),  # one gzip member for the whole file
    "warcio/test/data/example-wrong-chunks.warc.gz": (1, None),  # bad chunked encoding: the payload as is
    "warcio/test/data/example-trunc.warc": (1, None),  # truncated record: its readable part
    "warcio/test/data/example-wget-bad-target-uri.warc.gz": (1, None),  # <uri> in angle brackets
    "warcio/test/data/example-space-in-target-uri.warc.gz": (0, None),  # a resource record, no response
    "warcio/test/data/example-bad.warc.gz.bad": (1, None),
    "warcio/test/data/bad.arc": (0, NO_RECORD),  # ARC, not WARC
    "resiliparse/tests/data/clipped.warc.gz": (1, None),  # clipped record
    "resiliparse/tests/data/clueweb-quirk.warc.gz": (29, None),  # WARC/0.18, EUC-JP, malformed headers
}


@pytest.mark.parametrize("rel", sorted(SHARED_CASES))
def test_real_broken_warcs(rel: str):
    n, error = SHARED_CASES[rel]
    data = need_shared(SHARED_WARC / rel).read_bytes()
    if error is not None:
        with pytest.raises(WarcFormatError, match=error):
            read_case(data)
        return
    recs, _ = read_case(data)
    assert len(recs) == n
    assert all(r.url.startswith("http") and not r.url.startswith("<") and r.html for r in recs)


# ---------------------------------------------------------------- a 200 MB record, streamed past

@pytest.fixture(scope="session")
def huge_record_warc(tmp_path_factory) -> Iterator[Path]:
    """An uncompressed WARC: a good page, one 200 MB HTML response, a good page (written in 1 MiB pieces)."""
    path = tmp_path_factory.mktemp("huge") / "huge-record.warc"
    head = f"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {HUGE_RECORD_BYTES}\r\n\r\n".encode()
    with open(path, "wb") as f:
        f.write(response(url(0), http(page(0))))
        f.write(raw_record([("WARC-Type", "response"), ("WARC-Target-URI", url(1)),
                            ("Content-Type", "application/http; msgtype=response")], b"",
                           content_length=str(len(head) + HUGE_RECORD_BYTES))[:-4] + head)
        piece = (b"<p>" + b"x" * 1016 + b"</p>\n") * 1024  # 1 MiB
        for _ in range(HUGE_RECORD_BYTES // len(piece)):
            f.write(piece)
        f.write(b"\r\n\r\n")
        f.write(response(url(2), http(page(2))))
    yield path
    path.unlink()


def test_a_200_mb_record_is_skipped_without_being_read_into_memory(huge_record_warc: Path):
    """In a fresh process: the big record is counted as too large, the next one is read, and peak RSS grows by
    a small fraction of the record (fastwarc streams past it)."""
    script = textwrap.dedent(f"""
        import json, resource
        from collections import Counter
        from raycorpus import counts as ck
        from raycorpus.ingest.warc import iter_html_records
        from raycorpus.ingest.storage import Storage
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        counts = Counter()
        with Storage().open_read({str(huge_record_warc)!r}) as f:
            urls = [r.url for r in iter_html_records(f, counts, 8 << 20)]
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(json.dumps({{"urls": urls, "counts": ck.to_json(counts), "growth_kib": after - before}}))
    """)
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=True)
    got = json.loads(r.stdout)
    assert got["urls"] == [url(0), url(2)]
    assert got["counts"]["skip:too_large"] == 1 and got["counts"]["records"] == 3
    assert got["growth_kib"] < 48 * 1024, got  # well under the 200 MB record (and the 8 MiB cap + buffers)


# ---------------------------------------------------------------- the per-document extraction timeout

def pathological_page() -> bytes:
    """4 MB of blocks nested 240 deep: under every default guard (max_depth 256, 8 MiB), yet resiliparse's
    main-content pass spends seconds on it (5.7 s on the development machine)."""
    block = b"<div>" * 240 + b"<p>A short paragraph of text, nested deep.</p>" + b"</div>" * 240
    return b"<html><body>" + block * 1500 + b"</body></html>"


def record(html: bytes) -> HtmlRecord:
    return HtmlRecord(url(1), "<urn:uuid:1>", DATE, html.decode(), "utf-8", "utf-8", len(html))


TIGHT_TIMEOUT = 0.2  # 25 times less than the pathological page costs, 100 times more than a normal one


def test_a_pathological_page_is_dropped_by_the_extraction_timeout():
    extract = Extractor(ExtractConfig(timeout_seconds=TIGHT_TIMEOUT))
    assert extract(record(pathological_page())) == (None, "timeout")
    text, reason = extract(record(page(1)))
    assert reason is None and "Report 1, part 0" in text  # the timer was cancelled: the next page is unaffected


def test_the_timeout_works_inside_the_ray_warc_worker(ray_address, tmp_path):
    """The WarcWorker actor runs its calls in its main thread, where the SIGALRM timer can be used: the page
    is dropped as extract:timeout and the WARC's other pages are still processed."""
    import ray

    from raycorpus.runtime.actors import WarcWorker

    path = tmp_path / "pathological.warc"
    path.write_bytes(around(response(url(1), http(pathological_page()))))
    cfg = make_config(str(tmp_path / "warc.paths"), str(tmp_path / "out"), str(tmp_path / "tok.json"),
                      extract={"timeout_seconds": TIGHT_TIMEOUT})
    worker = WarcWorker.options(num_cpus=1).remote(cfg)
    try:
        _, summary, *_ = ray.get(worker.process.remote(0, str(path)), timeout=300)
    finally:
        ray.kill(worker)
    assert summary.counts[ck.HTML] == 3 and summary.counts[ck.drop("extract", "timeout")] == 1, summary.counts


# ---------------------------------------------------------------- end to end on the real Ray pipeline

@pytest.fixture(scope="module")
def mixed_input(tmp_path_factory, huge_record_warc):
    """Three good sample WARCs, every bad file (generated, the 200 MB one, the real broken ones) between them."""
    root = tmp_path_factory.mktemp("broken-e2e")
    crawl = make_crawl(root / "good", n_warcs=3, pages=30, seed=7)
    tok = make_tokenizer(crawl, root / "tokenizer.json")
    bad_dir = root / "bad"
    bad_dir.mkdir()
    bad: list[Path] = []
    for name, case in CASES.items():
        bad.append(bad_dir / f"{name}.warc")
        bad[-1].write_bytes(case.build())
    bad.append(huge_record_warc)
    real = [SHARED_WARC / rel for rel in sorted(SHARED_CASES) if (SHARED_WARC / rel).exists()]
    for p in real:
        bad.append(bad_dir / f"shared-{p.name}")
        shutil.copyfile(p, bad[-1])
    good = [str(p) for p in crawl.warc_paths]
    lines = [good[0], *map(str, bad[: len(bad) // 2]), good[1], *map(str, bad[len(bad) // 2:]), good[2]]
    mixed = root / "mixed.paths"
    mixed.write_text("\n".join(lines) + "\n")
    only_good = root / "good.paths"
    only_good.write_text("\n".join(good) + "\n")
    return {"root": root, "tok": tok, "mixed": mixed, "good": only_good, "bad": bad, "good_warcs": good}


def documents_by_warc(out: Path) -> dict[str, list[tuple]]:
    st = Storage()
    by: dict[str, list[tuple]] = {}
    for u in st.list(str(out / "documents")):
        for row in read_jsonl_zst(st, u):
            by.setdefault(row["warc"], []).append((row["text"], row["url"], row["record_id"]))
    return by


def expected_error(path: Path) -> str | None:
    if path.name.startswith("shared-"):
        rel = next(r for r in SHARED_CASES if Path(r).name == path.name.removeprefix("shared-"))
        return SHARED_CASES[rel][1]
    case = CASES.get(path.stem)
    return case.error if case else None


def test_a_run_over_every_bad_file_finishes_and_keeps_the_good_documents(mixed_input, ray_address):
    inp = mixed_input
    root = inp["root"]
    settings = dict(output={"documents": True, "shard_size_tokens": 5000},
                    warc={"max_attempts": 2, "retry_backoff_seconds": 0.05}, ray={"workers": 2})
    ref = run(make_config(str(inp["good"]), str(root / "ref"), inp["tok"], **settings))
    s = run(make_config(str(inp["mixed"]), str(root / "out"), inp["tok"], **settings))
    n_bad = len(inp["bad"])
    refused = {str(p): expected_error(p) for p in inp["bad"] if expected_error(p) is not None}
    assert s["complete"] and s["warcs"]["total"] == n_bad + 3
    assert s["warcs"]["failed"] == len(refused) and s["warcs"]["committed"] == n_bad + 3 - len(refused)
    failed = {f["warc"]: f for f in s["failed"]}
    assert set(failed) == set(refused)
    for warc, error in refused.items():
        assert failed[warc]["attempts"] == 2 and "WarcFormatError" in failed[warc]["error"], failed[warc]
        assert error in failed[warc]["error"], failed[warc]
    # every processed bad file: each readable record read, each HTML record kept or dropped with a reason
    entries = {e["warc"]: e for e in Ledger(Storage(), str(root / "out")).iter_entries()}
    for p in inp["bad"]:
        case = CASES.get(p.stem)
        if case is None or case.error is not None:
            continue
        counts = entries[str(p)]["counts"]
        assert counts.get("html", 0) == len(case.urls), (p.name, counts)
        assert counts.get("kept", 0) + sum(v for k, v in counts.items() if k.startswith("drop:")) \
               == len(case.urls), (p.name, counts)
    assert entries[str(mixed_input["bad"][len(CASES)])]["counts"]["skip:too_large"] == 1  # the 200 MB record
    # the good WARCs' documents are exactly those of a run without the bad files
    docs, ref_docs = documents_by_warc(root / "out"), documents_by_warc(root / "ref")
    assert ref["warcs"]["committed"] == 3 and ref_docs
    for warc in inp["good_warcs"]:
        assert docs[warc] == ref_docs[warc], warc
    # bounded memory: the workers that read every bad file (the 200 MB record, the gzip bomb) peak no higher than
    # the 200 MB record would take by itself above the workers of the good-only run
    rss, ref_rss = s["this_run"]["peak_rss_mb"], ref["this_run"]["peak_rss_mb"]
    assert rss["workers"] - ref_rss["workers"] < 100, (rss, ref_rss)
    r = subprocess.run([sys.executable, "-m", "raycorpus.cli", "verify", str(root / "out")], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0 and "FAIL" not in r.stdout, r.stdout + r.stderr
