"""Duplicate clusters for rehydration: which kept document each dropped duplicate names, and the size of each
kept document's cluster over the whole build. Ray-free.

Every document dedup drops names the earlier document it duplicates (``Decision.dup_of``): a URL or exact
duplicate names a kept document (only kept documents insert URL keys and content hashes), a near duplicate an
indexed one, which with ``dedup.index_dups`` may itself be a near duplicate. Following those links to a kept
document gives each duplicate its cluster's kept document; a kept document's **cluster size** is one plus the
duplicates that reach it. FineWeb-2 keeps the same figure (``minhash_cluster_size``, near duplicates only) and
upsamples by it ("rehydration", :data:`FINEWEB2_WEIGHTS`).

The links of each committed WARC are durable beside its dedup rows (:mod:`raycorpus.process.dedup.records`),
so the sizes come out the same whatever the worker count, rounds or restarts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from raycorpus.process.dedup.index import GID_BITS, KEEP, PARAGRAPHS, Decision
from raycorpus.process.dedup.prior import is_prior

# FineWeb-2's upsampling weights by cluster size (huggingface/fineweb-2, README.md, "Deduplication", commit
# 7bdf8fc): a size at or above each limit, below the next, gives the document that many times.
FINEWEB2_WEIGHTS: dict[int, int] = {1: 1, 2: 2, 3: 3, 5: 5, 100: 8, 1000: 1}


@dataclass(frozen=True)
class DupLinks:
    """A WARC's dropped duplicates: their positions among its decided documents (their gids' index) and the
    gid each names (an earlier output's, with ``dedup.against``)."""

    rows: np.ndarray  # uint32
    dup_of: np.ndarray  # uint64

    @classmethod
    def of(cls, decision: Decision) -> DupLinks:
        kind, dup_of = decision.kind, decision.dup_of
        if decision.eligible is not None:  # (tag mode: over the documents that took part)
            kind, dup_of = kind[decision.eligible], dup_of[decision.eligible]
        rows = np.flatnonzero((kind != KEEP) & (kind != PARAGRAPHS))  # (dropped for paragraphs: no duplicate of one)
        return cls(rows.astype(np.uint32), np.asarray(dup_of[rows], np.uint64))

    def __len__(self) -> int:
        return int(self.rows.size)

    def gids(self, ordinal: int) -> np.ndarray:
        return (np.uint64(ordinal) << np.uint64(GID_BITS)) | self.rows.astype(np.uint64)


@dataclass(frozen=True)
class Links:
    """Every dropped duplicate of a build (``children``, sorted) and the gid each names (``parents``)."""

    children: np.ndarray  # uint64
    parents: np.ndarray  # uint64

    @classmethod
    def of(cls, children: np.ndarray, parents: np.ndarray) -> Links:
        children, parents = np.asarray(children, np.uint64), np.asarray(parents, np.uint64)
        order = np.argsort(children, kind="stable")
        return cls(children[order], parents[order])

    def roots(self, gids: np.ndarray) -> np.ndarray:
        """Each of ``gids`` followed through the links to a document that was not dropped (a near duplicate may
        name an indexed near duplicate)."""
        roots = np.asarray(gids, np.uint64).copy()
        todo = np.arange(roots.size)  # (the ones that may still name a dropped document)
        for _ in range(65 if self.children.size else 0):
            at = np.minimum(np.searchsorted(self.children, roots[todo]), self.children.size - 1)
            inner = self.children[at] == roots[todo]
            if not inner.any():
                return roots
            todo = todo[inner]
            roots[todo] = self.parents[at[inner]]
        if todo.size and self.children.size:
            raise ValueError("duplicate links form a chain longer than 64: the dedup records are inconsistent")
        return roots


@dataclass(frozen=True)
class Clusters:
    """Kept documents that have duplicates (sorted gids) and how many reach each: this build's (``roots``) and,
    with ``dedup.against``, the earlier outputs' (``prior_roots``, gids tagged with their output)."""

    roots: np.ndarray  # uint64, sorted
    dups: np.ndarray  # int64 duplicates per root
    prior_roots: np.ndarray  # uint64, sorted
    prior_dups: np.ndarray  # int64

    @classmethod
    def of(cls, links: Links, named: np.ndarray | None = None) -> Clusters:
        """The clusters the duplicates of ``links`` form (or, given, the documents ``named`` form: one duplicate
        each, followed through ``links``)."""
        roots = links.roots(links.parents if named is None else named)
        prior = is_prior(roots)
        kept, counts = np.unique(roots[~prior], return_counts=True)
        earlier, earlier_counts = np.unique(roots[prior], return_counts=True)
        return cls(kept, counts.astype(np.int64), earlier, earlier_counts.astype(np.int64))

    @property
    def prior(self) -> int:
        """Duplicates whose cluster's kept document is an earlier output's."""
        return int(self.prior_dups.sum())

    def sizes(self, gids: np.ndarray) -> np.ndarray:
        """The cluster size (1 + its duplicates) of each kept document ``gids``."""
        gids = np.asarray(gids, np.uint64)
        out = np.ones(gids.size, np.uint32)
        if self.roots.size and gids.size:
            at = np.minimum(np.searchsorted(self.roots, gids), self.roots.size - 1)
            hit = self.roots[at] == gids
            out[hit] += self.dups[at[hit]].astype(np.uint32)
        return out


def upsampling(sizes: np.ndarray, weights: dict[int, int] | None = None) -> np.ndarray:
    """How many times each document is given, by its cluster size (FineWeb-2's weights by default): the weight
    of the largest limit at or below the size."""
    weights = FINEWEB2_WEIGHTS if weights is None else weights
    limits = np.array(sorted(weights), np.int64)
    values = np.array([weights[k] for k in sorted(weights)], np.int64)
    sizes = np.asarray(sizes, np.int64)
    if sizes.size and sizes.min() < limits[0]:
        raise ValueError(f"a cluster size below {limits[0]}, the weights' first limit")
    return values[np.searchsorted(limits, sizes, side="right") - 1]

