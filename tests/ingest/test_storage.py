"""Storage and manifest tests against real components: local disk, SeaweedFS S3, a local HTTP server."""

from __future__ import annotations

import errno
import gzip
import http.client
import io
import itertools
import os
import pickle
import socket
import ssl
import threading
import time
import urllib.error
from collections.abc import Iterator
from pathlib import Path

import botocore.exceptions as bexc
import pytest
from fastwarc.warc import ArchiveIterator, WarcRecordType

from raycorpus.ingest.manifest import ManifestError, count_manifest, iter_manifest
from raycorpus.ingest.storage import (
    NotFound,
    Storage,
    StorageConfig,
    StorageError,
    is_remote,
    is_transient,
    join_url,
)
from tests.support.paths import REPO
from tests.support.servers import LocalHTTPServer, SeaweedS3

CC_MANIFEST = REPO.parent / "shared" / "data" / "cc-manifests" / "CC-MAIN-2025-33.warc.paths.gz"
MiB = 2**20
FAST = {"backoff_seconds": 0.01, "backoff_max_seconds": 0.05, "timeout_seconds": 10.0}


def fast_storage(**kw: object) -> Storage:
    return Storage(StorageConfig(**{**FAST, **kw}))


def write_lines(path: Path, lines: list[str], gz: bool) -> None:
    data = "".join(line + "\n" for line in lines).encode()
    path.write_bytes(gzip.compress(data) if gz else data)


# ----------------------------------------------------------------------------- URLs


@pytest.mark.parametrize(
    ("base", "rel", "want"),
    [
        ("s3://bucket", "a/b.gz", "s3://bucket/a/b.gz"),
        ("s3://bucket/", "a/b.gz", "s3://bucket/a/b.gz"),
        ("s3://bucket/pre/fix/", "a.gz", "s3://bucket/pre/fix/a.gz"),
        ("https://data.commoncrawl.org/", "crawl-data/x.gz", "https://data.commoncrawl.org/crawl-data/x.gz"),
        ("https://h/p", "x", "https://h/p/x"),
        ("/data/out", "shard.bin", "/data/out/shard.bin"),
        ("/data/out/", "sub/shard.bin", "/data/out/sub/shard.bin"),
        ("/", "x", "/x"),
        ("rel/dir", "x", "rel/dir/x"),
        ("", "x", "x"),
        ("file:///data", "x", "file:///data/x"),
    ],
)
def test_join_url(base: str, rel: str, want: str) -> None:
    assert join_url(base, rel) == want


def test_is_remote() -> None:
    assert is_remote("s3://b/k") and is_remote("https://h/x") and is_remote("HTTP://h/x")
    assert not is_remote("/tmp/x") and not is_remote("rel/x") and not is_remote("file:///tmp/x")


def _client_error(code: str, status: int) -> bexc.ClientError:
    response = {"Error": {"Code": code, "Message": code}, "ResponseMetadata": {"HTTPStatusCode": status}}
    return bexc.ClientError(response, "GetObject")  # type: ignore[arg-type]


def _http_error(status: int) -> urllib.error.HTTPError:
    return urllib.error.HTTPError("http://h/x", status, "status", {}, None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "exc",
    [
        ConnectionResetError(errno.ECONNRESET, "reset"),
        ConnectionRefusedError(errno.ECONNREFUSED, "refused"),
        BrokenPipeError(errno.EPIPE, "pipe"),
        TimeoutError("timed out"),
        ssl.SSLEOFError(8, "EOF occurred in violation of protocol"),
        http.client.IncompleteRead(b"abc", 10),
        http.client.RemoteDisconnected("closed"),
        _http_error(503),
        _http_error(500),
        _http_error(429),
        _http_error(504),
        urllib.error.URLError(ConnectionResetError(errno.ECONNRESET, "reset")),
        urllib.error.URLError(TimeoutError("timed out")),
        socket.gaierror(socket.EAI_AGAIN, "temporary failure in name resolution"),
        _client_error("SlowDown", 503),
        _client_error("InternalError", 500),
        _client_error("RequestTimeout", 400),
        _client_error("ThrottlingException", 400),
        bexc.ReadTimeoutError(endpoint_url="http://h"),
        bexc.ConnectTimeoutError(endpoint_url="http://h"),
        bexc.EndpointConnectionError(endpoint_url="http://h"),
        bexc.ConnectionClosedError(endpoint_url="http://h"),
        bexc.ResponseStreamingError(error="reset"),
        bexc.IncompleteReadError(actual_bytes=1, expected_bytes=2),
    ],
    ids=repr,
)
def test_transient_errors(exc: BaseException) -> None:
    assert is_transient(exc)


