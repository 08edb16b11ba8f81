"""The Grafana dashboard (dashboards/raycorpus.json): Grafana 11.6's JSON Schema, PromQL that parses (real
promtool and promql-parser), only metrics raycorpus declares, and a broken copy that the same checks reject."""

from __future__ import annotations

import copy
import importlib.util
import json
import math
import re
import shutil
import subprocess
import sys
import time

import jsonschema
import pytest

from raycorpus.runtime.metrics import BY_NAME, CATALOGUE, PREFIX, MetricSpec, exported_names
from tests.support import promql
from tests.support.cluster import LocalCluster, ray_env
from tests.support.corpus import make_crawl, make_tokenizer
from tests.support.paths import REPO, SHARED, need_shared
from tests.support.servers import LocalHTTPServer

DASHBOARD = REPO / "dashboards" / "raycorpus.json"
GRAFANA_SCHEMAS = SHARED / "data" / "deploy-schemas" / "grafana-jsonschema"
# labels a raycorpus series may be selected on besides its declared tags: the output tag every series carries,
# KubeRay's cluster label, Ray's own labels
COMMON_LABELS = {"output", "ray_io_cluster", "SessionName", "NodeAddress", "Component", "Version", "WorkerId",
                 "otel_scope_name", "instance", "job"}


@pytest.fixture(scope="module")
def dashboard() -> dict:
    return json.loads(DASHBOARD.read_text())


def _schema(name: str) -> dict:
    return json.loads(need_shared(GRAFANA_SCHEMAS / f"{name}.jsonschema.json").read_text())


def _definition_validator(name: str, definition: str) -> jsonschema.Draft7Validator:
    """A validator for one definition of a plugin's schema file (those files hold only ``definitions``)."""
    schema = _schema(name)
    assert schema["$schema"] == "http://json-schema.org/draft-07/schema#"
    return jsonschema.Draft7Validator({"$ref": f"#/definitions/{definition}", "definitions": schema["definitions"]})


def schema_errors(board: dict) -> list[str]:
    """Where ``board`` breaks Grafana 11.6's dashboard schema, the timeseries / stat option schemas, or the
    Prometheus query schema (for every target)."""
    dashboard_schema = _schema("dashboard")
    assert dashboard_schema["$schema"] == "http://json-schema.org/draft-07/schema#"
    jsonschema.Draft7Validator.check_schema(dashboard_schema)
    errors = [f"dashboard {e.json_path}: {e.message}"
              for e in jsonschema.Draft7Validator(dashboard_schema).iter_errors(board)]
    by_plugin = {
        "timeseries": (_definition_validator("timeseries", "Options"),
                       _definition_validator("timeseries", "FieldConfig")),
        "stat": (_definition_validator("stat", "Options"), None),
    }
    query = _definition_validator("prometheus", "Dataquery")
    for panel in board.get("panels", []):
        where = f"panel {panel.get('id')} {panel.get('title')!r}"
        options, field_config = by_plugin.get(panel.get("type"), (None, None))
        if options is not None:
            errors += [f"{where} options {e.json_path}: {e.message}" for e in options.iter_errors(panel["options"])]
        if field_config is not None:
            custom = panel["fieldConfig"]["defaults"].get("custom", {})
            errors += [f"{where} custom {e.json_path}: {e.message}" for e in field_config.iter_errors(custom)]
        for target in panel.get("targets", []):
            errors += [f"{where} target {e.json_path}: {e.message}" for e in query.iter_errors(target)]
    return errors


def queries(board: dict) -> list[tuple[str, str]]:
    """(where, PromQL with Grafana's variables substituted) for every expression of ``board``."""
    return [(where, promql.substitute_grafana_variables(expr)) for where, expr in promql.dashboard_queries(board)]


def promtool_errors(board: dict, folder) -> str:
    """promtool's complaint about ``board``'s expressions ('' when they all parse)."""
    if promql.promtool() is None:
        pytest.skip("promtool not installed (Debian package prometheus): PromQL is not checked by Prometheus")
    checked = promql.promtool_check(queries(board), folder)
    return "" if checked.returncode == 0 else checked.stdout + checked.stderr


def parser_errors(board: dict) -> list[str]:
    pytest.importorskip("promql_parser", reason="promql-parser (PyPI, in the test extra) not installed")
    return [f"{where}: {error}" for where, expr in queries(board) if (error := promql.parse_error(expr))]


def declared_spec(series: str) -> MetricSpec:
    """The catalogue entry of an exported series name (a histogram's _bucket/_sum/_count give the histogram)."""
    name = series.removeprefix(PREFIX)
    return BY_NAME.get(name) or BY_NAME[re.sub(r"_(bucket|sum|count)$", "", name)]


