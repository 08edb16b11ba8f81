"""A WARC cut into ranges reaches the packer as its ranges' staged files, in order: the shards, the
ledger's entries and resume are those of the same WARC staged whole."""

from __future__ import annotations

import itertools

import numpy as np

from raycorpus.ingest.storage import Storage
from raycorpus.output.commit import CorpusWriter
from raycorpus.output.ledger import Ledger
from raycorpus.output.shards import WarcTokens, stage_tokens
from tests.output.test_packer import META, digest, summary, warcs

CUTS = (2, 5)  # documents of each WARC where its ranges start (ranges may be empty)


def _staged(out, i, tokens, lengths, cut: bool) -> WarcTokens:
    if not cut:
        return stage_tokens(Storage(), str(out), i, tokens, lengths)
    bounds = [0, *(min(c, len(lengths)) for c in CUTS), len(lengths)]
    ends = np.r_[0, np.cumsum(lengths)].astype(np.int64)
    return WarcTokens.joined([stage_tokens(Storage(), str(out), i, tokens[ends[a]:ends[b]], lengths[a:b], part=k)
                              for k, (a, b) in enumerate(itertools.pairwise(bounds))])


def _build(out, data, cut: bool, stop_after: int | None = None) -> CorpusWriter:
    w = CorpusWriter(Storage(), str(out), 100, META, 0.0)
    for i in range(w.state.next_ordinal, len(data) if stop_after is None else stop_after):
        tokens, lengths, keep = data[i]
        w.commit(i, f"w{i}", summary(i), _staged(out, i, tokens, lengths, cut), keep)
    if stop_after is None:
        w.finish()
    return w


def _entries(out) -> list[tuple]:
    entries = Ledger(Storage(), str(out)).iter_entries()
    return [(e["ordinal"], e["docs"], e["tokens"], e["first"], e["end"]) for e in entries]


def test_ranges_staged_apart_give_the_shards_and_ledger_of_the_whole_warc(tmp_path):
    data = warcs(12, seed=3)
    _build(tmp_path / "whole", data, cut=False)
    _build(tmp_path / "cut", data, cut=True)
    assert digest(tmp_path / "cut") == digest(tmp_path / "whole")
    assert _entries(tmp_path / "cut") == _entries(tmp_path / "whole")
    assert not list((tmp_path / "cut" / "tokens").glob("*.npz"))  # every range's staged file is gone at the end


def test_resume_between_cut_warcs_is_byte_identical(tmp_path):
    data = warcs(12, seed=4)
    _build(tmp_path / "whole", data, cut=False)
    _build(tmp_path / "cut", data, cut=True, stop_after=7)  # its open shard names ranges' files
    assert any("-0001.npz" in p["file"] for p in Ledger(Storage(), str(tmp_path / "cut")).load().packer.pieces)
    _build(tmp_path / "cut", data, cut=True)
    assert digest(tmp_path / "cut") == digest(tmp_path / "whole")
