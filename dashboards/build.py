"""Build ``raycorpus.json``, the Grafana (11.6, schemaVersion 41) dashboard of a raycorpus build.

Run ``python dashboards/build.py`` after changing this file; ``tests/deploy/test_dashboard.py`` checks the committed
JSON is this script's output, that it validates against Grafana's dashboard JSON Schema, that every PromQL
expression parses, and that every metric it reads is one ``raycorpus/runtime/metrics.py`` declares.

Every series is filtered by the ``cluster`` variable (the ``ray_io_cluster`` label KubeRay's PodMonitors add;
"All" also matches a Prometheus without it) and the ``output`` variable (the build's output path, the tag
every raycorpus metric carries). Ray labels each series with the process that recorded it (``WorkerId``,
``NodeAddress``, ``SessionName``) and stops exporting a process's series when it exits. Gauges are set by the
one driver of an output: ``max`` folds those labels without double counting; counters and histograms, recorded
by the driver and by every worker actor, are summed.
"""

from __future__ import annotations

import json
from pathlib import Path

OUT = Path(__file__).with_name("raycorpus.json")
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
FILTER = 'ray_io_cluster=~"$cluster", output="$output"'
RATE_WINDOW = "$__rate_interval"


# ------------------------------------------------------------------------------------------------ PromQL


def series(name: str, *matchers: str) -> str:
    """A selector of one raycorpus metric (name as declared, without Ray's ``ray_`` prefix)."""
    return f"ray_{name}{{{', '.join((FILTER, *matchers))}}}"


def rate(name: str, *matchers: str) -> str:
    return f"rate({series(name, *matchers)}[{RATE_WINDOW}])"


def run_total(name: str, *matchers: str) -> str:
    """A counter's total over the runs seen in the dashboard's time range.

    Each process (a driver, a worker actor) exports its own series (Ray's ``WorkerId`` label) counting from its
    start, and a process's series is created at its first increment: ``increase()`` would miss that first
    increment (a single retry would show as 0). The last value of each series in the range, summed, is the
    total of every process seen in the range (a resumed build's drivers add up).
    """
    return f"max_over_time({series(name, *matchers)}[$__range])"


def quantile(q: float, histogram: str, by: str = "") -> str:
    labels = ", ".join(["le", by] if by else ["le"])
    return f"histogram_quantile({q}, sum by ({labels}) (rate({series(histogram + '_bucket')}[{RATE_WINDOW}])))"


def mean(histogram: str, by: str = "") -> str:
    grouping = f" by ({by})" if by else ""
    return (f"sum{grouping} (rate({series(histogram + '_sum')}[{RATE_WINDOW}]))"
            f" / sum{grouping} (rate({series(histogram + '_count')}[{RATE_WINDOW}]))")


# ------------------------------------------------------------------------------------------------ panels


def target(expr: str, legend: str = "__auto", instant: bool = False) -> dict:
    return {"datasource": DATASOURCE, "editorMode": "code", "expr": expr, "legendFormat": legend,
            "range": not instant, "instant": instant}


def _panel(kind: str, title: str, description: str, targets: list[dict], width: int, height: int,
           options: dict, defaults: dict) -> dict:
    for ref_id, t in zip("ABCDEFGH", targets, strict=False):
        t["refId"] = ref_id
    return {"type": kind, "title": title, "description": description, "datasource": DATASOURCE,
            "gridPos": {"w": width, "h": height, "x": 0, "y": 0}, "targets": targets,
            "options": options, "fieldConfig": {"defaults": defaults, "overrides": []}}


def timeseries(title: str, description: str, targets: list[dict], unit: str = "short", width: int = 8,
               stack: bool = False, log_scale: bool = False, min_zero: bool = True) -> dict:
    custom: dict = {"drawStyle": "line", "lineWidth": 1, "fillOpacity": 30 if stack else 10,
                    "showPoints": "never", "spanNulls": False,
                    "stacking": {"mode": "normal" if stack else "none", "group": "A"},
                    "scaleDistribution": {"type": "log", "log": 10} if log_scale else {"type": "linear"}}
    defaults: dict = {"unit": unit, "custom": custom, "color": {"mode": "palette-classic"}}
    if min_zero and not log_scale:
        defaults["min"] = 0
    options = {"legend": {"displayMode": "list", "placement": "bottom", "showLegend": True, "calcs": []},
               "tooltip": {"mode": "multi", "sort": "desc"}}
    return _panel("timeseries", title, description, targets, width, 8, options, defaults)


