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
durable record of a committed WARC (:class:`IndexRecord`, :mod:`raycorpus.process.dedup.records`) is
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
from raycorpus.process.dedup.arrays import (
    Asked,
    Hits,
    KnownDocuments,
    ParagraphHits,
    Repeats,
    RoundHits,
    ShardSplit,
    Stacked,
    Taken,
    WarcKeys,
    WithinWarc,
    group_starts,
)
from raycorpus.process.dedup.lsh import NO_MATCH, BandTable, KeySet
from raycorpus.process.dedup.minhash import band_keys
from raycorpus.process.dedup.paragraphs import Paragraphs, RoundParagraphs
from raycorpus.process.dedup.prior import is_prior, local_gid
from raycorpus.process.dedup.rounds import RoundOverlay
from raycorpus.process.dedup.settings import DedupConfig
from raycorpus.process.dedup.sketch import OPH_BITS, OphSketch, oph_sketch

_MAX_DOCNO = 2**32 - 2  # table values are uint32 (2**32 - 1 is reserved)
GID_BITS = 24  # up to 16.7 M filtered documents per WARC (a CC WARC has ~30-40 k records)
DEDUP_DIR = "dedup"

KEEP, EXACT, NEAR, URL = 0, 1, 2, 3
PRIOR = 3  # added to a kind when the match is an earlier output's document (dedup.against)
PARAGRAPHS = 7  # kept by document-level dedup, dropped for its share of paragraphs seen before (dedup.paragraphs)
KINDS = {URL: "url", EXACT: "exact", NEAR: "near",
         URL + PRIOR: "prior_url", EXACT + PRIOR: "prior_exact", NEAR + PRIOR: "prior_near", PARAGRAPHS: "paragraphs"}
