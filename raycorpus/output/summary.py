"""The run summary: every number a user sees, derived from the ledger (so it survives restarts)."""

from __future__ import annotations

from raycorpus.config import Config
from raycorpus.output.ledger import LedgerState


def build_summary(cfg: Config, state: LedgerState, total_warcs: int, run_stats: dict) -> dict:
    t = state.totals
    drops = {k.removeprefix("drop:"): v for k, v in sorted(t.items()) if k.startswith("drop:")}
    skips = {k.removeprefix("skip:"): v for k, v in sorted(t.items()) if k.startswith("skip:")}
    tagged = {k.removeprefix("tag:"): v for k, v in sorted(t.items()) if k.startswith("tag:")}
    stage_seconds = {k.removeprefix("ns:"): round(v / 1e9, 3) for k, v in sorted(t.items()) if k.startswith("ns:")}
    wall = run_stats.get("wall_seconds") or 0.0
    summary = {
        "output": cfg.output.path,
        "complete": state.complete,
        "warcs": {
            "total": total_warcs,
            "committed": state.committed,
            "failed": len(state.failed),
            "pending": max(0, total_warcs - state.next_ordinal),
        },
        "records": {
            "read": t.get("records", 0),
            "responses": t.get("responses", 0),
            "html_200": t.get("html", 0),
            "skipped": skips,
        },
        "docs": {"in": t.get("html", 0), "kept": t.get("kept", 0), "dropped": drops, "tagged": tagged},
        "stage_seconds": stage_seconds,  # worker CPU time per stage, summed over committed WARCs
        "charset_sources": {k.removeprefix("charset:"): v for k, v in sorted(t.items())
                            if k.startswith("charset:")},
        "tokens": state.packer.tokens,
        "shards": state.packer.shards_closed,
        "bytes_read": t.get("bytes_read", 0),
        # storage requests the workers retried while reading committed WARCs (throttled: after SlowDown / 503 / 429)
        "storage": {"retries": t.get("storage_retries", 0), "throttled": t.get("storage_throttled", 0)},
        "failed": state.failed,
        "this_run": dict(run_stats),
    }
    if wall > 0 and run_stats.get("processed"):
        summary["this_run"]["docs_per_second"] = round(run_stats["docs"] / wall, 1)
        summary["this_run"]["tokens_per_second"] = round(run_stats["tokens"] / wall, 1)
        summary["this_run"]["mb_per_second"] = round(run_stats.get("bytes_read", 0) / wall / 1e6, 2)
    return summary


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
                     + (f", {dd['restarts']} shard restart(s)" if dd.get("restarts") else ""))
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
