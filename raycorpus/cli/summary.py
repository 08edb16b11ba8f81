"""`raycorpus summary OUTPUT`: print the run summary of a finished or partial output; and how it reads."""

from __future__ import annotations

import argparse
import json

from raycorpus.cli.common import EXIT_OK, EXIT_USAGE, err
from raycorpus.ingest.storage import NotFound, Storage
from raycorpus.output.clusters import ordered
from raycorpus.output.summary import ClusterCounts, DedupStats, RunSummary, ThisRun
from raycorpus.runtime.progress import per_second


def cmd_summary(args: argparse.Namespace) -> int:
    try:
        s = RunSummary.read(Storage(), args.output)
    except NotFound:
        err(f"no summary.json in {args.output}")
        return EXIT_USAGE
    print(json.dumps(s.to_dict(), indent=1, sort_keys=True) if args.json else format_summary(s))
    return EXIT_OK


def format_summary(s: RunSummary) -> str:
    w, r, d = s.warcs, s.records, s.docs
    lines = [
        f"output        {s.output}  ({'complete' if s.complete else 'incomplete: rerun to resume'})",
        f"WARCs         {w.committed:,} committed, {w.failed:,} failed, {w.pending:,} pending of {w.total:,}",
        f"records       {r.read:,} read, {r.responses:,} responses, {r.html_200:,} HTML 200",
    ]
    lines += [f"  skipped     {n:>10,}  {reason}" for reason, n in r.skipped.items()]
    lines.append(f"documents     {d.in_:,} in, {d.kept:,} kept")
    lines += [f"  dropped     {n:>10,}  {reason}" for reason, n in d.dropped.items()]
    lines += [f"  tagged      {n:>10,}  {reason} (kept: tag mode)" for reason, n in d.tagged.items()]
    docs_in = max(1, d.in_)
    costs = ", ".join(f"{k} {v * 1000 / docs_in:.2f}" for k, v in s.stage_seconds.items())
    if costs:
        lines.append(f"stage cost    ms per input document: {costs}")
    if s.this_run.dedup:
        lines.append(_dedup_line(s.this_run.dedup))
    if s.clusters:
        lines.append(_clusters_line(s.clusters))
    if p := s.dedup_paragraphs:
        lines.append(f"paragraphs    {p.removed:,} of {p.paragraphs:,} removed as seen before "
                     f"({p.removed / max(1, p.paragraphs):.1%}); "
                     f"{d.dropped.get('dedup:paragraphs', 0):,} documents dropped for them")
    lines.append(f"tokens        {s.tokens:,} in {s.shards:,} shards")
    if s.storage.retries:
        lines.append(f"storage       {s.storage.retries:,} read requests retried"
                     f" ({s.storage.throttled:,} after SlowDown)")
    lines += _this_run_lines(s.this_run)
    lines += [f"FAILED        {f.warc} after {f.attempts} attempts: {f.error}" for f in s.failed[:20]]
    if len(s.failed) > 20:
        lines.append(f"FAILED        ... and {len(s.failed) - 20} more (see summary.json)")
    return "\n".join(lines)


def _clusters_line(c: ClusterCounts) -> str:
    sizes = ", ".join(f"{k}: {n:,}" for k, n in ordered(c.histogram) if n)
    return (f"clusters      {c.documents:,} documents by duplicate-cluster size ({sizes}); {c.duplicates:,} "
            "duplicates in them" + (f", {c.prior_duplicates:,} of earlier outputs'" if c.prior_duplicates else ""))


def _dedup_line(dd: DedupStats) -> str:
    return (f"dedup index   {dd.indexed_docs:,} documents in {dd.shards} LSH shard(s)"
            + (f", {dd.bytes_per_doc:,.0f} B/doc" if dd.bytes_per_doc else "")
            + (f", {dd.restarts} shard restart(s)" if dd.restarts else "")
            + (f", {dd.prior_docs:,} of them from dedup.against" if dd.prior_docs else ""))


def _this_run_lines(run: ThisRun) -> list[str]:
    lines = []
    if run.docs_per_second is not None:
        lines.append(f"this run      {run.processed:,} WARCs in {run.wall_seconds:.1f} s: "
                     f"{per_second(run.docs_per_second)} docs/s, {per_second(run.tokens_per_second)} tokens/s, "
                     f"{run.mb_per_second:.1f} MB/s read, {run.workers} workers")
    if run.resumed_at:
        lines.append(f"resumed       at WARC #{run.resumed_at} (earlier WARCs were already committed)")
    return lines
