"""``raycorpus bench --startup``: the fixed cost of ``raycorpus run`` on a small job.

Runs ``raycorpus run`` as a new user would (a new process, a private local Ray) on the given WARCs into a
fresh output, ``repeats`` times after a warm-up, and splits each run's wall time into processing (the run
summary's ``wall_seconds``: from the first worker ready to the last commit) and everything else: Python
start-up and imports, Ray's start, the actors' start-up (model loads), the final checkpoint and shutdown.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from raycorpus.config import Config
from raycorpus.ingest.storage import Storage
from raycorpus.output.summary import RunSummary


def _run_once(cfg: Config, warcs: list[str], folder: Path) -> tuple[float, float]:
    manifest = folder / "warc.paths"
    manifest.write_text("".join(f"{w}\n" for w in warcs))
    raw = cfg.model_dump(mode="json", exclude_defaults=True)
    raw["input"] = {**raw.get("input", {}), "manifest": str(manifest), "prefix": None, "base": None, "limit": None}
    raw["output"] = {**raw.get("output", {}), "path": str(folder / "out")}
    raw["ray"] = {**raw.get("ray", {}), "address": None}
    raw["run"] = {**raw.get("run", {}), "progress": "off"}
    (folder / "c.yaml").write_text(yaml.safe_dump(raw))
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "raycorpus.cli", "run", str(folder / "c.yaml")],
                       capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError(f"raycorpus run failed ({r.returncode}): {r.stderr[-2000:]}")
    return wall, RunSummary.read(Storage(), str(folder / "out")).this_run.wall_seconds


def bench_startup(cfg: Config, warcs: list[str], repeats: int = 3) -> dict:
    walls, processing = [], []
    for r in range(repeats + 1):  # the first run is a warm-up (file caches, .pyc)
        with tempfile.TemporaryDirectory() as tmp:
            wall, proc = _run_once(cfg, warcs, Path(tmp))
        if r:
            walls.append(wall)
            processing.append(proc)
    fixed = [w - p for w, p in zip(walls, processing, strict=True)]
    return {"warcs": warcs, "repeats": repeats, "wall_seconds": round(statistics.median(walls), 2),
            "processing_seconds": round(statistics.median(processing), 2),
            "fixed_seconds": round(statistics.median(fixed), 2), "fixed_runs": [round(f, 2) for f in fixed]}


def format_startup(b: dict) -> str:
    return (f"start-up ({len(b['warcs'])} WARC(s), `raycorpus run` in a new process, median of {b['repeats']} runs "
            f"after a warm-up): wall {b['wall_seconds']} s = processing {b['processing_seconds']} s + fixed cost "
            f"{b['fixed_seconds']} s (runs: {', '.join(map(str, b['fixed_runs']))})")
