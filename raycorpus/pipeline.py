"""The per-WARC document chain, Ray-free: read -> HTML 200 -> decode -> extract -> filters -> hash.

A :class:`WarcProcessor` turns one WARC url into one :class:`WarcResult`; the runtime
layer wraps it in a stateless actor. Each step either keeps a document or drops it with
a reason (``stage:reason``), so every drop is counted.
"""

from __future__ import annotations

import hashlib
import re
import time
import unicodedata
from collections import Counter
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from raycorpus.config import Config
from raycorpus.document import Document
from raycorpus.extract import Extractor
from raycorpus.storage import Storage
from raycorpus.warc import iter_html_records


@dataclass(slots=True)
class WarcResult:
    """Everything one WARC contributes, in record order."""

    ordinal: int
    url: str
    docs: list[Document]
    content_hashes: np.ndarray  # uint64, one per doc: normalised-text hash for exact dedup
    counts: Counter  # stage counters and drop reasons
    bytes_read: int
    seconds: float

    def summary(self) -> dict:
        return {
            "ordinal": self.ordinal,
            "url": self.url,
            "docs": len(self.docs),
            "bytes_read": self.bytes_read,
            "seconds": round(self.seconds, 4),
            "counts": dict(self.counts),
        }


class DocumentStep(Protocol):
    """A stage of the chain: return None to keep the document, or a drop reason."""

    name: str

    def __call__(self, doc: Document) -> str | None: ...


_WS = re.compile(r"\s+")
_PUNCT_DIGITS = re.compile(r"[\W\d_]+", re.UNICODE)


def normalize_for_hash(text: str) -> str:
    """Lowercase, NFKC, punctuation and digits folded, whitespace collapsed."""
    t = unicodedata.normalize("NFKC", text).lower()
    t = _PUNCT_DIGITS.sub(" ", t)
    return _WS.sub(" ", t).strip()


def content_hash(text: str) -> int:
    """64-bit hash of the normalised text (stable across processes and machines)."""
    digest = hashlib.blake2b(normalize_for_hash(text).encode("utf-8", "surrogatepass"), digest_size=8)
    return int.from_bytes(digest.digest(), "little")


class WarcProcessor:
    """Builds the document chain once; ``process`` runs it over one WARC."""

    def __init__(self, cfg: Config, steps: list[DocumentStep] | None = None):
        self.cfg = cfg
        self.storage = Storage(cfg.storage)
        self.extractor = Extractor(cfg.extract)
        self.steps: list[DocumentStep] = steps or []

    def process(self, ordinal: int, url: str) -> WarcResult:
        t0 = time.perf_counter()
        counts: Counter = Counter()
        docs: list[Document] = []
        hashes: list[int] = []
        with self.storage.open_read(url) as stream:
            for rec in iter_html_records(
                stream, counts, self.cfg.warc.max_record_bytes, self.cfg.warc.quirks_mode
            ):
                counts["html"] += 1
                text, reason = self.extractor(rec)
                if text is None:
                    counts[f"drop:extract:{reason}"] += 1
                    continue
                doc = Document(
                    text=text,
                    url=rec.url,
                    record_id=rec.record_id,
                    date=rec.date,
                    metadata={"charset": rec.charset},
                )
                if self._drop_reason(doc, counts):
                    continue
                counts["kept"] += 1
                docs.append(doc)
                hashes.append(content_hash(text))
            bytes_read = getattr(stream, "tell", lambda: 0)()
        return WarcResult(
            ordinal=ordinal,
            url=url,
            docs=docs,
            content_hashes=np.array(hashes, dtype=np.uint64),
            counts=counts,
            bytes_read=bytes_read,
            seconds=time.perf_counter() - t0,
        )

    def _drop_reason(self, doc: Document, counts: Counter) -> str | None:
        for step in self.steps:
            try:
                reason = step(doc)
            except Exception as e:  # a stage that raises drops the document, never the WARC
                reason = f"error:{type(e).__name__}"
            if reason:
                counts[f"drop:{step.name}:{reason}"] += 1
                return reason
        return None
