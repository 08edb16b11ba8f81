"""Online exact and near dedup, decided in manifest order over a sharded index. Ray-free.

Every document that passed the filters has a 64-bit content hash and (for near dedup) a
MinHash signature, computed by the worker. When its WARC is committed, in manifest order,
:class:`Deduplicator` asks the shards which earlier documents share the content hash or
an LSH band, verifies band candidates by the Jaccard estimated from their signatures,
decides per document in record order, and then inserts the documents it kept. So which
copy survives depends only on (manifest, config): not on timing, worker count or retries,
and a retried WARC never meets its own documents (nothing is inserted before its commit).

Layout: keys are routed to shard ``key % N`` (band keys and content hashes are already
well mixed); a document's signature lives on shard ``fmix64(gid) % N``. Document ids
(``gid``) are ``ordinal << 24 | index`` (index among the WARC's filtered documents), so an
id names its WARC. Signatures are kept as their low 32 bits (``uint32``; two different
values agree with probability 2**-32), and band keys are computed from those, so the
durable record of a committed WARC (:func:`encode_record`, ``dedup/NNNNNNNNN.npz``) is
gids + hashes + 32-bit signatures, and any shard can be rebuilt from the records of the
committed WARCs alone (:meth:`LshShard.load`).
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from raycorpus.dedup.lsh import NO_MATCH, BandTable
from raycorpus.dedup.minhash import band_keys, fmix64
from raycorpus.dedup.settings import DedupConfig

GID_BITS = 24  # up to 16.7 M filtered documents per WARC (a CC WARC has ~30-40 k records)
DEDUP_DIR = "dedup"

KEEP, EXACT, NEAR = 0, 1, 2
KINDS = {EXACT: "exact", NEAR: "near"}


def make_gids(ordinal: int, n: int) -> np.ndarray:
    if n >= 1 << GID_BITS:
        raise ValueError(f"WARC #{ordinal} has {n} documents; at most {(1 << GID_BITS) - 1} are supported")
    return (np.uint64(ordinal) << np.uint64(GID_BITS)) | np.arange(n, dtype=np.uint64)


def split_gid(gid: int) -> tuple[int, int]:
    """(WARC ordinal, document index) of a gid."""
    gid = int(gid)
    return gid >> GID_BITS, gid & ((1 << GID_BITS) - 1)


def record_name(ordinal: int) -> str:
    return f"{ordinal:09d}.npz"


@dataclass(frozen=True)
class Layout:
    """What every shard and the deduplicator agree on."""

    n_shards: int
    exact: bool
    near: bool
    verify: bool
    bands: int
    rows: int

    @classmethod
    def from_config(cls, cfg: DedupConfig, n_shards: int) -> Layout:
        b, r = cfg.bands_rows
        return cls(n_shards, cfg.exact, cfg.near, cfg.near and cfg.verify, b, r)

    def keys(self, sigs: np.ndarray) -> np.ndarray:
        """``(n, bands)`` band keys of 32-bit signatures."""
        return band_keys(sigs.astype(np.uint64), self.bands, self.rows)

    def route(self, keys: np.ndarray) -> np.ndarray:
        return (keys % np.uint64(self.n_shards)).astype(np.intp)

    def owner(self, gids: np.ndarray) -> np.ndarray:
        return (fmix64(np.asarray(gids, np.uint64).copy()) % np.uint64(self.n_shards)).astype(np.intp)


def content_keys(hashes: np.ndarray) -> np.ndarray:
    """Content hashes as table keys (0 marks an empty slot)."""
    return np.maximum(np.asarray(hashes, np.uint64), np.uint64(1))


# -- durable per-WARC record of the documents a WARC added to the index


def encode_record(gids: np.ndarray, hashes: np.ndarray, sigs: np.ndarray | None) -> bytes:
    buf = io.BytesIO()
    arrays = {"gids": np.asarray(gids, np.uint64), "hashes": np.asarray(hashes, np.uint64)}
    if sigs is not None:
        arrays["sigs"] = np.asarray(sigs, np.uint32)
    np.savez(buf, **arrays)
    return buf.getvalue()


def decode_record(data: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    with np.load(io.BytesIO(data)) as z:
        return z["gids"], z["hashes"], (z["sigs"] if "sigs" in z.files else None)


class LshShard:
    """One slice of the index: content-hash and band-key tables, and the signatures it owns.

    Tables map a key to the gid of the first kept document that had it. The signature
    store is append-only in gid order (documents arrive in manifest order), looked up by
    binary search. A cache: :meth:`load` rebuilds it from committed WARCs' records.
    """

    def __init__(self, layout: Layout, index: int):
        self.layout = layout
        self.index = index
        self.exact = BandTable()
        self.bands = BandTable()
        self._gids = np.empty(0, np.uint64)
        self._sigs: np.ndarray | None = None
        self._n = 0

    def query(self, exact_keys: np.ndarray, band_keys_: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For each key, the gid of the earlier document that has it, or NO_MATCH."""
        return self.exact.lookup(exact_keys), self.bands.lookup(band_keys_)

    def signatures(self, gids: np.ndarray) -> np.ndarray:
        gids = np.asarray(gids, np.uint64)
        if not gids.size:
            return np.empty((0, 0 if self._sigs is None else self._sigs.shape[1]), np.uint32)
        pos = np.searchsorted(self._gids[: self._n], gids)
        ok = pos < self._n
        ok[ok] = self._gids[pos[ok]] == gids[ok]
        if not ok.all():
            raise KeyError(f"shard {self.index} has no signature for document {split_gid(gids[~ok][0])}")
        return self._sigs[pos]

    def insert(self, exact_keys: np.ndarray, exact_gids: np.ndarray, band_keys_: np.ndarray,
               band_gids: np.ndarray, sig_gids: np.ndarray, sigs: np.ndarray | None) -> None:
        if exact_keys.size:
            self.exact.insert_many(exact_keys, exact_gids)
        if band_keys_.size:
            self.bands.insert_many(band_keys_, band_gids)
        if sigs is not None and sig_gids.size:
            self._append_sigs(np.asarray(sig_gids, np.uint64), np.asarray(sigs, np.uint32))

    def _append_sigs(self, gids: np.ndarray, sigs: np.ndarray) -> None:
        if self._n and gids[0] <= self._gids[self._n - 1]:
            raise ValueError(f"signatures must arrive in document order (shard {self.index})")
        need = self._n + gids.size
        if self._sigs is None or need > self._gids.size:
            cap = max(need, int(self._gids.size * 1.5), 1024)
            g = np.empty(cap, np.uint64)
            s = np.empty((cap, sigs.shape[1]), np.uint32)
            g[: self._n] = self._gids[: self._n]
            if self._sigs is not None:
                s[: self._n] = self._sigs[: self._n]
            self._gids, self._sigs = g, s
        self._gids[self._n : need] = gids
        self._sigs[self._n : need] = sigs
        self._n = need

    def load(self, records: Iterable[tuple[np.ndarray, np.ndarray, np.ndarray | None]]) -> int:
        """Add committed WARCs' records (in manifest order), keeping this shard's slice; return docs seen."""
        lay, me, seen = self.layout, self.index, 0
        for gids, hashes, sigs in records:
            seen += gids.size
            ek = content_keys(hashes) if lay.exact else np.empty(0, np.uint64)
            e_sel = lay.route(ek) == me
            if lay.near and sigs is not None:
                keys = lay.keys(sigs)
                flat = keys.ravel()
                b_sel = lay.route(flat) == me
                b_gids = np.repeat(gids, keys.shape[1])[b_sel]
                own = lay.owner(gids) == me
                self.insert(ek[e_sel], gids[e_sel], flat[b_sel], b_gids, gids[own],
                            sigs[own] if lay.verify else None)
            else:
                self.insert(ek[e_sel], gids[e_sel], np.empty(0, np.uint64), np.empty(0, np.uint64),
                            np.empty(0, np.uint64), None)
        return seen

    def stats(self) -> dict:
        sig_bytes = 0 if self._sigs is None else self._n * (8 + self._sigs.shape[1] * 4)
        return {
            "shard": self.index,
            "exact_keys": len(self.exact),
            "band_keys": len(self.bands),
            "signatures": self._n,
            "table_bytes": self.exact.nbytes + self.bands.nbytes,
            "signature_bytes": sig_bytes,
        }


