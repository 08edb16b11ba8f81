"""``raycorpus select``, the core: a filter-mode corpus from a tag-mode output, without the WARCs.

A tag-mode run keeps every document with every stage's signals and the reasons it would drop it
(``would_drop``), and beside them what dedup needs (:mod:`raycorpus.process.tagrecord`). Select
re-decides each document under its own config's thresholds with the stages' own rules
(:meth:`Filter.decide`), and gives, per WARC, exactly the :class:`WarcResult` a filter-mode worker
with that config would have given: the kept documents (text, filter-mode metadata), their content
hashes and MinHash signatures, the counters; with paragraph dedup, the paragraphs cut and keyed from the
text as the worker does. Everything after that (dedup in manifest order, tokens, shards, formats, ledger) is
the build's own machinery, so ``select(tag output, T)`` is byte-identical to a filter-mode ``run`` with ``T``.

A setting can change only if the record answers for it: a stage's ``thresholds`` (a signal compared with a
limit), a stage that only reads the URL (run again on the URL), the tokenizer, the output, and dedup's
decisions (``dedup.paragraphs`` too: on or off, its length and threshold). Everything the documents' text or
the recorded signals depend on (extraction, the chain, a rewriting stage such as ``pii``, dedup's signature
settings) must be the tag run's: :func:`check_select_config` names the first that differs.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from raycorpus import counts as ck
from raycorpus.config import Config, ConfigError
from raycorpus.ingest.storage import NotFound, Storage, join_url
from raycorpus.output.docfiles import DOCUMENTS_DIR, read_jsonl_zst
from raycorpus.output.ledger import RUN_FILE, Ledger
from raycorpus.process.dedup.paragraphs import ParagraphHasher
from raycorpus.process.dedup.urlkey import url_key
from raycorpus.process.document import Document
from raycorpus.process.filters import Filter, FiltersConfig
from raycorpus.process.filters.base import FILTER_RULES
from raycorpus.process.filters.multilingual import language_settings, table_labels
from raycorpus.process.filters.registry import stages
from raycorpus.process.pipeline import encode_result
from raycorpus.process.profile import ProfileRecorder, SampleBounds
from raycorpus.process.results import WarcResult
from raycorpus.process.tagrecord import (
    CONFIG_FILE,
    EXPLICIT,
    TAGS_DIR,
    kept_config,
    read_tag_config,
    read_tag_record,
    record_url,
)
from raycorpus.process.tokenize import TokenEncoder

#: settings that select may change (dotted paths; a stage's ``thresholds`` are added per stage)
FREE = ("output", "tokenizer", "filters.mode", "filters.exclusions", "warc.max_attempts",
        "warc.retry_backoff_seconds", "warc.timeout_seconds", "dedup.enabled", "dedup.exact", "dedup.preset",
        "dedup.bands", "dedup.rows", "dedup.verify", "dedup.threshold", "dedup.signature_bits", "dedup.shards",
        "dedup.expected_docs", "dedup.audit", "dedup.shard_memory", "dedup.shard_cpus", "dedup.shard_resources",
        "dedup.placement_timeout_seconds", "dedup.paragraphs")
TAG_ONLY = ("id", "would_drop", "dedup")  # metadata a tag-mode output adds (ids are given again)


class SelectError(ValueError):
    """The source cannot be selected from (not a finished tag-mode output, or it lacks what select reads)."""


@dataclass(frozen=True)
class SelectSource:
    """A finished tag-mode output select reads: where, what it was built with, its failed WARCs."""

    path: str
    config: dict  # the tag run's config (tags/config.json)
    fingerprint: str  # the tag run's config fingerprint (run.json): a resumed select refuses another source
    failed: dict[int, str] = field(default_factory=dict)  # ordinal -> error

    @property
    def identity(self) -> dict:
        return {"path": self.path, "config_fingerprint": self.fingerprint}


def open_source(storage: Storage, path: str) -> SelectSource:
    """Check that ``path`` is a finished tag-mode output with what select reads, and describe it."""
    ledger = Ledger(storage, path)
    run = ledger.read_run()
    if run is None:
        raise SelectError(f"{path} is not a raycorpus output (no {RUN_FILE})")
    config = read_tag_config(storage, path)
    if config is None or config.get("filters", {}).get("mode") != "tag":
        raise SelectError(f"{path} is not a tag-mode output with select's data (no {TAGS_DIR}/{CONFIG_FILE}): "
                          "build it with filters.mode: tag")
    if (revision := run.get("filter_rules", 1)) != FILTER_RULES:
        raise SelectError(f"{path} recorded the signals of the quality stages' definitions of revision {revision}; "
                          f"this raycorpus decides with revision {FILTER_RULES} (FineWeb's): rebuild the tag run "
                          "with this version, or select with the raycorpus that built it")
    out = config["output"]
    if not (out.get("documents") or "parquet" in out.get("format", [])):
        raise SelectError(f"{path} has no document files: build the tag run with output.documents: true")
    state = ledger.load()
    if not state.complete:
        raise SelectError(f"{path} is not finished ({state.next_ordinal} of {run.get('warcs')} WARCs committed): "
                          "resume the tag run first")
    first = next((e["ordinal"] for e in ledger.iter_entries() if e.get("status") == "committed"), None)
    if first is not None and not storage.exists(record_url(path, first)):
        raise SelectError(f"{path} lacks the tag records select reads ({TAGS_DIR}/{first:09d}.npz): rebuild it "
                          "in tag mode with this version")
    failed = {int(f["ordinal"]): str(f.get("error", "")) for f in state.failed}
    return SelectSource(path, config, run["config_fingerprint"], failed)


def free_fields(cfg: Config) -> set[str]:
    """The dotted settings select may change under ``cfg``'s chain."""
    free = set(FREE)
    if not cfg.dedup.near:  # no signatures read: any the tag run kept (or none) will do
        free.update(("dedup.near", "dedup.num_perm", "dedup.ngram", "dedup.seed"))
    registry = stages()
    for name in cfg.filters.stage_names:
        cls, settings = registry[name], cfg.filters.section(name)
        if cls.needs == "url" or (cls.removable and not settings.enabled):
            free.add(f"filters.{name}")  # run again on the record's URL, or switched off
        elif settings.enabled:
            free.update(f"filters.{name}.{field}" for field in cls.thresholds)
    return free


