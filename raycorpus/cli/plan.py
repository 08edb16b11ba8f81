"""Capacity planner (``raycorpus plan``): a full crawl's cost from measured per-stage rates.

Input: a ``raycorpus bench --save`` JSON (per-stage cost per input document, documents,
kept documents, tokens and bytes per WARC of the benchmarked input, and the pipeline's
measured efficiency) and the crawl's size (a manifest, or ``--warcs``). A crawl WARC is
taken to hold ``warc_bytes / bench bytes-per-WARC`` times the benchmarked WARC's documents
(Common Crawl: ~1 GB and ~30-40 k HTML pages per WARC), with the same funnel.

Model: CPU seconds per WARC = documents x the bound's ms per document; wall time =
WARCs x CPU seconds / (workers x efficiency); LSH memory = indexed documents (kept, and near
duplicates with ``dedup.index_duplicates``, as the bench counted them) x bytes per indexed
document (tables + signature store) / shards; output = tokens x bytes per token
(+ one copy per extra token format); S3 = one streamed GET per WARC plus retries
(``read_requests_per_warc``), spread over the run.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from raycorpus.cli.common import EXIT_OK, EXIT_USAGE, err

TABLE_BYTES_PER_DOC = 270  # 14 band keys + content hash + URL key (a kept document; an indexed near duplicate
# inserts its band keys only); measured 240 presized, at most 266.9 grown (the max over 100 k-2 M docs, at 452 k;
# 241.5 at 1 M) B per indexed document (20 % near copies), uint32 values, growth 1.25: load 0.64-0.8
STORE_BYTES_PER_DOC = 200  # id + the 192-byte OPH sketch (768 x 2 bits, or 1536 x 1; 8 with verify off)
SEGMENT_BYTES_PER_DOC = 396  # a shard's files: 16 keys x (8 + 4) + docno 4 + id 8 + 192 (sketch)
RECORD_BYTES_PER_DOC = 665  # the per-WARC dedup record: id 8 + hash 8 + URL key 8 + 112 x 4 + 192 (sketch) + near 1
# indexed documents: the kept ones and (dedup.index_duplicates, the default) the near duplicates
S3_GET_LIMIT = 5500  # S3's documented GET/HEAD rate per prefix per second; crawl-data is one prefix per crawl


def plan(bench: dict, *, warcs: int, workers: int, shards: int = 1, warc_bytes: float | None = None,
         efficiency: float | None = None, token_bytes: int = 2, extra_formats: int = 0, verify: bool = True,
         read_requests_per_warc: float = 1.2, replay: dict | None = None, nodes: int | None = None,
         node_memory: float = 64 * 2**30, prior_docs: int = 0) -> dict:
    """``prior_docs``: documents the earlier builds of ``dedup.against`` indexed; the shards load them before
    this build's first WARC, so they count in the LSH memory and in what each shard reads at start."""
    chain = bench["chain"]
    n_bench = max(1, bench.get("input_warcs", chain["warcs"]) * bench.get("copies", 1))
    bytes_per_warc = chain.get("bytes_read", 0) / max(1, chain["warcs"])
    scale = warc_bytes / bytes_per_warc if warc_bytes and bytes_per_warc else 1.0
    # the bench lists its input `copies` times: copies after the first are exact duplicates, so what survives
    # dedup is counted per distinct input WARC
    distinct = max(1, bench.get("input_warcs", chain["warcs"]))
    docs_per_warc = chain["docs_in"] / chain["warcs"] * scale
    kept_per_warc = chain["docs_kept"] / distinct * scale
    # the index holds what the bench's dedup indexed (kept documents, and near duplicates with
    # dedup.index_duplicates); a bench JSON from before it said so: the kept ones
    indexed_per_warc = chain.get("docs_indexed", chain["docs_kept"]) / distinct * scale
    tokens_per_warc = chain["tokens"] / distinct * scale
    cpu_s_per_warc = docs_per_warc * chain["ms_per_doc_total"] / 1000
    measured_eff = None
    pipe = bench.get("pipeline", {})
    if pipe:
        best = max(pipe, key=int)
        measured_eff = pipe[best].get("efficiency")
    eff = efficiency or measured_eff or 0.85
    wall_s = warcs * cpu_s_per_warc / (workers * eff)
    kept = kept_per_warc * warcs
    indexed = indexed_per_warc * warcs + prior_docs
    per_doc = TABLE_BYTES_PER_DOC + (STORE_BYTES_PER_DOC if verify else 8)
    tokens = tokens_per_warc * warcs
    out = {
        "warcs": warcs,
        "workers": workers,
        "efficiency": round(eff, 3),
        "per_warc": {
            "docs_in": round(docs_per_warc),
            "docs_kept": round(kept_per_warc),
            "tokens": round(tokens_per_warc),
            "cpu_seconds": round(cpu_s_per_warc, 2),
            "wall_seconds_per_worker": round(cpu_s_per_warc / eff, 2),
        },
        "core_hours": round(warcs * cpu_s_per_warc / eff / 3600, 1),
        "wall_hours": round(wall_s / 3600, 2),
        "docs_kept": round(kept),
        "docs_indexed": round(indexed),
        "docs_indexed_prior": prior_docs,
        "tokens": round(tokens),
        "output_bytes": round(tokens * token_bytes * (1 + extra_formats)),
        "lsh_shards": shards,
        "lsh_bytes_per_shard": round(indexed * per_doc / shards),
        "s3_get_per_second": round(warcs * read_requests_per_warc / wall_s, 2) if wall_s else None,
        "read_bytes_per_second": round(warcs * (warc_bytes or bytes_per_warc) / wall_s) if wall_s else None,
        "warnings": [],
    }
    if out["s3_get_per_second"] and out["s3_get_per_second"] > S3_GET_LIMIT / 10:
        out["warnings"].append(
            f"{out['s3_get_per_second']:,.0f} GET/s against one bucket prefix: the commoncrawl bucket answers "
            f"SlowDown well below S3's {S3_GET_LIMIT:,}/s under shared load; cap storage.max_concurrency or workers")
    if out["lsh_bytes_per_shard"] > 64 * 2**30:
        need = math.ceil(indexed * per_doc / (32 * 2**30))
        out["warnings"].append(f"{out['lsh_bytes_per_shard'] / 2**30:,.0f} GiB per LSH shard: use dedup.shards >= "
                               f"{need} (32 GiB each)")
    out["index"] = _index(indexed, per_doc, shards, nodes, node_memory, out["warnings"])
    reaching = (chain["docs_kept"] + sum(n for k, n in chain.get("drops", {}).items() if k.startswith("dedup:")))
    # the workers stage every document that reaches dedup (duplicates too); closing tasks read them back once
    staged = tokens * token_bytes * reaching / max(1, chain["docs_kept"])
    out["staged_bytes_per_second"] = round(staged / wall_s) if wall_s else None
    out["head"] = _head(replay, reaching / distinct * scale, warcs / wall_s if wall_s else 0.0, cpu_s_per_warc / eff)
    if pipe and str(workers) in pipe and n_bench:
        # predict the measured run from the *other* run's efficiency (when there is one): a real test of the model
        other = [k for k in pipe if k != str(workers)]
        e = pipe[other[0]]["efficiency"] if other else eff
        measured = pipe[str(workers)]["wall_seconds"] / n_bench
        predicted = chain["docs_in"] / chain["warcs"] * chain["ms_per_doc_total"] / 1000 / (workers * e)
        out["check"] = {"predicted_seconds_per_warc": round(predicted, 3), "measured_seconds_per_warc":
                        round(measured, 3), "ratio": round(predicted / measured, 3)}
    return out


