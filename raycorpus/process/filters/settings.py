"""The ``filters:`` section of the config: the mode, the chain (which stages run, in order) and
one section per stage, each validated by its stage's settings model.

Each stage's settings model lives next to the stage class (``LangIdConfig`` in ``langid.py``, ...);
they are imported here too, as before. A section is named by the stage's registered ``name``
(:mod:`raycorpus.process.filters.registry`); a section for an unregistered name is an error.
Every stage of the default chain has its section, with its defaults, whether or not the config
writes it, so ``cfg.filters.langid.keep`` always works; a stage registered outside raycorpus has
one when the config writes it or lists the stage in ``chain``.
"""

from __future__ import annotations

import functools
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model, model_validator
from pydantic_core import PydanticCustomError

from raycorpus.process.filters.badwords import BadWordsConfig
from raycorpus.process.filters.base import Filter, StageSettings
from raycorpus.process.filters.c4 import C4Config
from raycorpus.process.filters.decontam import BenchmarkSource, DecontamConfig
from raycorpus.process.filters.fineweb import FineWebQualityConfig
from raycorpus.process.filters.gopher import GopherQualityConfig, GopherRepetitionConfig
from raycorpus.process.filters.langid import LangIdConfig
from raycorpus.process.filters.model import ModelQualityConfig
from raycorpus.process.filters.pii import PiiConfig
from raycorpus.process.filters.registry import DEFAULT_CHAIN, stages
from raycorpus.process.filters.url import UrlFilterConfig

__all__ = [  # the built-in stages' settings, importable from here as before they moved to their stages
    "BadWordsConfig", "BenchmarkSource", "C4Config", "DecontamConfig", "ExclusionsConfig", "FiltersConfig",
    "FineWebQualityConfig", "GopherQualityConfig", "GopherRepetitionConfig", "LangIdConfig", "ModelQualityConfig",
    "PiiConfig", "StageSettings", "UrlFilterConfig",
]


class ExclusionsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    enabled: bool = Field(
        False, description="write dropped documents with their reason to exclusions/*.jsonl.zst")
    sample_rate: float = Field(1.0, gt=0, le=1, description="fraction of dropped documents written")


class FiltersConfig(BaseModel):
    """``mode``, ``chain``, ``exclusions``, and every other key is a stage's section (``filters.<name>``)."""

    model_config = ConfigDict(extra="allow", frozen=True)
    mode: Literal["filter", "tag"] = Field("filter", description="filter drops; tag keeps all and records signals")
    chain: list[str] | None = Field(
        None, description="the stages to run, in order (null: the default chain, FineWeb's funnel); stages that "
        "need the URL come before those that need the text",
    )
    exclusions: ExclusionsConfig = Field(
        ExclusionsConfig(), description="write the dropped documents and their reasons (not dedup's: see dedup.audit)")
    language_defaults: Literal["fineweb2", "none"] = Field(
        "fineweb2", description="per-language thresholds of the Gopher and FineWeb stages from FineWeb-2's "
        "published settings, and script-aware words for the languages that need them (a value written in a "
        "stage's section wins; English has no entry); none: every language gets the stage's values",
    )

    @model_validator(mode="wrap")
    @classmethod
    def _stage_sections(cls, data: Any, handler) -> FiltersConfig:
        if not isinstance(data, dict):
            return handler(data)
        own = {k: v for k, v in data.items() if k in cls.model_fields}
        given = {k: v for k, v in data.items() if k not in cls.model_fields}
        chain = handler(own).stage_names  # mode, chain and exclusions as pydantic checks them
        return handler({**own, **_validate_sections(chain, given)})

    @property
    def stage_names(self) -> tuple[str, ...]:
        """The chain: ``chain`` if the config sets it, else the default chain."""
        return DEFAULT_CHAIN if self.chain is None else tuple(self.chain)

    def section(self, name: str) -> StageSettings:
        """The settings of stage ``name`` (the defaults when the config does not write its section)."""
        return (self.__pydantic_extra__ or {})[name]

    def enabled_stages(self) -> list[tuple[type[Filter], StageSettings]]:
        """(stage class, settings) of each enabled stage of the chain, in chain order."""
        registry = stages()
        sections = [(registry[name], self.section(name)) for name in self.stage_names]
        return [(cls, settings) for cls, settings in sections if settings.enabled]


def _fail(*errors: tuple[tuple[str | int, ...], str, Any]) -> ValidationError:
    """A validation error at each ``(loc under filters, message, input)``."""
    return ValidationError.from_exception_data("FiltersConfig", [
        {"type": PydanticCustomError("stage", msg), "loc": loc, "input": value} for loc, msg, value in errors
    ])


def _check_chain(chain: tuple[str, ...], registry: dict[str, type[Filter]]) -> None:
    """Every name registered, none twice, URL stages before text stages."""
    errors = []
    first_text = None
    for i, name in enumerate(chain):
        cls = registry.get(name)
        if cls is None:
            errors.append((("chain", i), f"unknown stage {name!r}; registered stages: {', '.join(sorted(registry))}",
                           name))
        elif name in chain[:i]:
            errors.append((("chain", i), f"stage {name!r} is listed twice", name))
        elif cls.needs == "url" and first_text is not None:
            errors.append((("chain", i), f"stage {name!r} reads the record's URL before extraction, so it must "
                           f"come before every stage that reads the text (it is after {first_text!r})", name))
        elif cls.needs == "text" and first_text is None:
            first_text = name
    if errors:
        raise _fail(*errors)


def _validate_sections(chain: tuple[str, ...], given: dict[str, Any]) -> dict[str, StageSettings]:
    """Each stage section, validated by its stage's settings model: the sections the config
    writes, and defaults for the default chain's stages and the chain's."""
    registry = stages()
    _check_chain(chain, registry)
    unknown = [((name,), f"unknown stage section {name!r} (not a registered stage; registered stages: "
                f"{', '.join(sorted(registry))})", value)
               for name, value in given.items() if name not in registry or hasattr(FiltersConfig, name)]
    if unknown:
        raise _fail(*unknown)
    names = tuple(dict.fromkeys([*DEFAULT_CHAIN, *chain, *given]))
    sections = _sections_model(tuple((n, registry[n].settings) for n in names)).model_validate(given)
    idle = [((name,), "enabled but not in filters.chain, so it would never run: add it to the chain or set "
             "enabled: false", given[name])
            for name in given if name not in chain and getattr(sections, name).enabled]
    if idle:
        raise _fail(*idle)
    return {name: getattr(sections, name) for name in names}


@functools.lru_cache(maxsize=64)
def _sections_model(fields: tuple[tuple[str, type[StageSettings]], ...]) -> type[BaseModel]:
    """A model with one field per stage section (required when its settings have required fields)."""
    def default(model: type[StageSettings]) -> Any:
        return ... if any(f.is_required() for f in model.model_fields.values()) else Field(default_factory=model)

    return create_model("FilterSections", __config__=ConfigDict(extra="forbid", frozen=True),
                        **{name: (model, default(model)) for name, model in fields})
