"""The capacity planner's arithmetic, its refusals, and the driver's manifest streaming on a real CC manifest."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from raycorpus.cli.plan import STORE_BYTES_PER_DOC, TABLE_BYTES_PER_DOC, Funnel, format_plan, plan

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
    # dedup.paragraphs: each indexed document's distinct paragraph keys, 8.5 bytes each in the shards
    para = plan(BENCH, warcs=90_000, workers=1000, shards=10, warc_bytes=1e9, paragraph_keys=20)
    assert para["lsh_bytes_per_shard"] == round(90_000 * 20_000 * (TABLE_BYTES_PER_DOC + STORE_BYTES_PER_DOC + 170)
                                                / 10)
    assert "20 paragraph keys each" in format_plan(para)
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


# The bench input (one WARC of 1,000 pages) listed 4 times. Per copy 200 pages reach dedup: the first copy keeps 150
# and drops 30 exact and 20 near duplicates (indexing the 20 near ones: 170 indexed); each later copy brings the same
# 200 and has them all dropped (150 URL, 30 exact, 20 near duplicates; its 20 near ones indexed again).
COPIES = {
    "input_warcs": 1, "copies": 4,
    "chain": {"warcs": 4, "docs_in": 4000, "docs_kept": 150, "docs_indexed": 230, "tokens": 300_000,
              "bytes_read": 100_000_000, "ms_per_doc_total": 4.0,
              "drops": {"lang:other": 2000, "dedup:url": 450, "dedup:exact": 120, "dedup:near": 80},
              "first_copy": {"warcs": 1, "docs_in": 1000, "docs_reaching_dedup": 200, "docs_kept": 150,
                             "docs_indexed": 170, "tokens": 300_000}},
    "pipeline": {"1": {"wall_seconds": 20.0, "efficiency": 0.79}, "2": {"wall_seconds": 10.0, "efficiency": 0.8}},
}
# the head: 20 ms per WARC + 10 us per document reaching dedup
REPLAY = {"model": {"ms_per_warc": 20.0, "us_per_doc": 10.0}, "median": {"head_cpu_us_per_doc_at_dedup": 12.5},
          "check": {"ratio": 0.97}}


def test_documents_reaching_dedup_are_counted_per_copy_of_the_bench_input():
    # a 1 GB crawl WARC is 40 bench WARCs: 40,000 pages, 200 / 1,000 of them reach dedup (not 800 / 1,000: the
    # whole list's kept + dedup drops over one copy's pages)
    p = plan(COPIES, warcs=90_000, workers=1000, shards=10, warc_bytes=1e9)
    w = p["per_warc"]
    assert p["reaching_dedup_per_page"] == 0.2
    assert (w["docs_in"], w["docs_reaching_dedup"], w["docs_kept"], w["tokens"]) == (40_000, 8000, 6000, 12_000_000)
    assert p["docs_indexed"] == 90_000 * 40 * 170 and not p["warnings"]  # the first copy's index, not 230
    wall_s = 90_000 * 40_000 * 4.0 / 1000 / (1000 * 0.8)
    assert p["wall_hours"] == round(wall_s / 3600, 2)
    # the workers stage what reaches dedup: 200 / 150 of the kept tokens
    assert p["staged_bytes_per_second"] == round(90_000 * 12_000_000 * 2 * 200 / 150 / wall_s)
    # a bench JSON from before first_copy: the same share from the whole list (every copy brings the same
    # documents), the index as the whole list counted it, with a warning that it is an upper bound
    old = {**COPIES, "chain": {k: v for k, v in COPIES["chain"].items() if k != "first_copy"}}
    assert Funnel.of_bench(old).docs_reaching_dedup == Funnel.of_bench(COPIES).docs_reaching_dedup == 200
    o = plan(old, warcs=90_000, workers=1000, shards=10, warc_bytes=1e9)
    assert o["per_warc"] == w and o["staged_bytes_per_second"] == p["staged_bytes_per_second"]
    assert o["docs_indexed"] == 90_000 * 40 * 230 and any("upper bound" in x for x in o["warnings"])


def test_the_head_model_at_the_crawls_pages_per_warc_says_which_figure_limits():
    # head CPU per crawl WARC: 0.020 + 10e-6 x 8,000 reaching dedup = 0.1 s; a worker takes 160 CPU s / 0.8 =
    # 200 s per WARC, so one head core feeds 200 / 0.1 = 2,000 workers
    few = plan(COPIES, warcs=90_000, workers=1000, warc_bytes=1e9, replay=REPLAY)["head"]
    assert few["reaching_dedup_per_warc"] == 8000 and few["pages_per_warc"] == 40_000
    assert few["cpu_seconds_per_warc"] == pytest.approx(0.1) and few["workers_per_core"] == 2000
    assert few["cores"] == 0.5 and few["limit"] == "workers" and few["wall_hours_at_head_pace"] is None
    many = plan(COPIES, warcs=90_000, workers=10_000, warc_bytes=1e9, replay=REPLAY)
    h = many["head"]
    assert h["cores"] == 5.0 and h["workers_per_core"] == 2000 and h["limit"] == "head"
    # one head core: 90,000 WARCs x 0.1 s = 2.5 h, against the workers' 0.5 h
    assert h["wall_hours_at_head_pace"] == 2.5 and many["wall_hours"] == 0.5
    assert (h["ms_per_warc"], h["us_per_doc"], h["us_per_doc_at_dedup"], h["model_check_ratio"]) == (
        20.0, 10.0, 12.5, 0.97)


def test_the_head_pays_for_each_lsh_shard_beyond_the_replays():
    # replayed at 2 shards, 1.5 ms per WARC for each more: at 32 shards 0.1 s + 30 x 1.5 ms = 0.145 s per WARC, so
    # one head core feeds 200 / 0.145 = 1,379 workers; at the replay's own shard count (or fewer) nothing is added
    replay = {**REPLAY, "model": {**REPLAY["model"], "shards": 2, "ms_per_warc_per_shard": 1.5}}
    wide = plan(COPIES, warcs=90_000, workers=10_000, shards=32, warc_bytes=1e9, replay=replay)["head"]
    assert wide["cpu_seconds_per_warc"] == pytest.approx(0.145) and wide["workers_per_core"] == 1379
    assert (wide["shards"], wide["replay_shards"], wide["ms_per_warc_per_shard"]) == (32, 2, 1.5)
    assert wide["cores"] == pytest.approx(10_000 / (200 / 0.145), abs=0.01)
    for shards in (1, 2):
        same = plan(COPIES, warcs=90_000, workers=10_000, shards=shards, warc_bytes=1e9, replay=replay)["head"]
        assert same["cpu_seconds_per_warc"] == pytest.approx(0.1)
    # the plan compares shard counts: memory per shard against the workers one head core feeds
    choices = {c["shards"]: c for c in plan(COPIES, warcs=90_000, workers=10_000, shards=32, warc_bytes=1e9,
                                            replay=replay)["shard_choices"]}
    assert choices[32]["workers_per_head_core"] == 1379 and choices[32]["bytes_per_shard"] * 32 == pytest.approx(
        choices[4]["bytes_per_shard"] * 4, rel=1e-6)
    assert choices[4]["workers_per_head_core"] == round(200 / (0.1 + 0.003)) > choices[64]["workers_per_head_core"]
    # a replay JSON from before the shard cost was measured: not counted, and the plan says so
    old = plan(COPIES, warcs=90_000, workers=10_000, shards=32, warc_bytes=1e9, replay=REPLAY)
    assert old["head"]["cpu_seconds_per_warc"] == pytest.approx(0.1) and old["head"]["ms_per_warc_per_shard"] is None
    assert "32 shards cost more than it says" in format_plan(old) and "shard_choices" not in old
    assert "+ 1.5 ms per WARC for each of 30 LSH shards beyond the replay's 2" in format_plan(
        plan(COPIES, warcs=90_000, workers=10_000, shards=32, warc_bytes=1e9, replay=replay))


def test_a_head_that_falls_behind_decides_rounds_at_the_replays_rounds_cost():
    # replayed at 2 shards: one by one 0.1 s per crawl WARC + 1.5 ms per shard beyond 2; behind (rounds of 12, the
    # replay's WARCs at 30 ms against 40 ms one by one) 0.1 x 0.75 + 30 x 0.5 ms = 0.09 s: 200 / 0.09 = 2,222 workers
    behind = {"warcs_per_round": 12.0, "head_cpu_ms_per_warc": 30.0, "ms_per_warc_per_shard": 0.5}
    replay = {**REPLAY, "model": {**REPLAY["model"], "shards": 2, "ms_per_warc_per_shard": 1.5},
              "median": {**REPLAY["median"], "head_cpu_ms_per_warc": 40.0}, "behind": behind}
    many = plan(COPIES, warcs=90_000, workers=10_000, shards=32, warc_bytes=1e9, replay=replay)
    h = many["head"]
    assert h["cpu_seconds_per_warc"] == pytest.approx(0.09) and h["workers_per_core"] == 2222
    assert (h["warcs_per_round"], h["ms_per_warc_per_shard"], h["limit"]) == (12.0, 0.5, "head")
    assert "behind, in rounds of 12 WARCs" in format_plan(many)
    # a head that keeps up (0.145 s per WARC: 1,379 workers per core, 500 asked) decides them as they come
    few = plan(COPIES, warcs=90_000, workers=500, shards=32, warc_bytes=1e9, replay=replay)["head"]
    assert few["cpu_seconds_per_warc"] == pytest.approx(0.145) and few["warcs_per_round"] is None


def test_a_head_behind_in_its_steady_state_pays_its_work_per_warc_and_its_background_per_second():
    # the replay measured its steady state: 20 ms of work per WARC (against 40 ms one by one) and a background of
    # 50 ms of CPU per second. Behind: 0.1 x 20 / 40 + 30 x 0.5 ms = 0.065 s per crawl WARC; one head core feeds
    # (1 - 0.05) x 200 / 0.065 = 2,923 workers; 10,000 workers need 10,000 x 0.065 / 200 + 0.05 = 3.3 head cores
    behind = {"warcs_per_round": 12.0, "head_cpu_ms_per_warc": 30.0, "ms_per_warc_per_shard": 0.5}
    replay = {**REPLAY, "model": {**REPLAY["model"], "shards": 2, "ms_per_warc_per_shard": 1.5},
              "median": {**REPLAY["median"], "head_cpu_ms_per_warc": 40.0}, "behind": behind,
              "background": {"ms_per_second": 50.0}, "steady": {"work_ms_per_warc": 20.0}}
    many = plan(COPIES, warcs=90_000, workers=10_000, shards=32, warc_bytes=1e9, replay=replay)
    h = many["head"]
    assert h["cpu_seconds_per_warc"] == pytest.approx(0.065) and h["workers_per_core"] == 2923
    assert h["cores"] == pytest.approx(3.3) and h["background_cores"] == pytest.approx(0.05)
    assert h["wall_hours_at_head_pace"] == pytest.approx(90_000 * 0.065 / 0.95 / 3600, abs=0.01)
    assert "in its steady state, plus a background of 50.0 ms of CPU per second" in format_plan(many)
    # a head that keeps up pays the one-by-one figure, which has the background in it
    few = plan(COPIES, warcs=90_000, workers=500, shards=32, warc_bytes=1e9, replay=replay)["head"]
    assert few["cpu_seconds_per_warc"] == pytest.approx(0.145) and few["background_cores"] == 0.0


def test_the_planner_at_the_replays_own_warc_is_checked_against_what_the_replay_measured():
    # the replay's WARC: 10,000 pages, 2,000 reaching dedup, 5 ms per page on a worker (50 s per WARC), 2 shards.
    # One by one the model gives 20 ms + 10 us x 2,000 = 40 ms, the replay's own figure, so behind it pays its
    # steady 20 ms of work per WARC: one head core feeds (1 - 0.05) x 50 / 0.020 = 2,375 workers; it measured 2,500
    behind = {"warcs_per_round": 12.0, "head_cpu_ms_per_warc": 30.0, "ms_per_warc_per_shard": 0.5}
    replay = {**REPLAY, "model": {**REPLAY["model"], "shards": 2, "ms_per_warc_per_shard": 1.5},
              "median": {**REPLAY["median"], "head_cpu_ms_per_warc": 40.0}, "behind": behind,
              "background": {"ms_per_second": 50.0},
              "steady": {"work_ms_per_warc": 20.0, "workers_per_head_core": 2500},
              "pages_per_warc": 10_000, "reaching_dedup_per_warc": 2000.0, "worker_ms_per_page": 5.0}
    p = plan(COPIES, warcs=90_000, workers=10_000, shards=32, warc_bytes=1e9, replay=replay)
    assert p["replay_check"] == {"pages_per_warc": 10_000, "worker_ms_per_page": 5.0, "shards": 2, "planned": 2375,
                                 "measured": 2500, "ratio": 0.95}
    assert ("replay check  at the replay's own WARC (10,000 pages, 5.0 ms per page, 2 shard(s)) the planner says one "
            "head core feeds ~2,375 workers, the replay measured ~2,500 (ratio 0.95)") in format_plan(p)
    # a replay JSON that does not record its WARC's shape: no check, and the plan says nothing of one
    old = plan(COPIES, warcs=90_000, workers=10_000, shards=32, warc_bytes=1e9, replay=REPLAY)
    assert "replay_check" not in old and "replay check" not in format_plan(old)


def test_the_cli_plans_several_worker_counts_and_refuses_a_bad_replay(tmp_path):
    bench, replay = tmp_path / "bench.json", tmp_path / "replay.json"
    bench.write_text(json.dumps(COPIES))
    replay.write_text(json.dumps({"commit_path": REPLAY}))

    def run(*args):
        return subprocess.run([sys.executable, "-m", "raycorpus.cli", "plan", str(bench), "--warcs", "90000",
                               "--warc-bytes", "1e9", *args], capture_output=True, text=True, timeout=60)

    r = run("--workers", "1000,10000", "--replay", str(replay))
    assert r.returncode == 0, r.stderr
    one, ten = r.stdout.split("\n\n")
    assert one.startswith("-- 1,000 workers") and ten.startswith("-- 10,000 workers")
    assert "8,000 reach dedup (0.200 per page" in one
    assert "1,000 workers need 0.50 head cores; one head core feeds at most ~2,000 workers: the workers set the " \
           "pace" in one
    assert "10,000 workers need 5.00 head cores; one head core feeds at most ~2,000 workers: the head sets the " \
           "pace: 10,000 workers finish in ~2.5 h, not 0.5 h" in ten
    r = run("--workers", "1000,10000", "--replay", str(replay), "--json")
    assert [p["head"]["limit"] for p in json.loads(r.stdout)] == ["workers", "head"]
    assert run("--workers", "many").returncode == 2
    replay.write_text(json.dumps({"commit_path": {"median": {}}}))
    r = run("--replay", str(replay))
    assert r.returncode == 2 and "not a `raycorpus bench --commit-path --save` JSON" in r.stderr


def test_the_bench_records_the_funnel_of_one_copy_of_its_input(tmp_path, crawls):
    """Over an input listed 3 times, one copy's documents reaching dedup are a third of the whole list's kept +
    dedup drops, and everything the list keeps (documents, tokens) came from the first copy."""
    from raycorpus.cli.bench import bench_chain
    from raycorpus.cli.bench_pipeline import bench_input
    from raycorpus.config import config_from_dict

    sample, tokenizer = crawls(n_warcs=2, pages=20)
    cfg = config_from_dict({"input": {"manifest": str(sample.manifest_path)}, "output": {"path": str(tmp_path / "o")},
                            "tokenizer": {"path": tokenizer}})
    warcs = [str(w) for w in sample.warc_paths]
    _, urls = bench_input(warcs, 3, tmp_path)
    chain = bench_chain(cfg, urls, repeats=1, copy_warcs=len(warcs))
    first = chain["first_copy"]
    dedup_drops = sum(n for k, n in chain["drops"].items() if k.startswith("dedup:"))
    assert first["warcs"] == 2 and first["docs_in"] * 3 == chain["docs_in"] and first["docs_kept"] > 0
    assert first["docs_reaching_dedup"] * 3 == chain["docs_kept"] + dedup_drops
    assert first["docs_reaching_dedup"] > first["docs_kept"] == chain["docs_kept"]
    assert first["tokens"] == chain["tokens"] and chain["drops"]["dedup:url"] == 2 * first["docs_kept"]
    f = Funnel.of_bench({"input_warcs": 2, "copies": 3, "chain": chain})
    assert f.docs_reaching_dedup == first["docs_reaching_dedup"] / 2 and f.docs_kept == first["docs_kept"] / 2
