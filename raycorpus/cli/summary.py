"""`raycorpus summary OUTPUT`: print the run summary of a finished or partial output; and how it reads."""

from __future__ import annotations

import argparse
import json

from raycorpus.cli.common import EXIT_OK, EXIT_USAGE, err
from raycorpus.ingest.storage import NotFound, Storage, join_url


def cmd_summary(args: argparse.Namespace) -> int:
    try:
        s = json.loads(Storage().read_bytes(join_url(args.output, "summary.json")))
    except NotFound:
        err(f"no summary.json in {args.output}")
        return EXIT_USAGE
    print(json.dumps(s, indent=1) if args.json else format_summary(s))
    return EXIT_OK


def format_summary(s: dict) -> str:
    w, r, d = s["warcs"], s["records"], s["docs"]
    lines = [
        f"output        {s['output']}  ({'complete' if s['complete'] else 'incomplete: rerun to resume'})",
        f"WARCs         {w['committed']:,} committed, {w['failed']:,} failed, {w['pending']:,} pending"
        f" of {w['total']:,}",
        f"records       {r['read']:,} read, {r['responses']:,} responses, {r['html_200']:,} HTML 200",
    ]
    for reason, n in r["skipped"].items():
        lines.append(f"  skipped     {n:>10,}  {reason}")
    lines.append(f"documents     {d['in']:,} in, {d['kept']:,} kept")
    for reason, n in d["dropped"].items():
        lines.append(f"  dropped     {n:>10,}  {reason}")
    for reason, n in d.get("tagged", {}).items():
        lines.append(f"  tagged      {n:>10,}  {reason} (kept: tag mode)")
    docs_in = max(1, d["in"])
    costs = ", ".join(f"{k} {v * 1000 / docs_in:.2f}" for k, v in s.get("stage_seconds", {}).items())
    if costs:
        lines.append(f"stage cost    ms per input document: {costs}")
    dd = s["this_run"].get("dedup")
    if dd:
        per_doc = f", {dd['bytes_per_doc']:,.0f} B/doc" if dd.get("bytes_per_doc") else ""
        lines.append(f"dedup index   {dd['indexed_docs']:,} documents in {dd['shards']} LSH shard(s){per_doc}"
                     + (f", {dd['restarts']} shard restart(s)" if dd.get("restarts") else "")
                     + (f", {dd['prior_docs']:,} of them from dedup.against" if dd.get("prior_docs") else ""))
    lines.append(f"tokens        {s['tokens']:,} in {s['shards']:,} shards")
    if s.get("storage", {}).get("retries"):
        lines.append(f"storage       {s['storage']['retries']:,} read requests retried"
                     f" ({s['storage']['throttled']:,} after SlowDown)")
    run = s["this_run"]
    if "docs_per_second" in run:
        lines.append(
            f"this run      {run['processed']:,} WARCs in {run['wall_seconds']:.1f} s: "
            f"{run['docs_per_second']:,.0f} docs/s, {run['tokens_per_second']:,.0f} tokens/s, "
            f"{run['mb_per_second']:.1f} MB/s read, {run['workers']} workers"
        )
    if run.get("resumed_at"):
        lines.append(f"resumed       at WARC #{run['resumed_at']} (earlier WARCs were already committed)")
    for f in s["failed"][:20]:
        lines.append(f"FAILED        {f['warc']} after {f['attempts']} attempts: {f['error']}")
    if len(s["failed"]) > 20:
        lines.append(f"FAILED        ... and {len(s['failed']) - 20} more (see summary.json)")
    return "\n".join(lines)
