"""Token shards written straight by the packer (no build): random documents over a vocabulary."""

from __future__ import annotations

import numpy as np

from raycorpus.ingest.storage import Storage
from raycorpus.output.shards import ShardPacker, stage_tokens


def random_docs(rng: np.random.Generator, n: int, vocab: int, eos: int) -> list[np.ndarray]:
    out = []
    for _ in range(n):
        d = rng.integers(0, vocab, int(rng.integers(1, 300)))
        d[-1] = eos
        out.append(d)
    return out


def build_token_shards(tmp_path, vocab: int, formats=("megatron", "datatrove", "packed"), ctx_len: int = 32):
    rng = np.random.default_rng(vocab)
    dtype = np.uint16 if vocab < 2**16 else np.uint32
    meta = {"tokenizer": "test-bpe", "tokenizer_sha256": "ab" * 32, "vocab_size": vocab,
            "dtype": np.dtype(dtype).str, "eos_id": 0}
    packer = ShardPacker(Storage(), str(tmp_path), 5000, meta, formats=formats, ctx_len=ctx_len)
    docs = random_docs(rng, 200, vocab, 0)
    for w in range(4):
        part = docs[w * 50 : (w + 1) * 50]
        tokens, lengths = np.concatenate(part).astype(dtype), np.array([len(d) for d in part])
        packer.add(w, f"warc-{w}", stage_tokens(packer.storage, str(tmp_path), w, tokens, lengths))
    state = packer.finish()
    return docs, state, meta


def with_cluster_sizes(out, sizes_of) -> list[np.ndarray]:
    """Token shards (:func:`build_token_shards`) and a ``clusters/`` written by hand: document ``n`` of the corpus
    (in shard order) has cluster size ``sizes_of(n)``; returns the documents."""
    docs, state, _ = build_token_shards(out, 30_000, formats=())
    (out / "clusters").mkdir()
    n = 0
    for i in range(state.shards_closed):
        count = len(np.fromfile(out / "shards" / f"shard-{i:06d}.idx", "<u8"))
        np.array([sizes_of(k) for k in range(n, n + count)], "<u4").tofile(out / "clusters" / f"shard-{i:06d}.sizes")
        n += count
    return docs
