"""PromQL checks shared by the dashboard and monitoring tests.

- ``substitute_grafana_variables``: Grafana's ``$__rate_interval``, ``$cluster``... replaced by values PromQL
  accepts (an unknown variable is an error, not left in place);
- ``dashboard_queries``: every PromQL expression of a Grafana dashboard (panel targets, and the selectors of
  ``label_values`` variable queries), with where it is;
- ``promtool_check``: the expressions written as recording rules and checked by the real ``promtool check rules``
  (``promtool_check_rules`` for a rules file written elsewhere);
- ``parse_error``, ``selectors``: the same expressions parsed by ``promql-parser`` (PyPI), and every vector
  selector in them with its metric name and the labels it matches on.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import yaml

from tests.support.guard import need_integration

# What the checks put in place of Grafana's variables: durations for the interval ones, and values that keep
# the selectors they sit in valid (".*" is what the dashboard's "All" stands for).
GRAFANA_TEST_VALUES = {
    "__rate_interval": "1m",
    "__interval": "1m",
    "__range": "1h",
    "cluster": ".*",
    "output": "s3://bucket/corpus",
}

_VARIABLE = re.compile(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)")
_LABEL_VALUES = re.compile(r"^\s*label_values\((.*),\s*(\w+)\s*\)\s*$", re.S)
_QUERY_RESULT = re.compile(r"^\s*query_result\((.*)\)\s*$", re.S)


def substitute_grafana_variables(text: str, values: dict[str, str] = GRAFANA_TEST_VALUES) -> str:
    """``text`` with every ``$name`` / ``${name}`` / ``${name:format}`` replaced from ``values``."""

    def value(match: re.Match) -> str:
        name = match.group(1) or match.group(2)
        if name not in values:
            raise ValueError(f"unknown Grafana variable ${name} in {text!r}")
        return values[name]

    return _VARIABLE.sub(value, text)


def _all_panels(panels: list[dict]) -> Iterator[dict]:
    for panel in panels:
        yield panel
        yield from _all_panels(panel.get("panels", []))  # a row's (collapsed) panels


def dashboard_queries(dashboard: dict) -> list[tuple[str, str]]:
    """(where, PromQL as written) for every panel target and every Prometheus query variable of ``dashboard``.

    A ``label_values(selector, label)`` variable query gives its selector; ``query_result(expr)`` its expr.
    """
    found = []
    for panel in _all_panels(dashboard.get("panels", [])):
        for target in panel.get("targets", []):
            if "expr" in target:
                found.append((f"panel {panel.get('id')} {panel.get('title')!r} target {target.get('refId')}",
                              target["expr"]))
    for variable in dashboard.get("templating", {}).get("list", []):
        if variable.get("type") != "query":
            continue
        query = variable["query"] if isinstance(variable["query"], str) else variable["query"].get("query", "")
        for pattern in (_LABEL_VALUES, _QUERY_RESULT):
            if match := pattern.match(query):
                query = match.group(1)
                break
        found.append((f"variable {variable['name']}", query))
    return found


# ------------------------------------------------------------------------------------------------ promtool


def promtool() -> str | None:
    return shutil.which("promtool")


def promtool_check_rules(path: Path) -> subprocess.CompletedProcess:
    """``promtool check rules PATH`` (returncode 0 when every rule's expression parses)."""
    return subprocess.run([promtool() or "promtool", "check", "rules", str(path)], capture_output=True,
                          text=True, timeout=120)


def promtool_check(queries: list[tuple[str, str]], folder: Path) -> subprocess.CompletedProcess:
    """Check PromQL expressions with promtool: each written as a recording rule ``check_<i>`` into one group.

    promtool names the failing rule by its position; the rule order is the order of ``queries``.
    """
    rules = [{"record": f"check_{i}", "expr": expr} for i, (_, expr) in enumerate(queries)]
    path = folder / "expressions.rules.yaml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "expressions", "rules": rules}]}, sort_keys=False))
    return promtool_check_rules(path)


# ------------------------------------------------------------------------------------------------ promql-parser


@dataclass(frozen=True)
class Selector:
    """A vector selector: its metric name (``None`` when it has no exact one) and the labels it matches on."""

    metric: str | None
    labels: dict[str, str]  # label name -> the matcher as written, e.g. 'output="x"'
    text: str


def parse_error(expr: str) -> str | None:
    """promql-parser's message when ``expr`` does not parse, else None."""
    import promql_parser

    try:
        promql_parser.parse(expr)
    except ValueError as e:
        return str(e)
    return None


def selectors(expr: str) -> list[Selector]:
    """Every vector selector of ``expr`` (which must parse), in the order they appear."""
    import promql_parser

    found: list[Selector] = []

    def visit(node: promql_parser.Expr) -> None:
        if isinstance(node, promql_parser.VectorSelector):
            name = node.name
            labels = {}
            for matcher in node.matchers.matchers:
                if matcher.name == "__name__" and matcher.op == promql_parser.MatchOp.Equal:
                    name = name or matcher.value
                else:
                    labels[matcher.name] = str(matcher)
            found.append(Selector(name, labels, str(node)))

    promql_parser.walk(promql_parser.parse(expr), visit)
    return found


# ------------------------------------------------------------------------------------------------ a real Prometheus


class PrometheusServer:
    """A real ``prometheus`` scraping ``targets`` (host:port) every ``scrape_interval`` on 127.0.0.1:PORT.

    Started in its own process group in ``folder`` (config and TSDB); stopping signals exactly that group.
    """

    def __init__(self, targets: list[str], folder: Path, scrape_interval: str = "1s", timeout: float = 60.0):
        self.targets, self.folder, self.scrape_interval, self.timeout = targets, folder, scrape_interval, timeout
        self.url = ""
        self.proc: subprocess.Popen | None = None
        self._log: IO[str] | None = None

    def __enter__(self) -> PrometheusServer:
        need_integration("Prometheus")
        from tests.support.servers import free_port

        binary = shutil.which("prometheus")
        if binary is None:
            raise FileNotFoundError("prometheus not installed (Debian package prometheus)")
        config = self.folder / "prometheus.yml"
        config.write_text(yaml.safe_dump({
            "global": {"scrape_interval": self.scrape_interval, "evaluation_interval": self.scrape_interval},
            "scrape_configs": [{"job_name": "ray", "static_configs": [{"targets": self.targets}]}],
        }))
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        self._log = open(self.folder / "prometheus.log", "w")
        self.proc = subprocess.Popen(
            [binary, f"--config.file={config}", f"--storage.tsdb.path={self.folder / 'tsdb'}",
             f"--web.listen-address=127.0.0.1:{port}", "--web.enable-lifecycle"],
            stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                with urllib.request.urlopen(self.url + "/-/ready", timeout=2) as r:
                    if r.status == 200:
                        return self
            except OSError:
                time.sleep(0.2)
        log = (self.folder / "prometheus.log").read_text(errors="replace")
        self.__exit__()
        raise RuntimeError(f"prometheus did not become ready within {self.timeout:g} s:\n{log[-3000:]}")

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=30)
        if self._log is not None:
            self._log.close()

    def api(self, path: str, **params: str | float) -> list[dict]:
        """GET /api/v1/PATH; the ``data.result`` (or ``data``) of a successful answer."""
        url = f"{self.url}/api/v1/{path}?{urllib.parse.urlencode(params)}"
        with urllib.request.urlopen(url, timeout=30) as r:
            answer = json.load(r)
        assert answer["status"] == "success", answer
        data = answer["data"]
        return data["result"] if isinstance(data, dict) else data

    def query_range(self, expr: str, start: float, end: float, step: float = 1.0) -> list[dict]:
        return self.api("query_range", query=expr, start=start, end=end, step=step)