@pytest.mark.parametrize(
    "exc",
    [
        FileNotFoundError(errno.ENOENT, "missing"),
        PermissionError(errno.EACCES, "denied"),
        OSError(errno.EIO, "io error"),
        ValueError("bad"),
        ssl.SSLCertVerificationError(1, "certificate verify failed"),
        _http_error(404),
        _http_error(403),
        _http_error(400),
        _http_error(412),
        _http_error(416),
        urllib.error.URLError("unknown url type: gs"),
        urllib.error.URLError(socket.gaierror(socket.EAI_NONAME, "Name or service not known")),
        socket.gaierror(socket.EAI_NONAME, "Name or service not known"),
        _client_error("NoSuchKey", 404),
        _client_error("NoSuchBucket", 404),
        _client_error("AccessDenied", 403),
        _client_error("SignatureDoesNotMatch", 403),
        _client_error("InvalidRange", 416),
        _client_error("PreconditionFailed", 412),
        bexc.NoCredentialsError(),
        bexc.SSLError(endpoint_url="https://h", error="certificate verify failed"),
    ],
    ids=repr,
)
def test_permanent_errors(exc: BaseException) -> None:
    assert not is_transient(exc)


def test_storage_config_forbids_unknown_fields() -> None:
    with pytest.raises(ValueError, match="extra"):
        StorageConfig(aws_secret_access_key="x")  # type: ignore[call-arg]


# ----------------------------------------------------------------------------- local


def _all_files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def test_local_roundtrip(tmp_path: Path) -> None:
    st = Storage()
    root = str(tmp_path / "out")
    st.write_atomic(join_url(root, "b/c/2.bin"), b"two")
    st.write_atomic(join_url(root, "1.bin"), b"one")
    st.write_atomic(join_url(root, "1.bin"), b"one!")  # overwrite
    (tmp_path / "out" / "b" / ".tmp-stray").write_bytes(b"partial")  # an interrupted writer's leftover

    assert st.read_bytes(join_url(root, "1.bin")) == b"one!"
    assert st.size(join_url(root, "b/c/2.bin")) == 3
    assert st.exists(join_url(root, "1.bin")) and not st.exists(join_url(root, "nope"))
    assert not st.exists(root)  # a directory is not an object
    assert st.list(root) == [f"{root}/1.bin", f"{root}/b/c/2.bin"]
    assert st.list(root + "/") == [f"{root}/1.bin", f"{root}/b/c/2.bin"]
    assert st.list(join_url(root, "missing")) == []
    assert st.list("file://" + root) == [f"file://{root}/1.bin", f"file://{root}/b/c/2.bin"]
    assert st.read_bytes(f"file://{root}/b/c/2.bin") == b"two"
    assert _all_files(tmp_path / "out") == ["1.bin", "b/.tmp-stray", "b/c/2.bin"]  # no temp files of ours

    with st.open_read(join_url(root, "1.bin")) as f:
        assert f.readable() and f.read(2) == b"on" and f.tell() == 2 and f.read() == b"e!"

    st.write_atomic(join_url(root, "d/x"), b"x")
    st.write_atomic(join_url(root, "d/y"), b"y")
    st.delete_many([join_url(root, "d/x"), join_url(root, "d/y"), join_url(root, "d/missing")])
    assert st.list(join_url(root, "d")) == []
    st.delete(join_url(root, "1.bin"))
    st.delete(join_url(root, "1.bin"))  # missing is fine
    assert not st.exists(join_url(root, "1.bin"))
    with pytest.raises(NotFound) as info:
        st.read_bytes(join_url(root, "1.bin"))
    assert isinstance(info.value, FileNotFoundError) and "1.bin" in str(info.value)
    with pytest.raises(NotFound):
        st.size(join_url(root, "1.bin"))
    assert st.stats["bytes_read"] > 0


