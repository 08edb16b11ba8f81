"""Evaluation of extraction and language ID on reference sets (Ray-free; behind ``raycorpus eval``).

- trafilatura-eval: per page, "with" snippets must be in the extracted text and "without"
  snippets (boilerplate) must not; whitespace-normalised substring match, counted as
  tp / fn / fp / tn over snippets and summed over pages (trafilatura's own scoring).
- readability: bag-of-words precision / recall / F1 of the extracted text against the text of
  Readability.js's output, averaged over pages.
- langid: accuracy, overall and per language, on labelled sentences ({"lang", "text"} jsonl).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import re
import statistics
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from resiliparse.extract.html2text import extract_plain_text
from resiliparse.parse.html import HTMLTree

from raycorpus.cli.common import EXIT_OK, EXIT_USAGE, err
from raycorpus.cli.langid_eval import eval_langid_backends, format_langid_backends
from raycorpus.config import load_config
from raycorpus.ingest.warc import HtmlRecord, decode_html
from raycorpus.process.extract import ExtractConfig, Extractor
from raycorpus.process.filters.langcodes import canonical_or_raw

ExtractFn = Callable[[str], str]
PredictFn = Callable[[list[str]], list[tuple[str, float]]]

_WS = re.compile(r"\s+")
_WORD = re.compile(r"\w+")


# ---------------------------------------------------------------- extract_fn builders


def shipped_extract_fn(cfg: ExtractConfig | None = None) -> ExtractFn:
    """The shipped extraction stage as ``html -> text`` ("" for a dropped page)."""
    extractor = Extractor(cfg or ExtractConfig())

    def extract(html: str) -> str:
        rec = HtmlRecord(url="", record_id="", date="", html=html, charset="utf-8", charset_source="utf-8",
                         payload_bytes=len(html))
        return extractor(rec)[0] or ""

    return extract


def resiliparse_extract_fn() -> ExtractFn:
    """The bare resiliparse baseline: ``extract_plain_text(HTMLTree.parse(html), main_content=True)``."""
    return lambda html: extract_plain_text(HTMLTree.parse(html), main_content=True)


def whole_page_extract_fn() -> ExtractFn:
    """All the page's text (no main-content detection): the floor of the comparison."""
    return lambda html: extract_plain_text(HTMLTree.parse(html), main_content=False)


def trafilatura_extract_fn() -> ExtractFn:
    """trafilatura with its evaluation settings, for comparison only (``pip install trafilatura``)."""
    try:
        from trafilatura import extract
    except ImportError as e:
        raise ImportError("trafilatura is not installed (pip install trafilatura); it is only a comparison") from e
    return lambda html: extract(html, fast=False, include_comments=False, include_tables=True,
                                include_formatting=False) or ""


# ---------------------------------------------------------------- data loading


def read_html(path: Path) -> str:
    """A gzip'd HTML page decoded as the pipeline does (HTTP charset unknown)."""
    return decode_html(gzip.decompress(path.read_bytes()), None)[0]


#: trafilatura-eval's two fixed halves: a new extraction rule is tuned on half A and kept only if half B and the
#: readability set gain too (docs/benchmarks.md)
HALVES = ("A", "B")
HALF_SEED = 27


def trafilatura_half(file: str, seed: int = HALF_SEED) -> str:
    """The half (``"A"`` or ``"B"``) of a trafilatura-eval page, by its file name: a bit of a hash of ``seed`` and the
    name, so a page keeps its half in any subset and in any process."""
    digest = hashlib.blake2b(f"{seed}:{file}".encode(), digest_size=8).digest()
    return HALVES[digest[0] & 1]


def _spread(items: list, every: int) -> list:
    """Every ``every``-th item: a fixed, deterministic subset spread over the whole list."""
    return items[::every] if every > 1 else items


