"""Live metrics through ``ray.util.metrics``: exported by every node's Ray metrics agent.

Ray prefixes each name with ``ray_`` on the metrics endpoint (``raycorpus_docs_in_total``
is scraped as ``ray_raycorpus_docs_in_total``), next to Ray's own metrics, so KubeRay's
PodMonitors and any Prometheus that scrapes Ray see them without another endpoint. Every
series carries the ``output`` tag (the output path) so several builds on one cluster stay
apart. ``CATALOGUE`` is the single list of what raycorpus declares: the dashboard, the alert
rules and their tests are checked against it.

Recording is cheap (one call per WARC and stage, never per document) and must never fail a
build: a metrics error is swallowed after a warning.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass

from raycorpus import counts as ck
from raycorpus.output.commit import Position
from raycorpus.process.results import WarcSummary

log = logging.getLogger(__name__)

PREFIX = "ray_"  # what Ray adds on export


@dataclass(frozen=True)
class MetricSpec:
    name: str
    kind: str  # counter | gauge | histogram
    help: str
    tags: tuple[str, ...] = ()
    boundaries: tuple[float, ...] = ()


_SECONDS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 120, 300, 600, 1800, 3600)

CATALOGUE: tuple[MetricSpec, ...] = (
    # WARC progress (driver)
    MetricSpec("raycorpus_warcs", "gauge",
               "WARCs by state: total, pending, in_flight, buffered (finished, awaiting commit), committed, failed",
               ("state",)),
    MetricSpec("raycorpus_warc_retries_total", "counter", "WARC attempts that failed and were scheduled again"),
    MetricSpec("raycorpus_eta_seconds", "gauge", "estimated seconds until every WARC is committed"),
    MetricSpec("raycorpus_workers", "gauge", "extraction workers ready in the pool"),
    MetricSpec("raycorpus_cluster_cpus", "gauge", "CPUs in the Ray cluster, as the driver sees them"),
    # follow mode (driver, `raycorpus run --follow`)
    MetricSpec("raycorpus_follow_backlog_warcs", "gauge", "WARCs the manifest lists that are not committed yet"),
    MetricSpec("raycorpus_follow_idle_seconds", "gauge",
               "seconds the follower has waited for new manifest lines with every WARC committed (0 while working)"),
    # documents (driver, at commit)
    MetricSpec("raycorpus_docs_in_total", "counter", "HTML documents read from committed WARCs"),
    MetricSpec("raycorpus_docs_kept_total", "counter", "documents written to the shards"),
    MetricSpec("raycorpus_docs_dropped_total", "counter", "documents dropped, by stage and reason",
               ("stage", "reason")),
    MetricSpec("raycorpus_bytes_read_total", "counter", "WARC bytes read by the workers (committed WARCs)"),
    MetricSpec("raycorpus_tokens_total", "counter", "tokens written to the shards (EOS included)"),
    MetricSpec("raycorpus_shards_total", "counter", "token shards closed and made durable"),
    MetricSpec("raycorpus_storage_retries_total", "counter", "storage (S3 / HTTP) requests retried by the workers"),
    # dedup (driver)
    MetricSpec("raycorpus_dedup_checked_total", "counter", "documents that reached the dedup decision"),
    MetricSpec("raycorpus_lsh_indexed_docs", "gauge", "documents held by the LSH index"),
    MetricSpec("raycorpus_dedup_paragraphs_total", "counter",
               "dedup.paragraphs: paragraphs of the documents document-level dedup kept"),
    MetricSpec("raycorpus_dedup_paragraphs_removed_total", "counter",
               "dedup.paragraphs: paragraphs removed, seen before in manifest order"),
    # latency (workers)
    MetricSpec("raycorpus_warc_seconds", "histogram", "seconds a worker spent processing one WARC",
               (), _SECONDS),
    MetricSpec("raycorpus_stage_seconds", "histogram", "seconds one WARC spent in each stage (CPU time)",
               ("stage",), _SECONDS),
)

BY_NAME = {m.name: m for m in CATALOGUE}


def exported_names() -> set[str]:
    """Every series name a Prometheus scrape can show (histograms as _bucket/_sum/_count)."""
    out = set()
    for m in CATALOGUE:
        base = PREFIX + m.name
        out.update([base + s for s in ("_bucket", "_sum", "_count")] if m.kind == "histogram" else [base])
    return out


class Metrics:
    """The declared metrics, created lazily in the process that records them."""

    def __init__(self, output: str):
        self.default_tags = {"output": output}
        self._metrics: dict | None = None
        self._broken = False
        self._written: tuple[int, int] | None = None  # (tokens, shards) the counters have been advanced to
        self._committed: Counter = Counter()  # (counter, tags) -> what committed WARCs add, not recorded yet

    def _get(self, name: str):
        if self._metrics is None:
            from ray.util import metrics as rm

            kinds = {"counter": rm.Counter, "gauge": rm.Gauge, "histogram": rm.Histogram}
            made = {}
            for m in CATALOGUE:
                kwargs = {"description": m.help, "tag_keys": ("output", *m.tags)}
                if m.kind == "histogram":
                    kwargs["boundaries"] = list(m.boundaries)
                metric = kinds[m.kind](m.name, **kwargs)
                metric.set_default_tags(self.default_tags)
                made[m.name] = metric
            self._metrics = made
        return self._metrics[name]

    def _do(self, name: str, op: str, value: float, tags: dict | None) -> None:
        if self._broken:
            return
        try:
            getattr(self._get(name), op)(value, tags=tags)
        except Exception as e:  # metrics must never fail a build
            self._broken = True
            log.warning("raycorpus metrics disabled: %s", e)

    def inc(self, name: str, value: float = 1.0, **tags: str) -> None:
        if value > 0:
            self._do(name, "inc", value, tags or None)

    def set(self, name: str, value: float, **tags: str) -> None:
        self._do(name, "set", value, tags or None)

    def observe(self, name: str, value: float, **tags: str) -> None:
        self._do(name, "observe", value, tags or None)

    # ---------------------------------------------------------------- what the runtime records

    def warc_processed(self, summary: WarcSummary) -> None:
        """Worker side, once per WARC: its processing time, per-stage CPU seconds, storage retries."""
        self.observe("raycorpus_warc_seconds", summary.seconds)
        self.inc("raycorpus_storage_retries_total", summary.storage.retries)
        for key, ns in ck.of_kind(summary.counts, ck.Kind.TIME).items():
            self.observe("raycorpus_stage_seconds", ns / 1e9, stage=key.name)

    def warc_committed(self, summary: WarcSummary) -> None:
        """Driver side, once per committed WARC (in manifest order), from its summary counts: added up here and
        recorded by the next :meth:`run_state` (about once a second; each of the ~30 updates a WARC makes costs the
        driver ~10-20 us)."""
        counts, add = summary.counts, self._committed
        add["raycorpus_docs_in_total", ()] += counts[ck.HTML]
        add["raycorpus_docs_kept_total", ()] += counts[ck.KEPT]
        add["raycorpus_bytes_read_total", ()] += summary.bytes_read
        drops = ck.of_kind(counts, ck.Kind.DROP)
        for key, n in drops.items():
            add["raycorpus_docs_dropped_total", (("stage", key.name), ("reason", key.reason or key.name))] += n
        if ck.DEDUP_INDEXED in counts:  # filter mode: kept + dedup drops; tag mode: every kept document
            dups = sum(n for k, n in drops.items() if k.name == "dedup")
            add["raycorpus_dedup_checked_total", ()] += counts[ck.KEPT] + dups
        add["raycorpus_dedup_paragraphs_total", ()] += counts[ck.DEDUP_PARAGRAPHS]
        add["raycorpus_dedup_paragraphs_removed_total", ()] += counts[ck.DEDUP_PARAGRAPHS_REMOVED]

    def _record_committed(self) -> None:
        for (name, tags), n in self._committed.items():
            self.inc(name, n, **dict(tags))
        self._committed.clear()

    def run_state(self, state: RunState) -> None:
        """Driver side, about once a second: the committed WARCs' counts, the WARC gauges, the ETA, the pool,
        tokens and shards written."""
        self._record_committed()
        p = state.position
        for kind, n in (("total", state.total), ("committed", p.committed), ("failed", p.failed),
                        ("in_flight", state.in_flight), ("buffered", state.buffered),
                        ("pending", state.total - p.next_ordinal - state.in_flight - state.buffered)):
            self.set("raycorpus_warcs", max(0, n), state=kind)
        eta = state.eta_seconds
        self.set("raycorpus_eta_seconds", 0.0 if p.next_ordinal >= state.total else (eta if eta is not None else -1.0))
        self.set("raycorpus_workers", state.workers)
        self.set("raycorpus_cluster_cpus", state.cluster_cpus)
        tokens, shards = self._written if self._written is not None else (state.first.tokens, state.first.shards)
        self.inc("raycorpus_tokens_total", p.tokens - tokens)
        self.inc("raycorpus_shards_total", p.shards - shards)
        self._written = (max(tokens, p.tokens), max(shards, p.shards))  # a replaced packer goes back to its last
        # checkpoint and places those tokens again: counted once
        if state.indexed is not None:
            self.set("raycorpus_lsh_indexed_docs", state.indexed)


    def follow_state(self, backlog: int, idle_seconds: float) -> None:
        """Driver side, with the run state (and while a follower waits): WARCs listed but not committed yet,
        and seconds spent waiting for new manifest lines (0 while working, and always without --follow)."""
        self.set("raycorpus_follow_backlog_warcs", max(0, backlog))
        self.set("raycorpus_follow_idle_seconds", idle_seconds)


@dataclass(frozen=True, slots=True)
class RunState:
    """What the driver reports: where the writer stands and what the pool holds."""

    total: int
    position: Position
    first: Position  # where this run started (the counters count from there)
    in_flight: int
    buffered: int
    workers: int
    cluster_cpus: float
    eta_seconds: float | None
    indexed: int | None  # documents in the LSH index (None: dedup off)
