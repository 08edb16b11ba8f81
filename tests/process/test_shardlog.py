"""An LSH shard's durable slice: segments at checkpoints, background merges, a restart from its own files."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np

from raycorpus.ingest.storage import Storage
from raycorpus.process.dedup.index import OPH, Deduplicator, Layout, LocalShards, LshShard
from raycorpus.process.dedup.settings import DedupConfig
from raycorpus.process.dedup.shardlog import (
    MERGE_FANIN,
    ShardFiles,
    ShardLog,
    decode_inserts,
    finished_name,
    remove_unnamed,
    shard_dir,
)


class LoggedShards(LocalShards):
    """In-process shards that also log their inserts, as the shard actors do."""

    def __init__(self, layout: Layout, logs: list[ShardLog]):
        super().__init__(layout)
        self.logs = logs

    def insert(self, requests, ordinal):
        super().insert(requests, ordinal)
        for log, r in zip(self.logs, requests, strict=True):
            log.add(ordinal, r)

WIDTH = 112 + OPH.words  # MinHash values and the OPH sketch: the shards persist the sketch


def _warc(rng: np.random.Generator, n: int, pool: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Hashes and signatures, a third of them copies of earlier documents (from ``pool``)."""
    sigs = rng.integers(0, 2**32, (n, WIDTH), dtype=np.uint64).astype(np.uint32)
    hashes = rng.integers(1, 2**63, n, dtype=np.uint64)
    if len(pool):
        pick = rng.integers(0, len(pool), n // 3)
        sigs[: n // 3] = pool[pick]
    return hashes, sigs


def _build(tmp_path, warcs: int, flush_every: int, restart_at: int | None = None):
    """Decide ``warcs`` WARCs over 3 logged shards, checkpointing every ``flush_every``; optionally restart
    every shard from its files at ``restart_at`` (as a resume does). Returns (decisions, logs)."""
    cfg = DedupConfig()
    layout = Layout.from_config(cfg, 3)
    storage = Storage()
    durable = [ShardFiles()] * 3
    logs = [ShardLog(storage, str(tmp_path / f"shard-{i}"), durable[i]) for i in range(3)]
    shards = LoggedShards(layout, logs)
    dedup = Deduplicator(layout, cfg.threshold, shards)
    rng = np.random.default_rng(7)
    pool = np.empty((0, WIDTH), np.uint32)
    kinds = []
    for ordinal in range(warcs):
        if restart_at is not None and ordinal == restart_at:
            for log in logs:
                log.close()
            logs = [ShardLog(storage, str(tmp_path / f"shard-{i}"), durable[i]) for i in range(3)]
            shards = LoggedShards(layout, logs)
            for i, log in enumerate(logs):
                log.remove_orphans()
                for request in log.load():
                    shards.shards[i].insert(*request)
            dedup = Deduplicator(layout, cfg.threshold, shards, dedup.next_docno)
        hashes, sigs = _warc(rng, 40, pool)
        pool = np.concatenate([pool, sigs])
        decision, _ = dedup.decide(ordinal, hashes, sigs)
        kinds.append(decision.kind.copy())
        if (ordinal + 1) % flush_every == 0:
            durable = [log.flush(ordinal + 1, dedup.next_docno) for log in logs]
            for log in logs:
                log.confirm(ordinal + 1)
    for log in logs:
        log.close()
    return kinds, logs, durable


def test_a_shard_restarted_from_its_own_files_decides_like_the_live_one(tmp_path):
    live, _, _ = _build(tmp_path / "live", warcs=60, flush_every=3)
    restarted, logs, _ = _build(tmp_path / "restart", warcs=60, flush_every=3, restart_at=42)
    assert all(np.array_equal(a, b) for a, b in zip(live, restarted, strict=True))
    assert sum(int((k != 0).sum()) for k in live) > 100  # duplicates were found, and found again after the restart
    assert all(log.bytes_read > 0 for log in logs)  # the restarted shards read their files


def test_segments_merge_in_the_background_and_files_stay_few(tmp_path):
    _, logs, durable = _build(tmp_path, warcs=200, flush_every=1)
    for log, named in zip(logs, durable, strict=True):
        on_disk = sorted(p.name for p in (tmp_path / log.dir_url.rsplit("/", 1)[-1]).iterdir())
        assert len(named.files) <= 3 * MERGE_FANIN, named.files  # 200 segments were written
        assert any(name.startswith("L1-") or name.startswith("L2-") for name in named.files)
        assert set(named.files) <= set(on_disk)  # what the checkpoint names exists
        spans = [tuple(int(x) for x in n.removesuffix(".npz").split("-")[1:]) for n in named.files]
        assert spans[0][0] == 0 and all(a[1] == b[0] for a, b in itertools.pairwise(spans)), spans  # contiguous
        assert named.upto == 200


def test_a_restart_reads_only_its_own_slice_and_drops_unnamed_files(tmp_path):
    _, _, durable = _build(tmp_path, warcs=30, flush_every=5)
    orphan = tmp_path / "shard-1" / "L0-000000030-000000031.npz"
    orphan.write_bytes(b"a segment of a checkpoint that was never written")
    total = 0
    for i, named in enumerate(durable):
        log = ShardLog(Storage(), str(tmp_path / f"shard-{i}"), named)
        log.remove_orphans()
        shard = LshShard(Layout.from_config(DedupConfig(), 3), i)
        for request in log.load():
            shard.insert(*request)
        own = sum((tmp_path / f"shard-{i}" / n).stat().st_size for n in named.files)
        assert log.bytes_read == own  # its own files, nothing else
        total += shard.stats()["documents"]
    assert not orphan.exists()
    assert total == durable[0].docnos  # every indexed document is owned by exactly one shard


def _end(tmp_path, flush_every: int, warcs: int = 60):
    """A build of ``warcs`` WARCs checkpointed every ``flush_every``, ended as a run ends: each shard compacted.
    Returns (the files of the last checkpoint before the end, those of the final one)."""
    _, logs, durable = _build(tmp_path, warcs=warcs, flush_every=flush_every)
    return durable, [log.compact(warcs, 0) for log in logs]


def test_the_end_leaves_one_file_per_shard_whatever_the_checkpoints(tmp_path):
    """Checkpoints after every WARC (so merges ran, 60 segments), every 7, or never before the end: each shard
    ends with the one file named by the end alone, byte for byte the same, holding the same inserts."""
    ends = {every: _end(tmp_path / f"every-{every}", every) for every in (1, 7, 1000)}
    assert any(n.startswith("L1-") for f in ends[1][0] for n in f.files), "no merge ran"
    assert all(not f.files for f in ends[1000][0])  # nothing was written before the end
    for every, (_, final) in ends.items():
        assert [(f.files, f.upto) for f in final] == [((finished_name(60),), 60)] * 3, every
    for i in range(3):
        data = {every: (tmp_path / f"every-{every}" / f"shard-{i}" / finished_name(60)).read_bytes() for every in ends}
        assert len(set(data.values())) == 1, f"shard {i}: the end's file differs between checkpoint histories"
        whole = decode_inserts(data[1])
        shard = LshShard(Layout.from_config(DedupConfig(), 3), i)
        shard.insert(*whole)
        assert whole[4].size == shard.stats()["documents"] > 0  # every document this shard owns, once


def test_the_writer_removes_what_the_final_checkpoint_does_not_name(tmp_path):
    """After the end's compaction the merged-away parts and the replaced segments are still there (the final
    checkpoint is not durable yet); once it is, everything it does not name goes."""
    _, final = _end(tmp_path / "build", 1)
    dedup = tmp_path / "dedup"
    dedup.mkdir()
    for i in range(3):
        (tmp_path / "build" / f"shard-{i}").rename(shard_dir(str(dedup), i))
    before = {str(p.relative_to(dedup)) for p in dedup.rglob("*") if p.is_file()}
    named = {f"{Path(shard_dir('', i)).name}/{finished_name(60)}" for i in range(3)}
    assert named < before  # the compacted parts are still on disk
    gone = remove_unnamed(Storage(), str(dedup), final)
    assert sorted(str(Path(u).relative_to(dedup)) for u in gone) == sorted(before - named)
    assert {str(p.relative_to(dedup)) for p in dedup.rglob("*") if p.is_file()} == named
