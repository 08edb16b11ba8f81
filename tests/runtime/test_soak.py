"""The randomized fault soak (benchmarks/soak.py) in its CI form: 3 rounds on the sample crawl.

A 3-node loopback cluster, a SeaweedFS output behind a fault proxy and the WARCs behind an HTTP server;
each round injects the fault its seed draws, mid-run, runs the build to completion (rerunning the same
command after a resumable exit) and compares the shard bytes with an undisturbed build. Seed 0's three
rounds: an S3 SlowDown / reset burst (90 % of requests), the packer actor SIGKILLed, and the LSH-shard
node's raylet SIGKILLed. A failing round is replayed alone with
``python benchmarks/soak.py --seed 0 --only-round N``.
"""

from __future__ import annotations

import pytest

from benchmarks.soak import Input, draw_fault, run_soak, summarize

SEED = 0


def test_the_draw_is_a_function_of_the_seed():
    assert [draw_fault(SEED + r, 8).kind for r in range(3)] == ["s3_burst", "actor", "lsh_node"]
    assert draw_fault(SEED + 1, 8).target == "PackerActor"
    assert draw_fault(SEED + 1, 8) == draw_fault(SEED + 1, 8)


@pytest.mark.integration  # a 3-node loopback cluster, SeaweedFS and an HTTP server, in the quick tier
def test_three_soak_rounds_end_with_the_undisturbed_bytes(crawl, tmp_path):
    c, tok = crawl
    results = run_soak(Input(c.manifest_path, tok), [0, 1, 2], SEED, tmp_path, log=print)
    print(summarize(results))
    for r in results:
        assert r.survived, r.line()
        # the fault landed mid-run: injected with the moment's WARCs committed and the held one not yet
        assert r.fault.at <= r.committed_at_fault <= r.fault.hold and r.effect, r.line()
    s3_burst = results[0]
    assert "S3 requests failed" in s3_burst.effect and not s3_burst.effect.startswith("0 of"), s3_burst.line()