OPTIONAL_KINDS = ("prior_url", "prior_exact", "prior_near", "paragraphs")  # counted only where they occur
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

    def estimates(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """:meth:`estimate` row by row (broadcasting), as float64: the same values, one call."""
        if self.sketch:
            return np.atleast_1d(_OPH[self.oph_bits].estimate(a, b))
        m = np.count_nonzero(a == b, axis=-1) / a.shape[-1]
        chance = 2.0 ** -self.sig_bits
        return np.maximum(0.0, (m - chance) / (1.0 - chance))

    def keys(self, sigs: np.ndarray) -> np.ndarray:
        """``(n, bands)`` band keys of 32-bit signatures."""
        return band_keys(sigs.astype(np.uint64), self.bands, self.rows)

    def warc_keys(self, hashes: np.ndarray, sigs: np.ndarray | None, urls: np.ndarray | None) -> WarcKeys:
        """A WARC's keys (see :class:`~raycorpus.process.dedup.arrays.WarcKeys`) from its content hashes,
        signatures and URL keys."""
        hashes = np.asarray(hashes, np.uint64)
        ek, uk = self.exact_keys(hashes, urls if self.url else None)
        near = self.near and sigs is not None
        keys = self.keys(sigs) if near else np.empty((hashes.size, 0), np.uint64)
        return WarcKeys(ek, uk, keys, WithinWarc.of(ek, uk, keys, NO_URL))

    def route(self, keys: np.ndarray) -> np.ndarray:
        return _modulo(keys, self.n_shards)

    def owner(self, docnos: np.ndarray) -> np.ndarray:
        return _modulo(np.asarray(docnos, np.uint64), self.n_shards)


def _modulo(a: np.ndarray, n: int) -> np.ndarray:
    """``a % n`` (uint64) as shard numbers of the smallest unsigned type that holds them (uint8 up to 256 shards: a
    round's ~3 M paragraph keys cost an eighth of the memory traffic of int64, and sort by shard in one radix pass);
    a power of two (the usual shard count) without a division, up to 256 from the keys' low bytes."""
    dtype = np.uint8 if n <= 1 << 8 else np.uint16 if n <= 1 << 16 else np.uint32
    if n == 1:  # (zeros cost no pass over the keys)
        return np.zeros(a.size, dtype)
    if n & (n - 1) == 0:
        if dtype is np.uint8 and np.little_endian and a.dtype == np.uint64:  # (the low byte of each key)
            return np.ascontiguousarray(a).view(np.uint8)[::8] & np.uint8(n - 1)
        return (a & np.uint64(n - 1)).astype(dtype)
    return (a % np.uint64(n)).astype(dtype)


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
    paragraphs: np.ndarray | None = None  # uint64: the paragraph keys the WARC's documents made seen (paragraphs)


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
        self._expected = per_shard  # owned documents expected (their gids and signatures)
        self.exact = BandTable(per_shard * (layout.exact + layout.url), value_dtype=np.uint32)
        self.bands = BandTable(per_shard * layout.bands if layout.near else 0, value_dtype=np.uint32)
        self.paragraphs = KeySet()  # dedup.paragraphs: the keys of paragraphs seen (routed here by key)
        self._gids = np.empty(0, np.uint64)
        self._sigs: np.ndarray | None = None
        self._n = 0  # owned documents
        self._asked: dict[int, Asked] = {}  # the keys of the WARCs queried and not taken yet, by ordinal

    def query(self, round_: Sequence[Asked]) -> RoundHits:
        """Which keys an earlier document has, and its docno, for each WARC of a round (in manifest order); the
        keys are kept for each WARC's :meth:`take`. A key the index lacks that several of the round's WARCs hold
        is listed in the answer's repeats: the head inserts it for the later ones (the shard takes the earlier
        WARC's documents only after the round is decided). The round's paragraph keys routed here (dedup.paragraphs)
        are answered with :meth:`seen`."""
        hits, e_rep, b_rep = [], [], []
        for w, asked in enumerate(round_):
            self._asked[asked.ordinal] = asked
            exact, bands = self.exact.lookup(asked.exact), self.bands.lookup(asked.bands)
            hits.append((Hits.of(exact), Hits.of(bands)))
            if len(round_) > 1:
                miss = (exact == NO_MATCH) & (asked.exact != NO_URL)  # (a document without a URL: never inserted)
                e_rep.append((asked.exact[miss], w, _positions(asked.exact_pos, asked.exact.size)[miss]))
                miss = bands == NO_MATCH
                b_rep.append((asked.bands[miss], w, _positions(asked.band_pos, asked.bands.size)[miss]))
        return RoundHits(Stacked(hits), _repeats(e_rep), _repeats(b_rep), self.seen(round_))

    def seen(self, round_: Sequence[Asked]) -> ParagraphHits | None:
        """Which of a round's paragraph keys (in manifest order) an earlier WARC's kept document had, and where each
        occurred before in the round (None: no paragraph dedup)."""
        if not round_ or round_[0].paragraphs is None:
            return None
        return ParagraphHits.of(np.concatenate([a.paragraphs for a in round_]), self.paragraphs.contains)

    def take(self, taken: Taken, ordinal: int) -> tuple:
        """The insert request (see :meth:`insert`) of what the index took of WARC ``ordinal``, queried before:
        its taken documents' keys among those this shard was asked about, and the documents it owns."""
        a = self._asked.pop(ordinal, None)
        if a is None:
            raise RuntimeError(f"LSH shard {self.index}: an insert of WARC #{ordinal} without its query")
        index, keyed = taken.rows()
        docnos = taken.docnos(index)
        e_pos = np.arange(a.exact.size) if a.exact_pos is None else a.exact_pos
        url = e_pos >= a.contents
        e_doc = np.where(url, e_pos - a.contents, e_pos)
        e_sel = index[e_doc] & keyed[e_doc] & (~url | (a.exact != NO_URL))
        b_doc = (np.arange(a.bands.size) if a.band_pos is None else a.band_pos) // max(1, self.layout.bands)
        b_sel = index[b_doc]
        mine = docnos[index]
        own = self.layout.owner(mine) == self.index
        gids = make_gids(ordinal, taken.n)[index][own]
        paragraphs = None
        if taken.paragraphs is not None:  # (the new ones among the asked)
            paragraphs = a.paragraphs[np.unpackbits(taken.paragraphs, count=a.paragraphs.size).view(bool)]
        return (a.exact[e_sel], docnos[e_doc[e_sel]], a.bands[b_sel], docnos[b_doc[b_sel]], mine[own], gids,
                taken.own_sigs, paragraphs)

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
               own_sigs: np.ndarray | None, paragraphs: np.ndarray | None = None) -> None:
        if paragraphs is not None and paragraphs.size:
            self.paragraphs.add(paragraphs)
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
        if need > self._gids.size:  # (sized for the expected documents at once: their pages are touched as used)
            cap = max(need, int(self._gids.size * 1.5), 1024, self._expected)
            self._gids = _grown(self._gids, self._n, cap)
            if sigs is not None:
                self._sigs = _grown(self._sigs if self._sigs is not None else sigs[:0], self._n, cap)
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
        paragraphs = record.paragraphs
        if paragraphs is not None:
            paragraphs = paragraphs[lay.route(paragraphs) == me]
        return ek[e_sel], ek_no[e_sel], flat, flat_no, docnos[own], gids[own], own_sigs, paragraphs

    def stats(self) -> dict:
        sig_bytes = self._n * 8 + (0 if self._sigs is None else self._n * self._sigs.shape[1] * self._sigs.itemsize)
        return {
            "shard": self.index,
            "exact_keys": len(self.exact),
            "band_keys": len(self.bands),
            "documents": self._n,
            "table_bytes": self.exact.nbytes + self.bands.nbytes + self.paragraphs.nbytes,
            **({"paragraph_keys": len(self.paragraphs)} if len(self.paragraphs) else {}),
            "signature_bytes": sig_bytes,
        }


