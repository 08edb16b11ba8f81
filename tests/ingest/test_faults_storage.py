"""S3 faults (issue 6, test 4): a fault-injecting proxy in front of the real SeaweedFS server.

Reads resume broken streams with ranged re-reads, writes (single and multipart) retry through
SlowDown and resets, requests in flight stay within storage.max_concurrency, and a whole build
with its input and output behind the proxy gives the same shard bytes as an undisturbed run.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import threading
from pathlib import Path

import pytest

from raycorpus.ingest.storage import Storage, StorageConfig, StorageError, backoff_delay
from raycorpus.output.ledger import Ledger
from raycorpus.output.verify import format_checks, verify_output
from tests.support.corpus import make_config, run, shard_digests
from tests.support.servers import FaultyS3Proxy, SeaweedS3

MiB = 2**20
# Fast retries so the tests do not sleep long; throttling still waits longer than other errors.
FAST_RETRIES = {"backoff_seconds": 0.01, "throttle_backoff_seconds": 0.05, "backoff_max_seconds": 0.2,
                "max_attempts": 10}


def proxied_storage(proxy: FaultyS3Proxy, **cfg: object) -> Storage:
    return Storage(StorageConfig(s3_endpoint_url=proxy.endpoint_url, **{**FAST_RETRIES, **cfg}))


@pytest.fixture(scope="module")
def bucket(s3_server: SeaweedS3) -> str:
    return s3_server.create_bucket("faults-core")


def test_backoff_is_jittered_and_longer_after_slowdown() -> None:
    cfg = StorageConfig(backoff_seconds=0.5, throttle_backoff_seconds=1.0, backoff_max_seconds=20.0)
    for failures in range(1, 8):
        plain = [backoff_delay(cfg, failures, throttled=False) for _ in range(200)]
        slow = [backoff_delay(cfg, failures, throttled=True) for _ in range(200)]
        high = min(20.0, 0.5 * 2 ** (failures - 1))
        low = min(20.0, 1.0 * 2 ** (failures - 1))
        assert all(high / 2 <= d <= high for d in plain)
        assert all(low <= d <= min(20.0, 2 * low) for d in slow)
        assert min(slow) >= 1.0 and max(slow) <= 20.0
        if low < 20.0:
            assert len(set(slow)) > 100 and len(set(plain)) > 100  # jittered, not a fixed schedule


def test_slowdown_body_is_read_as_slowdown_and_retried(s3_server: SeaweedS3, bucket: str) -> None:
    s3_server.client().put_object(Bucket=bucket, Key="slow/a", Body=b"hello")
    with FaultyS3Proxy(s3_server.endpoint_url, slowdown=1.0) as proxy, \
            pytest.raises(StorageError, match=r"SlowDown \(HTTP 503\)"):
        proxied_storage(proxy, max_attempts=1).read_bytes(f"s3://{bucket}/slow/a")
    with FaultyS3Proxy(s3_server.endpoint_url, slowdown=0.6, seed=3) as proxy:
        st = proxied_storage(proxy)
        assert [st.read_bytes(f"s3://{bucket}/slow/a") for _ in range(10)] == [b"hello"] * 10
        assert proxy.faults_by_kind()["slowdown"] > 0
        assert st.stats["throttled"] == proxy.faults_by_kind()["slowdown"] == st.stats["retries"]


def test_reads_resume_through_truncations_and_resets(s3_server: SeaweedS3, bucket: str) -> None:
    data = os.urandom(6 * MiB + 12345)
    s3_server.client().put_object(Bucket=bucket, Key="big/object.bin", Body=data)
    url = f"s3://{bucket}/big/object.bin"
    with FaultyS3Proxy(s3_server.endpoint_url, slowdown=0.1, reset=0.1, reset_mid_body=0.2, truncate=0.3,
                       seed=7, ops={"get", "head"}) as proxy:
        st = proxied_storage(proxy)
        assert st.read_bytes(url) == data
        assert st.size(url) == len(data)
        with st.open_read(url) as f:  # small reads across many resumes
            chunks = iter(lambda: f.read(100_003), b"")
            assert hashlib.sha256(b"".join(chunks)).digest() == hashlib.sha256(data).digest()
    kinds = proxy.faults_by_kind()
    assert kinds["truncate"] > 0 and kinds["reset_mid_body"] > 0 and kinds["reset"] + kinds["slowdown"] > 0
    assert st.stats["retries"] >= kinds["truncate"] + kinds["reset_mid_body"]
    assert st.stats["bytes_read"] == 2 * len(data)  # nothing read twice into the result
    resumed = [r for r in proxy.ranges if r is not None]
    assert resumed and all(r.startswith("bytes=") and int(r[6:].rstrip("-")) > 0 for r in resumed)


def test_writes_single_and_multipart_survive_slowdowns_and_resets(
    s3_server: SeaweedS3, bucket: str, tmp_path: Path
) -> None:
    small = {f"w/small-{i:02d}": os.urandom(1000 + i) for i in range(20)}
    big_bytes = os.urandom(11 * MiB + 7)
    big_file = tmp_path / "big.bin"
    big_file.write_bytes(os.urandom(12 * MiB + 3))
    with FaultyS3Proxy(s3_server.endpoint_url, slowdown=0.15, reset=0.2, reset_mid_body=0.1, truncate=0.1,
                       seed=11) as proxy:
        st = proxied_storage(proxy, multipart_threshold_bytes=5 * MiB, max_concurrency=3)
        for key, body in small.items():
            st.write_atomic(f"s3://{bucket}/{key}", body)
        st.write_atomic(f"s3://{bucket}/w/big-bytes", big_bytes)
        st.write_file_atomic(f"s3://{bucket}/w/big-file", str(big_file))
        listed = st.list(f"s3://{bucket}/w")
        assert listed == sorted(f"s3://{bucket}/{k}" for k in [*small, "w/big-bytes", "w/big-file"])
        assert st.size(f"s3://{bucket}/w/big-file") == big_file.stat().st_size
        st.delete(f"s3://{bucket}/w/small-00")
        assert not st.exists(f"s3://{bucket}/w/small-00")
    by_op = proxy.faults_by_op()
    assert by_op["put"] > 0 and by_op["multipart"] > 0 and by_op["list"] + by_op["head"] > 0
    assert proxy.faults_by_kind()["slowdown"] > 0 and proxy.faults_by_kind()["reset"] > 0
    assert st.stats["retries"] > 0 and st.stats["throttled"] > 0
    direct = s3_server.client()  # read back past the proxy
    for key, body in list(small.items())[1:]:
        assert direct.get_object(Bucket=bucket, Key=key)["Body"].read() == body
    assert direct.get_object(Bucket=bucket, Key="w/big-bytes")["Body"].read() == big_bytes
    assert direct.get_object(Bucket=bucket, Key="w/big-file")["Body"].read() == big_file.read_bytes()
    assert direct.head_object(Bucket=bucket, Key="w/big-file")["ETag"].endswith('-3"')  # three parts


@pytest.mark.parametrize("max_concurrency", [1, 2, 6])
def test_max_concurrency_bounds_requests_in_flight(
    s3_server: SeaweedS3, bucket: str, tmp_path: Path, max_concurrency: int
) -> None:
    big_file = tmp_path / "big.bin"
    big_file.write_bytes(os.urandom(20 * MiB))  # four parts
    with FaultyS3Proxy(s3_server.endpoint_url, latency=0.05) as proxy:
        st = proxied_storage(proxy, multipart_threshold_bytes=5 * MiB, max_concurrency=max_concurrency)
        prefix = f"s3://{bucket}/conc-{max_concurrency}"

        def hammer(i: int) -> None:
            for j in range(4):
                st.write_atomic(f"{prefix}/t{i}-{j}", b"x" * 100)
                st.size(f"{prefix}/t{i}-{j}")

        threads = [threading.Thread(target=hammer, args=(i,)) for i in range(12)]
        threads.append(threading.Thread(target=st.write_file_atomic, args=(f"{prefix}/big", str(big_file))))
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(st.list(prefix)) == 12 * 4 + 1
    assert proxy.requests["put"] == 48 and proxy.requests["multipart"] == 4 + 2
    # 13 threads and four parts at once would overlap far beyond the bound; the slots hold them to it
    assert proxy.max_in_flight == max_concurrency




def test_build_with_input_and_output_behind_a_faulty_s3_gives_the_same_bytes(reference, crawl, s3_server):
    c, tok = crawl
    ref_out, ref_summary = reference
    direct = s3_server.client()
    direct.create_bucket(Bucket="faults-crawl")
    direct.create_bucket(Bucket="faults-corpus")
    for p in c.warc_paths:
        direct.upload_file(str(p), "faults-crawl", f"sample/{p.name}")
    direct.put_object(Bucket="faults-crawl", Key="warc.paths.gz", Body=gzip.compress(c.manifest_path.read_bytes()))
    with FaultyS3Proxy(s3_server.endpoint_url, slowdown=0.05, reset=0.05, reset_mid_body=0.1, truncate=0.15,
                       seed=2) as proxy:
        cfg = make_config("s3://faults-crawl/warc.paths.gz", "s3://faults-corpus/run1", tok,
                          input={"base": "s3://faults-crawl/sample/"}, ray={"workers": 2},
                          storage={"s3_endpoint_url": proxy.endpoint_url, **FAST_RETRIES})
        s = run(cfg)
    assert s["complete"] and s["warcs"] == {"total": 8, "committed": 8, "failed": 0, "pending": 0}
    assert s["docs"] == ref_summary["docs"] and s["tokens"] == ref_summary["tokens"]
    assert s["this_run"]["retried"] == 0  # every fault was absorbed by storage retries, none failed a WARC
    kinds, by_op = proxy.faults_by_kind(), proxy.faults_by_op()
    assert all(kinds[k] > 0 for k in ("slowdown", "reset", "reset_mid_body", "truncate")), kinds
    assert by_op["get"] > 0 and by_op["put"] > 0, by_op
    # the workers' WARC reads were broken too, and absorbed by storage retries (no WARC was retried)
    warc_faults = sum(n for path, n in proxy.fault_paths.items() if path.startswith("/faults-crawl/sample/"))
    assert warc_faults > 0 and s["storage"]["retries"] >= warc_faults, (warc_faults, s["storage"])
    st = Storage(StorageConfig(s3_endpoint_url=s3_server.endpoint_url))  # read back past the proxy
    got = {"/".join(u.rsplit("/", 2)[1:]): st.read_bytes(u) for folder in ("shards", "clusters")
           for u in st.list(f"s3://faults-corpus/run1/{folder}")}
    assert {k: hashlib.sha256(v).hexdigest() for k, v in got.items()} == shard_digests(ref_out)
    assert Ledger(st, "s3://faults-corpus/run1").load().complete
    assert not st.list("s3://faults-corpus/run1/open")
    checks = verify_output(st, "s3://faults-corpus/run1")
    assert all(c.ok for c in checks), format_checks(checks)
