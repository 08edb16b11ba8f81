"""The stage registry: every quality-chain stage by name, and the default chain.

A stage is one :class:`~raycorpus.process.filters.base.Filter` subclass (with its settings
model) and one line, the :func:`register` decorator. Its ``name`` is then a section of the
config (``filters.<name>``, validated by its settings model) and a name ``filters.chain`` may
list. The built-in stages are the modules of this package, imported on first look-up; a stage
defined elsewhere is registered when its module is imported (before the config is read).
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from typing import TypeVar

from raycorpus.process.filters.base import Filter, StageSettings

#: The stages run when the config has no ``filters.chain``: FineWeb's funnel, cheapest reject first.
DEFAULT_CHAIN: tuple[str, ...] = (
    "url", "langid", "gopher_repetition", "gopher_quality", "c4", "fineweb", "badwords", "pii", "model_quality",
    "decontam",
)

F = TypeVar("F", bound=type[Filter])
_STAGES: dict[str, type[Filter]] = {}


def register(cls: F) -> F:
    """Class decorator: make ``cls`` a stage named ``cls.name``. Registering another class under a
    taken name is an error; registering the same class again (a module reloaded) replaces it."""
    name = cls.name
    if not name.isidentifier() or name.startswith("_"):
        raise ValueError(f"stage {cls.__qualname__}: name {name!r} is not a valid config section name")
    if not (isinstance(cls.settings, type) and issubclass(cls.settings, StageSettings)):
        raise TypeError(f"stage {name!r}: settings must be a StageSettings subclass, not {cls.settings!r}")
    if cls.needs not in ("url", "text"):
        raise ValueError(f"stage {name!r}: needs must be 'url' or 'text', not {cls.needs!r}")
    old = _STAGES.get(name)
    if old is not None and (old.__module__, old.__qualname__) != (cls.__module__, cls.__qualname__):
        raise ValueError(f"stage name {name!r} is taken by {old.__module__}.{old.__qualname__}")
    _STAGES[name] = cls
    return cls


def stages() -> dict[str, type[Filter]]:
    """Every registered stage by name (the built-in ones included)."""
    _import_builtins()
    return dict(_STAGES)


@functools.cache
def _import_builtins() -> None:
    package = importlib.import_module(__package__)
    for module in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"{__package__}.{module.name}")