def stat(title: str, description: str, expr: str, unit: str = "short", width: int = 4,
         mappings: tuple[dict, ...] = (), red_from: float | None = None) -> dict:
    steps = [{"value": None, "color": "green"}]
    if red_from is not None:
        steps.append({"value": red_from, "color": "red"})
    defaults = {"unit": unit, "mappings": list(mappings), "color": {"mode": "thresholds"},
                "thresholds": {"mode": "absolute", "steps": steps}}
    options = {"graphMode": "area", "colorMode": "value", "justifyMode": "auto", "textMode": "auto",
               "wideLayout": True, "showPercentChange": False, "percentChangeColorMode": "standard",
               "orientation": "auto", "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False}}
    return _panel("stat", title, description, [target(expr, title)], width, 4, options, defaults)


def bargauge(title: str, description: str, targets: list[dict], width: int = 12, height: int = 10) -> dict:
    options = {"displayMode": "basic", "orientation": "horizontal", "valueMode": "color", "namePlacement": "auto",
               "showUnfilled": True, "sizing": "auto", "minVizWidth": 8, "minVizHeight": 16, "maxVizHeight": 300,
               "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False}}
    defaults = {"unit": "short", "min": 0, "color": {"mode": "palette-classic"}}
    return _panel("bargauge", title, description, targets, width, height, options, defaults)


def row(title: str) -> dict:
    return {"type": "row", "title": title, "collapsed": False, "panels": [], "id": 0,
            "gridPos": {"w": 24, "h": 1, "x": 0, "y": 0}}


def warcs(*states: str) -> str:
    return f'max by (state) ({series("raycorpus_warcs", "state=~" + json.dumps("|".join(states)))})'


def warc_count(state: str) -> str:
    return f'max({series("raycorpus_warcs", f"state={json.dumps(state)}")})'


ETA_MAPPINGS = (
    {"type": "range", "options": {"from": None, "to": -0.5, "result": {"text": "unknown", "color": "text"}}},
    {"type": "value", "options": {"0": {"text": "done", "color": "green"}}},
)

DEDUP_DROPPED = 'stage="dedup"'


def sections() -> list[tuple[str, list[dict]]]:
    """The dashboard's rows, each with its panels in reading order."""
    return [
        ("Throughput", [
            timeseries("Documents / s", "HTML documents read from committed WARCs, and documents written to the "
                       "shards.", [target(f"sum({rate('raycorpus_docs_in_total')})", "read (HTML)"),
                                   target(f"sum({rate('raycorpus_docs_kept_total')})", "kept")]),
            timeseries("Tokens / s", "Tokens written to the shards (EOS included).",
                       [target(f"sum({rate('raycorpus_tokens_total')})", "tokens")]),
            timeseries("WARC bytes read / s", "Compressed WARC bytes the workers read (committed WARCs).",
                       [target(f"sum({rate('raycorpus_bytes_read_total')})", "read")], unit="Bps"),
            stat("Tokens written", "Tokens written to the shards by the runs in the time range.",
                 f"sum({run_total('raycorpus_tokens_total')})", width=6),
            stat("Shards closed", "Token shards closed and made durable by the runs in the time range.",
                 f"sum({run_total('raycorpus_shards_total')})", width=6),
            stat("Documents kept", "Documents written to the shards by the runs in the time range.",
                 f"sum({run_total('raycorpus_docs_kept_total')})", width=6),
            stat("Keep ratio", "Documents kept / HTML documents read, by the runs in the time range.",
                 f"sum({run_total('raycorpus_docs_kept_total')}) / sum({run_total('raycorpus_docs_in_total')})",
                 unit="percentunit", width=6),
        ]),
        ("Funnel: kept vs dropped", [
            timeseries("Kept vs dropped by stage and reason (documents / s)",
                       "Every HTML document read is kept or dropped by exactly one stage for one reason.",
                       [target(f"sum({rate('raycorpus_docs_kept_total')})", "kept"),
                        target(f"sum by (stage, reason) ({rate('raycorpus_docs_dropped_total')})",
                               "{{stage}}: {{reason}}")], width=12, stack=True),
            bargauge("Kept and dropped (runs in the time range)", "Documents kept, and dropped by stage and "
                     "reason, by the runs in the time range, largest first.",
                     [target(f"sum({run_total('raycorpus_docs_kept_total')})", "kept", instant=True),
                      target(f"sort_desc(sum by (stage, reason) ({run_total('raycorpus_docs_dropped_total')}))",
                             "{{stage}}: {{reason}}", instant=True)]),
        ]),
        ("WARC progress", [
            timeseries("WARCs: total, committed, pending, failed", "Committed WARCs are in the shards and the "
                       "ledger; pending ones are not yet scheduled.",
                       [target(warcs("total", "committed", "pending", "failed"), "{{state}}")]),
            timeseries("WARCs in flight and buffered", "In flight: on a worker. Buffered: finished, waiting for "
                       "the WARCs before them in the manifest to commit.",
                       [target(warcs("in_flight", "buffered"), "{{state}}")]),
            stat("Progress", "Committed WARCs / WARCs in the manifest.",
                 f'{warc_count("committed")} / {warc_count("total")}', unit="percentunit"),
            stat("ETA", "Estimated time until every WARC is committed (unknown until the first commits).",
                 f"max({series('raycorpus_eta_seconds')})", unit="s", mappings=ETA_MAPPINGS),
        ]),
        ("Follow mode", [
            timeseries("Follow: backlog", "`raycorpus run --follow`: WARCs the manifest lists that are not committed "
                       "yet (new lines wait here until committed).",
                       [target(f"max({series('raycorpus_follow_backlog_warcs')})", "backlog")], width=12),
            timeseries("Follow: idle time", "`raycorpus run --follow`: seconds the follower has waited for new "
                       "manifest lines with every WARC committed (0 while it works).",
                       [target(f"max({series('raycorpus_follow_idle_seconds')})", "idle")], unit="s", width=12),
        ]),
        ("Failures and retries", [
            timeseries("Retries / s", "WARC attempts that failed and were scheduled again, and storage (S3 / "
                       "HTTP) requests the workers retried.",
                       [target(f"sum({rate('raycorpus_warc_retries_total')})", "WARC retries"),
                        target(f"sum({rate('raycorpus_storage_retries_total')})", "storage retries")], width=12),
            stat("Failed WARCs", "WARCs that used up their attempts; listed with their errors in the ledger and "
                 "the summary.", warc_count("failed"), red_from=1),
            stat("WARC retries", "WARC attempts retried by the runs in the time range.",
                 f"sum({run_total('raycorpus_warc_retries_total')})"),
            stat("Storage retries", "Storage requests retried by the runs in the time range.",
                 f"sum({run_total('raycorpus_storage_retries_total')})"),
        ]),
        ("Dedup", [
            timeseries("Dedup rate", "Share of the documents reaching the dedup decision that were dropped as "
                       "duplicates (URL, exact, near, paragraphs), total and by reason.",
                       [target(f"sum({rate('raycorpus_docs_dropped_total', DEDUP_DROPPED)})"
                               f" / sum({rate('raycorpus_dedup_checked_total')})", "all duplicates"),
                        target(f"sum by (reason) ({rate('raycorpus_docs_dropped_total', DEDUP_DROPPED)})"
                               f" / ignoring (reason) group_left sum({rate('raycorpus_dedup_checked_total')})",
                               "{{reason}}")], unit="percentunit", width=8),
            timeseries("Paragraphs removed", "With dedup.paragraphs: share of the paragraphs of the documents "
                       "document-level dedup kept that were removed as seen before (the documents dropped for "
                       "them are in the dedup rate, reason paragraphs).",
                       [target(f"sum({rate('raycorpus_dedup_paragraphs_removed_total')})"
                               f" / sum({rate('raycorpus_dedup_paragraphs_total')})", "paragraphs removed")],
                       unit="percentunit", width=8),
            timeseries("LSH index size", "Documents held by the LSH index (in the LSH shard actors).",
                       [target(f"max({series('raycorpus_lsh_indexed_docs')})", "indexed documents")], width=8),
        ]),
        ("Workers", [
            timeseries("Workers vs cluster CPUs", "Extraction workers ready in the pool, and the CPUs of the Ray "
                       "cluster as the driver sees them (the pool follows them).",
                       [target(f"max({series('raycorpus_workers')})", "workers"),
                        target(f"max({series('raycorpus_cluster_cpus')})", "cluster CPUs")], width=24),
        ]),
        ("Latency", [
            timeseries("Per-stage latency p95 (CPU seconds per WARC)", "95th percentile of the CPU seconds one "
                       "WARC spends in each stage.",
                       [target(quantile(0.95, "raycorpus_stage_seconds", "stage"), "{{stage}}")],
                       unit="s", log_scale=True),
            timeseries("Per-stage latency mean (CPU seconds per WARC)", "Mean CPU seconds one WARC spends in "
                       "each stage.", [target(mean("raycorpus_stage_seconds", "stage"), "{{stage}}")],
                       unit="s", log_scale=True),
            timeseries("CPU by stage (cores busy)", "CPU seconds per second spent in each stage, stacked: where "
                       "the workers' time goes.",
                       [target(f"sum by (stage) ({rate('raycorpus_stage_seconds_sum')})", "{{stage}}")],
                       stack=True),
            timeseries("Per-WARC latency", "Seconds a worker spends processing one WARC.",
                       [target(quantile(0.5, "raycorpus_warc_seconds"), "p50"),
                        target(quantile(0.95, "raycorpus_warc_seconds"), "p95"),
                        target(mean("raycorpus_warc_seconds"), "mean")], unit="s", width=12),
            timeseries("WARCs processed / s", "WARCs the workers finished (before the in-order commit).",
                       [target(f"sum({rate('raycorpus_warc_seconds_count')})", "WARCs")], width=12),
        ]),
    ]


def layout(rows: list[tuple[str, list[dict]]]) -> list[dict]:
    """Number the panels and place them left to right under their row, wrapping at the grid's 24 columns."""
    panels: list[dict] = []
    y = 0
    for title, members in rows:
        header = row(title)
        header["gridPos"]["y"] = y
        panels.append(header)
        y += 1
        x = line_height = 0
        for panel in members:
            pos = panel["gridPos"]
            if x + pos["w"] > 24:
                x, y, line_height = 0, y + line_height, 0
            pos["x"], pos["y"] = x, y
            x += pos["w"]
            line_height = max(line_height, pos["h"])
            panels.append(panel)
        y += line_height
    for panel_id, panel in enumerate(panels, start=1):
        panel["id"] = panel_id
    return panels


def query_variable(name: str, label: str, query: str, description: str, include_all: bool,
                   all_value: str | None = None) -> dict:
    variable = {"type": "query", "name": name, "label": label, "description": description,
                "datasource": DATASOURCE, "query": query, "definition": query, "refresh": 2, "sort": 1,
                "multi": False, "includeAll": include_all, "options": []}
    if all_value is not None:
        variable["allValue"] = all_value
    return variable


def dashboard() -> dict:
    return {
        "uid": "raycorpus-build",
        "title": "raycorpus build",
        "description": "A raycorpus build (Common Crawl WARC -> token shards) on a Ray cluster: throughput, the "
                       "document funnel, WARC progress and ETA, failures, dedup, the worker pool and latency.",
        "tags": ["raycorpus", "ray"],
        "editable": True,
        "graphTooltip": 1,
        "schemaVersion": 41,
        "version": 1,
        "refresh": "30s",
        "time": {"from": "now-6h", "to": "now"},
        "timepicker": {},
        "timezone": "browser",
        "fiscalYearStartMonth": 0,
        "liveNow": False,
        "links": [],
        "annotations": {"list": [{
            "builtIn": 1, "datasource": {"type": "grafana", "uid": "-- Grafana --"}, "enable": True,
            "hide": True, "iconColor": "rgba(0, 211, 255, 1)", "name": "Annotations & Alerts", "type": "dashboard",
        }]},
        "templating": {"list": [
            {"type": "datasource", "name": "datasource", "label": "Data source", "query": "prometheus",
             "description": "The Prometheus that scrapes the Ray cluster.", "refresh": 1, "regex": "",
             "multi": False, "includeAll": False, "options": []},
            query_variable("cluster", "Cluster", "label_values(ray_raycorpus_warcs, ray_io_cluster)",
                           "The Ray cluster (ray_io_cluster, as KubeRay's PodMonitors label it). All also matches "
                           "series without the label.", include_all=True, all_value=".*"),
            query_variable("output", "Output", 'label_values(ray_raycorpus_warcs{ray_io_cluster=~"$cluster"}, output)',
                           "The build's output path (one build per output).", include_all=False),
        ]},
        "panels": layout(sections()),
    }


def render() -> str:
    return json.dumps(dashboard(), indent=2) + "\n"


if __name__ == "__main__":
    OUT.write_text(render())
    print(f"wrote {OUT}")
