"""Run configuration: one YAML file validated by pydantic models.

A bad config raises :class:`ConfigError` whose message names the field and what was
expected; the CLI turns it into exit code 2 before anything is started or written.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from raycorpus.ingest.storage import StorageConfig, is_remote, join_url
from raycorpus.process.dedup.settings import DedupConfig
from raycorpus.process.extract import RULES_OFF_AS_BEFORE, ExtractConfig
from raycorpus.process.filters.multilingual import defaults_apply, written_over_defaults
from raycorpus.process.filters.registry import DEFAULT_CHAIN
from raycorpus.process.filters.settings import FiltersConfig


class ConfigError(ValueError):
    """A configuration that cannot be used; the message names the field."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class InputConfig(_Model):
    manifest: str | None = Field(None, description="warc.paths(.gz) file: local path, s3:// or https:// url")
    prefix: str | None = Field(
        None, description="instead of a manifest: every WARC / WET file (*.warc, *.warc.gz, *.wet, *.wet.gz) under "
        "this local folder or s3:// prefix, in sorted order; each is named by its path relative to the prefix")
    base: str | None = Field(
        None,
        description="prefix each manifest line is joined to (e.g. s3://commoncrawl/ or "
        "https://data.commoncrawl.org/); empty = lines are relative to the manifest's folder",
    )
    limit: int | None = Field(None, ge=1, description="use only the first N manifest lines")
    format: Literal["warc", "wet"] = Field(
        "warc", description="warc: HTML responses, extracted here; wet: Common Crawl WET files (the conversion "
        "records' plain text: no extraction, the same filters, dedup and tokenizing)")

    @model_validator(mode="after")
    def _one_input(self) -> InputConfig:
        if bool(self.manifest) == bool(self.prefix):
            raise ValueError("set one of `manifest` (a warc.paths file) and `prefix` (a folder or s3:// prefix)")
        if self.prefix and self.base:
            raise ValueError("`base` goes with `manifest`: with `prefix` the WARCs are read under the prefix")
        if self.prefix and self.prefix.lower().startswith(("http://", "https://")):
            raise ValueError("`prefix` must be a local folder or s3:// prefix (HTTP cannot be listed): use a manifest")
        return self


MAX_STREAMING_SHARD_TOKENS = 2**29  # 2 GiB of uint32 tokens: under the 4 GiB of an MDS / litdata shard, with room


class ReportConfig(_Model):
    """``output.report``: the HTML report (``report.html``) and what the workers keep for it. ``report: false``
    is ``report: {enabled: false}``. Never part of the config fingerprint: the shards do not depend on it."""

    @model_validator(mode="before")
    @classmethod
    def _bool(cls, v: Any) -> Any:
        return {"enabled": v} if isinstance(v, bool) else v

    enabled: bool = Field(
        True, description="write report.html into the output when a run or select finishes or is interrupted (for "
        "the committed prefix); `raycorpus report OUTPUT` writes it at any time")
    samples_passed: int = Field(
        200, ge=0, le=100_000, description="documents that passed the filters kept for the report's document "
        "browser, chosen by a hash of their record id (the same whatever the worker count); dedup then labels each "
        "kept or duplicate")
    samples_per_reason: int = Field(
        20, ge=0, le=10_000, description="dropped documents kept per drop reason for the document browser")
    sample_chars: int = Field(3000, ge=100, le=1_000_000, description="characters of each sampled document's text kept")


