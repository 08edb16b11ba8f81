"""What every stage of the quality chain shares: its base class, its settings base, a cached
view of the text and the result type.

A stage is a :class:`Filter` subclass with a ``name`` (its config section ``filters.<name>``),
a ``settings`` model (a :class:`StageSettings` subclass) and the input it ``needs``:

* ``"text"`` (the default): ``__call__(doc, view) -> FilterResult``, after extraction. It keeps the
  document (``reason=None``), or names why it would drop it (``reason="mean_word_length"``), and
  may return the numbers it computed (``signals``, written into metadata in tag mode) and, for
  modifying stages (C4 line filter, PII), a replacement ``text``.
* ``"url"``: ``__call__(url) -> reason | None``, on the record's URL before extraction (cheap
  rejects never pay for extraction).

Stages never raise on odd input; the chain turns a stage that raises anyway into a counted drop
``error:<name>``. Registering the class (:func:`raycorpus.process.filters.registry.register`)
makes it a section of the config and a name for ``filters.chain``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from raycorpus.process.filters.spacy_tokens import rules_for
from raycorpus.process.filters.words import script_tokens

if TYPE_CHECKING:
    from raycorpus.ingest.storage import Storage
    from raycorpus.process.document import Document
    from raycorpus.process.filters.langtable import LanguageSettings

#: the revision of the quality stages' definitions an output records (run.json ``filter_rules``): a resume under
#: another refuses, so no output mixes documents judged by two definitions. 1: raycorpus's own (before 0.2; an
#: output without the field); 2: datatrove's, FineWeb's (:mod:`~raycorpus.process.filters.fineweb_text`).
FILTER_RULES = 2

# A word is a run of letters/digits (with inner apostrophes or hyphens); any other
# non-space character is a token of its own. Scripts without spaces (CJK, Thai) come out as
# long runs: a script-aware view (filters.language_defaults) cuts them with words.py instead.
WORD_RE = re.compile(r"\w+(?:['\u2019\-]\w+)*|[^\w\s]", re.UNICODE)


class TextView:
    """Lazily computed splits of one text, shared by all filters of the chain.

    ``tokens`` are the words FineWeb's filters count (datatrove's: spaCy's rules for ``lang``, English by
    default, :mod:`~raycorpus.process.filters.spacy_tokens`, punctuation marks included); ``words`` are
    ``WORD_RE``'s runs of letters and digits (the bad-words lists match them).

    ``script_aware``: cut runs of Han, Kana, Thai, Khmer, Lao and Myanmar letters into words and keep
    combining marks in their word (:mod:`raycorpus.process.filters.words`), for both; the chain sets it
    for the languages that need it (:func:`raycorpus.process.filters.multilingual.script_aware`).
    """

    def __init__(self, text: str, script_aware: bool = False, lang: str | None = None):
        self.text = text
        self.script_aware = script_aware
        self.lang = lang

    @cached_property
    def lines(self) -> list[str]:
        """Non-empty lines, stripped (for stages of one's own; the FineWeb stages split as datatrove does)."""
        return [s for s in (ln.strip() for ln in self.text.split("\n")) if s]

    @cached_property
    def paragraphs(self) -> list[str]:
        """Non-empty paragraphs (separated by blank lines), stripped."""
        return [s for s in (p.strip() for p in re.split(r"\n\s*\n", self.text)) if s]

    @cached_property
    def tokens(self) -> list[str]:
        """Words and punctuation marks as datatrove's FineWeb filters see them."""
        return script_tokens(self.text) if self.script_aware else rules_for(self.lang).tokens(self.text)

    @cached_property
    def words(self) -> list[str]:
        """Runs of letters or digits (``WORD_RE``; script-aware words where the view is), punctuation left out."""
        tokens = script_tokens(self.text) if self.script_aware else WORD_RE.findall(self.text)
        return [t for t in tokens if len(t) > 1 or t.isalnum()]  # a 1-character token is a word if alphanumeric

    @cached_property
    def words_lower(self) -> list[str]:
        return [w.lower() for w in self.words]


@dataclass(slots=True)
class FilterResult:
    reason: str | None = None
    signals: dict[str, float | int | str] = field(default_factory=dict)
    text: str | None = None  # replacement text from a modifying stage


KEEP = FilterResult()


Needs = Literal["url", "text"]


class StageSettings(BaseModel):
    """The settings every stage has; a stage's own settings model subclasses this.

    ``null`` (or ``enabled: false``) switches a stage off. ``languages`` limits a text stage to
    documents whose language ID label is in the list (``null`` = every document); a label in any
    spelling of :mod:`~raycorpus.process.filters.langcodes` (``nb``, ``nob_Latn``) is stored canonical,
    another model's label as written.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)
    enabled: bool = Field(True, description="run the stage (a section written as null also switches it off)")
    languages: list[str] | None = Field(None, description="apply only to these language labels (null = all)")

    @field_validator("languages")
    @classmethod
    def _canonical_languages(cls, languages: list[str] | None) -> list[str] | None:
        from raycorpus.process.filters.langcodes import canonical_or_raw

        return None if languages is None else [canonical_or_raw(label) for label in languages]


class Filter:
    """A stage of the quality chain (see the module doc for the two kinds of input).

    Class attributes declare what the chain needs to know; nothing is looked up by ``hasattr``:
    ``name`` (registry key and config section), ``settings`` (its model), ``needs`` (its input),
    ``counter_name`` (its name in counters, drop reasons and timers, if not ``name``), and
    ``all_signals``, which the chain sets in tag mode: a stage that can stop at its first failing
    rule must then compute every signal.
    """

    name: ClassVar[str] = ""
    settings: ClassVar[type[StageSettings]] = StageSettings
    needs: ClassVar[Needs] = "text"
    counter_name: ClassVar[str | None] = None
    all_signals: bool = False
    #: settings that only compare a recorded signal with a limit: ``raycorpus select`` may change them
    #: (:meth:`decide`); every other setting must be the tag run's
    thresholds: ClassVar[frozenset[str]] = frozenset()
    #: metadata keys the stage writes in filter mode too (its other signals are tag mode's only)
    metadata_keys: ClassVar[tuple[str, ...]] = ()
    #: select may switch the stage off: it neither rewrites the text nor sets what other stages read
    removable: ClassVar[bool] = False

    @classmethod
    def label(cls) -> str:
        """The stage's name in counters (``drop:<label>:<reason>``), drop reasons and timers."""
        return cls.counter_name or cls.name

    @classmethod
    def shared_resource(cls, settings: Any, storage: Storage | None) -> object | None:
        """What the stage needs that is built once per run and shared by every worker (e.g. an index
        built from files), or None. The runtime builds it once, puts one copy in the object store,
        and every worker's chain hands it to :meth:`create`."""
        return None

    @classmethod
    def language_settings(cls, lang: LanguageSettings) -> dict[str, Any]:
        """The fields of the stage's settings that a language's FineWeb-2 defaults set (field -> value);
        {} for a stage without language-dependent thresholds (see ``filters.language_defaults``)."""
        return {}

    @classmethod
    def create(cls, settings: Any, resource: object | None = None) -> Filter:
        """The stage as the chain builds it: ``cls(settings)``, or ``cls(settings, resource)`` when
        there is a shared resource."""
        return cls(settings) if resource is None else cls(settings, resource)

    @classmethod
    def select_problem(cls, tagged: Any, settings: Any) -> str | None:
        """The first of ``settings``' thresholds that the signals a run with ``tagged`` recorded cannot answer
        for (a field name), or None."""
        return None

    @classmethod
    def decide(cls, signals: Mapping[str, Any], settings: Any, recorded: str | None) -> str | None:
        """The drop reason under ``settings`` of a document whose signals a tag-mode run recorded
        (``recorded``: the reason it gave then, or None). A stage with ``thresholds`` re-applies them
        with the rule the live chain uses; this default (no thresholds) can only repeat the record."""
        return recorded

    @classmethod
    def signal_rule(cls, signal: str, settings: Any, lang: str | None) -> Callable[[float], bool] | None:
        """Whether a value of ``signal`` (as the stage records it) alone makes the stage drop a document labelled
        ``lang`` under ``settings``: the rule the report draws over the signal's histogram. None: no threshold
        applies to that signal."""
        return None


Rules = Iterator[tuple[str, float | int, str | None]]
"""(signal name, value, drop reason if the rule fails else None), in rule order."""


def evaluate(name: str, rules: Rules, all_signals: bool) -> FilterResult:
    """Collect the signals of ``rules``; the reason is the first failing rule's. Without
    ``all_signals``, stop at that rule (the rules are lazy, so the rest are never computed)."""
    signals: dict[str, float | int | str] = {}
    reason = None
    for key, value, failed in rules:
        signals[f"{name}.{key}"] = value
        if failed and reason is None:
            reason = failed
            if not all_signals:
                break
    return FilterResult(reason=reason, signals=signals)


class RuleFilter(Filter):
    """A text stage made of lazy rules: ``_signals`` yields (signal, value) in rule order and
    :meth:`verdict` names the reason a value fails (the one rule both the live chain and
    :meth:`decide` apply, so re-deciding from recorded signals matches a live run exactly)."""

    removable = True

    def __init__(self, cfg, all_signals: bool = False):
        self.cfg = cfg
        self.all_signals = all_signals

    def __call__(self, doc: Document, view: TextView) -> FilterResult:
        cfg, verdict = self.cfg, self.verdict
        rules = ((key, value, verdict(key, value, cfg)) for key, value in self._signals(view))
        return evaluate(self.name, rules, self.all_signals)

    def _signals(self, view: TextView) -> Iterator[tuple[str, float | int]]:
        raise NotImplementedError

    @staticmethod
    def verdict(key: str, value: Any, cfg: Any) -> str | None:
        """The reason signal ``key`` with ``value`` fails under ``cfg``, or None."""
        raise NotImplementedError

    @classmethod
    def decide(cls, signals: Mapping[str, Any], settings: Any, recorded: str | None) -> str | None:
        if recorded == "error":
            return recorded
        for key in cls.signal_names(settings):
            value = signals.get(f"{cls.name}.{key}")
            if value is None:
                raise KeyError(f"stage {cls.name}: the tag run recorded no signal {cls.name}.{key}")
            if reason := cls.verdict(key, value, settings):
                return reason
        return None

    @classmethod
    def signal_names(cls, cfg: Any) -> list[str]:
        """The signals ``_signals`` yields under ``cfg``, in rule order (the order reasons take)."""
        raise NotImplementedError

    @classmethod
    def signal_rule(cls, signal: str, settings: Any, lang: str | None) -> Callable[[float], bool] | None:
        key = signal.removeprefix(f"{cls.name}.")
        if key == signal or key not in cls.signal_names(settings):
            return None
        return lambda value: cls.verdict(key, value, settings) is not None
