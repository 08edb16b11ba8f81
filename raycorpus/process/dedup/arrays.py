"""Array helpers of the per-WARC dedup decision: keys split by shard in one step, and the documents of a WARC
that share a key with earlier documents of the same WARC. Ray-free."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from raycorpus.process.dedup.lsh import NO_MATCH


@dataclass(frozen=True)
class ShardSplit:
    """An array's items grouped by the shard each is routed to (a stable sort: each shard's items keep their
    order), so a WARC's keys go to their shards in one vectorised step and the answers come back in place."""

    order: np.ndarray | None  # positions by shard (None: one shard, nothing moves)
    bounds: np.ndarray  # shard s holds order[bounds[s]:bounds[s + 1]]

    @classmethod
    def of(cls, route: np.ndarray, n_shards: int) -> ShardSplit:
        if n_shards == 1:
            return cls(None, np.array([0, route.size]))
        small = route.astype(np.uint16) if route.dtype.itemsize > 2 and n_shards <= 1 << 16 else route  # (radix)
        order = np.argsort(small, kind="stable")
        return cls(order, np.concatenate([[0], np.cumsum(np.bincount(route, minlength=n_shards))]))

    def parts(self, a: np.ndarray) -> list[np.ndarray]:
        """``a`` (aligned with the routed items) cut into one array per shard."""
        if self.order is None:
            return [a]
        moved = a[self.order]
        return [moved[self.bounds[s] : self.bounds[s + 1]] for s in range(self.bounds.size - 1)]

    def positions(self) -> list[np.ndarray | None]:
        """Per shard, the positions of its items among all (None: one shard, all of them in order)."""
        if self.order is None:
            return [None]
        order = self.order.astype(np.uint32)  # (a WARC has far fewer keys than 2**32)
        return [order[self.bounds[s] : self.bounds[s + 1]] for s in range(self.bounds.size - 1)]

    def join(self, parts: list[np.ndarray], dtype=np.uint64) -> np.ndarray:
        """The shards' answers (one per item, in :meth:`parts` order) back in the items' order."""
        if self.order is None:
            return np.asarray(parts[0], dtype)
        joined = np.concatenate(parts)
        out = np.empty(joined.shape, dtype)
        out[self.order] = joined
        return out


NOT_TAKEN = np.uint32(2**32 - 1)  # a document the index did not take (docnos are below it)


@dataclass(frozen=True)
class Asked:
    """One shard's part of a WARC's keys, and where each came from: a shard keeps them until the WARC is decided,
    then inserts the taken documents' keys from them (:class:`Taken`), so the keys cross from the head to the
    shard once."""

    ordinal: int  # the WARC's
    exact: np.ndarray  # uint64: content keys, then URL keys
    bands: np.ndarray  # uint64
    exact_pos: np.ndarray | None  # each one's position among the WARC's content keys, then URL keys (None: all)
    band_pos: np.ndarray | None  # each one's position in the WARC's flattened ``(docs, bands)`` band keys (None: all)
    contents: int  # the WARC's content keys (0: exact dedup off): URL key positions follow them
    paragraphs: np.ndarray | None = None  # dedup.paragraphs: the WARC's paragraph keys routed here (uint64, in order)


def group_starts(sorted_keys: np.ndarray) -> np.ndarray:
    """Where each run of equal values of ``sorted_keys`` (non-empty) begins: ``[3, 3, 5, 7, 7] -> [0, 2, 3]``."""
    new = np.empty(sorted_keys.size, bool)
    new[0] = True
    np.not_equal(sorted_keys[1:], sorted_keys[:-1], out=new[1:])
    return np.flatnonzero(new)


def numbered(first: int, taken: np.ndarray) -> np.ndarray:
    """uint32 per document of a WARC: the docno of each ``taken`` one (in row order from ``first``), else NOT_TAKEN."""
    out = np.full(taken.size, NOT_TAKEN, np.uint32)
    out[taken] = first + np.arange(int(taken.sum()), dtype=np.uint64)
    return out


@dataclass(frozen=True)
class Taken:
    """What the index took of a decided WARC, as one shard needs it beside its :class:`Asked` keys: a bit per
    document, and the stored signatures of the taken documents the shard owns (``docno % shards``)."""

    first: int  # the docno of the WARC's first taken document (the others follow in row order)
    n: int  # the WARC's decided documents
    index: np.ndarray  # np.packbits: the document is taken (indexed)
    keyed: np.ndarray  # np.packbits: it inserts its content and URL keys (not an indexed near duplicate)
    own_sigs: np.ndarray | None
    paragraphs: np.ndarray | None = None  # dedup.paragraphs, np.packbits: which of its asked paragraph keys are new

    @classmethod
    def of(cls, first: int, index: np.ndarray, keyed: np.ndarray, own_sigs: np.ndarray | None,
           paragraphs: np.ndarray | None = None) -> Taken:
        return cls(first, index.size, np.packbits(index), np.packbits(keyed), own_sigs, paragraphs)

    def rows(self) -> tuple[np.ndarray, np.ndarray]:
        """(taken, keyed): one bool per document."""
        return (np.unpackbits(self.index, count=self.n).view(bool),
                np.unpackbits(self.keyed, count=self.n).view(bool))

    def docnos(self, taken: np.ndarray) -> np.ndarray:
        """uint32 per document: its docno, or NOT_TAKEN."""
        return numbered(self.first, taken)