def _grown(a: np.ndarray, n: int, cap: int) -> np.ndarray:
    """``a``'s first ``n`` rows in a new array of ``cap`` rows (the others not written, so not yet in memory)."""
    out = np.empty((cap, *a.shape[1:]), a.dtype)
    out[:n] = a[:n]
    return out


def _positions(pos: np.ndarray | None, size: int) -> np.ndarray:
    return np.arange(size, dtype=np.uint32) if pos is None else pos


def _repeats(parts: list[tuple[np.ndarray, int, np.ndarray]]) -> Repeats:
    """The :class:`Repeats` of a round's missed keys, given per WARC as (keys, WARC, positions)."""
    if not parts:
        return Repeats.none()
    keys = np.concatenate([k for k, _, _ in parts])
    warc = np.concatenate([np.full(k.size, w, np.uint16) for k, w, _ in parts])
    return Repeats.of(keys, warc, np.concatenate([p for _, _, p in parts]))


class ShardSet(Protocol):
    """N shards, called together: local objects in-process, actors in the runtime."""

    def query(self, requests: Sequence[Sequence[Asked]]) -> list[RoundHits]: ...
    def documents(self, requests: Sequence[np.ndarray]) -> list[tuple[np.ndarray, np.ndarray | None]]: ...
    def take(self, requests: Sequence[Taken], ordinal: int) -> None: ...


class LocalShards:
    """A :class:`ShardSet` of in-process :class:`LshShard` objects."""

    def __init__(self, layout: Layout, expected_docs: int = 0):
        self.shards = [LshShard(layout, i, expected_docs) for i in range(layout.n_shards)]

    def query(self, requests):
        return [s.query(r) for s, r in zip(self.shards, requests, strict=True)]

    def documents(self, requests):
        return [s.documents(r) for s, r in zip(self.shards, requests, strict=True)]

    def take(self, requests, ordinal):
        """Insert what the index took of the WARC each shard was last asked about."""
        self.insert([s.take(t, ordinal) for s, t in zip(self.shards, requests, strict=True)], ordinal)

    def insert(self, requests, ordinal):
        for s, r in zip(self.shards, requests, strict=True):
            s.insert(*r)


@dataclass(frozen=True)
class RecordRows:
    """Which of a WARC's decided documents the index took (``index``) and which of those are near duplicates
    (``near``, with index_dups): with the WARC's keys, all its durable record needs (:meth:`record`)."""

    index: np.ndarray
    near: np.ndarray | None
    paragraphs: np.ndarray | None = None  # dedup.paragraphs: per decided document, its paragraphs were made seen

    def record(self, ordinal: int, hashes: np.ndarray, sigs: np.ndarray | None, urls: np.ndarray | None,
               layout: Layout) -> IndexRecord:
        """The WARC's :class:`IndexRecord` from its decided documents' hashes, signatures and URL keys."""
        i = self.index
        near = layout.near and sigs is not None
        urls = np.asarray(urls, np.uint64)[i] if layout.url and urls is not None else None
        return IndexRecord(make_gids(ordinal, i.size)[i], np.asarray(hashes, np.uint64)[i],
                           sigs[i] if near else None, urls, self.near)


