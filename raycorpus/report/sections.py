"""The report's sections, as the page's data: each a chart (a plotly figure: data and layout) and the numbers
beside it. Built from an :class:`~raycorpus.report.view.OutputView` alone."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from typing import Any

import numpy as np

from raycorpus.config import Config
from raycorpus.output.clusters import bin_floor, ordered
from raycorpus.output.report_state import DEDUP, KEPT, ReportState
from raycorpus.process.dedup.clusters import upsampling
from raycorpus.process.dedup.index import split_gid
from raycorpus.process.filters.registry import DEFAULT_CHAIN, stages
from raycorpus.process.profile import COUNT, PASSED, UNIT
from raycorpus.report.signals import signal_charts
from raycorpus.report.view import OutputView

BLUE, ORANGE, GREY, GREEN, RED = "#3b6fb6", "#e8833a", "#9aa5b1", "#4c9a5b", "#c8553d"
PALETTE = ["#3b6fb6", "#e8833a", "#4c9a5b", "#c8553d", "#8a63b8", "#b8860b", "#2a9d8f", "#d06fa6", "#6b7b8c",
           "#7aa33b", "#a0522d", "#4682b4"]
NO_LANGUAGE = "(before language ID)"
TOP = 20  # rows of the duplicate tables


def figure(data: list[dict], **layout: Any) -> dict:
    """A plotly figure with the report's common layout."""
    base = {"margin": {"l": 60, "r": 20, "t": 30, "b": 50}, "height": 340, "font": {"size": 12},
            "legend": {"orientation": "h", "y": -0.2}, "paper_bgcolor": "white", "plot_bgcolor": "white",
            "xaxis": {"gridcolor": "#eee", "automargin": True}, "yaxis": {"gridcolor": "#eee", "automargin": True}}
    for key, value in layout.items():
        base[key] = {**base[key], **value} if isinstance(value, dict) and isinstance(base.get(key), dict) else value
    return {"data": data, "layout": base}


def missing_note(view: OutputView) -> str | None:
    if view.report is not None:
        return None
    return ("this output has no report data: it was written before raycorpus kept it, or with output.report off. "
            "Rebuild it (or resume it with this raycorpus: the WARCs committed from then on are covered)")


# -- overview
def overview(view: OutputView) -> dict:
    s, cfg = view.summary, view.config
    source = (cfg.input.manifest or cfg.input.prefix) if cfg is not None else view.run.get("manifest")
    cards = [
        ("status", "complete" if not view.partial else "partial: rerun to resume", ""),
        ("input", source or "?", f"{s.warcs.total:,} WARCs"),
        ("WARCs", f"{s.warcs.committed:,} committed", f"{s.warcs.failed:,} failed, {s.warcs.pending:,} pending"),
        ("documents", f"{s.docs.kept:,} kept", f"of {s.docs.in_:,} in"),
        ("tokens", f"{s.tokens:,}", f"in {s.shards:,} shards"),
        ("config", view.run.get("config_fingerprint", "?"), "fingerprint"),
    ]
    timeline = view.report.timeline if view.report is not None else []
    if s.this_run.wall_seconds:
        cards.append(("wall time", _duration(s.this_run.wall_seconds), "the last run's processing"))
    elif len(timeline) >= 2:
        cards.append(("wall time", _duration(timeline[-1][0] - timeline[0][0]), "first to last checkpoint"))
    figures = _timeline_figures(timeline)
    return {"cards": [{"label": a, "value": b, "note": c} for a, b, c in cards], "figures": figures,
            "settings": changed_settings(view.report.config if view.report is not None else {}),
            "versions": view.report.versions if view.report is not None else {},
            "covered": _coverage(view)}


def _coverage(view: OutputView) -> str | None:
    """Says so when the report's data covers fewer WARCs than are committed (started by an older raycorpus)."""
    r = view.report
    if r is None or r.warcs >= view.state.committed:
        return None
    return (f"the report's data covers {r.warcs:,} of the {view.state.committed:,} committed WARCs: the others were "
            "committed by a raycorpus that kept no report data")


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    seconds = round(seconds)
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}h {m:02d}m {s:02d}s" if h else f"{m}m {s:02d}s" if m else f"{s}s"


