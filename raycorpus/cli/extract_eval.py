"""``raycorpus eval``'s extraction rules section: the F1 on both reference sets with each named rule
switched off (the ablation), and the time of the whole extraction stage against bare resiliparse
on the same pages (median of ``repeats`` runs, the two timed side by side in each run)."""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any

from raycorpus.cli.evaluate import (
    eval_readability,
    eval_trafilatura,
    load_readability,
    load_trafilatura_eval,
    resiliparse_extract_fn,
    shipped_extract_fn,
)
from raycorpus.process.extract import ExtractConfig


def rule_switches(cfg: ExtractConfig) -> dict[str, dict[str, Any]]:
    """Each named rule that is on in ``cfg`` -> the config update that turns it (alone) off."""
    switches: dict[str, dict[str, Any]] = {}
    if cfg.skip_selectors:
        switches["skip_selectors"] = {"skip_selectors": ()}
    for flag in ("rescue_content", "clean_lines", "trim_tail", "trim_head", "drop_calls_to_action",
                 "cut_after_article"):
        if getattr(cfg, flag):
            switches[flag] = {flag: False}
    if cfg.clean_lines and cfg.cut_tail_at < 1:
        switches["cut_tail"] = {"cut_tail_at": 1.0}
    if cfg.fallback_chars:
        switches["fallback"] = {"fallback_chars": 0}
    return switches


def ablation(extraction_dir: str | Path, cfg: ExtractConfig | None = None, *, every: int = 1) -> dict[str, Any]:
    """{rule: {"trafilatura-eval": F1, "half A": F1, "half B": F1, "readability": F1}} with that rule off ("all
    rules": none off; half A / B: trafilatura-eval's fixed halves)."""
    cfg = cfg or ExtractConfig()
    root = Path(extraction_dir)
    runs = {"all rules": {}, **{f"-{k}": v for k, v in rule_switches(cfg).items()}}
    out: dict[str, Any] = {}
    for name, update in runs.items():
        fn = shipped_extract_fn(cfg.model_copy(update=update))
        row = {}
        if (root / "trafilatura-eval").is_dir():
            res = eval_trafilatura(root / "trafilatura-eval", fn, every=every)
            row["trafilatura-eval"] = res["f1"]
            row.update({f"half {h}": s["f1"] for h, s in res["halves"].items()})
        if (root / "readability").is_dir():
            row["readability"] = eval_readability(root / "readability", fn, every=every)["f1"]
        out[name] = row
    return out


def time_ratio(extraction_dir: str | Path, cfg: ExtractConfig | None = None, *, repeats: int = 3,
               every: int = 1) -> dict[str, Any]:
    """Seconds of bare ``extract_plain_text(main_content=True)`` and of the shipped stage over all pages of
    both sets, timed alternately page by page in each run; medians over ``repeats`` runs."""
    root = Path(extraction_dir)
    htmls = [h for _, h, _ in load_trafilatura_eval(root / "trafilatura-eval", every)] \
        if (root / "trafilatura-eval").is_dir() else []
    htmls += [h for _, h, _ in load_readability(root / "readability", every)] if (root / "readability").is_dir() else []
    fns = {"resiliparse": resiliparse_extract_fn(), "shipped": shipped_extract_fn(cfg)}
    runs: dict[str, list[float]] = {name: [] for name in fns}
    ratios = []
    for _ in range(max(1, repeats)):
        spent = dict.fromkeys(fns, 0.0)
        for html in htmls:
            for name, fn in fns.items():
                t = time.perf_counter()
                fn(html)
                spent[name] += time.perf_counter() - t
        for name in fns:
            runs[name].append(spent[name])
        ratios.append(spent["shipped"] / spent["resiliparse"] if spent["resiliparse"] else 0.0)
    return {"pages": len(htmls), "repeats": max(1, repeats),
            "seconds": {name: round(statistics.median(v), 3) for name, v in runs.items()},
            "ratio": round(statistics.median(ratios), 3), "ratios": [round(r, 3) for r in ratios]}


def extraction_rules_report(extraction_dir: str | Path, cfg: ExtractConfig | None = None, *,
                            repeats: int = 3) -> dict[str, Any]:
    """The ablation and the time ratio, for ``raycorpus eval``."""
    return {"ablation": ablation(extraction_dir, cfg), "time": time_ratio(extraction_dir, cfg, repeats=repeats)}


def format_rules_report(report: dict[str, Any]) -> str:
    """Ablation table (F1 and ΔF1 against all rules on) and the time line."""
    rows = report["ablation"]
    full = rows.get("all rules", {})
    sets = [s for s in ("trafilatura-eval", "half A", "half B", "readability") if s in full]
    lines = ["extraction rules ablation (F1 with the rule off; Δ against all rules on; half A / B: trafilatura-eval's "
             "fixed halves, a rule is tuned on A and kept only if B and readability gain too):",
             f"  {'rule':<20} " + " ".join(f"{s:>16} {'Δ':>7}" for s in sets)]
    for name, row in rows.items():
        lines.append(f"  {name:<20} " + " ".join(f"{row[s]:>16.4f} {row[s] - full[s]:>+7.4f}" for s in sets))
    t = report["time"]
    lines.append(f"extraction time: shipped {t['seconds']['shipped']} s vs bare resiliparse "
                 f"{t['seconds']['resiliparse']} s on {t['pages']} pages: {t['ratio']:.2f}x "
                 f"(median of {t['repeats']} runs: {', '.join(f'{r:.2f}' for r in t['ratios'])})")
    return "\n".join(lines)
