"""MDS (MosaicML streaming) and litdata shards, read back by those packages' own readers."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

from raycorpus.ingest.storage import Storage
from raycorpus.output.shards import PackerState, ShardPacker, read_shard, stage_tokens
from raycorpus.output.streaming_formats import _check_size, mds_shard
from tests.support.paths import SHARED, need_shared
from tests.support.shards import build_token_shards, random_docs

MDS_ABSENT = ("mosaicml-streaming is not installed: its releases since 0.9 pin transformers<5 (so tokenizers<0.23 and "
              "huggingface_hub<1) and, from 0.11, numpy<2.2, so it is not in the test extra; to run this test "
              "beside numpy 2.4 install it as .ci/run does: `pip install transformers safetensors zstd catalogue "
              "python-snappy brotli cramjam` then `pip install --no-deps mosaicml-streaming==0.13.0`")
LITDATA_ABSENT = "litdata is not installed (pip install -e '.[test]' installs it)"


def mds_documents(folder) -> list[np.ndarray]:
    streaming = pytest.importorskip("streaming", reason=MDS_ABSENT)
    ds = streaming.StreamingDataset(local=str(folder), shuffle=False, batch_size=1)
    return [np.asarray(ds[i]["tokens"]) for i in range(len(ds))]


def litdata_blocks(folder, block_size: int) -> list[np.ndarray]:
    litdata = pytest.importorskip("litdata", reason=LITDATA_ABSENT)
    from litdata.streaming.item_loader import TokensLoader

    ds = litdata.StreamingDataset(str(folder), item_loader=TokensLoader(block_size=block_size))
    return [np.asarray(ds[i]) for i in range(len(ds))]


def shard_tokens(out, shards: int) -> list[np.ndarray]:
    return [read_shard(Storage(), str(out), i)[0] for i in range(shards)]


def assert_sidecars(out, fmt: str, shards: int) -> None:
    for i in range(shards):
        side = json.loads((out / fmt / f"shard-{i:06d}.json").read_text())
        canonical = json.loads((out / "shards" / f"shard-{i:06d}.json").read_text())
        assert side["sources"] == canonical["sources"] and side["tokenizer_sha256"] == canonical["tokenizer_sha256"]
        assert side["sha256"] == canonical["sha256"] and side[fmt]


@pytest.mark.parametrize("vocab", [50_000, 100_000])
def test_mds_files_open_in_mosaic_streaming(tmp_path, vocab):
    docs, state, _ = build_token_shards(tmp_path, vocab, formats=("mds",))
    got = mds_documents(tmp_path / "mds")
    assert len(got) == len(docs) and state.shards_closed > 1
    assert {a.dtype for a in got} == {np.dtype(np.uint16 if vocab < 2**16 else np.uint32)}
    assert all(np.array_equal(a, b) for a, b in zip(got, docs, strict=True))
    index = json.loads((tmp_path / "mds" / "index.json").read_text())
    assert [s["raw_data"]["basename"] for s in index["shards"]] == [
        f"shard-{i:06d}.mds" for i in range(state.shards_closed)]
    assert_sidecars(tmp_path, "mds", state.shards_closed)


@pytest.mark.parametrize("vocab", [50_000, 100_000])
def test_litdata_files_open_in_litdata_tokens_loader(tmp_path, vocab):
    docs, state, _ = build_token_shards(tmp_path, vocab, formats=("litdata",))
    flat = shard_tokens(tmp_path, state.shards_closed)
    # block_size 1: every token of every document, in order, and nothing else
    assert np.array_equal(np.concatenate(litdata_blocks(tmp_path / "litdata", 1)), np.concatenate(docs))
    # training blocks: a chunk's tokens cut in blocks, its last < block_size tokens left out (as litdata does)
    b = 64
    expect = [t[k * b : (k + 1) * b] for t in flat for k in range(len(t) // b)]
    got = litdata_blocks(tmp_path / "litdata", b)
    assert len(got) == len(expect) > 0 and all(np.array_equal(x, y) for x, y in zip(got, expect, strict=True))
    index = json.loads((tmp_path / "litdata" / "index.json").read_text())
    chunks = index["chunks"]
    assert index["config"]["chunk_bytes"] == 5000 * flat[0].dtype.itemsize  # the shard size the packer closes at
    assert [c["dim"] for c in chunks] == [len(t) for t in flat]
    ends = [read_shard(Storage(), str(tmp_path), i)[1] for i in range(state.shards_closed)]
    assert [c["chunk_size"] for c in chunks] == [len(e) for e in ends]
    assert_sidecars(tmp_path, "litdata", state.shards_closed)


def _digests(out) -> dict[str, str]:
    return {f"{d}/{p.name}": hashlib.sha256(p.read_bytes()).hexdigest()
            for d in ("shards", "mds", "litdata") for p in sorted((out / d).iterdir())}


def _pack(out, docs, warcs, state=None, packer=None):
    meta = {"tokenizer": "t", "tokenizer_sha256": "ab" * 32, "vocab_size": 50_000, "dtype": "<u2", "eos_id": 0}
    packer = packer or ShardPacker(Storage(), str(out), 3000, meta, state=state, formats=("mds", "litdata"))
    for w in warcs:
        part = docs[w * 40 : (w + 1) * 40]
        tokens, lengths = np.concatenate(part).astype(np.uint16), np.array([len(d) for d in part])
        packer.add(w, f"warc-{w}", stage_tokens(packer.storage, str(out), w, tokens, lengths))
    return packer


def test_index_lists_the_closed_shards_at_each_checkpoint_and_a_restart_writes_the_same_bytes(tmp_path):
    docs = random_docs(np.random.default_rng(7), 200, 50_000, 0)
    one = tmp_path / "one"
    _pack(one, docs, range(5)).finish()
    two = tmp_path / "two"
    packer = _pack(two, docs, range(2))
    state = packer.persist_open()  # what a checkpoint saves: the index names exactly the durable shards
    assert state.shards_closed > 0
    assert len(json.loads((two / "mds" / "index.json").read_text())["shards"]) == state.shards_closed
    assert len(json.loads((two / "litdata" / "index.json").read_text())["chunks"]) == state.shards_closed
    _pack(two, docs, range(2, 4), packer=packer).persist_open()  # the run went on past that checkpoint, then was
    assert len(json.loads((two / "mds" / "index.json").read_text())["shards"]) > state.shards_closed  # killed
    restarted = _pack(two, docs, range(2, 5), PackerState.from_json(state.to_json()))
    restarted.finish()
    restarted.drop_obsolete()
    assert _digests(two) == _digests(one)


def test_an_index_naming_a_reopened_shard_is_written_again_at_the_next_checkpoint(tmp_path):
    """A finished output grown by a longer manifest reopens its last shard (raycorpus/output/grow.py): the
    next update names only the closed shards, even when no shard closed since."""
    from raycorpus.output.streaming_formats import StreamingIndexes

    docs = random_docs(np.random.default_rng(3), 200, 50_000, 0)
    _pack(tmp_path, docs, range(5)).finish()
    mds = json.loads((tmp_path / "mds" / "index.json").read_text())["shards"]
    lit = json.loads((tmp_path / "litdata" / "index.json").read_text())["chunks"]
    assert len(mds) == len(lit) >= 2
    indexes = StreamingIndexes(Storage(), str(tmp_path), ("mds", "litdata"), "<u2", len(mds) - 1, 3000)
    indexes.update(len(mds) - 1)
    assert json.loads((tmp_path / "mds" / "index.json").read_text())["shards"] == mds[:-1]
    assert json.loads((tmp_path / "litdata" / "index.json").read_text())["chunks"] == lit[:-1]


def test_mds_refuses_an_empty_document_and_a_shard_over_4_gib():
    with pytest.raises(ValueError, match="empty document"):
        mds_shard(np.arange(5, dtype=np.uint16), np.array([2, 2, 5], np.uint64))
    with pytest.raises(ValueError, match="4 GiB"):
        _check_size("mds", 2**32)


def test_config_bounds_the_shard_size_of_mds_and_litdata():
    from raycorpus.config import MAX_STREAMING_SHARD_TOKENS, ConfigError, config_from_dict

    base = {"input": {"manifest": "m"}, "tokenizer": {"path": "t.json"}}
    for fmt in ("mds", "litdata"):
        with pytest.raises(ConfigError, match=r"output.*shard_size_tokens"):
            config_from_dict({**base, "output": {"path": "o", "format": [fmt],
                                                 "shard_size_tokens": MAX_STREAMING_SHARD_TOKENS + 1}})
    cfg = config_from_dict({**base, "output": {"path": "o", "format": ["mds", "litdata"]}})
    assert cfg.output.format == ["mds", "litdata"]


@pytest.fixture(scope="module")
def real_text(tmp_path_factory):
    """Real sentences in 75 languages (../shared), a BPE trained on them, packed into mds/ and litdata/."""
    from raycorpus.config import TokenizerConfig
    from raycorpus.process.tokenize import TokenEncoder, train_bpe

    path = need_shared(SHARED / "data" / "langid" / "sample_20_per_lang.jsonl")
    texts = [json.loads(line)["text"] for line in path.read_text().splitlines() if line]
    root = tmp_path_factory.mktemp("real")
    train_bpe(texts, 2000, str(root / "tok.json"), "<|endoftext|>")
    enc = TokenEncoder(TokenizerConfig(path=str(root / "tok.json")))
    packer = ShardPacker(Storage(), str(root / "out"), 8000, enc.meta(), formats=("mds", "litdata"))
    for w in range(0, len(texts), 300):
        tokens, lengths = enc.encode(texts[w : w + 300])
        packer.add(w, f"warc-{w}", stage_tokens(packer.storage, str(root / "out"), w, tokens, lengths))
    state = packer.finish()
    return texts, enc, root / "out", state


def test_real_text_through_mds_decodes_to_the_sentences(real_text):
    texts, enc, out, _ = real_text
    got = mds_documents(out / "mds")
    assert len(got) == len(texts)
    assert all(d[-1] == enc.eos_id for d in got)
    assert [enc.tokenizer.decode(d[:-1].tolist()) for d in got] == texts


def test_real_text_through_litdata_decodes_to_the_sentences(real_text):
    texts, enc, out, state = real_text
    flat = np.concatenate(litdata_blocks(out / "litdata", 1))
    assert np.array_equal(flat, np.concatenate(shard_tokens(out, state.shards_closed)))
    docs = np.split(flat, np.flatnonzero(flat == enc.eos_id) + 1)[:-1]
    assert [enc.tokenizer.decode(d[:-1].tolist()) for d in docs] == texts


def test_mds_lengths_of_every_shape_dtype_open_in_mosaic_streaming(tmp_path):
    """A document's length is written as uint8, uint16 or uint32 by its size: each boundary read back."""
    from raycorpus.output.formats import write_formats
    from raycorpus.output.shards import canonical_json
    from raycorpus.output.streaming_formats import StreamingIndexes

    lengths = [1, 255, 256, 65_535, 65_536, 70_000, 3]
    tokens = np.random.default_rng(3).integers(0, 100_000, sum(lengths)).astype(np.uint32)
    ends = np.cumsum(lengths, dtype=np.uint64)
    write_formats(Storage(), str(tmp_path), "shard-000000", ("mds",), tokens, ends, {"sources": []}, {}, None,
                  canonical_json)
    StreamingIndexes(Storage(), str(tmp_path), ("mds",), "<u4", 0).update(1)
    got = mds_documents(tmp_path / "mds")
    assert [len(d) for d in got] == lengths
    assert np.array_equal(np.concatenate(got), tokens)


@pytest.mark.parametrize("fmt", ["mds", "litdata"])
def test_verify_reads_both_formats_back_and_finds_a_changed_token(tmp_path, fmt):
    from raycorpus.output.streaming_formats import streaming_format_problems

    _, state, _ = build_token_shards(tmp_path, 100_000, formats=(fmt,))
    sides = [read_shard(Storage(), str(tmp_path), i)[2] for i in range(state.shards_closed)]
    assert streaming_format_problems(Storage(), str(tmp_path), fmt, sides) == []
    data_file = sorted((tmp_path / fmt).glob("*.mds" if fmt == "mds" else "chunk-0-1.bin"))[-1]
    data = bytearray(data_file.read_bytes())
    data[-1] ^= 1  # the last token of the shard
    data_file.write_bytes(bytes(data))
    bad = streaming_format_problems(Storage(), str(tmp_path), fmt, sides)
    assert len(bad) == 1 and "tokens differ" in bad[0]
    assert streaming_format_problems(Storage(), str(tmp_path), fmt, [*sides, sides[0]]) == [
        f"index.json names {state.shards_closed} of {state.shards_closed + 1} shards"]