@dataclass(frozen=True)
class Hits:
    """A shard's answer for a list of keys: the positions of those it holds and the docno each names (most of a
    WARC's keys are new: the answer is small, as it crosses from a shard actor to the head)."""

    pos: np.ndarray  # uint32
    docnos: np.ndarray  # uint32 (docnos are below 2**32 - 1)

    @classmethod
    def of(cls, answer: np.ndarray) -> Hits:
        """From one docno or NO_MATCH per key."""
        pos = np.flatnonzero(answer != NO_MATCH)
        return cls(pos.astype(np.uint32), answer[pos].astype(np.uint32))

    def expand(self, size: int) -> np.ndarray:
        """One docno or NO_MATCH per key of the ``size`` asked."""
        out = np.full(size, NO_MATCH, np.uint64)
        out[self.pos] = self.docnos
        return out


@dataclass(frozen=True)
class Repeats:
    """The keys of a round (several WARCs asked in one call) that the index does not hold and that occur in more
    than one of its WARCs: each occurrence's WARC (its place in the round), its position among that WARC's keys
    (as :class:`Asked` counts them) and its key's group, ordered by group, then WARC, then position. An earlier
    WARC of the round inserts such a key before a later one looks it up: the head plays that part
    (:class:`raycorpus.process.dedup.rounds.RoundOverlay`)."""

    warc: np.ndarray  # uint16
    pos: np.ndarray  # uint32
    group: np.ndarray  # int64

    @classmethod
    def none(cls) -> Repeats:
        return cls(np.zeros(0, np.uint16), np.zeros(0, np.uint32), np.zeros(0, np.int64))

    @property
    def groups(self) -> int:
        return int(self.group[-1]) + 1 if self.group.size else 0

    @classmethod
    def of(cls, keys: np.ndarray, warc: np.ndarray, pos: np.ndarray) -> Repeats:
        """From keys in (WARC, position) order, each with its WARC and position."""
        if keys.size < 2 or warc[0] == warc[-1]:
            return cls.none()
        maybe = _maybe_repeated(keys)  # (the stable sort below costs ~7x a plain one: it sorts only these)
        keys, warc, pos = keys[maybe], warc[maybe], pos[maybe]
        if keys.size < 2:
            return cls.none()
        order = np.argsort(keys, kind="stable")  # by key, then (WARC, position)
        sk, sw = keys[order], warc[order]
        new = np.r_[True, sk[1:] != sk[:-1]]
        starts = np.flatnonzero(new)
        ends = np.r_[starts[1:], sk.size] - 1
        spans = sw[starts] != sw[ends]  # the group's first and last occurrences are in different WARCs
        if not spans.any():
            return cls.none()
        sizes = (ends - starts + 1)[spans]
        offsets = np.arange(int(sizes.sum())) - np.repeat(np.cumsum(sizes) - sizes, sizes)
        at = np.repeat(starts[spans], sizes) + offsets
        chosen = order[at]
        return cls(warc[chosen].astype(np.uint16), pos[chosen].astype(np.uint32),
                   np.repeat(np.arange(sizes.size, dtype=np.int64), sizes))

    @classmethod
    def join(cls, parts: Sequence[Repeats]) -> Repeats:
        """Several shards' repeats as one (their groups numbered apart: a key lives in one shard)."""
        parts = [p for p in parts if p.group.size]
        if not parts:
            return cls.none()
        offsets = np.cumsum([0] + [p.groups for p in parts[:-1]])
        return cls(np.concatenate([p.warc for p in parts]), np.concatenate([p.pos for p in parts]),
                   np.concatenate([p.group + o for p, o in zip(parts, offsets, strict=True)]))


_PREFIX_BITS = 22  # a 4 MiB map of the repeated keys' top bits


def _maybe_repeated(keys: np.ndarray) -> np.ndarray:
    """The positions (ascending) of every key that occurs more than once, and of a few that do not (those whose top
    ``_PREFIX_BITS`` bits a repeated key has): found with a plain sort of the keys and a map of those bits."""
    s = np.sort(keys)
    twice = s[1:][s[1:] == s[:-1]]
    if not twice.size:
        return np.zeros(0, np.intp)
    shift = np.uint64(64 - _PREFIX_BITS)
    mark = np.zeros(1 << _PREFIX_BITS, bool)
    mark[twice >> shift] = True
    return np.flatnonzero(mark[keys >> shift])


