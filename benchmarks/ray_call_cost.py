"""What one Ray actor call costs the process that makes it: the floor under the head's cost per LSH shard.

Usage (from the project's root, raycorpus's venv active)::

    RAY_USAGE_STATS_ENABLED=0 RAY_AUTH_MODE=disabled python benchmarks/ray_call_cost.py --rounds 3

The head asks every LSH shard about every round of WARCs (a query with the round's keys for that shard, then
the documents its hits name): two actor calls per shard and round. This starts a private Ray (2 CPUs), 8 no-op
actors, and makes calls like the head's: an argument of 10 uint64 arrays of a given total size (under Ray's
100 KB inline limit, and above it, when the argument goes through the object store), to 1 actor or to all 8
at once (``ray.get`` of the 8 answers). Per call it prints the CPU time of the calling thread (``main``) and
of its whole process (``process``: Ray's own threads included, as the head's figures count them), medians of
``--rounds`` rounds of ``--calls`` calls each.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

SIZES = (50_000, 160_000, 1_300_000)  # bytes of the argument: inline, and through the object store
FANOUT = (1, 8)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--calls", type=int, default=40, help="calls (or fan-outs of 8) per round")
    args = ap.parse_args()
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        shard = _remote_class()
        actors = [shard.remote() for _ in range(max(FANOUT))]
        ray.get([a.query.remote([np.zeros(1)]) for a in actors])
        per: dict[tuple[int, int], list[tuple[float, float]]] = {}
        for _ in range(args.rounds):  # (the cases alternate within each round)
            for size in SIZES:
                for fanout in FANOUT:
                    per.setdefault((size, fanout), []).append(_calls(ray, actors[:fanout], size, args.calls))
        print(f"one actor call, CPU of the caller (medians of {args.rounds} rounds of {args.calls}):")
        for (size, fanout), runs in per.items():
            main_ms = statistics.median(r[0] for r in runs)
            proc_ms = statistics.median(r[1] for r in runs)
            print(f"  argument {size / 1000:>6,.0f} kB, {fanout} actor(s) at a time: "
                  f"main {main_ms:.3f} ms, process {proc_ms:.3f} ms")
    finally:
        ray.shutdown()


def _calls(ray, actors: list, size: int, calls: int) -> tuple[float, float]:
    """(main thread, process) CPU ms per call."""
    rng = np.random.default_rng(size)
    arrays = [rng.integers(0, 2**63, size // 80, dtype=np.uint64) for _ in range(10)]
    thread, process = time.thread_time(), time.process_time()
    for _ in range(calls):
        ray.get([a.query.remote(arrays) for a in actors])
    n = calls * len(actors)
    return (time.thread_time() - thread) * 1000 / n, (time.process_time() - process) * 1000 / n


def _remote_class():
    import ray

    @ray.remote(num_cpus=0)
    class Shard:
        def query(self, arrays: list[np.ndarray]) -> list[np.ndarray]:
            return [a[:10] for a in arrays]  # (a small answer, as most of a round's keys are new)

    return Shard


if __name__ == "__main__":
    main()
