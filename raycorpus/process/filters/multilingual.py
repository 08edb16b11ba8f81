"""Per-language defaults for the quality stages (``filters.language_defaults: fineweb2``).

Once the language ID stage has labelled a document, a stage with language-dependent thresholds
(:meth:`~raycorpus.process.filters.base.Filter.language_settings`: Gopher repetition and quality,
FineWeb) runs with FineWeb-2's values for that language (:mod:`langtable`: the language's config,
and what FineWeb-2's pipeline set for every language, e.g. paragraph duplicates and short lines
off, duplicated line characters at 0.1), and a document in a language written without spaces or
in a script with combining marks (:func:`script_aware`) gets a script-aware text view
(:mod:`words`). A value the config writes explicitly in the stage's section wins over the table,
for every language. Languages without a table entry, English among them (FineWeb-2 has no
eng_Latn), keep the stage's configured values. A drop by a stage that ran with a language's
settings names the language: ``gopher_quality:stop_words[zh]``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from raycorpus.process.filters.base import Filter, StageSettings, TextView
from raycorpus.process.filters.langcodes import CANONICAL, fineweb2_name
from raycorpus.process.filters.langtable import for_label
from raycorpus.process.filters.spacy_tokens import rules_for
from raycorpus.process.filters.words import SPACELESS_LABELS

if TYPE_CHECKING:
    from raycorpus.process.filters.settings import FiltersConfig


@dataclass(slots=True)
class StageSpec:
    """What building a stage again for a language needs."""

    cls: type[Filter]
    settings: StageSettings
    resource: object | None
    all_signals: bool


@dataclass(slots=True)
class LanguageDefaults:
    """Per-language instances of the chain's text stages, built on first use (a cache: the same
    settings whatever the order documents arrive in)."""

    specs: list[StageSpec]
    _built: dict[tuple[int, str], Filter | None] = field(default_factory=dict)

    def stage(self, index: int, lang: str) -> Filter | None:
        """Text stage ``index`` with ``lang``'s settings, or None when the language changes none of them."""
        key = (index, lang)
        if key not in self._built:
            self._built[key] = self._build(self.specs[index], lang)
        return self._built[key]

    @staticmethod
    def _build(spec: StageSpec, lang: str) -> Filter | None:
        settings = language_settings(spec.cls, spec.settings, lang)
        if settings is None:
            return None
        stage = spec.cls.create(settings, spec.resource)
        stage.all_signals = spec.all_signals
        return stage


def language_settings(cls: type[Filter], settings: StageSettings, lang: str) -> StageSettings | None:
    """Stage ``cls``'s ``settings`` overlaid with FineWeb-2's values for ``lang`` (each field the config
    does not write explicitly), or None when the language changes none of them: the one rule of the live
    chain and of ``raycorpus select``'s re-decision."""
    entry = for_label(lang)
    if entry is None:
        return None
    explicit = settings.model_fields_set
    update = {k: v for k, v in cls.language_settings(entry).items() if k not in explicit}
    return settings.model_copy(update=update) if update else None


def table_labels() -> list[str]:
    """A language ID label for every language of FineWeb-2's table that a label reaches."""
    return [label for label in sorted(CANONICAL) if for_label(label) is not None]


# scripts whose words WORD_RE finds whole (no spaceless runs, no combining marks in ordinary text)
PLAIN_SCRIPTS = frozenset({"Latn", "Cyrl", "Grek", "Hang", "Armn", "Geor"})


@functools.cache
def script_aware(lang: str) -> bool:
    """Whether documents labelled ``lang`` get script-aware words (:mod:`words`): the languages
    written without spaces, and those with a FineWeb-2 entry in a script with combining marks
    (Devanagari, Bengali, Arabic, ...)."""
    if lang in SPACELESS_LABELS:
        return True
    name = fineweb2_name(lang) if for_label(lang) is not None else None
    return name is not None and name.rsplit("_", 1)[-1] not in PLAIN_SCRIPTS


def language_view(view: TextView, lang: str) -> TextView:
    """``view``, or a view of the same text with ``lang``'s words: script-aware ones when ``lang`` needs them,
    else those of the spaCy rules datatrove uses for ``lang``."""
    aware = view.script_aware or script_aware(lang)
    if aware == view.script_aware and (aware or rules_for(lang) is rules_for(view.lang)):
        return view
    return TextView(view.text, script_aware=aware, lang=lang)


def has_defaults(label: str) -> bool:
    """Whether ``filters.language_defaults: fineweb2`` changes anything for documents labelled ``label``."""
    return label in SPACELESS_LABELS or for_label(label) is not None


def defaults_apply(filters: FiltersConfig) -> bool:
    """Whether ``filters.language_defaults`` can change the output: it is ``fineweb2`` and the
    language ID stage runs and may keep a language that has defaults (``keep: null`` or such a
    label). The default config keeps only ``en``, which has none: its output (and fingerprint)
    is what it was before the setting existed."""
    if filters.language_defaults != "fineweb2":
        return False
    langid = next((s for c, s in filters.enabled_stages() if c.name == "langid"), None)
    keep = getattr(langid, "keep", None)
    return langid is not None and (keep is None or any(has_defaults(k) for k in keep))


def written_over_defaults(filters: FiltersConfig) -> dict[str, list[str]]:
    """Per enabled stage, the fields its section writes explicitly that FineWeb-2's table would set:
    they win over the table for every language, so two configs with equal values but different
    written fields build different outputs (the fingerprint holds this when the defaults apply)."""
    entry = for_label("de")  # every table entry sets the same fields
    out = {}
    for cls, settings in filters.enabled_stages():
        written = sorted(settings.model_fields_set & set(cls.language_settings(entry)))
        if written:
            out[cls.name] = written
    return out
