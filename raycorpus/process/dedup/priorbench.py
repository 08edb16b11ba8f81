"""What loading an earlier build's index (``dedup.against``) costs a shard: same vs other shard count.

``python -m raycorpus.process.dedup.priorbench [--docs 200000] [--prior-shards 4] [--shards 4,3,8] [--runs 3]``

Builds an earlier index of ``--docs`` synthetic documents (20 % near copies, distinct URLs) over
``--prior-shards`` shards, writes each shard's inserts as its files (one per 100 WARCs of 1,000 documents,
as checkpoints would), then loads it into every shard of a build with each ``--shards`` count and prints,
per count, the median seconds one shard takes (the slowest shard) and the bytes all shards read.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import numpy as np

from raycorpus.ingest.storage import Storage, join_url
from raycorpus.process.dedup.index import Deduplicator, Layout, LocalShards, LshShard
from raycorpus.process.dedup.prior import PriorIndex, load_prior
from raycorpus.process.dedup.settings import DedupConfig
from raycorpus.process.dedup.shardlog import ShardFiles, encode_inserts, shard_dir
from raycorpus.process.dedup.sketch import Signer

BATCH = 1000
WARCS_PER_FILE = 100


def build_prior(out: str, n_docs: int, n_shards: int, cfg: DedupConfig) -> PriorIndex:
    """An earlier build's index on local storage, as its shard actors would have written it."""
    rng = np.random.default_rng(n_docs)
    width = Signer(cfg.num_perm, sketch=cfg.verify_sketch == "oph").width
    sigs = rng.integers(0, 2**32, (n_docs, width), dtype=np.uint64).astype(np.uint32)
    dup = np.flatnonzero(rng.random(n_docs) < 0.2)
    dup = dup[dup > 0]
    sigs[dup] = sigs[(rng.random(dup.size) * dup).astype(np.int64)]
    hashes, urls = (rng.integers(1, 2**63, n_docs, dtype=np.uint64) for _ in range(2))
    layout = Layout.from_config(cfg, n_shards)
    requests: list[list[tuple]] = [[] for _ in range(n_shards)]

    class Recording(LocalShards):
        def insert(self, reqs, ordinal):
            super().insert(reqs, ordinal)
            for log, r in zip(requests, reqs, strict=True):
                log.append(r)

    dd = Deduplicator(layout, cfg.threshold, Recording(layout))
    storage, files = Storage(), [[] for _ in range(n_shards)]
    n_warcs = -(-n_docs // BATCH)
    for w in range(n_warcs):
        s = slice(w * BATCH, (w + 1) * BATCH)
        dd.decide(w, hashes[s], sigs[s], urls[s])
        if (w + 1) % WARCS_PER_FILE == 0 or w + 1 == n_warcs:
            first = (w // WARCS_PER_FILE) * WARCS_PER_FILE
            for i in range(n_shards):
                name = f"L0-{first:09d}-{w + 1:09d}.npz"
                storage.write_atomic(join_url(shard_dir(join_url(out, "dedup"), i), name), encode_inserts(requests[i]))
                files[i].append(name)
                requests[i] = []
    shards = tuple(ShardFiles(tuple(f), n_warcs, dd.next_docno) for f in files)
    return PriorIndex(out, 0, shards, dd.next_docno, 0, "bench")


def bench(prior: PriorIndex, counts: list[int], runs: int, cfg: DedupConfig) -> list[dict]:
    rows = []
    for n in counts:
        layout = Layout.from_config(cfg, n)
        times, read = [], 0
        for _ in range(runs):
            per_shard = []
            read = 0
            for i in range(n):
                shard = LshShard(layout, i)
                t0 = time.perf_counter()
                read += load_prior(shard, Storage(), prior)
                per_shard.append(time.perf_counter() - t0)
            times.append(max(per_shard))
        rows.append({"shards": n, "same_count": n == len(prior.shards), "slowest_shard_s": statistics.median(times),
                     "bytes_read_all_shards": read})
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--docs", type=int, default=200_000)
    p.add_argument("--prior-shards", type=int, default=4)
    p.add_argument("--shards", default="4,3,8")
    p.add_argument("--runs", type=int, default=3)
    a = p.parse_args(argv)
    cfg = DedupConfig()
    with tempfile.TemporaryDirectory() as tmp:
        prior = build_prior(tmp, a.docs, a.prior_shards, cfg)
        print(f"earlier index: {prior.docnos:,} documents in {a.prior_shards} shards")
        for r in bench(prior, [int(x) for x in a.shards.split(",")], a.runs, cfg):
            print(f"{r['shards']:>3} shards ({'same count' if r['same_count'] else 'other count'}): slowest shard "
                  f"{r['slowest_shard_s']:.2f} s (median of {a.runs}), all shards read "
                  f"{r['bytes_read_all_shards'] / 2**20:,.1f} MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
