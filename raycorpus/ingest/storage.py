"""Storage abstraction over local paths, ``file://``, ``s3://`` and ``http(s)://`` URLs.

Core layer: never imports Ray. Reads are streaming and resumable (a transient failure
mid-stream reopens the object with a Range request from the current offset); writes are
atomic (readers never observe a partial object). Credentials are never part of the
configuration, logged or put into error messages: S3 uses the boto3 default chain.
"""

from __future__ import annotations

import contextlib
import functools
import http.client
import io
import os
import random
import re
import shutil
import socket
import ssl
import stat
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, BinaryIO, NamedTuple, TypeVar

import botocore.exceptions as bexc  # light (~10 ms); boto3 itself is imported when an S3 client is made
from botocore import UNSIGNED
from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "NotFound",
    "Storage",
    "StorageConfig",
    "StorageError",
    "is_remote",
    "is_transient",
    "join_url",
]

T = TypeVar("T")

_SCHEME_RE = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://")
_READ_BUFFER_BYTES = 256 * 1024
_COPY_CHUNK_BYTES = 8 * 2**20
_USER_AGENT = "raycorpus-storage/0.1"
_MAX_PARTS = 10_000  # S3's limit on the parts of one multipart upload
_MAX_DELETE_KEYS = 1000  # S3's limit on the keys of one DeleteObjects request

#: HTTP statuses worth retrying (timeouts, throttling, server-side failures).
TRANSIENT_HTTP_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})
#: S3 error codes worth retrying regardless of the HTTP status they came with.
TRANSIENT_S3_CODES = frozenset(
    {
        "SlowDown",
        "RequestTimeout",
        "RequestTimeoutException",
        "InternalError",
        "ServiceUnavailable",
        "Throttling",
        "ThrottlingException",
        "RequestLimitExceeded",
        "RequestThrottled",
        "OperationAborted",
    }
)
#: Errors that mean "slow down": retried after a longer backoff (throttle_backoff_seconds).
THROTTLE_S3_CODES = frozenset(
    {"SlowDown", "Throttling", "ThrottlingException", "RequestLimitExceeded", "RequestThrottled"}
)
_THROTTLE_HTTP_STATUS = frozenset({429, 503})
_NOT_FOUND_S3_CODES = frozenset({"NoSuchKey", "NoSuchBucket", "NotFound", "404"})
_AUTH_S3_CODES = frozenset(
    {"AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken", "InvalidToken"}
)


class StorageConfig(BaseModel):
    """Connection, retry and transfer settings (no credentials: those come from the environment)."""

    model_config = ConfigDict(extra="forbid")

    s3_endpoint_url: str | None = Field(
        None, description="S3-compatible endpoint (MinIO, SeaweedFS, ...); default: AWS_ENDPOINT_URL, else AWS")
    s3_region: str | None = Field(None, description="S3 region (default: boto3's configuration)")
    s3_anonymous: bool = Field(False, description="unsigned S3 requests (public buckets), no credentials")
    max_attempts: int = Field(
        6, ge=1, description="tries of one request, or of one stretch of a read, before the storage error is "
        "raised")
    backoff_seconds: float = Field(
        0.5, gt=0, description="after an error other than throttling a retry waits 0.5-1 x this, doubling per "
        "failure")
    throttle_backoff_seconds: float = Field(
        1.0, gt=0, description="after SlowDown / 503 / 429 a retry waits 1-2 x this, doubling per failure")
    backoff_max_seconds: float = Field(20.0, gt=0, description="cap of every backoff")
    timeout_seconds: float = Field(60.0, gt=0, description="connect and read timeout of each request")
    max_concurrency: int = Field(
        8, ge=1, description="requests in flight at once per process (multipart parts included)")
    multipart_threshold_bytes: int = Field(
        64 * 2**20, ge=5 * 2**20, description="uploads of this size or more go as multipart uploads, each part "
        "retried on its own")


class StorageError(Exception):
    """A storage operation failed; the message names the (redacted) URL."""


class NotFound(StorageError, FileNotFoundError):
    """The object, bucket or local file does not exist (never retried)."""


# ----------------------------------------------------------------------------- URLs


def _scheme(url: str) -> str:
    m = _SCHEME_RE.match(url)
    return m.group(1).lower() if m else ""


