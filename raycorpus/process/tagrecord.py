"""What a tag-mode run keeps beside its documents so that ``raycorpus select`` can redo dedup and the
WARC's counters without reading the WARC again: per committed WARC ``tags/NNNNNNNNN.npz`` (the exact
content hash and the MinHash signature of every document, in record order; the URL and reason of
each record extraction dropped; the worker's counters and bytes read; the rare texts UTF-8 document
files cannot hold), and ``tags/config.json``, the config the run was built with (what select
compares its own config with).
"""

from __future__ import annotations

import io
import json
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from raycorpus import counts as ck
from raycorpus.ingest.storage import NotFound, Storage, join_url

if TYPE_CHECKING:
    from raycorpus.config import Config

TAGS_DIR = "tags"
CONFIG_FILE = "config.json"
UNCOMPARED = ("ray", "run", "storage")  # settings that never change the output: not kept
#: stage -> the fields its config section writes: FineWeb-2's per-language values fill the others
#: (``filters.language_defaults``), so select needs them to know the tag run's settings per language
EXPLICIT = "explicit_filter_settings"


@dataclass(slots=True)
class TagRecord:
    """One WARC of a tag-mode output, as select reads it back."""

    hashes: np.ndarray  # uint64 content hash per document (the documents/ rows' order)
    signatures: np.ndarray | None  # (docs, num_perm) uint32 MinHash, None without near dedup
    failed: list[tuple[str, str]] = field(default_factory=list)  # (url, reason) of each record extraction dropped
    counts: Counter = field(default_factory=Counter)  # the worker's counters, timings left out
    bytes_read: int = 0
    texts: dict[int, str] = field(default_factory=dict)  # index -> text the document files cannot hold exactly


def unwritable_texts(texts: list[str]) -> dict[int, str]:
    """The texts (by index) that UTF-8 document files would alter (lone surrogates): kept in the record."""
    out = {}
    for i, text in enumerate(texts):
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            out[i] = text
    return out


def record_url(out_url: str, ordinal: int) -> str:
    return join_url(join_url(out_url, TAGS_DIR), f"{ordinal:09d}.npz")


def write_tag_record(storage: Storage, out_url: str, ordinal: int, rec: TagRecord) -> None:
    """Write WARC ``ordinal``'s record atomically (a retried WARC writes the same bytes again)."""
    keys = [k for k in sorted(rec.counts, key=lambda k: k.text()) if k.kind is not ck.Kind.TIME]
    arrays = {
        "hashes": np.asarray(rec.hashes, np.uint64),
        "failed_urls": np.array([u for u, _ in rec.failed], dtype=str),
        "failed_reasons": np.array([r for _, r in rec.failed], dtype=str),
        "count_keys": np.array([k.text() for k in keys], dtype=str),
        "count_values": np.array([rec.counts[k] for k in keys], np.int64),
        "bytes_read": np.array(rec.bytes_read, np.int64),
        "text_index": np.array(sorted(rec.texts), np.int64),
        "texts": np.array([rec.texts[i] for i in sorted(rec.texts)], dtype=str),
    }
    if rec.signatures is not None:
        arrays["signatures"] = np.asarray(rec.signatures, np.uint32)
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    storage.write_atomic(record_url(out_url, ordinal), buf.getbuffer())


def read_tag_record(storage: Storage, out_url: str, ordinal: int) -> TagRecord:
    with np.load(io.BytesIO(storage.read_bytes(record_url(out_url, ordinal))), allow_pickle=False) as z:
        keys, values = z["count_keys"], z["count_values"]
        counts = Counter({ck.Key.parse(str(k)): int(v) for k, v in zip(keys, values, strict=True)})
        failed = list(zip(map(str, z["failed_urls"]), map(str, z["failed_reasons"]), strict=True))
        signatures = z["signatures"] if "signatures" in z.files else None
        texts = dict(zip(map(int, z["text_index"]), map(str, z["texts"]), strict=True))
        return TagRecord(z["hashes"], signatures, failed, counts, int(z["bytes_read"]), texts)


def config_url(out_url: str) -> str:
    return join_url(join_url(out_url, TAGS_DIR), CONFIG_FILE)


def kept_config(cfg_dump: dict) -> dict:
    """A config's ``model_dump(mode="json")`` without the settings that never change the output."""
    return {k: v for k, v in cfg_dump.items() if k not in UNCOMPARED and k != EXPLICIT}


def tag_config_dump(cfg: Config) -> dict:
    """What ``tags/config.json`` keeps of a tag run's config: the settings that change the output, and
    which fields each stage's section writes (:data:`EXPLICIT`)."""
    explicit = {name: sorted(cfg.filters.section(name).model_fields_set) for name in cfg.filters.stage_names}
    return {**kept_config(cfg.model_dump(mode="json")), EXPLICIT: explicit}


def write_tag_config(storage: Storage, out_url: str, cfg: Config) -> None:
    body = json.dumps(tag_config_dump(cfg), sort_keys=True, indent=1).encode()
    storage.write_atomic(config_url(out_url), body)


def read_tag_config(storage: Storage, out_url: str) -> dict | None:
    """The tag run's config, or None (not a tag-mode output, or one made before select existed)."""
    try:
        return upgraded(json.loads(storage.read_bytes(config_url(out_url))))
    except (NotFound, FileNotFoundError):
        return None


def upgraded(dump: dict) -> dict:
    """A stored tag config as this raycorpus reads it: a langid section without ``early_exit`` was written when it
    was off (left out of the dump); it is on by default since."""
    langid = (dump.get("filters") or {}).get("langid")
    if isinstance(langid, dict) and "early_exit" not in langid:
        langid["early_exit"] = False
    return dump
