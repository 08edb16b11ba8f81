"""In-process benchmark of the document chain: per-stage cost on one core and the bare bound.

Runs the same ``WarcProcessor`` the workers run over the given WARCs (several repeats after a
warm-up, medians reported), then tokenizes and packs the kept documents, and reports each
stage's cost per input document and the documents/s/core the pipeline could reach with zero
orchestration overhead (the *bare bound*).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections import Counter
from dataclasses import asdict
from pathlib import Path

import numpy as np

from raycorpus import counts as ck
from raycorpus.cli.common import EXIT_OK, err
from raycorpus.cli.plan import CopyCounts
from raycorpus.config import Config, load_config
from raycorpus.ingest.storage import Storage
from raycorpus.output.shards import ShardPacker, stage_tokens
from raycorpus.process.dedup.index import Deduplicator, Layout, LocalShards
from raycorpus.process.pipeline import WarcProcessor
from raycorpus.process.tokenize import TokenEncoder, keep_documents


def bench_chain(cfg: Config, warcs: list[str], repeats: int = 3, copy_warcs: int | None = None) -> dict:
    """``copy_warcs``: WARCs in one copy of the input when ``warcs`` lists it several times (default: all)."""
    copy_warcs = copy_warcs or len(warcs)
    encoder = TokenEncoder(cfg.tokenizer)
    proc = WarcProcessor(cfg, encoder=encoder)  # tokenizes what passes the filters, as the workers do
    layout = Layout.from_config(cfg.dedup, 1)
    runs: list[dict[str, float]] = []
    counts: Counter = Counter()
    first_copy = CopyCounts.of(0, counts, 0)
    tokens = np.zeros(0, encoder.dtype)
    for r in range(repeats + 1):  # the first pass is a warm-up
        stage_ns: Counter = Counter()
        counts = Counter()
        encoded = []
        dedup = Deduplicator(layout, cfg.dedup.threshold, LocalShards(layout)) if cfg.dedup.enabled else None
        t0 = time.perf_counter()
        for i, url in enumerate(warcs):
            res = proc.process(i, url)
            counts.update(res.counts)
            counts[ck.BYTES_READ] += res.bytes_read
            keep = None
            if dedup is not None:  # the committer's share: LSH query, verification, insert
                t = time.perf_counter_ns()
                decision, _ = dedup.decide(i, res.content_hashes, res.signatures, res.url_hashes)
                stage_ns["dedup"] += time.perf_counter_ns() - t
                keep = decision.keep
                decision.count_into(counts, tag=False)
            encoded.append(keep_documents(res.tokens, res.lengths, keep))
            if i + 1 == copy_warcs:
                first_copy = CopyCounts.of(copy_warcs, counts, sum(len(t) for t, _ in encoded))
        wall = time.perf_counter() - t0
        stage_ns.update({k.name: v for k, v in ck.of_kind(counts, ck.Kind.TIME).items()})
        tokens = np.concatenate([t for t, _ in encoded]) if encoded else tokens
        lengths = np.concatenate([n for _, n in encoded]) if encoded else np.zeros(0, np.uint64)
        with tempfile.TemporaryDirectory() as out:
            packer = ShardPacker(Storage(), out, cfg.output.shard_size_tokens, encoder.meta())
            t = time.perf_counter_ns()  # staging (the worker's part), placing, closing (a task off the head)
            packer.add(0, "bench", stage_tokens(packer.storage, out, 0, tokens, lengths))
            packer.finish()
            stage_ns["pack"] = time.perf_counter_ns() - t
        stage_ns["chain_wall"] = int(wall * 1e9)
        if r:
            runs.append({k: float(v) for k, v in stage_ns.items()})
    docs_in = max(1, counts[ck.HTML])
    median_ns = {k: statistics.median(run.get(k, 0.0) for run in runs) for k in runs[0]}
    per_doc_ms = {k: v / docs_in / 1e6 for k, v in median_ns.items() if k != "chain_wall"}
    total_ms = sum(per_doc_ms.values())
    return {
        "warcs": len(warcs),
        "repeats": repeats,
        "records": counts[ck.RECORDS],
        "docs_in": counts[ck.HTML],
        "docs_kept": counts[ck.KEPT],
        "docs_indexed": counts[ck.DEDUP_INDEXED],  # kept + near duplicates (dedup.index_duplicates)
        "tokens": len(tokens),
        "bytes_read": counts[ck.BYTES_READ],
        "ms_per_doc": {k: round(v, 4) for k, v in per_doc_ms.items()},
        "ms_per_doc_total": round(total_ms, 4),
        "bare_bound_docs_per_second_per_core": round(1000 / total_ms, 1) if total_ms else None,
        "chain_wall_seconds": round(median_ns["chain_wall"] / 1e9, 3),
        "drops": {k.label: v for k, v in ck.of_kind(counts, ck.Kind.DROP).items()},
        "first_copy": asdict(first_copy),
    }


def bench_formats(n_tokens: int = 20_000_000, repeats: int = 3, ctx_len: int = 2048) -> dict:
    """Tokens/s of each trainer-format writer on one core (a closed shard of ``n_tokens`` to local disk)."""
    import numpy as np

    from raycorpus.output.formats import TOKEN_FORMATS, write_formats
    from raycorpus.output.shards import canonical_json

    rng = np.random.default_rng(0)
    tokens = rng.integers(1, 50_000, n_tokens, dtype=np.uint16)
    ends = np.cumsum(rng.integers(100, 3000, n_tokens // 100, dtype=np.uint64))
    ends = np.append(ends[ends < n_tokens], np.uint64(n_tokens))
    meta = {"tokenizer": "bench", "tokenizer_sha256": "0" * 64, "dtype": "<u2", "eos_id": 0}
    out = {}
    for fmt in TOKEN_FORMATS:
        times = []
        for _ in range(repeats + 1):
            with tempfile.TemporaryDirectory() as d:
                t = time.perf_counter()
                write_formats(Storage(), d, "shard-000000", (fmt,), tokens, ends, {"sources": []}, meta, ctx_len,
                              canonical_json)
                times.append(time.perf_counter() - t)
        out[fmt] = round(n_tokens / statistics.median(times[1:]) / 1e6, 1)
    return {"tokens": n_tokens, "million_tokens_per_second": out}


def format_bench(b: dict, formats: dict | None = None) -> str:
    lines = [
        f"input: {b['warcs']} WARCs, {b['records']:,} records, {b['docs_in']:,} HTML docs in, "
        f"{b['docs_kept']:,} kept, {b['tokens']:,} tokens (median of {b['repeats']} runs after a warm-up)",
        *_copy_line(b),
        f"{'stage':<22}{'ms/doc':>10}{'share':>8}",
    ]
    total = b["ms_per_doc_total"] or 1
    for k, v in b["ms_per_doc"].items():
        lines.append(f"{k:<22}{v:>10.3f}{v / total:>8.1%}")
    lines.append(f"{'total':<22}{b['ms_per_doc_total']:>10.3f}")
    lines.append(f"bare bound: {b['bare_bound_docs_per_second_per_core']:,} documents/s/core")
    if formats:
        f = formats
        lines.append(f"format writers ({f['tokens']:,}-token shard, one core, local disk): " + ", ".join(
            f"{k} {v:,.0f} M tokens/s" for k, v in f["million_tokens_per_second"].items()))
    return "\n".join(lines)


def _copy_line(b: dict) -> list[str]:
    """One copy's funnel, when the input is listed several times (a JSON from before it was recorded: none)."""
    first = b.get("first_copy")
    if not first or first["warcs"] == b["warcs"]:
        return []
    c = CopyCounts(**first)
    return [f"one copy of the input ({c.warcs} WARCs, listed {b['warcs'] // c.warcs} times): {c.docs_in:,} HTML docs "
            f"in, {c.docs_reaching_dedup:,} reaching dedup ({c.docs_reaching_dedup / max(1, c.docs_in):.3f} per "
            f"page), {c.docs_kept:,} kept, {c.docs_indexed:,} indexed"]