def is_remote(url: str) -> bool:
    """True for ``s3://`` and ``http(s)://`` URLs, False for local paths and ``file://``."""
    return _scheme(url) in ("s3", "http", "https")


def join_url(base: str, rel: str) -> str:
    """Join a directory/prefix (local path, ``s3://b/p``, ``https://h/p``) and a relative path with '/'."""
    if not base:
        return rel
    return base.rstrip("/") + "/" + rel.lstrip("/")


def _redact(url: str) -> str:
    """Drop userinfo and query strings (presigned credentials) from a URL for messages."""
    if not _scheme(url):
        return url
    parts = urllib.parse.urlsplit(url)
    netloc = parts.netloc.rpartition("@")[2]
    return urllib.parse.urlunsplit(
        (parts.scheme, netloc, parts.path, "<redacted>" if parts.query else "", "")
    )


def _split_s3(url: str) -> tuple[str, str]:
    bucket, _, key = url[len("s3://") :].partition("/")
    if not bucket:
        raise StorageError(f"invalid S3 URL (no bucket): {_redact(url)}")
    return bucket, key


def _local_path(url: str) -> str:
    if not url.startswith("file://"):
        return url
    netloc, _, path = url[len("file://") :].partition("/")
    if netloc not in ("", "localhost"):
        raise StorageError(f"file URL with a remote host is not supported: {url}")
    return "/" + path


# ------------------------------------------------------------------- error handling


def is_transient(exc: BaseException) -> bool:
    """Whether ``exc`` is worth retrying: connection resets, truncated bodies, timeouts, 5xx/429/SlowDown.

    Everything else (404, 403/auth failures, bad requests, local file errors, TLS
    certificate errors, unknown hosts) is permanent.
    """
    if isinstance(exc, bexc.ClientError):
        err = exc.response.get("Error", {})
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        return err.get("Code") in TRANSIENT_S3_CODES or status in TRANSIENT_HTTP_STATUS
    if isinstance(exc, urllib.error.HTTPError):
        return exc.code in TRANSIENT_HTTP_STATUS
    if isinstance(exc, urllib.error.URLError):
        return isinstance(exc.reason, BaseException) and is_transient(exc.reason)
    if isinstance(exc, bexc.SSLError):
        return False
    if isinstance(exc, bexc.HTTPClientError | bexc.ConnectionError | bexc.IncompleteReadError):
        return True
    if isinstance(exc, http.client.IncompleteRead | http.client.BadStatusLine):
        return True
    if isinstance(exc, ssl.SSLEOFError):  # TLS connection cut mid-stream
        return True
    if isinstance(exc, socket.gaierror):
        return exc.errno == socket.EAI_AGAIN
    return isinstance(exc, ConnectionError | TimeoutError)


def is_throttle(exc: BaseException) -> bool:
    """Whether ``exc`` asks the client to slow down (S3 SlowDown and friends, HTTP 503 / 429)."""
    if isinstance(exc, bexc.ClientError):
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        return exc.response.get("Error", {}).get("Code") in THROTTLE_S3_CODES or status in _THROTTLE_HTTP_STATUS
    if isinstance(exc, urllib.error.HTTPError):
        return exc.code in _THROTTLE_HTTP_STATUS
    return False


def backoff_delay(cfg: StorageConfig, failures: int, throttled: bool) -> float:
    """Seconds to wait before retry number ``failures`` (1, 2, ...): jittered, exponential, capped.

    Other errors wait uniform(d/2, d) with d = backoff_seconds * 2**(failures-1); throttling waits
    uniform(t, 2t) with t = throttle_backoff_seconds * 2**(failures-1), so a store that says
    SlowDown gets at least a second (by default) of quiet. Both are capped at backoff_max_seconds.
    """
    cap = cfg.backoff_max_seconds
    if throttled:
        low = min(cap, cfg.throttle_backoff_seconds * 2 ** (failures - 1))
        return random.uniform(low, min(cap, 2 * low))
    high = min(cap, cfg.backoff_seconds * 2 ** (failures - 1))
    return random.uniform(high / 2, high)


