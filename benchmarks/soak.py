"""A randomized fault soak: R rounds of one build each, every round with one fault drawn from a seed.

Set-up (real components, all on this machine): a 3-node loopback Ray cluster (head 127.0.0.2, a worker
node 127.0.0.3, and 127.0.0.4, the one node with the ``lsh`` resource, where both LSH shards live); a
SeaweedFS S3 output behind a fault-injecting proxy (idle unless a round turns it on); a small tmpfs for
the local-disk rounds (root only); the WARCs served by a real HTTP server that counts GETs.

Each round (seed = ``--seed`` + round) draws one fault and a moment: once ``at`` WARCs are committed
(read from the ledger), with WARC ``hold`` held at the HTTP server until then, so the fault always
lands mid-run. It then runs ``raycorpus run`` to completion, rerunning the same command after a driver
kill or a resumable exit (3), and compares the shard bytes with an undisturbed build of the same input.

    python benchmarks/soak.py --rounds 30 --seed 1000
    python benchmarks/soak.py --seed 1000 --only-round 7    # replay round 7 (seed 1007) alone
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import hashlib
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run as `python benchmarks/soak.py`: the test helpers live in tests/support
    sys.path.insert(0, str(REPO))

import psutil  # noqa: E402

from raycorpus.cli.common import EXIT_OK, EXIT_STORAGE  # noqa: E402
from raycorpus.ingest.storage import Storage, StorageConfig, join_url  # noqa: E402
from raycorpus.output.ledger import Ledger  # noqa: E402
from raycorpus.output.summary import RunSummary  # noqa: E402
from raycorpus.output.verify import format_checks, verify_output  # noqa: E402
from tests.support.cluster import LocalCluster, RayNode, ray_env  # noqa: E402
from tests.support.corpus import make_config  # noqa: E402
from tests.support.servers import FaultyS3Proxy, LocalHTTPServer, SeaweedS3  # noqa: E402

FAULTS = ("worker_node", "lsh_node", "actor", "driver", "s3_burst", "disk_full")
ACTORS = ("PackerActor", "ShardWriter", "LshShardActor", "WarcWorker")
RAYCORPUS_ACTORS = (*ACTORS, "DocumentWriter")
RESUMABLE = (EXIT_STORAGE, -signal.SIGKILL)  # a storage error, or the driver killed: the same command resumes
MAX_RUNS = 6  # runs of one round before it counts as not finishing
RUN_TIMEOUT = 900.0  # seconds one run may take before the round counts as hung
BUCKET = "soak"
LSH_SHARDS = 2
S3_BURST_MIX = {"slowdown": 0.5, "reset": 0.3, "reset_mid_body": 0.1, "truncate": 0.1}  # shares of a burst's rate
S3_BURST_RATES = (0.3, 0.6, 0.9)  # a request fails with this probability during a burst (retried up to 6 times)
# how long a fault lasts, drawn from (low, high) seconds: a lost node until a new one takes its place, the full disk,
# the S3 burst (long enough, sometimes, to outlast the storage's default retries: ~30-50 s of backoff per request)
WINDOWS = {"worker_node": (2.0, 15.0), "lsh_node": (2.0, 15.0), "disk_full": (2.0, 15.0), "s3_burst": (2.0, 60.0)}
NODE_ROLES = {"worker": ("127.0.0.3", None), "lsh": ("127.0.0.4", {"lsh": LSH_SHARDS})}  # beside the head
DISK_BYTES = 256 * 2**20  # the tmpfs of the local-disk rounds (memory is used only by what is written)


@dataclass(frozen=True)
class Fault:
    """One round's fault: what, when (``at`` WARCs committed), which WARC waits for it, how long it lasts."""

    kind: str
    at: int
    hold: int
    target: str = ""  # the actor class, for kind "actor"
    window: float = 0.0  # seconds the S3 burst or the full disk lasts, or until a lost node is replaced
    rate: float = 0.0  # the share of S3 requests that fail during a burst

    def describe(self) -> str:
        what = {"worker_node": "worker node's raylet SIGKILLed", "lsh_node": "LSH-shard node's raylet SIGKILLed",
                "actor": f"{self.target} actor SIGKILLed", "driver": "driver SIGKILLed, then rerun",
                "s3_burst": "S3 SlowDown / reset burst", "disk_full": "output disk full"}[self.kind]
        if self.kind == "s3_burst":
            what += f" ({self.rate:.0%} of requests)"
        window = f" for {self.window:g} s" if self.kind in WINDOWS else ""
        return f"{what}{window} at {self.at} committed (WARC {self.hold} held)"

    def s3_rates(self) -> dict[str, float]:
        """The fault proxy's rates during this fault's burst (0 for every other kind)."""
        return {k: share * self.rate for k, share in S3_BURST_MIX.items()}


