"""Benchmark of the near-dedup core: signature cost, BandTable throughput and memory, accuracy.

``python -m raycorpus.process.dedup.benchmark [--data DIR] [--runs N] [--scales 10000,100000] [--json PATH]``

* signature cost per document on text extracted (resiliparse, main content) from the real
  pages of the trafilatura evaluation set;
* BandTable query+insert throughput (14 bands, batches of 1,000 documents) and bytes per
  document, on synthetic keys where 20% of the documents repeat an earlier one's keys;
* pairwise precision/recall against exact word 5-gram Jaccard (positive: J >= 0.8) on a
  labelled set built from the real pages (variants with paragraphs dropped, boilerplate
  lines changed, sentences reordered), plus the same judged online: documents in a random
  order through a BandTable, flagged when an earlier one shares a band (and verifies).

Timings are medians of ``--runs`` runs after a warm-up.
"""

from __future__ import annotations

import argparse
import functools
import gzip
import json
import os
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import numpy as np
from resiliparse.extract.html2text import extract_plain_text
from resiliparse.parse.html import HTMLTree

from raycorpus.ingest.warc import decode_html
from raycorpus.process.dedup.lsh import NO_MATCH, BandTable
from raycorpus.process.dedup.minhash import (
    PRESETS,
    MinHasher,
    band_keys,
    candidate_probability,
    estimate_jaccard_many,
    words,
)

DEFAULT_DATA = Path("../shared/data/extraction/trafilatura-eval")  # beside a checkout, like `raycorpus eval`
THRESHOLD = 0.8
BATCH_DOCS = 1000
FAMILY = 5  # an original page and its four variants
T = TypeVar("T")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def load_texts(data_dir: Path) -> list[str]:
    """Main-content plain text of every ``*.html.gz`` page under ``data_dir``."""
    texts = []
    for path in sorted(data_dir.glob("**/*.html.gz")):
        html, _, _ = decode_html(gzip.decompress(path.read_bytes()), None)
        texts.append(extract_plain_text(HTMLTree.parse(html), main_content=True))
    return texts


def _timed(fn: Callable[[], T], runs: int) -> tuple[float, T]:
    """(median seconds of ``runs`` calls after a warm-up call, the last call's result)."""
    result = fn()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def bench_signatures(texts: list[str], runs: int) -> list[dict]:
    """ms per document for all pages and for typical ones (500-700 words)."""
    mh = MinHasher()
    n_words = [len(words(t)) for t in texts]
    rows = []
    for name, chosen in (
        ("all pages", range(len(texts))),
        ("500-700 words", [i for i, w in enumerate(n_words) if 500 <= w <= 700]),
    ):
        subset = [texts[i] for i in chosen]
        total_words = sum(n_words[i] for i in chosen)
        seconds, _ = _timed(functools.partial(mh.signatures, subset), runs)
        rows.append(
            {
                "input": name,
                "docs": len(subset),
                "mean_words": round(total_words / len(subset), 1),
                "ms_per_doc": round(seconds / len(subset) * 1e3, 4),
                "us_per_1000_words": round(seconds / total_words * 1e6 * 1e3, 1),
            }
        )
    return rows


def _synthetic_keys(n_docs: int, bands: int, rng: np.random.Generator) -> np.ndarray:
    keys = rng.integers(1, 2**64, (n_docs, bands), dtype=np.uint64)
    repeat = np.flatnonzero(rng.random(n_docs) < 0.2)[1:]
    keys[repeat] = keys[(rng.random(repeat.size) * repeat).astype(np.int64)]  # copy an earlier document
    return keys


def _fill_table(keys: np.ndarray, ordinals: np.ndarray, presized: bool, value_dtype: type) -> BandTable:
    table = BandTable(expected_keys=keys.size if presized else 0, value_dtype=value_dtype)
    for i in range(0, len(keys), BATCH_DOCS):
        table.query_and_insert(keys[i : i + BATCH_DOCS].ravel(), ordinals[i : i + BATCH_DOCS].ravel())
    return table


def bench_table(scales: list[int], runs: int, bands: int = 14) -> list[dict]:
    """docs/s and bytes/doc of query_and_insert in batches of BATCH_DOCS documents."""
    rng = np.random.default_rng(0)
    rows = []
    for n_docs in scales:
        keys = _synthetic_keys(n_docs, bands, rng)
        ordinals = np.repeat(np.arange(n_docs, dtype=np.uint64), bands).reshape(n_docs, bands)
        for value_dtype, presized in ((np.uint64, False), (np.uint64, True), (np.uint32, False)):
            seconds, table = _timed(functools.partial(_fill_table, keys, ordinals, presized, value_dtype), runs)
            rows.append(
                {
                    "docs": n_docs,
                    "values": np.dtype(value_dtype).name,
                    "start": "presized" if presized else "empty",
                    "docs_per_s": round(n_docs / seconds),
                    "keys_per_s": round(n_docs * bands / seconds),
                    "bytes_per_doc": round(table.nbytes / n_docs, 1),
                    "load": round(table.load_factor, 3),
                }
            )
    return rows


