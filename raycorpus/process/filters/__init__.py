"""The quality chain: registered stages, run in the order of ``filters.chain``.

The default chain is FineWeb's funnel, cheapest reject first: URL filter (on the record's URL,
before extraction) -> language ID -> Gopher repetition -> Gopher quality -> C4 -> FineWeb
quality -> bad words -> PII -> model-based quality -> benchmark decontamination. A stage is a
:class:`~raycorpus.process.filters.base.Filter` subclass registered with
:func:`~raycorpus.process.filters.registry.register`; the config's ``filters.chain`` may list any
registered stages in another order. In ``filter`` mode the first stage that names a reason drops
the document (counted as ``drop:<stage>:<reason>``); in ``tag`` mode every stage runs, every
signal goes into the document's metadata, the reasons it would have been dropped for go into
``metadata["would_drop"]`` (counted as ``tag:<stage>:<reason>``), and the document is kept.

With ``filters.language_defaults: fineweb2`` (the default), a stage with language-dependent
thresholds runs, for a document whose language FineWeb-2 has settings for, with those settings
(:mod:`raycorpus.process.filters.multilingual`), and its drop reasons name the language
(``gopher_quality:stop_words[de]``).

The runtime builds each stage's shared resource once per run (:meth:`Chain.shared_resources`,
e.g. decontamination's benchmark index) and hands the same objects to every worker's chain.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from raycorpus import counts as ck
from raycorpus.process.document import Document
from raycorpus.process.filters.base import Filter, FilterResult, StageSettings, TextView
from raycorpus.process.filters.multilingual import LanguageDefaults, StageSpec, language_view
from raycorpus.process.filters.registry import DEFAULT_CHAIN, register
from raycorpus.process.filters.settings import FiltersConfig

if TYPE_CHECKING:
    from raycorpus.ingest.storage import Storage

__all__ = [
    "DEFAULT_CHAIN", "Chain", "Filter", "FilterResult", "FiltersConfig", "StageSettings", "TextView", "register",
]


class Chain:
    """The enabled stages of ``cfg``, built once per worker; ``check_url`` runs the stages that
    need the URL (before extraction), calling the chain runs those that need the text.

    ``resources`` maps a stage name to its shared resource; None builds them here (tests, one
    process), with ``storage`` if given.
    """

    def __init__(self, cfg: FiltersConfig, resources: Mapping[str, object] | None = None,
                 storage: Storage | None = None):
        self.tag = cfg.mode == "tag"
        if resources is None:
            resources = self.shared_resources(cfg, storage)
        self.url_stages: list[Filter] = []
        self.stages: list[tuple[Filter, frozenset[str] | None]] = []  # (stage, languages it applies to)
        specs: list[StageSpec] = []
        for cls, settings in cfg.enabled_stages():
            stage = cls.create(settings, resources.get(cls.name))
            stage.all_signals = self.tag  # tag mode computes every signal, no early exit
            if cls.needs == "url":
                self.url_stages.append(stage)
            else:
                self.stages.append((stage, frozenset(settings.languages) if settings.languages else None))
                specs.append(StageSpec(cls, settings, resources.get(cls.name), self.tag))
        # FineWeb-2's per-language thresholds and script-aware words (filters.language_defaults)
        self.languages = LanguageDefaults(specs) if cfg.language_defaults == "fineweb2" else None

    @staticmethod
    def shared_resources(cfg: FiltersConfig, storage: Storage | None = None) -> dict[str, object]:
        """Each enabled stage's shared resource (stages without one are left out), built once per run."""
        built = {cls.name: cls.shared_resource(settings, storage) for cls, settings in cfg.enabled_stages()}
        return {name: resource for name, resource in built.items() if resource is not None}

    @property
    def names(self) -> list[str]:
        """The stages' names in counters, in the order they run."""
        return [s.label() for s in self.url_stages] + [s.label() for s, _ in self.stages]

    def _count(self, stage: Filter, reason: str, counts: Counter) -> ck.Key:
        name, reason = ("error", stage.label()) if reason == "error" else (stage.label(), reason)
        key = ck.Key(ck.Kind.TAG if self.tag else ck.Kind.DROP, name, reason)
        counts[key] += 1
        return key

    def check_url(self, url: str, counts: Counter) -> str | None:
        """Run the stages that need the URL: the drop reason (filter mode), or None. Tag mode only counts."""
        for stage in self.url_stages:
            try:
                reason = stage(url)
            except Exception:  # a stage that raises drops the record, never the WARC
                reason = "error"
            if reason:
                key = self._count(stage, reason, counts)
                if not self.tag:
                    return key.label
        return None

    def __call__(self, doc: Document, counts: Counter,
                 signals: Callable[[str, float | int | str, str | None], None] | None = None) -> str | None:
        """Run the stages that need the text; return the drop reason (filter mode) or None (kept).
        ``signals(name, value, language)`` is called for every signal a stage computed (the report's
        histograms)."""
        view = TextView(doc.text)
        would_drop: list[str] = []
        for i, (stage, langs) in enumerate(self.stages):
            lang = doc.metadata.get("lang")
            if langs is not None and lang not in langs:
                continue
            suffix = ""
            if self.languages is not None and isinstance(lang, str):
                view = language_view(view, lang)
                if (own := self.languages.stage(i, lang)) is not None:
                    stage, suffix = own, f"[{lang}]"
            t0 = time.perf_counter_ns()
            try:
                res = stage(doc, view)
            except Exception:  # never a failed WARC: a per-document drop, counted
                res = FilterResult(reason="error")
            counts[ck.time_in(stage.label())] += time.perf_counter_ns() - t0
            if signals is not None:  # language ID has just set the language
                for name, value in res.signals.items():
                    signals(name, value, doc.metadata.get("lang"))
            if res.text is not None and res.text != doc.text:
                doc.text = res.text
                view = TextView(res.text, view.script_aware)
            if self.tag:
                doc.metadata.update(res.signals)
            if res.reason:
                key = self._count(stage, res.reason + suffix if res.reason != "error" else res.reason, counts)
                if not self.tag:
                    return key.label
                would_drop.append(key.label)
        if self.tag:
            doc.metadata["would_drop"] = would_drop
        return None