class OutputConfig(_Model):
    path: str = Field(description="output folder or s3:// prefix")
    shard_size_tokens: int = Field(100_000_000, ge=1, description="close a shard once it holds this many tokens")
    documents: bool = Field(
        False, description="also write kept documents (text, url, record id, metadata) as documents/*.jsonl.zst"
    )
    format: list[Literal["megatron", "datatrove", "packed", "mds", "litdata", "parquet"]] = Field(
        default_factory=list,
        description="also write closed shards as megatron/, datatrove/, packed/ (rows of ctx_len + 1), mds/ "
        "(MosaicML streaming) or litdata/, and kept documents as documents/*.parquet; shards/ is always written",
    )
    ctx_len: int | None = Field(None, ge=1, le=2**24, description="sequence length of the packed format")
    report: ReportConfig = Field(ReportConfig(), description="the HTML report and its document samples")

    @field_validator("format", mode="before")
    @classmethod
    def _one_or_many(cls, v: Any) -> Any:
        return [v] if isinstance(v, str) else v

    @model_validator(mode="after")
    def _packed_needs_ctx(self) -> OutputConfig:
        if "packed" in self.format and not self.ctx_len:
            raise ValueError("format `packed` needs `ctx_len` (tokens per training sequence)")
        if len(set(self.format)) != len(self.format):
            raise ValueError("a format is listed twice")
        if {"mds", "litdata"} & set(self.format) and self.shard_size_tokens > MAX_STREAMING_SHARD_TOKENS:
            raise ValueError(f"formats mds and litdata address a shard with uint32 byte offsets: shard_size_tokens "
                             f"must be at most {MAX_STREAMING_SHARD_TOKENS:,}")
        return self


class WarcConfig(_Model):
    quirks_mode: bool = Field(True, description="lenient fastwarc parsing of malformed records (ClueWeb, old crawls)")
    max_record_bytes: int = Field(8 * 2**20, ge=1024, description="skip HTTP payloads larger than this")
    max_attempts: int = Field(3, ge=1, description="tries per WARC before it is listed as failed")
    retry_backoff_seconds: float = Field(
        2.0, ge=0, description="wait before retrying a failed WARC: this x 2^(attempt - 1), jittered by 0.5-1.5")
    timeout_seconds: float = Field(
        3600.0, gt=0, description="a WARC still processing after this long is abandoned (its worker is killed and "
        "replaced) and retried: a hung read or pathological page cannot wedge a worker"
    )


class TrainTokenizerConfig(_Model):
    vocab_size: int = Field(8192, ge=256, le=2**20, description="vocabulary size of the trained BPE (EOS included)")
    sample_docs: int = Field(20_000, ge=1, description="documents extracted from the first WARCs to train on")
    min_frequency: int = Field(2, ge=1, description="a pair merged into a token must occur at least this often")


class TokenizerConfig(_Model):
    path: str | None = Field(None, description="local tokenizer.json")
    name: str | None = Field(None, description="Hugging Face hub name (needs network)")
    eos: str = Field("<|endoftext|>", description="token appended after every document")
    train: TrainTokenizerConfig | None = Field(
        None, description="train a byte-level BPE on the input before the run when `path` does not exist"
    )

    @model_validator(mode="after")
    def _one_source(self) -> TokenizerConfig:
        if not self.path and not self.name:
            raise ValueError("set `path` (a tokenizer.json) or `name` (a hub tokenizer)")
        if self.path and self.name:
            raise ValueError("set only one of `path` and `name`")
        if self.train and not self.path:
            raise ValueError("`train` needs `path`: where the trained tokenizer.json is written")
        return self


