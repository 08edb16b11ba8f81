"""A WARC's dedup record in two files (raycorpus/process/dedup/records.py): the worker's keys and the packer's rows
(in blocks of WARCs) give the record the decision describes; the blocks' bytes do not depend on checkpoints or
restarts; records of before the blocks and of before the split still read."""

from __future__ import annotations

import numpy as np
import pytest

from raycorpus.ingest.storage import NotFound, Storage
from raycorpus.process.dedup.index import (
    Deduplicator,
    IndexRecord,
    Layout,
    LocalShards,
    RecordRows,
    decode_record,
    encode_record,
    record_name,
)
from raycorpus.process.dedup.records import (
    BLOCK_WARCS,
    RecordReader,
    RowBlocks,
    block_name,
    encode_keys,
    encode_rows,
    keys_name,
    read_record,
)
from raycorpus.process.dedup.settings import DedupConfig
from raycorpus.process.dedup.sketch import Signer
from raycorpus.process.pipeline import content_hash

_LETTERS = np.array(list("abcdefghijklmnopqrstuvwxyz"))


def _warcs(seed: int) -> list[list[str]]:
    """4 WARCs of 40 documents: new pages, exact copies and light edits of earlier ones (of this WARC or before)."""
    rng = np.random.default_rng(seed)
    seen: list[str] = []
    out = []
    for _ in range(4):
        docs = []
        for _ in range(40):
            r = rng.random()
            if seen and r < 0.2:
                docs.append(seen[rng.integers(len(seen))])
            elif seen and r < 0.4:
                words = seen[rng.integers(len(seen))].split()
                words[rng.integers(len(words))] = "edited"
                docs.append(" ".join(words))
            else:
                docs.append(" ".join("".join(rng.choice(_LETTERS, int(rng.integers(3, 9)))) for _ in range(120)))
            seen.append(docs[-1])
        out.append(docs)
    return out


def _assert_same(a: IndexRecord, b: IndexRecord) -> None:
    for field in ("gids", "hashes", "sigs", "urls", "near"):
        x, y = getattr(a, field), getattr(b, field)
        assert (x is None) == (y is None), field
        if x is not None:
            assert x.dtype == y.dtype and np.array_equal(x, y), field


@pytest.mark.parametrize("index_duplicates", [True, False])
def test_the_worker_keys_and_the_packer_rows_give_the_record_the_decision_describes(tmp_path, index_duplicates):
    cfg = DedupConfig(index_duplicates=index_duplicates)
    layout = Layout.from_config(cfg, 2)
    dd = Deduplicator(layout, cfg.threshold, LocalShards(layout))
    storage, signer = Storage(), Signer()
    rng = np.random.default_rng(3)
    rows, wholes = RowBlocks(storage, str(tmp_path), 0), []
    for ordinal, texts in enumerate(_warcs(11)):
        hashes = np.array([content_hash(t) for t in texts], np.uint64)
        sigs = signer.signatures(texts)
        urls = rng.integers(1, 2**63, len(texts), dtype=np.uint64)
        urls[::7] = urls[0]  # some URL duplicates
        decision, whole = dd.decide(ordinal, hashes, sigs, urls)
        storage.write_atomic(str(tmp_path / keys_name(ordinal)), encode_keys(hashes, sigs, urls, layout))
        rows.add(ordinal, decision.rows)
        wholes.append(whole)
    rows.flush()
    reader, records, read = RecordReader(storage, str(tmp_path)), [], 0
    for ordinal, whole in enumerate(wholes):
        got, n = reader.read(ordinal)
        _assert_same(got, decode_record(whole))
        records.append(got)
        read += n
    assert read == sum(p.stat().st_size for p in tmp_path.iterdir())  # each file once: 4 keys files, one block
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(".keys.npz")) == [block_name(0)]
    assert {k for r in records for k in (r.near.tolist() if r.near is not None else [])} == (
        {False, True} if index_duplicates else set())
    rebuilt = LocalShards(layout)  # the split records rebuild the shards the decisions left
    assert {s.load(records) for s in rebuilt.shards} == {dd.next_docno}
    assert [s.stats() for s in rebuilt.shards] == [s.stats() for s in dd.shards.shards]


def _rows(seed: int, n: int, near: bool = True) -> RecordRows:
    rng = np.random.default_rng(seed)
    index = rng.random(n) < 0.7
    return RecordRows(index, (rng.random(int(index.sum())) < 0.2) if near else None)


def _block_files(folder) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.name.startswith("rows-")}


def _same_rows(a: RecordRows, b: RecordRows) -> bool:
    return np.array_equal(a.index, b.index) and ((a.near is None and b.near is None) or np.array_equal(a.near, b.near))


