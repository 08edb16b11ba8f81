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

The funnel is that of one copy of the bench input: the pipeline bench lists its input ``copies`` times, and
every later copy's documents reach dedup only to be dropped there as duplicates of the first copy's. Head
(``--replay``): CPU seconds per crawl WARC = the replay's ms per WARC + its us per document reaching dedup x
the documents reaching dedup per crawl WARC (the bench's per-copy share of pages, at the crawl's pages per
WARC). One head core feeds the workers that take as long per WARC as the head; the head needs
workers / that many cores, and past one core it, not the workers, sets the pace.
"""

from __future__ import annotations

import argparse
import json
import math
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

from raycorpus import counts as ck
from raycorpus.cli.common import EXIT_OK, EXIT_USAGE, err

TABLE_BYTES_PER_DOC = 270  # 14 band keys + content hash + URL key (a kept document; an indexed near duplicate
# inserts its band keys only); measured 240 presized, at most 266.9 grown (the max over 100 k-2 M docs, at 452 k;
# 241.5 at 1 M) B per indexed document (20 % near copies), uint32 values, growth 1.25: load 0.64-0.8
STORE_BYTES_PER_DOC = 200  # id + the 192-byte OPH sketch (768 x 2 bits, or 1536 x 1; 8 with verify off)
SEGMENT_BYTES_PER_DOC = 396  # a shard's files: 16 keys x (8 + 4) + docno 4 + id 8 + 192 (sketch)
RECORD_BYTES_PER_DOC = 665  # the per-WARC dedup record before 0.2: id 8 + hash 8 + URL key 8 + 112 x 4 + 192 + near 1
PARAGRAPH_KEY_BYTES = 8.5  # dedup.paragraphs: a key in a shard's sorted array, and up to 1/16 more while inserts wait
KEYS_BYTES_PER_DOC = 656  # a WARC's keys file, per document reaching dedup: hash 8 + URL key 8 + (112 + 48) x 4
# indexed documents: the kept ones and (dedup.index_duplicates, the default) the near duplicates
S3_GET_LIMIT = 5500  # S3's documented GET/HEAD rate per prefix per second; crawl-data is one prefix per crawl


# the head's work (driver + packer) counted as one core, as the replay's "one head core feeds" does: most of it is
# the driver's, one Python process (the packer's share, in its own process, could run beside it: the safe side)
HEAD_CORES = 1.0
SHARD_CHOICES = (4, 8, 16, 32, 64)  # shard counts the plan compares, when the replay measured the cost per shard


@dataclass(frozen=True)
class CopyCounts:
    """The funnel of one copy of the bench input (its first ``warcs`` listed WARCs). The pipeline bench lists its
    input several times; every later copy brings the same documents to dedup and has them all dropped there (its
    kept ones as URL duplicates, the rest as exact or near ones; its near ones are indexed again), so the whole
    list's counts of what reaches dedup and what it indexes are not one copy's."""
    warcs: int
    docs_in: int
    docs_reaching_dedup: int  # kept + dropped by dedup: every document the commit path decides
    docs_kept: int
    docs_indexed: int
    tokens: int

    @classmethod
    def of(cls, warcs: int, counts: Counter, tokens: int) -> CopyCounts:
        dedup_drops = sum(n for k, n in ck.of_kind(counts, ck.Kind.DROP).items() if k.name == "dedup")
        return cls(warcs=warcs, docs_in=counts[ck.HTML], docs_reaching_dedup=counts[ck.KEPT] + dedup_drops,
                   docs_kept=counts[ck.KEPT], docs_indexed=counts[ck.DEDUP_INDEXED], tokens=tokens)


@dataclass(frozen=True)
class Funnel:
    """Per benchmarked WARC of one copy of the bench input: bytes read and documents at each step."""
    bytes_read: float
    docs_in: float
    docs_reaching_dedup: float
    docs_kept: float
    docs_indexed: float
    tokens: float
    indexed_over_copies: bool = False  # an older bench JSON: its indexed documents include every copy's

    @property
    def reaching_dedup_per_page(self) -> float:
        return self.docs_reaching_dedup / self.docs_in if self.docs_in else 0.0

    @classmethod
    def of_bench(cls, bench: dict) -> Funnel:
        chain = bench["chain"]
        listed = max(1, chain["warcs"])
        bytes_read = chain.get("bytes_read", 0) / listed
        if "first_copy" in chain:
            c = CopyCounts(**chain["first_copy"])
            n = max(1, c.warcs)
            return cls(bytes_read, c.docs_in / n, c.docs_reaching_dedup / n, c.docs_kept / n, c.docs_indexed / n,
                       c.tokens / n)
        # a bench JSON from before first_copy: every copy brings the same documents to dedup, so the whole list's
        # (kept + dedup drops) / listed WARCs is one copy's; what dedup keeps comes from the first copy alone
        distinct = max(1, bench.get("input_warcs", listed))
        dedup_drops = sum(n for k, n in chain.get("drops", {}).items() if k.startswith("dedup:"))
        indexed = chain.get("docs_indexed", chain["docs_kept"])
        return cls(bytes_read, chain["docs_in"] / listed, (chain["docs_kept"] + dedup_drops) / listed,
                   chain["docs_kept"] / distinct, indexed / distinct, chain["tokens"] / distinct,
                   indexed_over_copies=listed > distinct and indexed > chain["docs_kept"])


@dataclass(frozen=True)
class HeadPlan:
    """The head (driver + packer) at the crawl's WARC size, from the replay's model."""
    ms_per_warc: float
    us_per_doc: float
    model_check_ratio: float | None
    us_per_doc_at_dedup: float  # the replay's measured median
    pages_per_warc: int
    reaching_dedup_per_warc: int
    cpu_seconds_per_warc: float
    cores: float  # at the requested workers
    workers_per_core: int  # the most workers one head core feeds
    limit: str  # "head" or "workers": what sets the pace at the requested workers
    wall_hours_at_head_pace: float | None  # the crawl's wall time when the head limits
    shards: int = 1  # LSH shards planned
    replay_shards: int = 1  # ... and replayed
    ms_per_warc_per_shard: float | None = None  # the head's CPU per WARC and shard beyond the replay's (None: a
    # replay JSON from before it was measured: not counted)
    warcs_per_round: float | None = None  # the rounds the head decides when it has fallen behind (None: as they come,
    # or a replay JSON from before rounds)
    background_cores: float = 0.0  # behind, from a replay that measured its steady state: the head's CPU per second
    # whether WARCs come or not (Ray's timers and polls), beside its work per WARC (in ``cpu_seconds_per_warc``)


def plan(bench: dict, *, warcs: int, workers: int, shards: int = 1, warc_bytes: float | None = None,
         efficiency: float | None = None, token_bytes: int = 2, extra_formats: int = 0, verify: bool = True,
         read_requests_per_warc: float = 1.2, replay: dict | None = None, nodes: int | None = None,
         node_memory: float = 64 * 2**30, prior_docs: int = 0, paragraph_keys: float = 0.0) -> dict:
    """``prior_docs``: documents the earlier builds of ``dedup.against`` indexed; the shards load them before
    this build's first WARC, so they count in the LSH memory and in what each shard reads at start.
    ``paragraph_keys``: with dedup.paragraphs, the distinct paragraph keys each indexed document adds (8.5 bytes
    each in the shards)."""
    chain = bench["chain"]
    n_bench = max(1, bench.get("input_warcs", chain["warcs"]) * bench.get("copies", 1))
    f = Funnel.of_bench(bench)
    scale = warc_bytes / f.bytes_read if warc_bytes and f.bytes_read else 1.0
    docs_per_warc = f.docs_in * scale
    kept_per_warc = f.docs_kept * scale
    # the index holds what the bench's dedup indexed (kept documents, and near duplicates with
    # dedup.index_duplicates); a bench JSON from before it said so: the kept ones
    indexed_per_warc = f.docs_indexed * scale
    tokens_per_warc = f.tokens * scale
    cpu_s_per_warc = docs_per_warc * chain["ms_per_doc_total"] / 1000
    pipe = bench.get("pipeline", {})
    eff = efficiency or (pipe[max(pipe, key=int)].get("efficiency") if pipe else None) or 0.85
    wall_s = warcs * cpu_s_per_warc / (workers * eff)
    kept = kept_per_warc * warcs
    indexed = indexed_per_warc * warcs + prior_docs
    per_doc = TABLE_BYTES_PER_DOC + (STORE_BYTES_PER_DOC if verify else 8) + round(paragraph_keys * PARAGRAPH_KEY_BYTES)
    tokens = tokens_per_warc * warcs
    out = {
        "warcs": warcs,
        "workers": workers,
        "efficiency": round(eff, 3),
        "per_warc": {
            "docs_in": round(docs_per_warc),
            "docs_reaching_dedup": round(f.docs_reaching_dedup * scale),
            "docs_kept": round(kept_per_warc),
            "tokens": round(tokens_per_warc),
            "cpu_seconds": round(cpu_s_per_warc, 2),
            "wall_seconds_per_worker": round(cpu_s_per_warc / eff, 2),
        },
        "reaching_dedup_per_page": round(f.reaching_dedup_per_page, 4),
        "core_hours": round(warcs * cpu_s_per_warc / eff / 3600, 1),
        "wall_hours": round(wall_s / 3600, 2),
        "docs_kept": round(kept),
        "docs_indexed": round(indexed),
        "docs_indexed_prior": prior_docs,
        "paragraph_keys_per_doc": paragraph_keys,
        "tokens": round(tokens),
        "output_bytes": round(tokens * token_bytes * (1 + extra_formats)),
        "lsh_shards": shards,
        "lsh_bytes_per_shard": round(indexed * per_doc / shards),
        "s3_get_per_second": round(warcs * read_requests_per_warc / wall_s, 2) if wall_s else None,
        "read_bytes_per_second": round(warcs * (warc_bytes or f.bytes_read) / wall_s) if wall_s else None,
        "warnings": _warnings(f, warcs * read_requests_per_warc / wall_s if wall_s else 0.0, indexed * per_doc,
                              shards),
    }
    reaching = f.docs_reaching_dedup * scale * warcs
    out["index"] = _index(indexed, reaching, per_doc, shards, nodes, node_memory, out["warnings"])
    # the workers stage every document that reaches dedup (duplicates too); closing tasks read them back once
    staged = tokens * token_bytes * f.docs_reaching_dedup / f.docs_kept if f.docs_kept else 0.0
    out["staged_bytes_per_second"] = round(staged / wall_s) if wall_s else None
    if replay:
        out["head"] = asdict(_head(replay, docs_per_warc, f.reaching_dedup_per_page, workers, cpu_s_per_warc / eff,
                                   warcs, shards))
        if replay["model"].get("ms_per_warc_per_shard") is not None:  # fewer, larger shards: less head time
            out["shard_choices"] = [
                {"shards": n, "bytes_per_shard": round(indexed * per_doc / n),
                 "workers_per_head_core": _head(replay, docs_per_warc, f.reaching_dedup_per_page, workers,
                                                cpu_s_per_warc / eff, warcs, n).workers_per_core}
                for n in SHARD_CHOICES]
    if pipe and str(workers) in pipe and n_bench:
        out["check"] = _check(chain, pipe, workers, eff, n_bench)
    if replay and (replay_check := _replay_check(replay)):
        out["replay_check"] = replay_check
    return out


def _replay_check(replay: dict) -> dict | None:
    """The planner at the replay's own WARC (its pages, its documents reaching dedup, the worker cost per page it
    measured, its shard count) against the most workers per head core the replay measured: how far the planner's
    arithmetic (the head model, the behind and steady scaling, the background) is from the replay it reads. None
    for a replay JSON that does not record its WARC's shape or worker cost."""
    pages, ms_per_page = replay.get("pages_per_warc"), replay.get("worker_ms_per_page")
    measured = (replay.get("steady") or {}).get("workers_per_head_core") or (replay.get("behind") or {}).get(
        "workers_per_head_core") or replay["median"].get("workers_per_head_core")
    if not (pages and ms_per_page and measured):
        return None
    h = _head(replay, pages, replay["reaching_dedup_per_warc"] / pages, workers=1,
              worker_s_per_warc=ms_per_page * pages / 1000, warcs=1)  # (no shard beyond the replay's own)
    return {"pages_per_warc": pages, "worker_ms_per_page": ms_per_page, "shards": h.replay_shards,
            "planned": h.workers_per_core, "measured": round(measured),
            "ratio": round(h.workers_per_core / measured, 3)}


