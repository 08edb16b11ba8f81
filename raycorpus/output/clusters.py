"""The cluster-size sidecar: for every document of every token shard, the size of its duplicate cluster over the
whole build (1 + the documents dedup dropped as its duplicates: URL, exact and near), written once at the end of
a build (:func:`write_cluster_sizes`), read by ``raycorpus verify``, ``raycorpus mix`` and the loader's
``rehydrate`` (:func:`~raycorpus.process.dedup.clusters.upsampling`).

``clusters/shard-NNNNNN.sizes``: little-endian uint32, one per document of ``shards/shard-NNNNNN`` in its order;
``clusters/clusters.json``: the totals, the sizes' histogram by FineWeb-2's limits and each file's sha256. Same
committed documents, same bytes. Filter mode only: in tag mode the shards hold the duplicates too.
"""

from __future__ import annotations

import hashlib
import io
import itertools
import json
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from raycorpus.ingest.storage import NotFound, Storage, join_url
from raycorpus.output.ledger import Ledger
from raycorpus.output.shards import SHARDS_DIR, canonical_json, shard_name
from raycorpus.process.dedup.clusters import FINEWEB2_WEIGHTS, Clusters, Links
from raycorpus.process.dedup.index import DEDUP_DIR, make_gids
from raycorpus.process.dedup.prior import PRIOR_SHIFT, ledger_fingerprint
from raycorpus.process.dedup.records import BLOCK_WARCS, RecordReader, block_name, decode_links

CLUSTERS_DIR = "clusters"
SUMMARY_FILE = "clusters.json"


def sizes_name(shard: int) -> str:
    return f"{shard_name(shard)}.sizes"


class ClusterError(ValueError):
    """The output's dedup records do not give cluster sizes (written before links, or changed by hand)."""


