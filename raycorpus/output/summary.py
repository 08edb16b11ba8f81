"""The run summary: every number a user sees, derived from the ledger (so it survives restarts).

:class:`RunSummary` is what ``raycorpus run`` writes as ``summary.json`` and what ``raycorpus summary``, the
benchmarks and the report read: ``RunSummary.read(storage, out_url)`` loads an output's summary (one written by
an older raycorpus too: parts it lacks get their defaults), ``to_json_bytes()`` gives the file's bytes. The JSON
is ``canonical_json`` of the parts below, by their names; a part left out while not measured (``None`` here) is
absent from it.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from raycorpus import counts as ck
from raycorpus.ingest.storage import Storage, join_url
from raycorpus.output.ledger import LedgerState
from raycorpus.output.shards import canonical_json
from raycorpus.process.results import StorageUse

SUMMARY_FILE = "summary.json"


def _is_none(value: object) -> bool:
    return value is None


def _measured() -> Any:
    """A field absent from the JSON while None (not measured by this run)."""
    return Field(None, exclude_if=_is_none)


class _Part(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True, validate_by_name=True, validate_by_alias=True,
                              serialize_by_alias=True)


class WarcCounts(_Part):
    """The manifest's WARCs, by state."""

    total: int
    """WARCs in the manifest (or in the work source: the output ``raycorpus select`` reads, a replay)."""
    committed: int
    """WARCs whose documents are in the output."""
    failed: int
    """WARCs given up on after their retries (listed in ``RunSummary.failed``)."""
    pending: int
    """WARCs not reached yet: a rerun resumes with them."""


class RecordCounts(_Part):
    """WARC records of the committed WARCs."""

    read: int
    """Every record read."""
    responses: int
    """HTTP response records."""
    html_200: int
    """Responses with status 200 and an HTML content type: the documents going in."""
    skipped: dict[str, int] = {}
    """Responses not taken, by reason (``not_200``, ``not_html``, ...)."""


class DocCounts(_Part):
    """Documents of the committed WARCs, through the filter chain and dedup."""

    in_: int = Field(alias="in")
    """Documents going in (the HTML 200 responses)."""
    kept: int
    """Documents written to the output."""
    dropped: dict[str, int] = {}
    """Documents dropped, by ``stage:reason`` (``dedup:exact``, ``lang:not_kept:de``, ...)."""
    tagged: dict[str, int] = {}
    """Documents a filter would have dropped, by ``stage:reason``, kept with a tag (``filters.mode: tag``)."""


class FailedWarc(_Part):
    """A WARC given up on: its manifest line, the attempts made, the last error."""

    ordinal: int
    """Its place in the manifest (from 0)."""
    warc: str
    """Its manifest line."""
    status: str = "failed"
    """Always ``failed`` (as in its ledger entry)."""
    attempts: int
    """Times it was tried."""
    error: str
    """The last attempt's error."""


class ShardRead(_Part):
    """What one LSH shard read when it (last) started."""

    files: int = 0
    """Its own durable files (snapshot and segments)."""
    file_bytes: int = 0
    """Bytes of those files."""
    records: int = 0
    """Dedup records of WARCs committed after its files."""
    record_bytes: int = 0
    """Bytes of those records."""
    prior_bytes: int | None = _measured()
    """Bytes read of the earlier outputs' index (``dedup.against`` only)."""


class DedupStats(_Part):
    """The dedup index at the end of this run (present only with dedup enabled)."""

    shards: int
    """LSH shard actors."""
    restarts: int
    """Shard actors restarted from their files during this run."""
    indexed_docs: int
    """Documents in the index, the ``dedup.against`` outputs' (``prior_docs``) included."""
    prior_docs: int | None = _measured()
    """Documents of the ``dedup.against`` outputs (present only with ``dedup.against``)."""
    indexed_docs_in_shards: int | None = _measured()
    """Documents the shards say they hold (summed over shards; absent when a shard was lost after the last
    WARC's decision)."""
    table_bytes: int | None = _measured()
    """Memory of the shards' LSH tables (absent as ``indexed_docs_in_shards``)."""
    signature_bytes: int | None = _measured()
    """Memory of the shards' signature stores (absent as ``indexed_docs_in_shards``)."""
    bytes_per_doc: float | None
    """(table + signature bytes) / indexed documents; None with no document indexed."""
    rounds: int | None = _measured()
    """Rounds this run decided: WARCs ready in manifest order decided together, one query per shard each (the
    WARCs processed / rounds tells how far behind the head ran)."""
    start_reads: list[ShardRead] = []
    """Per shard: what it read when it (last) started."""