def _warnings(f: Funnel, gets_per_second: float, index_bytes: float, shards: int) -> list[str]:
    out = []
    if gets_per_second > S3_GET_LIMIT / 10:
        out.append(f"{gets_per_second:,.0f} GET/s against one bucket prefix: the commoncrawl bucket answers "
                   f"SlowDown well below S3's {S3_GET_LIMIT:,}/s under shared load; cap storage.max_concurrency or "
                   "workers")
    if index_bytes / shards > 64 * 2**30:
        need = math.ceil(index_bytes / (32 * 2**30))
        out.append(f"{index_bytes / shards / 2**30:,.0f} GiB per LSH shard: use dedup.shards >= {need} (32 GiB each)")
    if f.indexed_over_copies:
        out.append("this bench JSON predates first_copy: its indexed documents include every copy's near duplicates, "
                   "so the LSH figures are an upper bound; run `raycorpus bench` again for exact ones")
    return out


def _check(chain: dict, pipe: dict, workers: int, eff: float, n_bench: int) -> dict:
    """The measured run at ``workers`` predicted from the *other* run's efficiency (when there is one): a real
    test of the model."""
    other = [k for k in pipe if k != str(workers)]
    e = pipe[other[0]]["efficiency"] if other else eff
    measured = pipe[str(workers)]["wall_seconds"] / n_bench
    predicted = chain["docs_in"] / chain["warcs"] * chain["ms_per_doc_total"] / 1000 / (workers * e)
    return {"predicted_seconds_per_warc": round(predicted, 3), "measured_seconds_per_warc": round(measured, 3),
            "ratio": round(predicted / measured, 3)}