class ShardSet(Protocol):
    """N shards, called together: local objects in-process, actors in the runtime."""

    def query(self, requests: Sequence[tuple[np.ndarray, np.ndarray]]) -> list[tuple[np.ndarray, np.ndarray]]: ...
    def signatures(self, requests: Sequence[np.ndarray]) -> list[np.ndarray]: ...
    def insert(self, requests: Sequence[tuple]) -> None: ...


class LocalShards:
    """A :class:`ShardSet` of in-process :class:`LshShard` objects."""

    def __init__(self, layout: Layout):
        self.shards = [LshShard(layout, i) for i in range(layout.n_shards)]

    def query(self, requests):
        return [s.query(*r) for s, r in zip(self.shards, requests, strict=True)]

    def signatures(self, requests):
        return [s.signatures(r) for s, r in zip(self.shards, requests, strict=True)]

    def insert(self, requests):
        for s, r in zip(self.shards, requests, strict=True):
            s.insert(*r)


@dataclass
class Decision:
    """Per document of one WARC (filtered documents, in record order)."""

    kind: np.ndarray  # uint8: KEEP, EXACT or NEAR
    dup_of: np.ndarray  # uint64 gid of the earlier document it duplicates (NO_MATCH if kept)
    jaccard: np.ndarray  # float32 estimated Jaccard with dup_of (1 for exact, 0 if kept)
    indexed: int  # documents added to the index (the kept ones)
    eligible: np.ndarray | None = None  # set by expand(): the documents that took part

    @property
    def keep(self) -> np.ndarray:
        return self.kind == KEEP

    def expand(self, eligible: np.ndarray) -> Decision:
        """This decision over a subset, spread over all documents (the others kept, undecided)."""
        kind = np.zeros(eligible.size, np.uint8)
        dup_of = np.full(eligible.size, NO_MATCH, np.uint64)
        jac = np.zeros(eligible.size, np.float32)
        kind[eligible], dup_of[eligible], jac[eligible] = self.kind, self.dup_of, self.jaccard
        return Decision(kind, dup_of, jac, self.indexed, eligible)

    def counts(self) -> dict[str, int]:
        return {k: int(np.count_nonzero(self.kind == code)) for code, k in KINDS.items()}


