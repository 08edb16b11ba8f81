"""End-to-end rate of the real Ray pipeline, next to the in-process bound (``raycorpus bench``).

The input WARCs are listed ``copies`` times (local files through symlinks with distinct
names) so that several workers have something to share; the bound is measured by
:func:`raycorpus.cli.bench.bench_chain` over exactly the same list, dedup included, so the two
rates are of the same work. Each worker count is run ``repeats`` times after a warm-up
run into a fresh output folder; the rate is input documents per wall second, counted from
the moment the workers are ready (actor start-up is reported apart).
"""

from __future__ import annotations

import os
import statistics
import tempfile
from pathlib import Path

from raycorpus.config import Config
from raycorpus.ingest.storage import is_remote


def bench_input(warcs: list[str], copies: int, folder: Path) -> tuple[str, list[str]]:
    """A manifest listing ``warcs`` ``copies`` times; returns (manifest path, its urls)."""
    urls = []
    for k in range(copies):
        for i, w in enumerate(warcs):
            if is_remote(w):
                urls.append(w)
                continue
            link = folder / f"copy{k:03d}-{i:04d}-{Path(w).name}"
            if not link.exists():
                link.symlink_to(Path(w).resolve())
            urls.append(str(link))
    manifest = folder / "bench.paths"
    manifest.write_text("\n".join(urls) + "\n")
    return str(manifest), urls


def bench_pipeline(cfg: Config, manifest: str, token_meta: dict, workers: list[int], repeats: int,
                   out_dir: Path) -> dict:
    from raycorpus.runtime.driver import run_build

    results = {}
    for n in workers:
        runs = []
        for r in range(repeats + 1):
            run_cfg = cfg.model_copy(update={
                "input": cfg.input.model_copy(update={"manifest": manifest, "prefix": None, "base": None,
                                                      "limit": None}),
                "output": cfg.output.model_copy(update={"path": str(out_dir / f"w{n}-run{r}")}),
                "ray": cfg.ray.model_copy(update={"workers": n, "max_workers": n}),
                "run": cfg.run.model_copy(update={"progress": "off"}),
            })
            s = run_build(run_cfg, token_meta)
            if r:  # the first run warms caches and the object store
                runs.append(s)
        walls = [s.this_run.wall_seconds for s in runs]
        docs_in = runs[0].docs.in_
        results[str(n)] = {
            "docs_in": docs_in,
            "wall_seconds": round(statistics.median(walls), 3),
            "docs_per_second": round(docs_in / statistics.median(walls), 1),
            "startup_seconds": round(statistics.median(s.this_run.startup_seconds for s in runs), 3),
            "peak_rss_mb": runs[-1].this_run.peak_rss_mb or {},
            "runs": len(runs),
        }
    return results


def bench_all(cfg: Config, warcs: list[str], token_meta: dict, *, copies: int = 4, workers: tuple[int, ...] = (1, 2),
              repeats: int = 3) -> dict:
    """In-process bound and pipeline rates over the same input; efficiency and scaling."""
    from raycorpus.cli.bench import bench_chain

    with tempfile.TemporaryDirectory(prefix="raycorpus-bench-") as tmp:
        manifest, urls = bench_input(warcs, copies, Path(tmp))
        bound = bench_chain(cfg, urls, repeats=repeats, copy_warcs=len(warcs))
        per_core = bound["bare_bound_docs_per_second_per_core"]
        pipe = bench_pipeline(cfg, manifest, token_meta, list(workers), repeats, Path(tmp) / "out")
    for n, r in pipe.items():
        r["efficiency"] = round(r["docs_per_second"] / (per_core * int(n)), 3) if per_core else None
    out = {"input_warcs": len(warcs), "copies": copies, "cpus": os.cpu_count(), "chain": bound, "pipeline": pipe}
    if "1" in pipe and "2" in pipe:
        out["scaling_1_to_2"] = round(pipe["2"]["docs_per_second"] / pipe["1"]["docs_per_second"], 3)
    return out


def format_pipeline(b: dict) -> str:
    runs = next(iter(b["pipeline"].values()))["runs"]
    lines = [f"pipeline (real Ray, {b['copies']} copies of the input, median of {runs} runs after a warm-up):",
             f"{'workers':>8}{'docs/s':>10}{'bound x n':>11}{'efficiency':>12}{'wall s':>9}{'start-up s':>12}"
             "  peak RSS MB"]
    bound = b["chain"]["bare_bound_docs_per_second_per_core"]
    for n, r in b["pipeline"].items():
        rss = ", ".join(f"{k} {v:.0f}" for k, v in r["peak_rss_mb"].items())
        lines.append(f"{n:>8}{r['docs_per_second']:>10,.1f}{bound * int(n):>11,.1f}{r['efficiency']:>12.3f}"
                     f"{r['wall_seconds']:>9.2f}{r['startup_seconds']:>12.2f}  {rss}")
    if "scaling_1_to_2" in b:
        lines.append(f"scaling 1 -> 2 workers: {b['scaling_1_to_2']:.3f}")
    return "\n".join(lines)
