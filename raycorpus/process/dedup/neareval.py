"""Near-dedup accuracy and memory for ``raycorpus eval`` (Ray-free).

- document level, on the two labelled near-duplicate sets (:mod:`raycorpus.process.dedup.nearset`: versions of
  the extraction test pages from several extractors; :mod:`raycorpus.process.dedup.nearweb`: readability and WARC
  pages with the copies the web makes), each whole and by half (tuning, validation: :meth:`NearSet.halves`):
  the index's own decisions (:class:`Deduplicator` over in-process shards, the documents in the set's
  order as WARCs of ``WARC_DOCS``) against "an earlier document has exact J >= threshold";
- pairwise, on the hard set of :mod:`raycorpus.process.dedup.benchmark` (pages and four synthetic
  variants each): a pair is predicted a duplicate when it shares a band and the verification data the
  index keeps estimates J >= threshold + verify_margin;
- bytes per indexed document (band tables + id + verification data) from the benchmark's index
  measurement on synthetic signatures.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from raycorpus.process.dedup import nearset
from raycorpus.process.dedup.index import KEEP, Deduplicator, Layout, LocalShards
from raycorpus.process.dedup.settings import DedupConfig
from raycorpus.process.dedup.sketch import Signer
from raycorpus.process.hashing import fmix64

WARC_DOCS = 100


def _scores(predicted: np.ndarray, truth: np.ndarray) -> dict:
    tp = int(np.count_nonzero(predicted & truth))
    fp = int(np.count_nonzero(predicted & ~truth))
    fn = int(np.count_nonzero(~predicted & truth))
    return {"tp": tp, "fp": fp, "fn": fn, "precision": round(tp / max(1, tp + fp), 4),
            "recall": round(tp / max(1, tp + fn), 4)}


def _signer(cfg: DedupConfig) -> Signer:
    return Signer(cfg.num_perm, cfg.ngram, cfg.seed, cfg.verify_sketch == "oph", cfg.oph_bits)


def decisions(ns: nearset.NearSet, cfg: DedupConfig, rows: np.ndarray, n_shards: int = 2
              ) -> tuple[np.ndarray, np.ndarray]:
    """The index's decisions on the set in order, as WARCs of ``WARC_DOCS`` documents: (flagged as a near duplicate,
    the best Jaccard estimated for a band candidate, NaN for none) per document."""
    cfg = cfg.model_copy(update={"exact": False})  # the set has no exact copies; near dedup alone decides
    layout = Layout.from_config(cfg, n_shards)
    dd = Deduplicator(layout, cfg.threshold, LocalShards(layout))
    flagged, verified = [np.zeros(0, bool)], [np.zeros(0, np.float32)]
    for ordinal, i in enumerate(range(0, len(ns.texts), WARC_DOCS)):
        part = rows[i : i + WARC_DOCS]
        hashes = fmix64(np.arange(i + 1, i + 1 + len(part), dtype=np.uint64))  # distinct: no exact matches
        decision, _ = dd.decide(ordinal, hashes, part)
        flagged.append(decision.kind != KEEP)
        verified.append(decision.verified)
    return np.concatenate(flagged), np.concatenate(verified)


def document_level(ns: nearset.NearSet, cfg: DedupConfig, n_shards: int = 2, rows: np.ndarray | None = None) -> dict:
    """The index's decisions on the set in order, scored per document (``rows``: the texts' signature rows)."""
    rows = _signer(cfg).signatures(ns.texts) if rows is None else rows
    flagged, _ = decisions(ns, cfg, rows, n_shards)
    return {"docs": len(ns.texts), "true_duplicates": int(ns.true_duplicate.sum()),
            **_scores(flagged, ns.true_duplicate)}


def hard_set(texts: list[str], cfg: DedupConfig) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The benchmark's hard set: (signature rows, labelled pairs, their exact Jaccard)."""
    from raycorpus.process.dedup.benchmark import build_labelled_docs, labelled_pairs

    docs, group = build_labelled_docs(texts)
    rows = _signer(cfg).signatures(docs)
    pairs, exact = labelled_pairs(docs, group, rows[:, : cfg.num_perm].astype(np.uint64))
    return rows, pairs, exact


def pairwise_hard(hard: tuple[np.ndarray, np.ndarray, np.ndarray], cfg: DedupConfig) -> dict:
    """Pairwise precision/recall on the hard set (:func:`hard_set`) with the index's bands and verification."""
    from raycorpus.process.dedup.benchmark import THRESHOLD

    rows, pairs, exact = hard
    layout = Layout.from_config(cfg, 1)
    a, b = pairs[:, 0], pairs[:, 1]
    keys = layout.keys(rows[:, : cfg.num_perm])
    shared = (keys[a] == keys[b]).any(axis=1)
    stored = layout.stored(rows)
    est = np.array([layout.estimate(stored[i], stored[j]) for i, j in pairs])
    predicted = shared & (est >= cfg.threshold + layout.margin)
    return {"docs": len(rows), "pairs": len(pairs), **_scores(predicted, exact >= THRESHOLD)}