def load_trafilatura_eval(dataset_dir: str | Path, every: int = 1) -> list[tuple[str, str, dict[str, Any]]]:
    """(file, html, annotation) for each annotated page whose HTML is present, in file-name order."""
    root = Path(dataset_dir)
    annotations = json.loads((root / "evaldata_subset.json").read_text(encoding="utf-8"))
    pages = []
    for item in sorted(annotations.values(), key=lambda it: it["file"]):
        for sub in ("cache", "eval"):
            path = root / sub / f"{item['file']}.gz"
            if path.is_file():
                pages.append((item["file"], read_html(path), item))
                break
    return _spread(pages, every)


def load_readability(dataset_dir: str | Path, every: int = 1) -> list[tuple[str, str, str]]:
    """(page name, source html, expected html) for each test page, in name order."""
    root = Path(dataset_dir) / "test-pages"
    pages = [(d.name, read_html(d / "source.html.gz"), read_html(d / "expected.html.gz"))
             for d in sorted(root.iterdir()) if (d / "source.html.gz").is_file() and (d / "expected.html.gz").is_file()]
    return _spread(pages, every)


# ---------------------------------------------------------------- scoring


def norm_ws(text: str) -> str:
    """Collapse whitespace runs to one space (as trafilatura's evaluation does)."""
    return _WS.sub(" ", text).strip()


def snippet_counts(item: dict[str, Any], text: str) -> tuple[int, int, int, int]:
    """(tp, fp, fn, tn) of one page: "with" snippets found, "without" found, "with" missed, "without" absent."""
    t = norm_ws(text)
    tp = sum(norm_ws(s) in t for s in item["with"])
    fp = sum(norm_ws(s) in t for s in item["without"])
    return tp, fp, len(item["with"]) - tp, len(item["without"]) - fp


def prf(tp: float, fp: float, fn: float) -> tuple[float, float, float]:
    """Precision, recall, F1 (0.0 where a denominator is empty)."""
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def bag_of_words(text: str) -> Counter[str]:
    """Lower-cased word tokens (Unicode ``\\w+``) with their counts."""
    return Counter(_WORD.findall(text.lower()))


def bow_prf(text: str, reference: str) -> tuple[float, float, float]:
    """Bag-of-words precision, recall and F1 of ``text`` against ``reference``."""
    got, want = bag_of_words(text), bag_of_words(reference)
    common = sum((got & want).values())
    return prf(common, got.total() - common, want.total() - common)


def _run(extract_fn: ExtractFn, htmls: Sequence[str], repeats: int) -> tuple[list[str], int, float]:
    """Extract every page ``repeats`` times; (texts of the first run, errors, median seconds of a run)."""
    texts: list[str] = []
    errors, runs = 0, []
    for i in range(max(1, repeats)):
        elapsed = 0.0
        for html in htmls:
            t = time.perf_counter()
            try:
                text = extract_fn(html) or ""
            except Exception:  # a crash is a full miss for that page, as in trafilatura's evaluation
                text = ""
                errors += i == 0
            elapsed += time.perf_counter() - t
            if i == 0:
                texts.append(text)
        runs.append(elapsed)
    return texts, errors, statistics.median(runs)


def _timing(pages: int, seconds: float, errors: int, repeats: int) -> dict[str, Any]:
    return {"pages": pages, "errors": errors, "repeats": max(1, repeats), "seconds": round(seconds, 4),
            "docs_per_second": round(pages / seconds, 2) if seconds else 0.0}


def eval_trafilatura(dataset_dir: str | Path, extract_fn: ExtractFn, *, every: int = 1,
                     repeats: int = 1) -> dict[str, Any]:
    """Snippet P / R / F1 on trafilatura-eval (``every`` > 1: a fixed subset; ``repeats``: median time)."""
    pages = load_trafilatura_eval(dataset_dir, every)
    texts, errors, seconds = _run(extract_fn, [html for _, html, _ in pages], repeats)
    counts = {"all": [0, 0, 0, 0, 0], **{h: [0, 0, 0, 0, 0] for h in HALVES}}  # tp, fp, fn, tn, pages
    for (file, _, item), text in zip(pages, texts, strict=True):
        for key in ("all", trafilatura_half(file)):
            counts[key] = [x + y for x, y in zip(counts[key], (*snippet_counts(item, text), 1), strict=True)]
    tp, fp, fn, tn, _ = counts["all"]
    p, r, f1 = prf(tp, fp, fn)
    return {"dataset": "trafilatura-eval", "precision": round(p, 4), "recall": round(r, 4), "f1": round(f1, 4),
            "accuracy": round((tp + tn) / (tp + fp + fn + tn), 4) if pages else 0.0,
            "tp": tp, "fp": fp, "fn": fn, "tn": tn, "empty": sum(not t.strip() for t in texts),
            "halves": {h: _half_scores(*counts[h]) for h in HALVES},
            **_timing(len(pages), seconds, errors, repeats)}


