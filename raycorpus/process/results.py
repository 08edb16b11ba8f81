"""What one WARC gives, as typed values passed between the layers (worker -> driver -> writer)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from raycorpus.process.dedup.paragraphs import Paragraphs
from raycorpus.process.document import Document
from raycorpus.process.profile import WarcProfile

if TYPE_CHECKING:
    from raycorpus.process.dedup.arrays import WarcKeys
    from raycorpus.process.dedup.index import Layout


@dataclass(slots=True)
class WarcResult:
    """Everything one WARC contributes, in record order (what a worker computes)."""

    ordinal: int
    url: str
    docs: list[Document]
    content_hashes: np.ndarray  # uint64, one per doc: normalised-text hash for exact dedup
    signatures: np.ndarray | None  # (docs, num_perm) uint32 MinHash (low 32 bits), if near dedup is on
    counts: Counter  # Counter[counts.Key]: stage counters and drop reasons
    bytes_read: int
    seconds: float
    tokens: np.ndarray | None = None  # the documents' token ids, each followed by EOS, concatenated (if encoded)
    lengths: np.ndarray | None = None  # uint64 tokens per document
    url_hashes: np.ndarray | None = None  # uint64 per doc: normalised-URL key for URL dedup (0: no URL), if on
    extract_failed: list[tuple[str, str]] | None = None  # tag mode: (url, reason) of each record extraction dropped
    profile: WarcProfile | None = None  # what the report keeps of it (None: output.report off)
    paragraphs: Paragraphs | None = None  # with dedup.paragraphs: each document's paragraphs, keys and tokens

    def summary(self) -> WarcSummary:
        return WarcSummary(self.ordinal, self.url, len(self.docs), self.bytes_read, round(self.seconds, 4),
                           Counter(self.counts), profile=self.profile)

    def encoded(self) -> tuple[np.ndarray | None, np.ndarray | None]:
        """(tokens, lengths), what the packer appends."""
        return self.tokens, self.lengths

    def dedup_payload(self, eligible: np.ndarray | None = None, layout: Layout | None = None) -> DedupPayload:
        """The WARC's dedup keys; with the index's ``layout``, the keys the decision uses are computed here too."""
        payload = DedupPayload(self.content_hashes, self.signatures, eligible, self.url_hashes,
                               paragraphs=self.paragraphs)
        if layout is not None:
            payload.keys = layout.warc_keys(*payload.rows(eligible))
        return payload


@dataclass(slots=True)
class StorageUse:
    """Storage requests a worker retried while reading one WARC (throttled: after SlowDown / 503 / 429)."""

    retries: int = 0
    throttled: int = 0


@dataclass(slots=True)
class WarcSummary:
    """A processed WARC's numbers: what the driver orders and the writer puts in the ledger."""

    ordinal: int
    url: str  # where it was read from
    docs: int  # documents that passed the filters
    bytes_read: int
    seconds: float  # the worker's wall time on it
    counts: Counter  # Counter[counts.Key]
    storage: StorageUse = field(default_factory=StorageUse)
    node: str = ""  # the Ray node it ran on (the run summary counts WARCs per node)
    profile: WarcProfile | None = None  # the report's histograms and samples (the committer takes it out)

    @classmethod
    def joined(cls, parts: list[WarcSummary]) -> WarcSummary:
        """The summary of a WARC cut into ranges, from its ranges' (in order): counts and sizes add up,
        ``seconds`` is the workers' time on it, ``node`` the first range's."""
        counts: Counter = Counter()
        for p in parts:
            counts.update(p.counts)
        storage = StorageUse(sum(p.storage.retries for p in parts), sum(p.storage.throttled for p in parts))
        profile = WarcProfile.joined([p.profile for p in parts]) if parts[0].profile is not None else None
        return cls(parts[0].ordinal, parts[0].url, sum(p.docs for p in parts), sum(p.bytes_read for p in parts),
                   round(sum(p.seconds for p in parts), 4), counts, storage, parts[0].node, profile)


@dataclass(slots=True)
class DedupPayload:
    """A WARC's dedup keys, one row per document that passed the filters."""

    hashes: np.ndarray  # uint64 content hashes
    signatures: np.ndarray | None  # (docs, num_perm) uint32 MinHash, None without near dedup
    eligible: np.ndarray | None = None  # tag mode: the documents filter mode would keep (only they take part)
    url_hashes: np.ndarray | None = None  # uint64 normalised-URL keys, None without URL dedup
    keys: WarcKeys | None = None  # of the eligible documents, computed by the worker (None: by the head)
    paragraphs: Paragraphs | None = None  # with dedup.paragraphs (filter mode only: every document takes part)

    @classmethod
    def joined(cls, parts: list[DedupPayload]) -> DedupPayload:
        """The dedup keys of a WARC cut into ranges, from its ranges' (in order)."""

        def cat(arrays: list[np.ndarray | None]) -> np.ndarray | None:
            return None if arrays[0] is None else np.concatenate(arrays)

        paragraphs = Paragraphs.joined([p.paragraphs for p in parts]) if parts[0].paragraphs is not None else None
        return cls(*(cat([getattr(p, f) for p in parts]) for f in ("hashes", "signatures", "eligible", "url_hashes")),
                   paragraphs=paragraphs)
        # (no keys: documents of two ranges may share one; the head computes them for the whole WARC)

    def rows(self, eligible: np.ndarray | None) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        """(hashes, signatures, URL keys) of the given documents (all when None)."""
        if eligible is None:
            return self.hashes, self.signatures, self.url_hashes
        return tuple(None if a is None else a[eligible] for a in (self.hashes, self.signatures, self.url_hashes))