@dataclass(frozen=True)
class ParagraphHits:
    """A shard's answer for a round's paragraph keys routed to it (in manifest order), sparse: the asked keys that the
    index holds or that were asked before in the round (the others, most of them, are new and not listed), each with
    whether the index holds it and the position of the previous asked key equal to it (-1: none), so that the head
    follows a key's occurrences in the round without sorting the keys itself."""

    rows: np.ndarray  # int64 positions among the asked keys, ascending
    known: np.ndarray  # bool per row
    previous: np.ndarray  # int64 per row

    @classmethod
    def of(cls, keys: np.ndarray, contains) -> ParagraphHits:
        """The answer for ``keys`` from ``contains`` (a bool per key of a sorted array: the index holds it), asked
        in sorted order (a sorted lookup walks the index's array once)."""
        order = np.argsort(keys, kind="stable")
        ranked = keys[order]
        known = contains(ranked)
        again = np.zeros(keys.size, bool)
        np.equal(ranked[1:], ranked[:-1], out=again[1:])  # (stable: equal keys in asked order)
        at = np.flatnonzero(known | again)
        previous = np.where(again[at], order[at - 1], -1)
        rows = order[at]
        by_row = np.argsort(rows)
        return cls(rows[by_row].astype(np.int64, copy=False), known[at][by_row],
                   previous[by_row].astype(np.int64, copy=False))


@dataclass(frozen=True)
class RoundHits:
    """A shard's answer for a round: per WARC its :class:`Hits` (content and URL keys, band keys), and the keys
    repeated across the round's WARCs (:class:`Repeats`), exact and band."""

    hits: Sequence[tuple[Hits, Hits]]  # (a Stacked: crosses from the shard in a few buffers)
    exact: Repeats
    bands: Repeats
    paragraphs: ParagraphHits | None = None  # with dedup.paragraphs: the answer for the round's paragraph keys