@pytest.mark.parametrize("near", [True, False])
def test_the_packers_rows_are_one_file_per_block_whatever_the_checkpoints(tmp_path, near):
    # 40 WARCs (blocks of 16: two complete, one partial); some failed or without documents for dedup (no rows)
    committed = {o: _rows(o, int(o * 7 % 23), near) for o in range(40) if o % 5 != 3}
    builds = {"undisturbed": (), "checkpoints": (1, 5, 16, 17, 30, 31, 33, 39)}
    for name, checkpoints in builds.items():
        folder = tmp_path / name
        folder.mkdir()
        blocks = RowBlocks(Storage(), str(folder), 0)
        for o in range(40):
            if o in committed:
                blocks.add(o, committed[o])
            blocks.passed(o + 1)  # (a take's end)
            if o in checkpoints:
                blocks.flush()
        blocks.flush()  # (the last checkpoint)
        reader = RecordReader(Storage(), str(folder))
        for o, rows in committed.items():
            assert _same_rows(reader.rows(o)[0], rows), o
        assert reader.rows(3)[0] is None  # a failed WARC has none
    files = [_block_files(tmp_path / name) for name in builds]
    assert list(files[0]) == [block_name(b) for b in range(-(-40 // BLOCK_WARCS))] and files[0] == files[1]


def test_a_packer_that_starts_inside_a_block_keeps_what_its_checkpoint_wrote_and_rewrites_the_rest(tmp_path):
    committed = {o: _rows(o, 30) for o in range(40)}
    undisturbed, crashed = tmp_path / "undisturbed", tmp_path / "crashed"
    for folder in (undisturbed, crashed):
        folder.mkdir()
    blocks = RowBlocks(Storage(), str(undisturbed), 0)
    for o in range(37):
        blocks.add(o, committed[o])
    blocks.flush()
    # the other build: a checkpoint at 20 (inside block 1), block 1 completed and written, then a crash at 34
    blocks = RowBlocks(Storage(), str(crashed), 0)
    for o in range(34):
        blocks.add(o, committed[o])
        blocks.passed(o + 1)
        if o == 19:
            blocks.flush()
    assert decode_ordinals(crashed / block_name(1)) == list(range(16, 32))
    # resumed from the checkpoint (next ordinal 20): WARCs 20-36 are committed again (the same rows) and the build ends
    blocks = RowBlocks(Storage(), str(crashed), 20)
    assert sorted(blocks.rows) == list(range(16, 20))
    for o in range(20, 37):
        blocks.add(o, committed[o])
    blocks.flush()
    assert _block_files(crashed) == _block_files(undisturbed)
    # resumed inside a block whose file has WARCs past the checkpoint, and ended there: rewritten without them
    blocks = RowBlocks(Storage(), str(crashed), 34)
    blocks.flush()
    assert decode_ordinals(crashed / block_name(2)) == [32, 33]
    # resumed at the block's first WARC, and ended there (its WARCs failed this time): the block is gone
    blocks = RowBlocks(Storage(), str(crashed), 32)
    blocks.flush()
    assert not (crashed / block_name(2)).exists() and (crashed / block_name(1)).exists()


def decode_ordinals(path) -> list[int]:
    with np.load(path) as z:
        return z["ordinals"].tolist()


def test_a_record_of_before_the_blocks_reads_as_it_was(tmp_path):
    layout = Layout.from_config(DedupConfig(), 1)
    dd = Deduplicator(layout, 0.8, LocalShards(layout))
    texts = [f"page {i} " * 50 for i in range(3)] * 2
    hashes = np.array([content_hash(t) for t in texts], np.uint64)
    sigs = Signer().signatures(texts)
    decision, whole = dd.decide(7, hashes, sigs)
    storage = Storage()
    storage.write_atomic(str(tmp_path / keys_name(7)), encode_keys(hashes, sigs, None, layout))
    storage.write_atomic(str(tmp_path / record_name(7)), encode_rows(decision.rows))  # one rows file per WARC
    got, read = read_record(storage, str(tmp_path), 7)
    _assert_same(got, decode_record(whole))
    assert read == (tmp_path / keys_name(7)).stat().st_size + (tmp_path / record_name(7)).stat().st_size


def test_a_record_of_before_the_split_reads_as_it_was(tmp_path):
    gids = np.array([5 << 24, (5 << 24) | 2], np.uint64)
    whole = IndexRecord(gids, np.array([11, 12], np.uint64), np.ones((2, 160), np.uint32))
    Storage().write_atomic(str(tmp_path / record_name(5)), encode_record(whole))
    got, read = read_record(Storage(), str(tmp_path), 5)
    _assert_same(got, whole)
    assert read == (tmp_path / record_name(5)).stat().st_size and not (tmp_path / keys_name(5)).exists()


def test_rows_and_keys_that_disagree_or_a_missing_keys_file_are_errors_naming_the_warc(tmp_path):
    layout = Layout.from_config(DedupConfig(), 1)
    dd = Deduplicator(layout, 0.8, LocalShards(layout))
    texts = [f"page {i} " * 50 for i in range(3)]
    hashes = np.array([content_hash(t) for t in texts], np.uint64)
    sigs = Signer().signatures(texts)
    decision, _ = dd.decide(9, hashes, sigs)
    storage = Storage()
    storage.write_atomic(str(tmp_path / record_name(9)), encode_rows(decision.rows))
    with pytest.raises(NotFound):
        read_record(storage, str(tmp_path), 9)
    storage.write_atomic(str(tmp_path / keys_name(9)), encode_keys(hashes[:2], sigs[:2], None, layout))
    with pytest.raises(ValueError, match="WARC #9: its dedup record names 3 documents, its keys file has 2"):
        read_record(storage, str(tmp_path), 9)