def _half_scores(tp: int, fp: int, fn: int, tn: int, pages: int) -> dict[str, Any]:
    p, r, f1 = prf(tp, fp, fn)
    return {"precision": round(p, 4), "recall": round(r, 4), "f1": round(f1, 4), "pages": pages,
            "tp": tp, "fp": fp, "fn": fn, "tn": tn}


def eval_readability(dataset_dir: str | Path, extract_fn: ExtractFn, *, every: int = 1,
                     repeats: int = 1) -> dict[str, Any]:
    """Mean bag-of-words P / R / F1 against the text of Readability.js's expected output (all of its text,
    by resiliparse without main-content detection)."""
    pages = load_readability(dataset_dir, every)
    texts, errors, seconds = _run(extract_fn, [src for _, src, _ in pages], repeats)
    scores = [bow_prf(text, extract_plain_text(HTMLTree.parse(expected), main_content=False))
              for (_, _, expected), text in zip(pages, texts, strict=True)]
    mean = [statistics.fmean(s[k] for s in scores) if scores else 0.0 for k in range(3)]
    return {"dataset": "readability", "precision": round(mean[0], 4), "recall": round(mean[1], 4),
            "f1": round(mean[2], 4), "empty": sum(not t.strip() for t in texts),
            **_timing(len(pages), seconds, errors, repeats)}


# ---------------------------------------------------------------- language ID

def norm_lang(label: str) -> str:
    """Any spelling (``__label__no``, ``nb``, ``nob_Latn``, ``pt-BR``) -> its canonical code
    (:mod:`raycorpus.process.filters.langcodes`); a label outside the label space as it is."""
    return canonical_or_raw(label)


def eval_langid(jsonl_path: str | Path, predict_fn: PredictFn, *, batch: int = 256) -> dict[str, Any]:
    """Accuracy, overall and per language; a language the predictor never outputs still counts as missed."""
    rows = [json.loads(line) for line in Path(jsonl_path).read_text(encoding="utf-8").splitlines() if line.strip()]
    texts = [r["text"] for r in rows]
    t = time.perf_counter()
    preds = [p for i in range(0, len(texts), batch) for p in predict_fn(texts[i : i + batch])]
    seconds = time.perf_counter() - t
    if len(preds) != len(rows):
        raise ValueError(f"predict_fn returned {len(preds)} predictions for {len(rows)} texts")
    right: Counter[str] = Counter()
    total: Counter[str] = Counter()
    confused: dict[str, Counter[str]] = defaultdict(Counter)
    for row, (label, _score) in zip(rows, preds, strict=True):
        want, got = norm_lang(row["lang"]), norm_lang(label)
        total[want] += 1
        if got == want:
            right[want] += 1
        else:
            confused[want][got] += 1
    per_lang = {lang: round(right[lang] / n, 4) for lang, n in sorted(total.items())}
    predicted = {norm_lang(label) for label, _ in preds}
    never = sorted(lang for lang in total if lang not in predicted)  # most likely outside the model's label set
    rest = [lang for lang in total if lang in predicted]
    return {"dataset": "langid", "accuracy": round(right.total() / len(rows), 4) if rows else 0.0,
            "macro_accuracy": round(statistics.fmean(per_lang.values()), 4) if per_lang else 0.0,
            "never_predicted": never,
            "accuracy_predicted_languages": round(sum(right[k] for k in rest) / sum(total[k] for k in rest), 4)
            if rest else 0.0,
            "per_language": per_lang, "confusions": {k: dict(v.most_common(3)) for k, v in sorted(confused.items())},
            "texts": len(rows), "seconds": round(seconds, 4),
            "docs_per_second": round(len(rows) / seconds, 2) if seconds else 0.0}


