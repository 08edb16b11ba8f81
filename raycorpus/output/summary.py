"""The run summary: every number a user sees, derived from the ledger (so it survives restarts)."""

from __future__ import annotations

from raycorpus import counts as ck
from raycorpus.config import Config
from raycorpus.output.ledger import LedgerState


def build_summary(cfg: Config, state: LedgerState, total_warcs: int, run_stats: dict) -> dict:
    t = state.totals
    drops, skips, tagged, charsets, stage_ns = (
        {k.label: v for k, v in ck.of_kind(t, kind).items()}
        for kind in (ck.Kind.DROP, ck.Kind.SKIP, ck.Kind.TAG, ck.Kind.CHARSET, ck.Kind.TIME))
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
            "read": t[ck.RECORDS],
            "responses": t[ck.RESPONSES],
            "html_200": t[ck.HTML],
            "skipped": skips,
        },
        "docs": {"in": t[ck.HTML], "kept": t[ck.KEPT], "dropped": drops, "tagged": tagged},
        # worker CPU time per stage, summed over committed WARCs
        "stage_seconds": {stage: round(ns / 1e9, 3) for stage, ns in stage_ns.items()},
        "charset_sources": charsets,
        "tokens": state.packer.tokens,
        "shards": state.packer.shards_closed,
        "bytes_read": t[ck.BYTES_READ],
        # storage requests the workers retried while reading committed WARCs (throttled: after SlowDown / 503 / 429)
        "storage": {"retries": t[ck.STORAGE_RETRIES], "throttled": t[ck.STORAGE_THROTTLED]},
        "failed": state.failed,
        "this_run": dict(run_stats),
    }
    if wall > 0 and run_stats.get("processed"):
        summary["this_run"]["docs_per_second"] = round(run_stats["docs"] / wall, 1)
        summary["this_run"]["tokens_per_second"] = round(run_stats["tokens"] / wall, 1)
        summary["this_run"]["mb_per_second"] = round(run_stats.get("bytes_read", 0) / wall / 1e6, 2)
    return summary
