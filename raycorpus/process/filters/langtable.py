"""FineWeb-2's per-language quality settings, as shipped in ``raycorpus/data/fineweb2_languages.json``.

The table comes from huggingface/fineweb-2's ``configs/*.yml`` (Apache-2.0; the commit and
licence are in the JSON and ``fineweb2_LICENSE.txt`` beside it), reduced by
:mod:`raycorpus.process.filters.langtable_build` to the fields the stages use, for the labels
the language ID can emit. Keyed by FineWeb-2's name (``deu_Latn``);
:func:`for_label` goes through :func:`~raycorpus.process.filters.langcodes.fineweb2_name`.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass

from raycorpus.process.filters.langcodes import fineweb2_name
from raycorpus.process.filters.resources import resolve_resource

TABLE = "package:fineweb2_languages.json"


@dataclass(frozen=True, slots=True)
class LanguageSettings:
    """One language's FineWeb-2 settings (FineWeb-2's field names; fractions in 0..1)."""

    name: str  # FineWeb-2's name, e.g. deu_Latn
    stop_words: tuple[str, ...]
    min_avg_word_length: float
    max_avg_word_length: float
    max_non_alpha_words_ratio: float  # datatrove's name: the minimum share of words with a letter
    dup_line_frac: float
    top_n_grams: tuple[tuple[int, float], ...]
    dup_n_grams: tuple[tuple[int, float], ...]
    line_punct_thr: float
    new_line_ratio: float
    # set by FineWeb-2's pipeline for every language (0 = rule off, as in datatrove)
    dup_para_frac: float
    dup_line_char_frac: float
    dup_para_char_frac: float
    short_line_thr: float
    char_duplicates_ratio: float
    min_stop_words: int

    @classmethod
    def from_json(cls, name: str, d: dict, pipeline: dict) -> LanguageSettings:
        return cls(
            dup_para_frac=float(pipeline["dup_para_frac"]), dup_line_char_frac=float(pipeline["dup_line_char_frac"]),
            dup_para_char_frac=float(pipeline["dup_para_char_frac"]), short_line_thr=float(pipeline["short_line_thr"]),
            char_duplicates_ratio=float(pipeline["char_duplicates_ratio"]),
            min_stop_words=int(pipeline["min_stop_words"]),
            name=name, stop_words=tuple(d["stopwords"]), min_avg_word_length=float(d["min_avg_word_length"]),
            max_avg_word_length=float(d["max_avg_word_length"]),
            max_non_alpha_words_ratio=float(d["max_non_alpha_words_ratio"]), dup_line_frac=float(d["dup_line_frac"]),
            top_n_grams=tuple((int(n), float(f)) for n, f in d["top_n_grams"]),
            dup_n_grams=tuple((int(n), float(f)) for n, f in d["dup_n_grams"]),
            line_punct_thr=float(d["line_punct_thr"]), new_line_ratio=float(d["new_line_ratio"]),
        )


@functools.cache
def table() -> dict[str, LanguageSettings]:
    """Every language of the shipped table, by FineWeb-2's name."""
    raw = json.loads(resolve_resource(TABLE).read_text(encoding="utf-8"))
    return {name: LanguageSettings.from_json(name, d, raw["pipeline"]) for name, d in raw["languages"].items()}


def source() -> dict[str, str]:
    """Where the table comes from (repository, commit, licence)."""
    return json.loads(resolve_resource(TABLE).read_text(encoding="utf-8"))["source"]


def for_label(label: str | None) -> LanguageSettings | None:
    """The settings of a language ID label (``de``), or None when FineWeb-2 has none for it."""
    name = fineweb2_name(label) if label else None
    return table().get(name) if name else None