# ---------------------------------------------------------------- report


def evaluate_extraction(extraction_dir: str | Path, cfg: ExtractConfig | None = None, *, every: int = 1,
                        repeats: int = 1, trafilatura: bool = False) -> dict[str, dict[str, Any]]:
    """The shipped stage against bare resiliparse, the whole page's text (and trafilatura if asked) on
    the sets found under ``extraction_dir`` (``trafilatura-eval/``, ``readability/``); keys ``"<dataset>/<name>"``."""
    root = Path(extraction_dir)
    fns = {"shipped": shipped_extract_fn(cfg), "resiliparse": resiliparse_extract_fn(),
           "whole-page": whole_page_extract_fn()}
    if trafilatura:
        fns["trafilatura"] = trafilatura_extract_fn()
    results = {}
    for dataset, run in (("trafilatura-eval", eval_trafilatura), ("readability", eval_readability)):
        if (root / dataset).is_dir():
            for name, fn in fns.items():
                results[f"{dataset}/{name}"] = run(root / dataset, fn, every=every, repeats=repeats)
    return results


def format_eval(results: dict[str, dict[str, Any]], baseline: str = "resiliparse") -> str:
    """A compact table of ``{"[dataset/]name": result}``; ΔF1 and speed are relative to the ``baseline`` row
    of the same dataset."""
    base = {r["dataset"]: r for n, r in results.items() if n.split("/")[-1] == baseline}
    lines = []
    for name, r in results.items():
        if "f1" not in r:
            continue
        if not lines:
            lines.append(f"{'dataset':<17} {'name':<22} {'P':>6} {'R':>6} {'F1':>6} {'pages':>6} {'docs/s':>8} "
                         f"{'ΔF1':>7} {'speed':>7}")
        b = base.get(r["dataset"])
        d_f1 = f"{r['f1'] - b['f1']:+.3f}" if b else "-"
        speed = f"{r['docs_per_second'] / b['docs_per_second']:.2f}x" if b and b["docs_per_second"] else "-"
        lines.append(f"{r['dataset']:<17} {name.split('/')[-1]:<22} {r['precision']:>6.3f} {r['recall']:>6.3f} "
                     f"{r['f1']:>6.3f} {r['pages']:>6} {r['docs_per_second']:>8.1f} {d_f1:>7} {speed:>7}")
        for half, h in r.get("halves", {}).items():  # trafilatura-eval's fixed halves (tune on A, check on B)
            d_half = f"{h['f1'] - b['halves'][half]['f1']:+.3f}" if b and "halves" in b else "-"
            lines.append(f"{'  half ' + half:<17} {name.split('/')[-1]:<22} {h['precision']:>6.3f} "
                         f"{h['recall']:>6.3f} {h['f1']:>6.3f} {h['pages']:>6} {'':>8} {d_half:>7}")
    for name, r in results.items():
        if "accuracy" in r and "per_language" in r:
            worst = sorted((kv for kv in r["per_language"].items() if kv[0] not in r["never_predicted"]),
                           key=lambda kv: (kv[1], kv[0]))[:5]
            lines.append(f"{'langid':<17} {name.split('/')[-1]:<22} accuracy {r['accuracy']:.3f} "
                         f"({r['accuracy_predicted_languages']:.3f} without the {len(r['never_predicted'])} languages "
                         f"never predicted) on {r['texts']} texts, {r['docs_per_second']:.0f} texts/s; "
                         "worst: " + ", ".join(f"{k} {v:.2f}" for k, v in worst))
    lines += format_langid_backends(results.get("langid/backends"))
    from raycorpus.cli.eval_languages import format_language_defaults

    lines += format_language_defaults(results.get("language_defaults"))
    if "extraction-rules" in results:
        from raycorpus.cli.extract_eval import format_rules_report

        lines.append(format_rules_report(results["extraction-rules"]))
    d = results.get("decontam")
    if d:
        lines.append(f"decontam: {d['index_ngrams']:,} n-grams indexed in {d['index_build_seconds']} s; "
                     f"{d['false_positives']} false positives on {d['clean_pages']} clean pages "
                     f"({d['ms_per_clean_page']} ms/page)")
        for name, b in d["benchmarks"].items():
            lines.append(f"  {name:<10} {b['items']:>6} items ({b['indexable']} indexable): caught "
                         f"{b['verbatim']:.1%} verbatim, {b['light_edit']:.1%} lightly edited")
    if "dedup" in results:
        from raycorpus.process.dedup.neareval import format_near_dedup

        lines.append(format_near_dedup(results["dedup"]))
    return "\n".join(lines)


