"""Live metrics: a real build on a real Ray node, scraped by a real Prometheus (Debian's package).

Every metric raycorpus declares must have data after a run, and the scraped values must be
the run summary's numbers (so the dashboard shows what the ledger says).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from raycorpus.runtime.metrics import CATALOGUE, PREFIX, exported_names
from tests.corpus import make_crawl, make_tokenizer
from tests.servers import LocalHTTPServer, free_port

pytestmark = pytest.mark.slow


def _need(tool: str) -> str:
    path = shutil.which(tool)
    if not path:
        pytest.skip(f"{tool} not installed (Debian package 'prometheus'; .ci/run installs it)")
    return path


class Prometheus:
    """A Prometheus server on 127.0.0.1 with a temporary TSDB, scraping the given targets every second."""

    def __init__(self, root: Path, targets: list[str]):
        self.binary = _need("prometheus")
        self.promtool = _need("promtool")
        self.port = free_port()
        root.mkdir(parents=True, exist_ok=True)
        cfg = root / "prometheus.yml"
        cfg.write_text(json.dumps({  # YAML is a superset of JSON
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "scrape_configs": [{"job_name": "ray", "static_configs": [{"targets": targets}]}],
        }))
        self.log = open(root / "prometheus.log", "w")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [self.binary, f"--config.file={cfg}", f"--storage.tsdb.path={root / 'tsdb'}",
             f"--web.listen-address=127.0.0.1:{self.port}"],
            stdout=self.log, stderr=subprocess.STDOUT)
        self.url = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(self.url + "/-/ready", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"prometheus did not become ready: {(root / 'prometheus.log').read_text()[-2000:]}")

    def query(self, expr: str) -> list[dict]:
        """``promtool query instant`` (JSON): the result vector."""
        r = subprocess.run([self.promtool, "query", "instant", "-o", "json", self.url, expr],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, f"{expr}: {r.stderr}"
        return json.loads(r.stdout)

    def value(self, expr: str) -> float | None:
        result = self.query(expr)
        return float(result[0]["value"][1]) if result else None

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def test_every_declared_metric_has_data_in_prometheus_after_a_run(tmp_path):
    from tests.cluster import LocalCluster

    _need("prometheus")
    crawl = make_crawl(tmp_path / "warcs", n_warcs=4, pages=30)
    tok = make_tokenizer(crawl, tmp_path / "tokenizer.json")
    www_root = crawl.manifest_path.parent
    (www_root / "garbage.warc.gz").write_bytes(b"\x1f\x8b\x08\x00" + os.urandom(4000))  # retried, then failed
    lines = crawl.manifest_path.read_text().split()
    (www_root / "mixed.paths").write_text("\n".join([*lines[:2], "garbage.warc.gz", *lines[2:]]) + "\n")
    out = tmp_path / "out"
    with LocalCluster(head_cpus=2) as cluster, \
            LocalHTTPServer(str(www_root), fail_first_n=1) as www:  # every first GET fails: storage retries
        prom = Prometheus(tmp_path / "prom", [f"127.0.0.2:{cluster.head.metrics_port}"])
        try:
            cfg = tmp_path / "build.json"
            cfg.write_text(json.dumps({
                "input": {"manifest": www.url + "mixed.paths", "base": www.url},
                "output": {"path": str(out), "shard_size_tokens": 5000},
                "tokenizer": {"path": tok},
                "warc": {"retry_backoff_seconds": 0.1, "max_attempts": 2},
                "storage": {"backoff_seconds": 0.05},
                "run": {"checkpoint_interval_seconds": 0, "progress": "off", "failure_budget": 1},
            }))
            r = subprocess.run([sys.executable, "-m", "raycorpus.cli", "run", str(cfg)], env=cluster.driver_env(),
                               capture_output=True, text=True, timeout=600)
            assert r.returncode == 0, r.stderr[-3000:]
            s = json.loads((out / "summary.json").read_text())
            assert s["warcs"]["committed"] == 4 and s["warcs"]["failed"] == 1

            committed = 'sum(ray_raycorpus_warcs{state="committed"})'
            deadline = time.monotonic() + 90
            while prom.value(committed) != 4 and time.monotonic() < deadline:
                time.sleep(1)  # the last gauges are scraped a second or so after the run
            time.sleep(3)  # one more scrape of the workers' final counters

            missing = [name for name in sorted(exported_names()) if not prom.query(f"count({name})")]
            assert not missing, f"declared but without data in Prometheus: {missing}"
            # the scraped numbers are the run's numbers
            assert prom.value(committed) == 4
            assert prom.value('sum(ray_raycorpus_warcs{state="failed"})') == 1
            assert prom.value('sum(ray_raycorpus_warcs{state="total"})') == 5
            assert prom.value('sum(ray_raycorpus_warcs{state="pending"})') == 0
            assert prom.value("sum(ray_raycorpus_eta_seconds)") == 0
            assert prom.value("sum(ray_raycorpus_docs_in_total)") == s["docs"]["in"]
            assert prom.value("sum(ray_raycorpus_docs_kept_total)") == s["docs"]["kept"]
            assert prom.value("sum(ray_raycorpus_tokens_total)") == s["tokens"]
            assert prom.value("sum(ray_raycorpus_shards_total)") == s["shards"]
            assert prom.value("sum(ray_raycorpus_bytes_read_total)") == s["bytes_read"]
            assert prom.value("sum(ray_raycorpus_warc_retries_total)") == s["this_run"]["retried"] == 1
            assert prom.value("sum(ray_raycorpus_storage_retries_total)") >= 4  # each good WARC's first GET
            dedup = {k: v for k, v in s["docs"]["dropped"].items() if k.startswith("dedup:")}
            assert dedup and prom.value('sum(ray_raycorpus_docs_dropped_total{stage="dedup"})') == sum(dedup.values())
            for reason, n in s["docs"]["dropped"].items():
                stage, _, why = reason.partition(":")
                got = prom.value(f'sum(ray_raycorpus_docs_dropped_total{{stage="{stage}",reason="{why or stage}"}})')
                assert got == n, reason
            assert prom.value("sum(ray_raycorpus_lsh_indexed_docs)") == s["this_run"]["dedup"]["indexed_docs"]
            assert prom.value("max(ray_raycorpus_cluster_cpus)") == 2
            assert prom.value("sum(ray_raycorpus_warc_seconds_count)") == 4 + 0  # successful attempts only
            stages = {x["metric"]["stage"] for x in prom.query("ray_raycorpus_stage_seconds_count")}
            assert {"read", "extract", "lang", "minhash"} <= stages, stages
            outputs = {x["metric"].get("output") for x in prom.query("ray_raycorpus_warcs")}
            assert outputs == {str(out)}
        finally:
            prom.stop()


def test_the_catalogue_names_are_valid_and_unique():
    import re

    names = [m.name for m in CATALOGUE]
    assert len(names) == len(set(names))
    for m in CATALOGUE:
        assert re.fullmatch(r"raycorpus_[a-z_]+", m.name), m.name
        assert (m.kind == "counter") == m.name.endswith("_total"), m.name  # Prometheus naming conventions
        assert m.kind != "histogram" or m.boundaries, m.name
    assert all(n.startswith(PREFIX + "raycorpus_") for n in exported_names())