def test_local_write_file_atomic(tmp_path: Path) -> None:
    src = tmp_path / "src.bin"
    src.write_bytes(os.urandom(3 * MiB + 7))
    st = Storage()
    dest = str(tmp_path / "deep" / "dir" / "dest.bin")
    st.write_file_atomic(dest, str(src))
    assert Path(dest).read_bytes() == src.read_bytes()
    assert _all_files(tmp_path / "deep") == ["dir/dest.bin"]
    assert st.stats["bytes_written"] == src.stat().st_size
    with pytest.raises(NotFound, match="dest.bin"):
        st.write_file_atomic(dest, str(tmp_path / "no-such-source"))
    with pytest.raises(StorageError, match="under-a-file"):
        st.write_atomic(str(src / "under-a-file"), b"x")  # parent is a regular file
    assert Path(dest).read_bytes() == src.read_bytes()


def test_local_write_is_atomic(tmp_path: Path) -> None:
    """While a write is in flight the target still holds the old content (new one only after rename)."""
    st = Storage()
    out = tmp_path / "out"
    out.mkdir()
    target = out / "shard.bin"
    target.write_bytes(b"old")
    fifo = tmp_path / "source.fifo"
    os.mkfifo(fifo)
    errors: list[BaseException] = []

    def writer() -> None:
        try:
            st.write_file_atomic(str(target), str(fifo))
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=writer)
    thread.start()
    with open(fifo, "wb") as feed:
        feed.write(b"new-first-half|")
        feed.flush()
        deadline = time.monotonic() + 20
        while not any(p.name.startswith(".tmp-") for p in out.iterdir()) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert any(p.name.startswith(".tmp-") for p in out.iterdir()), "writer never created its temp file"
        assert target.read_bytes() == b"old"
        assert st.list(str(out)) == [str(target)]  # the temp file is not listed
        feed.write(b"second-half")
    thread.join(timeout=30)
    assert not errors
    assert target.read_bytes() == b"new-first-half|second-half"
    assert sorted(p.name for p in out.iterdir()) == ["shard.bin"]


def test_storage_pickles(tmp_path: Path) -> None:
    st = fast_storage(max_attempts=3)
    st.write_atomic(str(tmp_path / "x"), b"x")
    clone = pickle.loads(pickle.dumps(st))
    assert clone.cfg == st.cfg and clone.read_bytes(str(tmp_path / "x")) == b"x"


def test_http_is_read_only(tmp_path: Path) -> None:
    st = Storage()
    for call in (
        lambda: st.write_atomic("https://h.invalid/x", b"x"),
        lambda: st.write_file_atomic("https://h.invalid/x", str(tmp_path)),
        lambda: st.delete("https://h.invalid/x"),
        lambda: st.list("https://h.invalid/x/"),
    ):
        with pytest.raises(StorageError, match="h.invalid"):
            call()
    with pytest.raises(StorageError, match="unsupported URL scheme"):
        st.read_bytes("gs://bucket/x")


# ----------------------------------------------------------------------------- manifest

LINES = [
    "# a comment",
    "crawl-data/CC-MAIN-2025-33/segments/1/warc/a.warc.gz",
    "",
    "   crawl-data/CC-MAIN-2025-33/segments/1/warc/b.warc.gz   ",
    "\t",
    "  # indented comment",
    "crawl-data/CC-MAIN-2025-33/segments/2/warc/c.warc.gz",
]
RELS = [
    "crawl-data/CC-MAIN-2025-33/segments/1/warc/a.warc.gz",
    "crawl-data/CC-MAIN-2025-33/segments/1/warc/b.warc.gz",
    "crawl-data/CC-MAIN-2025-33/segments/2/warc/c.warc.gz",
]


