"""Paragraph dedup's figures (issue 31, part 2), from its Ray-free core (raycorpus/process/dedup/paragraphs.py)
on the documents a build decides: what it removes and what it costs a worker (the head's cost is the commit-path
replay's: ``raycorpus bench CONFIG WARC --commit-path`` with ``dedup.paragraphs`` on, docs/dedup.md).

Usage (from the project's root, its venv active; ``../shared`` beside it)::

    python benchmarks/paragraph_dedup.py --bench-warc /tmp/bench.warc.gz --tokenizer /tmp/bench/tok.json --runs 5

1. **trafilatura-eval** (851 labelled pages, file-name order, one page per WARC, the shipped extraction; no
   quality filters): document-level dedup (URL, exact, near, the defaults) first, then paragraph dedup on the kept
   documents. Per setting (``min_chars`` x ``threshold``), on each of the fixed halves of ``raycorpus eval`` (A to
   tune on, B to report): the "without" snippets (boilerplate) that extraction left in and paragraph dedup removes,
   against the "with" snippets (article text) extraction kept and paragraph dedup loses.
2. **WARCs** (the bench WARC, the Common Crawl excerpts and the single-site crawls in ``../shared/data/warc``),
   through the default chain in filter mode, document-level dedup within each file, then paragraph dedup at the
   default setting (``dedup.paragraphs``): paragraphs, removed, documents dropped, and the paragraphs removed most
   often (to read).
3. **Cost on a worker**: on the bench WARC's documents, tokenizing each whole document (today) against cutting it
   into paragraphs, keying them and tokenizing piece by piece, alternating A / B, the median of ``--runs``.

Nothing here asserts a figure; they are printed (and written as JSON with ``--save``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import Counter
from pathlib import Path

import numpy as np

from raycorpus.cli.evaluate import load_trafilatura_eval, shipped_extract_fn, snippet_counts, trafilatura_half
from raycorpus.config import TokenizerConfig, config_from_dict
from raycorpus.process.dedup.index import Deduplicator, Layout, LocalShards
from raycorpus.process.dedup.paragraphs import (
    ParagraphHasher,
    Paragraphs,
    SeenParagraphs,
    dropped,
    removed_share,
)
from raycorpus.process.dedup.settings import DedupConfig, ParagraphDedupConfig
from raycorpus.process.dedup.sketch import Signer
from raycorpus.process.dedup.urlkey import url_key
from raycorpus.process.pipeline import WarcProcessor, content_hash
from raycorpus.process.tokenize import TokenEncoder

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
WARCS = {"CC excerpt (CC-MAIN-2020-34, 50 records)": "data/warc/resiliparse/tests/data/warcfile.warc.gz",
         "Dolma sample 0": "data/warc/dolma/tests/data/warc/sample-0000.warc.gz",
         "Dolma sample 1": "data/warc/dolma/tests/data/warc/sample-0001.warc.gz",
         "iana.org (pywb, one site)": "data/warc/pywb/sample_archive/warcs/iana.warc.gz",
         "ClueWeb09-ja (one site)": "data/warc/resiliparse/tests/data/clueweb-quirk.warc.gz"}
MIN_CHARS = (16, 32, 64, 128)
THRESHOLDS = (0.5, 0.8, 1.01)  # 1.01: no document is dropped, paragraphs only


class DocDedup:
    """Document-level dedup with the default settings, one batch (WARC) at a time, in order."""

    def __init__(self) -> None:
        cfg = DedupConfig()
        self.layout = Layout.from_config(cfg, 1)
        self.dedup = Deduplicator(self.layout, cfg.threshold, LocalShards(self.layout))
        self.signer = Signer(cfg.num_perm, cfg.ngram, cfg.seed, cfg.verify_sketch == "oph", cfg.oph_bits)
        self.ordinal = 0

    def keep(self, urls: list[str], texts: list[str]) -> np.ndarray:
        hashes = np.array([content_hash(t) for t in texts], np.uint64)
        sigs = np.stack([self.signer.signature(t) for t in texts]) if texts else None
        keys = np.array([url_key(u) for u in urls], np.uint64)
        decision, _ = self.dedup.decide(self.ordinal, hashes, sigs, keys, encode=False)
        self.ordinal += 1
        return decision.keep


def paragraph_pass(batches: list[list[str]], min_chars: int, threshold: float
                   ) -> tuple[list[list[str]], Counter, Counter]:
    """Each document's text after paragraph dedup ("" when dropped), batch by batch in order, the counts, and the
    removed paragraphs (their first 70 characters, whitespace collapsed) by how often."""
    hasher, seen, counts, common, out = ParagraphHasher(min_chars), SeenParagraphs(), Counter(), Counter(), []
    for texts in batches:
        paras, split = Paragraphs.of(texts, hasher)
        removed = seen.decide(paras)
        drop = dropped(removed_share(paras, removed), threshold)
        counts.update(paragraphs=paras.keys.size, keyed=int(np.count_nonzero(paras.keys)),
                      removed=int(removed.sum()), documents=len(texts), dropped=int(drop.sum()),
                      chars=int(paras.chars.sum()), removed_chars=int(paras.chars[removed].sum()))
        flags, at, kept = removed.tolist(), 0, []
        for parts, d in zip(split, drop.tolist(), strict=True):
            gone, at = flags[at : at + len(parts)], at + len(parts)
            kept.append("" if d else "".join(p for p, r in zip(parts, gone, strict=True) if not r))
            common.update(" ".join(p.split())[:70] for p, r in zip(parts, gone, strict=True) if r)
        out.append(kept)
    return out, counts, common


def labelled(min_chars: tuple[int, ...], thresholds: tuple[float, ...]) -> dict:
    """Snippet counts per half and setting on trafilatura-eval (document-level dedup first)."""
    pages = load_trafilatura_eval(SHARED / "data" / "extraction" / "trafilatura-eval")
    extract = shipped_extract_fn()
    texts = [extract(html) for _, html, _ in pages]
    docs = DocDedup()
    kept = [bool(docs.keep([f"https://eval.example/{f}"], [t])[0]) if t else False
            for (f, _, _), t in zip(pages, texts, strict=True)]
    before = {h: np.zeros(4, int) for h in "AB"}
    for (f, _, item), t, k in zip(pages, texts, kept, strict=True):
        before[trafilatura_half(f)] += snippet_counts(item, t if k else "")
    rows = []
    for mc in min_chars:
        for th in thresholds:
            after, counts, _ = paragraph_pass([[t] for t, k in zip(texts, kept, strict=True) if k], mc, th)
            flat = iter(a[0] for a in after)
            score = {h: np.zeros(4, int) for h in "AB"}
            for (f, _, item), k in zip(pages, kept, strict=True):
                score[trafilatura_half(f)] += snippet_counts(item, next(flat) if k else "")
            rows.append({"min_chars": mc, "threshold": th, **dict(counts),
                         **{f"half {h}": {"with lost": int(before[h][0] - score[h][0]),
                                          "without removed": int(before[h][1] - score[h][1]),
                                          "with kept before": int(before[h][0]),
                                          "without left before": int(before[h][1])} for h in "AB"}})
    return {"pages": len(pages), "kept by document dedup": sum(kept), "rows": rows}


def warc_documents(path: Path) -> tuple[list[str], list[str]]:
    """(urls, texts) of the documents that pass the default chain in filter mode."""
    cfg = config_from_dict({"input": {"manifest": str(path)}, "output": {"path": "/nonexistent/out"},
                            "tokenizer": {"path": "/nonexistent/tok.json"}})
    docs = WarcProcessor(cfg).process(0, str(path)).docs
    return [d.url for d in docs], [d.text for d in docs]


def warc_figures(paths: dict[str, Path], min_chars: int, threshold: float) -> dict:
    out = {}
    for name, path in paths.items():
        urls, texts = warc_documents(path)
        keep = DocDedup().keep(urls, texts) if texts else np.zeros(0, bool)
        kept = [t for t, k in zip(texts, keep.tolist(), strict=True) if k]
        _, counts, common = paragraph_pass([kept], min_chars, threshold)
        out[name] = {"documents": len(texts), "kept by document dedup": int(keep.sum()), **dict(counts),
                     "removed most often": common.most_common(5)}
    return out


def worker_cost(texts: list[str], tokenizer: str, min_chars: int, runs: int) -> dict:
    """ms per document: whole-text tokenizing (A) against paragraphs keyed and tokenized piece by piece (B)."""
    encoder = TokenEncoder(TokenizerConfig(path=tokenizer, eos="<|endoftext|>"))
    hasher = ParagraphHasher(min_chars)
    encoder.encode(texts[:20])
    times: dict[str, list[float]] = {"whole": [], "paragraphs": [], "keys only": []}
    for _ in range(runs):
        t = time.perf_counter()
        encoder.encode(texts)
        times["whole"].append(time.perf_counter() - t)
        t = time.perf_counter()
        _, split = Paragraphs.of(texts, hasher)
        t_keys = time.perf_counter()
        encoder.encode_pieces(split)
        times["paragraphs"].append(time.perf_counter() - t)
        times["keys only"].append(t_keys - t)
    per_doc = {k: statistics.median(v) / len(texts) * 1e3 for k, v in times.items()}
    return {"documents": len(texts), "runs": runs, "engine": encoder.engine,
            "ms per document": {k: round(v, 4) for k, v in per_doc.items()},
            "extra ms per document": round(per_doc["paragraphs"] - per_doc["whole"], 4)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bench-warc", default="/tmp/bench.warc.gz")
    ap.add_argument("--tokenizer", default="/tmp/bench/tok.json")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--save")
    args = ap.parse_args()
    report: dict = {"labelled": labelled(MIN_CHARS, THRESHOLDS)}
    for row in report["labelled"]["rows"]:
        print(f"min_chars {row['min_chars']:>4} threshold {row['threshold']:.2f}: {row['removed']:,} of "
              f"{row['paragraphs']:,} paragraphs removed ({row['removed_chars'] / row['chars']:.2%} of the text), "
              f"{row['dropped']} documents dropped; " + "; ".join(
                  f"half {h}: boilerplate removed {row[f'half {h}']['without removed']} of "
                  f"{row[f'half {h}']['without left before']}, article lost {row[f'half {h}']['with lost']} of "
                  f"{row[f'half {h}']['with kept before']}" for h in "AB"))
    chosen = ParagraphDedupConfig()
    paths = {"bench WARC": Path(args.bench_warc), **{k: SHARED / v for k, v in WARCS.items()}}
    report["warcs"] = warc_figures({k: p for k, p in paths.items() if p.exists()}, chosen.min_chars, chosen.threshold)
    print(json.dumps(report["warcs"], indent=1, ensure_ascii=False))
    _, texts = warc_documents(Path(args.bench_warc))
    report["worker"] = worker_cost(texts, args.tokenizer, chosen.min_chars, args.runs)
    print(json.dumps(report["worker"], indent=1))
    if args.save:
        Path(args.save).write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