def cmd_bench(args: argparse.Namespace) -> int:
    import itertools

    from raycorpus.ingest.manifest import iter_input_urls
    from raycorpus.process.prepare import prepare_tokenizer

    cfg = load_config(args.config)
    token_meta = prepare_tokenizer(cfg).meta()
    # WARCs named here go into manifests the benchmarks write elsewhere: relative paths would not resolve there
    warcs = [w if "://" in w else str(Path(w).resolve()) for w in args.warc] or list(itertools.islice(
        iter_input_urls(cfg.input, Storage(cfg.storage)), args.warcs))
    if args.commit_path:
        return _bench_commit_path(args, cfg, token_meta, warcs)
    if args.wet:
        return _bench_wet(args, cfg, warcs)
    if args.chain:
        return _bench_chain_ratio(args, cfg, warcs)
    if args.split:
        from raycorpus.cli.bench_split import bench_split, format_split

        result = {"split": bench_split(cfg, warcs[0], token_meta, repeats=args.repeats)}
        print(json.dumps(result, indent=1) if args.json else format_split(result["split"]))
        return EXIT_OK
    if args.startup:
        from raycorpus.cli.bench_startup import bench_startup, format_startup

        result = {"startup": bench_startup(cfg, warcs, repeats=args.repeats)}
        print(json.dumps(result, indent=1) if args.json else format_startup(result["startup"]))
        return EXIT_OK
    workers = [int(w) for w in args.workers.split(",") if w]
    if args.no_pipeline or not workers:
        result = {"chain": bench_chain(cfg, warcs, repeats=args.repeats)}
    else:
        from raycorpus.cli.bench_pipeline import bench_all

        result = bench_all(cfg, warcs, token_meta, copies=args.copies, workers=tuple(workers), repeats=args.repeats)
    result["formats"] = bench_formats(repeats=args.repeats)
    from raycorpus.cli.bench_chain import bench_chain_ratio, format_chain_ratio

    result["chain_ratio"] = bench_chain_ratio(cfg, warcs, repeats=args.repeats)
    if args.save:
        Path(args.save).write_text(json.dumps(result, indent=1) + "\n")
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        print(format_bench(result["chain"], result["formats"]))
        if "pipeline" in result:
            from raycorpus.cli.bench_pipeline import format_pipeline

            print(format_pipeline(result))
        print(format_chain_ratio(result["chain_ratio"]))
    return EXIT_OK


