"""Paragraph dedup's Ray-free core (process/dedup/paragraphs.py): where paragraphs are cut, their keys, the
tokens of a document encoded paragraph by paragraph against the whole text's on real pages, and which paragraphs
are removed, against a one-paragraph-at-a-time reference."""

from __future__ import annotations

import os
import random
from pathlib import Path

import numpy as np
import pytest
from tokenizers import Tokenizer

from raycorpus.config import TokenizerConfig
from raycorpus.process.dedup.paragraphs import (
    SEPARATOR,
    ParagraphHasher,
    Paragraphs,
    SeenParagraphs,
    cuts,
    dropped,
    kept_tokens,
    removed_share,
    seen_before,
    split_paragraphs,
)
from raycorpus.process.hashing import words
from raycorpus.process.tokenize import TokenEncoder, train_bpe
from tests.support.paths import SHARED, need_shared

EOS = "<|endoftext|>"
TRAFILATURA = SHARED / "data" / "extraction" / "trafilatura-eval"
os.environ["TOKENIZERS_PARALLELISM"] = "false"
ODD_SPACE = ["\n\n", "\n \n", " \n\n ", "\xa0\n\n", "\r\n\r\n", "\n\u2028\n", "\n\t\n\n  ", "\u3000\n\n", "\n"]


@pytest.fixture(scope="module")
def pages() -> list[str]:
    """trafilatura-eval's pages as the shipped extraction gives them (851 real pages, 47 languages' worth of
    whitespace habits)."""
    from raycorpus.cli.evaluate import load_trafilatura_eval, shipped_extract_fn

    need_shared(TRAFILATURA)
    extract = shipped_extract_fn()
    return [t for t in (extract(html) for _, html, _ in load_trafilatura_eval(TRAFILATURA)) if t]


