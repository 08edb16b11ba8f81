"""Closed shards are written off the head: shard writer actors, spread over the cluster, assemble each
from the workers' staged token files, hash it and write it (and its other token formats). The packer
only waits for them before the checkpoint that counts them, so no token passes through the head."""

from __future__ import annotations

import logging
import time

import ray
from ray.exceptions import ActorUnavailableError, RayActorError

from raycorpus.config import StorageConfig
from raycorpus.ingest.storage import Storage
from raycorpus.output.shards import ShardSpec, write_shard
from raycorpus.runtime import faults

# seconds before each resend of a shard's write whose actor died (Ray restarts it); after the last resend dies too,
# the run stops. Each send is also retried once by Ray.
RESEND_PAUSES = (1.0, 2.0)
# an actor on a node that stopped answering is "unavailable" until Ray declares the node dead (its health checks take
# 15-30 s) and restarts the actor elsewhere: such writes are sent again every UNAVAILABLE_PAUSE seconds for this long
UNAVAILABLE_SECONDS = 90.0
UNAVAILABLE_PAUSE = 1.0
log = logging.getLogger("raycorpus")


class ShardWritersLost(RuntimeError):
    """Shard writer actors kept dying at one shard (not a loss of the packer: the run stops)."""


@ray.remote
class ShardWriter:
    """Writes closed shards. Stateless: same spec, same bytes, so a retried or repeated write is safe."""

    def __init__(self, storage_cfg: StorageConfig):
        self.storage = faults.wrap_storage(Storage(storage_cfg))

    def write(self, spec: ShardSpec) -> float:
        """Write the shard; return the CPU seconds it took."""
        start = time.process_time()
        faults.point("shard_write", spec.index, whole_run=False)
        write_shard(self.storage, spec)
        return time.process_time() - start


class ShardCloser:
    """The packer's closer: ``writers`` shard writer actors taken in turn (``cpus`` each, spread; the
    packer owns them, so they go with it). A write lost with its actor is sent again: a lost node
    costs a rewrite, never a shard."""

    def __init__(self, storage_cfg: StorageConfig, cpus: float, writers: int = 2):
        self.writers = [ShardWriter.options(
            num_cpus=cpus, max_restarts=-1, max_task_retries=1, scheduling_strategy="SPREAD",
            **faults.actor_options()).remote(storage_cfg) for _ in range(writers)]
        self.pending: list[tuple[ShardSpec, ray.ObjectRef]] = []
        self.cpu_seconds = 0.0  # of the shards closed so far (off the head)
        self._turn = 0

    def submit(self, spec: ShardSpec) -> None:
        self._turn = (self._turn + 1) % len(self.writers)
        self.pending.append((spec, self.writers[self._turn].write.remote(spec)))

    def wait(self) -> None:
        """Every submitted shard is durable; else the first failure is raised (after every write ended,
        so none is left unanswered)."""
        pending, self.pending = self.pending, []
        error: Exception | None = None
        for spec, ref in pending:
            try:
                self.cpu_seconds += self._result(spec, ref)
            except Exception as e:  # raised below, once every write has ended
                error = error or e
        if error is not None:
            raise error

    def _result(self, spec: ShardSpec, ref: ray.ObjectRef) -> float:
        deaths, deadline = 0, time.monotonic() + UNAVAILABLE_SECONDS
        while True:
            try:
                return ray.get(ref)
            except ActorUnavailableError as e:  # its node is not answering: not a death yet
                if time.monotonic() > deadline:
                    raise ShardWritersLost(f"shard writer actors keep dying at shard {spec.index}: {e}") from None
                pause = UNAVAILABLE_PAUSE
            except RayActorError as e:
                if deaths == len(RESEND_PAUSES):
                    raise ShardWritersLost(f"shard writer actors keep dying at shard {spec.index}: {e}") from None
                pause, deaths = RESEND_PAUSES[deaths], deaths + 1
            log.warning("shard writer lost while writing shard %d: written again in %.0f s", spec.index, pause)
            time.sleep(pause)
            self._turn = (self._turn + 1) % len(self.writers)
            ref = self.writers[self._turn].write.remote(spec)