def name_errors(board: dict) -> list[str]:
    """Selectors of ``board`` that read a metric raycorpus does not declare, or a label its series cannot have."""
    pytest.importorskip("promql_parser", reason="promql-parser (PyPI, in the test extra) not installed")
    declared = exported_names()
    errors = []
    for where, expr in queries(board):
        for selector in promql.selectors(expr):
            if selector.metric not in declared:
                errors.append(f"{where}: {selector.text} is not a metric raycorpus declares")
                continue
            spec = declared_spec(selector.metric)
            allowed = COMMON_LABELS | set(spec.tags) | ({"le"} if selector.metric.endswith("_bucket") else set())
            errors += [f"{where}: {selector.text} matches on {label!r}, which {spec.name} does not have"
                       for label in selector.labels if label not in allowed]
    return errors


def missing_metrics(board: dict) -> list[str]:
    """Catalogue metrics that no expression of ``board`` reads."""
    pytest.importorskip("promql_parser", reason="promql-parser (PyPI, in the test extra) not installed")
    used = {s.metric for _, expr in queries(board) for s in promql.selectors(expr)} & exported_names()
    read = {declared_spec(name).name for name in used}
    return [spec.name for spec in CATALOGUE if spec.name not in read]


# ------------------------------------------------------------------------------------------------ the committed file


def test_committed_json_is_the_build_script_output():
    spec = importlib.util.spec_from_file_location("dashboard_build", REPO / "dashboards" / "build.py")
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    assert DASHBOARD.read_text() == build.render(), "run: python dashboards/build.py"


def test_validates_against_grafana_schema(dashboard):
    assert schema_errors(dashboard) == []


def test_variables_datasource_cluster_output(dashboard):
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    cluster = variables["cluster"]
    assert cluster["query"] == "label_values(ray_raycorpus_warcs, ray_io_cluster)"
    assert cluster["includeAll"] and cluster["allValue"] == ".*"  # All also matches a Prometheus without KubeRay
    assert re.fullmatch(r"label_values\(ray_raycorpus_warcs\{.*\}, output\)", variables["output"]["query"])
    for panel in dashboard["panels"]:
        if panel["type"] == "row":
            continue
        assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
        for target in panel.get("targets", []):
            assert target["datasource"]["uid"] == "${datasource}", panel["title"]


def test_every_series_is_filtered_by_cluster_and_output_and_rates_use_rate_interval(dashboard):
    pytest.importorskip("promql_parser", reason="promql-parser (PyPI, in the test extra) not installed")
    cluster, output = promql.GRAFANA_TEST_VALUES["cluster"], promql.GRAFANA_TEST_VALUES["output"]
    for where, expr in promql.dashboard_queries(dashboard):
        if not where.startswith("panel"):
            continue
        for selector in promql.selectors(promql.substitute_grafana_variables(expr)):
            assert selector.labels.get("ray_io_cluster") == f'ray_io_cluster=~"{cluster}"', (where, selector.text)
            assert selector.labels.get("output") == f'output="{output}"', (where, selector.text)
        windows = re.findall(r"\[([^\]]*)\]", expr)
        assert all(w in ("$__rate_interval", "$__range") for w in windows), (where, windows)


def test_panels_are_on_the_grid_without_overlap(dashboard):
    panels = dashboard["panels"]
    assert len({p["id"] for p in panels}) == len(panels)
    taken: set[tuple[int, int]] = set()
    for panel in panels:
        pos = panel["gridPos"]
        assert pos["x"] + pos["w"] <= 24, panel["title"]
        cells = {(x, y) for x in range(pos["x"], pos["x"] + pos["w"]) for y in range(pos["y"], pos["y"] + pos["h"])}
        assert not cells & taken, f"{panel['title']} overlaps another panel"
        taken |= cells


def test_panels_cover_the_issue(dashboard):
    titles = " | ".join(p["title"].lower() for p in dashboard["panels"])
    for words in ("documents / s", "tokens / s", "bytes read / s", "kept vs dropped", "eta", "progress",
                  "failed", "retries", "dedup rate", "lsh", "workers vs cluster cpus", "per-stage latency p95",
                  "per-stage latency mean", "per-warc latency"):
        assert words in titles, words
    kinds = {p["type"] for p in dashboard["panels"]}
    assert {"timeseries", "stat", "bargauge"} <= kinds


# ------------------------------------------------------------------------------------------------ PromQL


def test_every_expression_parses_with_promtool(dashboard, tmp_path):
    assert len(queries(dashboard)) >= 30
    assert promtool_errors(dashboard, tmp_path) == ""


def test_every_expression_parses_with_promql_parser(dashboard):
    assert parser_errors(dashboard) == []


def test_only_declared_metrics_and_labels(dashboard):
    assert name_errors(dashboard) == []


def test_every_declared_metric_is_on_the_dashboard(dashboard):
    assert missing_metrics(dashboard) == []


# ------------------------------------------------------------------------------------------------ the checks can fail


