"""Per-WARC JSONL (zstd) files: kept documents beside the shards, dropped ones for audit."""

from __future__ import annotations

import json

from raycorpus.ingest.storage import Storage, join_url
from raycorpus.process.document import Document

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


def write_parquet(storage: Storage, out_url: str, ordinal: int, docs: list[Document], warc: str,
                  provenance: dict) -> str:
    """Write ``documents/{ordinal:09d}.parquet``: one row per kept document, one schema for every file
    (``metadata`` is a JSON string: its keys vary by stage and mode), provenance in the schema metadata."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({
        "id": pa.array([d.metadata.get("id") for d in docs], pa.string()),
        "text": pa.array([d.text for d in docs], pa.string()),
        "url": pa.array([d.url for d in docs], pa.string()),
        "record_id": pa.array([d.record_id for d in docs], pa.string()),
        "date": pa.array([d.date for d in docs], pa.string()),
        "warc": pa.array([warc] * len(docs), pa.string()),
        "lang": pa.array([d.metadata.get("lang") for d in docs], pa.string()),
        "metadata": pa.array([json.dumps(d.metadata, ensure_ascii=False, sort_keys=True) for d in docs], pa.string()),
    })
    meta = {"raycorpus": json.dumps({**provenance, "warc": warc, "ordinal": ordinal}, sort_keys=True)}
    table = table.replace_schema_metadata(meta)
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="zstd")
    url = join_url(join_url(out_url, DOCUMENTS_DIR), f"{ordinal:09d}.parquet")
    storage.write_atomic(url, buf.getvalue())
    return url
