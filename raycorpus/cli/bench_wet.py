"""``raycorpus bench --wet``: what WET input saves and what it costs.

- Speed: the per-page chain (read, extraction or none, filters, hashes, MinHash, tokenizing) on the
  given WARCs and on WET files holding the shipped extractor's text of the same pages, timed side by
  side (alternating, medians after a warm-up).
- Quality: on real WARC/WET pairs of one crawl (Common Crawl's own WET text of the same captures), the
  share of the WARC pipeline's kept text (word 5-grams) that the WET pipeline keeps too, and the share
  of the WET pipeline's text that the WARC pipeline does not keep (boilerplate CC's converter leaves in).
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from raycorpus.config import Config, with_overrides
from raycorpus.demo.wet import write_wet_from_warc
from raycorpus.process.hashing import words
from raycorpus.process.pipeline import WarcProcessor
from raycorpus.process.tokenize import TokenEncoder

NGRAM = 5


def bench_wet_speed(cfg: Config, warcs: list[str], repeats: int = 3) -> dict:
    """Seconds per pass over ``warcs`` (WARC) and over their WET text, medians of ``repeats`` after a warm-up."""
    encoder = TokenEncoder(cfg.tokenizer)
    wet_cfg = with_overrides(cfg, {"input.format": "wet"})
    warc_proc, wet_proc = WarcProcessor(cfg, encoder=encoder), WarcProcessor(wet_cfg, encoder=encoder)
    with tempfile.TemporaryDirectory() as tmp:
        wets = [str(Path(tmp) / f"{i}.warc.wet.gz") for i in range(len(warcs))]
        for warc, wet in zip(warcs, wets, strict=True):
            write_wet_from_warc(Path(warc), Path(wet))
        times: dict[str, list[float]] = {"warc": [], "wet": []}
        kept = {}
        for r in range(repeats + 1):
            for name, proc, paths in (("warc", warc_proc, warcs), ("wet", wet_proc, wets)):
                t0 = time.perf_counter()
                kept[name] = sum(len(proc.process(i, p).docs) for i, p in enumerate(paths))
                if r:
                    times[name].append(time.perf_counter() - t0)
    warc_s, wet_s = statistics.median(times["warc"]), statistics.median(times["wet"])
    return {"warcs": len(warcs), "repeats": repeats, "warc_seconds": round(warc_s, 3),
            "wet_seconds": round(wet_s, 3), "wet_over_warc": round(wet_s / warc_s, 3),
            "kept_warc": kept["warc"], "kept_wet": kept["wet"]}


def _grams(texts: list[str]) -> set[tuple[str, ...]]:
    out: set[tuple[str, ...]] = set()
    for text in texts:
        w = words(text)
        out.update(tuple(w[i:i + NGRAM]) for i in range(max(0, len(w) - NGRAM + 1)))
    return out


def wet_quality(cfg: Config, pairs: list[tuple[str, str]]) -> dict:
    """Word-5-gram overlap of the two pipelines' text on real WARC/WET pairs of one crawl, in tag mode
    (every page's text counts, whatever its language; ``passed_*``: the pages filter mode would keep)."""
    cfg = with_overrides(cfg, {"filters.mode": "tag"})
    warc_proc, wet_proc = WarcProcessor(cfg), WarcProcessor(with_overrides(cfg, {"input.format": "wet"}))
    warc_docs = [d for i, (warc, _) in enumerate(pairs) for d in warc_proc.process(i, warc).docs]
    wet_docs = [d for i, (_, wet) in enumerate(pairs) for d in wet_proc.process(i, wet).docs]
    a, b = _grams([d.text for d in warc_docs]), _grams([d.text for d in wet_docs])
    return {"pairs": [f"{Path(w).name} + {Path(t).name}" for w, t in pairs],
            "docs_warc": len(warc_docs), "docs_wet": len(wet_docs),
            "passed_warc": sum("would_drop" not in d.metadata for d in warc_docs),
            "passed_wet": sum("would_drop" not in d.metadata for d in wet_docs),
            "warc_text_kept_by_wet": round(len(a & b) / len(a), 3) if a else None,
            "wet_text_not_in_warc": round(len(b - a) / len(b), 3) if b else None,
            "words_warc": sum(len(words(d.text)) for d in warc_docs),
            "words_wet": sum(len(words(d.text)) for d in wet_docs)}


def format_wet(speed: dict, quality: dict | None) -> str:
    lines = [f"WET input ({speed['warcs']} WARCs, median of {speed['repeats']} runs after a warm-up): "
             f"WARC {speed['warc_seconds']} s, WET {speed['wet_seconds']} s per pass, "
             f"WET/WARC time {speed['wet_over_warc']} (kept {speed['kept_wet']} / {speed['kept_warc']} documents)"]
    if quality:
        pairs = ", ".join(quality["pairs"])
        lines.append(f"WET vs WARC text, tag mode, on real pairs ({pairs}): the WET pipeline keeps "
                     f"{quality['warc_text_kept_by_wet']:.1%} of the WARC pipeline's word 5-grams; "
                     f"{quality['wet_text_not_in_warc']:.1%} of its own are not in the WARC pipeline's text "
                     f"({quality['words_wet']:,} vs {quality['words_warc']:,} words; the filters pass "
                     f"{quality['passed_wet']} / {quality['passed_warc']} of {quality['docs_warc']} pages)")
    return "\n".join(lines)
