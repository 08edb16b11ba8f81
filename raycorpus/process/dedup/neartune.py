"""Choosing the near-dedup parameters (bands, rows, verification sketch, margin) on the tuning halves only.

``python -m raycorpus.process.dedup.neartune [--extraction DIR] [--warc DIR] [--json PATH]``

The two labelled sets (:mod:`~raycorpus.process.dedup.nearset`: versions of the extraction test pages from several
extractors; :mod:`~raycorpus.process.dedup.nearweb`: the readability and WARC pages with the copies the web makes)
are each split by cluster into a tuning and a validation half (:meth:`NearSet.halves`). Every grid point is scored
on the tuning halves, by the index's own decisions (:func:`neareval.decisions`); the rule (:func:`choose`) picks
one from those figures alone, and only then are the chosen point and the shipped defaults scored on the
validation halves.

The grid: ``bands x rows`` of at most ``num_perm`` (112) values whose candidate probability at J = 0.8 is at least
0.85, each verification sketch of :data:`SKETCHES`, each margin of :data:`MARGINS`; a point is left out when its
index would take more than :data:`BUDGET` bytes per indexed document at the worst load of a grown table
(:func:`bytes_per_doc`). With ``index_duplicates`` every document is indexed whatever it is decided, so a
document's best candidate estimate does not depend on the margin, and one pass of the index scores every margin.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from raycorpus.process.dedup import neareval, nearset
from raycorpus.process.dedup.minhash import MinHasher, candidate_probability
from raycorpus.process.dedup.settings import DedupConfig
from raycorpus.process.dedup.sketch import OPH_BYTES, oph_sketch
from raycorpus.process.hashing import folded

BUDGET = 500.0  # bytes per indexed document: band and exact tables, id, verification sketch
SLOT_BYTES = 12  # a table slot: uint64 key + uint32 document number
MIN_LOAD = 0.64  # a grown table's load stays in [0.8 / 1.25, 0.8]
KEPT_SHARE = 0.8  # indexed documents that are kept (URL key + content hash); the others are near duplicates
MIN_CANDIDATE_PROBABILITY = 0.85  # at J = 0.8: fewer candidates than this lose recall no margin can win back
MIN_ROWS = 4  # 2 or 3 rows make most pairs of related pages candidates (J = 0.3: 0.73 with 14 x 2): verifying cost
MARGINS = tuple(round(0.0025 * k, 4) for k in range(13))  # 0 .. 0.03
PRECISION = 0.99  # the target: P >= 0.99 and R >= 0.95 at J >= 0.8
RECALL = 0.95
#: verification sketches (each one the index has; the OPH shapes take the memory figure's 192 B, b-bit MinHash
#: 224 B): name -> the dedup settings that select it
SKETCHES: dict[str, dict] = {
    **{f"oph {OPH_BYTES * 8 // bits}x{bits}": {"verify_sketch": "oph", "oph_bits": bits} for bits in (1, 2, 4)},
    "minhash 112x16": {"verify_sketch": "minhash", "signature_bits": 16},
}


def sketch_name(cfg: DedupConfig) -> str:
    """The :data:`SKETCHES` name of ``cfg``'s verification sketch."""
    if cfg.verify_sketch == "minhash":
        return f"minhash {cfg.num_perm}x{cfg.signature_bits}"
    return f"oph {OPH_BYTES * 8 // cfg.oph_bits}x{cfg.oph_bits}"


def sketch_bytes(sketch: str, num_perm: int = 112) -> int:
    return OPH_BYTES if SKETCHES[sketch]["verify_sketch"] == "oph" else num_perm * 2


def bytes_per_doc(bands: int, sketch: str, num_perm: int = 112) -> float:
    """Bytes per indexed document at the worst load of a grown table: (bands + 2 exact keys of a kept document)
    slots of 12 B at load 0.64, an 8-byte id and the sketch (the measured figure is lower: docs/benchmarks.md)."""
    return SLOT_BYTES / MIN_LOAD * (bands + 2 * KEPT_SHARE) + 8 + sketch_bytes(sketch, num_perm)


@dataclass(frozen=True)
class Point:
    bands: int
    rows: int
    sketch: str
    margin: float

    def config(self, base: DedupConfig | None = None) -> DedupConfig:
        """The DedupConfig of this point."""
        return (base or DedupConfig()).model_copy(update={"bands": self.bands, "rows": self.rows,
                                                         "verify_margin": self.margin, **SKETCHES[self.sketch]})