def _bench_commit_path(args: argparse.Namespace, cfg, token_meta: dict, warcs: list[str]) -> int:
    from raycorpus.runtime.replay import bench_commit_path, format_commit_path

    result = {"commit_path": bench_commit_path(
        cfg, token_meta, warcs, replayed=args.replayed, pages_per_warc=args.pages_per_warc, dup_rate=args.dup_rate,
        repeats=args.repeats, worker_ms=args.worker_ms)}
    if args.save:
        Path(args.save).write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1) if args.json else format_commit_path(result["commit_path"]))
    return EXIT_OK


SHARED_WET_PAIR = "../shared/data/warc/whirlwind/whirlwind.warc.gz,../shared/data/warc/whirlwind/whirlwind.warc.wet.gz"


def _bench_wet(args: argparse.Namespace, cfg, warcs: list[str]) -> int:
    from raycorpus.cli.bench_wet import bench_wet_speed, format_wet, wet_quality

    pairs = [tuple(p.split(",", 1)) for p in (args.wet_pair or [SHARED_WET_PAIR])]
    missing = [f for pair in pairs for f in pair if not Path(f).is_file()]
    if missing:
        err(f"no WARC/WET pair at {missing[0]}: the text comparison is skipped (--wet-pair WARC,WET)")
    result = {"wet": bench_wet_speed(cfg, warcs, repeats=args.repeats)}
    result["wet_quality"] = None if missing else wet_quality(cfg, pairs)
    if args.save:
        Path(args.save).write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1) if args.json else format_wet(result["wet"], result["wet_quality"]))
    return EXIT_OK


def _bench_chain_ratio(args: argparse.Namespace, cfg, warcs: list[str]) -> int:
    from raycorpus.cli.bench_chain import bench_chain_ratio, format_chain_ratio

    result = {"chain_ratio": bench_chain_ratio(cfg, warcs, repeats=args.repeats)}
    if args.save:
        Path(args.save).write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1) if args.json else format_chain_ratio(result["chain_ratio"]))
    return EXIT_OK