def _index(indexed: float, per_doc: int, shards: int, nodes: int | None, node_memory: float, warnings: list) -> dict:
    """The LSH index in memory (per shard, per node, shards spread evenly) and on storage."""
    per_shard = indexed * per_doc / shards
    out = {
        "bytes_per_doc": per_doc,
        "bytes_per_shard": round(per_shard),
        "files_bytes": round(indexed * SEGMENT_BYTES_PER_DOC),  # every shard's files (the "snapshots")
        "records_bytes": round(indexed * RECORD_BYTES_PER_DOC),  # the per-WARC dedup records
        "resume_read_per_shard": round(indexed * SEGMENT_BYTES_PER_DOC / shards),  # its own files only
        "resume_read_per_shard_before": round(indexed * RECORD_BYTES_PER_DOC),  # 0.1: every record, by every shard
    }
    if nodes:
        out["bytes_per_node"] = round(per_shard * math.ceil(shards / nodes))
        if per_shard > 0.7 * node_memory:
            need = math.ceil(indexed * per_doc / (0.5 * node_memory))
            warnings.append(f"an LSH shard needs {per_shard / 2**30:,.1f} GiB, more than 70 % of a node's "
                            f"{node_memory / 2**30:,.0f} GiB: use dedup.shards >= {need}")
        elif out["bytes_per_node"] > 0.5 * node_memory:
            warnings.append(f"{out['bytes_per_node'] / 2**30:,.1f} GiB of LSH shards per node leave little of its "
                            f"{node_memory / 2**30:,.0f} GiB to the workers: add nodes or shards")
    return out


def _head(replay: dict | None, reaching_per_warc: float, warcs_per_second: float, worker_s_per_warc: float) -> dict:
    """Head CPU (driver + packer) from the replay benchmark's cost per document reaching dedup."""
    if not replay:
        return {}
    model = replay["model"]
    cpu_s_per_warc = model["ms_per_warc"] / 1000 + model["us_per_doc"] * reaching_per_warc / 1e6
    return {
        "us_per_doc_at_dedup": replay["median"]["head_cpu_us_per_doc_at_dedup"],
        "model": model,
        "cpu_seconds_per_warc": round(cpu_s_per_warc, 4),
        "cores": round(warcs_per_second * cpu_s_per_warc, 2),
        "workers_per_core": round(worker_s_per_warc / cpu_s_per_warc) if cpu_s_per_warc else None,
        "model_check_ratio": replay.get("check", {}).get("ratio"),
    }


