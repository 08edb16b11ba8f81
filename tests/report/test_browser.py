"""The report as a person sees it: Debian's Chromium, driven by Playwright (launched with ``executable_path``:
nothing is downloaded), opens the demo's ``report.html`` from ``file://``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from raycorpus.cli import main
from tests.support.corpus import make_config, run
from tests.support.report import page_data

pytestmark = pytest.mark.integration  # starts Chromium and local Ray builds

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]  # no connection of Chromium's own, on a closed network
SECTIONS = ["overview", "funnel", "languages", "lengths", "signals", "dedup", "cost", "output", "documents"]


@pytest.fixture(scope="module")
def browser():
    if CHROMIUM is None:
        pytest.skip("Debian's chromium is not installed (apt-get install chromium, as .ci/run does)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (the test extra)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Path:
    """`raycorpus demo` as a user runs it; its last line names the report."""
    root = tmp_path_factory.mktemp("demo") / "d"
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}  # its own local Ray, as for a user
    r = subprocess.run([sys.executable, "-m", "raycorpus.cli", "demo", "--dir", str(root), "--progress", "off"],
                       capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    report = root / "corpus" / "report.html"
    assert r.stdout.strip().splitlines()[-1].startswith(f"report: {report}")
    return report


RENDERED = ("document.querySelectorAll('[data-chart]').length > 0 && [...document.querySelectorAll('[data-chart]')]"
            ".every(d => d.classList.contains('js-plotly-plot'))")  # every chart drawn by plotly


class Page:
    """A report opened in Chromium, with every request it made and every console error."""

    def __init__(self, browser, path: Path):
        self.requests: list[str] = []
        self.errors: list[str] = []
        self.page = browser.new_page(viewport={"width": 1400, "height": 1000})
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.goto(path.as_uri())
        self.page.wait_for_function(RENDERED)

    def js(self, expression: str):
        return self.page.evaluate(expression)

    def close(self) -> None:
        self.page.close()


@pytest.fixture
def page(browser, demo):
    p = Page(browser, demo)
    yield p
    p.close()


def test_the_demos_report_opens_offline_with_no_request_and_no_error(page, demo):
    assert page.requests == [demo.as_uri()]
    assert page.errors == []
    assert page.js("[...document.querySelectorAll('main > section')].map(s => s.id)") == SECTIONS
    assert page.js("document.querySelectorAll('.missing').length") == 0
    assert page.js("document.getElementById('status').textContent") == "complete"


def test_every_chart_renders_the_runs_numbers(page, demo):
    s = json.loads((demo.parent / "summary.json").read_text())
    charts = page.js("[...document.querySelectorAll('[data-chart]')].map(d => [d.dataset.chart, d.data.length])")
    assert len(charts) >= 10 and all(n > 0 for _, n in charts), charts
    funnel = page.js("document.getElementById('chart-funnel').data[0].x")
    assert funnel[0] == s["docs"]["in"] and funnel[-1] == s["docs"]["kept"]
    assert funnel[0] - funnel[-2] == sum(s["docs"]["dropped"].values())
    shown = page.js("[...document.querySelectorAll('#funnel-stages tbody td:last-child')].map(t => t.textContent)")
    assert shown == [f"{n:,}" for n in funnel]
    kept = page.js("document.getElementById('chart-lang-docs').data.find(t => t.name === 'kept').y")
    assert sum(kept) == s["docs"]["kept"]
    kinds = page.js("document.getElementById('chart-dedup-kinds').data[0]")
    assert dict(zip(kinds["x"], kinds["y"], strict=True)) == {
        k.removeprefix("dedup:"): v for k, v in s["docs"]["dropped"].items() if k.startswith("dedup:")}
    sizes = page.js("document.getElementById('chart-dedup-cluster-sizes').data[0]")
    assert sum(sizes["y"]) == s["docs"]["kept"] == s["clusters"]["documents"]  # one cluster per kept document
    assert [x.split(":")[0] for x in sizes["x"]] == ["1", "2", "3-4", "5-99", "100-999", "1000+"]  # by size
    assert s["clusters"]["duplicates"] == sum(v for k, v in s["docs"]["dropped"].items() if k.startswith("dedup:"))
    stages = page.js("document.getElementById('chart-cost').data[0].y")
    assert sorted(stages) == sorted(s["stage_seconds"])
    cards = page.js("[...document.querySelectorAll('#output .card .value')].map(v => v.textContent)")
    assert f"{s['shards']:,}" in cards and f"{s['tokens']:,}" in cards
    readouts = page.js("[...document.querySelectorAll('.signal .readout')].map(r => r.textContent)")
    assert readouts and all("documents" in r for r in readouts)


def test_the_document_browser_filtered_to_one_reason_shows_that_reasons_samples(page, demo):
    docs = page_data(demo)["documents"]["docs"]
    dropped = [d["reason"] for d in docs if d["reason"] != "kept"]
    reason = max(sorted(set(dropped)), key=dropped.count)
    page.page.select_option("#docs-reason", reason)
    shown = page.js("[...document.querySelectorAll('#docs-list .doc')].map(d => d.dataset.reason)")
    assert shown and set(shown) == {reason} and len(shown) == sum(d["reason"] == reason for d in docs)
    urls = page.js("[...document.querySelectorAll('#docs-list .doc a.url')].map(a => a.textContent)")
    assert urls == [d["url"] for d in docs if d["reason"] == reason]
    page.page.select_option("#docs-reason", "")
    page.page.fill("#docs-search", docs[0]["url"])
    assert page.js("[...document.querySelectorAll('#docs-list .doc a.url')].map(a => a.textContent)") == [
        d["url"] for d in docs if docs[0]["url"].lower() in d["url"].lower() or docs[0]["url"].lower()
        in d["text"].lower()]


def binding_lower_threshold(charts: list) -> tuple[int, dict]:
    """The first signal whose first threshold is a lower bound (keeps above) that some documents fail."""
    for i, per_lang in enumerate(charts):
        c = per_lang[0]
        if c["thresholds"] and c["thresholds"][0]["keep"] == "above":
            low = c["thresholds"][0]["value"]
            if sum(n for e, n in zip(c["edges"], c["counts"], strict=True) if e < low):
                return i, c
    raise AssertionError("no lower threshold of the demo drops a document")


def test_moving_a_threshold_shows_how_many_would_pass(page, demo):
    i, chart = binding_lower_threshold(page_data(demo)["signals"]["signals"])
    card = f"#signal-{i}"
    assert int(page.js(f"document.querySelector('{card} .readout').dataset.passed")) == chart["kept"]
    # the lower threshold moved to the first bin: nothing fails it any more; the other ones still hold
    page.page.eval_on_selector(f"{card} input[type=range]", "r => { r.value = 0; r.dispatchEvent(new Event('input')) }")
    others = chart["thresholds"][1:]
    expect = sum(n for e, n in zip(chart["edges"], chart["counts"], strict=True)
                 if all(e < t["value"] if t["keep"] == "below" else e >= t["value"] for t in others))
    assert int(page.js(f"document.querySelector('{card} .readout').dataset.passed")) == expect > chart["kept"]
    assert "moved from" in page.js(f"document.querySelector('{card} .readout').textContent")


@pytest.fixture(scope="module")
def tag_and_select(crawls, tmp_path_factory, ray_address):
    """A tag-mode output and the `raycorpus select` of it with a stricter words threshold (some kept documents of
    the tag run have fewer than 300 words)."""
    from raycorpus.config import config_from_dict
    from tests.runtime.test_select import raw_config, select

    small = crawls(3, 30, 5)
    c, tok = small
    root = tmp_path_factory.mktemp("against")
    run(make_config(str(c.manifest_path), str(root / "tag"), tok, output={"documents": True},
                    filters={"mode": "tag"}))
    cfg = config_from_dict(raw_config(small, root / "sel", gopher_quality={"min_words": 300}))
    select(cfg, root / "tag")
    return root / "tag", root / "sel"


def test_against_shows_the_deltas_of_a_tag_run_and_its_select_run(browser, tag_and_select, tmp_path):
    tag, sel = tag_and_select
    target = tmp_path / "against.html"
    assert main(["report", str(tag), "--against", str(sel), "--out", str(target)]) == 0
    data = page_data(target)["against"]
    rows = {r["reason"]: r for r in data["by_reason"]}
    assert rows["gopher_quality:too_few_words"]["delta"] > 0  # the stricter threshold drops more
    assert rows["kept"]["delta"] < 0 and rows["kept"]["this"] > rows["kept"]["other"]
    assert data["kept_only_here"] and all(d["there"] != "kept" for d in data["kept_only_here"])
    p = Page(browser, target)
    try:
        assert p.requests == [target.as_uri()] and p.errors == []
        shown = p.js("[...document.querySelectorAll('#against-reasons tbody tr')].map(r => [...r.children]"
                     ".map(c => c.textContent))")
        assert [r[0] for r in shown] == [r["reason"] for r in data["by_reason"]]
        kept_row = next(r for r in shown if r[0] == "kept")
        assert kept_row[3] == f"{rows['kept']['delta']:,}"
        assert p.js("document.querySelectorAll('#only-here-list .doc').length") == min(40, len(data["kept_only_here"]))
    finally:
        p.close()


@pytest.fixture(scope="module")
def paragraphs_report(crawl, tmp_path_factory, ray_address) -> tuple[Path, dict]:
    """A build with paragraph dedup (the sample crawl's pages share short lines: min_chars 16): its report and
    summary."""
    c, tok = crawl
    out = tmp_path_factory.mktemp("paragraphs") / "out"
    s = run(make_config(str(c.manifest_path), str(out), tok,
                        dedup={"paragraphs": {"enabled": True, "min_chars": 16, "threshold": 0.5}}))
    assert main(["report", str(out)]) == 0
    return out / "report.html", s.to_dict()


def test_paragraph_dedup_shows_what_it_removed_and_dropped(browser, paragraphs_report):
    report, s = paragraphs_report
    p = Page(browser, report)
    try:
        assert p.errors == []
        note = p.js("document.getElementById('dedup-paragraphs').textContent")
        removed, total = s["dedup_paragraphs"]["removed"], s["dedup_paragraphs"]["paragraphs"]
        dropped = s["docs"]["dropped"]["dedup:paragraphs"]
        assert removed > 0 and dropped > 0
        assert f"{removed:,} of the kept documents' {total:,} paragraphs" in note and f"{dropped:,} documents" in note
        kinds = p.js("document.getElementById('chart-dedup-kinds').data[0]")
        assert dict(zip(kinds["x"], kinds["y"], strict=True))["paragraphs"] == dropped
        tokens = p.js("document.getElementById('chart-lang-tokens').data.find(t => t.name === 'kept').y")
        assert sum(tokens) == s["tokens"]  # what the shards hold: less the removed paragraphs
    finally:
        p.close()