@dataclass(frozen=True)
class Earlier:
    """For each row (document) of a WARC, the earlier rows it shares a key with: ``rows[start[i]:end[i]]``,
    ascending."""

    start: np.ndarray
    end: np.ndarray
    rows: np.ndarray

    @property
    def any(self) -> np.ndarray:
        return self.end > self.start

    def of(self, i: int) -> np.ndarray:
        return self.rows[self.start[i] : self.end[i]]

    def pairs(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(row, earlier row) for each of ``rows`` (ascending) and each of its earlier rows, in that order."""
        lengths = self.end[rows] - self.start[rows]
        total = int(lengths.sum())
        if not total:  # (the usual case for a relation in a wave: nothing to pair, and cheap to say so)
            return rows[:0], self.rows[:0]
        firsts = np.cumsum(lengths) - lengths
        at = np.repeat(self.start[rows] - firsts, lengths) + np.arange(total)
        return np.repeat(rows, lengths), self.rows[at]

    @classmethod
    def none(cls, n: int) -> Earlier:
        zero = np.zeros(n, np.intp)
        return cls(zero, zero, zero[:0])

    @classmethod
    def of_keys(cls, keys: np.ndarray, valid: np.ndarray | None = None) -> Earlier:
        """One key per row (rows that are not ``valid`` share with none): a row's group of equal keys, up to it."""
        n = keys.size
        order = np.argsort(keys, kind="stable")
        sk = keys[order]
        new = np.ones(n, bool)
        new[1:] = sk[1:] != sk[:-1]
        group_start = np.maximum.accumulate(np.where(new, np.arange(n), 0))
        pos = np.empty(n, np.intp)
        pos[order] = np.arange(n)
        start = group_start[pos]
        end = pos if valid is None else np.where(valid, pos, start)
        return cls(start, end, order)

    @classmethod
    def of_columns(cls, keys: np.ndarray) -> Earlier:
        """Several keys per row (LSH bands): every (later, earlier) pair within each group of equal keys, then
        the distinct pairs."""
        n, b = keys.shape
        if n < 2 or b == 0:
            return cls.none(n)
        flat = keys.ravel()
        order = np.argsort(flat, kind="stable")  # by key, then row (rows are in order in the flattened array)
        sk, sr = flat[order], order // b
        distinct = np.ones(sk.size, bool)  # a row with one key in two columns counts once
        distinct[1:] = (sk[1:] != sk[:-1]) | (sr[1:] != sr[:-1])
        sk, sr = sk[distinct], sr[distinct]
        new_group = np.ones(sk.size, bool)
        new_group[1:] = sk[1:] != sk[:-1]
        if new_group.all():
            return cls.none(n)
        start = np.maximum.accumulate(np.where(new_group, np.arange(sk.size), 0))  # each position's group start
        before = np.arange(sk.size) - start  # how many earlier rows share its key
        later = np.flatnonzero(before)
        counts = before[later]
        first_pair = np.cumsum(counts) - counts
        earlier = np.repeat(start[later], counts) + (np.arange(int(counts.sum())) - np.repeat(first_pair, counts))
        pairs = np.unique(sr[np.repeat(later, counts)].astype(np.int64) * n + sr[earlier])
        i, j = pairs // n, pairs % n
        rows = np.arange(n)
        return cls(np.searchsorted(i, rows, "left"), np.searchsorted(i, rows, "right"), j.astype(np.intp))


@dataclass(frozen=True)
class WithinWarc:
    """The documents of one WARC that share a URL key, a content key or a band key with earlier ones."""

    url: Earlier
    exact: Earlier
    band: Earlier

    @classmethod
    def of(cls, ek: np.ndarray, uk: np.ndarray, keys: np.ndarray, no_url: np.uint64 = NO_MATCH) -> WithinWarc:
        """From a WARC's content keys, URL keys (``no_url``: none) and ``(n, bands)`` band keys (empty arrays
        where that kind of dedup is off)."""
        n = keys.shape[0]
        return cls(Earlier.of_keys(uk, uk != no_url) if uk.size else Earlier.none(n),
                   Earlier.of_keys(ek) if ek.size else Earlier.none(n),
                   Earlier.of_columns(keys) if keys.shape[1] else Earlier.none(n))


@dataclass(frozen=True)
class WarcKeys:
    """A WARC's keys as the decision uses them, computed where the WARC was processed (a worker), so the head
    only routes them: content keys and URL keys (empty where that dedup is off), ``(n, bands)`` band keys
    (``(n, 0)`` without near dedup), and which documents share one with earlier documents of the WARC."""

    exact: np.ndarray
    url: np.ndarray
    bands: np.ndarray
    within: WithinWarc


@dataclass(frozen=True)
class KnownDocuments:
    """The indexed documents a WARC's keys named, by docno: their gids and stored signatures."""

    docnos: np.ndarray  # sorted
    gids: np.ndarray
    sigs: np.ndarray | None

    def gid(self, docnos: np.ndarray) -> np.ndarray:
        return self.gids[np.searchsorted(self.docnos, docnos)]

    def sig(self, docnos: np.ndarray) -> np.ndarray | None:
        return None if self.sigs is None else self.sigs[np.searchsorted(self.docnos, docnos)]


class Stacked(Sequence):
    """A list of like items (dataclasses or tuples of arrays, numbers, None) that pickles column by column: each
    array field concatenated over the items, once. A round's requests and answers cross between the head and an
    LSH shard actor as a few buffers per shard instead of a few per WARC and shard: Ray serializes each buffer of a
    message apart, so a message of 16 WARCs' parts cost the head a call's worth per WARC and shard. In-process it
    is the list itself (nothing is copied); unpickled, its arrays are views into the concatenated ones."""

    def __init__(self, items: Sequence):
        self._items = list(items)

    def __getitem__(self, i):
        return self._items[i]

    def __len__(self) -> int:
        return len(self._items)

    def __getstate__(self) -> tuple:
        return (len(self._items), _column(self._items) if self._items else None)

    def __setstate__(self, state: tuple) -> None:
        n, column = state
        self._items = _items(column) if n else []


def _column(values: list) -> tuple:
    """One field over the items: ``("a", concatenated, lengths)`` for arrays of one dtype and row shape,
    ``("d", class, columns)`` / ``("t", columns)`` for dataclasses / tuples of one shape, else ``("l", values)``."""
    first = values[0]
    if isinstance(first, np.ndarray) and first.ndim and all(
            isinstance(v, np.ndarray) and v.dtype == first.dtype and v.ndim and v.shape[1:] == first.shape[1:]
            for v in values):
        return "a", np.concatenate(values), np.fromiter((v.shape[0] for v in values), np.int64, len(values))
    if dataclasses.is_dataclass(first) and not isinstance(first, type) and all(type(v) is type(first) for v in values):
        return "d", type(first), [_column([getattr(v, f.name) for v in values]) for f in dataclasses.fields(first)]
    if type(first) is tuple and all(type(v) is tuple and len(v) == len(first) for v in values):
        return "t", [_column([v[i] for v in values]) for i in range(len(first))]
    return "l", values


def _items(column: tuple) -> list:
    """The items' values of one field, from its :func:`_column`."""
    kind = column[0]
    if kind == "a":
        return np.split(column[1], np.cumsum(column[2])[:-1])
    if kind == "d":
        return [column[1](*fields) for fields in zip(*(_items(c) for c in column[2]), strict=True)]
    if kind == "t":
        return list(zip(*(_items(c) for c in column[1]), strict=True))
    return column[1]