@pytest.mark.parametrize(
    ("name", "gz"), [("warc.paths", False), ("warc.paths.gz", True), ("gz-no-suffix", True)]
)
def test_manifest_local_relative_to_manifest_dir(tmp_path: Path, name: str, gz: bool) -> None:
    path = tmp_path / name
    write_lines(path, LINES, gz)
    st = Storage()
    assert list(iter_manifest(str(path), None, st)) == [f"{tmp_path}/{r}" for r in RELS]
    assert list(iter_manifest(f"file://{path}", "", st)) == [f"file://{tmp_path}/{r}" for r in RELS]
    assert count_manifest(str(path), None, st) == 3


def test_manifest_plain_text_with_gz_suffix(tmp_path: Path) -> None:
    path = tmp_path / "warc.paths.gz"
    write_lines(path, LINES, gz=False)
    assert list(iter_manifest(str(path), "s3://commoncrawl/", Storage())) == [
        f"s3://commoncrawl/{r}" for r in RELS
    ]


def test_manifest_without_base_keeps_urls_and_absolute_paths(tmp_path: Path) -> None:
    path = tmp_path / "warc.paths"
    write_lines(
        path,
        ["s3://b/x.warc.gz", "https://h/y.warc.gz", "file:///d/z.warc.gz", "/abs/w.warc.gz", "r.gz"],
        False,
    )
    assert list(iter_manifest(str(path), None, Storage())) == [
        "s3://b/x.warc.gz",
        "https://h/y.warc.gz",
        "file:///d/z.warc.gz",
        "/abs/w.warc.gz",
        f"{tmp_path}/r.gz",
    ]


def test_manifest_with_base(tmp_path: Path) -> None:
    path = tmp_path / "warc.paths.gz"
    write_lines(path, LINES, gz=True)
    got = list(iter_manifest(str(path), "https://data.commoncrawl.org", Storage()))
    assert got == [f"https://data.commoncrawl.org/{r}" for r in RELS]


@pytest.mark.parametrize(
    "bad",
    [
        "/abs/x.warc.gz",
        "crawl-data/../../etc/passwd",
        "..",
        "./crawl-data/x.warc.gz",
        "s3://other/x.warc.gz",
        "https://evil/x.warc.gz",
        "file:///x.warc.gz",
        "crawl-data\\x.warc.gz",
    ],
)
def test_manifest_rejects_unsafe_lines_with_base(tmp_path: Path, bad: str) -> None:
    path = tmp_path / "warc.paths"
    write_lines(path, ["# header", RELS[0], bad, RELS[1]], gz=False)
    it = iter_manifest(str(path), "s3://bucket/", Storage())
    assert next(it) == f"s3://bucket/{RELS[0]}"
    with pytest.raises(ManifestError, match=r"line 3\b") as info:
        next(it)
    assert bad in str(info.value) or repr(bad) in str(info.value)
    assert count_manifest(str(path), "s3://bucket/", Storage()) == 3  # a run lists the rejected line as failed


def test_manifest_errors(tmp_path: Path) -> None:
    with pytest.raises(NotFound):
        list(iter_manifest(str(tmp_path / "missing.paths"), None, Storage()))
    bad_gz = tmp_path / "truncated.gz"
    bad_gz.write_bytes(gzip.compress(b"a/b.warc.gz\n" * 1000)[:60])
    with pytest.raises(ManifestError, match="truncated.gz"):
        list(iter_manifest(str(bad_gz), None, Storage()))
    latin = tmp_path / "latin.paths"
    latin.write_bytes(b"a/\xe9.warc.gz\n")
    with pytest.raises(ManifestError, match="latin.paths"):
        list(iter_manifest(str(latin), None, Storage()))