def draw_kind(seed: int) -> str:
    """The fault kind of seed ``seed``: seeds 6b..6b+5 take the six kinds in an order drawn with b, so any run of
    consecutive seeds injects every kind about as often."""
    order = list(FAULTS)
    random.Random(seed // len(FAULTS)).shuffle(order)
    return order[seed % len(FAULTS)]


def draw_fault(seed: int, n_warcs: int) -> Fault:
    """The fault of the round with this seed: a kind, a moment, a held WARC after it, a window."""
    rng = random.Random(seed)
    kind = draw_kind(seed)
    at = rng.randrange(1, n_warcs - 1)
    hold = rng.randrange(at + 1, n_warcs)
    target = rng.choice(ACTORS) if kind == "actor" else ""
    window = round(rng.uniform(*WINDOWS[kind]), 1) if kind in WINDOWS else 0.0
    rate = rng.choice(S3_BURST_RATES) if kind == "s3_burst" else 0.0
    return Fault(kind, at, hold, target, window, rate)


@dataclass
class RoundResult:
    round: int
    seed: int
    fault: Fault
    exits: list[int] = field(default_factory=list)  # every run's exit code, in order
    committed_at_fault: int = -1  # WARCs committed when the fault was injected (-1: never injected)
    effect: str = ""  # what the injection did (a PID killed, S3 requests failed, bytes filled)
    reread: int = 0  # GETs of WARCs beyond the first of each
    seconds: float = 0.0
    problem: str = ""  # why the round did not survive ("" if it did)
    skipped: str = ""  # why the round could not run here

    @property
    def survived(self) -> bool:
        return not self.problem and not self.skipped

    @property
    def resumes(self) -> int:
        return max(0, len(self.exits) - 1)

    def line(self) -> str:
        if self.skipped:
            status = f"SKIPPED ({self.skipped})"
        else:
            status = "ok" if self.survived else f"FAILED: {self.problem}"
        return (f"round {self.round:3d}  seed {self.seed}  {self.fault.describe()}\n"
                f"    injected at {self.committed_at_fault} committed: {self.effect}; runs {len(self.exits)} "
                f"(exits {self.exits}), WARCs read again {self.reread}, {self.seconds:.0f} s: {status}")


@dataclass(frozen=True)
class Input:
    """The crawl: its manifest (WARC names, one a line, in the folder the HTTP server serves) and a tokenizer."""

    manifest: Path
    tokenizer: str

    @property
    def names(self) -> list[str]:
        return self.manifest.read_text().split()


# ----------------------------------------------------------------------------- the cluster


class SoakCluster:
    """Head (1 CPU), worker node (1 CPU) and LSH node (1 CPU, resource ``lsh``); a lost node is replaced
    by a new node on the same address, as a cluster's autoscaler replaces a lost machine."""

    START_ATTEMPTS = 3  # a node that does not register in time (a loaded machine) is started again

    def __init__(self, env: dict[str, str]):
        self.cluster = LocalCluster(head_cpus=1, env=env)
        self.roles: dict[str, RayNode | None] = dict.fromkeys(NODE_ROLES)
        try:
            self.heal()
        except BaseException:
            self.cluster.stop()
            raise

    def nodes(self) -> list[RayNode]:
        return [self.cluster.head, *self.cluster.workers]

    def node(self, role: str) -> RayNode:
        node = self.roles[role]
        assert node is not None, f"no {role} node"
        return node

    def replace(self, role: str) -> None:
        """Stop what is left of the ``role`` node (if any) and start a new one with its address and resources."""
        old = self.roles[role]
        if old is not None:
            old.stop()
            self.cluster.workers.remove(old)
            self.roles[role] = None
        ip, resources = NODE_ROLES[role]
        for attempt in range(1, self.START_ATTEMPTS + 1):
            try:
                self.roles[role] = self.cluster.add_node(num_cpus=1, ip=ip, resources=resources)
                return
            except RuntimeError:
                if attempt == self.START_ATTEMPTS:
                    raise

    def heal(self) -> None:
        """Start every node that is missing or whose raylet is gone (a round's fault may have left one so)."""
        for role, node in self.roles.items():
            try:
                if node is None:
                    raise LookupError(role)
                node.pid_of("raylet")
            except LookupError:
                self.replace(role)

    def actor_pids(self, class_name: str) -> list[int]:
        """PIDs of live ``class_name`` actors on this cluster's nodes (by process title)."""
        pids = []
        for node in self.nodes():
            for p in node.processes():
                with contextlib.suppress(psutil.Error):
                    title = (p.cmdline() or [""])[0].split(" ")[0]
                    if title.split(".")[0] == f"ray::{class_name}":
                        pids.append(p.pid)
        return sorted(pids)

    def wait_idle(self, timeout: float = 300.0) -> None:
        """Until no raycorpus actor lives: a finished or killed run's actors end once Ray notices."""
        deadline = time.monotonic() + timeout
        while any(self.actor_pids(c) for c in RAYCORPUS_ACTORS):
            if time.monotonic() > deadline:
                raise RuntimeError("the previous run's actors did not end")
            time.sleep(0.5)

    def keep_logs(self, folder: Path) -> None:
        """Copy every node's Ray logs into ``folder`` (a failed round's: the nodes' temp dirs go when they stop)."""
        for node in self.nodes():
            with contextlib.suppress(OSError):
                shutil.copytree(Path(node.temp) / "session_latest" / "logs", folder / f"ray-{node.ip}",
                                dirs_exist_ok=True)

    def stop(self) -> None:
        self.cluster.stop()


# ----------------------------------------------------------------------------- the small disk


class SmallDisk:
    """A tmpfs mounted for the local-disk rounds (needs root); ``fill`` takes every free byte, ``free`` gives
    it back."""

    def __init__(self, root: Path):
        self.path = root / "disk"
        self.path.mkdir()
        self.filler = self.path / "filler"
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={DISK_BYTES},mode=0755", "raycorpus-soak",
                            str(self.path)], capture_output=True, text=True, timeout=30)
        self.unavailable = "" if r.returncode == 0 else f"cannot mount a tmpfs: {r.stderr.strip() or r.returncode}"

    def fill(self) -> None:
        """Write a file until the disk has no byte left (ENOSPC)."""
        fd = os.open(self.filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            for size in (2**20, 2**12, 1):
                try:
                    while True:
                        os.write(fd, b"\0" * size)
                except OSError as e:
                    if e.errno != errno.ENOSPC:
                        raise
        finally:
            os.close(fd)

    def free(self) -> None:
        self.filler.unlink(missing_ok=True)

    def unmount(self) -> None:
        if not self.unavailable:
            subprocess.run(["umount", "-l", str(self.path)], capture_output=True, timeout=30)


# ----------------------------------------------------------------------------- helpers


@contextlib.contextmanager
def environ(values: dict[str, str]) -> Iterator[None]:
    """These environment variables while the block runs (this process's storage reads the S3 output)."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def committed(storage: Storage, out: str) -> int:
    """WARCs the output's ledger names so far (0 while it has none or is being compacted under us)."""
    try:
        return Ledger(storage, out).load().next_ordinal
    except Exception:  # a checkpoint file listed, then compacted away: read again next time
        return 0


def shard_digests(storage: Storage, out: str) -> dict[str, str]:
    """sha256 of every file under shards/ and clusters/ (the cluster sizes), by folder and name (local or S3)."""
    return {"/".join(url.rsplit("/", 2)[-2:]): hashlib.sha256(storage.read_bytes(url)).hexdigest()
            for folder in ("shards", "clusters") for url in storage.list(join_url(out, folder))}


def tail(path: Path, chars: int = 2000) -> str:
    try:
        return path.read_text(errors="replace")[-chars:]
    except FileNotFoundError:
        return ""


# ----------------------------------------------------------------------------- the soak


class Soak:
    """The S3 server, the cluster, the small disk and the reference digests, shared by every round."""

    def __init__(self, inp: Input, workdir: Path, log: Callable[[str], None] = print):
        self.inp, self.workdir, self.log = inp, workdir, log
        self._stack = contextlib.ExitStack()
        self._proc: subprocess.Popen | None = None  # the run in progress (stopped if the soak is)
        self.reference: dict[str, str] = {}

    def __enter__(self) -> Soak:
        stack = self._stack
        try:
            self.s3 = stack.enter_context(SeaweedS3())
            self.s3.create_bucket(BUCKET)
            stack.enter_context(environ(self.s3.env()))  # this process reads the output too
            self.storage = Storage(StorageConfig(s3_endpoint_url=self.s3.endpoint_url))
            self.cluster = SoakCluster(ray_env(**self.s3.env()))
            stack.callback(self.cluster.stop)
            self.disk = SmallDisk(self.workdir)
            stack.callback(self.disk.unmount)
            stack.callback(self._stop_run)
            self.reference = self._build_reference()
        except BaseException:
            stack.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def _stop_run(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()

    # -- runs

    def _config(self, path: Path, out: str, base: str, s3_endpoint: str) -> Path:
        cfg = make_config(str(self.inp.manifest), out, self.inp.tokenizer, input={"base": base},
                          storage={"s3_endpoint_url": s3_endpoint, "timeout_seconds": 600},
                          dedup={"shards": LSH_SHARDS, "shard_resources": {"lsh": 1}},
                          ray={"resize_interval_seconds": 2})
        path.write_text(json.dumps(cfg.model_dump(mode="json")))
        return path

    def _start(self, cfg: Path, log: Path) -> subprocess.Popen:
        with open(log, "w") as f:
            self._proc = subprocess.Popen([sys.executable, "-m", "raycorpus.cli", "run", str(cfg)],
                                          env=self.cluster.cluster.driver_env(), stdout=f, stderr=subprocess.STDOUT,
                                          start_new_session=True)
        return self._proc

    def _wait(self, proc: subprocess.Popen, log: Path) -> int | None:
        """The run's exit code, or None if it did not end within RUN_TIMEOUT (then the driver's Python stacks go to
        ``log``.stacks, read by py-spy where it is installed, and the driver is killed)."""
        try:
            return proc.wait(timeout=RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
            with contextlib.suppress(OSError, subprocess.SubprocessError):
                dump = subprocess.run([spy, "dump", "--pid", str(proc.pid)], capture_output=True, text=True, timeout=60)
                log.with_suffix(".stacks").write_text(dump.stdout + dump.stderr)
            proc.kill()
            proc.wait()
            return None

    def _build_reference(self) -> dict[str, str]:
        out = f"s3://{BUCKET}/reference"
        logs = self.workdir / "reference"
        logs.mkdir()
        start = time.monotonic()
        with LocalHTTPServer(self.inp.manifest.parent) as www:
            rc = self._wait(self._start(self._config(logs / "c.json", out, www.url, self.s3.endpoint_url),
                                        logs / "run.log"), logs / "run.log")
        if rc != EXIT_OK:
            raise RuntimeError(f"the undisturbed build failed (exit {rc}):\n{tail(logs / 'run.log')}")
        self.log(f"reference: undisturbed build in {time.monotonic() - start:.0f} s")
        return shard_digests(self.storage, out)

    # -- rounds

    def round(self, r: int, seed: int) -> RoundResult:
        names = self.inp.names
        fault = draw_fault(seed, len(names))
        result = RoundResult(r, seed, fault)
        if fault.kind == "disk_full" and self.disk.unavailable:
            result.skipped = self.disk.unavailable
            return result
        try:
            self.cluster.heal()
            self.cluster.wait_idle()
        except Exception as e:  # a node that does not start, actors that do not end: not this round's build
            result.problem = f"soak error before the round: {e!r}"
            return result
        local = fault.kind == "disk_full"
        out = str(self.disk.path / f"round-{r:03d}") if local else f"s3://{BUCKET}/round-{r:03d}"
        logs = self.workdir / f"round-{r:03d}"
        logs.mkdir(exist_ok=True)
        start = time.monotonic()
        with LocalHTTPServer(self.inp.manifest.parent, hold=(names[fault.hold],)) as www, \
                FaultyS3Proxy(self.s3.endpoint_url, seed=seed, **fault.s3_rates()) as proxy:
            proxy.set_faults(False)
            cfg = self._config(logs / "c.json", out, www.url, proxy.endpoint_url)
            try:
                self._drive(cfg, logs, fault, out, result, www, proxy)
            except Exception as e:  # the soak's own trouble (a node that does not start, ...): this round's problem
                result.problem = f"soak error: {e!r}"
            finally:
                www.release()
                self._stop_run()
            result.reread = sum(max(0, www.gets[f"/{name}"] - 1) for name in names)
        result.seconds = time.monotonic() - start
        if not result.problem:
            try:
                result.problem = self._check(out)
            except Exception as e:  # no summary, an unreadable ledger, ...
                result.problem = f"the output cannot be checked: {e!r}"
        if result.survived:
            self._remove(out)
        elif not result.skipped:
            self.cluster.keep_logs(logs)
        return result

    def _drive(self, cfg: Path, logs: Path, fault: Fault, out: str, result: RoundResult, www: LocalHTTPServer,
               proxy: FaultyS3Proxy) -> None:
        """The first run, the fault once ``fault.at`` WARCs are committed, then reruns until the build is done."""
        proc = self._start(cfg, logs / "run-1.log")
        if not self._wait_committed(proc, out, fault.at):
            self._stop_run()
            result.exits.append(proc.returncode)
            result.problem = f"the run ended before {fault.at} WARCs were committed:\n{tail(logs / 'run-1.log')}"
            return
        result.committed_at_fault = committed(self.storage, out)
        undo = self._inject(fault, proc, proxy, result)
        www.release()
        if undo is not None:
            time.sleep(fault.window)
            undo()
        while True:
            log = logs / f"run-{len(result.exits) + 1}.log"
            rc = self._wait(proc, log)
            if rc is None:
                result.problem = f"run {len(result.exits) + 1} did not end within {RUN_TIMEOUT:g} s:\n{tail(log)}"
                return
            result.exits.append(rc)
            if rc == EXIT_OK:
                return
            if rc not in RESUMABLE or len(result.exits) == MAX_RUNS:
                result.problem = f"run {len(result.exits)} exited {rc}:\n{tail(log)}"
                return
            proc = self._start(cfg, logs / f"run-{len(result.exits) + 1}.log")

    def _wait_committed(self, proc: subprocess.Popen, out: str, n: int) -> bool:
        """Until ``n`` WARCs are committed (True), or the run ends or stalls first (False)."""
        deadline = time.monotonic() + RUN_TIMEOUT
        while proc.poll() is None and time.monotonic() < deadline:
            if committed(self.storage, out) >= n:
                return True
            time.sleep(0.2)
        return False

    def _inject(self, fault: Fault, proc: subprocess.Popen, proxy: FaultyS3Proxy,
                result: RoundResult) -> Callable[[], None] | None:
        """Inject the fault now and say what it did in ``result.effect``; return what ends its window."""
        if fault.kind == "driver":
            os.kill(proc.pid, signal.SIGKILL)
            result.effect = f"driver pid {proc.pid} killed"
        elif fault.kind == "actor":
            pids = self.cluster.actor_pids(fault.target)
            if not pids:
                raise RuntimeError(f"the run has no {fault.target} actor to kill")
            pid = random.Random(result.seed).choice(pids)
            os.kill(pid, signal.SIGKILL)
            result.effect = f"pid {pid} of {len(pids)} killed"
        elif fault.kind in ("worker_node", "lsh_node"):
            role = fault.kind.removesuffix("_node")
            node = self.cluster.node(role)
            result.effect = f"raylet pid {node.pid_of('raylet')} on {node.ip} killed"
            node.kill()

            def replace() -> None:  # a new machine takes the lost one's place (the run goes on if none starts)
                try:
                    self.cluster.replace(role)
                    result.effect += ", node replaced"
                except RuntimeError as e:
                    result.effect += f", no node replaced it ({str(e).splitlines()[0]})"

            return replace
        elif fault.kind == "s3_burst":
            proxy.set_faults(True)

            def calm() -> None:
                proxy.set_faults(False)
                failed = proxy.faults_by_kind()
                result.effect = f"{sum(failed.values())} S3 requests failed (" + (
                    ", ".join(f"{kind} {n}" for kind, n in failed.items() if n) + ")")

            return calm
        elif fault.kind == "disk_full":
            self.disk.fill()
            result.effect = f"{self.disk.filler.stat().st_size:,} bytes filled"
            return self.disk.free
        return None

    def _check(self, out: str) -> str:
        """Why the finished output is not the reference ("" if it is)."""
        summary = RunSummary.read(self.storage, out)
        if not summary.complete or summary.warcs.committed != len(self.inp.names) or summary.warcs.failed:
            return f"incomplete: {summary.warcs}"
        digests = shard_digests(self.storage, out)
        if digests != self.reference:
            differ = sorted(n for n in {*digests, *self.reference} if digests.get(n) != self.reference.get(n))
            return f"shards differ from the undisturbed build: {differ[:10]}"
        checks = verify_output(self.storage, out)
        if not all(c.ok for c in checks):
            return "verify failed:\n" + format_checks([c for c in checks if not c.ok])
        return ""

    def _remove(self, out: str) -> None:
        if "://" not in out:
            shutil.rmtree(out)
            return
        for url in self.storage.list(out):
            self.storage.delete(url)


# ----------------------------------------------------------------------------- the whole soak


def summarize(results: list[RoundResult]) -> str:
    ran = [r for r in results if not r.skipped]
    times = sorted(r.seconds for r in ran)
    kinds = {k: sum(r.fault.kind == k for r in ran) for k in FAULTS}
    lines = [
        f"rounds survived {sum(r.survived for r in ran)}/{len(ran)}"
        + (f" ({len(results) - len(ran)} skipped)" if len(ran) < len(results) else ""),
        f"resumes {sum(r.resumes for r in ran)}, WARCs read again {sum(r.reread for r in ran)}",
        f"time per round: median {statistics.median(times):.0f} s, min {times[0]:.0f} s, max {times[-1]:.0f} s"
        if times else "no round ran",
        "faults: " + ", ".join(f"{k} {n}" for k, n in kinds.items()),
        "seeds: " + " ".join(str(r.seed) for r in results),
    ]
    failed = [r for r in results if r.problem]
    if failed:
        lines.append("failed rounds (replay one with --only-round N and the same --seed): "
                     + ", ".join(str(r.round) for r in failed))
    return "\n".join(lines)


def run_soak(inp: Input, rounds: list[int], seed: int, workdir: Path,
             log: Callable[[str], None] = print) -> list[RoundResult]:
    """Rounds ``rounds`` (round r's seed: ``seed + r``) on one set-up; every round's line is logged as it ends."""
    results = []
    with Soak(inp, workdir, log) as soak:
        for r in rounds:
            result = soak.round(r, seed + r)
            log(result.line())
            results.append(result)
    return results


def make_input(root: Path, n_warcs: int, pages: int) -> Input:
    """A sample crawl (tests/support/corpus.py's) and a tokenizer trained on it."""
    from tests.support.corpus import make_crawl, make_tokenizer

    crawl = make_crawl(root / "warcs", n_warcs=n_warcs, pages=pages)
    return Input(crawl.manifest_path, make_tokenizer(crawl, root / "tokenizer.json"))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=3, help="rounds 0..R-1")
    p.add_argument("--seed", type=int, default=0, help="round r's seed is SEED + r")
    p.add_argument("--only-round", type=int, default=None, help="replay this round alone")
    p.add_argument("--warcs", type=int, default=8, help="WARCs in the sample crawl")
    p.add_argument("--pages", type=int, default=40, help="pages per WARC")
    p.add_argument("--workdir", default=None, help="logs and the crawl (default: a new folder under /tmp, kept)")
    args = p.parse_args(argv)
    os.environ.update(RAY_USAGE_STATS_ENABLED="0", RAY_AUTH_MODE="disabled")
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="raycorpus-soak-"))
    workdir.mkdir(parents=True, exist_ok=True)
    rounds = [args.only_round] if args.only_round is not None else list(range(args.rounds))

    def log(line: str) -> None:
        print(line, flush=True)

    log(f"soak: {len(rounds)} round(s), seed {args.seed}, {args.warcs} WARCs x {args.pages} pages; logs in {workdir}")
    start = time.monotonic()
    inp = make_input(workdir / "input", args.warcs, args.pages)
    results = run_soak(inp, rounds, args.seed, workdir, log)
    log(summarize(results))
    log(f"total {time.monotonic() - start:.0f} s")
    return 0 if all(r.survived or r.skipped for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