# ---------------------------------------------------------------- decontamination


def shared_benchmarks(decontam_dir: str | Path) -> list:
    """The benchmark sources of ../shared/data/decontam (those present)."""
    from raycorpus.process.filters.settings import BenchmarkSource

    root = Path(decontam_dir)
    known = [
        ("gsm8k", "gsm8k/grade_school_math/data/test.jsonl", ["question", "answer"]),
        ("humaneval", "humaneval/data/HumanEval.jsonl.gz", ["prompt", "canonical_solution"]),
        ("mmlu", "mmlu/data/mmlu/test", ["question", "choice0", "choice1", "choice2", "choice3"]),
        ("mtbench", "mtbench/evaluation/open_ended/data/mtbench/question.jsonl", ["turns"]),
    ]
    return [BenchmarkSource(name=n, path=str(root / p), fields=f) for n, p, f in known if (root / p).exists()]


def light_edit(text: str, rng) -> str:
    """What a copy on a web page tends to change: case, punctuation, spacing, numbers, one word."""
    words = text.split()
    if len(words) > 3:
        longest_run = int(rng.integers(len(words)))
        words[longest_run] = "thing"  # one word replaced
    out = " ".join(words).lower().replace(",", " ,").replace("?", "").replace('"', "'")
    return re.sub(r"\d+", lambda m: str(int(m.group()) + 1), out)  # numbers changed (digits are folded)


def eval_decontam(decontam_dir: str | Path, clean_texts: Sequence[str], *, seed: int = 0, every: int = 1,
                  cfg=None) -> dict[str, Any]:
    """Inject each benchmark item (verbatim, and lightly edited) into a clean page; count what is caught.

    An item is *indexable* when one of its fields has at least ``min_words`` words; the
    catch rates are over indexable items (the others cannot be matched by n-grams at all);
    ``every`` tests every k-th item (the index always holds them all).
    ``false_positives`` counts clean pages flagged without any injection.
    """
    import numpy as np

    from raycorpus.ingest.storage import Storage
    from raycorpus.process.document import Document
    from raycorpus.process.filters.base import TextView
    from raycorpus.process.filters.decontam import DecontamFilter, build_index, iter_items, ngram_hasher
    from raycorpus.process.filters.settings import DecontamConfig

    sources = shared_benchmarks(decontam_dir)
    cfg = cfg or DecontamConfig(enabled=True, benchmarks=sources)
    t0 = time.perf_counter()
    index = build_index(cfg)
    build_s = time.perf_counter() - t0
    stage = DecontamFilter(cfg, index)
    rng = np.random.default_rng(seed)
    clean = [t for t in clean_texts if t.strip()]

    def flagged(text: str) -> str | None:
        return stage(Document(text=text, url="", record_id="", date=""), TextView(text)).reason

    t0 = time.perf_counter()
    fp = [i for i, t in enumerate(clean) if flagged(t)]
    clean_ms = (time.perf_counter() - t0) * 1000 / max(1, len(clean))
    results: dict[str, Any] = {
        "clean_pages": len(clean), "false_positives": len(fp), "ms_per_clean_page": round(clean_ms, 3),
        "index_build_seconds": round(build_s, 2), "index_ngrams": int(index.table.size),
        "benchmarks": {},
    }
    hasher = ngram_hasher()
    for source in sources:
        caught = caught_edit = indexable = total = wrong = 0
        for k, texts in enumerate(iter_items(source, Storage())):
            if k % every:
                continue
            total += 1
            if not any(hasher.word_hashes(t).size >= cfg.min_words for t in texts):
                continue
            indexable += 1
            page = clean[(k * 7919) % len(clean)].split("\n")
            at = int(rng.integers(len(page) + 1))
            item = "\n".join(texts)
            for edited in (False, True):
                body = light_edit(item, rng) if edited else item
                reason = flagged("\n".join([*page[:at], body, *page[at:]]))
                if reason:
                    if edited:
                        caught_edit += 1
                    else:
                        caught += 1
                    wrong += reason != source.name
        results["benchmarks"][source.name] = {
            "items": total, "indexable": indexable,
            "verbatim": round(caught / max(1, indexable), 4), "light_edit": round(caught_edit / max(1, indexable), 4),
            "other_benchmark_named": wrong,
        }
    return results


