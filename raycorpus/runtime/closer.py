"""Closed shards are written off the head: a Ray task per shard assembles it from the workers' staged
token files, hashes it and writes it (and its other token formats). The packer only waits for them
before the checkpoint that counts them, so no token passes through the head."""

from __future__ import annotations

import ray

from raycorpus.config import StorageConfig
from raycorpus.ingest.storage import Storage
from raycorpus.output.shards import ShardSpec, write_shard
from raycorpus.runtime import faults


@ray.remote(max_retries=3)
def _close_shard(storage_cfg: StorageConfig, spec: ShardSpec) -> int:
    write_shard(faults.wrap_storage(Storage(storage_cfg)), spec)  # same input, same bytes: a retry is safe
    return spec.index


class ShardCloser:
    """The packer's closer: one task per closed shard (``cpus`` each, spread over the cluster)."""

    def __init__(self, storage_cfg: StorageConfig, cpus: float):
        self.storage_cfg = storage_cfg
        self.options = {"num_cpus": cpus, "scheduling_strategy": "SPREAD", **faults.actor_options()}
        self.pending: list[ray.ObjectRef] = []

    def submit(self, spec: ShardSpec) -> None:
        self.pending.append(_close_shard.options(**self.options).remote(self.storage_cfg, spec))

    def wait(self) -> None:
        """Every submitted shard is durable (a task that failed on every try raises here)."""
        pending, self.pending = self.pending, []
        ray.get(pending)
