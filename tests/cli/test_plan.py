"""The capacity planner's arithmetic, its refusals, and the driver's manifest streaming on a real CC manifest."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from raycorpus.cli.plan import STORE_BYTES_PER_DOC, TABLE_BYTES_PER_DOC, plan

BENCH = {
    "input_warcs": 1, "copies": 4,
    "chain": {"warcs": 4, "docs_in": 4000, "docs_kept": 500, "tokens": 1_000_000, "bytes_read": 100_000_000,
              "ms_per_doc_total": 4.0},
    "pipeline": {"1": {"wall_seconds": 17.0, "efficiency": 0.94}, "2": {"wall_seconds": 8.6, "efficiency": 0.93}},
}


def test_plan_scales_the_benchmarked_warc_to_the_crawl():
    p = plan(BENCH, warcs=90_000, workers=1000, shards=10, warc_bytes=1e9)
    w = p["per_warc"]
    assert w["docs_in"] == 40_000 and w["docs_kept"] == 20_000 and w["tokens"] == 40_000_000  # 40x a 25 MB WARC
    assert w["cpu_seconds"] == 160.0 and p["efficiency"] == 0.93  # measured at the largest worker count
    assert p["core_hours"] == pytest.approx(90_000 * 160 / 0.93 / 3600, rel=1e-3)
    assert p["wall_hours"] == pytest.approx(p["core_hours"] / 1000, rel=1e-2)
    assert p["tokens"] == 90_000 * 40_000_000 and p["output_bytes"] == 2 * p["tokens"]
    assert p["lsh_bytes_per_shard"] == round(90_000 * 20_000 * (TABLE_BYTES_PER_DOC + STORE_BYTES_PER_DOC) / 10)
    assert any("LSH shard" in x for x in p["warnings"])  # 134 GB per shard is too much
    # near duplicates are indexed too (dedup.index_duplicates): the index holds what the bench's dedup indexed
    near = plan({**BENCH, "chain": {**BENCH["chain"], "docs_indexed": 600}}, warcs=90_000, workers=1000, shards=10,
                warc_bytes=1e9)
    assert near["docs_indexed"] == 90_000 * 24_000 and near["docs_kept"] == p["docs_kept"] == p["docs_indexed"]
    assert near["lsh_bytes_per_shard"] == round(p["lsh_bytes_per_shard"] * 1.2)
    # the 2-worker run predicted from the 1-worker run's efficiency
    c = plan(BENCH, warcs=4, workers=2)["check"]
    assert c["measured_seconds_per_warc"] == pytest.approx(8.6 / 4)
    assert c["predicted_seconds_per_warc"] == pytest.approx(1000 * 4.0 / 1000 / (2 * 0.94), rel=1e-3)


def test_plan_warns_about_the_bucket_and_the_cli_refuses_bad_input(tmp_path):
    p = plan(BENCH, warcs=90_000, workers=200_000, shards=1000, warc_bytes=1e9)
    assert any("SlowDown" in x for x in p["warnings"])
    bench = tmp_path / "b.json"
    bench.write_text(json.dumps(BENCH))
    r = subprocess.run([sys.executable, "-m", "raycorpus.cli", "plan", str(bench), "--warcs", "100", "--workers", "4"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "core-hours" in r.stdout and "check" not in r.stdout
    (tmp_path / "bad.json").write_text("{}")
    r = subprocess.run([sys.executable, "-m", "raycorpus.cli", "plan", str(tmp_path / "bad.json"), "--warcs", "1"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "not a `raycorpus bench --save` JSON" in r.stderr
    r = subprocess.run([sys.executable, "-m", "raycorpus.cli", "plan", str(bench), "--manifest",
                        str(tmp_path / "missing.paths.gz")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "not found" in r.stderr and "missing.paths.gz" in r.stderr
    assert "Traceback" not in r.stderr


def test_earlier_builds_indexed_documents_count_in_the_lsh_memory(tmp_path):
    alone = plan(BENCH, warcs=1000, workers=100, shards=4)
    against = plan(BENCH, warcs=1000, workers=100, shards=4, prior_docs=2_000_000)
    assert against["docs_indexed"] == alone["docs_indexed"] + 2_000_000 and against["docs_indexed_prior"] == 2_000_000
    per_doc = TABLE_BYTES_PER_DOC + STORE_BYTES_PER_DOC
    added = against["lsh_bytes_per_shard"] - alone["lsh_bytes_per_shard"]
    assert added == pytest.approx(2_000_000 * per_doc / 4, abs=1)
    assert against["index"]["resume_read_per_shard"] > alone["index"]["resume_read_per_shard"]
    assert against["wall_hours"] == alone["wall_hours"] and against["tokens"] == alone["tokens"]  # nothing else
    bench = tmp_path / "b.json"
    bench.write_text(json.dumps(BENCH))
    r = subprocess.run([sys.executable, "-m", "raycorpus.cli", "plan", str(bench), "--warcs", "10", "--against",
                        str(tmp_path / "nothing")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "not a raycorpus output" in r.stderr and "Traceback" not in r.stderr
