"""Replay benchmark of the commit path: how many workers one head can feed.

Real WARCs are processed once, in this process, by the :class:`WarcProcessor` the workers run
(timed: that is a worker's cost per input document). Their results are then replayed through
the real commit path of a real run: dispatch, result pulls, the reorder buffer, dedup decisions
over the LSH shard actors, the packer, the ledger and its checkpoints. The pool
holds :class:`ReplayWorker` actors that hand the cached results out at once instead of
extracting, so the commit path is the limit. A replayed WARC joins as many cached results
(*parts*) as it takes to reach ``pages_per_warc`` input pages (Common Crawl: ~35,000 HTML pages
a WARC), with the measured funnel.

Replayed documents stay distinct: every part after the first pass over the cache gets its content
hashes and URL keys XORed with, and its 32-bit MinHash values shifted by, a constant drawn from the part's
number (which keeps the duplicates inside a part duplicates), except a ``dup_rate`` share of its
documents, drawn per document, that are replayed as they are and so duplicate their first replay.
Such a part's report sample candidates get new keys too (a crawl's record ids are unique): with their
cached keys they would sit at the sample's bounds for ever, and every replayed WARC would send the head
as many candidates as the first.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import ray

from raycorpus import counts as ck
from raycorpus.config import Config
from raycorpus.ingest.storage import Storage
from raycorpus.output.shards import WarcTokens, stage_tokens
from raycorpus.output.summary import RunSummary
from raycorpus.process.dedup.paragraphs import Paragraphs
from raycorpus.process.hashing import fmix64
from raycorpus.process.pipeline import WarcProcessor
from raycorpus.process.profile import NO_BOUND, PASSED, WarcProfile, smallest
from raycorpus.process.results import DedupPayload, WarcResult, WarcSummary
from raycorpus.process.tokenize import TokenEncoder
from raycorpus.runtime.actors import Measured, eligible_for_dedup, needs_documents, worker_layout, write_keys
from raycorpus.runtime.committer import MAX_ROUND
from raycorpus.runtime.pool import Task, WorkSource

SHARDS_WIDE = 4  # the head's cost per LSH shard is measured at 4x the replay's shards
SLOWER = 4  # the head's background is measured with WARCs coming this many times slower
LONGER = 4  # ... and its steady state over this many times the WARCs


@dataclass(frozen=True)
class ReplayPlan:
    warcs: int  # replayed WARCs
    parts: int  # cached results joined into one replayed WARC
    dup_rate: float  # share of a re-replayed part's documents kept as they are (duplicates)
    pace: float = 0.0  # seconds a replay worker takes per WARC at least (a slower crawl, for the head's background)


def _mix(key: int) -> np.uint64:
    return fmix64(np.array([key], np.uint64))[0]


def replay_part(base: WarcResult, number: int, n_cached: int,
                dup_rate: float) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """(content hashes, signatures, URL keys) of part ``number`` (which replays cached result ``number % n_cached``)."""
    hashes, sigs, urls = base.content_hashes, base.signatures, base.url_hashes
    if number < n_cached or not len(hashes):
        return hashes, sigs, urls
    salt = _mix(number + 1) | np.uint64(1)
    draws = fmix64(np.uint64(number * 0x9E3779B97F4A7C15 % 2**64) + np.arange(len(hashes), dtype=np.uint64))
    keep = draws.astype(np.float64) / 2.0**64 < dup_rate
    hashes = np.where(keep, hashes, hashes ^ salt)
    if urls is not None:  # a replayed duplicate keeps its URL too (a recrawl: URL first, so `dedup:url`)
        urls = np.where(keep | (urls == 0), urls, urls ^ salt)
    if sigs is not None:
        shift = np.uint32(int(salt) & 0xFFFFFFFF)
        sigs = np.where(keep[:, None], sigs, sigs + shift)
    return hashes, sigs, urls


def replay_paragraphs(base: WarcResult, number: int, n_cached: int, hashes: np.ndarray) -> Paragraphs | None:
    """Part ``number``'s paragraphs (dedup.paragraphs): those of a document replayed as new (its content hash
    changed, ``hashes``) are new too."""
    p = base.paragraphs
    if p is None or number < n_cached:
        return p
    new = np.repeat(hashes != base.content_hashes, p.counts.astype(np.int64)) & (p.keys != 0)
    return replace(p, keys=np.where(new, p.keys ^ (_mix(number + 1) | np.uint64(1)), p.keys))


def replay_profile(base: WarcResult, number: int, n_cached: int) -> WarcProfile | None:
    """Part ``number``'s report profile: after the first pass over the cache, with its sample candidates
    keyed anew from the part's number, as documents of another WARC (their record ids) would be."""
    profile = base.profile
    if profile is None or number < n_cached:
        return profile
    salt = _mix(number + 1)
    keys = fmix64(np.array([s.key for s in profile.samples], np.uint64) ^ salt)
    return replace(profile, samples=[replace(s, key=int(k)) for s, k in zip(profile.samples, keys, strict=True)])


