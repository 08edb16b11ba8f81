"""Array helpers of the per-WARC dedup decision: keys split by shard in one step, and the documents of a WARC
that share a key with earlier documents of the same WARC. Ray-free."""

from __future__ import annotations

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
        small = route.astype(np.uint16) if n_shards <= 1 << 16 else route  # a radix sort
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
    """One shard's part of a WARC's keys, and where each came from: a shard keeps the last it was asked, so that
    once the WARC is decided it inserts the taken documents' keys from it (:class:`Taken`) and the keys cross
    from the head to the shard once."""

    exact: np.ndarray  # uint64: content keys, then URL keys
    bands: np.ndarray  # uint64
    exact_pos: np.ndarray | None  # each one's position among the WARC's content keys, then URL keys (None: all)
    band_pos: np.ndarray | None  # each one's position in the WARC's flattened ``(docs, bands)`` band keys (None: all)
    contents: int  # the WARC's content keys (0: exact dedup off): URL key positions follow them


@dataclass(frozen=True)
class Taken:
    """What the index took of a decided WARC, as one shard needs it beside its :class:`Asked` keys: a bit per
    document, and the stored signatures of the taken documents the shard owns (``docno % shards``)."""

    first: int  # the docno of the WARC's first taken document (the others follow in row order)
    n: int  # the WARC's decided documents
    index: np.ndarray  # np.packbits: the document is taken (indexed)
    keyed: np.ndarray  # np.packbits: it inserts its content and URL keys (not an indexed near duplicate)
    own_sigs: np.ndarray | None

    @classmethod
    def of(cls, first: int, index: np.ndarray, keyed: np.ndarray, own_sigs: np.ndarray | None) -> Taken:
        return cls(first, index.size, np.packbits(index), np.packbits(keyed), own_sigs)

    def rows(self) -> tuple[np.ndarray, np.ndarray]:
        """(taken, keyed): one bool per document."""
        return (np.unpackbits(self.index, count=self.n).view(bool),
                np.unpackbits(self.keyed, count=self.n).view(bool))

    def docnos(self, taken: np.ndarray) -> np.ndarray:
        """uint32 per document: its docno, or NOT_TAKEN."""
        out = np.full(self.n, NOT_TAKEN, np.uint32)
        out[taken] = self.first + np.arange(int(taken.sum()), dtype=np.uint64)
        return out


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