def cmd_eval(args: argparse.Namespace) -> int:
    from raycorpus.process.filters import langid
    from raycorpus.process.filters.resources import fasttext_predict, load_fasttext

    cfg = load_config(args.config).extract if args.config else None
    results: dict = {}
    if Path(args.extraction).is_dir():
        results.update(evaluate_extraction(args.extraction, cfg, repeats=args.repeats,
                                                    trafilatura=args.trafilatura))
        from raycorpus.cli.extract_eval import extraction_rules_report  # ablation and time ratio

        results["extraction-rules"] = extraction_rules_report(args.extraction, cfg, repeats=args.repeats)
    else:
        err(f"no extraction test sets at {args.extraction} (--extraction DIR); skipping extraction")
    if Path(args.langid).is_file():
        bare_model = load_fasttext(langid.DEFAULT_MODEL)

        def bare(texts):  # fastText as it comes: one line per text, top label
            return [(fasttext_predict(bare_model, t.replace("\n", " "))[0]) for t in texts]

        results["langid/shipped"] = eval_langid(args.langid, langid.predict)
        results["langid/bare-fasttext"] = eval_langid(args.langid, bare)
        results["langid/backends"] = eval_langid_backends(args.langid, args.warc, repeats=args.repeats,
                                                          extraction_dir=args.extraction)
    else:
        err(f"no language ID test set at {args.langid} (--langid FILE); skipping language ID")
    if Path(args.decontam).is_dir() and Path(args.extraction).is_dir():
        from raycorpus.process.dedup.benchmark import load_texts

        pages = load_texts(Path(args.extraction) / "trafilatura-eval")
        results["decontam"] = eval_decontam(args.decontam, pages, every=args.decontam_every)
    else:
        err(f"no benchmark sets at {args.decontam} (--decontam DIR); skipping decontamination")
    if Path(args.extraction).is_dir():  # FineWeb-2's per-language defaults against English values
        from raycorpus.cli.eval_languages import eval_language_defaults

        extract = shipped_extract_fn(cfg)
        pages = [t for _, html, _ in load_trafilatura_eval(Path(args.extraction) / "trafilatura-eval")
                 if (t := extract(html))]
        results["language_defaults"] = eval_language_defaults(pages, args.langid, args.repeats)
    if Path(args.extraction).is_dir():  # near dedup: both labelled sets by half (doc level), hard set, memory
        from raycorpus.process.dedup.neareval import evaluate_near_dedup

        results["dedup"] = evaluate_near_dedup(args.extraction, load_config(args.config).dedup if args.config else None,
                                               every=args.dedup_every, warc_dir=args.warc)
    if not results:
        return EXIT_USAGE
    print(json.dumps(results, indent=1) if args.json else format_eval(results))
    return EXIT_OK