def test_manifest_streams(tmp_path: Path) -> None:
    path = tmp_path / "big.paths"
    write_lines(path, [f"crawl-data/seg/warc/{i:08d}.warc.gz" for i in range(100_000)], gz=False)
    st = Storage()
    it = iter_manifest(str(path), "s3://commoncrawl/", st)
    assert isinstance(it, Iterator)
    assert list(itertools.islice(it, 3))[-1] == "s3://commoncrawl/crawl-data/seg/warc/00000002.warc.gz"
    assert 0 < st.stats["bytes_read"] < path.stat().st_size // 4  # only a buffer's worth was read
    it.close()
    assert count_manifest(str(path), "s3://commoncrawl/", Storage()) == 100_000


def test_real_cc_manifest() -> None:
    if not CC_MANIFEST.exists():
        pytest.skip(f"{CC_MANIFEST} not present (the ../shared data set is beside the checkout on dev/CI)")
    base = "https://data.commoncrawl.org/"
    it = iter_manifest(str(CC_MANIFEST), base, Storage())
    first = next(it)
    assert first == (
        "https://data.commoncrawl.org/crawl-data/CC-MAIN-2025-33/segments/1754151279521.11/warc/"
        "CC-MAIN-20250802220907-20250803010907-00000.warc.gz"
    )
    rest = sum(1 for _ in it)
    assert rest + 1 == 100_000
    assert count_manifest(str(CC_MANIFEST), base, Storage()) == 100_000


# ----------------------------------------------------------------------------- S3 (SeaweedFS)

BUCKET = "raycorpus-test"


@pytest.fixture(scope="module")
def seaweed(s3_server: SeaweedS3) -> SeaweedS3:
    """The session's server (conftest: its credentials are in the environment)."""
    if BUCKET not in {b["Name"] for b in s3_server.client().list_buckets()["Buckets"]}:
        s3_server.create_bucket(BUCKET)
    return s3_server


@pytest.fixture
def s3st(seaweed: SeaweedS3) -> Storage:
    return fast_storage(
        s3_endpoint_url=seaweed.endpoint_url, s3_region="us-east-1", multipart_threshold_bytes=5 * MiB
    )


def test_s3_small_and_multipart_writes(seaweed: SeaweedS3, s3st: Storage) -> None:
    small, big = b"hello shard", os.urandom(12 * MiB + 123)
    s3st.write_atomic(f"s3://{BUCKET}/w/small.bin", small)
    s3st.write_atomic(f"s3://{BUCKET}/w/big.bin", big)
    assert s3st.read_bytes(f"s3://{BUCKET}/w/small.bin") == small
    assert s3st.read_bytes(f"s3://{BUCKET}/w/big.bin") == big
    assert s3st.size(f"s3://{BUCKET}/w/big.bin") == len(big)
    client = seaweed.client()
    assert "-" not in client.head_object(Bucket=BUCKET, Key="w/small.bin")["ETag"]
    assert client.head_object(Bucket=BUCKET, Key="w/big.bin")["ETag"].strip('"').endswith("-3")  # 3 parts
    assert s3st.stats["bytes_written"] == len(small) + len(big)


def test_s3_write_file_and_stream(seaweed: SeaweedS3, s3st: Storage, tmp_path: Path) -> None:
    src = tmp_path / "shard.bin"
    src.write_bytes(os.urandom(11 * MiB))
    url = f"s3://{BUCKET}/f/shard.bin"
    s3st.write_file_atomic(url, str(src))
    assert seaweed.client().head_object(Bucket=BUCKET, Key="f/shard.bin")["ETag"].strip('"').endswith("-3")
    chunks = []
    with s3st.open_read(url) as f:
        while chunk := f.read(MiB - 1):
            chunks.append(chunk)
    assert len(chunks) > 10 and b"".join(chunks) == src.read_bytes()
    assert s3st.stats["bytes_read"] == src.stat().st_size