class RayConfig(_Model):
    @model_validator(mode="before")
    @classmethod
    def _tokenizers_are_writers(cls, v: Any) -> Any:
        """``tokenizers`` (before 0.2: actors that encoded and wrote document files) is read as ``writers``:
        the workers tokenize now."""
        if isinstance(v, dict) and "tokenizers" in v:
            v = dict(v)
            n = v.pop("tokenizers")
            v.setdefault("writers", n)
        return v

    address: str | None = Field(None, description="cluster to join; default: RAY_ADDRESS if set, else start one")
    num_cpus: int | None = Field(None, ge=1, description="CPUs of a locally started Ray (default: all)")
    workers: int | None = Field(None, ge=1, description="extraction actors (default: one per cluster CPU)")
    max_workers: int | None = Field(None, ge=1, description="upper bound when the pool grows with the cluster")
    worker_cpus: float = Field(1.0, gt=0, description="CPUs each extraction worker reserves")
    writers: int | None = Field(
        None, ge=1, description="document writer actors (documents/, parquet, the dedup audit); default one per "
        "32 workers, re-checked with the pool; none when the output has no document files")
    writer_cpus: float = Field(
        0.0, ge=0, description="CPUs each document writer and each shard-closing task reserves (default none: "
        "writing is a few % of a worker's work, and Ray packs whole CPUs)")
    in_flight_per_worker: int = Field(2, ge=1, description="WARCs queued per worker (backpressure)")
    reorder_buffer: int | None = Field(
        None, ge=1, description="max WARCs finished but not yet committed (default 4 x workers)"
    )
    resize_interval_seconds: float = Field(10.0, gt=0, description="how often the pool re-checks cluster CPUs")
    object_store_memory: int | None = Field(
        None, ge=75 * 2**20, description="object store bytes of a locally started Ray (default: Ray's choice)")
    # a locally started Ray only (a joined cluster keeps its own settings): loopback unless asked otherwise
    loopback_only: bool = Field(
        True, description="a local Ray listens on 127.0.0.1 only (every port: metrics, dashboard, GCS, raylet)"
    )
    dashboard: bool = Field(False, description="start the Ray dashboard with a local Ray")
    dashboard_host: str = Field("127.0.0.1", description="address the local Ray dashboard binds to")
    metrics_export_port: int | None = Field(
        None, ge=1024, le=65535, description="Prometheus endpoint of a local Ray (default: Ray picks one)"
    )


class RunConfig(_Model):
    failure_budget: float = Field(
        0.0, ge=0, description="failed WARCs tolerated: a count (>= 1) or a fraction of the manifest (< 1)"
    )
    checkpoint_interval_seconds: float = Field(
        30.0, ge=0, description="write a ledger checkpoint at most this often (0 = after every WARC)"
    )
    progress: Literal["auto", "bar", "log", "off"] = Field(
        "auto", description="progress on stderr: a bar, a log line every 10 s or more, or nothing (auto: bar on a "
        "terminal, else log)")
    follow_interval_seconds: float = Field(
        60.0, gt=0, description="with `raycorpus run --follow`: how often the manifest is read again for new lines"
    )
    split_warcs: Literal["auto", "off"] | int = Field(
        "auto", description="cut each gzip WARC into this many record ranges that workers share (auto: only when "
        "the run has fewer WARCs than workers; off); the output is the same either way")

    @field_validator("progress", mode="before")
    @classmethod
    def _yaml_off(cls, v: Any) -> Any:
        return {False: "off", True: "auto"}.get(v, v) if isinstance(v, bool) else v  # YAML 1.1 reads `off` as false

    @field_validator("split_warcs", mode="before")
    @classmethod
    def _ranges(cls, v: Any) -> Any:
        v = cls._yaml_off(v)
        if v in ("auto", "off") or (isinstance(v, int) and v >= 1):
            return v
        raise ValueError("`auto`, `off` or a number of ranges >= 1")


