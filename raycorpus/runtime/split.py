"""Workers sharing one WARC (``run.split_warcs``): the WARC goes to the pool as record ranges, and its
ranges' results come back joined, in range order, as the WARC's one result.

The committer, the dedup decision, the packer and the ledger see a WARC cut into ranges exactly as an
uncut one, so the commit order is (WARC, range) and resume stays exactly-once at WARC granularity: a
WARC not committed when the run stopped has all its ranges done again. A range that fails is retried on
its own; one that fails for good fails its WARC (listed once, with that range's error) and the WARC's
other ranges are dropped.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Iterator

import ray

from raycorpus.config import Config
from raycorpus.ingest.split import plan_ranges
from raycorpus.ingest.storage import Storage, StorageError
from raycorpus.output.shards import WarcTokens
from raycorpus.process.results import DedupPayload, WarcSummary

RANGES_PER_WORKER = 8  # ranges per worker a cut WARC is split into: the last ones even the load out

log = logging.getLogger("raycorpus")


def ranges_per_warc(cfg: Config, warcs: int, workers: int) -> int:
    """How many ranges to cut each WARC into (1: none). ``auto`` cuts only when there are fewer WARCs than
    workers. Never in tag mode or with ``filters.exclusions``: their workers write one file per WARC."""
    setting = cfg.run.split_warcs
    if setting == "off" or cfg.filters.mode == "tag" or cfg.filters.exclusions.enabled:
        return 1
    if setting == "auto":
        return 1 if warcs >= workers else math.ceil(RANGES_PER_WORKER * workers / max(1, warcs))
    return setting


def split_tasks(tasks: Iterator, storage: Storage, ranges: int) -> Iterator:
    """The tasks, each WARC that can be cut given as its ranges (``task.part`` set, ``task.parts`` of them)."""
    for task in tasks:
        if ranges < 2 or not task.url:
            yield task
            continue
        try:
            parts = plan_ranges(storage, task.url, ranges)
        except StorageError as e:  # read whole; its worker meets the error and it is retried as any WARC
            log.info("WARC #%d not cut into ranges: %s", task.ordinal, e)
            parts = []
        if len(parts) < 2:
            yield task
            continue
        for part in parts:
            yield dataclasses.replace(task, part=part, parts=len(parts))


class RangeGather:
    """Holds the finished ranges of cut WARCs until a WARC's last one is in; then joins them."""

    def __init__(self, need_docs: bool):
        self.need_docs = need_docs
        self.done: dict[int, dict] = {}  # ordinal -> {range index: Finished}
        self.failed: set[int] = set()  # WARCs a range of which failed for good: the others are dropped

    def dropped(self, task) -> bool:
        return task.parts > 1 and task.ordinal in self.failed

    def add(self, item):
        """A finished range; the WARC's joined result once all its ranges are in, else None."""
        task = item.task
        if task.ordinal in self.failed:
            return None
        got = self.done.setdefault(task.ordinal, {})
        got[task.part.index] = item
        if len(got) < task.parts:
            return None
        del self.done[task.ordinal]
        return self._join([got[i] for i in range(task.parts)])

    def fail(self, item):
        """A range failed for good: the WARC, listed as failed with that range's error."""
        task = item.task
        self.failed.add(task.ordinal)
        self.done.pop(task.ordinal, None)
        where = f" (record range {task.part.index + 1} of {task.parts}, bytes {task.part.start}-{task.part.end})"
        item.task = dataclasses.replace(task, part=None, parts=1, error=task.error + where)
        return item

    def _join(self, parts: list):
        first = parts[0]
        task = dataclasses.replace(first.task, part=None, parts=1,
                                   attempts=max(p.task.attempts for p in parts))
        summary = WarcSummary.joined([p.summary for p in parts])
        dedup = ray.put(DedupPayload.joined(ray.get([p.dedup for p in parts])))
        staged = ray.put(WarcTokens.joined(ray.get([p.staged for p in parts])))
        docs = None
        if self.need_docs:
            docs = ray.put([d for range_docs in ray.get([p.docs for p in parts]) for d in range_docs])
        return dataclasses.replace(first, task=task, summary=summary, docs=docs, dedup=dedup, staged=staged)
