"""Model-based quality: any fastText classifier (e.g. a DCLM-style ``__label__hq`` model).

The score is the probability the model gives ``label`` (0 when the label is not among the
model's top ``TOP_K``); documents scoring below ``threshold`` are dropped with reason
``f"{label}<{threshold}"``. The text is predicted as one line of at most ``MAX_CHARS`` characters.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pydantic import Field

from raycorpus.process.document import Document
from raycorpus.process.filters.base import Filter, FilterResult, StageSettings, TextView
from raycorpus.process.filters.registry import register
from raycorpus.process.filters.resources import fasttext_line, fasttext_predict, load_fasttext

MAX_CHARS = 100_000
TOP_K = 10


class ModelQualityConfig(StageSettings):
    enabled: bool = Field(False, description="run the stage (off by default: it needs a model)")
    model: str = Field("", description="fastText classifier (.bin/.ftz), e.g. a DCLM-style quality model")
    label: str = Field("__label__hq", description="the classifier's label whose probability is the score")
    threshold: float = Field(0.5, ge=0, le=1, description="drop when the label's probability is below this")


@register
class ModelQualityFilter(Filter):
    """Signals (and ``doc.metadata``) ``model_quality``: the probability of ``label``."""

    name = "model_quality"
    settings = ModelQualityConfig
    removable = True
    metadata_keys = ("model_quality",)
    thresholds = frozenset({"threshold"})

    def __init__(self, cfg: ModelQualityConfig):
        if not cfg.model:
            raise FileNotFoundError("filters.model_quality.model: no fastText classifier path given")
        self.model = load_fasttext(cfg.model)
        self.target = cfg.label.removeprefix("__label__")  # not `label`: that is the stage's counter name
        self.cfg = cfg

    def score(self, text: str) -> float:
        if not text or text.isspace():
            return 0.0
        return dict(fasttext_predict(self.model, fasttext_line(text, MAX_CHARS), TOP_K)).get(self.target, 0.0)

    def __call__(self, doc: Document, view: TextView) -> FilterResult:
        score = self.score(view.text)
        doc.metadata["model_quality"] = score
        signals = {"model_quality": score}
        return FilterResult(reason=verdict(score, self.cfg), signals=signals)

    @classmethod
    def signal_rule(cls, signal: str, settings: ModelQualityConfig, lang: str | None) -> Callable[[float], bool] | None:
        return (lambda score: verdict(score, settings) is not None) if signal == "model_quality" else None

    @classmethod
    def decide(cls, signals: Mapping[str, Any], settings: ModelQualityConfig, recorded: str | None) -> str | None:
        return recorded if recorded == "error" else verdict(float(signals["model_quality"]), settings)


def verdict(score: float, cfg: ModelQualityConfig) -> str | None:
    """The live stage's rule, and ``raycorpus select``'s on the recorded score."""
    return f"{cfg.label}<{cfg.threshold}" if score < cfg.threshold else None
