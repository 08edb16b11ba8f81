"""A WET file made from a WARC: each HTML page's text from the shipped extractor, written as a
``conversion`` record the way Common Crawl writes its WET files (WARC-Target-URI, WARC-Date, and
WARC-Refers-To naming the response record). Used by the tests and ``raycorpus bench`` to compare
``input.format: wet`` with ``warc`` on the same pages: the text is the same, so the corpora are."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from raycorpus.demo.warcwrite import WarcWriter
from raycorpus.ingest.warc import iter_html_records
from raycorpus.process.extract import ExtractConfig, Extractor

MAX_RECORD_BYTES = 8 << 20


def write_wet_from_warc(warc: Path, wet: Path, cfg: ExtractConfig | None = None) -> int:
    """Write ``wet`` with one conversion record per HTML page of ``warc`` that the extractor keeps;
    return how many."""
    extractor = Extractor(cfg or ExtractConfig())
    written = 0
    with open(warc, "rb") as src, open(wet, "wb") as dst:
        writer = WarcWriter(dst)
        writer.warcinfo({"software": "raycorpus", "description": f"text of {warc.name}"}, wet.name,
                        "2026-01-01T00:00:00Z")
        for rec in iter_html_records(src, Counter(), MAX_RECORD_BYTES):
            text, _ = extractor(rec)
            if text is None:
                continue
            headers = [("WARC-Target-URI", rec.url), ("WARC-Date", rec.date), ("WARC-Refers-To", rec.record_id),
                       ("Content-Type", "text/plain")]
            writer.write_record("conversion", headers, text.encode("utf-8"))
            written += 1
    return written
