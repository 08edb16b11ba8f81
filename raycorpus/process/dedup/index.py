"""Online URL, exact and near dedup, decided in manifest order over a sharded index. Ray-free.

Every document that passed the filters has a 64-bit content hash, a 64-bit key of its normalised
URL (:mod:`raycorpus.process.dedup.urlkey`) and (for near dedup) a MinHash signature, computed by
the worker. URL keys and content hashes share the exact table. When its WARC is committed, in
manifest order, :class:`Deduplicator` asks the shards which earlier documents share the URL key,
the content hash or an LSH band, verifies band candidates by the Jaccard estimated from their signatures,
decides per document in record order, and then inserts the documents it kept. So which
copy survives depends only on (manifest, config): not on timing, worker count or retries,
and a retried WARC never meets its own documents (nothing is inserted before its commit).

Layout: keys are routed to shard ``key % N`` (band keys and content hashes are already
well mixed). Indexed documents are numbered in commit order (``docno``, a uint32 in the
tables); shard ``docno % N`` keeps the document's id and signature. Document ids (``gid``)
are ``ordinal << 24 | index`` (index among the WARC's filtered documents), so an id names
its WARC. Signatures are kept as their low 32 bits (``uint32``; two different
values agree with probability 2**-32), and band keys are computed from those, so the
durable record of a committed WARC (:class:`IndexRecord`, ``dedup/NNNNNNNNN.npz``) is
gids + hashes + 32-bit signatures (+ sketch) + URL keys, and any shard can be rebuilt from the records of
the committed WARCs alone (:meth:`LshShard.load`). To verify candidates, a shard keeps for each document
it owns the OPH sketch that follows the MinHash values in the row (``verify_sketch: oph``, the default:
192 bytes, 768 two-bit samples with ``oph_bits: 2``, :mod:`raycorpus.process.dedup.sketch`), or with ``verify_sketch:
minhash`` the low ``signature_bits`` of each MinHash value (b-bit MinHash, the chance agreement of 2**-b
taken out of the estimate). A candidate is a duplicate at estimated Jaccard >= threshold +
``verify_margin``. With ``index_duplicates`` (the default) the near duplicates are indexed (and
recorded) too, so a later copy is found through whichever earlier version it resembles; they insert
their band keys and sketch only, not their URL key or content hash (the record marks them ``near``), so
the URL and exact tables name kept documents alone and the first kept copy of a URL or text wins.
"""

from __future__ import annotations

import io
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from raycorpus import counts as ck
from raycorpus.process.dedup.lsh import NO_MATCH, BandTable
from raycorpus.process.dedup.minhash import band_keys
from raycorpus.process.dedup.prior import is_prior, local_gid
from raycorpus.process.dedup.settings import DedupConfig
from raycorpus.process.dedup.sketch import OPH_BITS, OphSketch, oph_sketch

_MAX_DOCNO = 2**32 - 2  # table values are uint32 (2**32 - 1 is reserved)
GID_BITS = 24  # up to 16.7 M filtered documents per WARC (a CC WARC has ~30-40 k records)
DEDUP_DIR = "dedup"

KEEP, EXACT, NEAR, URL = 0, 1, 2, 3
PRIOR = 3  # added to a kind when the match is an earlier output's document (dedup.against)
KINDS = {URL: "url", EXACT: "exact", NEAR: "near",
         URL + PRIOR: "prior_url", EXACT + PRIOR: "prior_exact", NEAR + PRIOR: "prior_near"}
OPH = oph_sketch(OPH_BITS)  # estimates only: the seed does not matter here; every shape has OPH.words words
_OPH: dict[int, OphSketch] = {bits: oph_sketch(bits) for bits in (1, 2, 4)}


def make_gids(ordinal: int, n: int) -> np.ndarray:
    if n >= 1 << GID_BITS:
        raise ValueError(f"WARC #{ordinal} has {n} documents; at most {(1 << GID_BITS) - 1} are supported")
    return (np.uint64(ordinal) << np.uint64(GID_BITS)) | np.arange(n, dtype=np.uint64)


