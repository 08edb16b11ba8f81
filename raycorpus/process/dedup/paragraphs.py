"""Paragraph-level dedup, Ray-free: a document's paragraphs, their keys, and which of them were seen before.

**Paragraphs.** As in Dolma's and DCLM's paragraph dedup, a paragraph is a line: a document's text is cut before
every whitespace run that holds a line break (with the default chain, whose C4 stage joins the lines it keeps by
one newline as FineWeb does, every block of the page is a line). The first paragraph runs to the first such run;
every later one *begins* with the whole run before it. The paragraphs concatenate to the text, and for the
byte-level BPEs whose pre-tokenizer always splits at the start of a whitespace run that follows a non-space
character (GPT-2's regex, which raycorpus' own trained tokenizers use; cl100k and Llama 3's split there too),
encoding paragraph by paragraph gives the ids of the whole text: no pre-token crosses a cut, and BPE merges never
cross pre-tokens. A cut inside a run, or the run at the *end* of a paragraph, would not: with a vocabulary that
merges ``"\n\n"``, cutting blank-line paragraphs with the run at their end gave the whole text's ids on 12 of 849
trafilatura-eval pages, with the run at their start on 849 of 849. ``tests/process/test_dedup_paragraphs.py``
checks the identity on those pages; a tokenizer for which it does not hold still gives deterministic ids (a
document's tokens are then the concatenation of its paragraphs').

**Keys.** A paragraph's key is a 64-bit hash of its normalised words (:class:`ParagraphHasher`: NFKC, lowercase,
punctuation and digits folded, as for the document's content hash), for paragraphs of at least ``min_chars`` word
characters; a shorter paragraph has key 0 and is never removed (headings, dates, "Read more").

**Seen before** (:func:`seen_before`). A keyed paragraph is removed when the same key came earlier in manifest
order: in an earlier WARC's document that document-level dedup kept, earlier in the same WARC, or earlier in the
same document (BFF's rule: the first occurrence wins). Every paragraph of a document that document-level dedup kept
counts as seen, removed or not, and whether or not the document is then dropped for its share of removed text
(:func:`dropped`): so which paragraphs are removed does not depend on the threshold, and ``raycorpus select`` can
change it. The price: a paragraph whose first occurrence was in a document dropped for its share is in no kept
document (the figures in docs/dedup.md count them).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from raycorpus.process.dedup.arrays import ShardSplit
from raycorpus.process.hashing import NGramHasher, nfkc

# a whitespace run holding a line break (the definition; :func:`cuts` finds them faster)
SEPARATOR = re.compile(r"\s*\n\s*")


def cuts(text: str) -> list[int]:
    """Where the text's paragraphs after the first begin: the first character of every whitespace run that holds a
    line break (:data:`SEPARATOR`), but position 0. The search looks for line breaks, then walks back to the run's
    first character (the separator regex itself backtracks at every whitespace character)."""
    out: list[int] = []
    at = text.find("\n")
    while at >= 0:
        i = at
        while i > 0 and text[i - 1].isspace():
            i -= 1
        if i > 0 and (not out or out[-1] != i):
            out.append(i)
        at = text.find("\n", at + 1)
    return out


def split_paragraphs(text: str) -> list[str]:
    """The text's paragraphs, each after the first beginning with its separator: ``"".join(...) == text``."""
    bounds = [0, *cuts(text), len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


KEY_SEED = 0x7061726167726170  # of the word hashes that paragraph keys are built from


class ParagraphHasher:
    """The keys of a document's paragraphs: each paragraph's normalised words (:func:`~raycorpus.process.hashing.
    words`), hashed as a sequence (an n-gram hash over all of them, :meth:`NGramHasher.spans`), 0 for a paragraph
    of fewer than ``min_chars`` word characters (what the normalised text keeps, spaces not counted; 0 is never a
    key: a hash of 0 becomes 1). The document is folded once (NFKC, lowercase) and cut at the same separators as
    its text: folding does not move a cut (a whitespace run stays one, and no character folds into a line break);
    were the two to disagree in number, each paragraph is folded on its own."""

    def __init__(self, min_chars: int, seed: int = KEY_SEED):
        self.min_chars = min_chars
        self.ngrams = NGramHasher(seed)

    def keys(self, text: str, paragraphs: list[str]) -> np.ndarray:
        """uint64 key per paragraph of ``text`` (``paragraphs = split_paragraphs(text)``)."""
        folded_text = nfkc(text).lower()
        at = cuts(folded_text)
        if len(at) + 1 != len(paragraphs):
            return np.concatenate([self.keys(p, [p]) for p in paragraphs])
        cp = np.frombuffer(folded_text.encode("utf-32-le", "surrogatepass"), np.uint32)
        hashes, starts, ends = self.ngrams.words.words_of(cp)
        first = np.searchsorted(starts, np.array([0, *at, cp.size]))  # each paragraph's first word, and the end
        chars = np.zeros(starts.size + 1, np.int64)
        np.cumsum(ends - starts, out=chars[1:])
        keys = self.ngrams.spans(hashes, first[:-1], first[1:])
        keys[keys == 0] = 1
        keys[chars[first[1:]] - chars[first[:-1]] < max(self.min_chars, 1)] = 0
        return keys


@dataclass(frozen=True)
class Paragraphs:
    """The paragraphs of a batch of documents (a WARC's, in order), as arrays: a row per paragraph."""

    counts: np.ndarray  # uint32 paragraphs per document (>= 1)
    keys: np.ndarray  # uint64 per paragraph: its key, 0 = too short to be removed
    chars: np.ndarray  # uint32 characters of each paragraph (its separator included)
    tokens: np.ndarray | None = None  # uint32 tokens of each paragraph, once encoded (a document's EOS not counted)

    @classmethod
    def joined(cls, parts: Sequence[Paragraphs]) -> Paragraphs:
        """The paragraphs of consecutive batches (a WARC's ranges, in order)."""
        tokens = None if any(p.tokens is None for p in parts) else np.concatenate([p.tokens for p in parts])
        return cls(*(np.concatenate([getattr(p, f) for p in parts]) for f in ("counts", "keys", "chars")), tokens)

    @classmethod
    def of(cls, texts: Sequence[str], hasher: ParagraphHasher) -> tuple[Paragraphs, list[list[str]]]:
        """The documents' paragraph arrays, and each document's paragraphs (to tokenize piece by piece)."""
        split = [split_paragraphs(t) for t in texts]
        keys = [hasher.keys(t, parts) for t, parts in zip(texts, split, strict=True)]
        chars = np.fromiter((len(p) for parts in split for p in parts), np.uint32, sum(map(len, split)))
        counts = np.fromiter(map(len, split), np.uint32, len(split))
        return cls(counts, np.concatenate(keys) if keys else np.zeros(0, np.uint64), chars), split

    @property
    def bounds(self) -> np.ndarray:
        """Each document's first paragraph (row), and the end: ``counts.size + 1`` int64."""
        out = np.zeros(self.counts.size + 1, np.int64)
        np.cumsum(self.counts, out=out[1:])
        return out

    @property
    def first(self) -> np.ndarray:
        """Each document's first paragraph (row)."""
        return self.bounds[:-1]

    def docs_at(self, rows: np.ndarray) -> np.ndarray:
        """The document of each of the paragraphs ``rows`` (:attr:`doc_of` for a few rows, without a pass over all)."""
        return np.searchsorted(self.first, rows, side="right") - 1

    def shares(self, rows: np.ndarray, doc: np.ndarray) -> np.ndarray:
        """Per document, the share of its characters in the paragraphs ``rows`` (``doc``: each one's document; float64,
        0 where none, as :func:`removed_share`), in passes over those rows and the documents that hold them."""
        share = np.zeros(self.counts.size)
        if rows.size:
            gone = np.bincount(doc, weights=self.chars[rows], minlength=self.counts.size)
            some = np.flatnonzero(gone)
            sums = np.zeros(self.keys.size + 1, np.int64)
            np.cumsum(self.chars, out=sums[1:])
            bounds = self.bounds
            total = sums[bounds[some + 1]] - sums[bounds[some]]
            share[some] = np.divide(gone[some], total, out=np.zeros(some.size), where=total > 0)
        return share

    @property
    def doc_of(self) -> np.ndarray:
        """The document (its position in the batch) of each paragraph."""
        return np.repeat(np.arange(self.counts.size), self.counts.astype(np.int64))

    def removed_per_doc(self, removed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(tokens, characters) each document loses with its ``removed`` paragraphs (int64 each)."""
        rows = np.flatnonzero(removed)
        n, doc = self.counts.size, self.docs_at(rows)
        tokens = np.bincount(doc, weights=self.tokens[rows], minlength=n) if self.tokens is not None else np.zeros(n)
        return tokens.astype(np.int64), np.bincount(doc, weights=self.chars[rows], minlength=n).astype(np.int64)

    def rows(self, docs: np.ndarray) -> np.ndarray:
        """A bool per paragraph: it is one of the documents ``docs`` marks (a bool per document)."""
        return np.repeat(np.asarray(docs, bool), self.counts.astype(np.int64))

    def take(self, docs: np.ndarray) -> Paragraphs:
        """The paragraphs of the documents ``docs`` marks (a bool per document)."""
        rows = self.rows(docs)
        return Paragraphs(self.counts[docs], self.keys[rows], self.chars[rows],
                          None if self.tokens is None else self.tokens[rows])


def seen_before(keys: np.ndarray, known: np.ndarray) -> np.ndarray:
    """Which paragraphs (a bool per row of ``keys``, in manifest order) are removed: keyed, and either ``known``
    (the index holds the key: an earlier WARC had it) or not the key's first row here."""
    removed = known & (keys != 0)
    keyed = np.flatnonzero(keys != 0)
    if keyed.size:
        _, first = np.unique(keys[keyed], return_index=True)
        later = np.ones(keyed.size, bool)
        later[first] = False
        removed[keyed[later]] = True
    return removed


def removed_share(paragraphs: Paragraphs, removed: np.ndarray) -> np.ndarray:
    """Per document, the share of its characters in removed paragraphs (float64, 0 for an empty document): the
    definition, in passes over every paragraph (the reference's; the head computes it from the removed rows alone,
    :meth:`Paragraphs.shares`; its drops are tested against the reference's)."""
    doc = paragraphs.doc_of
    total = np.bincount(doc, weights=paragraphs.chars, minlength=paragraphs.counts.size)
    gone = np.bincount(doc, weights=paragraphs.chars * removed, minlength=paragraphs.counts.size)
    return np.divide(gone, total, out=np.zeros(total.size), where=total > 0)


def dropped(share: np.ndarray, threshold: float) -> np.ndarray:
    """The documents dropped as ``dedup:paragraphs``: their removed share is at least ``threshold``."""
    return share >= threshold


def kept_tokens(counts: np.ndarray, piece_tokens: np.ndarray, removed: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """A bool per token of the documents' concatenated tokens (each document's paragraphs' tokens, then its EOS):
    the tokens of the kept documents' paragraphs that were not removed, and those documents' EOS."""
    ends = np.cumsum(counts.astype(np.int64))  # each document's EOS goes after its last paragraph
    rows = np.repeat(keep, counts.astype(np.int64)) & ~removed
    return np.repeat(np.insert(rows, ends, keep), np.insert(piece_tokens.astype(np.int64), ends, 1))


class SeenParagraphs:
    """The reference: a set of keys, decided one batch at a time in manifest order (what the sharded index does
    over the cluster must equal it)."""

    def __init__(self) -> None:
        self.keys: set[int] = set()

    def decide(self, paragraphs: Paragraphs) -> np.ndarray:
        """The removed paragraphs of a batch (of documents document-level dedup kept); its keys become known."""
        known = np.fromiter((int(k) in self.keys for k in paragraphs.keys), bool, paragraphs.keys.size)
        removed = seen_before(paragraphs.keys, known)
        self.keys.update(int(k) for k in paragraphs.keys[paragraphs.keys != 0])
        return removed


@dataclass(frozen=True)
class ParagraphVerdict:
    """One WARC's paragraph decision, over its decided documents' paragraphs (a row each)."""

    removed: np.ndarray  # bool per paragraph: seen before (only those of documents document-level dedup kept)
    dropped: np.ndarray  # bool per document: kept by document-level dedup, dropped for its share of removed text
    fresh: np.ndarray  # bool per keyed paragraph: its key is one this WARC makes seen (the index takes it)
    decided: int  # paragraphs of the documents document-level dedup kept (those this decision looked at)


class RoundParagraphs:
    """The paragraph decisions of a round of WARCs (in manifest order) at the head: one question per shard for all
    the round's keyed paragraphs (:meth:`asked`, with the WARCs' document keys; answered by the shards'
    :meth:`~raycorpus.process.dedup.index.LshShard.seen`: the keys the index holds or the round repeats, each with its
    previous occurrence in the round), then each WARC decided in turn (:meth:`decide`) once document-level dedup has
    decided it. A keyed paragraph of a kept document is removed when the index knows its key or an earlier occurrence
    in the round (following the previous occurrences back) is in a kept document. The head sorts nothing, and
    beyond a few passes over a WARC's paragraphs it works only on the keys the shards listed (the known and repeated
    ones, and the occurrences those name). A shard keeps the keys it was asked about until the WARC is decided and
    takes the new ones from bits (:meth:`taken`): the keys cross from the head once."""

    def __init__(self, batches: Sequence[Paragraphs], route, n_shards: int, threshold: float):
        self.batches, self.threshold = list(batches), threshold
        self.keyed = [np.flatnonzero(b.keys) for b in self.batches]  # each WARC's keyed paragraphs (rows)
        self.bounds = np.concatenate([[0], np.cumsum([k.size for k in self.keyed])]).astype(np.int64)
        keys = [b.keys[k] for b, k in zip(self.batches, self.keyed, strict=True)]
        self.flat = np.concatenate(keys) if keys else np.zeros(0, np.uint64)
        split = ShardSplit.of(route(self.flat), n_shards)
        self.parts, self.positions = split.parts(self.flat), split.positions()
        self.slices = [self.bounds if at is None else np.searchsorted(at, self.bounds) for at in self.positions]
        # the listed rows and the occurrences they name (round positions, ascending), each one's answer (known, its
        # previous occurrence as an index into ``wanted``) and, once decided, its anchor: the last occurrence of the
        # key at or before it in a kept document (an index into ``wanted``; -1: none)
        self.wanted = np.zeros(0, np.int64)
        self.known, self.previous = np.zeros(0, bool), np.zeros(0, np.int64)
        self.anchor = np.zeros(0, np.int64)

    def asked(self, w: int) -> list[np.ndarray]:
        """Per shard, WARC ``w``'s keys it holds (in order): the shard keeps them for :meth:`taken`."""
        return [part[at[w] : at[w + 1]] for part, at in zip(self.parts, self.slices, strict=True)]

    def taken(self, w: int, fresh: np.ndarray) -> list[np.ndarray]:
        """Per shard, which of WARC ``w``'s keys it was asked about are new (``fresh``: a bool per keyed paragraph of
        the WARC, :attr:`ParagraphVerdict.fresh`), as bits: the keys do not cross from the head a second time."""
        a = self.bounds[w]
        return [np.packbits(fresh if at is None else fresh[at[cut[w] : cut[w + 1]] - a])
                for at, cut in zip(self.positions, self.slices, strict=True)]

    def answers(self, hits: list) -> None:
        """The shards' :class:`~raycorpus.process.dedup.arrays.ParagraphHits` for the keys :meth:`asked` gave them."""
        rows, previous = [], []
        for h, at in zip(hits, self.positions, strict=True):  # (shard positions -> round positions)
            at = None if at is None else at.astype(np.int64)
            rows.append(h.rows if at is None else at[h.rows])
            previous.append(h.previous if at is None else np.where(h.previous >= 0, at[np.maximum(h.previous, 0)], -1))
        rows, previous = np.concatenate(rows), np.concatenate(previous)
        known = np.concatenate([h.known for h in hits])
        mark = np.zeros(self.flat.size, bool)
        mark[rows] = True
        mark[previous[previous >= 0]] = True
        self.wanted = np.flatnonzero(mark)
        index_of = np.cumsum(mark, dtype=np.int32) - 1  # (a round position's index in ``wanted``)
        at = index_of[rows]
        self.known = np.zeros(self.wanted.size, bool)
        self.known[at] = known
        self.previous = np.full(self.wanted.size, -1, np.int64)
        self.previous[at] = np.where(previous >= 0, index_of[np.maximum(previous, 0)], -1)
        self.anchor = np.full(self.wanted.size, -1, np.int64)

    def decide(self, w: int, kept: np.ndarray) -> ParagraphVerdict:
        """WARC ``w`` of the round, given which of its documents document-level dedup kept (a bool each)."""
        p, keyed, a = self.batches[w], self.keyed[w], self.bounds[w]
        lo, hi = np.searchsorted(self.wanted, (a, self.bounds[w + 1]))
        listed = self.wanted[lo:hi] - a  # (the WARC's listed keyed paragraphs)
        rows = keyed[listed]
        doc = p.docs_at(rows)
        mine = kept[doc]
        self.anchor[lo:hi] = self._anchors(lo, hi, mine)
        before = self.previous[lo:hi]
        earlier = (before >= 0) & (self.anchor[np.maximum(before, 0)] >= 0)
        gone = mine & (self.known[lo:hi] | earlier)
        removed = np.zeros(p.keys.size, bool)
        removed[rows[gone]] = True
        fresh = np.repeat(kept, np.diff(np.searchsorted(keyed, p.bounds)))  # keyed paragraphs of kept documents
        fresh[listed[gone]] = False
        share = p.shares(rows[gone], doc[gone])
        return ParagraphVerdict(removed, np.asarray(kept, bool) & dropped(share, self.threshold), fresh,
                                int(p.counts[kept].sum()))

    def _anchors(self, lo: int, hi: int, kept: np.ndarray) -> np.ndarray:
        """The anchors of ``wanted[lo:hi]`` (one WARC's listed rows; ``kept``: of kept documents): a kept row is its
        own, another the anchor of the key's previous occurrence. Pointer jumping inside the WARC, so a key repeated k
        times in it takes ~log2(k) turns; an earlier WARC's anchor is final."""
        out = np.where(kept, np.arange(lo, hi), -1)
        ptr = self.previous[lo:hi].copy()
        pending = ~kept & (ptr >= 0)
        todo = np.flatnonzero(pending)
        while todo.size:
            at = ptr[todo]
            gone = at < lo  # (an earlier WARC's row: its anchor is known)
            out[todo[gone]] = self.anchor[at[gone]]
            pending[todo[gone]] = False
            todo, q = todo[~gone], at[~gone] - lo
            ready = ~pending[q]
            out[todo[ready]] = out[q[ready]]
            pending[todo[ready]] = False
            todo, q = todo[~ready], q[~ready]
            ptr[todo] = ptr[q]  # (q's anchor is its previous occurrence's: jump there)
            none = ptr[todo] < 0
            pending[todo[none]] = False
            todo = todo[~none]
        return out


@dataclass(frozen=True)
class TokenCuts:
    """The token spans a WARC's placed documents lose (their removed paragraphs): one row per span, by the
    document's position among the WARC's decided documents and the span's token offsets within the document."""

    doc: np.ndarray  # int64
    start: np.ndarray  # int64
    stop: np.ndarray  # int64

    @classmethod
    def of(cls, paragraphs: Paragraphs, removed: np.ndarray, keep: np.ndarray) -> TokenCuts:
        """The removed paragraphs of the documents ``keep`` marks (``paragraphs.tokens`` says where they are)."""
        rows = np.flatnonzero(removed)
        first = paragraphs.first
        doc = paragraphs.docs_at(rows)
        rows, doc = rows[keep[doc]], doc[keep[doc]]
        ends = np.zeros(paragraphs.keys.size + 1, np.int64)
        if rows.size:
            np.cumsum(paragraphs.tokens, out=ends[1:])
        start = ends[rows] - ends[first[doc]]  # offset within its document
        return cls(doc.astype(np.int64), start, ends[rows + 1] - ends[first[doc]])

    def __len__(self) -> int:
        return int(self.doc.size)

    def removed_per_doc(self, n: int) -> np.ndarray:
        """Tokens each of ``n`` documents loses."""
        return np.bincount(self.doc, weights=self.stop - self.start, minlength=n).astype(np.int64)

    def in_file(self, first: int, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The cuts of the documents ``index`` of a staged file (sorted positions in the file; ``first``: the file's
        first document in the WARC): each cut's place in ``index``, and its row ``[position in the file, start,
        stop]`` (int64, in order)."""
        local = self.doc - first
        if not index.size:
            return np.zeros(0, np.int64), np.zeros((0, 3), np.int64)
        at = np.searchsorted(index, local)
        hit = (at < index.size) & (index[np.minimum(at, index.size - 1)] == local)
        return at[hit], np.stack([local[hit], self.start[hit], self.stop[hit]], axis=1)