@dataclass
class Decision:
    """Per document of one WARC (filtered documents, in record order)."""

    kind: np.ndarray  # uint8: KEEP, URL, EXACT or NEAR
    dup_of: np.ndarray  # uint64 gid of the earlier document it duplicates (NO_MATCH if kept)
    jaccard: np.ndarray  # float32 estimated Jaccard with dup_of (1 for exact, NaN for a URL match, 0 if kept)
    indexed: int  # documents added to the index (the kept ones; with index_dups, the near duplicates too)
    eligible: np.ndarray | None = None  # set by expand(): the documents that took part
    verified: np.ndarray | None = None  # float32: the best Jaccard estimated for a near candidate (NaN: none)
    rows: RecordRows | None = None  # what the index took, over the decided documents (not spread by expand)
    paragraphs: np.ndarray | None = None  # dedup.paragraphs: a bool per paragraph of the documents, removed
    paragraphs_decided: int = 0  # dedup.paragraphs: the paragraphs of the documents document-level dedup kept

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
        return Decision(kind, dup_of, jac, self.indexed, eligible, verified, self.rows)

    def counts(self) -> dict[str, int]:
        counts = {k: int(np.count_nonzero(self.kind == code)) for code, k in KINDS.items()}
        return {k: n for k, n in counts.items() if n or k not in OPTIONAL_KINDS}  # (dedup.against, paragraphs)

    def count_into(self, counts: Counter, tag: bool) -> None:
        """Add this decision to a WARC's counters: duplicates dropped (or tagged), documents indexed."""
        for kind, n in self.counts().items():
            if n:
                counts[ck.Key(ck.Kind.TAG if tag else ck.Kind.DROP, "dedup", kind)] += n
                if not tag:
                    counts[ck.KEPT] -= n
        counts[ck.DEDUP_INDEXED] += self.indexed
        if self.paragraphs is not None:
            counts[ck.DEDUP_PARAGRAPHS] += self.paragraphs_decided
            counts[ck.DEDUP_PARAGRAPHS_REMOVED] += int(np.count_nonzero(self.paragraphs))


class _Draft:
    """A WARC's decision while it is taken (see :class:`Decision`)."""

    def __init__(self, n: int):
        self.kind = np.zeros(n, np.uint8)
        self.dup_of = np.full(n, NO_MATCH, np.uint64)
        self.jac = np.zeros(n, np.float32)
        self.verified = np.full(n, np.nan, np.float32)

    def set(self, rows, kind: int, dup_of, jac) -> None:
        """``rows`` (a mask or indexes) become ``kind`` duplicates of ``dup_of`` at estimated Jaccard ``jac``."""
        self.kind[rows], self.dup_of[rows], self.jac[rows] = kind, dup_of, jac

    def set_rows(self, rows, kind: int, dup_of, jac, verified) -> None:
        self.set(rows, kind, dup_of, jac)
        self.verified[rows] = verified

    def decision(self, indexed: int, rows: RecordRows | None = None) -> Decision:
        return Decision(self.kind, self.dup_of, self.jac, indexed, None, self.verified, rows)


@dataclass(frozen=True)
class _Warc:
    """One WARC's documents as the decision sees them: what the index and the WARC itself say of each."""

    gids: np.ndarray
    stored: np.ndarray | None  # signatures as verification keeps them (None: no near dedup)
    prior_exact: np.ndarray  # docno of the indexed document with the same content key, or NO_MATCH
    prior_url: np.ndarray  # ... with the same URL key
    prior_band: np.ndarray  # (n, bands): ... sharing each band
    within: WithinWarc


@dataclass(frozen=True)
class WarcRows:
    """One WARC's documents as a decision takes them: content hashes, signatures, URL keys, and (when its worker
    computed them) the keys and their relations inside the WARC."""

    ordinal: int
    hashes: np.ndarray
    sigs: np.ndarray | None
    urls: np.ndarray | None = None
    keys: WarcKeys | None = None
    paragraphs: Paragraphs | None = None  # with dedup.paragraphs

    def prepared(self, layout: Layout) -> _Input:
        hashes = np.asarray(self.hashes, np.uint64)
        urls = np.asarray(self.urls, np.uint64) if layout.url and self.urls is not None else None
        near = layout.near and self.sigs is not None
        keys = self.keys or (layout.warc_keys(hashes, self.sigs, urls) if hashes.size else None)
        return _Input(self.ordinal, hashes.size, keys, make_gids(self.ordinal, hashes.size),
                      layout.stored(self.sigs) if near and hashes.size else None, self.paragraphs)


