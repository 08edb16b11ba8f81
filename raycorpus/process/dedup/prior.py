"""Dedup against earlier builds (``dedup.against``): their persisted index, read-only, ahead of this build's.

A finished output's index is its LSH shards' files (``dedup/shard-NNNN/``, named by its last checkpoint):
what that build *indexed*, i.e. its kept documents (URL key, content hash, band keys, sketch) and, with
``index_duplicates``, its near duplicates (band keys and sketch only). Loading exactly that, numbered as
that build numbered it (with dedup.paragraphs, the keys of the paragraphs it made seen too), puts this
build's index where a single run over the earlier manifests and then this one would have it when it reaches
this manifest's first WARC: so this build keeps the same documents as that run keeps of this manifest's WARCs.
The earlier outputs come first, in the order listed; output ``k``'s documents are numbered after those of outputs
``0..k-1`` and before this build's.

Each shard of this build loads the slice it owns (keys with ``key % N == shard``, documents with ``docno %
N == shard``). When the earlier build had the same shard count, that is its own shard's files; otherwise
each shard reads every file of the earlier index and keeps its part (the earlier index is read N times in
all, and a shard holds one whole earlier file decoded at a time).

A document of an earlier build keeps its id with the output's number in the top bits (:func:`tag_gids`),
so a decision knows a match is prior (``dedup:prior_url`` / ``prior_exact`` / ``prior_near``) and the
audit names the output and the document id it had there. Nothing of an earlier output is ever written.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from raycorpus.ingest.storage import NotFound, Storage, join_url
from raycorpus.output.ledger import Ledger, LedgerError, LedgerState
from raycorpus.process.dedup.lsh import NO_MATCH
from raycorpus.process.dedup.settings import DedupConfig
from raycorpus.process.dedup.shardlog import FIELDS, ShardFiles, decode_inserts, shard_dir

PRIOR_SHIFT = 58  # gid bits 58..63: 1 + the earlier output's position in dedup.against (0: this build)
MAX_PRIOR = (1 << (64 - PRIOR_SHIFT)) - 2  # 62 outputs (the all-ones tag would collide with NO_MATCH)
DEDUP_DIR = "dedup"


class PriorError(LedgerError):
    """An earlier output cannot be deduplicated against (missing, unfinished, other dedup settings)."""


def dedup_keys(cfg: DedupConfig) -> dict:
    """The settings that decide what an index's keys and sketches are: two builds can share an index only
    if they agree on all of them (recorded in run.json as ``dedup_keys``)."""
    b, r = cfg.bands_rows
    keys = {"url": cfg.url, "exact": cfg.exact, "near": cfg.near, "bands": b, "rows": r, "num_perm": cfg.num_perm,
            "ngram": cfg.ngram, "seed": cfg.seed, "verify": cfg.verify, "verify_sketch": cfg.verify_sketch,
            "signature_bits": cfg.signature_bits, "index_duplicates": cfg.index_duplicates}
    if cfg.verify_sketch == "oph" and cfg.oph_bits != 1:  # 1 bit, the only sketch before oph_bits: not recorded,
        keys["oph_bits"] = cfg.oph_bits  # so an output built then is shared with a build that sets oph_bits: 1
    if cfg.paragraphs.enabled:  # its index holds the keys of paragraphs of at least this many word characters
        keys["paragraphs_min_chars"] = cfg.paragraphs.min_chars
    return keys


#: what the recorded settings of an output built before they were recorded were
_RECORDED_BEFORE = {"oph_bits": 1}


def dedup_decision(cfg: DedupConfig) -> dict:
    """The settings that decide which candidates are duplicates without changing the index (recorded in run.json
    as ``dedup_decision``): with ``dedup_keys``, what a refused resume names when the dedup settings changed."""
    return {"threshold": cfg.threshold, "verify_margin": cfg.verify_margin}


def dedup_changes(old_run: dict, new_run: dict) -> list[str]:
    """The dedup settings that differ between two run.json records (``dedup_keys`` and ``dedup_decision``), as
    ``"dedup.<name> <old>, now <new>"``; a setting an older record lacks had its value of before it existed
    (``oph_bits``) or is not known (``dedup_decision``: not compared)."""
    out = []
    for record in ("dedup_keys", "dedup_decision"):
        old, new = old_run.get(record), new_run.get(record)
        if old is None or new is None:
            continue
        before = _RECORDED_BEFORE if record == "dedup_keys" else {}
        old, new = {**before, **old}, {**before, **new}
        out += [f"dedup.{k} {old.get(k)!r}, now {new.get(k)!r}" for k in sorted({*old, *new})
                if old.get(k) != new.get(k)]
    return out


def tag_gids(gids: np.ndarray, number: int) -> np.ndarray:
    """Ids of earlier output ``number``'s documents as this build's index holds them."""
    return np.asarray(gids, np.uint64) | np.uint64((number + 1) << PRIOR_SHIFT)


def prior_number(gid: int) -> int | None:
    """The position in ``dedup.against`` of the output a document id comes from (None: this build)."""
    gid = int(gid)
    if gid == int(NO_MATCH) or not gid >> PRIOR_SHIFT:
        return None
    return (gid >> PRIOR_SHIFT) - 1


def is_prior(gids: np.ndarray) -> np.ndarray:
    gids = np.asarray(gids, np.uint64)
    return ((gids >> np.uint64(PRIOR_SHIFT)) != 0) & (gids != NO_MATCH)


def local_gid(gid: int) -> int:
    """A document id without its output tag (the id it has in its own output)."""
    return int(gid) & ((1 << PRIOR_SHIFT) - 1)


@dataclass(frozen=True)
class PriorIndex:
    """One earlier output's index as this build loads it."""

    output: str  # its path / URL
    number: int  # its position in dedup.against
    shards: tuple[ShardFiles, ...]  # its shards' files, as its last checkpoint names them
    docnos: int  # documents it indexed
    offset: int  # the docno of its first document in this build's numbering
    fingerprint: str  # its ledger fingerprint: run.json and the last checkpoint

    def identity(self) -> dict:
        return {"output": self.output, "ledger_fingerprint": self.fingerprint, "indexed_docs": self.docnos}


