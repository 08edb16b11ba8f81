"""``raycorpus bench --split``: one WARC shared by 2 workers (``run.split_warcs``) against 1 worker.

Four real Ray runs, interleaved and repeated (``repeats`` rounds after a warm-up round, medians reported)
so that a machine shared with other work slows them alike: one WARC with 1 worker, the same WARC cut into
ranges with 2 workers, and for reference the same WARC listed twice (2 WARCs: nothing to cut) with 1
and with 2 workers. A run's time is its processing wall time (``this_run.wall_seconds``: from the first
worker ready to the last commit; actor start-up is reported apart); the split runs' output is checked
to be the unsplit one's. ``busy`` (the workers' processing seconds over wall x workers) says whether the
workers had work, a figure a machine loaded by other jobs changes less than the wall time.
"""

from __future__ import annotations

import hashlib
import statistics
import tempfile
from pathlib import Path

from raycorpus.config import Config
from raycorpus.output.summary import RunSummary

VARIANTS = {  # name: (copies of the WARC in the manifest, workers, run.split_warcs)
    "1 WARC, 1 worker": (1, 1, "off"),
    "1 WARC, 2 workers, split": (1, 2, "auto"),
    "2 WARCs, 1 worker": (2, 1, "off"),
    "2 WARCs, 2 workers": (2, 2, "off"),
}


def _manifest(warc: str, copies: int, folder: Path) -> str:
    """A manifest listing ``warc`` ``copies`` times (a local file through symlinks with distinct names)."""
    urls = [warc]
    for k in range(1, copies):
        link = folder / f"copy{k}-{Path(warc).name}"
        if not link.exists():
            link.symlink_to(Path(warc).resolve())
        urls.append(str(link))
    path = folder / f"x{copies}.paths"
    path.write_text("".join(f"{u}\n" for u in urls))
    return str(path)


def _shards_digest(out: Path) -> str:
    h = hashlib.sha256()
    for p in sorted((out / "shards").iterdir()):
        h.update(p.name.encode() + p.read_bytes())
    return h.hexdigest()


def _busy(out: Path, wall: float, workers: int) -> float:
    """The share of the run's wall time its workers were processing (their seconds on the WARCs / wall x
    workers): whether they had work, which a machine loaded by other jobs changes less than the wall time."""
    from raycorpus import counts as ck
    from raycorpus.ingest.storage import Storage
    from raycorpus.output.ledger import Ledger

    return Ledger(Storage(), str(out)).load().totals[ck.WORKER_MS] / 1000 / (wall * workers)


def _run(cfg: Config, token_meta: dict, manifest: str, out: Path, workers: int, split) -> RunSummary:
    from raycorpus.runtime.driver import run_build

    run_cfg = cfg.model_copy(update={
        "input": cfg.input.model_copy(update={"manifest": manifest, "base": None, "limit": None}),
        "output": cfg.output.model_copy(update={"path": str(out)}),
        "ray": cfg.ray.model_copy(update={"workers": workers, "max_workers": workers}),
        "run": cfg.run.model_copy(update={"progress": "off", "split_warcs": split}),
    })
    return run_build(run_cfg, token_meta)


def bench_split(cfg: Config, warc: str, token_meta: dict, repeats: int = 3) -> dict:
    walls: dict[str, list[float]] = {name: [] for name in VARIANTS}
    starts: dict[str, list[float]] = {name: [] for name in VARIANTS}
    busy: dict[str, list[float]] = {name: [] for name in VARIANTS}
    info: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="raycorpus-bench-split-") as tmp:
        folder = Path(tmp)
        for r in range(repeats + 1):  # round 0 warms caches and the object store
            for name, (copies, workers, split) in VARIANTS.items():
                out = folder / f"out-{r}-{copies}-{workers}-{split}"
                s = _run(cfg, token_meta, _manifest(warc, copies, folder), out, workers, split)
                run = s.this_run
                info[name] = {"docs_in": s.docs.in_, "warc_ranges": run.warc_ranges, "shards": _shards_digest(out)}
                if r:
                    walls[name].append(run.wall_seconds)
                    starts[name].append(run.startup_seconds)
                    busy[name].append(_busy(out, run.wall_seconds, workers))
    med = {name: statistics.median(w) for name, w in walls.items()}
    runs = {name: {**info[name], "wall_seconds": round(med[name], 3), "runs": [round(w, 2) for w in walls[name]],
                   "startup_seconds": round(statistics.median(starts[name]), 3),
                   "workers_busy": round(statistics.median(busy[name]), 3),
                   "docs_per_second": round(info[name]["docs_in"] / med[name], 1)} for name in VARIANTS}
    one, two = list(VARIANTS)[:2], list(VARIANTS)[2:]

    def paired(a: str, b: str) -> float:  # the median of each round's ratio: the load of a round cancels out
        return round(statistics.median(x / y for x, y in zip(walls[a], walls[b], strict=True)), 3)

    return {
        "warc": warc, "repeats": repeats, "runs": runs,
        "same_output": runs[one[0]]["shards"] == runs[one[1]]["shards"],
        "scaling_one_warc": round(med[one[0]] / med[one[1]], 3),
        "scaling_two_warcs": round(med[two[0]] / med[two[1]], 3),
        "scaling_one_warc_paired": paired(*one),
        "scaling_two_warcs_paired": paired(*two),
    }


def format_split(b: dict) -> str:
    lines = [f"one WARC over 2 workers ({b['warc']}; real Ray, processing wall time, median of {b['repeats']} "
             "rounds after a warm-up):",
             f"{'run':<28}{'ranges':>7}{'docs in':>9}{'wall s':>9}{'docs/s':>9}{'busy':>7}{'start-up s':>12}  runs"]
    for name, r in b["runs"].items():
        lines.append(f"{name:<28}{r['warc_ranges']:>7}{r['docs_in']:>9}{r['wall_seconds']:>9.2f}"
                     f"{r['docs_per_second']:>9.1f}{r['workers_busy']:>7.2f}{r['startup_seconds']:>12.2f}  "
                     f"{', '.join(map(str, r['runs']))}")
    lines.append("busy: the workers' processing seconds / (wall x workers), the share of the wall they had work")
    lines.append(f"scaling 1 -> 2 workers (ratio of medians; median of the rounds' ratios): one WARC cut into "
                 f"ranges {b['scaling_one_warc']:.3f}; {b['scaling_one_warc_paired']:.3f}; two WARCs (reference) "
                 f"{b['scaling_two_warcs']:.3f}; {b['scaling_two_warcs_paired']:.3f}; "
                 f"split output identical: {'yes' if b['same_output'] else 'NO'}")
    return "\n".join(lines)