def bytes_per_doc(n_docs: int = 200_000) -> dict:
    """Band tables + id + verification data per indexed document (one shard, grown from empty and presized)."""
    from raycorpus.process.dedup.benchmark import bench_index

    out = {}
    for row in bench_index([n_docs], runs=1):
        out[row["start"]] = round(row["table_B_per_doc"] + row["store_B_per_doc"], 1)
    return {"docs": n_docs, **out}


def split_scores(ns: nearset.NearSet, cfg: DedupConfig, rows: np.ndarray | None = None) -> dict:
    """``cfg``'s document-level scores on the whole set and on each of its halves (:meth:`NearSet.halves`)."""
    rows = _signer(cfg).signatures(ns.texts) if rows is None else rows
    tuning = ns.halves()
    return {"pages": len(set(ns.page.tolist())), "clusters": len(set(ns.clusters().tolist())),
            "all": document_level(ns, cfg, rows=rows),
            "tuning": document_level(ns.subset(tuning), cfg, rows=rows[tuning]),
            "validation": document_level(ns.subset(~tuning), cfg, rows=rows[~tuning]),
            "skipped_extractors": ns.skipped}


def parameters(cfg: DedupConfig) -> dict:
    """The near-dedup parameters ``raycorpus eval`` scores (bands, rows, sketch, margin)."""
    from raycorpus.process.dedup.sketch import OPH_BYTES

    b, r = cfg.bands_rows
    sketch = (f"OPH {OPH_BYTES * 8 // cfg.oph_bits} x {cfg.oph_bits} bits ({OPH_BYTES} B)"
              if cfg.verify_sketch == "oph" else f"MinHash {cfg.num_perm} x {cfg.signature_bits} bits")
    return {"bands": b, "rows": r, "sketch": sketch if cfg.verify else "none (verify off)",
            "verify_margin": cfg.verify_margin, "threshold": cfg.threshold, "index_duplicates": cfg.index_duplicates}


SET_LABELS = {"extraction": "extraction set (versions of the extraction test pages from several extractors)",
              "web": "web set (readability and WARC pages: boilerplate, comments, timestamps, truncation, reordering, "
                     "syndication)"}


def evaluate_near_dedup(extraction_dir: str | Path, cfg: DedupConfig | None = None, every: int = 1,
                        warc_dir: str | Path | None = None) -> dict:
    """The dedup section of ``raycorpus eval``: both labelled sets (``extraction`` from the pages under
    ``extraction_dir``; ``web`` from its readability pages and the WARCs under ``warc_dir``), whole and by half;
    the hard set pairwise; memory (``every``: of every k-th page, memory at 200 k / k documents)."""
    from raycorpus.process.dedup.benchmark import load_texts
    from raycorpus.process.dedup.neartune import load_sets

    cfg = cfg or DedupConfig()
    sets = load_sets(Path(extraction_dir), Path(warc_dir) if warc_dir else None, every)
    out: dict = {"parameters": parameters(cfg), "sets": {name: split_scores(ns, cfg) for name, ns in sets.items()}}
    if (Path(extraction_dir) / "trafilatura-eval").is_dir():
        texts = load_texts(Path(extraction_dir) / "trafilatura-eval")[::every]
        out["hard_set_pairwise"] = pairwise_hard(hard_set(texts, cfg), cfg)
    out["bytes_per_indexed_doc"] = bytes_per_doc(200_000 // every)
    return out


def format_near_dedup(res: dict) -> str:
    p = res["parameters"]
    lines = [f"near dedup (J >= {p['threshold']}), document level, parameters: {p['bands']} bands x {p['rows']} rows, "
             f"verified by {p['sketch']} at estimated J >= {p['threshold']} + verify_margin {p['verify_margin']}"
             f"{', near duplicates indexed' if p['index_duplicates'] else ''} (chosen on the tuning halves: "
             "python -m raycorpus.process.dedup.neartune)"]
    for name, s in res["sets"].items():
        a = s["all"]
        lines.append(f"  {SET_LABELS.get(name, name)}: {a['docs']} versions of {s['pages']} pages "
                     f"({s['clusters']} clusters), {a['true_duplicates']} true duplicates")
        for part in ("all", "tuning", "validation"):
            d = s[part]
            lines.append(f"    {part:<10} P {d['precision']:.4f} R {d['recall']:.4f} ({d['docs']} docs, "
                         f"{d['true_duplicates']} true duplicates; tp {d['tp']} fp {d['fp']} fn {d['fn']})")
        lines += [f"    skipped {k}: {why}" for k, why in s["skipped_extractors"].items()]
    if "hard_set_pairwise" in res:
        h = res["hard_set_pairwise"]
        lines.append(f"  pairwise on the benchmark's hard set ({h['pairs']} pairs): P {h['precision']:.4f} "
                     f"R {h['recall']:.4f}")
    m = res["bytes_per_indexed_doc"]
    lines.append(f"  bytes per indexed document (tables + id + verification, {m['docs']:,} docs): "
                 f"{m.get('empty')} grown, {m.get('presized')} presized")
    return "\n".join(lines)
