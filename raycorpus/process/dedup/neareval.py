"""Near-dedup accuracy and memory for ``raycorpus eval`` (Ray-free).

- document level, on the near-duplicate set of real pages (:mod:`raycorpus.process.dedup.nearset`):
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
    return Signer(cfg.num_perm, cfg.ngram, cfg.seed, cfg.verify_sketch == "oph")


def document_level(ns: nearset.NearSet, cfg: DedupConfig, n_shards: int = 2, rows: np.ndarray | None = None) -> dict:
    """The index's decisions on the set in order, scored per document (``rows``: the texts' signature rows)."""
    rows = _signer(cfg).signatures(ns.texts) if rows is None else rows
    cfg = cfg.model_copy(update={"exact": False})  # the set has no exact copies; near dedup alone decides
    layout = Layout.from_config(cfg, n_shards)
    dd = Deduplicator(layout, cfg.threshold, LocalShards(layout))
    flagged = []
    for ordinal, i in enumerate(range(0, len(ns.texts), WARC_DOCS)):
        part = rows[i : i + WARC_DOCS]
        hashes = fmix64(np.arange(i + 1, i + 1 + len(part), dtype=np.uint64))  # distinct: no exact matches
        decision, _ = dd.decide(ordinal, hashes, part)
        flagged.append(decision.kind != KEEP)
    return {"docs": len(ns.texts), "true_duplicates": int(ns.true_duplicate.sum()),
            **_scores(np.concatenate(flagged) if flagged else np.zeros(0, bool), ns.true_duplicate)}


MARGINS = (0.0, 0.0025, 0.005, 0.0075, 0.01, 0.0125, 0.015)


def held_out(ns: nearset.NearSet, cfg: DedupConfig, rows: np.ndarray, margins: tuple[float, ...] = MARGINS,
             precision: float = 0.99) -> list[dict]:
    """Two-fold check of ``verify_margin`` (tuned on the whole set): the pages split by parity; on each half the
    margin with the best recall at ``precision`` or more is chosen, and scored on the other half, with the
    shipped margin's figures on that half beside it."""
    halves = [ns.page % 2 == k for k in (0, 1)]
    scores = [{m: document_level(ns.subset(h), cfg.model_copy(update={"verify_margin": m}), rows=rows[h])
               for m in sorted({*margins, cfg.verify_margin})} for h in halves]
    out = []
    for tune, test in ((0, 1), (1, 0)):
        meets = [m for m in margins if scores[tune][m]["precision"] >= precision]
        chosen = max(meets, key=lambda m: (scores[tune][m]["recall"], -m)) if meets else max(margins)
        out.append({"tuned_on": tune, "margin": chosen, "test": scores[test][chosen],
                    "shipped": scores[test][cfg.verify_margin]})
    return out


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


def evaluate_near_dedup(extraction_dir: str | Path, cfg: DedupConfig | None = None, every: int = 1) -> dict:
    """The dedup section of ``raycorpus eval`` (``every``: of every k-th page, memory at 200 k / k documents)."""
    from raycorpus.process.dedup.benchmark import load_texts

    cfg = cfg or DedupConfig()
    ns = nearset.build(Path(extraction_dir), every=every)
    texts = load_texts(Path(extraction_dir) / "trafilatura-eval")[::every]
    rows = _signer(cfg).signatures(ns.texts)
    return {
        "near_set": {**document_level(ns, cfg, rows=rows), "skipped_extractors": ns.skipped},
        "held_out": held_out(ns, cfg, rows),
        "hard_set_pairwise": pairwise_hard(hard_set(texts, cfg), cfg),
        "bytes_per_indexed_doc": bytes_per_doc(200_000 // every),
    }


def format_near_dedup(res: dict) -> str:
    d, p, m = res["near_set"], res["hard_set_pairwise"], res["bytes_per_indexed_doc"]
    lines = [
        f"near dedup (J >= 0.8): document level on {d['docs']} versions of real pages "
        f"({d['true_duplicates']} true duplicates): P {d['precision']:.4f} R {d['recall']:.4f} "
        f"(tp {d['tp']} fp {d['fp']} fn {d['fn']})",
        f"  pairwise on the benchmark's hard set ({p['pairs']} pairs): P {p['precision']:.4f} R {p['recall']:.4f}",
        f"  bytes per indexed document (tables + id + verification, {m['docs']:,} docs): "
        f"{m.get('empty')} grown, {m.get('presized')} presized",
    ]
    for h in res["held_out"]:
        t, s = h["test"], h["shipped"]
        lines.append(f"  held out: margin {h['margin']} chosen on half {h['tuned_on']} of the pages, on the other half "
                     f"P {t['precision']:.4f} R {t['recall']:.4f} (shipped {s['precision']:.4f} / {s['recall']:.4f})")
    lines += [f"  skipped {k}: {why}" for k, why in d["skipped_extractors"].items()]
    return "\n".join(lines)