def replay_warc(cached: list[WarcResult], plan: ReplayPlan, ordinal: int) -> WarcResult:
    """Replayed WARC ``ordinal``: parts ``ordinal * parts ...`` of the cache, joined."""
    t0 = time.perf_counter()
    docs, hashes, sigs, urls, tokens, lengths, counts, read = [], [], [], [], [], [], Counter(), 0
    paragraphs = []
    for number in range(ordinal * plan.parts, (ordinal + 1) * plan.parts):
        base = cached[number % len(cached)]
        h, s, u = replay_part(base, number, len(cached), plan.dup_rate)
        docs += base.docs
        hashes.append(h)
        paragraphs.append(replay_paragraphs(base, number, len(cached), h))
        if s is not None:
            sigs.append(s)
        if u is not None:
            urls.append(u)
        tokens.append(base.tokens)
        lengths.append(base.lengths)
        counts.update(base.counts)
        read += base.bytes_read
    numbers = range(ordinal * plan.parts, (ordinal + 1) * plan.parts)
    profile = (WarcProfile.joined([replay_profile(cached[n % len(cached)], n, len(cached)) for n in numbers])
               if cached[0].profile is not None else None)
    return WarcResult(ordinal, f"replay://{ordinal}", docs, np.concatenate(hashes),
                      np.concatenate(sigs) if sigs else None, counts, read, time.perf_counter() - t0,
                      np.concatenate(tokens), np.concatenate(lengths), np.concatenate(urls) if urls else None,
                      profile=profile, paragraphs=Paragraphs.joined(paragraphs) if paragraphs[0] is not None else None)


@ray.remote
class ReplayWorker(Measured):
    """Hands out replayed WARCs, as a :class:`~raycorpus.runtime.actors.WarcWorker` hands out processed ones."""

    def __init__(self, cfg: Config, cached: list[WarcResult], plan: ReplayPlan):
        self.cached, self.plan = cached, plan
        self.tag = cfg.filters.mode == "tag"
        self.layout = worker_layout(cfg)
        self.send_docs = needs_documents(cfg)
        self.sizes = (cfg.output.report.samples_passed, cfg.output.report.samples_per_reason)
        self.storage, self.out_url = Storage(cfg.storage), cfg.output.path
        self.node_id = ray.get_runtime_context().get_node_id()

    def ready(self) -> str:
        return self.node_id

    @ray.method(num_returns=5)
    def process(self, ordinal: int, url: str, part: None = None, bounds: dict | None = None
                ) -> tuple[None, WarcSummary, list | None, DedupPayload, WarcTokens]:
        """WARC ``ordinal`` replayed. ``part`` is not used; the report's sample ``bounds`` are applied as a worker
        applies them (it sends no candidate above its pool's bound)."""
        done_at = time.monotonic() + self.plan.pace
        result = replay_warc(self.cached, self.plan, ordinal)
        if result.profile is not None:  # what a worker of the whole WARC sends: its smallest, under the bounds
            bounds = bounds or {}
            pools: dict[str, list] = {}
            for s in result.profile.samples:
                if s.key <= bounds.get(s.pool, NO_BOUND):
                    pools.setdefault(s.pool, []).append(s)
            result.profile.samples = [s for pool, c in sorted(pools.items())
                                      for s in smallest(c, self.sizes[0] if pool == PASSED else self.sizes[1])]
        summary = result.summary()
        summary.node = self.node_id
        staged = stage_tokens(self.storage, self.out_url, ordinal, *result.encoded())  # as a worker stages them
        payload = result.dedup_payload(eligible_for_dedup(result, self.tag), self.layout)
        if self.layout is not None:  # and its dedup keys
            write_keys(self.storage, self.out_url, ordinal, payload, self.layout)
        time.sleep(max(0.0, done_at - time.monotonic()))
        docs = result.docs if self.send_docs else None
        return None, summary, docs, payload, staged  # (first: the marker that the call ended)