def check_select_config(tag_dump: dict, cfg: Config) -> None:
    """Raise :class:`ConfigError` naming the first setting of ``cfg`` that differs from the tag run's
    and that the tag output cannot answer for."""
    if cfg.filters.mode != "filter":
        raise ConfigError("filters.mode: select writes a filter-mode corpus; set mode: filter")
    if cfg.filters.exclusions.enabled:
        raise ConfigError("filters.exclusions.enabled: select cannot write exclusions (a tag-mode output keeps "
                          "no text as it stood when a stage dropped it); set enabled: false")
    if tag_dump.get("filters", {}).get("mode") != "tag":
        raise SelectError("the source was not built with filters.mode: tag")
    free = free_fields(cfg)
    if tag_dump.get("dedup", {}).get("url"):  # the tag run keyed every document's URL: either choice replays
        free.add("dedup.url")
    if (path := _first_difference(kept_config(tag_dump), kept_config(cfg.model_dump(mode="json")), free)):
        if path == "filters.langid.backend":  # most often `backend: auto`, resolved by another `keep`
            tagged_with = tag_dump["filters"]["langid"]["backend"]
            raise ConfigError(f"{path}: the tag run labelled languages with {tagged_with}, and these langid settings "
                              f"mean {cfg.filters.langid.backend} (backend: auto follows `keep`); write backend: "
                              f"{tagged_with} to re-decide from the tag run's labels")
        if path == "filters.langid.early_exit":  # a tag run from before the early exit's default (off) or after
            tagged_with = str(bool(tag_dump["filters"]["langid"].get("early_exit"))).lower()
            raise ConfigError(f"{path}: the tag run predicted languages with early_exit: {tagged_with} (off was the "
                              f"default before it was on); write early_exit: {tagged_with} to re-decide from the tag "
                              "run's labels")
        raise ConfigError(f"{path}: differs from the tag run's, and select can only change thresholds "
                          f"(see docs/quality.md, raycorpus select); use the tag run's value")
    tagged = tag_filters(tag_dump)
    for cls, settings in cfg.filters.enabled_stages():
        if (field := cls.select_problem(tagged.section(cls.name), settings)) is not None:
            raise ConfigError(f"filters.{cls.name}.{field}: the tag run did not record the signals this needs "
                              f"({getattr(settings, field)!r}); use values the tag run measured")
    if (problem := language_problem(tagged, cfg.filters)) is not None:
        raise ConfigError(problem)


