"""dedup.paragraphs at the packer: a WARC's documents placed less their removed paragraphs' token spans (``cuts``)
give the shards of the same documents staged without those tokens, whether the WARC was staged whole or in ranges,
and after a resume whose open shard names cut pieces."""

from __future__ import annotations

import numpy as np

from raycorpus.ingest.storage import Storage
from raycorpus.output.commit import CorpusWriter
from raycorpus.output.ledger import Ledger
from raycorpus.output.shards import stage_tokens
from raycorpus.process.dedup.paragraphs import Paragraphs, TokenCuts, kept_tokens
from tests.output.test_packer import META, digest, summary
from tests.output.test_packer_split import _staged


def paragraph_warcs(n: int, seed: int):
    """Fake WARC results with paragraphs: (tokens, lengths, keep, paragraphs, removed)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        counts = rng.integers(1, 5, int(rng.integers(0, 9))).astype(np.uint32)
        piece_tokens = rng.integers(0, 15, int(counts.sum())).astype(np.uint32)
        p = Paragraphs(counts, np.ones(piece_tokens.size, np.uint64), piece_tokens, piece_tokens)
        ends = np.cumsum(counts.astype(np.int64))
        lengths = (np.add.reduceat(piece_tokens.astype(np.int64), ends - counts) + 1 if counts.size
                   else np.zeros(0, np.int64)).astype(np.uint64)
        tokens = rng.integers(1, 1000, int(lengths.sum())).astype("<u2")
        tokens[np.cumsum(lengths).astype(np.int64) - 1] = META["eos_id"]
        out.append((tokens, lengths, rng.random(counts.size) < 0.8, p, rng.random(piece_tokens.size) < 0.3))
    return out


def build(out, data, how: str, stop_after: int | None = None) -> None:
    """``how``: "cut" (staged whole, placed with cuts), "ranges" (staged in ranges, with cuts) or "pruned" (the
    removed tokens never staged: the reference)."""
    w = CorpusWriter(Storage(), str(out), 100, META, 0.0)
    for i in range(w.state.next_ordinal, len(data) if stop_after is None else stop_after):
        tokens, lengths, keep, p, removed = data[i]
        if how == "pruned":
            mask = kept_tokens(p.counts, p.tokens, removed & p.rows(keep), np.ones(keep.size, bool))
            lost = np.bincount(p.doc_of, weights=p.tokens * removed, minlength=keep.size).astype(np.uint64)
            lengths = lengths - np.where(keep, lost, 0).astype(np.uint64)
            w.commit(i, f"w{i}", summary(i), stage_tokens(Storage(), str(out), i, tokens[mask], lengths), keep)
        else:
            staged = _staged(out, i, tokens, lengths, cut=how == "ranges")
            w.commit(i, f"w{i}", summary(i), staged, keep, cuts=TokenCuts.of(p, removed, keep))
    if stop_after is None:
        w.finish()


def test_cut_pieces_give_the_shards_of_the_pruned_documents_staged_whole_or_in_ranges(tmp_path):
    data = paragraph_warcs(14, seed=7)
    assert sum(int((r & p.rows(k)).sum()) for _, _, k, p, r in data) > 20
    for how in ("pruned", "cut", "ranges"):
        build(tmp_path / how, data, how)
    assert digest(tmp_path / "cut") == digest(tmp_path / "pruned") == digest(tmp_path / "ranges")
    entries = [[(e["docs"], e["tokens"]) for e in Ledger(Storage(), str(tmp_path / how)).iter_entries()]
               for how in ("pruned", "cut", "ranges")]
    assert entries[0] == entries[1] == entries[2]


def test_resume_from_an_open_shard_of_cut_pieces_is_byte_identical(tmp_path):
    data = paragraph_warcs(14, seed=8)
    build(tmp_path / "whole", data, "cut")
    build(tmp_path / "resumed", data, "ranges", stop_after=9)
    assert any(p.get("cuts") for p in Ledger(Storage(), str(tmp_path / "resumed")).load().packer.pieces)
    build(tmp_path / "resumed", data, "ranges")
    assert digest(tmp_path / "resumed") == digest(tmp_path / "whole")