def _variants(paras: list[str], rng: np.random.Generator, pool: list[str]) -> list[str]:
    """Four near-copies: paragraphs dropped, boilerplate changed, sentences reordered, all three (mildly)."""

    def drop(p: list[str], rate: float) -> list[str]:
        kept = [x for x in p if rng.random() >= rate]
        return kept or p[:1]

    def boilerplate(p: list[str]) -> list[str]:
        head, tail = (int(x) for x in rng.integers(0, 3, 2))
        p = [*rng.choice(pool, head + 1), *p[head : len(p) - tail], *rng.choice(pool, tail)]
        for _ in range(int(rng.integers(0, 3))):
            p.insert(int(rng.integers(0, len(p) + 1)), str(rng.choice(pool)))
        return p

    def reorder(p: list[str], rate: float) -> list[str]:
        sentences = _SENTENCE_END.split("\n".join(p))
        for _ in range(max(1, int(rate * len(sentences)))):
            sentences.insert(int(rng.integers(0, len(sentences))), sentences.pop(int(rng.integers(0, len(sentences)))))
        return sentences

    return [
        "\n".join(drop(paras, rng.uniform(0.02, 0.3))),
        "\n".join(boilerplate(paras)),
        " ".join(reorder(paras, rng.uniform(0.02, 0.4))),
        " ".join(reorder(boilerplate(drop(paras, rng.uniform(0.01, 0.1))), rng.uniform(0.01, 0.1))),
    ]


def build_labelled_docs(texts: list[str], seed: int = 0, min_words: int = 100) -> tuple[list[str], np.ndarray]:
    """Originals with at least ``min_words`` words, each followed by its variants; and each doc's group."""
    rng = np.random.default_rng(seed)
    pages = [[p for p in t.split("\n") if p.strip()] for t in texts if len(words(t)) >= min_words]
    pool = [p for paras in pages for p in paras if 2 <= len(p.split()) <= 12]
    docs: list[str] = []
    group: list[int] = []
    for g, paras in enumerate(pages):
        family = ["\n".join(paras), *_variants(paras, rng, pool)]
        docs.extend(family)
        group.extend([g] * len(family))
    return docs, np.array(group)


def _shingle_set(text: str, n: int = 5) -> set[int]:
    w = words(text)
    if len(w) < n:
        return {hash(" ".join(w))} if w else set()
    return {hash(" ".join(w[i : i + n])) for i in range(len(w) - n + 1)}