class Deduplicator:
    """Decides one WARC at a time, in manifest order, against a :class:`ShardSet`."""

    def __init__(self, layout: Layout, threshold: float, shards: ShardSet):
        self.layout = layout
        self.threshold = threshold
        self.shards = shards

    def decide(self, ordinal: int, hashes: np.ndarray, sigs: np.ndarray | None) -> tuple[Decision, bytes]:
        """Decide, insert what is kept, and return (decision, durable record of the inserted documents)."""
        lay, n_sh = self.layout, self.layout.n_shards
        n = len(hashes)
        gids = make_gids(ordinal, n)
        kind = np.zeros(n, np.uint8)
        dup_of = np.full(n, NO_MATCH, np.uint64)
        jac = np.zeros(n, np.float32)
        if n == 0:
            return Decision(kind, dup_of, jac, 0), encode_record(gids, hashes, sigs)
        near = lay.near and sigs is not None
        ek = content_keys(hashes) if lay.exact else np.empty(0, np.uint64)
        keys = lay.keys(sigs) if near else np.empty((n, 0), np.uint64)
        flat = keys.ravel()
        e_route, b_route = lay.route(ek), lay.route(flat)
        e_idx = [np.flatnonzero(e_route == s) for s in range(n_sh)]
        b_idx = [np.flatnonzero(b_route == s) for s in range(n_sh)]
        answers = self.shards.query([(ek[e], flat[b]) for e, b in zip(e_idx, b_idx, strict=True)])
        prior_exact = np.full(ek.size, NO_MATCH, np.uint64)
        prior_band = np.full(flat.size, NO_MATCH, np.uint64)
        for (ea, ba), e, b in zip(answers, e_idx, b_idx, strict=True):
            prior_exact[e], prior_band[b] = ea, ba
        prior_band = prior_band.reshape(keys.shape)

        exact_earlier = _earlier_equal(ek[:, None]) if lay.exact else {}
        band_earlier = _earlier_equal(keys) if near else {}
        has_prior_band = (prior_band != NO_MATCH).any(axis=1) if near else np.zeros(n, bool)
        involved = set(np.flatnonzero(has_prior_band).tolist()) | set(exact_earlier) | set(band_earlier)
        if lay.exact:
            involved |= set(np.flatnonzero(prior_exact != NO_MATCH).tolist())

        prior_sigs: dict[int, np.ndarray] = {}
        if lay.verify and has_prior_band.any():
            want = np.unique(prior_band[has_prior_band & (prior_exact == NO_MATCH if lay.exact else True)])
            want = want[want != NO_MATCH]
            if want.size:
                owner = lay.owner(want)
                reqs = [want[owner == s] for s in range(n_sh)]
                for g, s in zip(reqs, self.shards.signatures(reqs), strict=True):
                    prior_sigs.update(zip(g.tolist(), s, strict=True))

        for i in sorted(involved):
            if lay.exact and prior_exact[i] != NO_MATCH:
                kind[i], dup_of[i], jac[i] = EXACT, prior_exact[i], 1.0
                continue
            j = next((j for j in exact_earlier.get(i, ()) if kind[j] == KEEP), None)
            if j is not None:
                kind[i], dup_of[i], jac[i] = EXACT, gids[j], 1.0
                continue
            if not near:
                continue
            cands = {int(g): prior_sigs.get(int(g)) for g in prior_band[i] if g != NO_MATCH}
            cands.update({int(gids[j]): sigs[j] for j in band_earlier.get(i, ()) if kind[j] == KEEP})
            if not cands:
                continue
            if not lay.verify:  # any shared band: the earliest candidate
                kind[i], dup_of[i], jac[i] = NEAR, min(cands), np.nan
                continue
            best_j, best_g = -1.0, None
            for g in sorted(cands):
                est = float(np.count_nonzero(cands[g] == sigs[i])) / sigs.shape[1]
                if est > best_j:
                    best_j, best_g = est, g
            if best_j >= self.threshold:
                kind[i], dup_of[i], jac[i] = NEAR, best_g, best_j

        keep = kind == KEEP
        kg = gids[keep]
        ke = ek[keep] if lay.exact else ek
        ke_g = kg if lay.exact else np.empty(0, np.uint64)
        kflat = keys[keep].ravel()
        kflat_g = np.repeat(kg, keys.shape[1])
        ksigs = sigs[keep] if near else None
        ke_route, kb_route, owner = lay.route(ke), lay.route(kflat), lay.owner(kg)
        reqs = []
        for s in range(n_sh):
            e, b, o = ke_route == s, kb_route == s, owner == s
            reqs.append((ke[e], ke_g[e], kflat[b], kflat_g[b], kg[o], ksigs[o] if lay.verify else None))
        self.shards.insert(reqs)
        record = encode_record(kg, np.asarray(hashes, np.uint64)[keep], ksigs)
        return Decision(kind, dup_of, jac, int(keep.sum())), record


def _earlier_equal(keys: np.ndarray) -> dict[int, list[int]]:
    """Documents (rows) sharing any column's key with an earlier row: ``{i: [earlier rows]}`` ascending."""
    n, b = keys.shape
    if n < 2 or b == 0:
        return {}
    flat = keys.ravel()
    rows = np.repeat(np.arange(n), b)
    order = np.lexsort((rows, flat))
    sk, sr = flat[order], rows[order]
    same = sk[1:] == sk[:-1]
    if not same.any():
        return {}
    starts = np.flatnonzero(np.concatenate(([True], ~same)))
    sizes = np.diff(np.append(starts, sk.size))
    out: dict[int, set[int]] = {}
    for a, size in zip(starts[sizes > 1].tolist(), sizes[sizes > 1].tolist(), strict=True):
        members = sorted(set(sr[a : a + size].tolist()))
        for k, i in enumerate(members[1:], 1):
            out.setdefault(i, set()).update(members[:k])
    return {i: sorted(v) for i, v in out.items()}
