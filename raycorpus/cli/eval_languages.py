"""``raycorpus eval``'s multilingual section: FineWeb-2's per-language defaults against the
stages' English values (``filters.language_defaults: fineweb2`` vs ``none``).

- kept / total per language on the trafilatura-eval pages (news and articles; the shipped
  extractor, ``langid.keep: null``), and the most frequent drop reasons with the defaults;
- script-aware words: mean word length per language on lingua's labelled sentences, against
  FineWeb-2's bounds and ``WORD_RE``'s;
- the cost of script-aware tokenising against ``WORD_RE``, per character (median of ``repeats``).
"""

from __future__ import annotations

import json
import statistics
import time
from collections import Counter
from pathlib import Path
from typing import Any

from raycorpus.process.document import Document
from raycorpus.process.filters import Chain
from raycorpus.process.filters.base import WORD_RE, TextView
from raycorpus.process.filters.langtable import for_label
from raycorpus.process.filters.settings import FiltersConfig
from raycorpus.process.filters.words import script_tokens

WORD_LANGS = ("zh", "ja", "th", "hi", "ar", "de", "ru")


def kept_by_language(texts: list[str], defaults: str) -> tuple[Counter, Counter, Counter]:
    """(kept, total, drop reasons) per language label, every language kept by the language ID."""
    chain = Chain(FiltersConfig.model_validate({"langid": {"keep": None}, "language_defaults": defaults}))
    kept, total, reasons = Counter(), Counter(), Counter()
    for text in texts:
        doc = Document(text=text, url="", record_id="", date="")
        reason = chain(doc, Counter())
        lang = str(doc.metadata.get("lang"))
        total[lang] += 1
        kept[lang] += reason is None
        if reason:
            reasons[reason] += 1
    return kept, total, reasons


def word_lengths(langid_jsonl: Path) -> dict[str, dict[str, Any]]:
    rows = [json.loads(line) for line in langid_jsonl.read_text(encoding="utf-8").splitlines() if line.strip()]
    out = {}
    for lang in WORD_LANGS:
        texts = [r["text"] for r in rows if r["lang"] == lang]
        entry = for_label(lang)
        if not texts or entry is None:
            continue
        plain = [len(w) for t in texts for w in TextView(t).words]
        aware = [len(w) for t in texts for w in TextView(t, script_aware=True).words]
        out[lang] = {"sentences": len(texts), "mean_word_re": round(statistics.mean(plain), 2),
                     "mean_script_aware": round(statistics.mean(aware), 2),
                     "fineweb2_bounds": [entry.min_avg_word_length, entry.max_avg_word_length]}
    return out


def tokenising_cost(texts: list[str], repeats: int) -> dict[str, float]:
    """ns per character of WORD_RE and of script-aware tokens on ``texts``, median of ``repeats``."""
    chars = sum(map(len, texts)) or 1

    def median_ns(fn) -> float:
        runs = []
        for _ in range(max(1, repeats)):
            t0 = time.perf_counter_ns()
            for t in texts:
                fn(t)
            runs.append(time.perf_counter_ns() - t0)
        return round(statistics.median(runs) / chars, 1)

    return {"chars": chars, "word_re_ns_per_char": median_ns(WORD_RE.findall),
            "script_aware_ns_per_char": median_ns(script_tokens)}


def eval_language_defaults(pages: list[str], langid_jsonl: str | Path, repeats: int = 5) -> dict[str, Any]:
    """The section's figures on extracted ``pages`` and the labelled sentences."""
    before, total, _ = kept_by_language(pages, "none")
    after, _, reasons = kept_by_language(pages, "fineweb2")
    langs = sorted(total, key=lambda k: (-total[k], k))
    result: dict[str, Any] = {
        "pages": len(pages),
        "kept": {k: {"total": total[k], "none": before[k], "fineweb2": after[k]} for k in langs},
        "top_reasons_fineweb2": dict(reasons.most_common(8)),
    }
    path = Path(langid_jsonl)
    if path.is_file():
        result["word_length"] = word_lengths(path)
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        result["tokenising"] = tokenising_cost([r["text"] for r in rows if r["lang"] in ("zh", "ja")], repeats)
    return result


def format_language_defaults(r: dict[str, Any] | None) -> list[str]:
    if not r:
        return []
    kept = ", ".join(f"{k} {v['none']}->{v['fineweb2']}/{v['total']}" for k, v in list(r["kept"].items())[:10])
    lines = [f"language defaults (fineweb2 vs none), kept/total on {r['pages']} pages: {kept}"]
    for lang, w in r.get("word_length", {}).items():
        lines.append(f"  words {lang}: mean length {w['mean_script_aware']} script-aware, {w['mean_word_re']} WORD_RE "
                     f"(FineWeb-2 bounds {w['fineweb2_bounds'][0]:g}-{w['fineweb2_bounds'][1]:g}, "
                     f"{w['sentences']} sentences)")
    if "tokenising" in r:
        t = r["tokenising"]
        lines.append(f"  tokenising zh/ja: {t['script_aware_ns_per_char']} ns/char script-aware, "
                     f"{t['word_re_ns_per_char']} WORD_RE ({t['chars']:,} characters, median)")
    return lines