def test_s3_list_exists_delete(s3st: Storage) -> None:
    for key in ("l/b/2", "l/a", "l/b/1", "lx/not-under-l"):
        s3st.write_atomic(f"s3://{BUCKET}/{key}", key.encode())
    expected = [f"s3://{BUCKET}/l/a", f"s3://{BUCKET}/l/b/1", f"s3://{BUCKET}/l/b/2"]
    assert s3st.list(f"s3://{BUCKET}/l") == expected
    assert s3st.list(f"s3://{BUCKET}/l/") == expected
    assert f"s3://{BUCKET}/lx/not-under-l" in s3st.list(f"s3://{BUCKET}/")
    assert s3st.list(f"s3://{BUCKET}/nothing-here/") == []
    assert s3st.exists(f"s3://{BUCKET}/l/a") and not s3st.exists(f"s3://{BUCKET}/l/zzz")
    s3st.delete(f"s3://{BUCKET}/l/a")
    s3st.delete(f"s3://{BUCKET}/l/a")  # missing is fine
    assert not s3st.exists(f"s3://{BUCKET}/l/a")
    assert s3st.list(f"s3://{BUCKET}/l") == expected[1:]


def test_s3_delete_many_removes_every_key_a_thousand_per_request(seaweed: SeaweedS3, s3st: Storage) -> None:
    urls = [f"s3://{BUCKET}/many/{i:05d}" for i in range(2300)]  # three DeleteObjects requests
    client = seaweed.client()
    for url in urls:
        client.put_object(Bucket=BUCKET, Key=url.removeprefix(f"s3://{BUCKET}/"), Body=b"x")
    s3st.write_atomic(f"s3://{BUCKET}/many-kept", b"k")
    s3st.delete_many([*urls, f"s3://{BUCKET}/many/missing"])  # a missing key is fine
    assert s3st.list(f"s3://{BUCKET}/many/") == []
    assert s3st.exists(f"s3://{BUCKET}/many-kept")
    s3st.delete_many([])
    s3st.delete_many(["s3://no-such-bucket-xyz/a"])  # no bucket: nothing to delete, as for delete()


def test_s3_not_found(s3st: Storage) -> None:
    for url in (f"s3://{BUCKET}/no/such/key", "s3://no-such-bucket-xyz/key"):
        with pytest.raises(NotFound, match="not found"):
            s3st.read_bytes(url)
        with pytest.raises(NotFound):
            s3st.size(url)
        assert not s3st.exists(url)
    assert s3st.stats["retries"] == 0  # never retried


def test_s3_write_to_missing_bucket(s3st: Storage, tmp_path: Path) -> None:
    src = tmp_path / "x.bin"
    src.write_bytes(b"x" * 100)
    with pytest.raises(NotFound, match="NoSuchBucket"):
        s3st.write_atomic("s3://no-such-bucket-xyz/a", b"x")
    with pytest.raises(NotFound, match="s3://no-such-bucket-xyz/b.*NoSuchBucket"):
        s3st.write_file_atomic("s3://no-such-bucket-xyz/b", str(src))


def test_s3_wrong_credentials(seaweed: SeaweedS3, monkeypatch: pytest.MonkeyPatch) -> None:
    fast_storage(s3_endpoint_url=seaweed.endpoint_url).write_atomic(f"s3://{BUCKET}/auth/x", b"x")
    wrong_secret = "wrong-secret-0123456789"
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", wrong_secret)
    st = fast_storage()  # endpoint from AWS_ENDPOINT_URL, region from AWS_DEFAULT_REGION
    for call in (
        lambda: st.read_bytes(f"s3://{BUCKET}/auth/x"),
        lambda: st.write_atomic(f"s3://{BUCKET}/auth/y", b"y"),
        lambda: st.list(f"s3://{BUCKET}/auth/"),
    ):
        with pytest.raises(StorageError) as info:
            call()
        msg = str(info.value)
        assert not isinstance(info.value, NotFound)
        assert "SignatureDoesNotMatch" in msg and "credentials" in msg and f"s3://{BUCKET}/auth/" in msg
        assert wrong_secret not in msg and seaweed.secret_key not in msg
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "NO-SUCH-KEY")
    with pytest.raises(StorageError, match="InvalidAccessKeyId"):
        fast_storage().read_bytes(f"s3://{BUCKET}/auth/x")


