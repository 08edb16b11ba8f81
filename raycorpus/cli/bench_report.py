"""``python -m raycorpus.cli.bench_report``: what the report costs at the scale of a whole crawl.

1. **Writing the report of a 100,000-WARC output.** A synthetic output with everything the report reads at
   that scale: a ledger of 100,000 WARC entries written and compacted by the real :class:`Ledger` (1,000 of
   them failed), report data at its bounds (every sample pool full, 45 signals x 30 languages, 176
   languages, the duplicate tables at capacity, the timeline full), and the files a real output of that size
   lists (a dedup record per WARC, 20,000 shards). ``raycorpus report`` runs on it in a fresh process
   each time: wall time and peak memory, medians of ``--repeats``.
2. **The head's cost per WARC** of adding a Common-Crawl-shaped profile (``--docs`` documents reaching dedup,
   10 % duplicates) to the report data at commit, in this process: median microseconds of ``--adds``.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np

from raycorpus.ingest.storage import Storage
from raycorpus.output.ledger import Ledger, LedgerState
from raycorpus.output.report_state import ReportState, TopCounts, state_name
from raycorpus.process.dedup.index import KEEP, NEAR, Decision
from raycorpus.process.profile import COUNT, PASSED, UNIT, SampleDoc, WarcProfile, host_keys, scale_of

SIGNALS = [f"gopher_repetition.{n}" for n in ("dup_para_frac", "dup_line_frac", "top_2_gram", "dup_5_gram",
                                                "dup_10_gram")] * 5 + ["gopher_quality.words", "lang_score"] * 10
LANGS = [f"l{i:03d}" for i in range(176)]


def synthetic_state(rng: np.random.Generator, warcs: int) -> ReportState:
    """Report data at every bound it has (see the module doc)."""
    r = ReportState(200, 20)
    signals = sorted({f"{s}.{i}" if i else s for i, s in enumerate(SIGNALS)})[:45]
    for s in signals:
        for lang in LANGS[:30]:
            r.signals[s, lang] = rng.integers(0, 10**6, len(scale_of(s)))
    stages = ["url", "extract", "lang", "gopher_repetition", "gopher_quality", "c4", "fineweb", "badwords"]
    for outcome in [*stages, "kept", "dedup"]:
        r.lengths["chars", outcome] = rng.integers(0, 10**7, len(COUNT))
        r.lengths["tokens", outcome] = rng.integers(0, 10**7, len(COUNT))
        for lang in LANGS:
            r.langs[lang, outcome] = rng.integers(0, 10**8, 3)
    r.similarity = rng.integers(0, 10**6, len(UNIT))
    keys = np.arange(1000, dtype=np.uint64) * np.uint64(2**30)
    r.clusters = TopCounts(keys=keys, counts=rng.integers(1, 10**4, 1000))
    r.domains = TopCounts(keys=keys, counts=rng.integers(1, 10**5, 1000),
                          names={int(k): f"site{i}.example.com" for i, k in enumerate(keys)})
    reasons = [f"{st}:reason{i}" for st in stages for i in range(10)]
    text = "word " * 600
    r.samples[PASSED] = [SampleDoc(int(k), PASSED, i, i, f"https://x.test/{i}", f"<urn:{i}>", "en", 3000, text,
                                   {"lang_score": 0.9}, "kept") for i, k in enumerate(np.sort(rng.integers(0, 2**63,
                                                                                                        200)))]
    for reason in reasons:
        r.samples[reason] = [SampleDoc(int(k), reason, i, -1, f"https://y.test/{i}", f"<urn:{reason}:{i}>", "de",
                                       3000, text, {}, reason) for i, k in enumerate(np.sort(rng.integers(0, 2**63,
                                                                                                          20)))]
    r.reasons = Counter({reason: int(n) for reason, n in zip(reasons, rng.integers(0, 10**8, len(reasons)),
                                                               strict=True)})
    r.timeline = [[1.7e9 + 60.0 * i, warcs * i // 2000, 10**6 * i, 10**9 * i, 1000] for i in range(2000)]
    r.retries = Counter({f"Error{i}": 10 for i in range(20)})
    r.warcs = warcs
    return r


def make_output(root: Path, warcs: int, shards: int, rng: np.random.Generator) -> None:
    """A 100,000-WARC output as the report sees it (see the module doc)."""
    storage, out = Storage(), str(root)
    ledger = Ledger(storage, out)
    ledger.write_run({"warcs": warcs, "config_fingerprint": "synthetic", "manifest": "warc.paths",
                      "token_meta": {"dtype": "<u4"}})
    state = LedgerState()
    per_ckpt = warcs // 400
    for seq in range(1, 401):
        entries = []
        for o in range((seq - 1) * per_ckpt, seq * per_ckpt):
            if o % 100 == 0:
                entry = {"ordinal": o, "warc": f"crawl/{o}.warc.gz", "status": "failed", "attempts": 3,
                         "error": "OSError: gone"}
                state.failed.append(entry)
            else:
                entry = {"ordinal": o, "warc": f"crawl/{o}.warc.gz", "status": "committed", "attempts": 1,
                         "docs": 9000, "tokens": 9_000_000, "counts": {"html": 40000, "kept": 9000}}
                state.committed += 1
            entries.append(entry)
        state.seq, state.next_ordinal = seq, seq * per_ckpt
        if seq == 400:
            state.complete, state.report = True, state_name(seq)
            storage.write_atomic(str(root / state.report), synthetic_state(rng, warcs).encode())
        ledger.write_checkpoint(state, entries)
        ledger.compact()
    for d, n in (("dedup", warcs), ("shards", shards * 3)):
        (root / d).mkdir()
        for i in range(n):
            (root / d / f"{i:09d}").touch()


def time_report(root: Path, repeats: int) -> dict:
    """``raycorpus report`` in a fresh process each time: wall seconds and peak RSS (MB), medians."""
    walls, rss = [], []
    for _ in range(repeats):
        t = time.perf_counter()
        code = ("import resource, sys; from raycorpus.cli import main; rc = main(['report', sys.argv[1], '--out', "
                "sys.argv[2]]); print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss); sys.exit(rc)")
        r = subprocess.run([sys.executable, "-c", code, str(root), str(root.parent / "report.html")],
                           capture_output=True, text=True, check=True)
        walls.append(time.perf_counter() - t)
        rss.append(int(r.stdout.split()[-1]) / 1024)
    size = (root.parent / "report.html").stat().st_size
    return {"wall_seconds": round(statistics.median(walls), 2), "peak_rss_mb": round(statistics.median(rss), 1),
            "html_mb": round(size / 1e6, 2), "runs": walls}


def head_cost(docs: int, adds: int, rng: np.random.Generator) -> dict:
    """Median microseconds of ReportState.add for one WARC of ``docs`` documents reaching dedup (10 % duplicates,
    half of them near), with a few sample candidates (as a WARC sends once the pools are full)."""
    langs = ["en", "de", "fr", "es", "ru", "ja", "zh", "it"]
    hosts = [f"h{i}.test" for i in range(docs // 4)]
    profile = WarcProfile(
        signals={(s, "en"): rng.integers(0, 100, len(scale_of(s))) for s in SIGNALS[:30]},
        dropped_chars={st: rng.integers(0, 100, len(COUNT)) for st in ("lang", "gopher_quality", "fineweb")},
        langs=Counter({(lang, "lang"): 100 for lang in langs}), lang_chars=Counter({(lang, "lang"): 10**5
                                                                                    for lang in langs}),
        reasons=Counter({"lang:not_kept:de": 100}), lang_names=langs,
        lang=rng.integers(0, len(langs), docs).astype(np.uint16),
        chars=rng.integers(100, 10**5, docs).astype(np.uint32), tokens=rng.integers(20, 20000, docs).astype(np.uint32),
        host=rng.integers(0, docs // 4, docs).astype(np.uint32), hosts="\n".join(hosts), host_keys=host_keys(hosts),
        open=np.ones(docs, bool),
        samples=[SampleDoc(int(k), PASSED, 0, i, "u", f"r{i}", "en", 10, "t") for i, k in
                 enumerate(rng.integers(2**62, 2**63, 2))])
    profile.char_bin, profile.token_bin = (COUNT.bins(a).astype(np.uint8) for a in (profile.chars, profile.tokens))
    kind = np.where(rng.random(docs) < 0.1, NEAR, KEEP).astype(np.uint8)
    verified = np.where(rng.random(docs) < 0.07, rng.random(docs), np.nan).astype(np.float32)
    decision = Decision(kind, rng.integers(0, 2**40, docs).astype(np.uint64), np.zeros(docs, np.float32), docs,
                        None, verified)
    state = synthetic_state(rng, 1)
    times = []
    for _ in range(adds):
        t = time.perf_counter()
        state.add(0, profile, decision)
        times.append(time.perf_counter() - t)
    return {"docs": docs, "us_per_warc": round(statistics.median(times) * 1e6, 1),
            "encoded_state_mb": round(len(state.encode()) / 1e6, 2)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--warcs", type=int, default=100_000)
    ap.add_argument("--shards", type=int, default=20_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--docs", type=int, default=10_000, help="documents reaching dedup per WARC (CC: ~10,000)")
    ap.add_argument("--adds", type=int, default=200)
    ap.add_argument("--dir", help="where to build the synthetic output (default: a temporary folder)")
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        root = Path(tmp) / "out"
        t = time.perf_counter()
        make_output(root, args.warcs, args.shards, rng)
        built = time.perf_counter() - t
        report = time_report(root, args.repeats)
    head = head_cost(args.docs, args.adds, rng)
    print(json.dumps({"warcs": args.warcs, "synthetic_output_seconds": round(built, 1), "report": report,
                      "head": head, "peak_rss_mb_this_process": round(resource.getrusage(
                          resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