class Config(_Model):
    input: InputConfig = Field(description="what to read: a manifest of WARC / WET files, or a prefix")
    output: OutputConfig = Field(description="where and what to write")
    tokenizer: TokenizerConfig = Field(description="the tokenizer, and training one on the input")
    warc: WarcConfig = Field(WarcConfig(), description="reading WARC files, and retrying them")
    extract: ExtractConfig = Field(ExtractConfig(), description="main-content extraction from HTML")
    filters: FiltersConfig = Field(FiltersConfig(), description="the quality chain")
    dedup: DedupConfig = Field(DedupConfig(), description="URL, exact and near-duplicate removal")
    storage: StorageConfig = Field(StorageConfig(), description="S3 and HTTP(S) connections and retries")
    ray: RayConfig = Field(RayConfig(), description="the Ray cluster and the actors' sizes")
    run: RunConfig = Field(RunConfig(), description="failure budget, checkpoints, progress, follow mode")

    @model_validator(mode="after")
    def _paragraphs_in_filter_mode(self) -> Config:
        if self.dedup.paragraphs.enabled and self.filters.mode == "tag":
            raise ValueError("dedup.paragraphs removes text, which tag mode keeps whole: use filters.mode: filter, "
                             "or turn it on in `raycorpus select` from the tag output")
        return self

    def fingerprint(self) -> str:
        """Hash of every setting that changes the output (not parallelism or progress)."""
        d = self.model_dump(mode="json")
        for k in ("ray", "run", "storage"):
            d.pop(k)
        d["input"].pop("limit")
        d["output"].pop("report")  # what the report samples never changes the shards
        if d["input"]["prefix"] is None:  # a manifest, the only input before `prefix` existed: the same fingerprint
            d["input"].pop("prefix")
        if d["input"]["format"] == "warc":  # the only input before `format` existed: the same fingerprint
            d["input"].pop("format")
        d["warc"].pop("max_attempts")
        d["warc"].pop("retry_backoff_seconds")
        d["warc"].pop("timeout_seconds")
        for key in ("shards", "expected_docs", "shard_memory", "shard_cpus", "shard_resources",
                    "placement_timeout_seconds"):
            d["dedup"].pop(key)
        if not d["dedup"]["url"]:  # before URL dedup: those outputs keep their fingerprint with `url: false`
            d["dedup"].pop("url")
        if d["dedup"]["signature_bits"] == 32:  # before 0.2 the only choice: those outputs keep their fingerprint
            d["dedup"].pop("signature_bits")
        for key, value in RULES_OFF_AS_BEFORE.items():  # extraction rules off: the output, and the fingerprint,
            if d["extract"][key] == value:  # of before they existed
                d["extract"].pop(key)
        if d["dedup"]["verify_sketch"] == "minhash":  # the only choice before verify_sketch: the same fingerprint
            d["dedup"].pop("verify_sketch")
        else:
            d["dedup"].pop("signature_bits", None)  # the OPH sketch does not use it
        if self.dedup.verify_sketch != "oph" or self.dedup.oph_bits == 1:  # 1 bit: the sketch of before oph_bits
            d["dedup"].pop("oph_bits")  # existed (and minhash does not use it): the same fingerprint
        if not d["dedup"]["verify_margin"]:  # likewise: 0 decides as before verify_margin
            d["dedup"].pop("verify_margin")
        if not d["dedup"]["index_duplicates"]:  # likewise: only kept documents were indexed before
            d["dedup"].pop("index_duplicates")
        if not d["dedup"]["against"]:  # a build against no earlier output: the output (and fingerprint) of before
            d["dedup"].pop("against")
        if not self.dedup.paragraphs.enabled:  # off, as before it existed: the same output and fingerprint
            d["dedup"].pop("paragraphs")
        if (d["filters"].get("c4") or {}).get("keep_paragraphs"):  # C4's join of before FineWeb's definitions:
            d["filters"]["c4"].pop("keep_paragraphs")  # its fingerprint (the definitions are run.json's filter_rules)
        if self.filters.stage_names == DEFAULT_CHAIN:  # no `chain`, or the default one: the same output,
            d["filters"].pop("chain")  # and the same fingerprint as before `chain` existed
        langid = d["filters"].get("langid") or {}  # `backend: auto` is resolved by now: the backend it means
        if langid.get("early_exit") is False:  # off, as before it existed: the same fingerprint
            d["filters"]["langid"].pop("early_exit")
        if langid.get("backend") == "fasttext":  # the only backend before it was a
            d["filters"]["langid"].pop("backend")  # setting: those outputs keep their fingerprint
        elif langid.get("backend") == "ensemble" and langid.get("keep") is not None:  # lingua with the kept scripts'
            d["filters"]["langid"]["lingua_languages"] = "kept scripts"  # languages only: not the output of before
        if not defaults_apply(self.filters):  # per-language defaults change nothing here (e.g. keep: [en]):
            d["filters"].pop("language_defaults")  # the fingerprint from before they existed
        elif written := written_over_defaults(self.filters):  # a written value wins over the table, even if
            d["filters"]["written_over_defaults"] = written  # it equals the stage's default: another output
        return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:16]

    def earlier_defaults(self) -> dict[str, str]:
        """The fingerprints this config had under earlier raycorpus defaults of settings it leaves unset, by what to
        write in the config to get each back: what a refused resume of an output started before names."""
        langid = self.filters.langid
        out = {}
        if langid.early_exit and "early_exit" not in langid.model_fields_set:
            off = langid.model_copy(update={"early_exit": False})
            before = self.model_copy(update={"filters": self.filters.model_copy(update={"langid": off})})
            out["filters: {langid: {early_exit: false}}"] = before.fingerprint()
        return out


