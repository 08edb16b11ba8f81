"""A WARC's dedup record in two files (raycorpus/process/dedup/records.py): the worker's keys and the packer's rows
give the record the decision describes, and a record of before the split still reads."""

from __future__ import annotations

import numpy as np
import pytest

from raycorpus.ingest.storage import NotFound, Storage
from raycorpus.process.dedup.index import (
    Deduplicator,
    IndexRecord,
    Layout,
    LocalShards,
    decode_record,
    encode_record,
    record_name,
)
from raycorpus.process.dedup.records import encode_keys, encode_rows, keys_name, read_record
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
    records = []
    for ordinal, texts in enumerate(_warcs(11)):
        hashes = np.array([content_hash(t) for t in texts], np.uint64)
        sigs = signer.signatures(texts)
        urls = rng.integers(1, 2**63, len(texts), dtype=np.uint64)
        urls[::7] = urls[0]  # some URL duplicates
        decision, whole = dd.decide(ordinal, hashes, sigs, urls)
        storage.write_atomic(str(tmp_path / keys_name(ordinal)), encode_keys(hashes, sigs, urls, layout))
        storage.write_atomic(str(tmp_path / record_name(ordinal)), encode_rows(decision.rows))
        got, read = read_record(storage, str(tmp_path), ordinal)
        _assert_same(got, decode_record(whole))
        assert read == (tmp_path / keys_name(ordinal)).stat().st_size + (tmp_path / record_name(ordinal)).stat().st_size
        records.append(got)
    assert {k for r in records for k in (r.near.tolist() if r.near is not None else [])} == (
        {False, True} if index_duplicates else set())
    rebuilt = LocalShards(layout)  # the split records rebuild the shards the decisions left
    assert {s.load(records) for s in rebuilt.shards} == {dd.next_docno}
    assert [s.stats() for s in rebuilt.shards] == [s.stats() for s in dd.shards.shards]


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
