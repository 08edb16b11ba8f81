"""Each quality signal's histogram with the thresholds its stage applies to it, per language.

A stage says, for one of its signals, whether a value alone makes it drop a document
(:meth:`~raycorpus.process.filters.base.Filter.signal_rule`: the same rule the live chain and ``raycorpus
select`` apply). The report finds where that rule changes its answer between the histogram's bin edges and
pins each change down by bisection: the thresholds, and on which side of each the documents are kept. The
page then lets a person move them and reads off how many documents would pass.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from raycorpus.config import Config
from raycorpus.process.filters import Filter
from raycorpus.process.filters.multilingual import language_settings
from raycorpus.process.filters.registry import stages
from raycorpus.process.profile import scale_of

MAX_LANGUAGES = 30  # per signal, the languages with the most documents


@dataclass(frozen=True)
class Threshold:
    value: float
    keep: str  # "below" or "above": the side of it whose documents the rule keeps

    def to_json(self) -> dict:
        return {"value": self.value, "keep": self.keep}


@dataclass
class SignalChart:
    """One signal for one language: the histogram (bins with data, and the edges around them) and thresholds."""

    signal: str
    stage: str
    lang: str
    edges: list[float]  # lower edge of each bin shown
    counts: list[int]
    thresholds: list[Threshold]

    @property
    def total(self) -> int:
        return int(sum(self.counts))

    def kept(self) -> int:
        """Documents the thresholds keep, counted by each bin's lower edge (to a bin's resolution)."""
        return int(sum(c for e, c in zip(self.edges, self.counts, strict=True)
                       if all(e < t.value if t.keep == "below" else e >= t.value for t in self.thresholds)))

    def to_json(self) -> dict:
        return {"signal": self.signal, "stage": self.stage, "lang": self.lang, "edges": self.edges,
                "counts": self.counts, "thresholds": [t.to_json() for t in self.thresholds], "total": self.total,
                "kept": self.kept()}


def thresholds_of(rule: Callable[[float], bool], edges: np.ndarray) -> list[Threshold]:
    """Where ``rule`` (True: dropped) changes between consecutive ``edges``, each found to ~1e-9 by bisection."""
    drops = [rule(float(e)) for e in edges]
    out = []
    for i in range(len(edges) - 1):
        if drops[i] == drops[i + 1]:
            continue
        lo, hi = float(edges[i]), float(edges[i + 1])
        for _ in range(60):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if rule(mid) == drops[i] else (lo, mid)
        out.append(Threshold(round(hi, 6), "below" if drops[i + 1] else "above"))
    return out


def stage_of(signal: str, registry: dict[str, type[Filter]]) -> type[Filter] | None:
    """The stage that records ``signal`` (``gopher_quality.words``; ``lang_score``: language ID)."""
    for cls in registry.values():
        if signal.startswith(f"{cls.name}.") or signal in cls.metadata_keys:
            return cls
    return None


def signal_charts(hists: dict[tuple[str, str], np.ndarray], cfg: Config | None) -> list[list[SignalChart]]:
    """Per signal (in chain order, then rule order), its charts per language (most documents first)."""
    registry = stages()
    chain = list(cfg.filters.stage_names) if cfg is not None else list(registry)
    by_signal: dict[str, list[tuple[str, np.ndarray]]] = {}
    for (signal, lang), counts in hists.items():
        by_signal.setdefault(signal, []).append((lang, counts))
    out = []
    for signal in sorted(by_signal, key=lambda s: _order(s, registry, chain, cfg)):
        cls = stage_of(signal, registry)
        langs = sorted(by_signal[signal], key=lambda lc: (-int(lc[1].sum()), lc[0]))[:MAX_LANGUAGES]
        out.append([_chart(signal, cls, lang, counts, cfg) for lang, counts in langs])
    return out


def _order(signal: str, registry: dict[str, type[Filter]], chain: list[str], cfg: Config | None) -> tuple:
    cls = stage_of(signal, registry)
    if cls is None:
        return (len(chain), 0, signal)
    stage_at = chain.index(cls.name) if cls.name in chain else len(chain)
    names: list[str] = []
    if cfg is not None and hasattr(cls, "signal_names"):
        names = [f"{cls.name}.{n}" for n in cls.signal_names(cfg.filters.section(cls.name))]
    return (stage_at, names.index(signal) if signal in names else len(names), signal)


def _chart(signal: str, cls: type[Filter] | None, lang: str, counts: np.ndarray, cfg: Config | None) -> SignalChart:
    scale = scale_of(signal)
    thresholds = []
    if cls is not None and cfg is not None and cls.name in cfg.filters.stage_names:
        settings = cfg.filters.section(cls.name)
        if settings.enabled and (settings.languages is None or lang in settings.languages):
            if cfg.filters.language_defaults == "fineweb2" and lang:
                settings = language_settings(cls, settings, lang) or settings
            rule = cls.signal_rule(signal, settings, lang or None)
            thresholds = thresholds_of(rule, scale.edges) if rule is not None else []
    first, last = _shown(counts, scale.edges, thresholds)
    return SignalChart(signal, cls.name if cls is not None else "", lang, scale.edges[first:last].tolist(),
                       counts[first:last].tolist(), thresholds)


def _shown(counts: np.ndarray, edges: np.ndarray, thresholds: list[Threshold]) -> tuple[int, int]:
    """The bins to draw: those with data and those up to the thresholds, with a little room around."""
    nz = np.flatnonzero(counts)
    marks = [int(np.searchsorted(edges, t.value, side="right")) - 1 for t in thresholds]
    if not nz.size and not marks:
        return 0, 0
    lo = min([*nz[:1].tolist(), *marks])
    hi = max([*nz[-1:].tolist(), *marks])
    return max(0, lo - 2), min(len(edges), hi + 3)