def _timeline_figures(timeline: list[list[float]]) -> list[dict]:
    """docs/s and tokens/s between checkpoints (at least a second apart), and the workers, over time."""
    timeline = _spaced(timeline, 1.0)
    if len(timeline) < 4:  # too short a run for a rate over time
        return []
    t = np.array([p[0] for p in timeline])
    docs, tokens = np.array([p[2] for p in timeline]), np.array([p[3] for p in timeline])
    dt = np.maximum(np.diff(t), 1e-3)
    when = [datetime.fromtimestamp(x, UTC).strftime("%Y-%m-%d %H:%M:%S") for x in t]
    rates = figure([
        {"type": "scatter", "mode": "lines+markers", "name": "documents/s", "x": when[1:],
         "y": np.round(np.diff(docs) / dt, 1).tolist(), "line": {"color": BLUE}},
        {"type": "scatter", "mode": "lines+markers", "name": "tokens/s", "x": when[1:],
         "y": np.round(np.diff(tokens) / dt, 1).tolist(), "yaxis": "y2", "line": {"color": ORANGE}},
    ], title={"text": "Throughput between checkpoints (UTC)"}, yaxis={"title": {"text": "documents/s"}},
        yaxis2={"title": {"text": "tokens/s"}, "overlaying": "y", "side": "right", "showgrid": False})
    workers = figure([{"type": "scatter", "mode": "lines", "line": {"shape": "hv", "color": GREEN}, "name": "workers",
                       "x": when, "y": [p[4] for p in timeline]}], title={"text": "Workers at each checkpoint"},
                     yaxis={"title": {"text": "workers"}, "rangemode": "tozero"}, height=260)
    return [{"id": "throughput", "figure": rates}, {"id": "workers", "figure": workers}]


def _spaced(timeline: list[list[float]], seconds: float) -> list[list[float]]:
    """The timeline's points at least ``seconds`` apart (a point closer to the last kept one replaces it), without
    trailing points that add no WARC."""
    out: list[list[float]] = []
    for point in timeline:
        if len(out) > 1 and point[0] - out[-2][0] < seconds:
            out[-1] = point
        else:
            out.append(point)
    while len(out) > 2 and out[-1][1] == out[-2][1]:
        out.pop()
    return out


def changed_settings(written: dict) -> list[dict]:
    """The settings that differ from the defaults (dotted path, value), of a config as written."""
    if not written:
        return []
    try:
        cfg = Config.model_validate(written)
    except ValueError:
        return []
    flat: list[dict] = []
    _flatten(cfg.model_dump(mode="json", exclude_defaults=True), "", flat)
    return flat


def _flatten(d: Any, prefix: str, out: list[dict]) -> None:
    if isinstance(d, dict) and d:
        for k in sorted(d):
            _flatten(d[k], f"{prefix}.{k}" if prefix else str(k), out)
    elif not isinstance(d, dict):
        out.append({"setting": prefix, "value": d})


# -- funnel
def funnel(view: OutputView) -> dict:
    """Documents in, what each stage dropped (in chain order), kept; and every drop reason."""
    s = view.summary
    reasons = s.docs.tagged if view.tag_mode else s.docs.dropped
    by_stage: Counter = Counter()
    rows = []
    for label, n in sorted(reasons.items(), key=lambda kv: (_stage_rank(kv[0], view.config), -kv[1], kv[0])):
        stage, _, reason = label.partition(":")
        by_stage[stage] += n
        rows.append({"stage": stage, "reason": reason, "docs": n, "share": round(n / max(1, s.docs.in_), 4)})
    first = _first_reasons(view.report) if view.tag_mode and view.report is not None else by_stage
    order = sorted(first, key=lambda st: _stage_rank(st, view.config))
    remaining, names, values = s.docs.in_, ["in (HTML 200)"], [s.docs.in_]
    for stage in order:
        remaining -= first[stage]
        names.append(f"after {stage}")
        values.append(remaining)
    kept = remaining if view.tag_mode else s.docs.kept
    names.append("kept")
    values.append(kept)
    fig = figure([{"type": "funnel", "y": names, "x": values, "textinfo": "value+percent initial",
                   "marker": {"color": [BLUE] + [GREY] * len(order) + [GREEN]}}],
                 title={"text": "Documents through the chain" + (" (tag mode: each by its first reason)"
                                                                 if view.tag_mode else "")},
                 height=max(300, 60 + 36 * len(names)), margin={"l": 160})
    records = [{"label": "records read", "value": s.records.read}, {"label": "HTTP responses", "value":
               s.records.responses}, {"label": "HTML 200 (documents in)", "value": s.records.html_200},
               *({"label": f"skipped: {k}", "value": v} for k, v in sorted(s.records.skipped.items()))]
    return {"figure": fig, "stages": [{"name": n, "docs": v} for n, v in zip(names, values, strict=True)],
            "reasons": rows, "records": records, "in": s.docs.in_, "kept": kept, "tag": view.tag_mode,
            "by_language": _drops_by_language(view.report)}