def cache_results(cfg: Config, warcs: list[str]) -> tuple[list[WarcResult], float]:
    """The WARCs processed (and tokenized) in this process, a warm-up pass, then a timed one; and a
    worker's milliseconds per input page, from the timed pass."""
    proc = WarcProcessor(cfg, encoder=TokenEncoder(cfg.tokenizer))
    for i, url in enumerate(warcs):
        proc.process(i, url)
    t0 = time.process_time()
    cached = [proc.process(i, url) for i, url in enumerate(warcs)]
    seconds = time.process_time() - t0
    pages = sum(r.counts[ck.HTML] for r in cached)
    return cached, seconds * 1000 / max(1, pages)


def replay_once(cfg: Config, token_meta: dict, cached_ref: ray.ObjectRef, plan: ReplayPlan, out: str,
                replay_workers: int, expected_docs: int = 0, shards: int | None = None, hold: int = 1) -> RunSummary:
    """One replay run into a fresh output: the run summary. ``expected_docs``: the index's size, when the config
    does not set it (a production run sizes it from `raycorpus plan` rather than growing its tables); ``shards``:
    the LSH shards (None: the config's); ``hold``: the head commits only rounds of this many ready WARCs (a head
    that has fallen behind; 1: as they come)."""
    from raycorpus.runtime.driver import run_build

    run_cfg = cfg.model_copy(update={
        "dedup": cfg.dedup.model_copy(update={"expected_docs": cfg.dedup.expected_docs or expected_docs,
                                              "shards": shards or cfg.dedup.shards}),
        "input": cfg.input.model_copy(update={"manifest": f"replay:{plan}", "prefix": None, "base": None,
                                              "limit": None}),
        "output": cfg.output.model_copy(update={"path": out, "documents": False, "format": []}),
        "ray": cfg.ray.model_copy(update={"workers": replay_workers, "max_workers": replay_workers,
                                          **({"reorder_buffer": 2 * hold} if hold > 1 else {})}),
        "run": cfg.run.model_copy(update={"progress": "off"}),
    })
    work = WorkSource(plan.warcs, lambda start: (Task(i, f"replay://{i}", f"replay://{i}")
                                                 for i in range(start, plan.warcs)),
                      ReplayWorker, (cached_ref, plan), hold)
    return run_build(run_cfg, token_meta, work=work)


def figures(summary: RunSummary, worker_ms: float) -> dict:
    """What one replay run shows: rates, head CPU per document, and the workers one head core feeds."""
    run, docs = summary.this_run, summary.docs
    reached = docs.kept + sum(n for k, n in docs.dropped.items() if k.startswith("dedup:"))
    cpu, wall = run.cpu_seconds, run.wall_seconds  # (a replay is a fresh run: both measured)
    head = cpu["driver"] + cpu.get("packer", 0.0)
    main = cpu.get("driver_main_thread", 0.0) + cpu.get("packer_main_thread", 0.0)  # (Ray's threads left out)
    head_us_per_page = head * 1e6 / max(1, docs.in_)
    return {
        "wall_seconds": wall,
        "pages_per_second": round(docs.in_ / wall, 1),
        "reached_dedup_per_second": round(reached / wall, 1),
        "kept_per_second": round(docs.kept / wall, 1),
        "head_cpu_us_per_doc_at_dedup": round(head * 1e6 / max(1, reached), 2),
        "head_cpu_us_per_page": round(head_us_per_page, 3),
        # off the head: the LSH shards' share of the decisions, the tasks that close token shards
        # (during the build: the compaction at its end is a one-time tail, given apart)
        "lsh_shards_cpu_us_per_doc_at_dedup": round((cpu.get("lsh_shards", 0.0) - cpu.get("lsh_compact", 0.0)) * 1e6
                                                    / max(1, reached), 2),
        "lsh_compact_cpu_us_per_doc_at_dedup": round(cpu.get("lsh_compact", 0.0) * 1e6 / max(1, reached), 2),
        "closing_cpu_us_per_kept_doc": round(cpu.get("shard_closing", 0.0) * 1e6 / max(1, docs.kept), 2),
        "head_cpu_ms_per_warc": round(head * 1000 / max(1, run.processed), 2),
        "head_main_threads_ms_per_warc": round(main * 1000 / max(1, run.processed), 2),
        "reached_dedup_per_warc": round(reached / max(1, run.processed), 1),
        "cpu_seconds": cpu,
        "warcs_per_round": round(run.processed / run.dedup.rounds, 2) if run.dedup and run.dedup.rounds else None,
        "workers_per_head_core": round(worker_ms * 1000 / head_us_per_page) if head_us_per_page else None,
    }