def tag_filters(tag_dump: dict) -> FiltersConfig:
    """The tag run's ``filters`` section, validated again from the fields its stage sections wrote (so
    FineWeb-2's per-language values fill the others as they did in the tag run; an output without that
    list counts every field as written)."""
    filters = dict(tag_dump["filters"])
    for name, fields in tag_dump.get(EXPLICIT, {}).items():
        if isinstance(filters.get(name), dict):  # (langid's early_exit as the tag run resolved it: its default moved)
            kept = {*fields, "early_exit"} if name == "langid" else set(fields)
            filters[name] = {k: v for k, v in filters[name].items() if k in kept}
    return FiltersConfig.model_validate(filters)


def language_problem(tagged: FiltersConfig, filters: FiltersConfig) -> str | None:
    """With ``language_defaults: fineweb2``: the first stage field whose value for some language (the
    config's, or FineWeb-2's where the config writes none) the tag run's signals cannot answer for (a
    non-threshold field such as ``stop_words`` that differs, an n-gram size not measured): an error text
    naming the field and the language, or None."""
    if filters.language_defaults != "fineweb2":
        return None
    for cls, settings in filters.enabled_stages():
        if cls.needs != "text" or cls.language_settings is Filter.language_settings:
            continue
        old = tagged.section(cls.name)
        for lang in table_labels():
            mine = language_settings(cls, settings, lang) or settings
            theirs = language_settings(cls, old, lang) or old
            field = cls.select_problem(theirs, mine) or next(
                (f for f in type(mine).model_fields if f not in cls.thresholds
                 and getattr(mine, f) != getattr(theirs, f)), None)
            if field is not None:
                return (f"filters.{cls.name}.{field}: for documents labelled {lang} this config gives "
                        f"{getattr(mine, field)!r} (its value, or FineWeb-2's where the section writes none: "
                        f"filters.language_defaults: fineweb2), the tag run measured with {getattr(theirs, field)!r}; "
                        "select cannot re-decide that: write the field, or leave it out, as the tag run did")
    return None


def _first_difference(old: Any, new: Any, free: set[str], path: str = "") -> str | None:
    if path in free:
        return None
    if isinstance(old, dict) and isinstance(new, dict):
        for key in [*old, *(k for k in new if k not in old)]:
            sub = f"{path}.{key}" if path else str(key)
            if (found := _first_difference(old.get(key), new.get(key), free, sub)) is not None:
                return found
        return None
    return None if old == new else path


