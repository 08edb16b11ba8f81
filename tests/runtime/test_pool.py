"""The work queue's Ray-free parts: streaming the manifest into tasks."""

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
