"""A round: several WARCs decided with one query per LSH shard. Ray-free.

A WARC decided alone finds, for each key the index lacked before it, the first document an earlier WARC inserted
with that key (the tables keep the first writer). In a round the shards are asked about every WARC's keys before
any of them is decided, and they take the round's documents only after it: so the head plays the tables' part for
the keys that several WARCs of the round hold (:class:`Repeats`, which the shards find), and for the documents
those name. Every decision is the one the WARC would get alone (``tests/process/test_dedup_rounds.py``).
"""

from __future__ import annotations

import numpy as np

from raycorpus.process.dedup.arrays import KnownDocuments, Repeats, numbered
from raycorpus.process.dedup.lsh import NO_MATCH


class RoundOverlay:
    """What the round's decided WARCs inserted that its later WARCs look up: the first docno per repeated key (first
    writer wins, as in the tables), and the taken documents' gids and stored signatures."""

    def __init__(self, exact: Repeats, bands: Repeats, n_bands: int):
        self.exact, self.bands, self.n_bands = exact, bands, max(1, n_bands)
        self.first_exact = np.full(exact.groups, NO_MATCH, np.uint64)
        self.first_band = np.full(bands.groups, NO_MATCH, np.uint64)
        self._firsts: list[int] = []  # per WARC that took documents: its first docno,
        self._taken: list[np.ndarray] = []  # the rows it took,
        self._gids: list[np.ndarray] = []  # its gids (every row),
        self._stored: list[np.ndarray | None] = []  # its stored signatures (every row)

    def lookup(self, w: int, exact: np.ndarray, bands: np.ndarray) -> np.ndarray:
        """Fill in WARC ``w``'s answers (flat exact and band keys, NO_MATCH where the index lacked the key) from
        the round's earlier WARCs, in place; return the docnos that names (sorted, distinct)."""
        named = []
        for rep, first, prior in ((self.exact, self.first_exact, exact), (self.bands, self.first_band, bands)):
            sel = rep.warc == w
            if not sel.any():
                continue
            found = first[rep.group[sel]]
            hit = found != NO_MATCH
            prior[rep.pos[sel][hit]] = found[hit]
            named.append(found[hit])
        return np.unique(np.concatenate(named)) if named else np.zeros(0, np.uint64)

    def take(self, w: int, first: int, index: np.ndarray, keyed: np.ndarray, contents: int, gids: np.ndarray,
             stored: np.ndarray | None) -> None:
        """WARC ``w`` is decided: its taken documents (``index``, numbered from ``first``) insert their keys (content
        and URL keys only where ``keyed``; URL key positions follow the ``contents`` content keys)."""
        docnos = numbered(first, index)
        sel = self.exact.warc == w
        if sel.any():
            pos = self.exact.pos[sel].astype(np.int64)
            doc = np.where(pos >= contents, pos - contents, pos)
            ok = index[doc] & keyed[doc]
            _first_writer(self.first_exact, self.exact.group[sel][ok], docnos[doc[ok]])
        sel = self.bands.warc == w
        if sel.any():
            doc = self.bands.pos[sel].astype(np.int64) // self.n_bands
            ok = index[doc]
            _first_writer(self.first_band, self.bands.group[sel][ok], docnos[doc[ok]])
        if index.any():
            self._firsts.append(first)
            self._taken.append(np.flatnonzero(index))
            self._gids.append(gids)
            self._stored.append(stored)

    def known(self, table: KnownDocuments, named: np.ndarray) -> KnownDocuments:
        """``table`` (the indexed documents before the round) with the round's documents ``named`` (sorted)."""
        if not named.size:
            return table
        at = np.searchsorted(np.asarray(self._firsts, np.uint64), named, "right") - 1
        gids = np.empty(named.size, np.uint64)
        sigs = None
        for w in np.unique(at):
            mine = at == w
            rows = self._taken[w][(named[mine] - np.uint64(self._firsts[w])).astype(np.intp)]
            gids[mine] = self._gids[w][rows]
            if self._stored[w] is not None:
                if sigs is None:
                    sigs = np.empty((named.size, *self._stored[w].shape[1:]), self._stored[w].dtype)
                sigs[mine] = self._stored[w][rows]
        if sigs is not None and table.sigs is not None:
            sigs = np.concatenate([table.sigs, sigs])
        elif sigs is not None and table.docnos.size:  # (the table's documents carry no signatures: none to verify)
            sigs = None
        return KnownDocuments(np.concatenate([table.docnos, named]), np.concatenate([table.gids, gids]), sigs)


def _first_writer(first: np.ndarray, groups: np.ndarray, docnos: np.ndarray) -> None:
    """Each group's first docno (occurrences in insert order), unless an earlier one is set."""
    if not groups.size:
        return
    g, i = np.unique(groups, return_index=True)
    first[g] = np.where(first[g] == NO_MATCH, docnos[i], first[g])