def _broken(dashboard: dict, expr: str) -> dict:
    """A copy of ``dashboard`` whose first target's expression is ``expr``."""
    broken = copy.deepcopy(dashboard)
    next(p for p in broken["panels"] if p.get("targets"))["targets"][0]["expr"] = expr
    return broken


UNCLOSED = 'sum(rate(ray_raycorpus_docs_in_total{output="$output"}[$__rate_interval])'


def test_unparsable_promql_is_rejected_by_promtool(dashboard, tmp_path):
    assert "unclosed left parenthesis" in promtool_errors(_broken(dashboard, UNCLOSED), tmp_path)


def test_unparsable_promql_is_rejected_by_promql_parser(dashboard):
    assert any("unclosed" in e for e in parser_errors(_broken(dashboard, UNCLOSED)))


def test_undeclared_metric_label_or_variable_is_rejected(dashboard):
    typo = _broken(dashboard, "sum(rate(ray_raycorpus_docs_typo_total[$__rate_interval]))")
    assert any("ray_raycorpus_docs_typo_total" in e for e in name_errors(typo))
    wrong_label = _broken(dashboard, 'sum(rate(ray_raycorpus_docs_in_total{stage="dedup"}[$__rate_interval]))')
    assert any("'stage'" in e for e in name_errors(wrong_label))
    with pytest.raises(ValueError, match="undefined_variable"):
        queries(_broken(dashboard, "sum(rate(ray_raycorpus_docs_in_total[$undefined_variable]))"))


def test_schema_violations_are_rejected(dashboard):
    broken = copy.deepcopy(dashboard)
    broken["panels"][1]["gridPos"]["w"] = 30
    broken["templating"]["list"][0]["type"] = "prometheus"
    broken["panels"][1]["options"]["legend"]["placement"] = "top"  # the timeseries plugin's own schema
    broken["panels"][1]["targets"][0]["format"] = "graph"  # the Prometheus query schema
    errors = schema_errors(broken)
    assert any("gridPos" in e for e in errors)
    assert any("templating" in e for e in errors)
    assert any("options $.legend.placement" in e for e in errors)
    assert any("target $.format" in e for e in errors)


def test_dashboard_without_a_declared_metric_is_caught(dashboard):
    """Dropping every panel that reads the LSH gauge leaves a declared metric off the dashboard."""
    broken = copy.deepcopy(dashboard)
    broken["panels"] = [p for p in broken["panels"]
                        if not any("lsh_indexed_docs" in t["expr"] for t in p.get("targets", []))]
    assert missing_metrics(broken) == ["raycorpus_lsh_indexed_docs"]


# ------------------------------------------------------------------------------------------------ against a real build


def _last_values(result: list[dict]) -> dict[tuple, float]:
    """The last finite value of each series of a range query (what a stat panel's lastNotNull shows)."""
    last = {}
    for series in result:
        values = [float(v) for _, v in series["values"] if math.isfinite(float(v))]
        if values:
            last[tuple(sorted(series["metric"].items()))] = values[-1]
    return last


# runs the CLI's build (argv[1]: the config), prints EXIT and its exit code, then waits for a line on stdin
HOLDING_DRIVER = """
import sys
from raycorpus.cli import main
print("EXIT", main(["run", sys.argv[1]]), flush=True)
sys.stdin.readline()
"""
FINAL_STATE = 'ray_raycorpus_warcs{state="committed"} == 4'