def _first_reasons(report: ReportState) -> Counter:
    """Tag mode: documents per stage of their first would-drop reason, and the duplicates."""
    out: Counter = Counter()
    for (_lang, outcome), v in report.langs.items():
        if outcome != KEPT:
            out[outcome] += int(v[0])
    return out


def _stage_rank(label: str, cfg: Config | None) -> int:
    stage = label.partition(":")[0]
    chain = ["url", "extract", *(n for n in (cfg.filters.stage_names if cfg is not None else DEFAULT_CHAIN)
                                 if n != "url")]
    names = [stages()[n].label() if n in stages() else n for n in chain]
    return names.index(stage) if stage in names else len(names) + (stage == DEDUP)


def _drops_by_language(report: ReportState | None) -> list[dict]:
    if report is None:
        return []
    return [{"lang": lang or NO_LANGUAGE, "stage": outcome, "docs": int(v[0])}
            for (lang, outcome), v in sorted(report.langs.items(), key=lambda kv: (-int(kv[1][0]), kv[0]))
            if outcome != KEPT]


# -- languages
def languages(view: OutputView) -> dict | None:
    r = view.report
    if r is None:
        return None
    table: dict[str, dict] = {}
    for (lang, outcome), v in r.langs.items():
        row = table.setdefault(lang or NO_LANGUAGE, {"lang": lang or NO_LANGUAGE, "kept": 0, "dedup": 0, "dropped": 0,
                                                     "chars_kept": 0, "tokens_kept": 0, "tokens_dedup": 0})
        key = outcome if outcome in (KEPT, DEDUP) else "dropped"
        row[key] += int(v[0])
        if outcome == KEPT:
            row["chars_kept"], row["tokens_kept"] = int(v[1]), int(v[2])
        elif outcome == DEDUP:
            row["tokens_dedup"] = int(v[2])
    rows = sorted(table.values(), key=lambda row: (-(row["kept"] + row["dedup"] + row["dropped"]), row["lang"]))
    top = rows[:25]
    names = [row["lang"] for row in top]
    docs = figure([{"type": "bar", "name": name, "x": names, "y": [row[key] for row in top],
                    "marker": {"color": color}}
                   for name, key, color in (("kept", "kept", GREEN), ("duplicates", "dedup", ORANGE),
                                            ("dropped by a filter", "dropped", GREY))],
                  barmode="stack", title={"text": "Documents per language"}, yaxis={"title": {"text": "documents"}})
    tokens = figure([{"type": "bar", "name": name, "x": names, "y": [row[key] for row in top], "marker": {"color": c}}
                     for name, key, c in (("kept", "tokens_kept", GREEN), ("duplicates", "tokens_dedup", ORANGE))],
                    barmode="stack", title={"text": "Tokens per language (filters drop before tokenizing)"},
                    yaxis={"title": {"text": "tokens"}})
    return {"rows": rows, "figures": [{"id": "lang-docs", "figure": docs}, {"id": "lang-tokens", "figure": tokens}]}


# -- lengths
def lengths(view: OutputView) -> dict | None:
    r = view.report
    if r is None:
        return None
    edges = COUNT.edges

    def step(name: str, counts: np.ndarray, color: str, dash: str = "solid") -> dict:
        return {"type": "scatter", "mode": "lines", "name": f"{name} ({int(counts.sum()):,})",
                "x": np.maximum(edges, 0.8).tolist(), "y": counts.tolist(),
                "line": {"shape": "hv", "color": color, "dash": dash}}

    def log_x(title: str, measure: str) -> dict:
        used = np.flatnonzero(sum((h for (m, _), h in r.lengths.items() if m == measure), np.zeros(len(edges))))
        lo, hi = (edges[used[0]], edges[min(used[-1] + 1, len(edges) - 1)]) if used.size else (1, 1e6)
        return {"type": "log", "title": {"text": title}, "gridcolor": "#eee",
                "range": [np.log10(max(lo, 0.8)) - 0.1, np.log10(max(hi, 10)) + 0.1]}

    tok = [step(name, r.lengths[("tokens", key)], color) for name, key, color in
           (("kept", KEPT, GREEN), ("duplicates", DEDUP, ORANGE)) if ("tokens", key) in r.lengths]
    dropped = sorted((k[1] for k in r.lengths if k[0] == "chars" and k[1] not in (KEPT, DEDUP)),
                     key=lambda st: _stage_rank(st, view.config))
    chars = [step(name, r.lengths[("chars", key)], color) for name, key, color in
             (("kept", KEPT, GREEN), ("duplicates", DEDUP, ORANGE)) if ("chars", key) in r.lengths]
    chars += [step(f"dropped: {st}", r.lengths[("chars", st)], PALETTE[i % len(PALETTE)], "dot")
              for i, st in enumerate(dropped)]
    rows = [{"what": f"{measure} of {outcome}", "docs": int(h.sum()), "median": _median(h, edges)}
            for (measure, outcome), h in sorted(r.lengths.items())]
    docs_axis = {"title": {"text": "documents"}}
    tokens = figure(tok, title={"text": "Tokens per document"}, xaxis=log_x("tokens", "tokens"), yaxis=docs_axis)
    chars_fig = figure(chars, title={"text": "Characters per document, by outcome"},
                       xaxis=log_x("characters", "chars"), yaxis=docs_axis)
    return {"figures": [{"id": "len-tokens", "figure": tokens}, {"id": "len-chars", "figure": chars_fig}],
            "rows": rows}


