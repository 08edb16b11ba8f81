"""A real multi-node Ray cluster on this machine (tests/support/cluster.py): ``ray job submit``, a worker
node lost mid-run, the pool growing and shrinking with the cluster, and Ray's fake autoscaler.

Every run is compared with one undisturbed build of the same crawl: the shards must be
byte-identical whatever happened to the cluster, and ``raycorpus verify`` must pass.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from raycorpus.ingest.storage import Storage
from raycorpus.output.ledger import Ledger
from tests.support.cluster import RAY, LocalCluster, ray_env
from tests.support.corpus import make_config, shard_digests
from tests.support.paths import REPO
from tests.support.servers import LocalHTTPServer, free_port

pytestmark = pytest.mark.slow

N_WARCS = 24  # about half a second of one core each: long enough to change the cluster mid-run
FAST_METRICS = {"RAY_metrics_report_interval_ms": "500"}  # worker metrics reach their node's endpoint quickly
FAKE_AUTOSCALER_CONFIG = REPO / "deploy" / "autoscaler" / "fake-multinode.yaml"


@pytest.fixture(scope="module")
def big_crawl(crawls):
    """Long enough to change the cluster mid-run."""
    return crawls(N_WARCS, 200)


def write_config(path: Path, crawl, out: Path, **sections) -> Path:
    """A config file with absolute paths (a job runs in an uploaded copy of the working dir)."""
    c, tok = crawl
    path.write_text(json.dumps(make_config(str(c.manifest_path), str(out), tok, **sections).model_dump(mode="json")))
    return path


def raycorpus_cli(*args: str, env: dict[str, str] | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "raycorpus.cli", *args], env=env or ray_env(),
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def big_reference(big_crawl, tmp_path_factory):
    """One undisturbed build on a private single-node Ray (no RAY_ADDRESS): the expected bytes."""
    root = tmp_path_factory.mktemp("cluster-ref")
    cfg = write_config(root / "c.yaml", big_crawl, root / "out",
                       ray={"num_cpus": 2, "object_store_memory": 200 * 2**20})
    r = raycorpus_cli("run", str(cfg))
    assert r.returncode == 0, r.stderr[-3000:]
    return shard_digests(root / "out")


def committed(out: Path) -> int:
    """WARCs the ledger names (committed or failed) so far."""
    return Ledger(Storage(), str(out)).load().next_ordinal if (out / "ledger").exists() else 0


def wait_for(what: str, condition: Callable[[], bool], timeout: float, interval: float = 0.2) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(interval)


def assert_same_corpus(out: Path, reference: dict[str, str]) -> dict:
    summary = json.loads((out / "summary.json").read_text())
    assert summary["complete"] and summary["warcs"] == {"total": N_WARCS, "committed": N_WARCS, "failed": 0,
                                                        "pending": 0}
    assert shard_digests(out) == reference
    r = raycorpus_cli("verify", str(out))
    assert r.returncode == 0 and "FAIL" not in r.stdout, r.stdout
    return summary


class Job:
    """``ray job submit`` of ``raycorpus run CONFIG`` from the repository (its working dir is uploaded);
    its status and logs through the dashboard's job API."""

    def __init__(self, cluster: LocalCluster, config: Path, wait: bool):
        from ray.job_submission import JobSubmissionClient

        self.id = f"raycorpus-{free_port()}"
        cmd = [RAY, "job", "submit", "--address", cluster.dashboard_url, "--submission-id", self.id,
               "--working-dir", ".", *(() if wait else ("--no-wait",)), "--", "raycorpus", "run", str(config)]
        self.submitted = subprocess.run(cmd, cwd=REPO, env=cluster.env, capture_output=True, text=True, timeout=600)
        # the client prefers RAY_ADDRESS to its argument, and the test session's own cluster sets it
        saved = os.environ.pop("RAY_ADDRESS", None)
        try:
            self.client = JobSubmissionClient(cluster.dashboard_url)
        finally:
            if saved is not None:
                os.environ["RAY_ADDRESS"] = saved

    def status(self) -> str:
        return self.client.get_job_status(self.id).value

    def logs(self) -> str:
        return self.client.get_job_logs(self.id)

    def wait_done(self, timeout: float = 400) -> str:
        wait_for(f"job {self.id} to end", lambda: self.status() in ("SUCCEEDED", "FAILED", "STOPPED"), timeout,
                 interval=1)
        return self.status()