class ThisRun(_Part):
    """What this invocation did (the runs before a resume are not in it). On an output that was complete
    already, only ``resumed_at`` and ``processed``; the rates only when it processed WARCs."""

    resumed_at: int = 0
    """The first WARC this run committed (the number committed before it; = total when it had nothing to do)."""
    processed: int = 0
    """WARCs this run processed."""
    docs: int | None = _measured()
    """Documents this run wrote."""
    tokens: int | None = _measured()
    """Tokens this run wrote."""
    bytes_read: int | None = _measured()
    """WARC bytes this run read."""
    warc_ranges: int | None = _measured()
    """Record ranges the processed WARCs were cut into (``run.split_warcs``; 0: none)."""
    retried: int | None = _measured()
    """WARC attempts retried."""
    results_lost: int | None = _measured()
    """Worker results lost with their node and processed again."""
    wall_seconds: float | None = _measured()
    """Processing wall time: from the first worker ready to the last commit."""
    startup_seconds: float | None = _measured()
    """From the start of the build to the first worker ready (actor start-up, model loads)."""
    workers: int | None = _measured()
    """The most workers the pool held."""
    warcs_by_node: dict[str, int] | None = _measured()
    """WARCs processed per Ray node id."""
    actor_recoveries: dict[str, int] | None = _measured()
    """Commit-path actors (``packer``, ``writer``) restarted during this run."""
    dedup: DedupStats | None = _measured()
    """The dedup index (dedup enabled only)."""
    peak_rss_mb: dict[str, float] | None = _measured()
    """Peak resident memory per role (the largest process of each), in MB."""
    cpu_seconds: dict[str, float] | None = _measured()
    """CPU seconds of this run per role of the commit path (driver, packer, LSH shards, shard-closing tasks), and
    ``lsh_compact``: the LSH shards' share spent on the end of the build's compaction (one file per shard)."""
    docs_per_second: float | None = _measured()
    """Documents written per processing second."""
    tokens_per_second: float | None = _measured()
    """Tokens written per processing second."""
    mb_per_second: float | None = _measured()
    """WARC megabytes read per processing second."""

    def with_rates(self) -> ThisRun:
        """A copy with the per-second rates, when this run processed WARCs in a measured wall time."""
        wall = self.wall_seconds or 0.0
        if wall <= 0 or not self.processed:
            return self
        return self.model_copy(update={
            "docs_per_second": round((self.docs or 0) / wall, 1),
            "tokens_per_second": round((self.tokens or 0) / wall, 1),
            "mb_per_second": round((self.bytes_read or 0) / wall / 1e6, 2),
        })


class ClusterCounts(_Part):
    """Duplicate clusters (a finished filter-mode build with dedup; ``clusters/``): each kept document's cluster is
    it and the documents dedup dropped as its duplicates."""

    documents: int
    """Documents in the shards (one cluster each)."""
    duplicates: int
    """Documents dropped as duplicates of them."""
    prior_duplicates: int
    """Documents dropped as duplicates of an earlier output's (``dedup.against``)."""
    histogram: dict[str, int]
    """Documents by cluster size, in FineWeb-2's rehydration bins (``1``, ``2``, ``3-4``, ``5-99``, ...)."""


class ParagraphCounts(_Part):
    """Paragraph dedup (``dedup.paragraphs``), over the documents document-level dedup kept."""

    paragraphs: int
    """Their paragraphs (lines)."""
    removed: int
    """Paragraphs removed: seen before in manifest order (the documents dropped for them are in ``docs.dropped``,
    ``dedup:paragraphs``)."""


