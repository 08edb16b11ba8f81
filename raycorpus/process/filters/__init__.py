"""The quality chain: stages in the order of FineWeb's funnel, cheapest reject first.

URL filter (before extraction) -> language ID -> Gopher repetition -> Gopher quality -> C4
-> FineWeb quality -> bad words -> PII -> model-based quality -> benchmark decontamination. In ``filter`` mode the first
stage that names a reason drops the document (counted as ``drop:<stage>:<reason>``); in
``tag`` mode every stage runs, every signal goes into the document's metadata, the reasons
it would have been dropped for go into ``metadata["would_drop"]`` (counted as
``tag:<stage>:<reason>``), and the document is kept.
"""

from __future__ import annotations

import time
from collections import Counter

from raycorpus import counts as ck
from raycorpus.process.document import Document
from raycorpus.process.filters.base import FilterResult, TextView
from raycorpus.process.filters.settings import FiltersConfig


class Chain:
    def __init__(self, cfg: FiltersConfig, decontam_index=None):
        self.tag = cfg.mode == "tag"
        self.url_filter = None
        if cfg.url.enabled:
            from raycorpus.process.filters.url import UrlFilter

            self.url_filter = UrlFilter(cfg.url)
        self.stages = []
        for key, module, cls in STAGES:
            stage_cfg = getattr(cfg, key)
            if not stage_cfg.enabled:
                continue
            mod = __import__(f"raycorpus.process.filters.{module}", fromlist=[cls])
            if key == "decontam":  # its index is built once per run and handed to every worker
                stage = getattr(mod, cls)(stage_cfg, decontam_index)
            else:
                stage = getattr(mod, cls)(stage_cfg)
            if hasattr(stage, "all_signals"):
                stage.all_signals = self.tag  # tag mode computes every signal, no early exit
            langs = frozenset(stage_cfg.languages) if stage_cfg.languages else None
            self.stages.append((stage, langs))

    @property
    def names(self) -> list[str]:
        return ([self.url_filter.name] if self.url_filter else []) + [s.name for s, _ in self.stages]

    def check_url(self, url: str, counts: Counter) -> str | None:
        """Drop reason for a URL (before extraction), or None. Tag mode only counts it."""
        if self.url_filter is None:
            return None
        try:
            reason = self.url_filter(url)
        except Exception:  # a stage that raises drops the record, never the WARC
            reason = "error"
        if not reason:
            return None
        stage, reason = ("error", "url") if reason == "error" else ("url", reason)
        if self.tag:
            counts[ck.tag(stage, reason)] += 1
            return None
        counts[ck.drop(stage, reason)] += 1
        return f"{stage}:{reason}"

    def __call__(self, doc: Document, counts: Counter) -> str | None:
        """Run the document stages; return the drop reason (filter mode) or None (kept)."""
        view = TextView(doc.text)
        would_drop: list[str] = []
        for stage, langs in self.stages:
            if langs is not None and doc.metadata.get("lang") not in langs:
                continue
            t0 = time.perf_counter_ns()
            try:
                res = stage(doc, view)
            except Exception:  # never a failed WARC: a per-document drop, counted
                res = FilterResult(reason="error")
            counts[ck.time_in(stage.name)] += time.perf_counter_ns() - t0
            if res.text is not None and res.text != doc.text:
                doc.text = res.text
                view = TextView(res.text)
            if self.tag:
                doc.metadata.update(res.signals)
            if res.reason:
                key = ck.Key(ck.Kind.TAG if self.tag else ck.Kind.DROP,
                             *(("error", stage.name) if res.reason == "error" else (stage.name, res.reason)))
                counts[key] += 1
                if not self.tag:
                    return key.label
                would_drop.append(key.label)
        if self.tag:
            doc.metadata["would_drop"] = would_drop
        return None


# (settings field, module, class) in chain order
STAGES = [
    ("langid", "langid", "LanguageFilter"),
    ("gopher_repetition", "gopher", "GopherRepetitionFilter"),
    ("gopher_quality", "gopher", "GopherQualityFilter"),
    ("c4", "c4", "C4Filter"),
    ("fineweb", "fineweb", "FineWebQualityFilter"),
    ("badwords", "badwords", "BadWordsFilter"),
    ("pii", "pii", "PiiScrubber"),
    ("model_quality", "model", "ModelQualityFilter"),
    ("decontam", "decontam", "DecontamFilter"),
]
