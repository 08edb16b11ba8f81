"""The language ID backends behind ``filters.langid.backend``; each maps a text to a canonical (label, score).

- ``fasttext``: lid.176 (or the configured fastText model), the fast default.
- ``lingua``: lingua-language-detector (``pip install 'raycorpus[multilingual]'``), 75 languages, models
  inside the wheel; knows lg mi sn st tn ts xh zu, which lid.176 lacks, and bs, nb/nn better.
- ``ensemble``: fastText first; lingua's top label instead where fastText is unsure (probability below
  ``ENSEMBLE_BELOW``) or says a language of a confusable group (``CONFUSABLE``), where lid.176 is weak.

All three see the same text: one line of at most ``MAX_CHARS`` characters in ``WINDOWS`` whole-word windows
(:func:`raycorpus.process.filters.resources.fasttext_line`). Both models are deterministic, so is the ensemble.
"""

from __future__ import annotations

from raycorpus.process.filters.langcodes import canonical, canonical_or_raw
from raycorpus.process.filters.resources import fasttext_line, fasttext_predict, load_fasttext

MAX_CHARS = 1_500
WINDOWS = 8
UNKNOWN = ("unknown", 0.0)
BACKENDS = ("fasttext", "ensemble", "lingua")
# lid.176 labels whose languages it confuses with close neighbours (on the shared 75-language sample:
# nn -> no, bs -> hr/sr/sh, ms -> id, ...); a fastText label in one of them asks lingua
CONFUSABLE = frozenset({"no", "nn", "da", "sv", "bs", "hr", "sr", "sh", "ms", "id", "hi", "mr", "ne"})
DIGITS = 6  # lingua's confidences are rounded to this many decimals (see LinguaBackend.top)
ENSEMBLE_BELOW = 0.8  # fastText probability under which lingua decides (0.65 .. 0.9 measured; see README)


class FastTextBackend:
    def __init__(self, model: str):
        self.model = load_fasttext(model)

    def top(self, line: str) -> tuple[str, float]:
        found = fasttext_predict(self.model, line)
        return (canonical_or_raw(found[0][0]), found[0][1]) if found else UNKNOWN

    def __call__(self, text: str) -> tuple[str, float]:
        return self.top(fasttext_line(text, MAX_CHARS, WINDOWS))


class LinguaBackend:
    """lingua with every language it has, high-accuracy models loaded lazily (each the first time it is needed)."""

    def __init__(self):
        try:
            from lingua import LanguageDetectorBuilder
        except ImportError as e:
            raise ImportError("filters.langid.backend needs lingua-language-detector: "
                              "pip install 'raycorpus[multilingual]'") from e
        self.detector = LanguageDetectorBuilder.from_all_languages().build()

    def top(self, line: str) -> tuple[str, float]:
        """The most likely language and its confidence, rounded to ``DIGITS`` (lingua sums its n-gram
        probabilities in hash-map order, which varies between processes: the last bits of a confidence do
        too); ties broken by the canonical code, so the answer is the same in every worker."""
        values = [(round(v.value, DIGITS), canonical(v.language.iso_code_639_1.name))
                  for v in self.detector.compute_language_confidence_values(line)]
        if not values:
            return UNKNOWN
        score, label = min(values, key=lambda sv: (-sv[0], sv[1]))
        return (label, score) if score > 0 else UNKNOWN

    def __call__(self, text: str) -> tuple[str, float]:
        return self.top(fasttext_line(text, MAX_CHARS, WINDOWS))


class EnsembleBackend:
    def __init__(self, model: str):
        self.fasttext = FastTextBackend(model)
        self.lingua = LinguaBackend()

    def __call__(self, text: str) -> tuple[str, float]:
        line = fasttext_line(text, MAX_CHARS, WINDOWS)
        label, score = self.fasttext.top(line)
        if score < ENSEMBLE_BELOW or label in CONFUSABLE:
            second = self.lingua.top(line)
            if second != UNKNOWN:
                return second
        return label, score


def make_backend(backend: str, model: str):
    """The ``text -> (canonical label, score)`` callable of ``backend`` (one of ``BACKENDS``)."""
    if backend == "fasttext":
        return FastTextBackend(model)
    if backend == "lingua":
        return LinguaBackend()
    if backend == "ensemble":
        return EnsembleBackend(model)
    raise ValueError(f"unknown langid backend {backend!r}; expected one of {', '.join(BACKENDS)}")
