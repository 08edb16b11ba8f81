"""``raycorpus eval``'s language ID section: every backend side by side on the labelled sample (accuracy, on the
whole sample and on its validation half, per language, the worst languages, the top confusion pairs), its cost on
real pages (the HTML of the shared WARCs and the extraction test pages, extracted by the shipped extractor; mean and
median of ``repeats`` interleaved runs, models loaded before) and, in a fresh process each, what its models take: the
seconds to load them and the memory a worker holds for them (lingua's models preloaded: the most a worker loads)."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from raycorpus.ingest.warc import WarcFormatError, iter_html_records
from raycorpus.process.filters.langid import DEFAULT_MODEL, predict_one
from raycorpus.process.filters.langid_backends import (
    BACKENDS,
    lingua_codes,
    lingua_languages,
    make_backend,
    resolve_backend,
)

Backend = Callable[[str], tuple[str, float]]
# (backend, keep) whose load and memory `raycorpus eval` measures: the English default (auto -> fastText), the
# multilingual default (keep: null, auto -> the ensemble with all of lingua's languages), ensembles whose lingua
# holds one script's languages (Latin, Cyrillic, Han), and lingua alone
LOADS: tuple[tuple[str, tuple[str, ...] | None], ...] = (
    ("fasttext", ("en",)), ("ensemble", None), ("ensemble", ("no", "nn")), ("ensemble", ("bg",)),
    ("ensemble", ("zh",)), ("lingua", None),
)
_MEASURE = """
import json, sys, time, resource
def rss():
    try:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) / 1024 for line in f if line.startswith("VmRSS:"))
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / (1 << 20 if sys.platform == "darwin" else 1024)
from raycorpus.process.filters.langid_backends import make_backend
backend, model, keep = json.loads(sys.argv[1])
before, t = rss(), time.perf_counter()
make_backend(backend, model, keep, preload=True)
print(json.dumps({"load_seconds": time.perf_counter() - t, "memory_mb": rss() - before, "rss_mb": rss()}))
"""


def available_backends(names: tuple[str, ...] = BACKENDS, model: str = DEFAULT_MODEL) -> dict[str, Backend]:
    """Each of ``names`` that can be built here, for ``keep: null`` (the ensemble with all of lingua's languages),
    models loaded."""
    found = {}
    for name in names:
        try:
            found[name] = make_backend(name, model, None, preload=True)
        except ImportError:
            continue
    return found


def real_page_texts(warc_dir: str | Path) -> list[str]:
    """The non-empty main-content text of every HTML response in the WARCs under ``warc_dir`` (shipped extractor)."""
    from raycorpus.cli.evaluate import shipped_extract_fn

    extract = shipped_extract_fn()
    texts = []
    paths = sorted(p for p in Path(warc_dir).rglob("*") if p.name.endswith((".warc", ".warc.gz")))
    for path in paths:
        try:
            with path.open("rb") as f:
                htmls = [rec.html for rec in iter_html_records(f, Counter(), 8 << 20)]
        except WarcFormatError:
            continue  # the shared folder holds broken WARCs on purpose (readers' test files)
        texts += [t for t in map(extract, htmls) if t.strip()]
    return texts


def extraction_page_texts(extraction_dir: str | Path) -> list[str]:
    """The non-empty main-content text of the extraction test pages (trafilatura-eval, readability) found under
    ``extraction_dir`` (shipped extractor)."""
    from raycorpus.cli.evaluate import load_readability, load_trafilatura_eval, shipped_extract_fn

    root, extract = Path(extraction_dir), shipped_extract_fn()
    htmls = []
    if (root / "trafilatura-eval").is_dir():
        htmls += [html for _, html, _ in load_trafilatura_eval(root / "trafilatura-eval")]
    if (root / "readability").is_dir():
        htmls += [html for _, html, _ in load_readability(root / "readability")]
    return [t for t in map(extract, htmls) if t.strip()]


def measure_load(backend: str, keep: Sequence[str] | None = None, model: str = DEFAULT_MODEL) -> dict[str, float]:
    """Seconds to build ``backend`` for ``keep`` with every model loaded, and the memory (MB of resident set) that
    adds to a process, measured in a fresh Python process as a worker would start."""
    arg = json.dumps([backend, model, None if keep is None else list(keep)])
    out = subprocess.run([sys.executable, "-c", _MEASURE, arg], capture_output=True, text=True, check=True)
    r = json.loads(out.stdout.strip().splitlines()[-1])
    return {k: round(v, 3 if k == "load_seconds" else 1) for k, v in r.items()}


def _ms_per_doc(backend: Backend, texts: list[str]) -> tuple[float, float]:
    """(mean, median) milliseconds per text of one pass."""
    per = []
    for text in texts:
        t = time.perf_counter()
        predict_one(backend, text)
        per.append((time.perf_counter() - t) * 1000)
    return (statistics.fmean(per), statistics.median(per)) if per else (0.0, 0.0)


def _half_accuracy(rows: list[tuple[str, str]], preds: list[tuple[str, float]], idx: list[int]) -> float:
    from raycorpus.cli.evaluate import norm_lang

    return round(sum(norm_lang(preds[i][0]) == rows[i][0] for i in idx) / len(idx), 4) if idx else 0.0


def eval_langid_backends(sample: str | Path, warc_dir: str | Path | None, *, repeats: int = 3,
                         names: tuple[str, ...] = BACKENDS, extraction_dir: str | Path | None = None,
                         loads: Sequence[tuple[str, Sequence[str] | None]] | None = LOADS) -> dict[str, Any]:
    """Per backend (``keep: null``): ``eval_langid``'s figures on ``sample`` with the accuracy on its tuning and
    validation halves (:func:`raycorpus.process.filters.langid_tune.split`), ``confusion_pairs``, and the ms/doc
    on the sample and on real pages (the WARCs' under ``warc_dir`` and the extraction pages under
    ``extraction_dir``; median over ``repeats`` runs, the backends interleaved in each run, models loaded first);
    ``loads``: the load seconds and memory of each (backend, keep), in fresh processes (None: not measured)."""
    from raycorpus.cli.evaluate import eval_langid
    from raycorpus.process.filters.langid_tune import read_sample, split

    backends = available_backends(names)
    pages = real_page_texts(warc_dir) if warc_dir and Path(warc_dir).is_dir() else []
    warc_pages = len(pages)
    if extraction_dir and Path(extraction_dir).is_dir():
        pages += extraction_page_texts(extraction_dir)
    rows = read_sample(sample)
    texts = [text for _, text in rows]
    tuning, validation = split(rows)
    report: dict[str, Any] = {
        "pages": len(pages), "page_sources": {"warc": warc_pages, "extraction": len(pages) - warc_pages},
        "repeats": max(1, repeats), "split": {"tuning": len(tuning), "validation": len(validation)},
        "defaults": {"keep: [en]": resolve_backend("auto", ["en"]), "keep: null": resolve_backend("auto", None)},
        "backends": {},
    }
    for name, backend in backends.items():
        preds: list[tuple[str, float]] = []

        def predict(batch: list[str], b: Backend = backend, out: list = preds) -> list[tuple[str, float]]:
            found = [predict_one(b, t) for t in batch]
            out += found
            return found

        r = eval_langid(sample, predict)
        r["tuning_accuracy"] = _half_accuracy(rows, preds, tuning)
        r["validation_accuracy"] = _half_accuracy(rows, preds, validation)
        pairs = Counter({(want, got): n for want, c in r["confusions"].items() for got, n in c.items()})
        r["confusion_pairs"] = [[w, g, n] for (w, g), n in pairs.most_common(10)]
        report["backends"][name] = r
        _ms_per_doc(backend, texts[:50] + pages[:20])  # warm-up
    runs: dict[str, list[tuple[float, float, float, float]]] = {name: [] for name in backends}
    for _ in range(max(1, repeats)):
        for name, backend in backends.items():
            runs[name].append((*_ms_per_doc(backend, texts), *_ms_per_doc(backend, pages)))
    for name, r in report["backends"].items():
        med = [statistics.median(run[k] for run in runs[name]) for k in range(4)]
        r.update({"sample_ms_per_doc": round(med[0], 4), "sample_median_ms": round(med[1], 4),
                  "page_ms_per_doc": round(med[2], 4), "page_median_ms": round(med[3], 4)})
    if pages and loads:
        report["english_default"] = english_default_cost(pages, repeats)
    if loads:
        report["loads"] = []
        for backend_name, keep in loads:
            try:
                measured = measure_load(backend_name, keep)
            except subprocess.CalledProcessError:  # lingua missing: nothing to measure
                continue
            resolved = resolve_backend(backend_name, keep)
            if resolved == "fasttext":
                n_lingua = 0
            else:
                n_lingua = len(lingua_languages(keep) if resolved == "ensemble" and keep else lingua_codes())
            report["loads"].append({"backend": backend_name, "resolved": resolved,
                                    "keep": None if keep is None else list(keep), "lingua_languages": n_lingua,
                                    **measured})
    return report


def english_default_cost(pages: list[str], repeats: int = 3) -> dict[str, Any]:
    """The English-only default against the default of before ``auto`` (``backend: fasttext``): ms per page on
    ``pages`` (the two timed page by page, in alternating order, in each of ``repeats`` runs) and load time and
    memory in fresh processes (as many); medians."""
    from raycorpus.process.filters.langid import LangIdConfig, LanguageFilter

    variants = {"fasttext": LangIdConfig(backend="fasttext"), "auto": LangIdConfig()}
    backends = {name: LanguageFilter(cfg).backend for name, cfg in variants.items()}
    times: dict[str, list[float]] = {name: [] for name in variants}
    loads: dict[str, list[dict[str, float]]] = {name: [] for name in variants}
    names = list(variants)
    for _ in range(max(1, repeats)):
        spent = dict.fromkeys(names, 0.0)
        for k, text in enumerate(pages):  # page by page, in alternating order: drift on a busy machine cancels out
            for name in names[:: 1 if k % 2 == 0 else -1]:
                t = time.perf_counter()
                predict_one(backends[name], text)
                spent[name] += time.perf_counter() - t
        for name in names:
            times[name].append(spent[name] * 1000 / max(1, len(pages)))
            loads[name].append(measure_load(variants[name].backend if name == "fasttext" else "auto", ["en"]))
    out: dict[str, Any] = {"pages": len(pages), "repeats": max(1, repeats)}
    for name in variants:
        out[name] = {"backend": variants[name].backend, "ms_per_page": round(statistics.median(times[name]), 4),
                     "load_seconds": round(statistics.median(r["load_seconds"] for r in loads[name]), 3),
                     "memory_mb": round(statistics.median(r["memory_mb"] for r in loads[name]), 1)}
    out["time_ratio"] = round(out["auto"]["ms_per_page"] / out["fasttext"]["ms_per_page"], 3)
    out["memory_mb_more"] = round(out["auto"]["memory_mb"] - out["fasttext"]["memory_mb"], 1)
    return out


def format_langid_backends(report: dict[str, Any] | None) -> list[str]:
    """Lines: per backend its accuracy, the worst languages, the top confusion pairs and its speed; then the load
    time and memory per worker of each measured (backend, keep)."""
    if not report:
        return []
    src = report.get("page_sources", {})
    lines = [f"language ID backends (keep: null) on the labelled sample and {report['pages']} real pages "
             f"({src.get('warc', report['pages'])} from WARCs, {src.get('extraction', 0)} extraction pages; ms/doc: "
             f"mean | median, median of {report['repeats']} runs, models loaded):"]
    for name, r in report["backends"].items():
        per = r["per_language"]
        worst = sorted(per.items(), key=lambda kv: (kv[1], kv[0]))[:8]
        below = sum(v < 0.8 for v in per.values())
        lines.append(f"  {name:<9} accuracy {r['accuracy']:.3f} over {len(per)} languages ({below} below 0.8; "
                     f"validation half {r.get('validation_accuracy', 0):.3f}); "
                     f"sample {r['sample_ms_per_doc']:.3f} | {r['sample_median_ms']:.3f} ms, "
                     f"pages {r['page_ms_per_doc']:.3f} | {r['page_median_ms']:.3f} ms")
        lines.append("            worst: " + ", ".join(f"{k} {v:.2f}" for k, v in worst))
        lines.append("            confused: " + ", ".join(f"{w}->{g} {n}" for w, g, n in r["confusion_pairs"]))
    if report["backends"]:
        lines.append("  per-language accuracy: " + " | ".join(
            f"{lang} " + " ".join(f"{r['per_language'][lang]:.2f}" for r in report["backends"].values())
            for lang in next(iter(report["backends"].values()))["per_language"]))
    if "defaults" in report:
        lines.append("  backend: auto resolves to " + ", ".join(f"{v} for {k}" for k, v in report["defaults"].items()))
    if e := report.get("english_default"):
        auto, before = e["auto"], e["fasttext"]
        lines.append(f"  English default (keep: [en]): auto means {auto['backend']}: {auto['ms_per_page']:.3f} ms/page "
                     f"against {before['ms_per_page']:.3f} for backend: fasttext (x{e['time_ratio']:.3f}), "
                     f"{auto['memory_mb']:.0f} MB against {before['memory_mb']:.0f} MB per worker "
                     f"({e['memory_mb_more']:+.0f} MB); medians of {e['repeats']} runs timed page by page, "
                     f"{e['pages']} pages")
    if report.get("loads"):
        lines.append("  models per worker (fresh process, lingua's models preloaded: the most a worker loads):")
        for load in report["loads"]:
            keep = "null" if load["keep"] is None else "[" + ", ".join(load["keep"]) + "]"
            name = load["backend"] if load["backend"] == load["resolved"] else f"{load['backend']}->{load['resolved']}"
            lines.append(f"    {name:<14} keep {keep:<9} lingua languages {load['lingua_languages']:>2}: "
                         f"load {load['load_seconds']:.2f} s, {load['memory_mb']:.0f} MB")
    return lines