class Rows:
    """A set's signature rows for each sketch, from the shingle hashes of its texts computed once."""

    def __init__(self, ns: nearset.NearSet, cfg: DedupConfig):
        mh = MinHasher(cfg.num_perm, cfg.ngram, cfg.seed)
        self.shingles = [mh.shingle_hashes_of(folded(t)) for t in ns.texts]
        self.minhash = np.array([mh.signature_of(x) for x in self.shingles], np.uint64).reshape(
            len(ns.texts), cfg.num_perm).astype(np.uint32)
        self.cfg = cfg
        self._rows: dict[str, np.ndarray] = {}

    def of(self, sketch: str) -> np.ndarray:
        """The rows :class:`~raycorpus.process.dedup.sketch.Signer` gives with that sketch."""
        if sketch not in self._rows:
            settings = SKETCHES[sketch]
            if settings["verify_sketch"] == "minhash":
                self._rows[sketch] = self.minhash
            else:
                sk = oph_sketch(settings["oph_bits"], self.cfg.seed)
                words = np.array([sk.sketch(x) for x in self.shingles], np.uint32).reshape(len(self.shingles),
                                                                                          sk.words)
                self._rows[sketch] = np.concatenate([self.minhash, words], axis=1)
        return self._rows[sketch]


def margin_scores(ns: nearset.NearSet, verified: np.ndarray, threshold: float,
                  margins: tuple[float, ...] = MARGINS) -> dict[float, dict]:
    """Document-level scores of every margin from the best candidate estimates (index_duplicates: the index holds
    every document whatever it was decided, so a document's candidates do not depend on the margin)."""
    truth = ns.true_duplicate
    with np.errstate(invalid="ignore"):
        return {m: {"docs": len(ns.texts), "true_duplicates": int(truth.sum()),
                    **neareval._scores(verified >= threshold + m, truth)} for m in margins}