def test_s3_anonymous_is_denied(seaweed: SeaweedS3) -> None:
    st = fast_storage(s3_endpoint_url=seaweed.endpoint_url, s3_anonymous=True)
    with pytest.raises(StorageError, match="AccessDenied"):
        st.read_bytes(f"s3://{BUCKET}/w/small.bin")


def test_s3_manifest_with_base(s3st: Storage) -> None:
    s3st.write_atomic(f"s3://{BUCKET}/crawl/{RELS[0]}", b"warc-a")
    s3st.write_atomic(f"s3://{BUCKET}/crawl/warc.paths", gzip.compress("\n".join(LINES).encode()))
    got = list(iter_manifest(f"s3://{BUCKET}/crawl/warc.paths", f"s3://{BUCKET}/crawl/", s3st))
    assert got == [f"s3://{BUCKET}/crawl/{r}" for r in RELS]
    assert s3st.read_bytes(got[0]) == b"warc-a"
    # without a base, lines resolve next to the manifest
    assert list(iter_manifest(f"s3://{BUCKET}/crawl/warc.paths", None, s3st)) == got


def test_s3_storage_pickles_after_use(s3st: Storage) -> None:
    s3st.write_atomic(f"s3://{BUCKET}/p/x", b"pickled")
    clone = pickle.loads(pickle.dumps(s3st))
    assert clone.read_bytes(f"s3://{BUCKET}/p/x") == b"pickled"


# ----------------------------------------------------------------------------- HTTP


@pytest.fixture
def www(tmp_path: Path) -> Path:
    root = tmp_path / "www"
    (root / "crawl").mkdir(parents=True)
    (root / "crawl" / "blob.bin").write_bytes(os.urandom(300_000))
    return root


@pytest.mark.integration  # a real local HTTP server
def test_http_read_size_exists_not_found(www: Path) -> None:
    with LocalHTTPServer(www) as server:
        st = fast_storage()
        url = server.url + "crawl/blob.bin"
        assert server.url.endswith("/")
        assert st.read_bytes(url) == (www / "crawl" / "blob.bin").read_bytes()
        assert st.size(url) == 300_000 and st.exists(url)
        with pytest.raises(NotFound, match="missing.bin"):
            st.read_bytes(server.url + "crawl/missing.bin")
        with pytest.raises(NotFound):
            st.size(server.url + "crawl/missing.bin")
        assert not st.exists(server.url + "crawl/missing.bin")
        assert st.stats["retries"] == 0
        assert server.requests["/crawl/missing.bin"] == 3  # NotFound is never retried


@pytest.mark.integration  # a real local HTTP server
def test_http_retries_503(www: Path) -> None:
    with LocalHTTPServer(www, fail_first_n=3) as server:
        st = fast_storage(max_attempts=6)
        assert st.read_bytes(server.url + "crawl/blob.bin") == (www / "crawl" / "blob.bin").read_bytes()
        assert st.stats["retries"] == 3
        assert server.requests["/crawl/blob.bin"] == 4
    with LocalHTTPServer(www, fail_first_n=10) as server:
        st = fast_storage(max_attempts=3)
        with pytest.raises(StorageError, match=r"gave up after 3 attempts: HTTP 503") as info:
            st.read_bytes(server.url + "crawl/blob.bin")
        assert not isinstance(info.value, NotFound)
        assert st.stats["retries"] == 2 and server.requests["/crawl/blob.bin"] == 3


@pytest.mark.integration  # a real local HTTP server
def test_http_resumes_after_connection_cut(www: Path) -> None:
    with LocalHTTPServer(www, reset_after_bytes=100_000) as server:
        st = fast_storage()
        assert st.read_bytes(server.url + "crawl/blob.bin") == (www / "crawl" / "blob.bin").read_bytes()
        assert st.stats["retries"] == 1
        assert st.stats["bytes_read"] == 300_000
        assert server.ranges["/crawl/blob.bin"] == [None, "bytes=100000-"]


