"""The work queue: streaming the manifest into tasks, how many workers the pool starts, and a WARC whose
results are lost with their node before the driver reads them."""

import json
import subprocess
import sys

import pytest

from tests.support.cluster import LocalCluster
from tests.support.corpus import make_config
from tests.support.paths import SHARED, need_shared
from tests.support.servers import LocalHTTPServer


def test_the_driver_streams_a_100k_line_manifest():
    import tracemalloc

    from raycorpus.config import config_from_dict
    from raycorpus.ingest.storage import Storage
    from raycorpus.runtime.pool import manifest_tasks

    manifest = need_shared(SHARED / "data" / "cc-manifests" / "CC-MAIN-2025-33.warc.paths.gz")
    cfg = config_from_dict({"input": {"manifest": str(manifest), "base": "s3://commoncrawl/"},
                            "output": {"path": "unused"}, "tokenizer": {"path": "unused.json"}})
    tracemalloc.start()
    n = sum(1 for _ in manifest_tasks(cfg, Storage(), 0))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert n == 100_000 and peak < 8 * 2**20  # measured 0.5 MB: the manifest is never held as a list


def test_a_small_job_starts_no_more_workers_than_it_has_tasks(ray_address):
    from raycorpus.config import config_from_dict
    from raycorpus.runtime.pool import WorkerPool

    def cfg(**ray_cfg):
        return config_from_dict({"input": {"manifest": "m"}, "output": {"path": "o"},
                                 "tokenizer": {"path": "t.json"}, "ray": ray_cfg})

    # the session's cluster has 2 CPUs: one worker per CPU, or ray.workers, but never more than the tasks
    assert [WorkerPool(cfg(), tasks=t).target_size() for t in (None, 5, 2, 1, 0)] == [2, 2, 2, 1, 1]
    assert [WorkerPool(cfg(workers=3), tasks=t).target_size() for t in (None, 3, 1)] == [3, 3, 1]
    assert WorkerPool(cfg(max_workers=1), tasks=5).target_size() == 1


# A driver that sends WARC #0 to the one worker (on node B), stops collecting, lets the WARC finish there, SIGKILLs
# B's raylet before it reads the WARC's summary, then steps the dispatcher until WARC #0 comes back (argv: the
# Ray address, the config file, B's raylet PID). Its stdout tells the test when to release the WARC and when to
# add a node.
LOSE_A_FINISHED_WARC = """
import json, os, signal, sys, time
import ray
from raycorpus.config import load_config
from raycorpus.ingest.storage import Storage
from raycorpus.runtime.metrics import Metrics
from raycorpus.runtime.pool import Dispatcher, WorkerPool, manifest_tasks

address, config, raylet = sys.argv[1], sys.argv[2], int(sys.argv[3])
ray.init(address=address, log_to_driver=False)
cfg = load_config(config)
pool = WorkerPool(cfg, tasks=1)
dispatcher = Dispatcher(cfg, pool, manifest_tasks(cfg, Storage(), 0), Metrics(cfg.output.path))
deadline = time.monotonic() + 300
while not dispatcher.inflight:  # WARC #0's GET is held: it cannot finish in these steps
    assert not dispatcher.step(1) and time.monotonic() < deadline
print("DISPATCHED", flush=True)
ready, _ = ray.wait(list(dispatcher.inflight), fetch_local=False, timeout=300)  # finished on B, not read here
assert ready, "WARC #0 did not finish"
os.kill(raylet, signal.SIGKILL)
print("KILLED", flush=True)
finished = []
while not finished:
    finished = dispatcher.step(1)
    assert time.monotonic() < deadline + 300, "WARC #0 did not come back"
s = dispatcher.stats
print("RESULT", json.dumps({"processed": s.processed, "results_lost": s.results_lost, "retried": s.retried,
                            "failed": finished[0].summary is None, "nodes": len(s.by_node)}), flush=True)
"""


def test_the_pool_sends_each_task_to_the_least_busy_worker_the_earliest_ready_first():
    """Dispatch picks from a heap of the workers' loads (a pass over 10,000 workers per WARC cost ~0.6 ms): the least
    busy, among equals the one ready first; a worker removed is never picked, and the heap does not grow with the
    tasks sent."""
    from raycorpus.config import config_from_dict
    from raycorpus.runtime.pool import WorkerPool

    pool = WorkerPool(config_from_dict({"input": {"manifest": "m"}, "output": {"path": "o"},
                                        "tokenizer": {"path": "t.json"}}))
    a, b, c = "worker-a", "worker-b", "worker-c"  # (the pool only keeps them as keys)
    assert pool.pick() is None
    for w in (a, b, c):
        pool._set_load(w, 0)
    sent = []
    for _ in range(6):
        w = pool.pick()
        pool.took(w)
        sent.append(w)
    assert sent == [a, b, c, a, b, c] and pool.ready == {a: 2, b: 2, c: 2}
    pool.done(b)
    assert pool.pick() == b
    pool.ready.pop(b)  # removed (its node was lost): never picked again, its ends ignored
    pool.done(b)
    pool.done(c)
    assert pool.pick() == c and b not in pool.ready
    for _ in range(10_000):
        pool.took(a)
        pool.done(a)
    assert len(pool._loads) <= 4 * len(pool.ready) + 64


@pytest.mark.slow
def test_a_warc_whose_summary_went_with_its_node_before_the_driver_read_it_is_processed_again(crawl, tmp_path):
    """WARC #0's task ended on node B, whose raylet was then SIGKILLed before the driver read the summary (it
    lives in B's object store: it is too large to travel with the reply). The dispatcher processes the WARC
    again on another node, as a lost result and not a failed attempt, instead of failing the run with
    ObjectReconstructionFailedError (found by the fault soak, benchmarks/soak.py seed 1007)."""
    c, tok = crawl
    held = c.manifest_path.read_text().split()[0]
    with LocalHTTPServer(c.manifest_path.parent, hold=(held,)) as www, LocalCluster(head_cpus=0) as cluster:
        node_b = cluster.add_node(num_cpus=1)  # the head has no CPU: the one worker starts on B
        cfg = tmp_path / "c.json"
        cfg.write_text(json.dumps(make_config(str(c.manifest_path), str(tmp_path / "out"), tok,
                                              input={"base": www.url}).model_dump(mode="json")))
        proc = subprocess.Popen([sys.executable, "-c", LOSE_A_FINISHED_WARC, cluster.address, str(cfg),
                                 str(node_b.pid_of("raylet"))], env=cluster.driver_env(), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            assert proc.stdout.readline().strip() == "DISPATCHED", proc.communicate()[1][-3000:]
            www.release()
            assert proc.stdout.readline().strip() == "KILLED", proc.communicate()[1][-3000:]
            cluster.add_node(num_cpus=1)  # where the WARC can be processed again
            out, err = proc.communicate(timeout=600)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert proc.returncode == 0, err[-3000:]
    result = json.loads(out.split("RESULT ", 1)[1])
    assert result == {"processed": 1, "results_lost": 1, "retried": 0, "failed": False, "nodes": 1}, result
    assert www.gets[f"/{held}"] == 2  # read on B, then once more on the new node