@dataclass(frozen=True)
class _Input:
    ordinal: int
    n: int
    keys: WarcKeys | None
    gids: np.ndarray
    stored: np.ndarray | None  # signatures as verification keeps them (None: no near dedup)
    paragraphs: Paragraphs | None = None

    def warc(self, exact: np.ndarray, band: np.ndarray) -> _Warc:
        """The WARC as the decision sees it, from the index's answers for its flat exact and band keys."""
        ek, uk = self.keys.exact, self.keys.url
        none = np.full(self.n, NO_MATCH, np.uint64)
        return _Warc(self.gids, self.stored, exact[: ek.size] if ek.size else none,
                     exact[ek.size :] if uk.size else none, band.reshape(self.keys.bands.shape), self.keys.within)


def _blocked(kind: np.ndarray, pending: np.ndarray, first_kept: list[tuple[np.ndarray, np.ndarray]],
             every: tuple[np.ndarray, np.ndarray] | None, exact_prior: np.ndarray) -> np.ndarray:
    """The documents that cannot be decided yet (``pending``: the undecided ones, still KEEP in ``kind``), from their
    (document, earlier document) pairs, each document's ascending. A URL or an exact relation names the first kept
    earlier document: it waits only until that one is known (an undecided one before the first decided kept one);
    once it names one, the document is settled and the relations after it do not count (URL before exact, an
    exact key the index holds settles it too). The near relation (``every``) waits for all its earlier ones."""
    blocked = np.zeros(pending.size, bool)
    settled = np.zeros(pending.size, bool)
    for k, (owner, earlier) in enumerate(first_kept):
        if k:
            settled |= exact_prior
        cand = kind[earlier] == KEEP  # decided kept, or undecided
        owner, earlier = owner[cand], earlier[cand]
        if owner.size:
            first = group_starts(owner)
            o, waits = owner[first], pending[earlier[first]]
            blocked[o[waits & ~settled[o]]] = True
            settled[o[~waits]] = True
    if every is not None:
        owner, earlier = every
        waits = pending[earlier]
        blocked[owner[waits & ~settled[owner]]] = True
    return blocked