class RunSummary(_Part):
    """An output's run summary (``summary.json``): the ledger's totals over every committed WARC, and ``this_run``,
    what the last invocation did."""

    output: str
    """The output's path or URL."""
    complete: bool
    """Every WARC committed or failed; else a rerun resumes."""
    warcs: WarcCounts
    records: RecordCounts
    docs: DocCounts
    stage_seconds: dict[str, float] = {}
    """Worker CPU seconds per stage of the chain, summed over committed WARCs."""
    charset_sources: dict[str, int] = {}
    """Documents by where their charset came from (``http``, ``meta``, ``utf-8``, ...)."""
    tokens: int
    """Tokens in the output."""
    shards: int
    """Token shards closed."""
    bytes_read: int = 0
    """WARC bytes read for the committed WARCs."""
    storage: StorageUse = Field(default_factory=StorageUse)
    """Storage requests the workers retried while reading committed WARCs (throttled: after SlowDown / 503 / 429)."""
    failed: list[FailedWarc] = []
    """The WARCs given up on."""
    clusters: ClusterCounts | None = _measured()
    """Duplicate clusters (finished filter-mode builds with dedup only)."""
    dedup_paragraphs: ParagraphCounts | None = _measured()
    """Paragraph dedup (builds with ``dedup.paragraphs`` only)."""
    this_run: ThisRun = Field(default_factory=ThisRun)

    @classmethod
    def read(cls, storage: Storage, out_url: str) -> RunSummary:
        """The summary of the output at ``out_url`` (a local path, ``s3://`` or ``https://``). Raises
        :class:`~raycorpus.ingest.storage.NotFound` when it has none (no run of it has ended yet)."""
        return cls.from_json(storage.read_bytes(join_url(out_url, SUMMARY_FILE)))

    @classmethod
    def from_json(cls, data: bytes | str) -> RunSummary:
        """A summary from the text of a ``summary.json``."""
        return cls.model_validate_json(data)

    def write(self, storage: Storage, out_url: str) -> None:
        """Write it as the output's ``summary.json`` (atomically)."""
        storage.write_atomic(join_url(out_url, SUMMARY_FILE), self.to_json_bytes())

    def to_dict(self) -> dict[str, Any]:
        """The JSON object of ``summary.json``, as Python values."""
        return self.model_dump(mode="json")

    def to_json_bytes(self) -> bytes:
        """The bytes of ``summary.json``."""
        return canonical_json(self.to_dict())

    def __getitem__(self, key: str) -> Any:
        """``summary["docs"]["kept"]``: a part as ``summary.json`` holds it, for code written against the dict this
        model replaced (the end-to-end tests' helpers). New code reads attributes."""
        return self.to_dict()[key]

    def get(self, key: str, default: Any = None) -> Any:
        """``dict.get`` over the parts, as :meth:`__getitem__`."""
        return self.to_dict().get(key, default)


def build_summary(output: str, state: LedgerState, total_warcs: int, run: ThisRun,
                  clusters: dict | None = None) -> RunSummary:
    """The summary of the output at ``output`` (its path or URL) whose ledger state is ``state``, after ``run``;
    ``clusters``: its ``clusters/clusters.json``, when it has one."""
    t = state.totals
    drops, skips, tagged, charsets, stage_ns = (
        {k.label: v for k, v in ck.of_kind(t, kind).items()}
        for kind in (ck.Kind.DROP, ck.Kind.SKIP, ck.Kind.TAG, ck.Kind.CHARSET, ck.Kind.TIME))
    return RunSummary(
        output=output,
        complete=state.complete,
        warcs=WarcCounts(total=total_warcs, committed=state.committed, failed=len(state.failed),
                         pending=max(0, total_warcs - state.next_ordinal)),
        records=RecordCounts(read=t[ck.RECORDS], responses=t[ck.RESPONSES], html_200=t[ck.HTML], skipped=skips),
        docs=DocCounts(in_=t[ck.HTML], kept=t[ck.KEPT], dropped=drops, tagged=tagged),
        stage_seconds={stage: round(ns / 1e9, 3) for stage, ns in stage_ns.items()},
        charset_sources=charsets,
        tokens=state.packer.tokens,
        shards=state.packer.shards_closed,
        bytes_read=t[ck.BYTES_READ],
        storage=StorageUse(t[ck.STORAGE_RETRIES], t[ck.STORAGE_THROTTLED]),
        failed=state.failed,
        clusters=ClusterCounts.model_validate(clusters) if clusters and state.complete else None,
        dedup_paragraphs=ParagraphCounts(paragraphs=t[ck.DEDUP_PARAGRAPHS], removed=t[ck.DEDUP_PARAGRAPHS_REMOVED])
        if t[ck.DEDUP_PARAGRAPHS] else None,
        this_run=run.with_rates(),
    )