def _replay_medians(cfg: Config, token_meta: dict, cached_ref, plan: ReplayPlan, repeats: int, worker_ms: float,
                    replay_workers: int, docs_per_part: float = 0.0, shards: int | None = None, hold: int = 1
                    ) -> tuple[dict, list[dict]]:
    runs = []
    with tempfile.TemporaryDirectory(prefix="raycorpus-replay-") as tmp:
        for r in range(repeats + 1):  # the first run warms the object store and the actors' imports
            s = replay_once(cfg, token_meta, cached_ref, plan, str(Path(tmp) / f"run{r}"), replay_workers,
                            round(docs_per_part * plan.parts * plan.warcs), shards, hold)
            if r:
                runs.append(figures(s, worker_ms))
    keys = [k for k in runs[0] if k != "cpu_seconds"]
    return {k: round(statistics.median(run[k] for run in runs), 4) for k in keys if runs[0][k] is not None}, runs


def bench_commit_path(cfg: Config, token_meta: dict, warcs: list[str], *, replayed: int = 40,
                      pages_per_warc: int = 35_000, dup_rate: float = 0.1, repeats: int = 3,
                      worker_ms: float | None = None, replay_workers: int = 2) -> dict:
    """Replay ``replayed`` CC-sized WARCs ``repeats`` times (after a warm-up run); medians of the figures.
    The planner's model of the head, CPU per WARC = a + b x documents reaching dedup, is fitted on
    these and on WARCs a quarter the size, and checked on WARCs half the size: predicted / measured.
    Its cost per LSH shard (every shard is asked about every round of WARCs: calls on the head per round and
    shard) is measured by the same replay with ``SHARDS_WIDE`` times the shards, at the rounds the replay makes
    (its workers hand out results at once: the head is behind, as at the scale it models). The head's background,
    CPU its processes spend per second whether WARCs come or not, is measured by the behind replay again with the
    WARCs coming ``SLOWER`` times slower (:func:`background`): a replay on 2 workers takes ~4 WARCs a second, a crawl
    on 10,000 workers ~50, so per WARC the replay pays ~12 times the background a crawl's head does. Its steady state
    comes from a replay ``LONGER`` times as long (:func:`steady`): the first WARCs of a replay cost more."""
    from raycorpus.runtime.cluster import init_ray

    cached, measured_ms = cache_results(cfg, warcs)
    ms = worker_ms or measured_ms
    pages = sum(r.counts[ck.HTML] for r in cached) / len(cached)
    parts = max(4, round(pages_per_warc / max(1.0, pages)))
    init_ray(cfg)
    cached_ref = ray.put(cached)
    per_part = sum(len(r.docs) for r in cached) / len(cached)  # documents reaching dedup (the index's size)
    shards = cfg.dedup.shards or 1
    med, runs = _replay_medians(cfg, token_meta, cached_ref, ReplayPlan(replayed, parts, dup_rate), repeats, ms,
                                replay_workers, per_part, shards)
    wide, _ = _replay_medians(cfg, token_meta, cached_ref, ReplayPlan(replayed, parts, dup_rate), repeats, ms,
                              replay_workers, per_part, shards * SHARDS_WIDE)
    small, _ = _replay_medians(cfg, token_meta, cached_ref, ReplayPlan(replayed, parts // 4, dup_rate), repeats, ms,
                               replay_workers, per_part, shards)
    half, _ = _replay_medians(cfg, token_meta, cached_ref, ReplayPlan(replayed, parts // 2, dup_rate), repeats, ms,
                              replay_workers, per_part, shards)
    behind = _measure_behind(lambda plan, n: _replay_medians(cfg, token_meta, cached_ref, plan, repeats, ms,
                                                             replay_workers, per_part, n, MAX_ROUND)[0],
                             ReplayPlan(replayed, parts, dup_rate), shards, replay_workers, ms * pages * parts)
    model = head_model(med, small)
    model["shards"] = shards
    model["warcs_per_round"] = med.get("warcs_per_round")  # (the shard term is per round: rounds of this size)
    model["ms_per_warc_per_shard"] = round((wide["head_cpu_ms_per_warc"] - med["head_cpu_ms_per_warc"])
                                           / (shards * (SHARDS_WIDE - 1)), 3)
    predicted = model["ms_per_warc"] + model["us_per_doc"] * half["reached_dedup_per_warc"] / 1000
    return {
        "input_warcs": len(warcs), "replayed_warcs": replayed, "parts_per_warc": parts,
        "pages_per_warc": round(pages * parts), "reaching_dedup_per_warc": med["reached_dedup_per_warc"],
        "dup_rate": dup_rate, "worker_ms_per_page": round(ms, 4),
        "worker_ms_source": "given" if worker_ms else "measured in-process on the input",
        "shards": shards, "runs": len(runs),
        "index_sized": cfg.dedup.expected_docs or round(per_part * parts * replayed),
        "median": med, "per_run": runs, "model": model,
        "check": {"pages_per_warc": round(pages * (parts // 2)), "measured_head_cpu_ms_per_warc":
                  half["head_cpu_ms_per_warc"], "predicted_head_cpu_ms_per_warc": round(predicted, 2),
                  "ratio": round(predicted / half["head_cpu_ms_per_warc"], 3) if half["head_cpu_ms_per_warc"]
                  else None},
        **behind,
        "wide": {"shards": shards * SHARDS_WIDE, "head_cpu_ms_per_warc": wide["head_cpu_ms_per_warc"],
                 "workers_per_head_core": wide.get("workers_per_head_core"),
                 "warcs_per_round": wide.get("warcs_per_round")},
    }


def _behind(runs: list[dict], shards: int) -> dict:
    """The head that has fallen behind (rounds of ``MAX_ROUND`` ready WARCs) at ``shards`` and ``SHARDS_WIDE`` x
    that: its CPU per WARC, per shard, and the workers one head core feeds then."""
    one, wide = runs
    return {"warcs_per_round": one.get("warcs_per_round"), "head_cpu_ms_per_warc": one["head_cpu_ms_per_warc"],
            "wide_head_cpu_ms_per_warc": wide["head_cpu_ms_per_warc"],
            "ms_per_warc_per_shard": round((wide["head_cpu_ms_per_warc"] - one["head_cpu_ms_per_warc"])
                                           / (shards * (SHARDS_WIDE - 1)), 3),
            "workers_per_head_core": one.get("workers_per_head_core"),
            "lsh_shards_cpu_us_per_doc_at_dedup": one.get("lsh_shards_cpu_us_per_doc_at_dedup")}


def _measure_behind(replay, plan: ReplayPlan, shards: int, replay_workers: int, worker_ms_per_warc: float) -> dict:
    """The head that has fallen behind (``replay(plan, shards)``: the medians of replays whose head commits rounds of
    ``MAX_ROUND``): at ``shards`` and ``SHARDS_WIDE`` x them; with the WARCs coming ``SLOWER`` times slower (its
    background); over ``LONGER`` x the WARCs (its steady state, past the report's first window)."""
    one, wide = replay(plan, shards), replay(plan, shards * SHARDS_WIDE)
    slow = replay(replace(plan, pace=SLOWER * replay_workers * one["wall_seconds"] / plan.warcs), shards)
    long = replay(replace(plan, warcs=plan.warcs * LONGER), shards)
    bg = background(one, slow, plan.warcs, worker_ms_per_warc)
    return {"behind": _behind([one, wide], shards), "background": bg,
            "steady": steady(one, long, plan.warcs, plan.warcs * LONGER, bg, worker_ms_per_warc)}


def steady(short: dict, long: dict, n_short: int, n_long: int, bg: dict, worker_ms_per_warc: float) -> dict:
    """The head's CPU per WARC past the first window, where a crawl spends nearly all its WARCs (until the report's
    sample pools fill, each WARC brings hundreds of sample candidates): the marginal cost of the WARCs a longer replay
    adds, and that less the background (:func:`background`) it pays at its rate: the work per WARC. Beside it, the
    marginal CPU of the driver's and the packer's main threads alone (their own work, Ray's threads left out): less
    exposed to the machine's load, it resolves changes to the head's own code that the whole figure cannot."""
    def marginal_of(figure: str) -> float:
        return (long[figure] * n_long - short[figure] * n_short) / (n_long - n_short)

    marginal = marginal_of("head_cpu_ms_per_warc")
    work = marginal - bg["ms_per_second"] * long["wall_seconds"] / n_long
    return {"warcs": [n_short + 1, n_long], "marginal_ms_per_warc": round(marginal, 2),
            "work_ms_per_warc": round(work, 2),
            "main_threads_ms_per_warc": round(marginal_of("head_main_threads_ms_per_warc"), 2),
            "workers_per_head_core": _feeds(work, bg["ms_per_second"], worker_ms_per_warc) if work > 0 else None}


def background(fast: dict, slow: dict, warcs: int, worker_ms_per_warc: float) -> dict:
    """The head's CPU per WARC as work per WARC plus a background paid per second (Ray's timers and polls in the
    driver and the packer, there whether WARCs come or not), from the same replay at two rates (``fast``, ``slow``:
    their medians): head ms per WARC = work + background / (WARCs per second). The WARCs of a crawl come at the rate
    of its workers, so one head core feeds N workers when N x work / (worker ms per WARC) + background <= 1."""
    r_fast, r_slow = warcs / fast["wall_seconds"], warcs / slow["wall_seconds"]
    h_fast, h_slow = fast["head_cpu_ms_per_warc"], slow["head_cpu_ms_per_warc"]
    per_second = (h_slow - h_fast) / (1 / r_slow - 1 / r_fast) if r_fast > r_slow else 0.0
    per_second = min(max(0.0, per_second), 1000.0)  # (noise can make it negative: then none is taken off)
    work = max(1e-9, h_fast - per_second / r_fast)
    return {"warcs_per_second": [round(r_fast, 3), round(r_slow, 3)], "head_cpu_ms_per_warc": [h_fast, h_slow],
            "ms_per_second": round(per_second, 2), "work_ms_per_warc": round(work, 2),
            "workers_per_head_core": _feeds(work, per_second, worker_ms_per_warc)}


def _feeds(work_ms_per_warc: float, ms_per_second: float, worker_ms_per_warc: float) -> int:
    """The most workers one head core feeds: N x work / (worker ms per WARC) + background per second <= 1 core."""
    return round((1 - ms_per_second / 1000) * worker_ms_per_warc / work_ms_per_warc)


def head_model(big: dict, small: dict) -> dict:
    """Head CPU per WARC = ms_per_warc + us_per_doc x documents reaching dedup, through two replays."""
    dn = big["reached_dedup_per_warc"] - small["reached_dedup_per_warc"]
    b = (big["head_cpu_ms_per_warc"] - small["head_cpu_ms_per_warc"]) * 1000 / dn if dn else 0.0
    a = big["head_cpu_ms_per_warc"] - b * big["reached_dedup_per_warc"] / 1000
    return {"ms_per_warc": round(max(0.0, a), 3), "us_per_doc": round(b, 3)}


def _rounds_text(m: dict) -> str:
    """How many WARCs a round decided (the shards are asked once per round)."""
    return f"; {m['warcs_per_round']:g} WARCs per round" if m.get("warcs_per_round") else ""


def _behind_text(b: dict) -> list[str]:
    h = b.get("behind")
    if not h:
        return []
    return [f"head behind   rounds of {h['warcs_per_round']:g} WARCs: {h['head_cpu_ms_per_warc']} ms per WARC at "
            f"{b['shards']} shard(s), {h['wide_head_cpu_ms_per_warc']} at {b['wide']['shards']} "
            f"(+{h['ms_per_warc_per_shard']} ms per shard); one head core feeds "
            f"~{h.get('workers_per_head_core') or 0:,.0f} workers; LSH shards "
            f"{h.get('lsh_shards_cpu_us_per_doc_at_dedup') or 0:,.1f} us per document reaching dedup"]


def _background_text(b: dict) -> list[str]:
    g = b.get("background")
    if not g:
        return []
    fast, slow = g["warcs_per_second"]
    return [f"background    behind, {g['head_cpu_ms_per_warc'][0]} ms per WARC at {fast:g} WARCs/s and "
            f"{g['head_cpu_ms_per_warc'][1]} at {slow:g}: {g['work_ms_per_warc']} ms of work per WARC + "
            f"{g['ms_per_second']} ms per second (Ray's timers and polls in the driver and packer); at the rate of "
            f"its workers one head core feeds ~{g['workers_per_head_core']:,} workers"]


def _steady_text(b: dict) -> list[str]:
    t = b.get("steady")
    if not t:
        return []
    first, last = t["warcs"]
    feeds = f"~{t['workers_per_head_core']:,} workers" if t["workers_per_head_core"] else "n/a (noise)"
    return [f"steady state  behind, WARCs {first}-{last} of a longer replay: {t['marginal_ms_per_warc']} ms per WARC; "
            f"less the background, {t['work_ms_per_warc']} ms of work; one head core feeds {feeds}; the driver's and "
            f"packer's main threads {t['main_threads_ms_per_warc']} ms of it"]


def format_commit_path(b: dict) -> str:
    m = b["median"]
    return "\n".join([
        f"commit-path replay: {b['replayed_warcs']} WARCs of ~{b['pages_per_warc']:,} pages "
        f"(~{b['reaching_dedup_per_warc']:,} reaching dedup; {b['parts_per_warc']} parts from {b['input_warcs']} "
        f"real WARCs, {b['dup_rate']:.0%} replayed duplicates), median of {b['runs']} runs after a warm-up",
        f"sustained     {m['pages_per_second']:,.0f} pages/s in, {m['reached_dedup_per_second']:,.0f} docs/s "
        f"reaching dedup, {m['kept_per_second']:,.0f} kept/s",
        f"head CPU      {m['head_cpu_us_per_doc_at_dedup']:,.1f} us per document reaching dedup "
        f"(driver + packer), {m['head_cpu_us_per_page']:,.2f} us per input page",
        f"off the head  LSH shards {m['lsh_shards_cpu_us_per_doc_at_dedup']:,.1f} us per document reaching dedup "
        f"(and {m.get('lsh_compact_cpu_us_per_doc_at_dedup', 0):,.1f} more at the end of the build, compacting), "
        f"shard-closing tasks {m['closing_cpu_us_per_kept_doc']:,.1f} us per kept document",
        f"worker        {b['worker_ms_per_page']:.3f} ms per input page ({b['worker_ms_source']})",
        f"index         sized for {b.get('index_sized', 0):,} documents (dedup.expected_docs, as a production run "
        "sets it from `raycorpus plan`)",
        f"one head core feeds ~{m.get('workers_per_head_core', 0):,.0f} workers",
        f"head model    {b['model']['ms_per_warc']} ms per WARC + {b['model']['us_per_doc']} us per document "
        f"reaching dedup (fitted on WARCs of ~{b['pages_per_warc']:,} and a quarter that)",
        f"per LSH shard +{b['model']['ms_per_warc_per_shard']} ms of head CPU per WARC (measured at "
        f"{b['shards']} and {b['wide']['shards']} shards: {m['head_cpu_ms_per_warc']} and "
        f"{b['wide']['head_cpu_ms_per_warc']} ms per WARC{_rounds_text(m)})",
        *_behind_text(b),
        *_background_text(b),
        *_steady_text(b),
        f"model check   head CPU per WARC of ~{b['check']['pages_per_warc']:,} pages: predicted "
        f"{b['check']['predicted_head_cpu_ms_per_warc']} ms, measured "
        f"{b['check']['measured_head_cpu_ms_per_warc']} ms (ratio {b['check']['ratio']})",
    ])