@pytest.mark.integration  # a real local HTTP server
def test_http_resume_refuses_a_changed_object(www: Path) -> None:
    blob = www / "crawl" / "blob.bin"
    with LocalHTTPServer(www, reset_after_bytes=100_000) as server:
        with fast_storage().open_read(server.url + "crawl/blob.bin") as f:
            assert len(f.read(1000)) == 1000
            blob.write_bytes(os.urandom(300_001))  # replaced while we read: new size and mtime
            with pytest.raises(StorageError, match="changed while it was being read") as info:
                f.read()
        assert not isinstance(info.value, NotFound)


def _warc(n: int) -> bytes:
    """A gzipped (one member per record) WARC of ``n`` response records with incompressible bodies."""
    out = io.BytesIO()
    for i in range(n):
        http_block = (
            b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<html>" + os.urandom(2000).hex().encode()
        )
        head = (
            "WARC/1.0\r\nWARC-Type: response\r\n"
            f"WARC-Target-URI: http://example.com/{i}\r\n"
            f"WARC-Record-ID: <urn:uuid:00000000-0000-0000-0000-{i:012d}>\r\n"
            "WARC-Date: 2025-08-02T22:09:07Z\r\n"
            "Content-Type: application/http; msgtype=response\r\n"
            f"Content-Length: {len(http_block)}\r\n\r\n"
        ).encode()
        out.write(gzip.compress(head + http_block + b"\r\n\r\n"))
    return out.getvalue()


@pytest.mark.integration  # a real local HTTP server
def test_fastwarc_reads_a_resumed_http_stream(www: Path) -> None:
    data = _warc(40)
    (www / "crawl" / "x.warc.gz").write_bytes(data)
    with LocalHTTPServer(www, reset_after_bytes=len(data) // 3) as server:
        st = fast_storage()
        with st.open_read(server.url + "crawl/x.warc.gz") as f:
            uris = [
                rec.headers["WARC-Target-URI"]
                for rec in ArchiveIterator(f, record_types=WarcRecordType.response)
            ]
        assert uris == [f"http://example.com/{i}" for i in range(40)]
        assert st.stats["retries"] == 1 and st.stats["bytes_read"] == len(data)


@pytest.mark.integration  # a real local HTTP server
def test_http_manifest_relative_to_manifest_url(www: Path) -> None:
    write_lines(www / "crawl" / "warc.paths.gz", LINES, gz=True)
    with LocalHTTPServer(www, fail_first_n=1) as server:
        got = list(iter_manifest(server.url + "crawl/warc.paths.gz", None, fast_storage()))
        assert got == [f"{server.url}crawl/{r}" for r in RELS]


def test_remove_partial_writes_local(tmp_path: Path) -> None:
    st = Storage()
    st.write_atomic(str(tmp_path / "a" / "keep.bin"), b"x")
    (tmp_path / "a" / ".tmp-keep.bin.123").write_bytes(b"half")
    (tmp_path / "a" / "b").mkdir()
    (tmp_path / "a" / "b" / ".tmp-x.1").write_bytes(b"half")
    assert st.remove_partial_writes(str(tmp_path / "a")) == 2
    assert sorted(p.name for p in (tmp_path / "a").rglob("*") if p.is_file()) == ["keep.bin"]


def test_remove_partial_writes_s3(seaweed: SeaweedS3, s3st: Storage) -> None:
    client = seaweed.client()
    up = client.create_multipart_upload(Bucket=BUCKET, Key="partial/shard.bin")
    client.upload_part(Bucket=BUCKET, Key="partial/shard.bin", UploadId=up["UploadId"], PartNumber=1,
                       Body=b"x" * (5 * MiB))
    assert s3st.remove_partial_writes(f"s3://{BUCKET}/partial") == 1
    assert not client.list_multipart_uploads(Bucket=BUCKET, Prefix="partial/").get("Uploads")
    assert not s3st.exists(f"s3://{BUCKET}/partial/shard.bin")