class SelectProcessor:
    """A worker's processor for ``raycorpus select``: ``process(ordinal, url)`` reads WARC ``ordinal``'s
    documents and record from the tag output ``source`` and returns the filter-mode result."""

    chain = None  # the runtime asks a processor for its chain (tag mode): select is filter mode

    def __init__(self, cfg: Config, source: SelectSource, encoder: TokenEncoder | None = None):
        self.cfg, self.source, self.encoder = cfg, source.path, encoder
        self.report = cfg.output.report
        self.failed = source.failed  # ordinal -> error of the WARCs the tag run listed as failed
        self.storage = Storage(cfg.storage)
        enabled = cfg.filters.enabled_stages()
        self.url_stages = [cls.create(settings) for cls, settings in enabled if cls.needs == "url"]
        self.text_stages = [(cls, settings, frozenset(settings.languages) if settings.languages else None)
                            for cls, settings in enabled if cls.needs == "text"]
        tagged = [cls for cls, _ in tag_filters(source.config).enabled_stages() if cls.needs == "text"]
        self.signal_keys = _signal_filter(tagged, [cls for cls, _, _ in self.text_stages])
        self.near = cfg.dedup.near
        self.url_dedup = cfg.dedup.url
        d = cfg.dedup.paragraphs
        self.paragraphs = ParagraphHasher(d.min_chars) if d.enabled else None
        # (stage index, language) -> its settings with FineWeb-2's values for the language, None if the same
        self.languages: dict[tuple[int, str], Any] | None = {} if cfg.filters.language_defaults == "fineweb2" else None

    def process(self, ordinal: int, url: str, part: None = None, bounds: SampleBounds | None = None) -> WarcResult:
        """WARC ``ordinal``'s filter-mode result (select never cuts a WARC: ``part`` is None); ``bounds``: the
        report's sample bounds."""
        t0 = time.perf_counter()
        if ordinal in self.failed:
            raise SelectError(f"the tag run listed this WARC as failed: {self.failed[ordinal]}")
        rec = read_tag_record(self.storage, self.source, ordinal)
        docs = read_documents(self.storage, self.source, ordinal)
        if len(docs) != len(rec.hashes):
            raise SelectError(f"WARC #{ordinal}: {len(docs)} documents but {len(rec.hashes)} hashes in the tag output")
        for i, text in rec.texts.items():  # what the document files could not hold exactly (lone surrogates)
            docs[i].text = text
        r = self.report
        recorder = (ProfileRecorder(ordinal, r.samples_passed, r.samples_per_reason, r.sample_chars, bounds)
                    if r.enabled else None)
        counts = Counter({k: v for k, v in rec.counts.items() if not _redecided(k)})
        for page_url, reason in rec.failed:
            if not self._url_drop(page_url, counts, recorder):
                counts[ck.drop("extract", reason)] += 1
                if recorder is not None:
                    recorder.dropped(page_url, page_url, f"extract:{reason}", None)  # no record id kept: the URL
        kept, out = [], []
        for i, doc in enumerate(docs):
            if not self._url_drop(doc.url, counts, recorder, doc) and not self._drop(doc, counts, recorder):
                kept.append(i)
                out.append(self._filter_mode_doc(doc))
                if recorder is not None:
                    recorder.decided(out[-1], len(out) - 1)
        if kept:
            counts[ck.KEPT] += len(kept)
        sigs = rec.signatures[kept] if self.near and rec.signatures is not None else None
        result = WarcResult(ordinal, url, out, rec.hashes[kept].astype(np.uint64), sigs, counts, rec.bytes_read, 0.0)
        if self.url_dedup:  # the filter-mode worker's keys: the documents' URLs as the record gave them
            result.url_hashes = np.array([url_key(d.url) for d in out], dtype=np.uint64)
        if self.encoder is not None:  # (with paragraph dedup, as the filter-mode worker cuts and keys them)
            encode_result(result, self.encoder, self.paragraphs)
        if recorder is not None:
            result.profile = recorder.finish(result.lengths)
        result.seconds = time.perf_counter() - t0
        return result

    def _url_drop(self, url: str, counts: Counter, recorder: ProfileRecorder | None = None,
                  doc: Document | None = None) -> bool:
        """The URL stages under select's settings, as the live chain runs them in filter mode."""
        for stage in self.url_stages:
            try:
                reason = stage(url)
            except Exception:
                reason = "error"
            if reason:
                key = _drop_key(stage, reason)
                counts[key] += 1
                if recorder is not None:
                    recorder.dropped(url, doc.record_id if doc is not None else url, key.label, None)
                return True
        return False

    def _drop(self, doc: Document, counts: Counter, recorder: ProfileRecorder | None = None) -> bool:
        """The text stages re-decided from the recorded signals, first drop wins (as in filter mode)."""
        meta = doc.metadata
        recorded = recorded_reasons(meta.get("would_drop") or [])
        lang = meta.get("lang")
        for i, (cls, settings, langs) in enumerate(self.text_stages):
            if langs is not None and lang not in langs:
                continue
            suffix = ""
            own = self._language_settings(i, cls, settings, lang) if isinstance(lang, str) else None
            if own is not None:
                settings, suffix = own, f"[{lang}]"  # as the live chain names the language
            reason = cls.decide(meta, settings, recorded.get(cls.label()))
            if recorder is not None:  # the signals the stage recorded, as the live chain reports them
                for key in filter(stage_signal(cls), meta):
                    recorder.signal(key, meta[key], lang if isinstance(lang, str) else None)
            if reason:
                key = _drop_key(cls, reason if reason == "error" else reason + suffix)
                counts[key] += 1
                if recorder is not None:
                    recorder.dropped(doc.url, doc.record_id, key.label, doc)
                return True
        return False

    def _language_settings(self, index: int, cls: type[Filter], settings: Any, lang: str) -> Any:
        """Text stage ``index``'s settings for documents labelled ``lang`` (cached), None when the same."""
        if self.languages is None:
            return None
        key = (index, lang)
        if key not in self.languages:
            self.languages[key] = language_settings(cls, settings, lang)
        return self.languages[key]

    def _filter_mode_doc(self, doc: Document) -> Document:
        meta = {k: v for k, v in doc.metadata.items() if k not in TAG_ONLY and not self.signal_keys(k)}
        return Document(doc.text, doc.url, doc.record_id, doc.date, meta)