def _index(indexed: float, reaching: float, per_doc: int, shards: int, nodes: int | None, node_memory: float,
           warnings: list) -> dict:
    """The LSH index in memory (per shard, per node, shards spread evenly) and on storage: the shards' files, and the
    per-WARC records (the workers' keys files, one row per document reaching dedup, and a bit per document of the
    packer's)."""
    per_shard = indexed * per_doc / shards
    out = {
        "bytes_per_doc": per_doc,
        "bytes_per_shard": round(per_shard),
        "files_bytes": round(indexed * SEGMENT_BYTES_PER_DOC),  # every shard's files (the "snapshots")
        "records_bytes": round(reaching * KEYS_BYTES_PER_DOC + (reaching + indexed) / 8),  # the per-WARC records
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


def _head(replay: dict, pages_per_warc: float, reaching_per_page: float, workers: int, worker_s_per_warc: float,
          warcs: int, shards: int = 1) -> HeadPlan:
    """The head's CPU per crawl WARC from the replay's model (ms per WARC + us per document reaching dedup + ms
    per WARC for each LSH shard beyond the replay's), the cores it needs at ``workers`` and the most workers one
    core feeds: those that take as long per WARC (wall seconds per worker, at the pipeline's efficiency) as the
    head does."""
    model = replay["model"]
    reaching = pages_per_warc * reaching_per_page
    per_shard, replayed = model.get("ms_per_warc_per_shard"), model.get("shards") or replay.get("shards") or 1
    base = model["ms_per_warc"] / 1000 + model["us_per_doc"] * reaching / 1e6
    cpu_s = base + (per_shard or 0.0) * max(0, shards - replayed) / 1000
    behind, rounds = replay.get("behind"), None
    per_core = worker_s_per_warc / cpu_s if cpu_s else math.inf
    background = 0.0
    if behind:  # WARCs that wait are decided in rounds: the most workers one core feeds is the rounds' figure
        behind_s, bg = _behind_seconds(replay, base, shards, replayed)
        per_core = (1 - bg) * worker_s_per_warc / behind_s if behind_s else math.inf
        if workers * cpu_s / worker_s_per_warc > HEAD_CORES:  # the requested workers outrun the head: it is behind
            cpu_s, per_shard, rounds = behind_s, behind["ms_per_warc_per_shard"], behind["warcs_per_round"]
            background = bg
    cores = workers * cpu_s / worker_s_per_warc + background
    return HeadPlan(
        ms_per_warc=model["ms_per_warc"], us_per_doc=model["us_per_doc"],
        model_check_ratio=replay.get("check", {}).get("ratio"),
        us_per_doc_at_dedup=replay["median"]["head_cpu_us_per_doc_at_dedup"],
        pages_per_warc=round(pages_per_warc), reaching_dedup_per_warc=round(reaching),
        cpu_seconds_per_warc=round(cpu_s, 4), cores=round(cores, 2),
        workers_per_core=round(per_core) if cpu_s else 0,
        limit="head" if cores > HEAD_CORES else "workers",
        wall_hours_at_head_pace=round(warcs * cpu_s / (HEAD_CORES - background) / 3600, 2) if cores > HEAD_CORES
        else None,
        shards=shards, replay_shards=replayed, ms_per_warc_per_shard=per_shard, warcs_per_round=rounds,
        background_cores=round(background, 4))


def _behind_seconds(replay: dict, base: float, shards: int, replayed: int) -> tuple[float, float]:
    """The head's CPU per crawl WARC when it is behind (rounds), and the cores of its background. The replay's
    figure at its own WARC size scales the crawl's one-by-one ``base``: its steady-state work per WARC (past the
    report's first window, without the background, which is paid per second: :func:`raycorpus.runtime.replay.steady`)
    where it measured one, else its behind replay's average (background and first window included)."""
    behind, steady = replay["behind"], replay.get("steady") or {}
    ms, bg = behind["head_cpu_ms_per_warc"], 0.0
    if steady.get("work_ms_per_warc"):
        ms, bg = steady["work_ms_per_warc"], replay["background"]["ms_per_second"] / 1000
    scaled = base * ms / replay["median"]["head_cpu_ms_per_warc"]  # (the replay's WARC: ~35 k pages)
    return scaled + max(0.0, behind["ms_per_warc_per_shard"]) * max(0, shards - replayed) / 1000, bg


def _index_line(i: dict) -> str:
    gb = {k: v / 1e9 for k, v in i.items() if k != "bytes_per_doc"}
    return (f"index files   {gb['files_bytes']:,.1f} GB of shard files + {gb['records_bytes']:,.1f} GB of per-WARC "
            f"records; a resume reads {gb['resume_read_per_shard']:,.2f} GB per shard (its own files; before 0.2 "
            f"every shard read all records, {gb['resume_read_per_shard_before']:,.1f} GB)")


def _head_lines(h: HeadPlan, p: dict) -> list[str]:
    pace = (f"the head sets the pace: {p['workers']:,} workers finish in ~{h.wall_hours_at_head_pace:,.1f} h, not "
            f"{p['wall_hours']:,.1f} h" if h.limit == "head" else "the workers set the pace")
    if h.ms_per_warc_per_shard is None:
        shards = f"; the cost per LSH shard is not in this replay JSON: {h.shards} shards cost more than it says"
    else:
        shards = (f" + {h.ms_per_warc_per_shard} ms per WARC for each of {max(0, h.shards - h.replay_shards)} LSH "
                  f"shards beyond the replay's {h.replay_shards}")
    behind = (f"; behind, in rounds of {h.warcs_per_round:g} WARCs as the replay measured them (its base scaled "
              "by the replay's rounds against its WARCs one by one)" if h.warcs_per_round else "")
    if h.background_cores:
        behind += (f", in its steady state, plus a background of {h.background_cores * 1000:,.1f} ms of CPU per "
                   "second")
    return [
        f"head          {h.ms_per_warc} ms per WARC + {h.us_per_doc} us per document reaching dedup{shards} (replay; "
        f"model check ratio {h.model_check_ratio}){behind} at {h.reaching_dedup_per_warc:,} of a WARC's "
        f"{h.pages_per_warc:,} pages: {h.cpu_seconds_per_warc:.4f} CPU s per WARC",
        f"head limit    {p['workers']:,} workers need {h.cores:,.2f} head cores; one head core feeds at most "
        f"~{h.workers_per_core:,} workers: {pace}",
    ]


def format_plan(p: dict) -> str:
    w = p["per_warc"]
    lines = [
        f"per WARC      {w['docs_in']:,} docs in, {w['docs_reaching_dedup']:,} reach dedup "
        f"({p['reaching_dedup_per_page']:.3f} per page, one copy of the bench input), {w['docs_kept']:,} kept, "
        f"{w['tokens']:,} tokens, "
        f"{w['cpu_seconds']:,.1f} CPU s ({w['wall_seconds_per_worker']:,.1f} s per worker at efficiency "
        f"{p['efficiency']})",
        f"crawl         {p['warcs']:,} WARCs: {p['core_hours']:,.0f} core-hours; {p['wall_hours']:,.1f} h wall "
        f"on {p['workers']:,} workers",
        f"output        {p['docs_kept']:,} documents, {p['tokens']:,} tokens, {p['output_bytes'] / 1e9:,.1f} GB",
        f"dedup         {p['docs_indexed']:,} documents indexed"
        + (f", {p['paragraph_keys_per_doc']:g} paragraph keys each" if p.get("paragraph_keys_per_doc") else "")
        + (f" ({p['docs_indexed_prior']:,} of them by earlier builds, dedup.against)" if p["docs_indexed_prior"]
           else "") + ", "
        f"{p['lsh_bytes_per_shard'] / 2**30:,.2f} GiB per LSH shard x {p['lsh_shards']}"
        + (f", {p['index']['bytes_per_node'] / 2**30:,.1f} GiB per node" if "bytes_per_node" in p["index"] else ""),
        _index_line(p["index"]),
        f"S3            {p['s3_get_per_second']:,.1f} GET/s, {p['read_bytes_per_second'] / 1e6:,.0f} MB/s read; "
        f"staged tokens {p['staged_bytes_per_second'] / 1e6:,.0f} MB/s written by the workers and read back by the "
        "shard-closing tasks",
    ]
    if p.get("head"):
        lines += _head_lines(HeadPlan(**p["head"]), p)
    if p.get("shard_choices"):
        lines.append("shard count   " + "; ".join(
            f"{c['shards']}: {c['bytes_per_shard'] / 2**30:,.1f} GiB each, one head core feeds "
            f"~{c['workers_per_head_core']:,}"
            for c in p["shard_choices"]) + " (every shard is asked about every round of WARCs)")
    if "check" in p:
        c = p["check"]
        lines.append(f"check         predicted {c['predicted_seconds_per_warc']} s per benchmarked WARC at "
                     f"{p['workers']} workers, measured {c['measured_seconds_per_warc']} (ratio {c['ratio']})")
    if "replay_check" in p:
        r = p["replay_check"]
        lines.append(f"replay check  at the replay's own WARC ({r['pages_per_warc']:,} pages, "
                     f"{r['worker_ms_per_page']} ms per page, {r['shards']} shard(s)) the planner says one head "
                     f"core feeds ~{r['planned']:,} workers, the replay measured ~{r['measured']:,} "
                     f"(ratio {r['ratio']})")
    lines += [f"WARNING       {x}" for x in p["warnings"]]
    return "\n".join(lines)


def cmd_plan(args: argparse.Namespace) -> int:
    from raycorpus.ingest.manifest import count_manifest
    from raycorpus.ingest.storage import Storage
    from raycorpus.process.dedup.prior import PriorError, indexed_docs

    try:
        bench = json.loads(Path(args.bench).read_text())
        bench["chain"]["ms_per_doc_total"]
        Funnel.of_bench(bench)
    except (OSError, ValueError, KeyError, TypeError):
        err(f"{args.bench}: not a `raycorpus bench --save` JSON")
        return EXIT_USAGE
    try:
        workers = [int(w) for w in str(args.workers).split(",") if w.strip()]
    except ValueError:
        workers = []
    if not workers or min(workers) < 1:
        err(f"--workers {args.workers}: give a worker count or several, comma-separated (1000,10000)")
        return EXIT_USAGE
    warcs = args.warcs or (count_manifest(args.manifest, None, Storage()) if args.manifest else 0)
    if not warcs:
        err("give --manifest (a warc.paths[.gz]) or --warcs N")
        return EXIT_USAGE
    try:
        replay = json.loads(Path(args.replay).read_text())["commit_path"] if args.replay else None
        if replay:
            replay["model"]["ms_per_warc"] + replay["model"]["us_per_doc"]
            replay["median"]["head_cpu_us_per_doc_at_dedup"]
    except (OSError, ValueError, KeyError, TypeError):
        err(f"{args.replay}: not a `raycorpus bench --commit-path --save` JSON")
        return EXIT_USAGE
    try:
        prior_docs = sum(indexed_docs(Storage(), out) for out in args.against or [])
    except PriorError as e:
        err(str(e))
        return EXIT_USAGE
    plans = [plan(bench, warcs=warcs, workers=n, shards=args.shards, warc_bytes=args.warc_bytes,
                  efficiency=args.efficiency, extra_formats=args.extra_formats, replay=replay, nodes=args.nodes,
                  node_memory=args.node_memory * 2**30, prior_docs=prior_docs,
                  paragraph_keys=args.paragraph_keys) for n in workers]
    if args.json:
        print(json.dumps(plans[0] if len(plans) == 1 else plans, indent=1))
    else:
        print("\n\n".join((f"-- {p['workers']:,} workers\n" if len(plans) > 1 else "") + format_plan(p)
                           for p in plans))
    return EXIT_OK
