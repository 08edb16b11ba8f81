"""Per-WARC counters with typed keys: what was read, skipped, dropped, tagged, and where the time went.

A key is ``(kind, name, reason)``. Workers add to a ``Counter[Key]`` per WARC; the ledger sums them
over committed WARCs; the run summary, the metrics and the benchmark read them by kind, never by
parsing strings. Only the ledger (a JSON file) spells keys as text, with :meth:`Key.text` /
:meth:`Key.parse`, in the spelling outputs have always had on disk (``drop:gopher_quality:min_words``).
"""

from __future__ import annotations

from collections import Counter
from enum import StrEnum
from typing import NamedTuple


class Kind(StrEnum):
    TOTAL = "total"  # a plain count: records, html, kept, bytes_read, tokens, ...
    SKIP = "skip"  # a WARC record not extracted (name: why: not_200, not_html, too_large, ...)
    DROP = "drop"  # a document dropped (name: the stage, reason: the stage's reason)
    TAG = "tag"  # tag mode: a document kept that the stage would have dropped
    TIME = "ns"  # CPU nanoseconds spent in a stage (name: the stage)
    CHARSET = "charset"  # where a page's charset came from (name: http, meta, detected, ...)


_BY_PREFIX = {k.value: k for k in Kind if k is not Kind.TOTAL}


class Key(NamedTuple):
    kind: Kind
    name: str
    reason: str = ""

    def text(self) -> str:
        """The ledger's spelling: ``html``, ``skip:not_200``, ``drop:stage:reason``, ``ns:extract``."""
        if self.kind is Kind.TOTAL:
            return self.name
        return f"{self.kind.value}:{self.name}" + (f":{self.reason}" if self.reason else "")

    @classmethod
    def parse(cls, text: str) -> Key:
        prefix, sep, rest = text.partition(":")
        kind = _BY_PREFIX.get(prefix) if sep else None
        if kind is None:
            return cls(Kind.TOTAL, text)
        if kind in (Kind.DROP, Kind.TAG):
            name, _, reason = rest.partition(":")
            return cls(kind, name, reason)
        return cls(kind, rest)

    @property
    def label(self) -> str:
        """``stage:reason`` of a drop or tag (what ``would_drop`` and the summary list), else the name."""
        return f"{self.name}:{self.reason}" if self.reason else self.name


def total(name: str) -> Key:
    return Key(Kind.TOTAL, name)


def drop(stage: str, reason: str) -> Key:
    return Key(Kind.DROP, stage, reason)


def tag(stage: str, reason: str) -> Key:
    return Key(Kind.TAG, stage, reason)


def skip(reason: str) -> Key:
    return Key(Kind.SKIP, reason)


def time_in(stage: str) -> Key:
    return Key(Kind.TIME, stage)


def charset(source: str) -> Key:
    return Key(Kind.CHARSET, source)


# the plain counters everyone reads
RECORDS, RESPONSES, HTML, KEPT = total("records"), total("responses"), total("html"), total("kept")
BYTES_READ, TOKENS, DEDUP_INDEXED = total("bytes_read"), total("tokens"), total("dedup_indexed")
DEDUP_PARAGRAPHS, DEDUP_PARAGRAPHS_REMOVED = total("dedup_paragraphs"), total("dedup_paragraphs_removed")
STORAGE_RETRIES, STORAGE_THROTTLED = total("storage_retries"), total("storage_throttled")
WORKER_MS, WARCS_FAILED = total("worker_seconds_ms"), total("warcs_failed")

Counts = Counter  # Counter[Key]


def of_kind(counts: Counter, kind: Kind) -> dict[Key, int]:
    """The counters of one kind, sorted by key."""
    return {k: n for k, n in sorted(counts.items()) if k.kind is kind}


def to_json(counts: Counter) -> dict[str, int]:
    """Counters as the ledger writes them (text keys, sorted)."""
    return dict(sorted((k.text(), n) for k, n in counts.items()))


def from_json(raw: dict[str, int]) -> Counter:
    return Counter({Key.parse(k): n for k, n in raw.items()})