def _is_not_found(exc: BaseException) -> bool:
    if isinstance(exc, bexc.ClientError):
        return exc.response.get("Error", {}).get("Code") in _NOT_FOUND_S3_CODES
    if isinstance(exc, urllib.error.HTTPError):
        return exc.code in (404, 410)
    return isinstance(exc, FileNotFoundError)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, bexc.ClientError):
        err = exc.response.get("Error", {})
        code = err.get("Code", "?")
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", "?")
        text = f"{code} (HTTP {status}): {err.get('Message', '')}".rstrip(": ")
        if code in _AUTH_S3_CODES:
            text += " -- check the S3 credentials (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY) and permissions"
        elif code == "PreconditionFailed":
            text += " -- the object changed while it was being read"
        return text
    if isinstance(exc, urllib.error.HTTPError):
        text = f"HTTP {exc.code} {exc.reason}"
        return text + " -- the object changed while it was being read" if exc.code == 412 else text
    if isinstance(exc, bexc.NoCredentialsError):
        return "no S3 credentials found (set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, or s3_anonymous=True)"
    return f"{type(exc).__name__}: {exc}"


def _to_storage_error(op: str, url: str, exc: BaseException) -> StorageError:
    if isinstance(exc, StorageError):
        return exc
    if _is_not_found(exc):
        return NotFound(f"{op} {_redact(url)}: not found ({_describe(exc)})")
    return StorageError(f"{op} {_redact(url)}: {_describe(exc)}")


# --------------------------------------------------------------------- reading


class _Opened(NamedTuple):
    stream: Any  # has read(n) and close()
    total: int | None  # full object size, if known
    etag: str | None  # strong validator used to pin resumed reads to the same object version


class _ResumableReader(io.RawIOBase):
    """Raw stream that reopens ``opener(offset, etag)`` after transient failures."""

    def __init__(self, storage: Storage, url: str, opener: Callable[[int, str | None], _Opened], offset: int = 0):
        super().__init__()
        self._storage = storage
        self._url = url
        self._opener = opener
        self._pos = offset
        self._total: int | None = None
        self._etag: str | None = None
        self._stream: Any = None
        self._storage._retrying("open", url, self._reopen, self._storage.cfg.max_attempts, self._drop)

    def readable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def _reopen(self) -> None:
        opened = self._opener(self._pos, self._etag)
        self._stream = opened.stream
        if self._total is None:
            self._total, self._etag = opened.total, opened.etag

    def _drop(self) -> None:
        if self._stream is not None:
            stream, self._stream = self._stream, None
            with contextlib.suppress(Exception):  # a broken connection may fail to close
                stream.close()

    def _read_some(self, n: int) -> bytes:
        if self._stream is None:
            self._reopen()
        data = self._stream.read(n)
        if not data and self._total is not None and self._pos < self._total:
            # http.client reports a connection closed before Content-Length as a plain EOF.
            raise http.client.IncompleteRead(b"", self._total - self._pos)
        return data

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        if not view.nbytes or (self._total is not None and self._pos >= self._total):
            return 0
        data = self._storage._retrying(
            "read",
            self._url,
            lambda: self._read_some(view.nbytes),
            self._storage.cfg.max_attempts,
            self._drop,
        )
        n = len(data)
        view[:n] = data
        self._pos += n
        self._storage._bump("bytes_read", n)
        return n

    def close(self) -> None:
        self._drop()
        super().close()


# --------------------------------------------------------------------- Storage


