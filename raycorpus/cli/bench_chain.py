"""``raycorpus bench --chain``: the per-document chain against bare extraction, in tag mode.

On the same pages in the same process, interleaved run by run: (a) bare resiliparse,
``extract_plain_text(HTMLTree.parse(html), main_content=True)`` on each decoded HTML page, and
(b) everything a worker does per document with ``filters.mode: tag`` (every stage runs on every
document): read and decode, extract, language ID, every filter, PII, content hash, URL key,
MinHash / sketch and tokenization (``WarcProcessor.process`` with a tokenizer, wall time), on one
thread as a worker tokenizes (``TOKENIZERS_PARALLELISM=false``). Both are divided by the HTML pages
read; the ratio (b) / (a) is the figure of issue 16 (target <= 2). The ratio of CPU times
(``time.process_time``) is printed beside it: on a loaded machine it moves less.
"""

from __future__ import annotations

import os
import statistics
import time
from collections import Counter

from resiliparse.extract.html2text import extract_plain_text
from resiliparse.parse.html import HTMLTree

from raycorpus import counts as ck
from raycorpus.config import Config
from raycorpus.ingest.storage import Storage
from raycorpus.ingest.warc import iter_html_records
from raycorpus.process.pipeline import WarcProcessor
from raycorpus.process.tokenize import TokenEncoder


def tag_mode(cfg: Config) -> Config:
    """``cfg`` with ``filters.mode: tag`` (every stage on every document)."""
    return cfg.model_copy(update={"filters": cfg.filters.model_copy(update={"mode": "tag"})})


def read_pages(cfg: Config, warcs: list[str]) -> list[str]:
    """The decoded HTML of every page the chain reads, in order."""
    storage, pages = Storage(cfg.storage), []
    for url in warcs:
        with storage.open_read(url) as stream:
            pages += [r.html for r in iter_html_records(stream, Counter(), cfg.warc.max_record_bytes,
                                                        cfg.warc.quirks_mode)]
    return pages


def _bare_seconds(pages: list[str]) -> tuple[float, float]:
    """(wall, CPU) seconds of bare extraction over ``pages``."""
    t, c = time.perf_counter(), time.process_time()
    for html in pages:
        extract_plain_text(HTMLTree.parse(html), main_content=True)
    return time.perf_counter() - t, time.process_time() - c


def _chain_run(proc: WarcProcessor, warcs: list[str]) -> tuple[float, float, Counter]:
    """(wall, CPU) seconds of the chain over ``warcs``, and its counts."""
    counts: Counter = Counter()
    t, c = time.perf_counter(), time.process_time()
    for i, url in enumerate(warcs):
        counts.update(proc.process(i, url).counts)
    return time.perf_counter() - t, time.process_time() - c, counts


def bench_chain_ratio(cfg: Config, warcs: list[str], repeats: int = 3) -> dict:
    """Bare extraction vs the tag-mode chain per HTML page: medians of ``repeats`` interleaved runs after a
    warm-up, per-stage ms/doc, and the ratio."""
    cfg = tag_mode(cfg)
    os.environ["TOKENIZERS_PARALLELISM"] = "false"  # one thread, as in a worker (runtime/actors.py)
    proc = WarcProcessor(cfg, encoder=TokenEncoder(cfg.tokenizer))
    pages = read_pages(cfg, warcs)
    docs = max(1, len(pages))
    bare, chain, cpu_ratios, stages = [], [], [], []
    for r in range(repeats + 1):  # the first round is a warm-up
        b, b_cpu = _bare_seconds(pages)
        c, c_cpu, counts = _chain_run(proc, warcs)
        if r:
            bare.append(b)
            chain.append(c)
            cpu_ratios.append(c_cpu / b_cpu)
            stages.append({k.name: v for k, v in ck.of_kind(counts, ck.Kind.TIME).items()})
    per_stage = {k: statistics.median(s.get(k, 0) for s in stages) / docs / 1e6 for k in stages[0]}
    bare_ms = statistics.median(bare) / docs * 1e3
    chain_ms = statistics.median(chain) / docs * 1e3
    ratios = [c / b for c, b in zip(chain, bare, strict=True)]
    return {
        "input": ", ".join(warcs),
        "pages": len(pages),
        "docs_kept": counts[ck.KEPT],
        "repeats": repeats,
        "bare_ms_per_doc": round(bare_ms, 4),
        "chain_ms_per_doc": round(chain_ms, 4),
        "stages_ms_per_doc": {k: round(v, 4) for k, v in per_stage.items()},
        "unattributed_ms_per_doc": round(chain_ms - sum(per_stage.values()), 4),
        "ratio": round(statistics.median(ratios), 3),
        "ratio_runs": [round(x, 3) for x in ratios],
        "ratio_cpu": round(statistics.median(cpu_ratios), 3),
    }


def format_chain_ratio(b: dict) -> str:
    lines = [
        f"chain vs bare extraction (tag mode; {b['input']}: {b['pages']:,} HTML pages, {b['docs_kept']:,} "
        f"documents after extraction; median of {b['repeats']} interleaved runs after a warm-up)",
        f"  {'bare extract_plain_text':<26}{b['bare_ms_per_doc']:>9.3f} ms/doc",
    ]
    for k, v in b["stages_ms_per_doc"].items():
        lines.append(f"  {'chain: ' + k:<26}{v:>9.3f}")
    # the wall's median less the sum of the stages' medians: medians do not add up, so it can come out negative
    lines.append(f"  {'chain: other (wall-stages)':<26}{b['unattributed_ms_per_doc']:>9.3f}")
    lines.append(f"  {'chain (wall)':<26}{b['chain_ms_per_doc']:>9.3f} ms/doc")
    lines.append(f"  ratio chain / bare: {b['ratio']:.2f} (runs: {', '.join(f'{x:.2f}' for x in b['ratio_runs'])}; "
                 f"target <= 2); of CPU times: {b['ratio_cpu']:.2f}")
    return "\n".join(lines)