def test_ray_job_submit_on_a_two_node_cluster(big_crawl, big_reference, tmp_path):
    out = tmp_path / "out"
    cfg = write_config(tmp_path / "c.yaml", big_crawl, out, run={"progress": "log"})
    with LocalCluster(head_cpus=1, dashboard=True) as cluster:
        cluster.add_node(num_cpus=1)
        job = Job(cluster, cfg, wait=True)  # tails the job's logs until it ends; exit 1 if it failed
        assert job.submitted.returncode == 0, job.submitted.stdout[-4000:] + job.submitted.stderr[-2000:]
        assert job.status() == "SUCCEEDED", job.logs()[-4000:]
        assert f"{N_WARCS} committed, 0 failed" in job.logs()  # the CLI's summary, in the job's logs
    summary = assert_same_corpus(out, big_reference)
    assert summary["this_run"]["workers"] == 2  # one per cluster CPU, over both nodes
    assert len(summary["this_run"]["warcs_by_node"]) == 2, summary["this_run"]


def test_worker_node_lost_mid_run(big_crawl, big_reference, tmp_path):
    """SIGKILL the worker node's raylet while the job runs: it finishes on the head, same bytes."""
    out = tmp_path / "out"
    cfg = write_config(tmp_path / "c.yaml", big_crawl, out)
    with LocalCluster(head_cpus=1, dashboard=True, env=ray_env(**FAST_METRICS)) as cluster:
        worker = cluster.add_node(num_cpus=1)
        job = Job(cluster, cfg, wait=False)
        assert job.submitted.returncode == 0, job.submitted.stderr[-3000:]
        # lost with results in the reorder buffer and calls in flight, not while its worker starts
        wait_for("3 WARCs processed on the worker node",
                 lambda: worker.metric("ray_raycorpus_warc_seconds_count") >= 3, timeout=300)
        worker.kill()
        at_kill = committed(out)
        assert at_kill < N_WARCS, "the run ended before the node was lost"
        state = job.wait_done()
        assert state == "SUCCEEDED", job.logs()[-4000:]
        wait_for("the lost node to be declared dead", lambda: cluster.alive_nodes() == 1, timeout=120, interval=2)
    summary = assert_same_corpus(out, big_reference)
    run = summary["this_run"]
    print(f"node lost after {at_kill} of {N_WARCS} WARCs; retried {run['retried']}, by node {run['warcs_by_node']}")
    assert len(run["warcs_by_node"]) == 2  # both nodes worked before the loss


