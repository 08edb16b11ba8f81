"""A real multi-node Ray cluster on this machine, for the tests that need one.

The head runs on 127.0.0.2 and every further node on its own loopback address (127.0.0.3,
...), each a ``ray start --block`` in its own process group with explicit CPUs, memory,
object store and ports (all outside 10002-19999, Ray's worker range), and its own short
temp dir (Ray's socket paths must stay under 107 bytes). Stopping a node signals exactly
its process group; a node that is not up by its deadline is stopped and the test fails
(``ray start`` retries a wrong address forever, so every start has a deadline).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Self

import psutil

from tests.support.guard import need_integration
from tests.support.servers import free_port

RAY = str(Path(sys.executable).with_name("ray"))
READY_MARK = "Ray runtime started"


def ray_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("RAY_ADDRESS", None)  # the pytest session's own cluster is not this one
    # this Python's scripts (raycorpus, ray) first, as on a cluster image: job entrypoints name them
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env.update(RAY_USAGE_STATS_ENABLED="0", RAY_AUTH_MODE="disabled", **extra)
    return env


class RayNode:
    """One ``ray start --block`` process group: a head or a worker node."""

    def __init__(self, ip: str, args: list[str], env: dict[str, str], timeout: float = 120.0, temp: str | None = None):
        """``temp``: the node's temp dir (default: a new short one under /tmp)."""
        need_integration(f"a Ray node ({ip})")
        self.ip = ip
        self.temp = temp or tempfile.mkdtemp(prefix="rc-ray-", dir="/tmp")
        os.makedirs(self.temp, exist_ok=True)
        self.metrics_port = free_port()
        self.log_path = Path(self.temp) / "start.log"
        ports = self._ports()
        cmd = [RAY, "start", "--block", f"--node-ip-address={ip}", f"--temp-dir={self.temp}",
               f"--metrics-export-port={self.metrics_port}", *ports, *args]
        self._log = open(self.log_path, "w")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        self._wait_ready(timeout)

    def _ports(self) -> list[str]:
        used: set[int] = {self.metrics_port}
        out = []
        for flag in ("--dashboard-agent-listen-port", "--dashboard-agent-grpc-port", "--runtime-env-agent-port",
                     "--node-manager-port", "--object-manager-port"):
            port = free_port(exclude=used)
            used.add(port)
            out.append(f"{flag}={port}")
        return out

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if READY_MARK in self.log():
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.2)
        log = self.log()
        self.stop()
        raise RuntimeError(f"ray node on {self.ip} did not start within {timeout:g} s:\n{log[-3000:]}")

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def processes(self) -> list[psutil.Process]:
        try:
            root = psutil.Process(self.proc.pid)
            return [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return []

    def pid_of(self, name: str) -> int:
        """PID of this node's process named ``name`` (e.g. ``raylet``, ``gcs_server``)."""
        for p in self.processes():
            with contextlib.suppress(psutil.Error):
                if p.name() == name or Path(p.cmdline()[0]).name == name:
                    return p.pid
        raise LookupError(f"no {name} process on node {self.ip}")

    def metric(self, name: str, **labels: str) -> float:
        """Sum of the samples of ``name`` (with these label values) on this node's metrics endpoint (0 if none)."""
        with urllib.request.urlopen(f"http://{self.ip}:{self.metrics_port}/metrics", timeout=10) as r:
            lines = r.read().decode().splitlines()
        wanted = [f'{k}="{v}"' for k, v in labels.items()]
        return sum(float(line.rsplit(" ", 1)[1]) for line in lines
                   if line.startswith((name + "{", name + " ")) and all(w in line for w in wanted))

    def actors(self, class_name: str) -> int:
        """Live actors of ``class_name`` on this node (its worker processes' titles)."""
        n = 0
        for p in self.processes():
            with contextlib.suppress(psutil.Error):
                n += p.cmdline()[:1] == [f"ray::{class_name}"] or p.name() == f"ray::{class_name}"
        return n

    def kill(self) -> None:
        """SIGKILL the node's raylet by its PID: the node is lost as a preempted machine is."""
        os.kill(self.pid_of("raylet"), signal.SIGKILL)

    def stop(self, grace: float = 10.0) -> None:
        if self.proc.poll() is None or self.processes():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            deadline = time.monotonic() + grace
            while time.monotonic() < deadline and self.proc.poll() is None:
                time.sleep(0.2)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)  # whatever of this group is left
            self.proc.wait(timeout=30)
        self._log.close()
        shutil.rmtree(self.temp, ignore_errors=True)


class LocalCluster:
    """A head on 127.0.0.2 (optionally with the dashboard on 127.0.0.1) and worker nodes beside it."""

    def __init__(self, head_cpus: int = 1, memory: int = 2 * 2**30, object_store: int = 200 * 2**20,
                 dashboard: bool = False, head_args: tuple[str, ...] = (), env: dict[str, str] | None = None,
                 gcs_port: int | None = None, head_temp: str | None = None):
        """``gcs_port``: chosen by the caller when a file must name the address before the head starts
        (an autoscaling config's ``provider.gcs_address``); ``head_temp``: the head's temp dir."""
        self.memory, self.object_store = memory, object_store
        self.env = env or ray_env()
        self.gcs_port = gcs_port or free_port()
        self.dashboard_port = free_port(exclude={self.gcs_port}) if dashboard else None
        args = ["--head", f"--port={self.gcs_port}", f"--num-cpus={head_cpus}", *self._sizes(),
                f"--ray-client-server-port={free_port(exclude={self.gcs_port})}"]
        if dashboard:
            args += ["--include-dashboard=true", "--dashboard-host=127.0.0.1",
                     f"--dashboard-port={self.dashboard_port}"]
        else:
            args += ["--include-dashboard=false"]
        self.head = RayNode("127.0.0.2", [*args, *head_args], self.env, temp=head_temp)
        self.workers: list[RayNode] = []

    def _sizes(self) -> list[str]:
        return [f"--memory={self.memory}", f"--object-store-memory={self.object_store}"]

    @property
    def address(self) -> str:
        return f"127.0.0.2:{self.gcs_port}"

    @property
    def dashboard_url(self) -> str:
        assert self.dashboard_port, "started without the dashboard"
        return f"http://127.0.0.1:{self.dashboard_port}"

    def add_node(self, num_cpus: int = 1, ip: str | None = None, resources: dict[str, float] | None = None) -> RayNode:
        ip = ip or f"127.0.0.{3 + len(self.workers)}"
        extra = [f"--resources={json.dumps(resources)}"] if resources else []
        node = RayNode(ip, [f"--address={self.address}", f"--num-cpus={num_cpus}", *self._sizes(), *extra], self.env)
        self.workers.append(node)
        return node

    def driver_env(self, **extra: str) -> dict[str, str]:
        """Environment for a driver process (the CLI) that joins this cluster."""
        return {**self.env, "RAY_ADDRESS": self.address, **extra}

    def alive_nodes(self) -> int:
        code = "import ray; ray.init(log_to_driver=False); print('ALIVE', sum(n['Alive'] for n in ray.nodes()))"
        out = subprocess.run([sys.executable, "-c", code], env=self.driver_env(), capture_output=True, text=True,
                             timeout=120)
        # Ray may print its own warnings (e.g. lagging raylet heartbeats) on stdout too
        counts = [line.split()[1] for line in out.stdout.splitlines() if line.startswith("ALIVE ")]
        assert counts, f"could not count the nodes: {out.stdout[-2000:]} {out.stderr[-2000:]}"
        return int(counts[-1])

    def stop(self) -> None:
        for node in [*self.workers, self.head]:
            node.stop()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