def ledger_fingerprint(storage: Storage, out_url: str) -> str:
    """The identity of a finished run: run.json and its last checkpoint (changed by any resume or rebuild)."""
    ledger = Ledger(storage, out_url)
    h = hashlib.sha256(storage.read_bytes(join_url(out_url, "run.json")))
    urls = ledger.checkpoint_urls()
    h.update(storage.read_bytes(urls[-1]) if urls else b"")
    return h.hexdigest()[:16]


def open_priors(storage: Storage, cfg: DedupConfig) -> list[PriorIndex]:
    """Read (only read) what each earlier output's ledger says of its index; refuse one this build cannot use."""
    if len(cfg.against) > MAX_PRIOR:
        raise PriorError(f"dedup.against lists {len(cfg.against)} outputs; at most {MAX_PRIOR} are supported")
    priors, offset, want = [], 0, dedup_keys(cfg)
    for number, out in enumerate(cfg.against):
        prior = _open_prior(storage, out, number, offset, want)
        priors.append(prior)
        offset += prior.docnos
    return priors


def _open_prior(storage: Storage, out: str, number: int, offset: int, want: dict) -> PriorIndex:
    run, state = _finished(storage, out)
    if run.get("dedup_keys") != want:
        raise PriorError(f"dedup.against: {out} was built with other dedup settings ({run.get('dedup_keys')}, this "
                         f"build: {want}); its index cannot be shared (an output built before dedup.against existed "
                         "does not record them)")
    docnos = state.dedup[0].docnos
    return PriorIndex(out, number, tuple(state.dedup), docnos, offset, ledger_fingerprint(storage, out))


