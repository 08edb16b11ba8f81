"""Closed shards are written off the head: shard writer actors, spread over the cluster, assemble each
from the workers' staged token files, hash it and write it (and its other token formats). The packer
only waits for them before the checkpoint that counts them, so no token passes through the head."""

from __future__ import annotations

import time

import ray

from raycorpus.config import StorageConfig
from raycorpus.ingest.storage import Storage
from raycorpus.output.shards import ShardSpec, write_shard
from raycorpus.runtime import faults


@ray.remote
class ShardWriter:
    """Writes closed shards. Stateless: same spec, same bytes, so a retried or repeated write is safe."""

    def __init__(self, storage_cfg: StorageConfig):
        self.storage = faults.wrap_storage(Storage(storage_cfg))

    def write(self, spec: ShardSpec) -> float:
        """Write the shard; return the CPU seconds it took."""
        start = time.process_time()
        write_shard(self.storage, spec)
        return time.process_time() - start


class ShardCloser:
    """The packer's closer: ``writers`` shard writer actors, started at the first closed shard and
    taken in turn (``cpus`` each; the packer owns them, so they go with it)."""

    def __init__(self, storage_cfg: StorageConfig, cpus: float, writers: int = 2):
        self.storage_cfg, self.cpus, self.n_writers = storage_cfg, cpus, writers
        self.writers: list = []
        self.pending: list[ray.ObjectRef] = []
        self.cpu_seconds = 0.0  # of the shards closed so far (off the head)

    def submit(self, spec: ShardSpec) -> None:
        if not self.writers:
            self.writers = [ShardWriter.options(
                num_cpus=self.cpus, max_restarts=-1, max_task_retries=3, scheduling_strategy="SPREAD",
                **faults.actor_options()).remote(self.storage_cfg) for _ in range(self.n_writers)]
        writer = self.writers[spec.index % len(self.writers)]
        self.pending.append(writer.write.remote(spec))

    def wait(self) -> None:
        """Every submitted shard is durable; else the first failure is raised (after every write ended,
        so none is left unanswered)."""
        pending, self.pending = self.pending, []
        error: Exception | None = None
        for ref in pending:
            try:
                self.cpu_seconds += ray.get(ref)
            except Exception as e:  # raised below, once every write has ended
                error = error or e
        if error is not None:
            raise error