def test_a_node_holding_lsh_shards_lost_mid_run(big_crawl, big_reference, tmp_path):
    """The LSH shards live on worker nodes (custom resource ``lsh``); the node holding one is SIGKILLed
    mid-run. The driver starts the lost shard on the other node from its files plus the records of the
    WARCs committed since; same bytes, verify passes, and no committed WARC is read again (GETs counted
    at the HTTP server that serves the WARCs)."""
    c, _ = big_crawl
    names = c.manifest_path.read_text().split()
    out = tmp_path / "out"
    with LocalHTTPServer(c.manifest_path.parent, hold=(names[12],)) as www:  # the loss lands mid-run
        cfg = write_config(tmp_path / "c.yaml", big_crawl, out, input={"base": www.url},
                           dedup={"shards": 2, "shard_resources": {"lsh": 1}})
        with LocalCluster(head_cpus=1, env=ray_env(**FAST_METRICS)) as cluster:
            nodes = [cluster.add_node(num_cpus=1, resources={"lsh": 2}) for _ in range(2)]
            proc = subprocess.Popen([sys.executable, "-m", "raycorpus.cli", "run", str(cfg)], env=cluster.driver_env(),
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            wait_for("4 checkpoints", lambda: len(Ledger(Storage(), str(out)).checkpoint_urls()) >= 4
                     if (out / "ledger").exists() else False, timeout=300)
            holder = next((n for n in nodes if n.actors("LshShardActor")), None)
            assert holder is not None, "no LSH shard on a worker node"
            holder.kill()
            at_kill = committed(out)
            reads_before = {name: www.gets[f"/{name}"] for name in names}
            www.release()
            _, stderr = proc.communicate(timeout=600)
        assert proc.returncode == 0, stderr[-3000:]
    summary = assert_same_corpus(out, big_reference)
    dedup = summary["this_run"]["dedup"]
    print(f"shard node lost after {at_kill} of {N_WARCS} WARCs; shard restarts {dedup['restarts']}, "
          f"reads at restart {dedup['start_reads']}")
    assert "LSH shard(s)" in stderr and dedup["restarts"] >= 1
    assert all(www.gets[f"/{name}"] == 1 for name in names[:at_kill]), (at_kill, reads_before, dict(www.gets))


def test_pool_follows_nodes_joining_and_leaving(big_crawl, big_reference, tmp_path):
    """Elastic: a 1-CPU cluster gains a node mid-run (the pool grows onto it), then loses it again."""
    out = tmp_path / "out"
    cfg = write_config(tmp_path / "c.yaml", big_crawl, out, ray={"resize_interval_seconds": 1})
    samples: list[tuple[float, int]] = []  # (time, WARCs committed)

    def progressed(n: int) -> Callable[[], bool]:
        def check() -> bool:
            samples.append((time.monotonic(), committed(out)))
            return samples[-1][1] >= n
        return check

    with LocalCluster(head_cpus=1, env=ray_env(**FAST_METRICS)) as cluster:
        proc = subprocess.Popen([sys.executable, "-m", "raycorpus.cli", "run", str(cfg)], env=cluster.driver_env(),
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            wait_for("3 committed WARCs", progressed(3), timeout=300)
            t_added = time.monotonic()
            node = cluster.add_node(num_cpus=1)
            # the driver's gauge (on the head) and the new node's own worker metrics show the pool using it
            wait_for("the pool to grow to 2", lambda: cluster.head.metric("ray_raycorpus_workers") >= 2, timeout=120)
            t_grown = time.monotonic()
            n_grown = committed(out)
            wait_for("2 WARCs processed on the added node",
                     lambda: node.metric("ray_raycorpus_warc_seconds_count") >= 2, timeout=120)
            t_removed, n_removed = time.monotonic(), committed(out)
            assert n_removed < N_WARCS, "the run ended before the added node was removed"
            node.stop()
            _, stderr = proc.communicate(timeout=600)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert proc.returncode == 0, stderr[-3000:]
    summary = assert_same_corpus(out, big_reference)
    run = summary["this_run"]
    assert run["workers"] == 2
    assert len(run["warcs_by_node"]) == 2 and all(n > 0 for n in run["warcs_by_node"].values()), run
    one_node = [(t, n) for t, n in samples if t <= t_added and n >= 1]  # from the first commit (after start-up)
    rate_one = (one_node[-1][1] - one_node[0][1]) / max(1e-9, one_node[-1][0] - one_node[0][0])
    rate_two = (n_removed - n_grown) / max(1e-9, t_removed - t_grown)
    print(f"committed WARCs/s: {rate_one:.2f} on one node, {rate_two:.2f} with the added node; "
          f"by node {run['warcs_by_node']}")


class HeldFileServer:
    """Serves a folder over HTTP on 127.0.0.1, holding every GET of ``held`` until ``release()``."""

    def __init__(self, directory: Path, held: str):
        self.gate = threading.Event()
        gate = self.gate

        class Handler(http.server.SimpleHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path.lstrip("/") == held:
                    gate.wait()
                super().do_GET()

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(
            ("127.0.0.1", free_port()), functools.partial(Handler, directory=str(directory)))
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def release(self) -> None:
        self.gate.set()

    def stop(self) -> None:
        self.release()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


def test_results_waiting_for_commit_survive_the_loss_of_their_node(big_crawl, big_reference, tmp_path):
    """WARC 0 is held (its HTTP response waits), so WARCs that a second node processes meanwhile
    wait in the reorder buffer; that node is then SIGKILLed. Their results were copied to the
    driver's node when they finished, so the run commits them without processing them again."""
    c, _ = big_crawl
    first = c.manifest_path.read_text().split()[0]
    www = HeldFileServer(c.manifest_path.parent, held=first)
    out = tmp_path / "out"
    cfg = write_config(tmp_path / "c.yaml", big_crawl, out, input={"base": www.url},
                       ray={"resize_interval_seconds": 1}, storage={"timeout_seconds": 600})
    try:
        with LocalCluster(head_cpus=1, env=ray_env(**FAST_METRICS)) as cluster:
            proc = subprocess.Popen([sys.executable, "-m", "raycorpus.cli", "run", str(cfg)],
                                    env=cluster.driver_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                    text=True)
            try:
                wait_for("the pool's first worker", lambda: cluster.head.metric("ray_raycorpus_workers") >= 1,
                         timeout=300)
                node = cluster.add_node(num_cpus=1)
                wait_for("2 WARCs from the added node in the reorder buffer",
                         lambda: cluster.head.metric("ray_raycorpus_warcs", state="buffered") >= 2, timeout=300)
                node.kill()
                assert committed(out) == 0  # WARC 0 is still held: nothing was committed yet
                www.release()
                _, stderr = proc.communicate(timeout=600)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
            assert proc.returncode == 0, stderr[-3000:]
    finally:
        www.stop()
    summary = assert_same_corpus(out, big_reference)
    run = summary["this_run"]
    print(f"WARCs by node {run['warcs_by_node']}, retried {run['retried']}")
    assert len(run["warcs_by_node"]) == 2 and min(run["warcs_by_node"].values()) >= 2
    # the lost node's buffered results (2 or more) were committed, not processed again; only a WARC finishing as
    # the node died may have lost its results on the way to the driver's node, and is then processed again
    # (counted as processed twice if its summary had arrived, once if the summary went with the node too)
    assert run["results_lost"] <= 1 and N_WARCS <= run["processed"] <= N_WARCS + run["results_lost"]


def alive_worker_nodes(cluster: LocalCluster) -> int:
    return cluster.alive_nodes() - 1


@pytest.mark.parametrize("workers", [None, 2], ids=["pool-from-cpus", "workers-2"])
def test_fake_autoscaler_scales_from_zero_for_pending_workers_and_back(big_crawl, big_reference, tmp_path, workers):
    """A head with no CPU and Ray's fake multi-node autoscaler: raycorpus's pending extraction
    workers make it start nodes (one for a pool sized from the cluster's CPUs, which asks for one
    worker while there is none; two for ``ray.workers: 2``), the run completes on them, and the
    idle nodes are removed after."""
    config = yaml.safe_load(FAKE_AUTOSCALER_CONFIG.read_text())
    gcs_port = free_port()
    config["provider"]["gcs_address"] = f"127.0.0.2:{gcs_port}"
    autoscaling = tmp_path / "autoscaler.yaml"
    autoscaling.write_text(yaml.safe_dump(config))
    out = tmp_path / "out"
    cfg = write_config(tmp_path / "c.yaml", big_crawl, out, **({"ray": {"workers": workers}} if workers else {}))
    env = ray_env(RAY_FAKE_CLUSTER="1", AUTOSCALER_UPDATE_INTERVAL_S="1")
    with LocalCluster(head_cpus=0, env=env, gcs_port=gcs_port,
                      head_args=(f"--autoscaling-config={autoscaling}",)) as cluster:
        assert alive_worker_nodes(cluster) == 0
        r = subprocess.run([sys.executable, "-m", "raycorpus.cli", "run", str(cfg)], env=cluster.driver_env(),
                           capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr[-3000:]
        summary = json.loads((out / "summary.json").read_text())
        worker_nodes = set(summary["this_run"]["warcs_by_node"])
        assert len(worker_nodes) == (workers or 1), summary["this_run"]
        assert all(n.startswith("fffff") and not n.endswith("00000") for n in worker_nodes), (
            worker_nodes)  # the fake provider's worker node ids, never the head's
        wait_for("the autoscaler to remove the idle worker nodes", lambda: alive_worker_nodes(cluster) == 0,
                 timeout=180, interval=2)
    assert_same_corpus(out, big_reference)


def test_a_stray_local_cluster_is_not_joined(big_crawl, big_reference, tmp_path):
    """A cluster started on this machine with `ray start --head`, and neither `ray.address` nor RAY_ADDRESS:
    the CLI starts a private Ray, as the README says, instead of joining whatever runs here."""
    ray_tmp = tempfile.mkdtemp(prefix="rc-", dir="/tmp")  # short: Ray's socket paths must fit in 107 bytes
    env = ray_env(RAY_TMPDIR=ray_tmp)  # where ray.init() looks for "the latest cluster started on this machine"
    try:
        with LocalCluster(env=env, head_temp=os.path.join(ray_tmp, "ray")) as stray:
            probe = "import ray; ray.init(log_to_driver=False); print('JOINED', ray.get_runtime_context().gcs_address)"
            joined = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120)
            assert f"JOINED {stray.address}" in joined.stdout, joined.stderr[-2000:]  # the hazard is real here
            cfg = write_config(tmp_path / "c.yaml", big_crawl, tmp_path / "out",
                               ray={"num_cpus": 2, "object_store_memory": 200 * 2**20})
            r = raycorpus_cli("run", str(cfg), env=env)
            assert stray.alive_nodes() == 1  # the stray cluster is untouched and still up
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "Started a local Ray instance" in r.stderr and "Connecting to existing Ray cluster" not in r.stderr
    assert_same_corpus(tmp_path / "out", big_reference)
