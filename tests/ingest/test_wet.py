"""WET input: Common Crawl's conversion records, on the real CC-MAIN-2024-22 WARC/WET pair and on
WET files with broken records."""

from collections import Counter
from pathlib import Path

from raycorpus import counts as ck
from raycorpus.demo.warcwrite import WarcWriter
from raycorpus.ingest.warc import iter_html_records, iter_text_records
from tests.support.paths import SHARED_WARC, need_shared


def read_wet(path: Path, max_record_bytes: int = 8 << 20) -> tuple[list, Counter]:
    counts: Counter = Counter()
    with open(path, "rb") as f:
        return list(iter_text_records(f, counts, max_record_bytes)), counts


def test_the_real_wet_record_is_the_pages_text_and_names_the_warc_response():
    (text_rec,), counts = read_wet(need_shared(SHARED_WARC / "whirlwind/whirlwind.warc.wet.gz"))
    with open(SHARED_WARC / "whirlwind/whirlwind.warc.gz", "rb") as f:
        (html_rec,) = list(iter_html_records(f, Counter(), 8 << 20))
    assert text_rec.url == html_rec.url == "https://an.wikipedia.org/wiki/Escopete"
    assert text_rec.record_id == html_rec.record_id  # WARC-Refers-To: one id for the page in both files
    assert text_rec.text.startswith("Escopete - Biquipedia") and "<" not in text_rec.text[:200]
    assert counts[ck.RECORDS] == 2 and counts[ck.RESPONSES] == 1  # warcinfo + one conversion


def test_a_warc_read_as_wet_gives_no_document_and_says_why_in_its_counts():
    recs, counts = read_wet(need_shared(SHARED_WARC / "whirlwind/whirlwind.warc.gz"))
    assert recs == [] and counts[ck.RECORDS] == 4 and counts[ck.RESPONSES] == 0


def _wet(path: Path, blocks: list[bytes]) -> Path:
    with open(path, "wb") as f:
        w = WarcWriter(f)
        for i, block in enumerate(blocks):
            w.write_record("conversion", [("WARC-Target-URI", f"https://example.org/{i}"),
                                          ("WARC-Date", "2024-05-18T01:58:10Z"), ("Content-Type", "text/plain")],
                           block)
    return path


def test_empty_oversized_and_binary_conversions_are_skipped_with_their_reason(tmp_path):
    good = "Ein ganz normaler Absatz über Dämme und Flüsse.\n".encode() * 3
    one_bad_byte = b"Mostly text, with one byte \xff that is not UTF-8 in a line long enough to read."
    blocks = [b"  \n\n ", b"x" * 5000, bytes(range(256)) * 4, good, one_bad_byte]
    recs, counts = read_wet(_wet(tmp_path / "x.wet.gz", blocks), max_record_bytes=4096)
    assert counts[ck.skip("empty")] == 1 and counts[ck.skip("too_large")] == 1 and counts[ck.skip("binary")] == 1
    assert [r.url for r in recs] == ["https://example.org/3", "https://example.org/4"]
    assert recs[0].text == good.decode() and recs[0].record_id.startswith("<urn:uuid:")  # no Refers-To: its own id
    assert recs[1].text == one_bad_byte.decode("utf-8", "replace")  # replaced, never a failed WARC