def read_links(storage: Storage, out_url: str, next_ordinal: int) -> Links:
    """The duplicate links of the output's committed WARCs below ``next_ordinal`` (from its rows blocks)."""
    dedup_url = join_url(out_url, DEDUP_DIR)
    children, parents = [], []
    for block in range(-(-next_ordinal // BLOCK_WARCS)):
        try:
            links = decode_links(storage.read_bytes(join_url(dedup_url, block_name(block))))
        except NotFound:
            continue  # (no WARC of the block indexed or dropped a document)
        if links is None:
            raise ClusterError(f"{block_name(block)} was written before duplicate links: rebuild to get cluster sizes")
        for ordinal, link in links.items():
            children.append(link.gids(ordinal))
            parents.append(link.dup_of)
    empty = np.zeros(0, np.uint64)
    return Links.of(np.concatenate(children or [empty]), np.concatenate(parents or [empty]))


class _KeptGids:
    """Each committed WARC's kept documents' gids, in order, handed out as the shards place them."""

    def __init__(self, storage: Storage, out_url: str):
        self.reader = RecordReader(storage, join_url(out_url, DEDUP_DIR))
        self.taken: dict[int, int] = defaultdict(int)

    def take(self, ordinal: int, n: int) -> np.ndarray:
        rows, _ = self.reader.rows(ordinal)
        if rows is None:
            raise ClusterError(f"WARC #{ordinal} placed {n} documents but has no dedup rows")
        kept = np.asarray(rows.index, bool).copy()
        if rows.near is not None:  # (indexed near duplicates: not placed)
            kept[np.flatnonzero(kept)[np.asarray(rows.near, bool)]] = False
        at = self.taken[ordinal]
        gids = make_gids(ordinal, kept.size)[kept][at : at + n]
        if gids.size != n:
            raise ClusterError(f"WARC #{ordinal}: the shards place {at + n} of its documents, dedup kept "
                               f"{int(kept.sum())}")
        self.taken[ordinal] = at + n
        return gids


@dataclass(frozen=True)
class ClusterSummary:
    documents: int
    duplicates: int  # dropped as duplicates of this build's documents
    prior_duplicates: int  # dropped as duplicates of an earlier output's (dedup.against)
    histogram: dict[str, int]  # documents by cluster size, FineWeb-2's limits
    files: dict[str, str]  # sha256 of each shard's sizes file
    against: list[dict]  # per earlier output with duplicates here: {against (its position), file, duplicates}
    unplaced: int = 0  # duplicates of a document dedup.paragraphs then dropped (a cluster with no kept document)

    def to_json(self) -> dict:
        return {"documents": self.documents, "duplicates": self.duplicates,
                "prior_duplicates": self.prior_duplicates, "histogram": self.histogram, "files": self.files,
                "against": self.against, **({"unplaced_duplicates": self.unplaced} if self.unplaced else {}),
                "weights": "FineWeb-2 (huggingface/fineweb-2 README): " + json.dumps(FINEWEB2_WEIGHTS)}


def against_name(k: int) -> str:
    return f"against-{k:02d}.npz"


def _write_against(storage: Storage, folder: str, clusters: Clusters, against: int) -> list[dict]:
    """Per earlier output (``dedup.against``) whose documents this build's duplicates reach: their ids there and
    how many reach each (``clusters/against-KK.npz``), so that the earlier output's sizes can count them."""
    out = []
    number = clusters.prior_roots >> np.uint64(PRIOR_SHIFT)
    for k in range(against):
        mine = number == k + 1
        if not mine.any():
            continue
        buf = io.BytesIO()
        np.savez(buf, gids=clusters.prior_roots[mine] & np.uint64((1 << PRIOR_SHIFT) - 1),
                 dups=clusters.prior_dups[mine])
        storage.write_atomic(join_url(folder, against_name(k)), buf.getvalue())
        out.append({"against": k, "file": against_name(k), "duplicates": int(clusters.prior_dups[mine].sum())})
    return out  # (by position in dedup.against, which run.json lists with each output's identity)


def histogram(sizes: np.ndarray) -> dict[str, int]:
    """Documents by cluster size, in FineWeb-2's bins (``1``, ``2``, ``3-4``, ``5-99``, ``100-999``, ``1000+``)."""
    limits = sorted(FINEWEB2_WEIGHTS)
    names = [str(a) if b - a == 1 else f"{a}-{b - 1}" for a, b in itertools.pairwise(limits)]
    names.append(f"{limits[-1]}+")
    at = np.searchsorted(np.array(limits), np.asarray(sizes, np.int64), side="right") - 1
    counts = np.bincount(at, minlength=len(limits)) if at.size else np.zeros(len(limits), np.int64)
    return {name: int(c) for name, c in zip(names, counts, strict=True)}


def bin_floor(name: str) -> int:
    """The smallest cluster size of a :func:`histogram` bin (``3-4``: 3, ``1000+``: 1000)."""
    return int(name.split("-")[0].rstrip("+"))


def ordered(histogram: dict[str, int]) -> list[tuple[str, int]]:
    """A histogram's bins by size (``summary.json`` keeps them sorted as text: ``1``, ``100-999``, ``1000+``, ``2``)."""
    return sorted(histogram.items(), key=lambda kv: bin_floor(kv[0]))


def read_cluster_summary(storage: Storage, out_url: str) -> dict | None:
    """``clusters/clusters.json`` of the output (None: it has none)."""
    try:
        return json.loads(storage.read_bytes(join_url(join_url(out_url, CLUSTERS_DIR), SUMMARY_FILE)))
    except NotFound:
        return None


def write_cluster_sizes(storage: Storage, out_url: str, shards: int, next_ordinal: int,
                        against: tuple[str, ...] = ()) -> ClusterSummary:
    """Write every shard's cluster sizes, what this build adds to the earlier outputs' (``against``), and the
    summary (end of a filter-mode build with dedup)."""
    clusters = Clusters.of(read_links(storage, out_url, next_ordinal))
    folder, files, every = join_url(out_url, CLUSTERS_DIR), {}, []
    for i, sizes in enumerate(_shard_sizes(storage, out_url, shards, clusters)):
        data = sizes.astype("<u4").tobytes()
        storage.write_atomic(join_url(folder, sizes_name(i)), data)
        files[sizes_name(i)] = hashlib.sha256(data).hexdigest()
        every.append(sizes)
    sizes = np.concatenate(every or [np.zeros(0, np.uint32)])
    placed = int(sizes.astype(np.int64).sum() - sizes.size)
    summary = ClusterSummary(int(sizes.size), placed, clusters.prior, histogram(sizes), files,
                             _write_against(storage, folder, clusters, len(against)),
                             int(clusters.dups.sum()) - placed)
    storage.write_atomic(join_url(folder, SUMMARY_FILE), canonical_json(summary.to_json()))
    return summary


def _shard_sizes(storage: Storage, out_url: str, shards: int, clusters: Clusters):
    """Each shard's documents' cluster sizes, in shard order."""
    kept = _KeptGids(storage, out_url)
    for i in range(shards):
        meta = json.loads(storage.read_bytes(join_url(join_url(out_url, SHARDS_DIR), shard_name(i) + ".json")))
        gids = [kept.take(int(s["ordinal"]), int(s["docs"])) for s in meta["sources"]]
        yield clusters.sizes(np.concatenate(gids or [np.zeros(0, np.uint64)]))


def sizes_with_later(storage: Storage, out_url: str, later: tuple[str, ...]) -> list[np.ndarray]:
    """The output's cluster sizes per shard, counting also the duplicates that ``later`` builds (deduplicated
    against it with ``dedup.against``) dropped of its documents."""
    state = Ledger(storage, out_url).load()
    own = [np.frombuffer(storage.read_bytes(join_url(join_url(out_url, CLUSTERS_DIR), sizes_name(i))), "<u4")
           for i in range(state.packer.shards_closed)]
    mine, named = ledger_fingerprint(storage, out_url), []
    for url in later:
        summary, run = read_cluster_summary(storage, url), Ledger(storage, url).read_run() or {}
        if summary is None:
            raise ClusterError(f"{url}: no {CLUSTERS_DIR}/{SUMMARY_FILE} (not a finished filter-mode build with dedup)")
        earlier = [e["ledger_fingerprint"] for e in run.get("dedup_against", [])]
        if mine not in earlier:
            raise ClusterError(f"{url} was not built against {out_url} as it is now (dedup.against, with each "
                               "output's ledger fingerprint, in its run.json)")
        for entry in summary.get("against", []):
            if earlier[entry["against"]] == mine:
                data = storage.read_bytes(join_url(join_url(url, CLUSTERS_DIR), entry["file"]))
                with np.load(io.BytesIO(data)) as z:
                    named.append(np.repeat(z["gids"], z["dups"]))
    if not named:
        return own
    added = Clusters.of(read_links(storage, out_url, state.next_ordinal), np.concatenate(named))
    return [o + (a - 1) for o, a in zip(own, _shard_sizes(storage, out_url, len(own), added), strict=True)]
