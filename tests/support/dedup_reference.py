"""The dedup decision as it was taken one document at a time (raycorpus before the per-WARC commit path), kept
as the reference that the vectorised :class:`raycorpus.process.dedup.index.Deduplicator` must agree with."""

from __future__ import annotations

import numpy as np

from raycorpus.process.dedup.arrays import Asked
from raycorpus.process.dedup.index import (
    EXACT,
    KEEP,
    NEAR,
    NO_MATCH,
    NO_URL,
    PRIOR,
    URL,
    Decision,
    Deduplicator,
    IndexRecord,
    encode_record,
    make_gids,
)
from raycorpus.process.dedup.prior import is_prior


class ReferenceDeduplicator(Deduplicator):
    """The per-document decision; inserts through the same :meth:`Deduplicator._insert`."""

    def decide(self, ordinal: int, hashes: np.ndarray, sigs: np.ndarray | None,
               urls: np.ndarray | None = None) -> tuple[Decision, bytes]:
        """Decide, insert what is kept, and return (decision, durable record of the inserted documents).

        Per document, in record order, against the indexed documents and this WARC's earlier kept ones:
        the same URL key makes it a URL duplicate; else the same content hash an exact duplicate; else a
        (verified) shared band a near duplicate. Only kept documents insert their keys."""
        lay = self.layout
        n = len(hashes)
        gids = make_gids(ordinal, n)
        kind = np.zeros(n, np.uint8)
        dup_of = np.full(n, NO_MATCH, np.uint64)
        jac = np.zeros(n, np.float32)
        verified = np.full(n, np.nan, np.float32)
        hashes = np.asarray(hashes, np.uint64)
        urls = np.asarray(urls, np.uint64) if lay.url and urls is not None else None
        if n == 0:
            none = np.zeros(0, bool) if lay.index_dups else None
            record = encode_record(IndexRecord(gids, hashes, sigs, urls, none))
            return Decision(kind, dup_of, jac, 0, None, verified), record
        near = lay.near and sigs is not None
        ek, uk = lay.exact_keys(hashes, urls)
        keys = lay.keys(sigs) if near else np.empty((n, 0), np.uint64)
        stored = lay.stored(sigs) if near else None
        prior_exact, prior_url, prior_band = self._query(ordinal, ek, uk, keys)
        has_prior = (prior_exact != NO_MATCH) | (prior_url != NO_MATCH)
        if near:
            has_prior |= (prior_band != NO_MATCH).any(axis=1)
        prior_gid, prior_sig = self._prior_documents(
            np.concatenate([prior_exact[has_prior], prior_url[has_prior]]), prior_band[has_prior])
        url_earlier = {i: e for i, e in _earlier_equal(uk[:, None]).items() if uk[i] != NO_URL} if uk.size else {}
        exact_earlier = _earlier_equal(ek[:, None]) if lay.exact else {}
        band_earlier = _earlier_equal(keys) if near else {}
        todo = set(np.flatnonzero(has_prior).tolist()) | set(url_earlier) | set(exact_earlier) | set(band_earlier)
        for i in sorted(todo):
            for code, prior, earlier in ((URL, prior_url, url_earlier), (EXACT, prior_exact, exact_earlier)):
                j = next((j for j in earlier.get(i, ()) if kind[j] == KEEP), None)  # URL / exact: kept ones only
                if prior[i] != NO_MATCH or j is not None:
                    match = prior_gid[int(prior[i])] if prior[i] != NO_MATCH else gids[j]
                    kind[i], dup_of[i], jac[i] = code, match, (1.0 if code == EXACT else np.nan)
                    break
            else:
                if not near:
                    continue
                # candidates in commit order: indexed documents first, then earlier indexed ones of this WARC
                cands = [(prior_gid[d], prior_sig.get(d))
                         for d in sorted({int(d) for d in prior_band[i] if d != NO_MATCH})]
                cands += [(int(gids[j]), stored[j]) for j in band_earlier.get(i, ()) if self._indexed(kind[j])]
                if cands:
                    kind[i], dup_of[i], jac[i], verified[i] = self._near_match(stored[i], cands)
        index = (kind == KEEP) | ((kind == NEAR) & lay.index_dups)
        dups = (kind == NEAR)[index]  # indexed near duplicates: band keys and sketch only
        n_kept, _ = self._insert(ordinal, index, dups, stored)
        kind[(kind != KEEP) & is_prior(dup_of)] += PRIOR  # the match is an earlier output's (after the index)
        record = IndexRecord(gids[index], hashes[index], sigs[index] if near else None,
                             None if urls is None else urls[index], dups if lay.index_dups else None)
        return Decision(kind, dup_of, jac, n_kept, None, verified), encode_record(record)

    def _indexed(self, kind: int) -> bool:
        """A document of this kind is in the index (a near candidate for the later ones)."""
        return kind == KEEP or (kind == NEAR and self.layout.index_dups)

    def _query(self, ordinal: int, ek: np.ndarray, uk: np.ndarray, keys: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The indexed document (docno) each content key, URL key and band key already names, or NO_MATCH
        (content and URL keys are both looked up in the exact table)."""
        lay, n_sh, n = self.layout, self.layout.n_shards, keys.shape[0]
        exact = np.concatenate([ek, uk])
        flat = keys.ravel()
        e_route, b_route = lay.route(exact), lay.route(flat)
        e_idx = [np.flatnonzero(e_route == s) for s in range(n_sh)]
        b_idx = [np.flatnonzero(b_route == s) for s in range(n_sh)]
        asked = [[Asked(ordinal, exact[e], flat[b], e, b, ek.size)] for e, b in zip(e_idx, b_idx, strict=True)]
        answers = [a.hits[0] for a in self.shards.query(asked)]
        prior = np.full(exact.size, NO_MATCH, np.uint64)
        prior_band = np.full(flat.size, NO_MATCH, np.uint64)
        for (ea, ba), e, b in zip(answers, e_idx, b_idx, strict=True):
            prior[e], prior_band[b] = ea.expand(e.size), ba.expand(b.size)
        none = np.full(n, NO_MATCH, np.uint64)
        prior_exact = prior[: ek.size] if ek.size else none
        prior_url = prior[ek.size :] if uk.size else none
        return prior_exact, prior_url, prior_band.reshape(keys.shape)

    def _prior_documents(self, exact: np.ndarray, band: np.ndarray) -> tuple[dict[int, int], dict[int, np.ndarray]]:
        """The earlier documents named: their gids (for dup_of) and signatures (to verify), by docno."""
        prior_gid: dict[int, int] = {}
        prior_sig: dict[int, np.ndarray] = {}
        want = np.unique(np.concatenate([exact, band.ravel()]))
        want = want[want != NO_MATCH]
        if want.size:
            owner = self.layout.owner(want)
            reqs = [want[owner == s] for s in range(self.layout.n_shards)]
            for d, (g, sg) in zip(reqs, self.shards.documents(reqs), strict=True):
                prior_gid.update(zip(d.tolist(), g.tolist(), strict=True))
                if sg is not None:
                    prior_sig.update(zip(d.tolist(), sg, strict=True))
        return prior_gid, prior_sig

    def _near_match(self, sig: np.ndarray, cands: list[tuple[int, np.ndarray | None]]
                    ) -> tuple[int, int, float, float]:
        """(kind, dup_of, jaccard, best estimate) of a document sharing a band with ``cands`` (in commit order)."""
        if not self.layout.verify:  # any shared band: the earliest candidate
            return NEAR, cands[0][0], np.nan, np.nan
        best_j, best_g = -1.0, 0
        for g, sg in cands:
            est = self.layout.estimate(sg, sig)
            if est > best_j:
                best_j, best_g = est, g
        if best_j >= self.threshold + self.layout.margin:
            return NEAR, best_g, best_j, best_j
        return KEEP, NO_MATCH, 0.0, best_j


def _earlier_equal(keys: np.ndarray) -> dict[int, list[int]]:
    """Documents (rows) sharing any column's key with an earlier row: ``{i: [earlier rows]}`` ascending.

    Vectorised: every (later, earlier) pair within each group of equal keys, then the distinct pairs."""
    n, b = keys.shape
    if n < 2 or b == 0:
        return {}
    flat = keys.ravel()
    order = np.argsort(flat, kind="stable")  # by key, then row (rows are in order in the flattened array)
    sk, sr = flat[order], order // b
    distinct = np.ones(sk.size, bool)  # a row with one key in two columns counts once
    distinct[1:] = (sk[1:] != sk[:-1]) | (sr[1:] != sr[:-1])
    sk, sr = sk[distinct], sr[distinct]
    new_group = np.ones(sk.size, bool)
    new_group[1:] = sk[1:] != sk[:-1]
    if new_group.all():
        return {}
    start = np.maximum.accumulate(np.where(new_group, np.arange(sk.size), 0))  # each position's group start
    before = np.arange(sk.size) - start  # how many earlier rows share its key
    later = np.flatnonzero(before)
    counts = before[later]
    first_pair = np.cumsum(counts) - counts
    earlier = np.repeat(start[later], counts) + (np.arange(int(counts.sum())) - np.repeat(first_pair, counts))
    pairs = np.unique(sr[np.repeat(later, counts)].astype(np.int64) * n + sr[earlier])
    i, j = pairs // n, pairs % n
    cuts = np.flatnonzero(np.diff(i)) + 1
    return {int(a[0]): c.tolist() for a, c in zip(np.split(i, cuts), np.split(j, cuts), strict=True)}