def _pairs_of(rows: np.ndarray, owner: np.ndarray, earlier: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The (owner, earlier) pairs whose owner is one of ``rows`` (of a WARC of ``n`` documents), in their order."""
    mine = np.zeros(n, bool)
    mine[rows] = True
    sel = mine[owner]
    return owner[sel], earlier[sel]


class Deduplicator:
    """Decides one WARC at a time, in manifest order, against a :class:`ShardSet`."""

    def __init__(self, layout: Layout, threshold: float, shards: ShardSet, next_docno: int = 0,
                 paragraph_threshold: float = 1.0):
        """``paragraph_threshold``: the share of removed text that drops a document (dedup.paragraphs: WARCs whose
        rows carry paragraphs)."""
        self.layout = layout
        self.threshold = threshold
        self.paragraph_threshold = paragraph_threshold
        self.shards = shards
        self.next_docno = next_docno  # documents indexed so far (all shards)

    def decide(self, ordinal: int, hashes: np.ndarray, sigs: np.ndarray | None,
               urls: np.ndarray | None = None, keys: WarcKeys | None = None,
               encode: bool = True) -> tuple[Decision, bytes | None]:
        """Decide, insert what is kept, and return (decision, durable record of the inserted documents).

        Per document, in record order, against the indexed documents and this WARC's earlier kept ones:
        the same URL key makes it a URL duplicate; else the same content hash an exact duplicate; else a
        (verified) shared band a near duplicate. Only kept documents insert their keys.

        As arrays: the documents whose decision depends on no other document of the WARC (the most) are
        decided together; only those sharing a key with an earlier document of the WARC go one by one.
        ``keys``: the WARC's keys and those relations, when its worker computed them (else they are computed here).
        ``encode`` False: no record (whoever writes it builds it: ``decision.rows``, :meth:`RecordRows.record`)."""
        lay = self.layout
        decision = self.decide_round([WarcRows(ordinal, hashes, sigs, urls, keys)])[0]
        if not encode:  # whoever writes the record builds it from the keys and ``rows``
            return decision, None
        urls = np.asarray(urls, np.uint64) if lay.url and urls is not None else None
        if not len(hashes):
            return decision, encode_record(IndexRecord(make_gids(ordinal, 0), np.asarray(hashes, np.uint64), sigs,
                                                       urls, decision.rows.near))
        return decision, encode_record(decision.rows.record(ordinal, hashes, sigs, urls, lay))

    def decide_round(self, warcs: Sequence[WarcRows]) -> list[Decision]:
        """Decide several WARCs (in manifest order) with one query and one document request per shard: each
        decision is the one :meth:`decide` takes of the WARC alone, after the WARCs before it."""
        lay = self.layout
        inputs = [w.prepared(lay) for w in warcs]
        live = [i for i in inputs if i.n]
        para = None
        if any(i.paragraphs is not None for i in live):
            para = RoundParagraphs([i.paragraphs for i in live], lay.route, lay.n_shards, self.paragraph_threshold)
        priors, overlay, table = self._query_round(live, para)
        out, w = [], 0
        for inp in inputs:
            draft = _Draft(inp.n)
            if not inp.n:
                out.append(draft.decision(0, RecordRows(np.zeros(0, bool), np.zeros(0, bool) if lay.index_dups
                                                        else None)))
                continue
            exact, band = priors[w]
            known = overlay.known(table, overlay.lookup(w, exact, band))
            warc = inp.warc(exact, band)
            self._decide_alone(draft, warc, known)
            self._decide_in_order(draft, warc, known)
            kind = draft.kind
            verdict = para.decide(w, kind == KEEP) if para is not None else None  # (of the documents kept)
            kept = kind == KEEP if verdict is None else (kind == KEEP) & ~verdict.dropped
            index = kept | ((kind == NEAR) & lay.index_dups)
            dups = (kind == NEAR)[index]  # indexed near duplicates: band keys and sketch only
            first = self.next_docno
            n_kept, keyed = self._insert(inp.ordinal, index, dups, warc.stored,
                                         None if verdict is None else para.taken(w, verdict.fresh))
            overlay.take(w, first, index, keyed, inp.keys.exact.size, warc.gids, warc.stored)
            kind[(kind != KEEP) & is_prior(draft.dup_of)] += PRIOR  # the match is an earlier output's (after the index)
            rows = RecordRows(index, dups if lay.index_dups else None, None if verdict is None else kind == KEEP)
            if verdict is not None:
                kind[verdict.dropped] = PARAGRAPHS
            out.append(draft.decision(n_kept, rows))
            if verdict is not None:
                out[-1].paragraphs, out[-1].paragraphs_decided = verdict.removed, verdict.decided
            w += 1
        return out

    def _decide_alone(self, d: _Draft, w: _Warc, known: KnownDocuments) -> None:
        """The documents that share no key with an earlier document of the WARC (or whose URL names an indexed
        document: that decides them whatever the WARC holds), all at once."""
        url = w.prior_url != NO_MATCH
        d.set(url, URL, known.gid(w.prior_url[url]), np.nan)
        exact = ~url & ~w.within.url.any & (w.prior_exact != NO_MATCH)
        d.set(exact, EXACT, known.gid(w.prior_exact[exact]), 1.0)
        if w.stored is not None:
            alone = ~url & ~exact & ~w.within.url.any & ~w.within.exact.any & ~w.within.band.any
            self._near(d, w, known, np.flatnonzero(alone & (w.prior_band != NO_MATCH).any(axis=1)))

    def _decide_in_order(self, d: _Draft, w: _Warc, known: KnownDocuments) -> None:
        """The documents that share a key with earlier documents of the WARC: in waves, each deciding together
        the documents whose decision the decided ones already fix (what one by one in record order would decide)."""
        within = w.within
        url = w.prior_url != NO_MATCH
        exact_prior = w.prior_exact != NO_MATCH
        exact = ~url & ~within.url.any & exact_prior
        band = within.band.any if w.stored is not None else np.zeros_like(url)
        todo = np.flatnonzero(~url & ~exact & (within.url.any | within.exact.any | band))
        pending = np.zeros(url.size, bool)
        pending[todo] = True
        first_kept = [within.url.pairs(todo), within.exact.pairs(todo)]  # (document, an earlier one of the WARC)
        every = within.band.pairs(todo) if w.stored is not None else None
        while todo.size:
            blocked = _blocked(d.kind, pending, first_kept, every, exact_prior)
            ready = todo[~blocked[todo]]
            self._decide_wave(d, w, known, ready, first_kept, every)
            pending[ready] = False
            todo = todo[blocked[todo]]

    def _decide_wave(self, d: _Draft, w: _Warc, known: KnownDocuments, rows: np.ndarray,
                     first_kept: list[tuple[np.ndarray, np.ndarray]], every: tuple[np.ndarray, np.ndarray] | None
                     ) -> None:
        """Documents whose decision the decided documents of the WARC fix (:func:`_blocked`): URL, exact, then near
        (``first_kept``, ``every``: the URL, exact and band pairs of every document still to decide)."""
        for code, prior, pairs in ((URL, w.prior_url, first_kept[0]), (EXACT, w.prior_exact, first_kept[1])):
            jac = 1.0 if code == EXACT else np.nan
            hit = prior[rows] != NO_MATCH  # (a URL hit never gets here: it was decided alone)
            if hit.any():
                d.set(rows[hit], code, known.gid(prior[rows[hit]]), jac)
            owner, j = _pairs_of(rows[~hit], *pairs, d.kind.size)
            kept = d.kind[j] == KEEP  # URL / exact: kept ones only, the first
            if kept.any():
                owner, j = owner[kept], j[kept]
                first = group_starts(owner)  # (pairs come by row, ascending, each row's earlier ones ascending)
                d.set(owner[first], code, w.gids[j[first]], jac)
            rows = rows[d.kind[rows] == KEEP]
        if every is not None and rows.size:
            owner, j = _pairs_of(rows, *every, d.kind.size)
            mine = (d.kind[j] == KEEP) | ((d.kind[j] == NEAR) & self.layout.index_dups)  # indexed ones only
            self._near(d, w, known, rows, owner[mine], j[mine])

    def _near(self, d: _Draft, w: _Warc, known: KnownDocuments, rows: np.ndarray,
              owner: np.ndarray | None = None, earlier: np.ndarray | None = None) -> None:
        """Near-duplicate decisions of ``rows`` against their candidates in commit order: the indexed documents
        sharing a band (by docno), then the earlier indexed documents of the WARC sharing one (``owner``,
        ``earlier`` pairs); the best estimate wins (the first of equals), or without verification the first."""
        if not rows.size:
            return
        band = w.prior_band[rows]
        hit = band != NO_MATCH
        pairs = np.sort((np.repeat(rows, band.shape[1])[hit.ravel()].astype(np.uint64) << np.uint64(32)) | band[hit])
        pairs = pairs[group_starts(pairs)] if pairs.size else pairs  # (np.unique, without its overhead)
        c_row = (pairs >> np.uint64(32)).astype(np.intp)
        docnos = pairs & np.uint64(0xFFFFFFFF)
        c_gid = known.gid(docnos)
        c_sig = None
        if self.layout.verify:  # (no indexed document named at all: none of theirs)
            c_sig = known.sig(docnos) if known.sigs is not None else w.stored[:0]
        if owner is not None and owner.size:  # then this WARC's: sorted by row, stable (commit order after)
            order = np.argsort(np.concatenate([c_row, owner]), kind="stable")
            c_row = np.concatenate([c_row, owner])[order]
            c_gid = np.concatenate([c_gid, w.gids[earlier]])[order]
            if c_sig is not None:
                c_sig = np.concatenate([c_sig, w.stored[earlier]])[order]
        if not c_row.size:
            return
        first = group_starts(c_row)
        if not self.layout.verify:  # any shared band: the earliest candidate
            d.set_rows(c_row[first], NEAR, c_gid[first], np.nan, np.nan)
            return
        est = self.layout.estimates(c_sig, w.stored[c_row])
        best = np.maximum.reduceat(est, first)
        group = np.zeros(c_row.size, np.intp)  # each candidate's row, numbered 0, 1, ...
        group[first[1:]] = 1
        at = np.flatnonzero(est == best[np.cumsum(group)])
        at = at[group_starts(c_row[at])]  # the first best of each row
        r = c_row[at]
        d.verified[r] = best
        dup = best >= self.threshold + self.layout.margin
        d.set_rows(r[dup], NEAR, c_gid[at][dup], best[dup], best[dup])

    def _indexed(self, kind: int) -> bool:
        """A document of this kind is in the index (a near candidate for the later ones)."""
        return kind == KEEP or (kind == NEAR and self.layout.index_dups)

    def _query_round(self, inputs: list[_Input], para: RoundParagraphs | None = None
                     ) -> tuple[list[tuple[np.ndarray, np.ndarray]], RoundOverlay, KnownDocuments]:
        """Ask every shard once about the round's keys: per WARC the indexed document (docno) each content and URL
        key (flat, looked up in the exact table) and each band key (flat) already names, or NO_MATCH; the overlay
        of the keys the round's WARCs share; the indexed documents those answers name."""
        lay, n_sh = self.layout, self.layout.n_shards
        asked: list[list[Asked]] = [[] for _ in range(n_sh)]
        splits = []
        for w, inp in enumerate(inputs):
            exact, flat = np.concatenate([inp.keys.exact, inp.keys.url]), inp.keys.bands.ravel()
            e_split, b_split = ShardSplit.of(lay.route(exact), n_sh), ShardSplit.of(lay.route(flat), n_sh)
            e_parts, b_parts = e_split.parts(exact), b_split.parts(flat)
            paragraphs = [None] * n_sh if para is None else para.asked(w)
            for s, (e, b, ep, bp, p) in enumerate(zip(e_parts, b_parts, e_split.positions(), b_split.positions(),
                                                      paragraphs, strict=True)):
                asked[s].append(Asked(inp.ordinal, e, b, ep, bp, inp.keys.exact.size, p))
            splits.append((e_split, b_split, [e.size for e in e_parts], [b.size for b in b_parts]))
        answers = self.shards.query(asked) if inputs else []
        if para is not None:
            para.answers([a.paragraphs for a in answers])
        priors = []
        for w, (e_split, b_split, e_sizes, b_sizes) in enumerate(splits):
            priors.append((e_split.join([a.hits[w][0].expand(k) for a, k in zip(answers, e_sizes, strict=True)]),
                           b_split.join([a.hits[w][1].expand(k) for a, k in zip(answers, b_sizes, strict=True)])))
        named = np.concatenate([np.zeros(0, np.uint64)] + [a for p in priors for a in p])
        overlay = RoundOverlay(Repeats.join([a.exact for a in answers]), Repeats.join([a.bands for a in answers]),
                               lay.bands if lay.near else 0)
        return priors, overlay, self._prior_documents(np.unique(named[named != NO_MATCH]))

    def _prior_documents(self, want: np.ndarray) -> KnownDocuments:
        """The indexed documents ``want`` (sorted docnos): their gids (for dup_of) and signatures (to verify)."""
        if not want.size:
            return KnownDocuments(want, want, None)
        split = ShardSplit.of(self.layout.owner(want), self.layout.n_shards)
        answers = self.shards.documents(split.parts(want))
        gids = split.join([g for g, _ in answers])
        sigs = None
        some = next((sg for _, sg in answers if sg is not None), None)
        if some is not None:  # (a shard that owns no document yet has none)
            sigs = split.join([some[:0] if sg is None else sg for _, sg in answers], some.dtype)
        return KnownDocuments(want, gids, sigs)

    def _insert(self, ordinal: int, keep: np.ndarray, dups: np.ndarray, stored: np.ndarray | None,
                paragraphs: list[np.ndarray] | None = None) -> tuple[int, np.ndarray]:
        """Number the indexed documents (``keep``) and have the shards insert them, from the keys they were
        asked about; return how many, and which documents insert content and URL keys (``keyed``). The indexed
        near duplicates (``dups``, over the indexed ones) insert no content or URL key. ``stored``: the WARC's
        signatures as verification keeps them (:meth:`Layout.stored`), None without near dedup. ``paragraphs``:
        per shard, which of the WARC's paragraph keys it was asked about are new (:meth:`RoundParagraphs.taken`)."""
        lay = self.layout
        n_kept = int(keep.sum())
        if self.next_docno + n_kept > _MAX_DOCNO:
            raise OverflowError(f"the dedup index is full ({_MAX_DOCNO:,} documents): split the manifest into runs")
        docnos = (self.next_docno + np.arange(n_kept, dtype=np.uint64)).astype(np.uint32)  # (as tables keep them)
        keyed = np.ones(keep.size, bool)
        keyed[np.flatnonzero(keep)[dups]] = False
        own_sigs = [None] * lay.n_shards
        if lay.verify and stored is not None:
            own_sigs = ShardSplit.of(lay.owner(docnos), lay.n_shards).parts(stored[keep])
        paragraphs = paragraphs or [None] * lay.n_shards
        self.shards.take([Taken.of(self.next_docno, keep, keyed, sg, p) for sg, p in zip(own_sigs, paragraphs,
                                                                                          strict=True)], ordinal)
        self.next_docno += n_kept
        return n_kept, keyed