def odd_texts(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    parts = ["Some words here.", "Ünïcödé ΣΑΣ text", "¨ accent", "\uff11\uff12\uff13 digits", "日本語の文", "x",
             "", " "]
    return ["".join(rng.choice(parts) + rng.choice(ODD_SPACE) for _ in range(rng.randint(1, 12))) for _ in range(n)]


def test_paragraphs_concatenate_to_the_text_and_are_cut_where_the_separator_regex_says(pages):
    for text in [*pages, *odd_texts(500), "", "\n\nstarts blank", "ends blank\n\n", "a\n\nb"]:
        assert "".join(split_paragraphs(text)) == text
        assert cuts(text) == [m.start() for m in SEPARATOR.finditer(text) if m.start() > 0]
    assert split_paragraphs("one.  \n\n two\nnext\n\n\nthree") == ["one.", "  \n\n two", "\nnext", "\n\n\nthree"]


def test_keys_name_a_paragraphs_normalised_words_and_skip_short_ones(pages):
    hasher = ParagraphHasher(min_chars=10)
    keys = hasher.keys("Hello, World! 2024\n\nshort\n\nHELLO world", split_paragraphs("Hello, World! 2024\n\nshort"
                                                                                          "\n\nHELLO world"))
    assert keys[0] == keys[2] != 0 and keys[1] == 0  # case, punctuation and digits do not count; 5 letters < 10
    assert hasher.keys("hello worlds", ["hello worlds"])[0] != keys[0]
    by_words: dict[tuple, set] = {}
    for text in [*pages[::3], *odd_texts(300)]:
        parts = split_paragraphs(text)
        whole = hasher.keys(text, parts)  # the document folded once
        alone = np.concatenate([hasher.keys(p, [p]) for p in parts])  # each paragraph on its own
        assert np.array_equal(whole, alone)
        for p, k in zip(parts, whole.tolist(), strict=True):
            w = tuple(words(p))
            assert (k == 0) == (len("".join(w)) < 10)
            if k:
                by_words.setdefault(w, set()).add(k)
    assert all(len(k) == 1 for k in by_words.values()) and len(by_words) > 3000
    assert len({next(iter(k)) for k in by_words.values()}) == len(by_words)  # no two word sequences share a key


def whitespace_merging_bpe(texts: list[str], path: Path) -> Path:
    """A byte-level BPE that merges line breaks (GPT-2's vocabulary has "\\n\\n"): trained on the texts with their
    blank lines widened, which makes runs of newlines the commonest pairs."""
    train_bpe([t.replace("\n\n", "\n\n\n\n ") for t in texts], 2048, str(path), EOS)
    vocab = Tokenizer.from_file(str(path)).get_vocab()
    assert "ĊĊ" in vocab
    return path


@pytest.mark.parametrize("fast", [True, False], ids=["tiktoken", "hf"])
def test_a_document_encoded_paragraph_by_paragraph_gets_the_whole_texts_ids(pages, tmp_path, fast):
    """The proof the issue asks for: for byte-level BPEs (the trainer's own, and one with line-break merges), the
    ids of a document encoded paragraph by paragraph are the ids of its whole text, on every real page."""
    texts = [*pages, *odd_texts(300)]
    plain = tmp_path / "plain.json"
    train_bpe(pages, 2048, str(plain), EOS)
    for path in (plain, whitespace_merging_bpe(pages, tmp_path / "ws.json")):
        encoder = TokenEncoder(TokenizerConfig(path=str(path), eos=EOS), fast=fast)
        assert encoder.engine == ("tiktoken" if fast else "hf")
        tokens, lengths = encoder.encode(texts)
        pieces = [split_paragraphs(t) for t in texts]
        by_piece, by_piece_lengths, piece_tokens = encoder.encode_pieces(pieces)
        assert np.array_equal(by_piece, tokens) and np.array_equal(by_piece_lengths, lengths)
        per_doc = np.add.reduceat(piece_tokens.astype(np.int64), np.cumsum([0, *map(len, pieces[:-1])]))
        assert np.array_equal(per_doc + 1, lengths.astype(np.int64))


def reference(batches: list[list[list[int]]], threshold: float, chars: list[list[list[int]]]):
    """One paragraph at a time, in manifest order: (removed flags, dropped flags) per batch."""
    seen: set[int] = set()
    out = []
    for docs, doc_chars in zip(batches, chars, strict=True):
        removed, drop = [], []
        for keys, lens in zip(docs, doc_chars, strict=True):
            flags = [k != 0 and k in seen for k in keys]
            for i, k in enumerate(keys):
                flags[i] = flags[i] or (k != 0 and k in keys[:i])
            seen.update(k for k in keys if k)
            removed += flags
            total = sum(lens)
            drop.append(total > 0 and sum(n for n, f in zip(lens, flags, strict=True) if f) / total >= threshold)
        out.append((np.array(removed, bool), np.array(drop, bool)))
    return out


def test_seen_before_keeps_the_first_occurrence_in_manifest_order_across_batches():
    rng = np.random.default_rng(3)
    batches, chars, arrays = [], [], []
    for _ in range(30):
        docs = [rng.choice(np.arange(0, 40), rng.integers(1, 8)).tolist() for _ in range(rng.integers(0, 6))]
        lens = [rng.integers(0, 200, len(d)).tolist() for d in docs]
        batches.append(docs)
        chars.append(lens)
        flat = [k for d in docs for k in d]
        arrays.append(Paragraphs(np.array([len(d) for d in docs], np.uint32), np.array(flat, np.uint64),
                                 np.array([n for ls in lens for n in ls], np.uint32)))
    want = reference(batches, 0.6, chars)
    seen = SeenParagraphs()
    for p, (removed, drop) in zip(arrays, want, strict=True):
        got = seen.decide(p)
        assert np.array_equal(got, removed)
        assert np.array_equal(dropped(removed_share(p, got), 0.6), drop)
    whole = Paragraphs(*(np.concatenate([getattr(p, f) for p in arrays]) for f in ("counts", "keys", "chars")))
    assert np.array_equal(SeenParagraphs().decide(whole), np.concatenate([r for r, _ in want]))  # any batching


def test_known_keys_are_removed_and_key_zero_never_is():
    keys = np.array([5, 0, 7, 5, 0, 9], np.uint64)
    known = np.array([False, True, False, False, True, True])
    assert seen_before(keys, known).tolist() == [False, False, False, True, False, True]


def test_kept_tokens_drop_removed_paragraphs_and_dropped_documents_but_keep_each_kept_documents_eos():
    counts = np.array([2, 1, 3], np.uint32)
    piece_tokens = np.array([2, 3, 1, 2, 0, 1], np.uint32)  # doc 0: 2+3 (+EOS), doc 1: 1 (+EOS), doc 2: 2+0+1 (+EOS)
    removed = np.array([False, True, False, True, False, False])
    keep = np.array([True, False, True])
    mask = kept_tokens(counts, piece_tokens, removed, keep)
    assert mask.astype(int).tolist() == [1, 1, 0, 0, 0, 1, 0, 0, 0, 0, 1, 1] and mask.dtype == bool
    assert kept_tokens(np.zeros(0, np.uint32), np.zeros(0, np.uint32), np.zeros(0, bool), np.zeros(0, bool)).size == 0


def random_warcs(n_warcs: int, seed: int = 5) -> list[tuple[np.ndarray, Paragraphs]]:
    """WARCs whose documents' paragraphs share keys from a small pool (some unkeyed); one document in six is an exact
    copy (its content hash) of an earlier one, which document-level dedup drops or (the earlier one dropped for its
    paragraphs: not indexed) keeps."""
    rng = np.random.default_rng(seed)
    out, doc = [], 0
    for _ in range(n_warcs):
        n = int(rng.integers(0, 7))
        counts = rng.integers(1, 9, n).astype(np.uint32)
        m = int(counts.sum())
        keys = rng.choice(np.arange(1, 60, dtype=np.uint64), m) * np.uint64(0x9E3779B97F4A7C15)
        keys[rng.random(m) < 0.15] = 0
        paragraphs = Paragraphs(counts, keys, rng.integers(1, 300, m).astype(np.uint32),
                                rng.integers(0, 40, m).astype(np.uint32))
        hashes = np.arange(doc, doc + n, dtype=np.uint64) + np.uint64(1 << 40)
        copies = rng.random(n) < 1 / 6
        hashes[copies] = rng.integers(0, max(doc, 1), int(copies.sum())).astype(np.uint64) + np.uint64(1 << 40)
        out.append((hashes, paragraphs))
        doc += n
    return out


def decide(warcs, shards: int, round_size: int):
    from raycorpus.process.dedup.index import Deduplicator, Layout, LocalShards, WarcRows
    from raycorpus.process.dedup.settings import DedupConfig

    layout = Layout.from_config(DedupConfig(url=False, near=False), shards)
    local = LocalShards(layout)
    dedup = Deduplicator(layout, 0.8, local, 0, paragraph_threshold=0.6)
    rows = [WarcRows(i, hashes, None, None, None, p) for i, (hashes, p) in enumerate(warcs)]
    out = []
    for start in range(0, len(rows), round_size):
        out += dedup.decide_round(rows[start : start + round_size])
    return out, local


def reference_decisions(warcs, threshold: float):
    """One document at a time: exact dedup against the indexed documents (kept, not dropped for their paragraphs)
    and the WARC's earlier kept ones, then paragraphs against every paragraph of the kept documents before."""
    seen, indexed, out = SeenParagraphs(), set(), []
    for hashes, p in warcs:
        kept, mine = np.zeros(hashes.size, bool), set()
        for i, h in enumerate(hashes.tolist()):
            kept[i] = h not in indexed and h not in mine
            mine |= {h} if kept[i] else set()
        removed = np.zeros(p.keys.size, bool)
        removed[p.rows(kept)] = seen.decide(p.take(kept))
        drop = kept & dropped(removed_share(p, removed), threshold)
        indexed |= set(hashes[kept & ~drop].tolist())
        out.append((removed, drop, kept))
    return out


def test_the_index_decides_paragraphs_as_the_reference_in_any_round_and_shard_count():
    warcs = random_warcs(40)
    want = reference_decisions(warcs, 0.6)
    assert sum(int(r.sum()) for r, _, _ in want) > 50 and sum(int(d.sum()) for _, d, _ in want) > 3
    assert sum(int((~k).sum()) for _, _, k in want) > 5  # exact copies dropped: their paragraphs are not seen
    for shards, round_size in ((1, 1), (1, 16), (3, 5), (4, 16)):
        decisions, _ = decide(warcs, shards, round_size)
        for d, (removed, drop, kept), (_, p) in zip(decisions, want, warcs, strict=True):
            assert np.array_equal(d.paragraphs, removed) if p.counts.size else d.paragraphs is None
            assert np.array_equal(d.kind == 7, drop)  # PARAGRAPHS
            assert np.array_equal(d.rows.index, kept & ~drop)  # the documents dropped for paragraphs: not indexed


def test_a_shard_rebuilt_from_the_records_holds_the_same_paragraph_keys():
    """What a lost or resumed shard reads (the keys files the workers wrote and the rows blocks the packer wrote)
    gives it the paragraph keys the live shard took."""
    from raycorpus.process.dedup.index import Layout, LshShard
    from raycorpus.process.dedup.records import decode_block, encode_block, encode_keys, join_record
    from raycorpus.process.dedup.settings import DedupConfig

    warcs = random_warcs(30, seed=9)
    decisions, live = decide(warcs, 3, 4)
    layout = Layout.from_config(DedupConfig(url=False, near=False), 3)
    rows = decode_block(encode_block({i: d.rows for i, d in enumerate(decisions) if d.rows.index.size}))
    docno = 0
    rebuilt = [LshShard(layout, s) for s in range(3)]
    for i, (hashes, p) in enumerate(warcs):
        if i not in rows:
            continue
        record = join_record(i, rows[i], encode_keys(hashes, None, None, layout, p))
        for shard in rebuilt:
            shard.load([record], docno)
        docno += record.gids.size
    for shard, original in zip(rebuilt, live.shards, strict=True):
        assert len(original.paragraphs) > 0
        assert np.array_equal(shard.paragraphs.keys(), original.paragraphs.keys())


def test_a_line_on_thousands_of_pages_of_one_warc_most_of_them_duplicates():
    """One key on 20,000 documents of a WARC, 20 of them kept by document-level dedup: the first kept one keeps it,
    the 19 others lose it (the head follows the key's occurrences back by pointer jumping, not one by one)."""
    from raycorpus.process.dedup.arrays import ParagraphHits
    from raycorpus.process.dedup.paragraphs import RoundParagraphs

    n = 20_000
    keys = np.empty(2 * n, np.uint64)
    keys[0::2], keys[1::2] = 7, np.arange(100, 100 + n, dtype=np.uint64)
    p = Paragraphs(np.full(n, 2, np.uint32), keys, np.full(2 * n, 50, np.uint32), np.full(2 * n, 5, np.uint32))
    round_ = RoundParagraphs([p], lambda k: np.zeros(k.size, np.intp), 1, 0.8)
    round_.answers([ParagraphHits.of(round_.asked(0)[0], lambda k: np.zeros(k.size, bool))])
    kept = np.zeros(n, bool)
    kept[500::1000] = True
    verdict = round_.decide(0, kept)
    want = np.zeros(2 * n, bool)
    want[2 * np.flatnonzero(kept)[1:]] = True
    assert np.array_equal(verdict.removed, want)
    assert sorted(round_.flat[verdict.fresh].tolist()) == sorted([7, *(100 + np.flatnonzero(kept)).tolist()])