def stage_signal(cls: type[Filter]):
    """A predicate: is a metadata key one of the signals stage ``cls`` records (``gopher_quality.words``, or
    one of its ``metadata_keys`` such as ``lang_score``)?"""
    return lambda key: key.split(".", 1)[0] == cls.name or key in cls.metadata_keys


def _redecided(key: ck.Key) -> bool:
    """Counters select computes again: tags, kept, extraction drops (a URL stage may now drop first)."""
    return key.kind is ck.Kind.TAG or key == ck.KEPT or (key.kind is ck.Kind.DROP and key.name == "extract")


def _drop_key(stage: Filter | type[Filter], reason: str) -> ck.Key:
    return ck.drop("error", stage.label()) if reason == "error" else ck.drop(stage.label(), reason)


def recorded_reasons(would_drop: list[str]) -> dict[str, str]:
    """Stage label -> the reason the tag run recorded (``error`` for a stage that raised)."""
    out: dict[str, str] = {}
    for label in would_drop:
        name, _, reason = label.partition(":")
        if name == "error":
            out.setdefault(reason, "error")
        else:
            out.setdefault(name, LANG_SUFFIX.sub("", reason))  # stop_words[de]: the rule's reason
    return out


LANG_SUFFIX = re.compile(r"\[[^\]]*]$")


def _signal_filter(tagged: list[type[Filter]], running: list[type[Filter]]) -> Any:
    """A predicate: is a metadata key a signal of one of the ``tagged`` stages that filter mode does not
    write (a tag-only signal, or any key of a stage select switched off)?"""
    names = {cls.name for cls in tagged}
    keep = {key for cls in running for key in cls.metadata_keys}
    return lambda key: key not in keep and (key in names or key.split(".", 1)[0] in names)


def read_documents(storage: Storage, source: str, ordinal: int) -> list[Document]:
    """WARC ``ordinal``'s documents in a tag-mode output: documents/*.jsonl.zst, else the parquet file."""
    folder = join_url(source, DOCUMENTS_DIR)
    try:
        rows = read_jsonl_zst(storage, join_url(folder, f"{ordinal:09d}.jsonl.zst"))
    except (NotFound, FileNotFoundError):
        rows = _read_parquet(storage, join_url(folder, f"{ordinal:09d}.parquet"))
    return [Document(r["text"], r["url"], r["record_id"], r["date"], r["metadata"]) for r in rows]


def _read_parquet(storage: Storage, url: str) -> list[dict]:
    import io
    import json

    import pyarrow.parquet as pq

    table = pq.read_table(io.BytesIO(storage.read_bytes(url)), columns=["text", "url", "record_id", "date",
                                                                         "metadata"])
    return [{**r, "metadata": json.loads(r["metadata"])} for r in table.to_pylist()]
