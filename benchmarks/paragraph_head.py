"""The head's dedup work per Common Crawl-sized WARC with paragraph dedup on and off, Ray-free: a quick A/B for
work on the head's paragraph decisions (the figure that counts is the commit-path replay's, ``raycorpus bench
CONFIG WARC --commit-path``, which also pays Ray's serialisation; docs/dedup.md).

Usage (from the project's root, its venv active; the bench WARC and a tokenizer as in docs/benchmarks.md)::

    python benchmarks/paragraph_head.py /tmp/bench/bench.yaml /tmp/bench.warc.gz --warcs 32 --runs 3

The WARC is processed once in this process (paragraph dedup on: its results carry the paragraphs), then replayed as
``--warcs`` WARCs of ~35,000 pages as the commit-path replay builds them (:func:`raycorpus.runtime.replay.
replay_warc`), and decided in rounds of 16 by a :class:`Deduplicator` over in-process shards: with the paragraphs
(on) and without (off), alternating, ``--runs`` times. The shards' time is measured apart and left out: what is
printed is the rest, the head's, in ms per WARC (medians), and the difference.
"""

from __future__ import annotations

import argparse
import statistics
import time

from raycorpus import counts as ck
from raycorpus.config import load_config
from raycorpus.process.dedup.index import Deduplicator, Layout, LocalShards, WarcRows
from raycorpus.runtime.replay import ReplayPlan, cache_results, replay_warc

ROUND = 16  # WARCs decided together (the commit path's rounds when the head is behind)


class TimedShards(LocalShards):
    """In-process shards that add up the seconds spent in them (the shards' work, not the head's)."""

    seconds = 0.0

    def query(self, requests):
        return self._timed(super().query, requests)

    def documents(self, requests):
        return self._timed(super().documents, requests)

    def take(self, requests, ordinal):
        return self._timed(super().take, requests, ordinal)

    def _timed(self, call, *args):
        t = time.perf_counter()
        try:
            return call(*args)
        finally:
            self.seconds += time.perf_counter() - t


def head_ms(cfg, warcs: list, paragraphs: bool, shards: int) -> float:
    """ms per WARC the head spends deciding ``warcs`` (in rounds of :data:`ROUND`), the shards' time left out."""
    layout = Layout.from_config(cfg.dedup, shards)
    rows = []
    for r in warcs:
        payload = r.dedup_payload(None, layout)
        hashes, sigs, urls = payload.rows(None)
        rows.append(WarcRows(r.ordinal, hashes, sigs, urls, payload.keys, payload.paragraphs if paragraphs else None))
    local = TimedShards(layout)
    dedup = Deduplicator(layout, cfg.dedup.threshold, local, 0, cfg.dedup.paragraphs.threshold)
    t = time.perf_counter()
    for start in range(0, len(rows), ROUND):
        dedup.decide_round(rows[start : start + ROUND])
    return (time.perf_counter() - t - local.seconds) * 1000 / len(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("config", help="a build config (its dedup settings; paragraph dedup is turned on here)")
    ap.add_argument("warc", help="the WARC whose results are replayed (the bench WARC)")
    ap.add_argument("--warcs", type=int, default=32, help="replayed WARCs (default 32)")
    ap.add_argument("--runs", type=int, default=3, help="on/off pairs, alternating (default 3)")
    ap.add_argument("--shards", type=int, default=1, help="LSH shards (default 1)")
    args = ap.parse_args()
    cfg = load_config(args.config, {"dedup": {"paragraphs": {"enabled": True}}})
    cached, _ = cache_results(cfg, [args.warc])
    pages = sum(r.counts[ck.HTML] for r in cached) / len(cached)
    plan = ReplayPlan(args.warcs, max(4, round(35_000 / max(1.0, pages))), 0.1)
    warcs = [replay_warc(cached, plan, o) for o in range(args.warcs)]
    keyed = sum(int((w.paragraphs.keys != 0).sum()) for w in warcs) / len(warcs)
    docs = sum(len(w.docs) for w in warcs) / len(warcs)
    print(f"{args.warcs} WARCs of ~{pages * plan.parts:,.0f} pages, ~{docs:,.0f} documents reaching dedup and "
          f"~{keyed:,.0f} keyed paragraphs each; {args.shards} shard(s)")
    times: dict[bool, list[float]] = {False: [], True: []}
    for run in range(args.runs):
        for on in ((False, True) if run % 2 == 0 else (True, False)):
            times[on].append(head_ms(cfg, warcs, on, args.shards))
    off, on = (statistics.median(times[k]) for k in (False, True))
    print(f"head ms per WARC (median of {args.runs}): off {off:.2f}, on {on:.2f}, paragraphs +{on - off:.2f}")


if __name__ == "__main__":
    main()