def grid(num_perm: int = 112, budget: float = BUDGET, sketches: tuple[str, ...] = tuple(SKETCHES)
         ) -> list[tuple[int, int, str]]:
    """(bands, rows, sketch) of the grid, within the memory budget."""
    out = []
    for sketch in sketches:
        for bands in range(4, num_perm + 1):
            if bytes_per_doc(bands, sketch, num_perm) > budget:
                break
            for rows in range(MIN_ROWS, num_perm // bands + 1):
                if candidate_probability(0.8, bands, rows) >= MIN_CANDIDATE_PROBABILITY:
                    out.append((bands, rows, sketch))
    return out


def score_grid(sets: dict[str, nearset.NearSet], rows: dict[str, Rows], cfg: DedupConfig,
               points: list[tuple[int, int, str]]) -> list[dict]:
    """Per grid point and margin, the scores on each of ``sets`` (the tuning halves)."""
    out = []
    for bands, r, sketch in points:
        point = Point(bands, r, sketch, 0.0).config(cfg)
        per_set = {name: margin_scores(ns, neareval.decisions(ns, point, rows[name].of(sketch))[1], cfg.threshold)
                   for name, ns in sets.items()}
        for m in MARGINS:
            out.append({"bands": bands, "rows": r, "sketch": sketch, "margin": m,
                        "bytes_per_doc": round(bytes_per_doc(bands, sketch, cfg.num_perm), 1),
                        **{name: per_set[name][m] for name in sets}})
    return out


def choose(scored: list[dict], sets: tuple[str, ...], precision: float = PRECISION) -> dict:
    """The rule, precision first: of the points with P >= ``precision`` on every tuning half, the one with the best
    recall on its worst half, then the best mean recall; then the smaller index (bytes), then the larger margin."""
    ok = [s for s in scored if min(s[n]["precision"] for n in sets) >= precision]
    if not ok:
        raise ValueError(f"no grid point reaches P >= {precision} on every tuning half")
    return max(ok, key=lambda s: (min(s[n]["recall"] for n in sets), sum(s[n]["recall"] for n in sets),
                                  -s["bytes_per_doc"], s["margin"]))


def load_sets(extraction_dir: Path, warc_dir: Path | None, every: int = 1) -> dict[str, nearset.NearSet]:
    """The two labelled sets: ``extraction`` (nearset) and ``web`` (nearweb), those whose data is present."""
    from raycorpus.process.dedup import nearweb

    sets = {}
    if (Path(extraction_dir) / "trafilatura-eval").is_dir():
        sets["extraction"] = nearset.build(Path(extraction_dir), every=every)
    readability = Path(extraction_dir) / "readability"
    if readability.is_dir() or (warc_dir and Path(warc_dir).is_dir()):
        sets["web"] = nearweb.build(readability if readability.is_dir() else None, warc_dir, every=every)
    return sets


def validation_scores(sets: dict[str, nearset.NearSet], cfg: DedupConfig) -> dict[str, dict]:
    """``cfg``'s document-level scores on each set's validation half."""
    out = {}
    for name, ns in sets.items():
        val = ns.subset(~ns.halves())
        out[name] = neareval.document_level(val, cfg, rows=Rows(val, cfg).of(sketch_name(cfg)))
    return out


def tune(sets: dict[str, nearset.NearSet], cfg: DedupConfig | None = None,
         points: list[tuple[int, int, str]] | None = None, baselines: dict[str, DedupConfig] | None = None) -> dict:
    """Score the grid on the tuning halves and choose by :func:`choose`; then, and only then, score the choice
    and the ``baselines`` (default: the shipped settings, ``cfg``) on the validation halves."""
    cfg = cfg or DedupConfig()
    tuning = {name: ns.subset(ns.halves()) for name, ns in sets.items()}
    rows = {name: Rows(ns, cfg) for name, ns in tuning.items()}
    scored = score_grid(tuning, rows, cfg, points if points is not None else grid(cfg.num_perm))
    chosen = choose(scored, tuple(sets))
    point = Point(chosen["bands"], chosen["rows"], chosen["sketch"], chosen["margin"])
    configs = {"chosen": point.config(cfg), **(baselines or {"shipped": cfg})}
    return {"points": len(scored), "chosen": chosen,
            "tuning": {label: next((s for s in scored if (s["bands"], s["rows"], s["sketch"], s["margin"]) ==
                                    (*c.bands_rows, sketch_name(c), c.verify_margin)), None)
                       for label, c in configs.items()},
            "validation": {label: validation_scores(sets, c) for label, c in configs.items()},
            "top": sorted(scored, key=lambda s: (-min(s[n]["precision"] >= PRECISION for n in sets),
                                                 -min(s[n]["recall"] for n in sets)))[:15]}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m raycorpus.process.dedup.neartune", description=__doc__.split("\n")[0])
    p.add_argument("--extraction", type=Path, default=Path("../shared/data/extraction"))
    p.add_argument("--warc", type=Path, default=Path("../shared/data/warc"))
    p.add_argument("--every", type=int, default=1, help="sets from every k-th page")
    p.add_argument("--json", type=Path, help="also write the report (the best points' tuning scores) here")
    args = p.parse_args(argv)
    sets = load_sets(args.extraction, args.warc, args.every)
    if not sets:
        print(f"no labelled sets: nothing under {args.extraction} or {args.warc}", file=sys.stderr)
        return 2
    report = tune(sets, baselines={"default": DedupConfig(), "before": DedupConfig(oph_bits=1, verify_margin=0.005)})
    c = report["chosen"]
    print(f"{report['points']} grid points scored on the tuning halves of {', '.join(sets)}")
    print(f"chosen: {c['bands']} bands x {c['rows']} rows, {c['sketch']}, margin {c['margin']} "
          f"({c['bytes_per_doc']} B per indexed document at worst)")
    for label, per_set in report["validation"].items():
        tuned = report["tuning"][label]
        for name, s in per_set.items():
            t = f"tuning P {tuned[name]['precision']:.4f} R {tuned[name]['recall']:.4f}, " if tuned else ""
            print(f"  {label:<8} {name:<11} {t}validation P {s['precision']:.4f} R {s['recall']:.4f} "
                  f"({s['docs']} docs, {s['true_duplicates']} true duplicates)")
    print("best on the tuning halves:")
    for s in report["top"]:
        print(f"  {s['bands']:>3} x {s['rows']} {s['sketch']:<15} margin {s['margin']:<6} {s['bytes_per_doc']:>6} B  "
              + "  ".join(f"{n} P {s[n]['precision']:.4f} R {s[n]['recall']:.4f}" for n in sets))
    if args.json:
        args.json.write_text(json.dumps(report, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
