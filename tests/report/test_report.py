"""`raycorpus report` on real builds (a real Ray): the page's numbers are the run's, the data behind it does not
depend on the worker count, bad input exits 2, an output without report data renders what it can."""

from __future__ import annotations

import itertools

import pytest

from raycorpus.cli import main
from raycorpus.process.profile import PASSED
from tests.support.corpus import make_config, report_data, run
from tests.support.report import page_data

MAX_DEMO_BYTES = 10_000_000


@pytest.fixture(scope="module")
def small(crawls):
    return crawls(3, 30, 5)


@pytest.fixture(scope="module")
def built(small, tmp_path_factory, ray_address):
    c, tok = small
    out = tmp_path_factory.mktemp("report") / "out"
    summary = run(make_config(str(c.manifest_path), str(out), tok, ray={"workers": 1},
                              output={"report": {"samples_passed": 40, "samples_per_reason": 3}}))
    return out, summary


def test_the_page_shows_the_runs_numbers(built, tmp_path, capsys):
    out, summary = built
    target = tmp_path / "r.html"
    assert main(["report", str(out), "--out", str(target)]) == 0
    assert capsys.readouterr().out.strip() == str(target)
    data = page_data(target)
    s = summary  # the in-process build writes no summary.json: the page's numbers come from the ledger
    assert not data["partial"] and data["committed"] == s.warcs.committed == 3
    stages = data["funnel"]["stages"]
    assert stages[0]["docs"] == s.docs.in_ and stages[-1]["docs"] == s.docs.kept
    drops = [a["docs"] - b["docs"] for a, b in itertools.pairwise(stages[:-1])]
    assert sum(drops) == sum(s.docs.dropped.values())
    assert {(r["stage"], r["reason"]): r["docs"] for r in data["funnel"]["reasons"]} == {
        tuple(k.split(":", 1)): v for k, v in s.docs.dropped.items()}
    assert sum(row["kept"] for row in data["languages"]["rows"]) == s.docs.kept
    assert sum(row["tokens_kept"] for row in data["languages"]["rows"]) == s.tokens
    assert data["output"]["shards"] == s.shards and data["output"]["tokens"] == s.tokens
    assert {st["stage"] for st in data["cost"]["stages"]} == set(s.stage_seconds)
    dedup = sum(v for k, v in s.docs.dropped.items() if k.startswith("dedup:"))
    assert sum(data["dedup"]["counts"].values()) == dedup
    assert sum(c["duplicates"] for c in data["dedup"]["clusters"]) == dedup
    words = next(sig for sig in data["signals"]["signals"] if sig[0]["signal"] == "gopher_quality.words")
    assert [t["value"] for t in words[0]["thresholds"]] == [50, 100_000]
    docs = data["documents"]["docs"]
    reasons = {d["reason"] for d in docs}
    assert "kept" in reasons and reasons - {"kept"} <= set(s.docs.dropped)
    passed = sum(d["reason"] == "kept" or d["reason"].startswith("dedup:") for d in docs)
    assert passed == min(40, s.docs.kept + dedup)
    assert target.stat().st_size < MAX_DEMO_BYTES


def test_the_samples_are_the_smallest_keys_and_match_the_outcomes(built):
    out, summary = built
    data = report_data(out)
    passed = data["samples"][PASSED]
    assert [int(d["key"]) for d in passed] == sorted(int(d["key"]) for d in passed)
    assert data["reasons"]["kept"] == summary.docs.kept
    assert {k: v for k, v in data["reasons"].items() if k != "kept"} == summary.docs.dropped


def test_the_report_data_does_not_depend_on_the_worker_count(small, built, tmp_path, ray_address):
    c, tok = small
    out, _ = built
    two = tmp_path / "two"
    run(make_config(str(c.manifest_path), str(two), tok, ray={"workers": 2, "in_flight_per_worker": 1},
                    output={"report": {"samples_passed": 40, "samples_per_reason": 3}}))
    assert report_data(two) == report_data(out)


def test_an_output_without_report_data_renders_what_it_can(small, tmp_path, ray_address):
    c, tok = small
    out = tmp_path / "old"
    s = run(make_config(str(c.manifest_path), str(out), tok, output={"report": False}))
    assert not (out / "report").exists()
    assert main(["report", str(out)]) == 0
    data = page_data(out / "report.html")
    assert data["funnel"]["stages"][0]["docs"] == s.docs.in_ and data["output"]["shards"] == s.shards
    for section in ("languages", "lengths", "signals", "documents"):
        assert data[section] is None and "no report data" in data["missing"][section]


def test_a_missing_folder_or_one_that_is_no_output_exits_2_naming_it(tmp_path, capsys):
    missing = tmp_path / "nothing-here"
    assert main(["report", str(missing)]) == 2
    assert str(missing) in capsys.readouterr().err
    other = tmp_path / "some-folder"
    other.mkdir()
    (other / "notes.txt").write_text("hello")
    assert main(["report", str(other)]) == 2
    err = capsys.readouterr().err
    assert str(other) in err and "not a raycorpus output" in err
