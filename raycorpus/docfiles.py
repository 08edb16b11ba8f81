"""Per-WARC JSONL (zstd) files: kept documents beside the shards, dropped ones for audit."""

from __future__ import annotations

import json

from raycorpus.document import Document
from raycorpus.storage import Storage, join_url

DOCUMENTS_DIR = "documents"
EXCLUSIONS_DIR = "exclusions"


def doc_row(doc: Document, warc: str | None = None) -> dict:
    row = {"text": doc.text, "url": doc.url, "record_id": doc.record_id, "date": doc.date, "metadata": doc.metadata}
    if warc is not None:
        row["warc"] = warc
    return row


def write_jsonl_zst(storage: Storage, out_url: str, folder: str, ordinal: int, rows: list[dict],
                    prefix: str = "") -> str:
    """Write ``folder/{prefix}{ordinal:09d}.jsonl.zst`` atomically (a retried WARC rewrites the same bytes)."""
    import zstandard

    body = "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows)
    url = join_url(join_url(out_url, folder), f"{prefix}{ordinal:09d}.jsonl.zst")
    storage.write_atomic(url, zstandard.ZstdCompressor(level=3).compress(body.encode("utf-8", "replace")))
    return url


def read_jsonl_zst(storage: Storage, url: str) -> list[dict]:
    import zstandard

    data = zstandard.ZstdDecompressor().decompressobj().decompress(storage.read_bytes(url))
    return [json.loads(line) for line in data.decode("utf-8").splitlines() if line]