def _field_path(loc: tuple[Any, ...]) -> str:
    return ".".join(str(p) for p in loc if not str(p).startswith("function-")) or "(top level)"


def format_validation_error(err: ValidationError, source: str) -> str:
    lines = [f"invalid config {source}:"]
    for e in err.errors():
        field = _field_path(e["loc"])
        msg = e["msg"]
        if e["type"] == "extra_forbidden":
            msg = "unknown field (check the spelling; see configs/ for the accepted fields)"
        got = e.get("input")
        got_s = "" if e["type"] in ("missing", "extra_forbidden") or isinstance(got, dict) else f" (got {got!r})"
        lines.append(f"  {field}: {msg}{got_s}")
    return "\n".join(lines)


def _resolve_local(value: str | None, base_dir: Path) -> str | None:
    """Local relative paths in a config file are relative to the file's folder."""
    if value is None or is_remote(value) or value.startswith("file://") or Path(value).is_absolute():
        return value
    return str((base_dir / value).resolve())


def load_config(path: str | Path, overrides: dict[str, Any] | None = None) -> Config:
    """Read and validate a YAML config; raise ConfigError naming the bad field."""
    p = Path(path)
    try:
        raw = yaml.safe_load(p.read_text())
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {p}") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"config {p} is not valid YAML: {e}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"config {p}: expected a mapping of sections (input, output, tokenizer, ...)")
    return config_from_dict(raw, source=str(p), base_dir=p.parent.resolve(), overrides=overrides)


def with_overrides(cfg: Config, overrides: dict[str, Any]) -> Config:
    """``cfg`` with dotted-path values replaced, validated again (``model_copy`` would not validate)."""
    return config_from_dict(cfg.model_dump(mode="json"), overrides=overrides)


def config_from_dict(
    raw: dict[str, Any],
    source: str = "<dict>",
    base_dir: Path | None = None,
    overrides: dict[str, Any] | None = None,
) -> Config:
    raw = json.loads(json.dumps(raw))  # deep copy, and rejects non-JSON values early
    for dotted, value in (overrides or {}).items():
        node = raw
        *parents, leaf = dotted.split(".")
        for key in parents:
            node = node.setdefault(key, {})
        node[leaf] = value
    try:
        cfg = Config.model_validate(raw)
    except ValidationError as e:
        raise ConfigError(format_validation_error(e, source)) from None
    if base_dir is not None:
        upd_in = {"manifest": _resolve_local(cfg.input.manifest, base_dir),
                  "prefix": _resolve_local(cfg.input.prefix, base_dir)}
        if cfg.input.base:
            upd_in["base"] = _resolve_local(cfg.input.base, base_dir)
        cfg = cfg.model_copy(
            update={
                "input": cfg.input.model_copy(update=upd_in),
                "output": cfg.output.model_copy(update={"path": _resolve_local(cfg.output.path, base_dir)}),
                "tokenizer": cfg.tokenizer.model_copy(
                    update={"path": _resolve_local(cfg.tokenizer.path, base_dir)}
                ),
                "dedup": cfg.dedup.model_copy(
                    update={"against": tuple(_resolve_local(p, base_dir) for p in cfg.dedup.against)}
                ),
            }
        )
    return cfg


def output_url(cfg: Config, *parts: str) -> str:
    url = cfg.output.path
    for part in parts:
        url = join_url(url, part)
    return url
