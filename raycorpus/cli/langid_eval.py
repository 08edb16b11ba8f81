"""``raycorpus eval``'s language ID section: every backend side by side on the labelled sample (accuracy,
per language, the worst languages, the top confusion pairs) and its cost on real pages (the HTML of the
shared WARCs, extracted by the shipped extractor), medians of ``repeats`` interleaved runs."""

from __future__ import annotations

import json
import statistics
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from raycorpus.ingest.warc import WarcFormatError, iter_html_records
from raycorpus.process.filters.langid import DEFAULT_MODEL, predict_one
from raycorpus.process.filters.langid_backends import BACKENDS, make_backend

Backend = Callable[[str], tuple[str, float]]


def available_backends(names: tuple[str, ...] = BACKENDS, model: str = DEFAULT_MODEL) -> dict[str, Backend]:
    """Each of ``names`` that can be built here (lingua's need lingua-language-detector)."""
    found = {}
    for name in names:
        try:
            found[name] = make_backend(name, model)
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


def _ms_per_doc(backend: Backend, texts: list[str]) -> tuple[float, float]:
    """(mean, median) milliseconds per text of one pass."""
    per = []
    for text in texts:
        t = time.perf_counter()
        predict_one(backend, text)
        per.append((time.perf_counter() - t) * 1000)
    return (statistics.fmean(per), statistics.median(per)) if per else (0.0, 0.0)


def eval_langid_backends(sample: str | Path, warc_dir: str | Path | None, *, repeats: int = 3,
                         names: tuple[str, ...] = BACKENDS) -> dict[str, Any]:
    """Per backend: ``eval_langid``'s figures on ``sample``, ``confusion_pairs`` and the ms/doc on the sample and
    on real pages (median over ``repeats`` runs, the backends interleaved in each run)."""
    from raycorpus.cli.evaluate import eval_langid

    backends = available_backends(names)
    pages = real_page_texts(warc_dir) if warc_dir and Path(warc_dir).is_dir() else []
    rows = [line for line in Path(sample).read_text(encoding="utf-8").splitlines() if line.strip()]
    texts = [json.loads(line)["text"] for line in rows]
    report: dict[str, Any] = {"pages": len(pages), "repeats": max(1, repeats), "backends": {}}
    for name, backend in backends.items():
        r = eval_langid(sample, lambda batch, b=backend: [predict_one(b, t) for t in batch])
        pairs = Counter({(want, got): n for want, c in r["confusions"].items() for got, n in c.items()})
        r["confusion_pairs"] = [[w, g, n] for (w, g), n in pairs.most_common(10)]
        report["backends"][name] = r
        _ms_per_doc(backend, texts[:50] + pages[:20])  # warm-up: lingua loads its models on first use
    runs: dict[str, list[tuple[float, float, float, float]]] = {name: [] for name in backends}
    for _ in range(max(1, repeats)):
        for name, backend in backends.items():
            runs[name].append((*_ms_per_doc(backend, texts), *_ms_per_doc(backend, pages)))
    for name, r in report["backends"].items():
        med = [statistics.median(run[k] for run in runs[name]) for k in range(4)]
        r.update({"sample_ms_per_doc": round(med[0], 4), "sample_median_ms": round(med[1], 4),
                  "page_ms_per_doc": round(med[2], 4), "page_median_ms": round(med[3], 4)})
    return report


def format_langid_backends(report: dict[str, Any] | None) -> list[str]:
    """Lines: per backend its accuracy, the worst languages, the top confusion pairs and its speed."""
    if not report:
        return []
    lines = [f"language ID backends on the labelled sample and {report['pages']} real pages (ms/doc: mean | median, "
             f"median of {report['repeats']} runs):"]
    for name, r in report["backends"].items():
        per = r["per_language"]
        worst = sorted(per.items(), key=lambda kv: (kv[1], kv[0]))[:8]
        below = sum(v < 0.8 for v in per.values())
        lines.append(f"  {name:<9} accuracy {r['accuracy']:.3f} over {len(per)} languages ({below} below 0.8); "
                     f"sample {r['sample_ms_per_doc']:.3f} | {r['sample_median_ms']:.3f} ms, "
                     f"pages {r['page_ms_per_doc']:.3f} | {r['page_median_ms']:.3f} ms")
        lines.append("            worst: " + ", ".join(f"{k} {v:.2f}" for k, v in worst))
        lines.append("            confused: " + ", ".join(f"{w}->{g} {n}" for w, g, n in r["confusion_pairs"]))
    if report["backends"]:
        lines.append("  per-language accuracy: " + " | ".join(
            f"{lang} " + " ".join(f"{r['per_language'][lang]:.2f}" for r in report["backends"].values())
            for lang in next(iter(report["backends"].values()))["per_language"]))
    return lines