def indexed_docs(storage: Storage, out: str) -> int:
    """How many documents a finished output's index holds (what ``dedup.against`` would load of it)."""
    return _finished(storage, out)[1].dedup[0].docnos


def _finished(storage: Storage, out: str) -> tuple[dict, LedgerState]:
    """A finished output's run.json and last ledger state; PriorError if it is none, or has no whole index."""
    ledger = Ledger(storage, out)
    try:
        run = ledger.read_run()
    except NotFound:
        run = None
    if run is None:
        raise PriorError(f"dedup.against: {out} is not a raycorpus output (no run.json)")
    state = ledger.load()
    if not state.complete:
        raise PriorError(f"dedup.against: {out} is not finished (rerun its build to complete it first)")
    if not state.dedup or any(s.upto != state.next_ordinal for s in state.dedup):
        raise PriorError(f"dedup.against: {out} has no complete per-shard dedup index")
    return run, state


def against_changed(old: list | None, new: list | None) -> str:
    """The message of a resume that finds the earlier outputs changed since this output was started."""
    return (f"this output was deduplicated against {old or 'no earlier output'}, now {new or 'none'}: an earlier "
            "output was rebuilt, resumed or changed, or dedup.against was edited. Its documents were decided "
            "against the earlier state: use a new output path, or restore the earlier outputs")


def load_prior(shard, storage: Storage, prior: PriorIndex) -> int:
    """Insert the slice of ``prior`` that ``shard`` (an :class:`~raycorpus.process.dedup.index.LshShard`)
    owns, numbered from ``prior.offset``; return the bytes read."""
    n_prior, n_here = len(prior.shards), shard.layout.n_shards
    sources = [shard.index] if n_prior == n_here else range(n_prior)
    dedup_url = join_url(prior.output, DEDUP_DIR)
    parts, read = [], 0
    for j in sources:
        for name in prior.shards[j].files:
            data = storage.read_bytes(join_url(shard_dir(dedup_url, j), name))
            read += len(data)
            parts.append(_slice(shard, decode_inserts(data), prior))
    if parts:
        shard.insert(*_in_commit_order(parts))
    return read


def _slice(shard, request: tuple, prior: PriorIndex) -> tuple:
    """The part of one earlier shard file's inserts this shard owns, renumbered and with tagged ids."""
    ek, e_no, bk, b_no, own_no, own_gids, own_sigs, paragraphs = request
    lay, me, off = shard.layout, shard.index, np.uint64(prior.offset)
    e_no, b_no, own_no = (np.asarray(a, np.uint64) + off for a in (e_no, b_no, own_no))
    e, b, o = lay.route(ek) == me, lay.route(bk) == me, lay.owner(own_no) == me
    sigs = own_sigs[o] if own_sigs is not None else None
    if paragraphs is not None:  # (dedup.paragraphs: the keys of the paragraphs it made seen, routed by key)
        paragraphs = paragraphs[lay.route(paragraphs) == me]
    return ek[e], e_no[e], bk[b], b_no[b], own_no[o], tag_gids(own_gids[o], prior.number), sigs, paragraphs


def _in_commit_order(parts: list[tuple]) -> tuple:
    """Concatenated inserts sorted by docno (stable), as the earlier build inserted them: a table keeps the
    first document of a key, and a shard takes its documents in order."""
    out = []
    for i in range(len(FIELDS)):
        cols = [p[i] for p in parts if p[i] is not None]
        out.append(np.concatenate(cols) if cols else None)
    ek, e_no, bk, b_no, own_no, own_gids, own_sigs, paragraphs = out
    e, b, o = (np.argsort(a, kind="stable") for a in (e_no, b_no, own_no))
    return (ek[e], e_no[e], bk[b], b_no[b], own_no[o], own_gids[o], None if own_sigs is None else own_sigs[o],
            paragraphs)  # (a set of keys: their order does not matter)
