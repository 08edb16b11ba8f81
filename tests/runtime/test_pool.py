"""The work queue: streaming the manifest into tasks, and how many workers the pool starts."""

from tests.support.paths import SHARED, need_shared


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