class Storage:
    """Read/write/list objects by URL; picklable (the boto3 client is recreated lazily)."""

    def __init__(self, cfg: StorageConfig | None = None):
        self.cfg = cfg or StorageConfig()
        self.stats: dict[str, int] = {"retries": 0, "throttled": 0, "bytes_read": 0, "bytes_written": 0}
        self._init_runtime()

    def _init_runtime(self) -> None:
        self._lock = threading.Lock()
        self._client: Any = None
        # One slot per request in flight (S3 or HTTP; a read holds one until its response headers arrive).
        self._slots = threading.BoundedSemaphore(self.cfg.max_concurrency)

    def __getstate__(self) -> dict[str, Any]:
        return {"cfg": self.cfg, "stats": dict(self.stats)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.cfg = state["cfg"]
        self.stats = state["stats"]
        self._init_runtime()

    # ------------------------------------------------------------ internals

    def _bump(self, key: str, n: int = 1) -> None:
        with self._lock:
            self.stats[key] = self.stats.get(key, 0) + n

    def _retrying(
        self,
        op: str,
        url: str,
        fn: Callable[[], T],
        attempts: int,
        on_failure: Callable[[], None] | None = None,
    ) -> T:
        """Run ``fn`` with up to ``attempts`` consecutive tries on transient errors (jittered backoff)."""
        failures = 0
        while True:
            try:
                return fn()
            except Exception as exc:
                if on_failure is not None:
                    on_failure()
                if not is_transient(exc):
                    raise _to_storage_error(op, url, exc) from exc
                failures += 1
                if failures >= attempts:
                    if attempts == 1:
                        raise _to_storage_error(op, url, exc) from exc
                    raise StorageError(
                        f"{op} {_redact(url)}: gave up after {failures} attempts: {_describe(exc)}"
                    ) from exc
                self._bump("retries")
                throttled = is_throttle(exc)
                if throttled:
                    self._bump("throttled")
                time.sleep(backoff_delay(self.cfg, failures, throttled))

    def _in_slot(self, fn: Callable[[], T]) -> T:
        """Run one request while holding one of the ``max_concurrency`` slots."""
        with self._slots:
            return fn()

    def _s3_call(self, op: str, url: str, fn: Callable[[], T]) -> T:
        """One S3 request, in a slot, retried here (botocore's own retries are off) with jittered backoff."""
        return self._retrying(op, url, lambda: self._in_slot(fn), self.cfg.max_attempts)

    def _s3(self) -> Any:
        with self._lock:
            if self._client is None:
                cfg = self.cfg
                extra: dict[str, Any] = {}
                if cfg.s3_anonymous:
                    extra["signature_version"] = UNSIGNED
                if cfg.s3_endpoint_url:
                    extra["s3"] = {"addressing_style": "path"}
                import boto3  # here, not at import: ~0.1-0.35 s that runs without S3 (and every actor) skip
                from botocore.config import Config

                config = Config(
                    # Retries are ours (_retrying): one backoff policy for S3 and HTTP, SlowDown-aware,
                    # and no retry quota that runs dry under a long spell of throttling.
                    retries={"total_max_attempts": 1, "mode": "standard"},
                    connect_timeout=cfg.timeout_seconds,
                    read_timeout=cfg.timeout_seconds,
                    max_pool_connections=max(10, cfg.max_concurrency),
                    # Flexible checksums by default break several S3-compatible stores.
                    request_checksum_calculation="when_required",
                    response_checksum_validation="when_required",
                    **extra,
                )
                client = boto3.session.Session().client(
                    "s3", endpoint_url=cfg.s3_endpoint_url, region_name=cfg.s3_region, config=config
                )
                self._client = client
            return self._client

    def _upload_s3(self, url: str, size: int, read_range: Callable[[int, int], bytes]) -> None:
        """Upload ``size`` bytes (``read_range(offset, n)``) as one object: a single PUT below the
        multipart threshold, else a multipart upload whose parts are retried one by one and sent
        ``max_concurrency`` at a time. The object appears only when the upload completes."""
        bucket, key = _split_s3(url)
        client = self._s3()
        if size < self.cfg.multipart_threshold_bytes:
            self._s3_call("write", url, lambda: client.put_object(Bucket=bucket, Key=key, Body=read_range(0, size)))
            return
        part_size = max(self.cfg.multipart_threshold_bytes, -(-size // _MAX_PARTS))
        n_parts = -(-size // part_size)
        upload_id = self._s3_call(
            "write", url, lambda: client.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
        )

        def upload_part(number: int) -> dict[str, Any]:
            offset = (number - 1) * part_size
            body = read_range(offset, min(part_size, size - offset))
            resp = self._s3_call(
                f"write (part {number} of {n_parts})",
                url,
                lambda: client.upload_part(Bucket=bucket, Key=key, UploadId=upload_id, PartNumber=number, Body=body),
            )
            return {"ETag": resp["ETag"], "PartNumber": number}

        try:
            with ThreadPoolExecutor(min(self.cfg.max_concurrency, n_parts), "raycorpus-upload") as pool:
                parts = list(pool.map(upload_part, range(1, n_parts + 1)))
            self._s3_call(
                "write",
                url,
                lambda: client.complete_multipart_upload(
                    Bucket=bucket, Key=key, UploadId=upload_id, MultipartUpload={"Parts": parts}
                ),
            )
        except BaseException:
            with contextlib.suppress(Exception):  # best effort; remove_partial_writes catches the rest
                client.abort_multipart_upload(Bucket=bucket, Key=key, UploadId=upload_id)
            raise

    def _kind(self, url: str) -> str:
        scheme = _scheme(url)
        if scheme in ("", "file"):
            return "local"
        if scheme == "s3":
            return "s3"
        if scheme in ("http", "https"):
            return "http"
        raise StorageError(f"unsupported URL scheme {scheme!r}: {_redact(url)}")

    def _read_only(self, op: str, url: str) -> StorageError:
        return StorageError(f"{op} {_redact(url)}: http(s) storage is read-only")

    # -------------------------------------------------------------- openers

    def _open_local(self, path: str, offset: int, _etag: str | None) -> _Opened:
        f = open(path, "rb")  # noqa: SIM115 - owned and closed by the reader
        f.seek(offset)
        return _Opened(f, os.fstat(f.fileno()).st_size, None)

    def _open_s3(self, url: str, offset: int, etag: str | None) -> _Opened:
        bucket, key = _split_s3(url)
        kwargs: dict[str, Any] = {"Bucket": bucket, "Key": key}
        if offset:
            kwargs["Range"] = f"bytes={offset}-"
        if etag:
            kwargs["IfMatch"] = etag
        resp = self._in_slot(lambda: self._s3().get_object(**kwargs))
        return _Opened(resp["Body"], offset + resp["ContentLength"], resp.get("ETag"))

    def _http_request(self, url: str, method: str, headers: dict[str, str]) -> http.client.HTTPResponse:
        req = urllib.request.Request(
            url, method=method, headers={"User-Agent": _USER_AGENT, "Accept-Encoding": "identity", **headers}
        )
        try:
            return self._in_slot(lambda: urllib.request.urlopen(req, timeout=self.cfg.timeout_seconds))
        except urllib.error.HTTPError as exc:
            exc.close()  # classified by status only; release the connection
            raise

    def _open_http(self, url: str, offset: int, etag: str | None) -> _Opened:
        headers = {}
        if offset:
            headers["Range"] = f"bytes={offset}-"
        if etag:
            headers["If-Match"] = etag
        resp = self._http_request(url, "GET", headers)
        total: int | None
        if offset:
            content_range = resp.headers.get("Content-Range", "")
            m = re.fullmatch(r"bytes (\d+)-\d+/(\d+|\*)", content_range.strip())
            if resp.status != 206 or not m or int(m.group(1)) != offset:
                resp.close()
                raise StorageError(
                    f"read {_redact(url)}: server does not honour Range requests "
                    f"(status {resp.status}, Content-Range {content_range!r}); cannot resume at {offset}"
                )
            total = int(m.group(2)) if m.group(2) != "*" else None
        else:
            length = resp.headers.get("Content-Length")
            total = int(length) if length is not None else None
        new_etag = resp.headers.get("ETag")
        return _Opened(resp, total, new_etag if new_etag and not new_etag.startswith("W/") else None)

    # ------------------------------------------------------------ public API

    def open_read(self, url: str, offset: int = 0) -> io.BufferedReader:
        """Open ``url`` for streaming raw bytes from ``offset`` on (``tell()`` counts from the object's start);
        transient failures are resumed with Range requests."""
        kind = self._kind(url)
        if kind == "local":
            opener = functools.partial(self._open_local, _local_path(url))
        elif kind == "s3":
            opener = functools.partial(self._open_s3, url)
        else:
            opener = functools.partial(self._open_http, url)
        return io.BufferedReader(_ResumableReader(self, url, opener, offset), buffer_size=_READ_BUFFER_BYTES)

    def read_bytes(self, url: str) -> bytes:
        """Whole object as bytes."""
        with self.open_read(url) as f:
            return f.read()

    def write_atomic(self, url: str, data: bytes | memoryview) -> None:
        """Write ``data`` so that readers see either the old object, nothing, or all of ``data``.
        ``data`` may be a memoryview (of an array's bytes, say): written without a copy to local files."""
        data = memoryview(data).cast("B")
        kind = self._kind(url)
        if kind == "local":
            self._write_local(url, lambda f: f.write(data))
        elif kind == "s3":
            self._upload_s3(url, data.nbytes, lambda offset, n: data[offset : offset + n].tobytes())
        else:
            raise self._read_only("write", url)
        self._bump("bytes_written", data.nbytes)

    def write_file_atomic(self, url: str, local_path: str) -> None:
        """Atomically copy the local file ``local_path`` to ``url`` (streamed, multipart on S3)."""
        kind = self._kind(url)
        if kind == "local":

            def copy(dst: BinaryIO) -> None:
                with open(local_path, "rb") as src:
                    shutil.copyfileobj(src, dst, _COPY_CHUNK_BYTES)

            written = self._write_local(url, copy)
        elif kind == "s3":

            def read_range(offset: int, n: int) -> bytes:
                with open(local_path, "rb") as src:
                    src.seek(offset)
                    return src.read(n)

            written = os.path.getsize(local_path)
            self._upload_s3(url, written, read_range)
        else:
            raise self._read_only("write", url)
        self._bump("bytes_written", written)

    def create_new(self, url: str, data: bytes) -> bool | None:
        """Write ``data`` to ``url`` only if nothing is there, in one step (local files: a hard link of a complete
        temp file, which fails if the name exists). True: written; False: something was there; None: not offered
        here (S3, HTTP, a file system without hard links), so the caller falls back to ``write_atomic``."""
        if self._kind(url) != "local":
            return None
        directory, name = os.path.split(os.path.abspath(_local_path(url)))
        staged = os.path.join(directory, f".tmp-{name}.{uuid.uuid4().hex}")
        self._write_local(staged, lambda f: f.write(data))
        try:
            os.link(staged, os.path.join(directory, name))
        except FileExistsError:
            return False
        except OSError:
            return None
        finally:
            with contextlib.suppress(OSError):
                os.unlink(staged)
        self._bump("bytes_written", len(data))
        return True

    @staticmethod
    def _write_local(url: str, write: Callable[[BinaryIO], object]) -> int:
        """Temp file in the target's directory, fsync, rename over the target, fsync the directory."""
        path = _local_path(url)
        try:
            directory = os.path.dirname(os.path.abspath(path))
            os.makedirs(directory, exist_ok=True)
            tmp = os.path.join(directory, f".tmp-{os.path.basename(path)}.{uuid.uuid4().hex}")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            try:
                with os.fdopen(fd, "wb") as f:
                    write(f)
                    f.flush()
                    os.fsync(f.fileno())
                    written = f.tell()
                os.replace(tmp, path)
            except BaseException:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp)
                raise
            dir_fd = os.open(directory, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
        except OSError as exc:
            raise _to_storage_error("write", url, exc) from exc
        return written

    def exists(self, url: str) -> bool:
        """Whether the object/file exists."""
        try:
            self.size(url)
        except NotFound:
            return False
        return True

    def size(self, url: str) -> int:
        """Object size in bytes (``NotFound`` if missing)."""
        kind = self._kind(url)
        if kind == "local":
            try:
                st = os.stat(_local_path(url))
            except OSError as exc:
                raise _to_storage_error("size", url, exc) from exc
            if stat.S_ISDIR(st.st_mode):
                raise NotFound(f"size {url}: is a directory, not a file")
            return st.st_size
        if kind == "s3":
            bucket, key = _split_s3(url)
            head = self._s3_call("size", url, lambda: self._s3().head_object(Bucket=bucket, Key=key))
            return int(head["ContentLength"])

        def head_http() -> int:
            with self._http_request(url, "HEAD", {}) as resp:
                length = resp.headers.get("Content-Length")
            if length is None:
                raise StorageError(f"size {_redact(url)}: server sent no Content-Length")
            return int(length)

        return self._retrying("size", url, head_http, self.cfg.max_attempts)

    def list(self, prefix_url: str) -> list[str]:
        """All objects under a directory prefix (recursive, sorted, same URL form as the input)."""
        return [url for url, _ in self.list_sizes(prefix_url)]

    def list_sizes(self, prefix_url: str) -> list[tuple[str, int]]:
        """(url, bytes) of every object under a directory prefix, as :meth:`list` (one listing, no request per
        object)."""
        kind = self._kind(prefix_url)
        if kind == "local":
            root = _local_path(prefix_url)
            found = []
            for dirpath, _dirs, files in os.walk(root):
                rel_dir = os.path.relpath(dirpath, root)
                for name in files:
                    if name.startswith(".tmp-"):
                        continue
                    with contextlib.suppress(FileNotFoundError):  # removed while we looked
                        size = os.stat(os.path.join(dirpath, name)).st_size
                        found.append((join_url(prefix_url, name if rel_dir == "." else f"{rel_dir}/{name}"), size))
            return sorted(found)
        if kind == "s3":
            bucket, key = _split_s3(prefix_url)
            prefix = key.rstrip("/") + "/" if key.strip("/") else ""

            def list_keys() -> list[tuple[str, int]]:
                pages = self._s3().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
                return [(obj["Key"], int(obj.get("Size", 0))) for page in pages for obj in page.get("Contents", [])]

            keys = self._s3_call("list", prefix_url, list_keys)
            return sorted((f"s3://{bucket}/{k}", n) for k, n in keys if not k.endswith("/"))
        raise StorageError(f"list {_redact(prefix_url)}: http(s) storage cannot be listed")

    def remove_partial_writes(self, prefix_url: str) -> int:
        """Remove what interrupted atomic writes left under a prefix: local ``.tmp-*`` files,
        unfinished S3 multipart uploads. Only for prefixes this process alone writes to."""
        kind = self._kind(prefix_url)
        removed = 0
        if kind == "local":
            for dirpath, _dirs, files in os.walk(_local_path(prefix_url)):
                for name in files:
                    if name.startswith(".tmp-"):
                        os.unlink(os.path.join(dirpath, name))
                        removed += 1
        elif kind == "s3":
            bucket, key = _split_s3(prefix_url)
            prefix = key.rstrip("/") + "/" if key.strip("/") else ""

            def abort_all() -> int:
                n = 0
                pages = self._s3().get_paginator("list_multipart_uploads").paginate(Bucket=bucket, Prefix=prefix)
                for page in pages:
                    for up in page.get("Uploads", []):
                        self._s3().abort_multipart_upload(Bucket=bucket, Key=up["Key"], UploadId=up["UploadId"])
                        n += 1
                return n

            removed = self._s3_call("abort multipart uploads", prefix_url, abort_all)
        return removed

    def delete(self, url: str) -> None:
        """Delete the object/file; a missing one is fine."""
        kind = self._kind(url)
        if kind == "local":
            try:
                os.remove(_local_path(url))
            except FileNotFoundError:
                return
            except OSError as exc:
                raise _to_storage_error("delete", url, exc) from exc
        elif kind == "s3":
            bucket, key = _split_s3(url)
            with contextlib.suppress(NotFound):
                self._s3_call("delete", url, lambda: self._s3().delete_object(Bucket=bucket, Key=key))
        else:
            raise self._read_only("delete", url)

    def delete_many(self, urls: Iterable[str]) -> None:
        """Delete objects/files (a missing one is fine). On S3 one request per 1,000 keys of a bucket
        (DeleteObjects) instead of one per key: at 10,000 workers a checkpoint releases the staged files of
        thousands of WARCs, which one by one would take longer than the checkpoint interval."""
        keys: dict[str, list[str]] = {}
        for url in urls:
            if self._kind(url) == "s3":
                bucket, key = _split_s3(url)
                keys.setdefault(bucket, []).append(key)
            else:
                self.delete(url)
        for bucket, names in keys.items():
            for i in range(0, len(names), _MAX_DELETE_KEYS):
                with contextlib.suppress(NotFound):  # (no bucket: nothing to delete, as for :meth:`delete`)
                    self._s3_delete_batch(bucket, names[i : i + _MAX_DELETE_KEYS])

    def _s3_delete_batch(self, bucket: str, names: list[str]) -> None:
        request = {"Objects": [{"Key": k} for k in names], "Quiet": True}
        url = f"s3://{bucket}/{names[0]}"
        answer = self._s3_call("delete", url, lambda: self._s3().delete_objects(Bucket=bucket, Delete=request))
        failed = [e for e in answer.get("Errors", []) if e.get("Code") != "NoSuchKey"]
        if failed:
            e = failed[0]
            where = _redact(f"s3://{bucket}/{e.get('Key', '')}")
            raise StorageError(f"delete {where}: {e.get('Code')}: {e.get('Message', '')} ({len(failed)} of the "
                               f"{len(names)} keys of the request not deleted)")