@pytest.mark.slow
def test_every_panel_shows_data_from_a_real_build(dashboard, tmp_path):
    """A build on a real Ray node (one WARC unreadable: retried then failed; every first GET of the HTTP server
    fails: storage retries; the crawl has exact and near copies and shared paragraphs), scraped by a real
    Prometheus: every panel expression of the dashboard, with the variables set as Grafana would, has data."""
    if shutil.which("prometheus") is None:
        pytest.skip("prometheus not installed (Debian package prometheus)")
    crawl = make_crawl(tmp_path / "warcs", n_warcs=4, pages=30)
    tok = make_tokenizer(crawl, tmp_path / "tokenizer.json")
    www_root = crawl.manifest_path.parent
    (www_root / "garbage.warc.gz").write_bytes(b"\x1f\x8b\x08\x00" + bytes(range(256)) * 16)
    lines = crawl.manifest_path.read_text().split()
    (www_root / "mixed.paths").write_text("\n".join([*lines[:2], "garbage.warc.gz", *lines[2:]]) + "\n")
    out = tmp_path / "out"
    (tmp_path / "prom").mkdir()
    # Ray's metrics agent exports what the processes recorded every second instead of every 10
    env = ray_env(RAY_metrics_report_interval_ms="1000")
    with LocalCluster(head_cpus=2, env=env) as cluster, LocalHTTPServer(str(www_root), fail_first_n=1) as www, \
            promql.PrometheusServer([f"127.0.0.2:{cluster.head.metrics_port}"], tmp_path / "prom") as prom:
        cfg = tmp_path / "build.json"
        cfg.write_text(json.dumps({
            "input": {"manifest": www.url + "mixed.paths", "base": www.url},
            "output": {"path": str(out), "shard_size_tokens": 5000},
            "tokenizer": {"path": tok},
            "warc": {"retry_backoff_seconds": 0.1, "max_attempts": 2},
            "storage": {"backoff_seconds": 0.05},
            "run": {"checkpoint_interval_seconds": 0, "progress": "off", "failure_budget": 1},
            # (the sample crawl's pages share lines of 16+ word characters: the paragraph series have data)
            "dedup": {"paragraphs": {"enabled": True, "min_chars": 16}},
        }))
        start = time.time()
        # The driver runs the CLI's build and then stays connected until told to exit: Ray stops exporting a
        # driver's metrics when it exits, which can be before its last values were scraped.
        driver_log = tmp_path / "driver.log"
        with open(driver_log, "w") as log:
            driver = subprocess.Popen([sys.executable, "-c", HOLDING_DRIVER, str(cfg)], env=cluster.driver_env(),
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True)
        try:
            exit_line = next((line for line in driver.stdout if line.startswith("EXIT ")), "no exit line")
            assert exit_line.strip() == "EXIT 0", driver_log.read_text()[-3000:]
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and not prom.api("query", query=FINAL_STATE):
                time.sleep(1)
            assert prom.api("query", query=FINAL_STATE), "the build's final state was never scraped"
            time.sleep(2)  # a scrape of the workers' last values too
            # every metric raycorpus declares has data, asked the way an operator would (gauges are exported
            # while the driver keeps setting them, so ask for the run's whole range)
            no_data = []
            for name in sorted(exported_names()):
                r = subprocess.run([promql.promtool() or "promtool", "query", "instant", "-o", "json", prom.url,
                                    f"count(last_over_time({name}[10m]))"], capture_output=True, text=True,
                                   timeout=60)
                assert r.returncode == 0, r.stderr
                if not json.loads(r.stdout):
                    no_data.append(name)
            assert no_data == [], f"declared metrics without data after a run: {no_data}"
        finally:
            try:
                driver.communicate("\n", timeout=120)
            except subprocess.TimeoutExpired:
                driver.kill()
                driver.wait()

        values = {**promql.GRAFANA_TEST_VALUES, "output": str(out)}
        outputs = {s["metric"].get("output") for s in prom.query_range("ray_raycorpus_warcs", start, time.time())}
        assert outputs == {str(out)}  # what the output variable offers
        empty = []
        for where, expr in promql.dashboard_queries(dashboard):
            expr = promql.substitute_grafana_variables(expr, values)
            if not _last_values(prom.query_range(expr, start, time.time(), step=1)):
                empty.append(f"{where}: {expr}")
        assert empty == [], "panels without data:\n" + "\n".join(empty)

        # the totals the stat and bar panels show are the run summary's numbers
        summary = json.loads((out / "summary.json").read_text())
        assert summary["warcs"] == {"total": 5, "committed": 4, "failed": 1, "pending": 0}

        def shown(title: str) -> dict[tuple, float]:
            panel = next(p for p in dashboard["panels"] if p["title"] == title)
            results = {}
            for t in panel["targets"]:
                expr = promql.substitute_grafana_variables(t["expr"], values)
                results.update(_last_values(prom.query_range(expr, start, time.time(), step=1)))
            return results

        assert shown("Tokens written") == {(): summary["tokens"]}
        assert shown("Shards closed") == {(): summary["shards"]}
        assert shown("Documents kept") == {(): summary["docs"]["kept"]}
        assert shown("Keep ratio") == {(): pytest.approx(summary["docs"]["kept"] / summary["docs"]["in"])}
        assert summary["this_run"]["retried"] == 1 and shown("WARC retries") == {(): 1}
        assert shown("Failed WARCs") == {(): 1}
        assert shown("Progress") == {(): 0.8}
        assert shown("ETA") == {(): 0}  # shown as "done"
        funnel = {(("reason", reason.partition(":")[2] or reason), ("stage", reason.partition(":")[0])): n
                  for reason, n in summary["docs"]["dropped"].items()}
        assert shown("Kept and dropped (runs in the time range)") == {(): summary["docs"]["kept"], **funnel}
        assert summary["dedup_paragraphs"]["removed"] > 0
        for series, field in (("paragraphs", "paragraphs"), ("paragraphs_removed", "removed")):
            query = f'sum(ray_raycorpus_dedup_{series}_total{{output="{out}"}})'
            assert _last_values(prom.query_range(query, start, time.time(), step=1)) == {
                (): summary["dedup_paragraphs"][field]}
