"""Safe defaults: loopback-only endpoints for a local Ray, no credentials in any log, no code from input."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.support.corpus import make_crawl, make_tokenizer
from tests.support.paths import REPO
from tests.support.servers import free_port

LISTENERS = r"""
import json, sys, psutil, ray
from raycorpus.config import config_from_dict
from raycorpus.runtime.cluster import init_ray
cfg = config_from_dict(json.loads(sys.argv[1]))
init_ray(cfg)
try:
    ray.get(ray.remote(lambda: 1).remote())  # a worker process too
    found = {}
    for proc in psutil.Process().children(recursive=True):  # every process of this local Ray
        for c in proc.net_connections(kind="inet"):
            if c.status == psutil.CONN_LISTEN:
                found[c.laddr.port] = f"{c.laddr.ip} {proc.name()}"
    print("LISTENING", json.dumps(found))
finally:
    ray.shutdown()
"""


@pytest.mark.integration  # starts a private Ray in a subprocess
def test_a_locally_started_ray_listens_on_loopback_only(tmp_path):
    port = free_port()
    raw = {"input": {"manifest": str(tmp_path / "m")}, "output": {"path": str(tmp_path / "o")},
           "tokenizer": {"path": str(tmp_path / "t.json")},
           "ray": {"num_cpus": 1, "metrics_export_port": port}}
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    r = subprocess.run([sys.executable, "-c", LISTENERS, json.dumps(raw), str(port)], capture_output=True,
                       text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    line = next(x for x in reversed(r.stdout.splitlines()) if x.startswith("LISTENING "))  # Ray may print too
    found = {int(k): v for k, v in json.loads(line.removeprefix("LISTENING ")).items()}
    assert port in found, f"the metrics endpoint on {port} was not listening: {found}"
    exposed = {p: ip for p, ip in found.items() if not ip.removeprefix("::ffff:").startswith("127.")}
    assert not exposed, f"listening beyond loopback: {exposed}"


@pytest.mark.integration  # starts a private Ray in a subprocess
def test_a_run_on_a_private_ray_leaves_none_of_its_processes_behind(crawl, tmp_path):
    """The CLI stops the autoscaler monitor of its private Ray itself at exit (ahead of ``ray.shutdown``,
    which would wait a second for it): every process of that Ray is gone when the CLI has exited."""
    import psutil

    c, tok = crawl
    ray_tmp = tempfile.mkdtemp(prefix="rc-", dir="/tmp")  # short: Ray's socket paths must fit in 107 bytes
    (tmp_path / "c.json").write_text(json.dumps({
        "input": {"manifest": str(c.manifest_path)}, "output": {"path": str(tmp_path / "out")},
        "tokenizer": {"path": tok}, "ray": {"num_cpus": 1, "object_store_memory": 100 * 2**20},
        "run": {"progress": "off"}}))
    env = {**{k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}, "RAY_TMPDIR": ray_tmp}
    try:
        r = subprocess.run([sys.executable, "-m", "raycorpus.cli", "run", str(tmp_path / "c.json")],
                           capture_output=True, text=True, timeout=300, env=env, cwd=REPO)
        left = []
        for proc in psutil.process_iter(["pid", "name", "cmdline"]):
            try:  # Ray's processes name the folder; its workers (cmdline `ray::...`) inherit RAY_TMPDIR
                if ray_tmp in " ".join(proc.info["cmdline"] or []) or proc.environ().get("RAY_TMPDIR") == ray_tmp:
                    left.append(proc.info)
                    proc.kill()  # not to outlive the test
            except psutil.Error:
                continue  # gone while we looked, or not ours to read
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)
    assert r.returncode == 0 and "Started a local Ray instance" in r.stderr, r.stderr[-3000:]
    assert not left, f"processes of the run's private Ray still running after it exited: {left}"


def test_credentials_never_reach_output_or_logs(tmp_path, s3_server, ray_address):
    """A build reading from S3 (one WARC missing, so errors are reported): the secret appears nowhere."""
    import ray

    secret = os.environ["AWS_SECRET_ACCESS_KEY"]
    assert len(secret) >= 16
    crawl = make_crawl(tmp_path / "warcs", n_warcs=2, pages=10)
    tok = make_tokenizer(crawl, tmp_path / "tokenizer.json")
    client = s3_server.client()
    client.create_bucket(Bucket="secretcheck")
    for p in crawl.warc_paths:
        client.upload_file(str(p), "secretcheck", p.name)
    lines = [p.name for p in crawl.warc_paths] + ["missing.warc.gz"]
    client.put_object(Bucket="secretcheck", Key="warc.paths", Body="\n".join(lines).encode())
    cfg = tmp_path / "c.json"
    out = tmp_path / "out"
    cfg.write_text(json.dumps({
        "input": {"manifest": "s3://secretcheck/warc.paths", "base": "s3://secretcheck/"},
        "output": {"path": str(out), "shard_size_tokens": 5000}, "tokenizer": {"path": tok},
        "warc": {"retry_backoff_seconds": 0.1, "max_attempts": 2},
        "storage": {"s3_endpoint_url": s3_server.endpoint_url, "max_attempts": 2},
        "run": {"progress": "log", "failure_budget": 1}}))
    r = subprocess.run([sys.executable, "-m", "raycorpus.cli", "run", str(cfg)], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "missing.warc.gz" in r.stdout  # the failure is reported...
    assert secret not in r.stdout + r.stderr  # ...without the credentials
    texts = [p for p in out.rglob("*") if p.is_file() and p.suffix in {".json", ".jsonl", ""}]
    assert texts and not [p for p in texts if secret.encode() in p.read_bytes()]
    logs = Path(ray._private.worker._global_node.get_session_dir_path()) / "logs"
    leaked = [p for p in logs.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]
    assert not leaked, f"credentials in Ray logs: {leaked}"


UNSAFE_CALLS = {"eval", "exec", "compile"}
UNSAFE_MODULE_CALLS = {("pickle", "load"), ("pickle", "loads"), ("marshal", "loads"), ("marshal", "load"),
                       ("yaml", "load"), ("yaml", "unsafe_load"), ("yaml", "full_load"), ("shelve", "open"),
                       ("dill", "load"), ("dill", "loads"), ("cloudpickle", "loads")}


def unsafe_calls(source: str, filename: str) -> list[str]:
    """Calls that could run code taken from input: eval/exec, unpickling, unsafe YAML, pickled numpy."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if isinstance(f, ast.Name) and f.id in UNSAFE_CALLS:
            found.append(f"{filename}:{node.lineno} {f.id}()")
        module = f.value.id if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) else None
        if module and (module, f.attr) in UNSAFE_MODULE_CALLS:
            found.append(f"{filename}:{node.lineno} {f.value.id}.{f.attr}()")
        for kw in node.keywords:
            if kw.arg == "allow_pickle" and not (isinstance(kw.value, ast.Constant) and kw.value.value is False):
                found.append(f"{filename}:{node.lineno} allow_pickle={ast.unparse(kw.value)}")
    return found


def test_nothing_read_from_input_is_unpickled_or_evaluated():
    found = []
    for path in sorted((REPO / "raycorpus").rglob("*.py")):
        found += unsafe_calls(path.read_text(), str(path.relative_to(REPO)))
    assert not found, found


@pytest.mark.parametrize("snippet", ["import pickle\npickle.loads(b)", "eval(line)", "yaml.load(f)",
                                     "np.load(p, allow_pickle=True)"])
def test_the_unsafe_call_check_catches(snippet):
    assert unsafe_calls(snippet, "x.py")