def _median(counts: np.ndarray, edges: np.ndarray) -> float | None:
    total = int(counts.sum())
    if not total:
        return None
    return float(edges[int(np.searchsorted(np.cumsum(counts), (total + 1) / 2))])


# -- signals
def signals(view: OutputView) -> dict | None:
    r = view.report
    if r is None:
        return None
    charts = signal_charts(r.signals, view.config)
    scope = ("every document (tag mode)" if view.tag_mode else
             "the documents that reached each rule (filter mode: a document a stage dropped is not measured by the "
             "stages after it; a stage stops at its first failing rule)")
    return {"scope": scope, "signals": [[c.to_json() for c in per_lang] for per_lang in charts]}


# -- dedup
def dedup(view: OutputView) -> dict | None:
    s, r, cfg = view.summary, view.report, view.config
    counts = {k.removeprefix("dedup:"): v for k, v in {**s.docs.dropped, **s.docs.tagged}.items()
              if k.startswith("dedup:")}
    if not counts and (cfg is None or not cfg.dedup.enabled):
        return None
    kinds = sorted(counts)
    bars = figure([{"type": "bar", "x": kinds, "y": [counts[k] for k in kinds], "marker": {"color": ORANGE},
                    "text": [f"{counts[k]:,}" for k in kinds], "textposition": "auto"}],
                  title={"text": "Duplicates by kind (first match wins: URL, then exact, then near)"},
                  yaxis={"title": {"text": "documents"}}, height=280)
    out: dict = {"counts": counts, "figures": [{"id": "dedup-kinds", "figure": bars}]}
    if s.dedup_paragraphs is not None:
        out["paragraphs"] = {**s.dedup_paragraphs.model_dump(), "dropped": counts.get("paragraphs", 0)}
    if s.clusters is not None:
        out["figures"].append({"id": "dedup-cluster-sizes", "figure": _cluster_sizes(s.clusters.histogram)})
    if r is None:
        return out
    if r.similarity.any():
        threshold = cfg.dedup.threshold + cfg.dedup.verify_margin if cfg is not None else None
        out["figures"].append({"id": "dedup-similarity", "figure": _similarity(r.similarity, threshold)})
    out["clusters"] = [{"doc": "/".join(map(str, split_gid(k))), "duplicates": v} for k, v in r.clusters.top(TOP)]
    out["clusters_error"] = r.clusters.error
    out["domains"] = [{"domain": r.domains.names.get(k, "?"), "duplicates": v} for k, v in r.domains.top(TOP)]
    out["domains_error"] = r.domains.error
    out["figures"].append({"id": "dedup-domains", "figure": figure(
        [{"type": "bar", "orientation": "h", "y": [d["domain"] for d in out["domains"]][::-1],
          "x": [d["duplicates"] for d in out["domains"]][::-1], "marker": {"color": ORANGE}}],
        title={"text": "Domains with the most duplicates"}, height=max(260, 40 + 22 * len(out["domains"])),
        margin={"l": 200})})
    return out


