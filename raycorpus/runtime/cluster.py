"""Which Ray the run uses (the one named, or a private local one) and where the commit path's actors go."""

from __future__ import annotations

import atexit
import contextlib
import gc
import logging
import os
import signal
import threading

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from raycorpus.config import Config

log = logging.getLogger("raycorpus")

_owned = False  # init_ray called ray.init in this process (not a caller that had Ray running already)


def freeze_heap() -> None:
    """Move every object alive now (modules, Ray's, a process's set-up) out of the garbage collector's full passes.
    A head process (the driver, the packer) keeps allocating per WARC; each full pass went over those ~10^5
    start-up objects again (~60 ms, every ~100 WARCs, in each). Collected first, so no garbage is kept."""
    gc.collect()
    gc.freeze()


@contextlib.contextmanager
def frozen_heap():
    """:func:`freeze_heap` for a block (a build in a process that goes on after it: the CLI's, a test's)."""
    freeze_heap()
    try:
        yield
    finally:
        gc.unfreeze()


def init_ray(cfg: Config) -> None:
    """Join ``ray.address`` / RAY_ADDRESS if given, else start a private local Ray.

    Never a cluster nobody named: ``ray.init()`` without an address joins the latest cluster started
    on this machine (``ray start --head``), so a private Ray is asked for with ``address="local"``.
    """
    global _owned
    if ray.is_initialized():
        return
    # ray.init installs its own SIGTERM handler (exit 15); keep the caller's (the CLI's: checkpoint, exit 130)
    previous = signal.getsignal(signal.SIGTERM) if threading.current_thread() is threading.main_thread() else None
    try:
        address = cfg.ray.address or os.environ.get("RAY_ADDRESS")
        if address:
            ray.init(address=address, log_to_driver=True)
        else:
            _start_local(cfg)
        _owned = True
    finally:
        if callable(previous):
            signal.signal(signal.SIGTERM, previous)


def _start_local(cfg: Config) -> None:
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    if cfg.ray.loopback_only:
        # Ray's single-machine mode (its default on macOS/Windows): the node address is 127.0.0.1, so
        # every Ray process and the metrics endpoint bind to loopback instead of all interfaces.
        # Ray reads this at import; set it for the processes it starts and for this one.
        os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
        ray._private.ray_constants.ENABLE_RAY_CLUSTER = False
    ray.init(
        address="local",  # a new local Ray, even when another one runs on this machine
        num_cpus=cfg.ray.num_cpus,
        object_store_memory=cfg.ray.object_store_memory,
        include_dashboard=cfg.ray.dashboard,
        dashboard_host=cfg.ray.dashboard_host,
        _metrics_export_port=cfg.ray.metrics_export_port,
        log_to_driver=True,
    )
    atexit.register(_stop_autoscaler_monitor)  # runs before Ray's own shutdown (registered earlier: LIFO)


def stop_ray() -> None:
    """Leave the Ray that :func:`init_ray` joined or started (a joined cluster goes on; a private one stops).
    Called when a command's work is done: ``ray.shutdown()`` at interpreter exit first waits 0.5 s for late
    worker log lines, and every result is in by now."""
    global _owned
    if not _owned:
        return
    _owned = False
    _stop_autoscaler_monitor()
    ray.shutdown()


def _stop_autoscaler_monitor() -> None:
    """At exit, a private local Ray's autoscaler monitor is killed first: it ignores the SIGTERM of
    ``ray.shutdown()``, which then waits a whole second for it (1.0 of the 1.1-1.3 s shutdown, measured).
    A one-node local Ray has nothing for it to scale or save. Ray's private API: a best effort."""
    node = getattr(ray._private.worker, "_global_node", None)
    try:
        for info in node.all_processes.get(ray._private.ray_constants.PROCESS_TYPE_MONITOR, []) if node else []:
            info.process.kill()
    except (AttributeError, OSError) as e:  # another Ray version: its own shutdown does it, a second slower
        log.debug("autoscaler monitor not stopped early: %s", e)


def on_this_node() -> NodeAffinitySchedulingStrategy:
    """Affinity to the calling process's node. The driver places the commit path's ``num_cpus=0``
    actors (packer, tokenizers, LSH shards) beside itself, so losing a worker node never takes
    them down. Hard, not soft: Ray's soft affinity still spreads zero-CPU actors over other nodes,
    and the driver's node is the one node the run cannot outlive anyway."""
    return NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
