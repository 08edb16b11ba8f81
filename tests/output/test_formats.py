"""Trainer formats: Megatron indexed dataset, datatrove .ds, packed rows — read back by the trainers' own code."""

from __future__ import annotations

import json

import numpy as np
import pytest

from raycorpus.ingest.storage import Storage
from raycorpus.output.formats import megatron_index, packed_rows, read_megatron_index
from raycorpus.output.shards import read_shard
from tests.support.shards import build_token_shards


@pytest.mark.parametrize("vocab", [50_000, 100_000])
def test_megatron_files_open_in_megatron_core(tmp_path, vocab):
    pytest.importorskip("torch", reason="torch is not installed (pip install -e '.[test]' installs it)")
    idx_mod = pytest.importorskip("megatron.core.datasets.indexed_dataset",
                                  reason="megatron-core is not installed (pip install -e '.[test]' installs it)")
    docs, state, _ = build_token_shards(tmp_path, vocab)
    got = []
    for i in range(state.shards_closed):
        ds = idx_mod.IndexedDataset(str(tmp_path / "megatron" / f"shard-{i:06d}"))
        assert len(ds.document_indices) == len(ds) + 1
        got.extend(np.array(ds[j], copy=True) for j in range(len(ds)))  # its memmap closes with ds
        side = json.loads((tmp_path / "megatron" / f"shard-{i:06d}.json").read_text())
        assert side["tokenizer_sha256"] == "ab" * 32 and side["sources"]
    assert len(got) == len(docs)
    assert all(np.array_equal(a, b) for a, b in zip(got, docs, strict=True))


def test_datatrove_files_open_in_datatrove(tmp_path):
    dt = pytest.importorskip("datatrove.utils.dataset",
                             reason="datatrove is not installed (pip install -e '.[test]' installs it)")
    pytest.importorskip("torch", reason="torch is not installed")
    _, state, _ = build_token_shards(tmp_path, 50_000)
    seq = 63
    ds = dt.DatatroveFolderDataset(str(tmp_path / "datatrove"), seq_len=seq, token_size=2, return_positions=True)
    flat = [read_shard(Storage(), str(tmp_path), i)[0] for i in range(state.shards_closed)]
    expect = [t[k * (seq + 1) : (k + 1) * (seq + 1)] for t in flat for k in range(len(t) // (seq + 1))]
    assert len(ds) == len(expect) > 0
    for k in (0, 1, len(expect) - 1):
        assert np.array_equal(ds[k]["input_ids"].numpy(), expect[k])
    meta = (tmp_path / "datatrove" / "shard-000000.ds.metadata").read_text().splitlines()
    assert meta[0] == "test-bpe|2" and int(meta[1]) == len(flat[0])


def test_packed_rows_and_document_ids(tmp_path):
    _, state, _ = build_token_shards(tmp_path, 50_000, formats=("packed",), ctx_len=32)
    for i in range(state.shards_closed):
        tokens, ends, _ = read_shard(Storage(), str(tmp_path), i)
        side = json.loads((tmp_path / "packed" / f"shard-{i:06d}.json").read_text())
        rows = np.load(tmp_path / "packed" / f"shard-{i:06d}.rows.npy")
        doc_ids = np.load(tmp_path / "packed" / f"shard-{i:06d}.docs.npy")
        assert rows.shape == doc_ids.shape == (len(tokens) // 33, 33)
        assert np.array_equal(rows.ravel(), tokens[: rows.size])
        assert side["packed"] == {"ctx_len": 32, "rows": rows.shape[0], "tail_tokens_not_in_rows": len(tokens) % 33}
        # a document id changes exactly after an EOS
        flat_ids = doc_ids.ravel()
        boundaries = np.flatnonzero(np.diff(flat_ids)) + 1
        assert np.array_equal(boundaries, ends[ends < rows.size].astype(np.int64))
        assert (rows.ravel()[boundaries - 1] == 0).all()


def test_megatron_index_round_trip_and_packed_edge_cases():
    ends = np.array([3, 10, 11], np.uint64)
    dtype, lengths, pointers, docs = read_megatron_index(megatron_index(ends, np.dtype(np.uint32)))
    assert dtype == np.int32 and lengths.tolist() == [3, 7, 1] and pointers.tolist() == [0, 12, 40]
    assert docs.tolist() == [0, 1, 2, 3]
    rows, ids = packed_rows(np.arange(11), ends, ctx_len=4)
    assert rows.tolist() == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]] and ids.tolist() == [[0, 0, 0, 1, 1], [1, 1, 1, 1, 1]]
    with pytest.raises(ValueError, match="MMIDIDX"):
        read_megatron_index(b"not an index" * 4)


def test_config_checks_formats():
    from raycorpus.config import ConfigError, config_from_dict

    base = {"input": {"manifest": "m"}, "tokenizer": {"path": "t.json"}}
    with pytest.raises(ConfigError, match=r"output.*ctx_len"):
        config_from_dict({**base, "output": {"path": "o", "format": ["packed"]}})
    with pytest.raises(ConfigError, match=r"output.format"):
        config_from_dict({**base, "output": {"path": "o", "format": ["hdf5"]}})
    cfg = config_from_dict({**base, "output": {"path": "o", "format": "megatron"}})
    assert cfg.output.format == ["megatron"]


def test_inspect_shows_a_rows_documents_and_their_boundaries(tmp_path):
    from raycorpus.cli.inspect import inspect_row, row_segments

    build_token_shards(tmp_path, 50_000, formats=("packed",), ctx_len=32)
    out = inspect_row(str(tmp_path), 0, 2)
    rows = np.load(tmp_path / "packed" / "shard-000000.docs.npy")
    segs = row_segments(rows[2])
    assert f"row 2 of {len(rows)} (ctx_len 32)" in out and f"mask: {len(segs)} documents" in out
    assert sum(1 for line in out.splitlines() if "[" in line and ")" in line.split()[1]) == len(segs)
    assert row_segments(np.array([4, 4, 5, 5, 5, 9])) == [(4, 0, 2), (5, 2, 5), (9, 5, 6)]
    build_token_shards(tmp_path / "flat", 50_000, formats=())
    assert "window 1 (ctx_len 16)" in inspect_row(str(tmp_path / "flat"), 0, 1, ctx_len=16)
    with pytest.raises(SystemExit, match="out of range"):
        inspect_row(str(tmp_path), 0, 10**6)