def _cluster_sizes(histogram: dict[str, int]) -> dict:
    """Documents by duplicate-cluster size (``clusters/``), in FineWeb-2's bins, with the times rehydration gives
    each (``rehydrate``)."""
    bins = ordered(histogram)
    times = upsampling(np.array([bin_floor(k) for k, _ in bins]))
    labels = [f"{k}: given {t}x" for (k, _), t in zip(bins, times, strict=True)]
    return figure([{"type": "bar", "x": labels, "y": [n for _, n in bins], "marker": {"color": GREEN},
                    "text": [f"{n:,}" for _, n in bins], "textposition": "auto"}],
                  title={"text": "Kept documents by duplicate-cluster size"},
                  xaxis={"title": {"text": "cluster size (the document and its dropped duplicates): how often "
                                           "FineWeb-2's rehydration gives it"}, "type": "category"},
                  yaxis={"title": {"text": "documents"}}, height=280)


def _similarity(hist: np.ndarray, threshold: float | None) -> dict:
    nz = np.flatnonzero(hist)
    lo = max(0, int(nz[0]) - 2) if nz.size else 0
    edges = UNIT.edges[lo:]
    colors = [ORANGE if threshold is not None and e >= threshold else GREY for e in edges]
    shapes = [] if threshold is None else [{"type": "line", "x0": threshold, "x1": threshold, "yref": "paper",
                                             "y0": 0, "y1": 1, "line": {"color": RED, "dash": "dash"}}]
    return figure([{"type": "bar", "x": (edges + 0.005).tolist(), "y": hist[lo:].tolist(), "width": 0.0095,
                    "marker": {"color": colors}, "name": "documents"}],
                  title={"text": "Best estimated Jaccard of each near-duplicate candidate verified"
                         + (f" (threshold {threshold:g})" if threshold is not None else "")},
                  xaxis={"title": {"text": "estimated Jaccard similarity"}}, yaxis={"title": {"text": "documents"}},
                  shapes=shapes)


# -- cost
def cost(view: OutputView) -> dict:
    s, r = view.summary, view.report
    stage_s = dict(sorted(s.stage_seconds.items(), key=lambda kv: -kv[1]))
    total = sum(stage_s.values()) or 1.0
    fig = figure([{"type": "bar", "orientation": "h", "y": list(stage_s)[::-1], "x": list(stage_s.values())[::-1],
                   "marker": {"color": BLUE}, "text": [f"{v / total:.1%}" for v in list(stage_s.values())[::-1]],
                   "textposition": "auto"}],
                 title={"text": "Worker CPU seconds per stage"}, xaxis={"title": {"text": "CPU seconds"}},
                 height=max(260, 40 + 24 * len(stage_s)), margin={"l": 140})
    per_doc = {k: round(v * 1000 / max(1, s.docs.in_), 3) for k, v in stage_s.items()}
    retries = [{"error": k, "attempts": n, "example": r.retry_examples.get(k, "")}
               for k, n in sorted(r.retries.items(), key=lambda kv: -kv[1])] if r is not None else []
    failed = [{"ordinal": f.ordinal, "warc": f.warc, "attempts": f.attempts, "error": f.error} for f in s.failed]
    return {"figure": fig, "stages": [{"stage": k, "seconds": v, "share": round(v / total, 4), "ms_per_doc":
                                       per_doc[k]} for k, v in stage_s.items()],
            "failed": failed, "retries": retries, "retried_last_run": s.this_run.retried}


# -- output
def output(view: OutputView) -> dict:
    s, cfg = view.summary, view.config
    folders: dict[str, list[int]] = {}
    for path, size in view.files:
        top = path.split("/", 1)[0] if "/" in path else "(top level)"
        entry = folders.setdefault(top, [0, 0])
        entry[0] += 1
        entry[1] += size
    formats = ["shards", *(cfg.output.format if cfg is not None else [])]
    return {"shards": s.shards, "tokens": s.tokens, "docs": s.docs.kept, "formats": formats,
            "dtype": view.run.get("token_meta", {}).get("dtype"),
            "folders": [{"folder": k, "files": v[0], "bytes": v[1]} for k, v in sorted(folders.items())],
            "bytes": sum(n for _, n in view.files)}


# -- documents
def documents(view: OutputView) -> dict | None:
    r = view.report
    if r is None:
        return None
    docs = []
    for pool, samples in sorted(r.samples.items(), key=lambda kv: (kv[0] != PASSED, kv[0])):  # passed ones first
        for d in samples:
            docs.append({**d.to_json(), "key": str(d.key), "lang": d.lang or NO_LANGUAGE,
                         "reason": d.label or pool, "pool": "passed the filters" if pool == PASSED else "dropped"})
    return {"docs": docs, "sizes": {"passed": r.samples_passed, "per_reason": r.samples_per_reason}}


