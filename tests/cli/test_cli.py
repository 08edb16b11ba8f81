"""The faces: `raycorpus demo` and `raycorpus run configs/demo.yaml`, as a user runs them."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.support.cli import cli
from tests.support.corpus import shard_digests
from tests.support.paths import REPO, SHARED_WARC


def _demo(tmp_path):
    """`raycorpus demo` into ``tmp_path/raycorpus-demo``, beside a copy of the shipped `configs/demo.yaml` that
    points at it; the finished process."""
    (tmp_path / "configs").mkdir()
    shutil.copy(REPO / "configs" / "demo.yaml", tmp_path / "configs" / "demo.yaml")
    r = cli("demo", "--dir", str(tmp_path / "raycorpus-demo"), "--progress", "off")
    assert r.returncode == 0, r.stderr[-3000:]
    return r


def test_demo_then_run_the_shipped_demo_config(tmp_path, ray_address):
    demo = tmp_path / "raycorpus-demo"
    r = _demo(tmp_path)
    out = r.stdout
    assert "sample crawl: 4 WARC files" in out
    assert "4 committed, 0 failed" in out and "documents" in out and "kept" in out
    assert "skipped" in out and "not_html" in out  # the funnel shows what was left out and why
    assert f"shards: {demo / 'corpus' / 'shards'}" in out
    assert len(list((demo / "corpus" / "shards").glob("*.tokens"))) >= 2

    r = cli("run", str(tmp_path / "configs" / "demo.yaml"), "--progress", "off")
    assert r.returncode == 0, r.stderr[-3000:]
    # same input, tokenizer and shard size through the other entry point: the same bytes
    assert shard_digests(demo / "corpus-from-config") == shard_digests(demo / "corpus")

    r = cli("summary", str(demo / "corpus"))
    assert r.returncode == 0 and "4 committed" in r.stdout

    r = cli("inspect", str(demo / "corpus"), "--ctx-len", "64", "--row", "1")
    assert r.returncode == 0 and "window 1 (ctx_len 64)" in r.stdout and "mask:" in r.stdout


@pytest.mark.slow
def test_bench_smoke_runs_on_the_shipped_demo_config(tmp_path, ray_address):
    """`raycorpus bench` on the demo's crawl: the chain, the formats, 1 -> 2 workers, WET against WARC and the
    fixed cost of a one-WARC run (figures are printed, not asserted: timings here are noisy)."""
    _demo(tmp_path)
    r = cli("bench", str(tmp_path / "configs" / "demo.yaml"), "--warcs", "2", "--repeats", "1", "--copies", "1",
            "--save", str(tmp_path / "bench.json"))
    assert r.returncode == 0, r.stderr[-3000:]
    assert "bare bound" in r.stdout and "efficiency" in r.stdout and "scaling 1 -> 2 workers" in r.stdout
    b = json.loads((tmp_path / "bench.json").read_text())
    chain = b["chain"]
    assert chain["docs_in"] > 0 and {"extract", "minhash", "dedup", "tokenize"} <= set(chain["ms_per_doc"])
    assert set(b["formats"]["million_tokens_per_second"]) == {"megatron", "datatrove", "packed", "mds", "litdata"}
    assert set(b["pipeline"]) == {"1", "2"} and all(p["docs_in"] == chain["docs_in"] for p in b["pipeline"].values())
    assert b["pipeline"]["2"]["peak_rss_mb"]["workers"] > 0

    # WET against WARC (the crawl's WET made from the extractor's text keeps the same documents)
    pair = SHARED_WARC / "whirlwind" / "whirlwind.warc"
    r = cli("bench", str(tmp_path / "configs" / "demo.yaml"), "--warcs", "1", "--repeats", "1", "--wet", "--json",
            "--wet-pair", f"{pair}.gz,{pair}.wet.gz")
    assert r.returncode == 0, r.stderr[-3000:]
    w = json.loads(r.stdout)
    assert w["wet"]["kept_wet"] == w["wet"]["kept_warc"] > 0 and w["wet"]["wet_over_warc"] > 0
    if (SHARED_WARC / "whirlwind").is_dir():  # CC's own WET of a real page: its text holds most of ours
        assert w["wet_quality"]["docs_warc"] == w["wet_quality"]["docs_wet"] == 1
        assert 0.5 < w["wet_quality"]["warc_text_kept_by_wet"] <= 1

    # the fixed cost of a one-WARC run (own private Ray: the test cluster's address is not passed on)
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    r = subprocess.run([sys.executable, "-m", "raycorpus.cli", "bench", str(tmp_path / "configs" / "demo.yaml"),
                        "--warcs", "1", "--repeats", "1", "--startup", "--json"], capture_output=True, text=True,
                       timeout=600, env=env, check=False)
    assert r.returncode == 0, r.stderr[-3000:]
    st = json.loads(r.stdout)["startup"]
    assert st["processing_seconds"] > 0 and st["fixed_seconds"] > 0 and len(st["fixed_runs"]) == 1


def test_demo_with_paragraph_dedup_counts_what_it_removed(tmp_path, ray_address):
    r = cli("demo", "--dir", str(tmp_path / "d"), "--warcs", "2", "--pages", "40", "--paragraphs",
            "--progress", "off")
    assert r.returncode == 0, r.stderr[-3000:]
    s = json.loads((tmp_path / "d" / "corpus" / "summary.json").read_text())
    assert s["dedup_paragraphs"]["removed"] > 0
    assert f"{s['dedup_paragraphs']['removed']:,} of {s['dedup_paragraphs']['paragraphs']:,} removed" in r.stdout


def test_demo_refuses_a_folder_it_did_not_make(tmp_path):
    (tmp_path / "precious.txt").write_text("keep me")
    r = cli("demo", "--dir", str(tmp_path))
    assert r.returncode == 2 and "not made by `raycorpus demo`" in r.stderr
    assert (tmp_path / "precious.txt").read_text() == "keep me"


def test_run_without_the_sample_explains(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("input: {manifest: nowhere/warc.paths}\noutput: {path: out}\n"
                   "tokenizer: {path: tok.json, train: {vocab_size: 300}}\n")
    r = cli("run", str(cfg))
    assert r.returncode == 2 and "nowhere/warc.paths" in r.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_eval_prints_extraction_and_langid_tables():
    from tests.support.paths import SHARED, need_shared

    need_shared(SHARED / "data" / "extraction" / "trafilatura-eval")
    r = cli("eval", "--repeats", "1", "--extraction", str(SHARED / "data" / "extraction"),
            "--langid", str(SHARED / "data" / "langid" / "sample_20_per_lang.jsonl"),
            "--decontam", str(SHARED / "data" / "decontam"), "--decontam-every", "20", "--dedup-every", "40")
    assert r.returncode == 0, r.stderr[-2000:]
    rows = {tuple(line.split()[:2]): line.split() for line in r.stdout.splitlines() if line.split()}
    shipped, bare = rows[("trafilatura-eval", "shipped")], rows[("trafilatura-eval", "resiliparse")]
    assert float(shipped[4]) >= float(bare[4])  # F1 column: the shipped stage never scores below bare resiliparse
    lang = [line for line in r.stdout.splitlines() if line.startswith("langid")]
    assert len(lang) == 2 and lang[0].split("accuracy")[1].split()[0] == lang[1].split("accuracy")[1].split()[0]
    assert "decontam:" in r.stdout and " 0 false positives" in r.stdout
    assert [line.split()[0] for line in r.stdout.splitlines() if "verbatim" in line] == [
        "gsm8k", "humaneval", "mmlu", "mtbench"]
    assert "language defaults (fineweb2 vs none)" in r.stdout and "words zh:" in r.stdout
    near = [line for line in r.stdout.splitlines() if line.startswith("near dedup")]
    assert len(near) == 1 and "document level" in near[0] and "14 bands x 8 rows" in near[0]
    assert "verify_margin 0.0125" in near[0] and "OPH 768 x 2 bits" in near[0]  # the parameters scored
    halves = [line.split()[0] for line in r.stdout.splitlines() if line.strip().startswith(("tuning ", "validation "))]
    assert halves == ["tuning", "validation"] * 2  # P and R per set (extraction, web) and per half
    assert [line.split()[0] for line in r.stdout.splitlines() if line.strip().startswith("half ")] == ["half"] * 6
    assert "pairwise on the benchmark's hard set" in r.stdout and "bytes per indexed document" in r.stdout


def test_bench_chain_prints_the_ratio_to_bare_extraction(tmp_path, crawls):
    """`raycorpus bench --chain` (no Ray): bare extraction and the tag-mode chain per page, per stage, the ratio."""
    import yaml

    sample, tokenizer = crawls(n_warcs=1, pages=20)
    cfg = {"input": {"manifest": str(sample.manifest_path)}, "output": {"path": str(tmp_path / "out")},
           "tokenizer": {"path": tokenizer}}
    (tmp_path / "bench.yaml").write_text(yaml.safe_dump(cfg))
    r = cli("bench", str(tmp_path / "bench.yaml"), "--warcs", "1", "--repeats", "1", "--chain", "--save",
            str(tmp_path / "chain.json"))
    assert r.returncode == 0, r.stderr[-3000:]
    assert "ratio chain / bare:" in r.stdout and "bare extract_plain_text" in r.stdout
    b = json.loads((tmp_path / "chain.json").read_text())["chain_ratio"]
    assert b["pages"] > 0 and b["bare_ms_per_doc"] > 0 and b["ratio"] > 0 and len(b["ratio_runs"]) == 1
    # tag mode: every stage ran on every page that extraction kept, tokenization included
    assert {"read", "extract", "lang", "gopher_repetition", "pii", "hash", "minhash", "tokenize"} <= set(
        b["stages_ms_per_doc"])