def split_gid(gid: int) -> tuple[int, int]:
    """(WARC ordinal, document index) of a gid (of an earlier output's document: in that output)."""
    gid = local_gid(gid)
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
    sig_bits: int = 32  # bits of each MinHash value kept for verification (b-bit MinHash)
    url: bool = False  # URL keys (urlkey.url_key) share the exact table with the content hashes
    num_perm: int = 112  # MinHash values of a signature row; with ``sketch``, the OPH sketch follows them
    sketch: bool = False  # verify by the OPH sketch (raycorpus.process.dedup.sketch) instead of the MinHash values
    index_dups: bool = False  # near duplicates are indexed too
    margin: float = 0.0  # a candidate is a duplicate at estimated Jaccard >= threshold + margin
    oph_bits: int = 1  # bits of each OPH sample (1536 / oph_bits bins): 1 before dedup.oph_bits existed

    @classmethod
    def from_config(cls, cfg: DedupConfig, n_shards: int) -> Layout:
        b, r = cfg.bands_rows
        return cls(n_shards, cfg.exact, cfg.near, cfg.near and cfg.verify, b, r, cfg.signature_bits, cfg.url,
                   cfg.num_perm, cfg.verify_sketch == "oph", cfg.near and cfg.index_duplicates, cfg.verify_margin,
                   cfg.oph_bits)

    def exact_keys(self, hashes: np.ndarray, urls: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """(content keys, URL keys) of documents in the exact table: empty where that kind is off; a
        document without a URL key (0) gets NO_URL, which no table holds."""
        ek = content_keys(hashes) if self.exact else _EMPTY
        if not self.url or urls is None:
            return ek, _EMPTY
        urls = np.asarray(urls, np.uint64)
        return ek, np.where(urls == 0, NO_URL, urls)

    def stored(self, sigs: np.ndarray) -> np.ndarray:
        """Signatures as verification keeps them: the OPH sketch, or the low ``sig_bits`` bits of the values."""
        if self.sketch:
            if sigs.shape[-1] != self.num_perm + OPH.words:
                raise ValueError(f"signature rows of {sigs.shape[-1]} values: verify_sketch oph needs "
                                 f"{self.num_perm} MinHash values and {OPH.words} sketch words")
            return np.array(sigs[..., self.num_perm :], np.uint32)
        sigs = np.asarray(sigs)[..., : self.num_perm]
        if self.sig_bits == 16:
            return (sigs & np.uint32(0xFFFF)).astype(np.uint16)
        return np.asarray(sigs, np.uint32)

    def estimate(self, a: np.ndarray, b: np.ndarray) -> float:
        """Jaccard estimated from two stored signatures; with b bits, unrelated values agree with
        probability 2**-b, which is taken out: (matches - 2**-b) / (1 - 2**-b)."""
        if self.sketch:
            return _OPH[self.oph_bits].estimate(a, b)
        m = float(np.count_nonzero(a == b)) / a.shape[-1]
        chance = 2.0 ** -self.sig_bits
        return max(0.0, (m - chance) / (1.0 - chance))

    def keys(self, sigs: np.ndarray) -> np.ndarray:
        """``(n, bands)`` band keys of 32-bit signatures."""
        return band_keys(sigs.astype(np.uint64), self.bands, self.rows)

    def route(self, keys: np.ndarray) -> np.ndarray:
        return (keys % np.uint64(self.n_shards)).astype(np.intp)

    def owner(self, docnos: np.ndarray) -> np.ndarray:
        return (np.asarray(docnos, np.uint64) % np.uint64(self.n_shards)).astype(np.intp)


_EMPTY = np.empty(0, np.uint64)
NO_URL = NO_MATCH  # the URL key of a document without a URL: never inserted, so never matched


def content_keys(hashes: np.ndarray) -> np.ndarray:
    """Content hashes as table keys (0 marks an empty slot)."""
    return np.maximum(np.asarray(hashes, np.uint64), np.uint64(1))


# -- durable per-WARC record of the documents a WARC added to the index


@dataclass(frozen=True)
class IndexRecord:
    """The documents one committed WARC added to the index, one row each, in commit order."""

    gids: np.ndarray  # uint64
    hashes: np.ndarray  # uint64 content hashes
    sigs: np.ndarray | None = None  # (docs, num_perm) uint32 MinHash, with near dedup
    urls: np.ndarray | None = None  # uint64 URL keys (0: no URL), with URL dedup
    near: np.ndarray | None = None  # bool: indexed near duplicates (band keys and sketch only), with index_dups


def encode_record(record: IndexRecord) -> bytes:
    buf = io.BytesIO()
    arrays = {"gids": np.asarray(record.gids, np.uint64), "hashes": np.asarray(record.hashes, np.uint64)}
    if record.sigs is not None:
        arrays["sigs"] = np.asarray(record.sigs, np.uint32)
    if record.urls is not None:
        arrays["urls"] = np.asarray(record.urls, np.uint64)
    if record.near is not None:
        arrays["near"] = np.asarray(record.near, np.bool_)
    np.savez(buf, **arrays)
    return buf.getvalue()


def decode_record(data: bytes) -> IndexRecord:
    with np.load(io.BytesIO(data)) as z:
        return IndexRecord(*(z[k] if k in z.files else None for k in ("gids", "hashes", "sigs", "urls", "near")))


class LshShard:
    """One slice of the index: content-hash and band-key tables, and the documents it owns.

    Indexed documents are numbered in commit order (``docno``, deterministic: decisions are
    made in manifest order), so tables store 32-bit values. Shard ``s`` owns documents with
    ``docno % N == s`` and keeps their gid and (with verification) signature at position
    ``docno // N``: lookups are direct. A cache: :meth:`load` rebuilds it from committed
    WARCs' records.
    """

    def __init__(self, layout: Layout, index: int, expected_docs: int = 0):
        self.layout = layout
        self.index = index
        per_shard = expected_docs // layout.n_shards
        self.exact = BandTable(per_shard * (layout.exact + layout.url), value_dtype=np.uint32)
        self.bands = BandTable(per_shard * layout.bands if layout.near else 0, value_dtype=np.uint32)
        self._gids = np.empty(0, np.uint64)
        self._sigs: np.ndarray | None = None
        self._n = 0  # owned documents

    def query(self, exact_keys: np.ndarray, band_keys_: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For each key, the docno of the earlier document that has it, or NO_MATCH."""
        return self.exact.lookup(exact_keys), self.bands.lookup(band_keys_)

    def documents(self, docnos: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """(gids, signatures or None) of owned documents."""
        docnos = np.asarray(docnos, np.uint64)
        n_sh = np.uint64(self.layout.n_shards)
        local = (docnos // n_sh).astype(np.intp)
        bad = (docnos % n_sh != self.index) | (local >= self._n)
        if bad.any():
            raise KeyError(f"LSH shard {self.index} does not hold document #{int(docnos[bad][0])}")
        return self._gids[local], (None if self._sigs is None else self._sigs[local])

    def insert(self, exact_keys: np.ndarray, exact_docnos: np.ndarray, band_keys_: np.ndarray,
               band_docnos: np.ndarray, own_docnos: np.ndarray, own_gids: np.ndarray,
               own_sigs: np.ndarray | None) -> None:
        if exact_keys.size:
            self.exact.insert_many(exact_keys, exact_docnos)
        if band_keys_.size:
            self.bands.insert_many(band_keys_, band_docnos)
        if own_docnos.size:
            expect = (self._n + np.arange(own_docnos.size, dtype=np.uint64)) * np.uint64(self.layout.n_shards)
            if not np.array_equal(np.asarray(own_docnos, np.uint64), expect + np.uint64(self.index)):
                raise ValueError(f"LSH shard {self.index}: documents must arrive in commit order")
            self._append(np.asarray(own_gids, np.uint64), own_sigs)

    def _append(self, gids: np.ndarray, sigs: np.ndarray | None) -> None:
        need = self._n + gids.size
        if need > self._gids.size:
            cap = max(need, int(self._gids.size * 1.5), 1024)
            self._gids = np.concatenate([self._gids[: self._n], np.empty(cap - self._n, np.uint64)])
            if sigs is not None:
                dtype = sigs.dtype
                old = self._sigs[: self._n] if self._sigs is not None else np.empty((0, sigs.shape[1]), dtype)
                self._sigs = np.concatenate([old, np.empty((cap - self._n, sigs.shape[1]), dtype)])
        self._gids[self._n : need] = gids
        if sigs is not None:
            self._sigs[self._n : need] = sigs
        self._n = need

    def load(self, records: Iterable[IndexRecord], docno: int = 0) -> int:
        """Add committed WARCs' records (in manifest order, the first numbered ``docno``), keeping this
        shard's slice; return the next docno."""
        for record in records:
            self.insert(*self.slice_of(record, docno))
            docno += record.gids.size
        return docno

    def slice_of(self, record: IndexRecord, docno: int) -> tuple:
        """This shard's insert request for a WARC's record whose first document is number ``docno``."""
        lay, me = self.layout, self.index
        gids, sigs, empty = record.gids, record.sigs, _EMPTY
        docnos = docno + np.arange(gids.size, dtype=np.uint64)
        ek, uk = lay.exact_keys(record.hashes, record.urls)
        keyed = np.ones(gids.size, bool) if record.near is None else ~np.asarray(record.near, bool)
        ek_no = np.concatenate([docnos[: ek.size], docnos[: uk.size]])
        e_sel = np.concatenate([(lay.route(ek) == me) & keyed[: ek.size],
                                (lay.route(uk) == me) & (uk != NO_URL) & keyed[: uk.size]])
        ek = np.concatenate([ek, uk])
        flat, flat_no = empty, empty
        if lay.near and sigs is not None:
            keys = lay.keys(sigs)
            b_sel = lay.route(keys.ravel()) == me
            flat, flat_no = keys.ravel()[b_sel], np.repeat(docnos, keys.shape[1])[b_sel]
        own = lay.owner(docnos) == me
        own_sigs = lay.stored(sigs[own]) if lay.verify and sigs is not None else None
        return ek[e_sel], ek_no[e_sel], flat, flat_no, docnos[own], gids[own], own_sigs

    def stats(self) -> dict:
        sig_bytes = self._n * 8 + (0 if self._sigs is None else self._n * self._sigs.shape[1] * self._sigs.itemsize)
        return {
            "shard": self.index,
            "exact_keys": len(self.exact),
            "band_keys": len(self.bands),
            "documents": self._n,
            "table_bytes": self.exact.nbytes + self.bands.nbytes,
            "signature_bytes": sig_bytes,
        }


class ShardSet(Protocol):
    """N shards, called together: local objects in-process, actors in the runtime."""

    def query(self, requests: Sequence[tuple[np.ndarray, np.ndarray]]) -> list[tuple[np.ndarray, np.ndarray]]: ...
    def documents(self, requests: Sequence[np.ndarray]) -> list[tuple[np.ndarray, np.ndarray | None]]: ...
    def insert(self, requests: Sequence[tuple], ordinal: int) -> None: ...


class LocalShards:
    """A :class:`ShardSet` of in-process :class:`LshShard` objects."""

    def __init__(self, layout: Layout, expected_docs: int = 0):
        self.shards = [LshShard(layout, i, expected_docs) for i in range(layout.n_shards)]

    def query(self, requests):
        return [s.query(*r) for s, r in zip(self.shards, requests, strict=True)]

    def documents(self, requests):
        return [s.documents(r) for s, r in zip(self.shards, requests, strict=True)]

    def insert(self, requests, ordinal):
        for s, r in zip(self.shards, requests, strict=True):
            s.insert(*r)


@dataclass
class Decision:
    """Per document of one WARC (filtered documents, in record order)."""

    kind: np.ndarray  # uint8: KEEP, URL, EXACT or NEAR
    dup_of: np.ndarray  # uint64 gid of the earlier document it duplicates (NO_MATCH if kept)
    jaccard: np.ndarray  # float32 estimated Jaccard with dup_of (1 for exact, NaN for a URL match, 0 if kept)
    indexed: int  # documents added to the index (the kept ones; with index_dups, the near duplicates too)
    eligible: np.ndarray | None = None  # set by expand(): the documents that took part
    verified: np.ndarray | None = None  # float32: the best Jaccard estimated for a near candidate (NaN: none)

    @property
    def keep(self) -> np.ndarray:
        return self.kind == KEEP

    def expand(self, eligible: np.ndarray) -> Decision:
        """This decision over a subset, spread over all documents (the others kept, undecided)."""
        kind = np.zeros(eligible.size, np.uint8)
        dup_of = np.full(eligible.size, NO_MATCH, np.uint64)
        jac = np.zeros(eligible.size, np.float32)
        kind[eligible], dup_of[eligible], jac[eligible] = self.kind, self.dup_of, self.jaccard
        verified = None
        if self.verified is not None:
            verified = np.full(eligible.size, np.nan, np.float32)
            verified[eligible] = self.verified
        return Decision(kind, dup_of, jac, self.indexed, eligible, verified)

    def counts(self) -> dict[str, int]:
        counts = {k: int(np.count_nonzero(self.kind == code)) for code, k in KINDS.items()}
        return {k: n for k, n in counts.items() if n or not k.startswith("prior_")}  # prior: only with dedup.against

    def count_into(self, counts: Counter, tag: bool) -> None:
        """Add this decision to a WARC's counters: duplicates dropped (or tagged), documents indexed."""
        for kind, n in self.counts().items():
            if n:
                counts[ck.Key(ck.Kind.TAG if tag else ck.Kind.DROP, "dedup", kind)] += n
                if not tag:
                    counts[ck.KEPT] -= n
        counts[ck.DEDUP_INDEXED] += self.indexed


class Deduplicator:
    """Decides one WARC at a time, in manifest order, against a :class:`ShardSet`."""

    def __init__(self, layout: Layout, threshold: float, shards: ShardSet, next_docno: int = 0):
        self.layout = layout
        self.threshold = threshold
        self.shards = shards
        self.next_docno = next_docno  # documents indexed so far (all shards)

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
        prior_exact, prior_url, prior_band = self._query(ek, uk, keys)
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
        n_kept = self._insert(ordinal, index, dups, gids, ek, uk, keys, sigs if near else None)
        kind[(kind != KEEP) & is_prior(dup_of)] += PRIOR  # the match is an earlier output's (after the index)
        record = IndexRecord(gids[index], hashes[index], sigs[index] if near else None,
                             None if urls is None else urls[index], dups if lay.index_dups else None)
        return Decision(kind, dup_of, jac, n_kept, None, verified), encode_record(record)

    def _indexed(self, kind: int) -> bool:
        """A document of this kind is in the index (a near candidate for the later ones)."""
        return kind == KEEP or (kind == NEAR and self.layout.index_dups)

    def _query(self, ek: np.ndarray, uk: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The indexed document (docno) each content key, URL key and band key already names, or NO_MATCH
        (content and URL keys are both looked up in the exact table)."""
        lay, n_sh, n = self.layout, self.layout.n_shards, keys.shape[0]
        exact = np.concatenate([ek, uk])
        flat = keys.ravel()
        e_route, b_route = lay.route(exact), lay.route(flat)
        e_idx = [np.flatnonzero(e_route == s) for s in range(n_sh)]
        b_idx = [np.flatnonzero(b_route == s) for s in range(n_sh)]
        answers = self.shards.query([(exact[e], flat[b]) for e, b in zip(e_idx, b_idx, strict=True)])
        prior = np.full(exact.size, NO_MATCH, np.uint64)
        prior_band = np.full(flat.size, NO_MATCH, np.uint64)
        for (ea, ba), e, b in zip(answers, e_idx, b_idx, strict=True):
            prior[e], prior_band[b] = ea, ba
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

    def _insert(self, ordinal: int, keep: np.ndarray, dups: np.ndarray, gids: np.ndarray, ek: np.ndarray,
                uk: np.ndarray, keys: np.ndarray, sigs: np.ndarray | None) -> int:
        """Number the indexed documents (``keep``) and insert them into the shards; return how many. The
        indexed near duplicates (``dups``, over the indexed ones) insert no content or URL key."""
        lay = self.layout
        n_kept = int(keep.sum())
        if self.next_docno + n_kept > _MAX_DOCNO:
            raise OverflowError(f"the dedup index is full ({_MAX_DOCNO:,} documents): split the manifest into runs")
        docnos = self.next_docno + np.arange(n_kept, dtype=np.uint64)
        kg = gids[keep]
        ke = ek[keep][~dups] if ek.size else ek
        ku = uk[keep] if uk.size else uk
        has_url = (ku != NO_URL) & ~dups if ku.size else np.zeros(0, bool)  # content keys, then URL keys
        ke_no = np.concatenate([docnos[~dups][: ke.size], docnos[has_url]])
        ke = np.concatenate([ke, ku[has_url]])
        kflat = keys[keep].ravel()
        kflat_no = np.repeat(docnos, keys.shape[1])
        ksigs = sigs[keep] if sigs is not None else None
        ke_route, kb_route, owner = lay.route(ke), lay.route(kflat), lay.owner(docnos)
        reqs = []
        for s in range(lay.n_shards):
            e, b, o = ke_route == s, kb_route == s, owner == s
            reqs.append((ke[e], ke_no[e], kflat[b], kflat_no[b], docnos[o], kg[o],
                         lay.stored(ksigs[o]) if lay.verify else None))
        self.shards.insert(reqs, ordinal)
        self.next_docno += n_kept
        return n_kept


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