def _candidate_pairs(keys: np.ndarray) -> np.ndarray:
    """(m, 2) document pairs (i < j) that share at least one band key."""
    n_docs, bands = keys.shape
    flat = keys.ravel()
    order = np.argsort(flat, kind="stable")
    docs = (order // bands).astype(np.int64)
    sorted_keys = flat[order]
    starts = np.flatnonzero(np.r_[True, sorted_keys[1:] != sorted_keys[:-1]])
    ends = np.r_[starts[1:], flat.size]
    codes = []
    for s, e in zip(starts[ends - starts > 1], ends[ends - starts > 1], strict=True):
        members = np.unique(docs[s:e])
        i, j = np.triu_indices(members.size, 1)
        codes.append(members[i] * n_docs + members[j])
    codes_all = np.unique(np.concatenate(codes)) if codes else np.empty(0, np.int64)
    return np.stack([codes_all // n_docs, codes_all % n_docs], axis=1)


def _scores(predicted: np.ndarray, truth: np.ndarray) -> dict:
    tp = int(np.count_nonzero(predicted & truth))
    fp = int(np.count_nonzero(predicted & ~truth))
    fn = int(np.count_nonzero(~predicted & truth))
    return {
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "precision": round(tp / (tp + fp), 4) if tp + fp else None,
        "recall": round(tp / (tp + fn), 4) if tp + fn else None,
    }


# (preset, permutations of the verifying Jaccard estimate; 0: no verification)
# (preset, permutations verified (0: none), bits kept of each value): 16 bits is what the index keeps by default
CONFIGS = (("fineweb", 0, 32), ("fineweb", 112, 32), ("fineweb", 112, 16), ("fineweb", 256, 32), ("recall", 0, 32),
           ("recall", 112, 32), ("recall", 112, 16), ("recall", 256, 32))


def _bits(sigs: np.ndarray, bits: int) -> np.ndarray:
    return sigs & np.uint64((1 << bits) - 1)


def _estimate_bits(a: np.ndarray, b: np.ndarray, bits: int) -> np.ndarray:
    """Row-wise Jaccard from b-bit values, the chance agreement 2**-b taken out (as the index does)."""
    chance = 2.0 ** -bits
    return np.maximum(0.0, (estimate_jaccard_many(_bits(a, bits), _bits(b, bits)) - chance) / (1.0 - chance))
J_BINS = (0.0, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0001)


def labelled_pairs(docs: list[str], group: np.ndarray, sigs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(pairs, exact Jaccard): every pair within a family and every pair sharing a 2-row band.

    Every pair sharing a fineweb (8-row) or recall (5-row) band shares an aligned 2-row band,
    so the 56 x 2 candidates hold all pairs any preset predicts, and all with J >= 0.8 but
    for ~(1 - 0.8**2)**56 = 1e-25 of them."""
    within = np.stack(np.triu_indices(FAMILY, 1), axis=1)
    within = (within[None] + FAMILY * np.arange(group[-1] + 1)[:, None, None]).reshape(-1, 2)
    pairs = np.unique(np.concatenate([_candidate_pairs(band_keys(sigs, 56, 2)), within]), axis=0)
    sets = [_shingle_set(d) for d in docs]
    exact = np.array([len(sets[i] & sets[j]) / max(1, len(sets[i] | sets[j])) for i, j in pairs])
    return pairs, exact


def bench_accuracy(texts: list[str], seed: int = 0) -> dict:
    """Pairwise and online precision/recall of each preset, with and without verification."""
    docs, group = build_labelled_docs(texts, seed)
    sigs = MinHasher(num_perm=max(v for _, v, _ in CONFIGS)).signatures(docs)  # its first 112 = MinHasher()'s
    pairs, exact = labelled_pairs(docs, group, sigs)
    first, second = pairs[:, 0], pairs[:, 1]
    truth = exact >= THRESHOLD
    clear = np.abs(exact - THRESHOLD) >= 0.05
    j_bin = np.digitize(exact, J_BINS) - 1
    order = np.random.default_rng(seed).permutation(len(docs))
    rank = np.empty(len(docs), np.int64)
    rank[order] = np.arange(len(docs))
    doc_truth = np.zeros(len(docs), bool)
    doc_truth[np.where(rank[first] > rank[second], first, second)[truth]] = True
    pairwise, by_bin, online = [], [], []
    for name, perms, bits in CONFIGS:
        keys = band_keys(sigs, *PRESETS[name])
        predicted = (keys[first] == keys[second]).any(axis=1)
        if perms:
            predicted &= _estimate_bits(sigs[first, :perms], sigs[second, :perms], bits) >= THRESHOLD
        verify = (perms if bits == 32 else f"{perms} x {bits} bits") if perms else "-"
        label = {"preset": f"{name} {PRESETS[name][0]}x{PRESETS[name][1]}", "verify": verify}
        scores = _scores(predicted, truth)
        pairwise.append({**label, **scores, "clear": _scores(predicted[clear], truth[clear])})
        by_bin.append({**label, **{_bin_name(b): round(float(predicted[j_bin == b].mean()), 3) for b in range(9)}})
        flagged = _online_flags(keys[order], _bits(sigs[order, :perms], bits) if perms else None, bits)
        online.append({**label, **_scores(flagged[rank], doc_truth)})
    return {
        "docs": len(docs),
        "pages": int(group[-1] + 1),
        "pairs": len(pairs),
        "positive_pairs": int(truth.sum()),
        "cross_page_positive_pairs": int((truth & (group[first] != group[second])).sum()),
        "clear_pairs": int(clear.sum()),
        "pairs_by_j": {_bin_name(b): int(np.count_nonzero(j_bin == b)) for b in range(9)},
        "pairwise": pairwise,
        "predicted_rate_by_j": by_bin,
        "online": online,
        "online_true_duplicates": int(doc_truth.sum()),
    }


class _TimedShards:
    """LocalShards that time the shard side (what an LSH shard actor does) apart from the decision."""

    def __init__(self, layout, expected_docs: int):
        from raycorpus.process.dedup.index import LocalShards

        self._local = LocalShards(layout, expected_docs)
        self.shards = self._local.shards
        self.seconds = 0.0

    def _time(self, name: str, *args):
        t0 = time.perf_counter()
        out = getattr(self._local, name)(*args)
        self.seconds += time.perf_counter() - t0
        return out

    def query(self, requests):
        return self._time("query", requests)

    def documents(self, requests):
        return self._time("documents", requests)

    def take(self, requests, ordinal):
        return self._time("take", requests, ordinal)


def bench_index(scales: list[int], runs: int, dup_rate: float = 0.2, url: bool = True) -> list[dict]:
    """Deduplicator (one in-process LshShard) over synthetic signatures (and distinct URLs) in WARC-sized
    batches; ``url=False`` leaves the URL keys out of the index."""
    from raycorpus.process.dedup.index import Deduplicator, Layout
    from raycorpus.process.dedup.settings import DedupConfig
    from raycorpus.process.dedup.sketch import Signer

    cfg = DedupConfig(url=url)
    width = Signer(cfg.num_perm, sketch=cfg.verify_sketch == "oph").width  # MinHash values, then the sketch
    rows = []
    for n_docs in scales:
        rng = np.random.default_rng(n_docs)
        sigs = rng.integers(0, 2**32, (n_docs, width), dtype=np.uint64).astype(np.uint32)
        is_dup = rng.random(n_docs) < dup_rate
        is_dup[0] = False
        dup = np.flatnonzero(is_dup)
        originals = np.flatnonzero(~is_dup)
        src = originals[(rng.random(dup.size) * np.searchsorted(originals, dup)).astype(np.int64)]  # earlier
        noise = rng.random((dup.size, width)) < 0.1  # ~0.9 estimated Jaccard
        sigs[dup] = np.where(noise, sigs[dup] ^ np.uint32(1), sigs[src])
        hashes = rng.integers(1, 2**63, n_docs, dtype=np.uint64)
        urls = rng.integers(1, 2**63, n_docs, dtype=np.uint64)  # near copies live at other URLs

        for presized in (False, True):

            def run_once(n_docs=n_docs, hashes=hashes, sigs=sigs, urls=urls, presized=presized):
                layout = Layout.from_config(cfg, 1)
                shards = _TimedShards(layout, n_docs if presized else 0)
                dd = Deduplicator(layout, cfg.threshold, shards)
                dropped = 0
                for w, i in enumerate(range(0, n_docs, BATCH_DOCS)):
                    batch = slice(i, i + BATCH_DOCS)
                    decision, _ = dd.decide(w, hashes[batch], sigs[batch], urls[batch])
                    dropped += int((~decision.keep).sum())
                return shards, dropped

            seconds, (shards, dropped) = _timed(run_once, max(1, runs if n_docs <= 100_000 else 1))
            st = shards.shards[0].stats()
            kept = st["documents"]  # indexed: the kept ones, and with index_duplicates the near copies too
            rows.append({
                "docs": n_docs,
                "indexed": kept,
                "start": "presized" if presized else "empty",
                "found": round(dropped / max(1, dup.size), 4),
                "decide_docs_per_s": round(n_docs / seconds),
                "shard_docs_per_s": round(n_docs / shards.seconds),
                "table_B_per_doc": round(st["table_bytes"] / kept, 1),
                "store_B_per_doc": round(st["signature_bytes"] / kept, 1),
            })
    return rows


def _bin_name(b: int) -> str:
    return f"{J_BINS[b]:.2f}-{min(J_BINS[b + 1], 1.0):.2f}"


def _online_flags(keys: np.ndarray, sigs: np.ndarray | None, bits: int = 32) -> np.ndarray:
    """Documents in order through a BandTable: flagged when an earlier one shares a band (and, given
    ``sigs``, the document stored for that band has an estimated Jaccard >= THRESHOLD)."""
    n_docs, bands = keys.shape
    table = BandTable(expected_keys=keys.size)
    ordinals = np.repeat(np.arange(n_docs, dtype=np.uint64), bands).reshape(n_docs, bands)
    flagged = np.zeros(n_docs, bool)
    for i in range(0, n_docs, BATCH_DOCS):
        found = table.query_and_insert(keys[i : i + BATCH_DOCS].ravel(), ordinals[i : i + BATCH_DOCS].ravel())
        found = found.reshape(-1, bands)
        doc, band = np.nonzero(found != NO_MATCH)
        if sigs is not None:
            earlier = found[doc, band].astype(np.int64)
            doc = doc[_estimate_bits(sigs[doc + i], sigs[earlier], bits) >= THRESHOLD]
        flagged[doc + i] = True
    return flagged


def candidate_curves(js: tuple[float, ...] = (0.5, 0.7, 0.8, 0.9, 0.95)) -> dict:
    return {name: {str(j): round(float(candidate_probability(j, *PRESETS[name])), 4) for j in js} for name in PRESETS}


def _table(rows: list[dict], columns: list[str]) -> str:
    cells = [[str(r.get(c, "")) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[k]) for row in cells)) for k, c in enumerate(columns)]
    lines = ["  ".join(c.rjust(w) for c, w in zip(columns, widths, strict=True))]
    lines += ["  ".join(v.rjust(w) for v, w in zip(row, widths, strict=True)) for row in cells]
    return "\n".join(lines)


def format_report(report: dict) -> str:
    acc = report["accuracy"]
    curves = report["candidate_curves"]
    rule = f"J >= {THRESHOLD}"
    return "\n".join(
        [
            f"runs: median of {report['runs']} after a warm-up; cores: {report['cpu_count']}",
            "",
            "signature cost (MinHasher: 112 permutations, word 5-grams; real extracted pages):",
            _table(report["signatures"], ["input", "docs", "mean_words", "ms_per_doc", "us_per_1000_words"]),
            "",
            f"BandTable.query_and_insert, 14 bands, batches of {BATCH_DOCS} docs, 20% repeated docs:",
            _table(report["table"], ["docs", "values", "start", "docs_per_s", "keys_per_s", "bytes_per_doc", "load"]),
            "",
            f"Deduplicator.decide (query, verify, insert; one LSH shard in-process), batches of {BATCH_DOCS}, "
            "synthetic signatures, 20% copy an earlier one with 10% of values changed; shard_docs_per_s = the "
            "shard's share (an LSH shard actor's work); store = gid + verification data (OPH sketch: 192 B) "
            "per indexed document:",
            _table(report["index"], ["docs", "indexed", "start", "found", "decide_docs_per_s", "shard_docs_per_s",
                                     "table_B_per_doc", "store_B_per_doc"]),
            "",
            "P(candidate | J) = 1 - (1 - J^r)^b:",
            _table(
                [{"preset": f"{n} {PRESETS[n][0]}x{PRESETS[n][1]}", **c} for n, c in curves.items()],
                ["preset", *next(iter(curves.values()))],
            ),
            "",
            f"labelled set: {acc['docs']} docs ({acc['pages']} pages + 4 variants each); {acc['pairs']} pairs "
            f"(within a page's family, or sharing a 2-row band); {acc['positive_pairs']} with {rule} "
            f"({acc['cross_page_positive_pairs']} across pages)",
            "pairs by exact J: " + ", ".join(f"{k}: {v}" for k, v in acc["pairs_by_j"].items()),
            "",
            f"pairwise: positive = exact 5-gram {rule}; predicted = shares a band [and estimated {rule}]",
            "(verify: permutations of the estimate; clear_*: the {} pairs with |J - {}| >= 0.05)".format(
                acc["clear_pairs"], THRESHOLD
            ),
            _table(
                [{**r, "clear_P": r["clear"]["precision"], "clear_R": r["clear"]["recall"]} for r in acc["pairwise"]],
                ["preset", "verify", "tp", "fp", "fn", "precision", "recall", "clear_P", "clear_R"],
            ),
            "",
            "fraction of pairs predicted positive, by exact J:",
            _table(acc["predicted_rate_by_j"], ["preset", "verify", *acc["pairs_by_j"]]),
            "",
            f"online: documents in a random order through a BandTable; {acc['online_true_duplicates']} have an "
            f"earlier one with {rule}; flagged = an earlier one shares a band [and the one stored verifies]:",
            _table(acc["online"], ["preset", "verify", "tp", "fp", "fn", "precision", "recall"]),
        ]
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m raycorpus.process.dedup.benchmark", description=__doc__.split("\n")[0])
    p.add_argument("--data", type=Path, default=DEFAULT_DATA, help="directory with *.html.gz pages")
    p.add_argument("--runs", type=int, default=5, help="timed runs per figure (median reported)")
    p.add_argument("--scales", default="10000,100000,1000000", help="document counts for the BandTable figures")
    p.add_argument("--json", type=Path, help="also write the report as JSON here")
    args = p.parse_args(argv)
    texts = load_texts(args.data)
    if not texts:
        print(f"no *.html.gz pages under {args.data}", file=sys.stderr)
        return 2
    report = {
        "runs": args.runs,
        "cpu_count": os.cpu_count(),
        "signatures": bench_signatures(texts, args.runs),
        "table": bench_table([int(s) for s in args.scales.split(",")], args.runs),
        "index": bench_index([int(s) for s in args.scales.split(",")], args.runs),
        "candidate_curves": candidate_curves(),
        "accuracy": bench_accuracy(texts),
    }
    print(format_report(report))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