def _index_line(i: dict) -> str:
    gb = {k: v / 1e9 for k, v in i.items() if k != "bytes_per_doc"}
    return (f"index files   {gb['files_bytes']:,.1f} GB of shard files + {gb['records_bytes']:,.1f} GB of per-WARC "
            f"records; a resume reads {gb['resume_read_per_shard']:,.2f} GB per shard (its own files; before 0.2 "
            f"every shard read all records, {gb['resume_read_per_shard_before']:,.1f} GB)")


def format_plan(p: dict) -> str:
    w = p["per_warc"]
    lines = [
        f"per WARC      {w['docs_in']:,} docs in, {w['docs_kept']:,} kept, {w['tokens']:,} tokens, "
        f"{w['cpu_seconds']:,.1f} CPU s ({w['wall_seconds_per_worker']:,.1f} s per worker at efficiency "
        f"{p['efficiency']})",
        f"crawl         {p['warcs']:,} WARCs: {p['core_hours']:,.0f} core-hours; {p['wall_hours']:,.1f} h wall "
        f"on {p['workers']:,} workers",
        f"output        {p['docs_kept']:,} documents, {p['tokens']:,} tokens, {p['output_bytes'] / 1e9:,.1f} GB",
        f"dedup         {p['docs_indexed']:,} documents indexed"
        + (f" ({p['docs_indexed_prior']:,} of them by earlier builds, dedup.against)" if p["docs_indexed_prior"]
           else "") + ", "
        f"{p['lsh_bytes_per_shard'] / 2**30:,.2f} GiB per LSH shard x {p['lsh_shards']}"
        + (f", {p['index']['bytes_per_node'] / 2**30:,.1f} GiB per node" if "bytes_per_node" in p["index"] else ""),
        _index_line(p["index"]),
        f"S3            {p['s3_get_per_second']:,.1f} GET/s, {p['read_bytes_per_second'] / 1e6:,.0f} MB/s read; "
        f"staged tokens {p['staged_bytes_per_second'] / 1e6:,.0f} MB/s written by the workers and read back by the "
        "shard-closing tasks",
    ]
    h = p.get("head")
    if h:
        m = h["model"]
        lines.append(f"head          {m['ms_per_warc']} ms per WARC + {m['us_per_doc']} us per document reaching "
                     f"dedup (replay): {h['cpu_seconds_per_warc']:.3f} CPU s per WARC, {h['cores']:,.2f} head cores; "
                     f"one core feeds ~{h['workers_per_core']:,} workers (model check ratio {h['model_check_ratio']})")
    if "check" in p:
        c = p["check"]
        lines.append(f"check         predicted {c['predicted_seconds_per_warc']} s per benchmarked WARC at "
                     f"{p['workers']} workers, measured {c['measured_seconds_per_warc']} (ratio {c['ratio']})")
    lines += [f"WARNING       {x}" for x in p["warnings"]]
    return "\n".join(lines)


def cmd_plan(args: argparse.Namespace) -> int:
    from raycorpus.ingest.manifest import count_manifest
    from raycorpus.ingest.storage import Storage
    from raycorpus.process.dedup.prior import PriorError, indexed_docs

    try:
        bench = json.loads(Path(args.bench).read_text())
        bench["chain"]["ms_per_doc_total"]
    except (OSError, ValueError, KeyError, TypeError):
        err(f"{args.bench}: not a `raycorpus bench --save` JSON")
        return EXIT_USAGE
    warcs = args.warcs or (count_manifest(args.manifest, None, Storage()) if args.manifest else 0)
    if not warcs:
        err("give --manifest (a warc.paths[.gz]) or --warcs N")
        return EXIT_USAGE
    try:
        replay = json.loads(Path(args.replay).read_text())["commit_path"] if args.replay else None
    except (OSError, ValueError, KeyError, TypeError):
        err(f"{args.replay}: not a `raycorpus bench --commit-path --save` JSON")
        return EXIT_USAGE
    try:
        prior_docs = sum(indexed_docs(Storage(), out) for out in args.against or [])
    except PriorError as e:
        err(str(e))
        return EXIT_USAGE
    p = plan(bench, warcs=warcs, workers=args.workers, shards=args.shards, warc_bytes=args.warc_bytes,
             efficiency=args.efficiency, extra_formats=args.extra_formats, replay=replay, nodes=args.nodes,
             node_memory=args.node_memory * 2**30, prior_docs=prior_docs)
    print(json.dumps(p, indent=1) if args.json else format_plan(p))
    return EXIT_OK
