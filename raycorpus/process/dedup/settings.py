"""Dedup settings (the ``dedup:`` section of the config)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from raycorpus.process.dedup.minhash import PRESETS


class ParagraphDedupConfig(BaseModel):
    """``dedup.paragraphs``: paragraph-level dedup at commit (:mod:`raycorpus.process.dedup.paragraphs`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    enabled: bool = Field(
        False, description="remove every paragraph (line) seen before in manifest order, in a document that "
        "document-level dedup kept (the first occurrence stays: Dolma's and DCLM's paragraph dedup, online); off by "
        "default: on trafilatura-eval and the shared WARCs it removed no boilerplate snippet (docs/dedup.md)")
    min_chars: int = Field(
        32, ge=1, le=100_000, description="paragraphs of fewer word characters (what the normalised text keeps, "
        "spaces not counted) are never removed: headings, dates, 'Read more'")
    threshold: float = Field(
        0.8, gt=0, le=1, description="a document whose removed paragraphs hold at least this share of its "
        "characters is dropped whole (dedup:paragraphs), as DCLM's BFF drops a document at 0.8")


class DedupConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    url: bool = Field(True, description="drop documents whose normalised URL (lowercase scheme and host, no "
                      "default port, fragment or tracking parameters) equals an earlier kept one's")
    exact: bool = Field(True, description="drop documents whose normalised text equals an earlier one's")
    near: bool = Field(True, description="MinHash-LSH near-duplicate detection")
    preset: Literal["fineweb", "recall"] = Field(
        "fineweb", description="bands x rows: " + ", ".join(f"{k} {b}x{r}" for k, (b, r) in PRESETS.items())
    )
    bands: int | None = Field(None, ge=1, description="override the preset's band count")
    rows: int | None = Field(None, ge=1, description="override the preset's rows per band")
    num_perm: int = Field(112, ge=1, le=1024, description="MinHash permutations (>= bands x rows)")
    ngram: int = Field(5, ge=1, le=64, description="words per shingle")
    seed: int = Field(1, ge=0, description="seed of the MinHash permutations")
    verify: bool = Field(
        True, description="a band match is a duplicate only if the signatures' estimated Jaccard >= threshold"
    )
    threshold: float = Field(
        0.8, gt=0, le=1, description="estimated Jaccard similarity from which a verified candidate is a duplicate")
    signature_bits: Literal[16, 32] = Field(
        16, description="bits of each MinHash value the index keeps to verify candidates (b-bit MinHash: 16 gives "
        "the precision and recall of 32 on the labelled set, at half the memory)")
    verify_sketch: Literal["minhash", "oph"] = Field(
        "oph", description="what the index keeps to verify candidates: 'oph' = 192 B of one-permutation-hashing "
        "samples of oph_bits bits (less than the 224 B of 112 x 16 bits, and less noise in the estimate at J = 0.8), "
        "'minhash' = signature_bits of each of the num_perm MinHash values")
    oph_bits: Literal[1, 2, 4] = Field(
        2, description="bits of each sample of the OPH sketch, which takes 192 B whatever they are (1536 / oph_bits "
        "samples): 768 x 2 bits estimate J near 0.8 with less noise than 1536 x 1 on documents of under ~1,500 "
        "shingles (which leave many of 1536 bins empty) and as little on longer ones (chosen on the tuning halves of "
        "`raycorpus eval`'s near-duplicate sets); 1 = the sketch of before")
    verify_margin: float = Field(
        0.0125, ge=0, le=0.2, description="a candidate is a duplicate when its estimated Jaccard >= threshold + "
        "verify_margin: the estimate's noise near the threshold costs precision more than recall (chosen with "
        "oph_bits on the tuning halves of `raycorpus eval`'s two near-duplicate sets: the best recall at P >= 0.99 "
        "on both; 0.005 before)")
    index_duplicates: bool = Field(
        True, description="near duplicates are indexed too, so a later copy is found through any earlier copy "
        "(a document similar to a dropped version of a page, not to the kept one, is still a duplicate); they insert "
        "their band keys and sketch, not their URL key or content hash (URL and exact matches name kept documents)")
    shards: int | None = Field(
        None, ge=1, le=4096, description="LSH shard actors (default: one per 16 cluster CPUs); not part of the output"
    )
    expected_docs: int = Field(
        0, ge=0, description="documents the index will hold (e.g. from `raycorpus plan`): sizes the tables "
        "up front instead of growing them; 0 = grow as needed"
    )
    audit: bool = Field(False, description="write dropped duplicates and what they matched to exclusions/")
    against: tuple[str, ...] = Field(
        (), description="earlier, finished outputs (paths or s3:// prefixes) whose indexed "
        "documents come before this manifest's first WARC, in this order: their copies are dropped as "
        "dedup:prior_url / prior_exact / prior_near (and, with paragraphs, their paragraphs are seen); the earlier "
        "outputs are only read")
    shard_memory: int | None = Field(
        None, ge=2**20, description="bytes of Ray memory each LSH shard actor reserves (default: its share of "
        "expected_docs at 1.25 x the measured bytes per document; none when expected_docs is 0); not part of "
        "the output")
    shard_cpus: float = Field(
        0.0, ge=0, description="CPUs each LSH shard actor reserves (default none: a shard uses ~1 % of a core, and "
        "Ray packs whole CPUs, so a fraction would cost its node a worker); not part of the output")
    shard_resources: dict[str, float] = Field(
        default_factory=dict, description="custom Ray resources each LSH shard actor needs (e.g. {lsh: 1} to put "
        "shards on nodes started with --resources '{\"lsh\": N}'); offer it on more than one node: a shard whose "
        "only node is lost cannot start again (see placement_timeout_seconds); not part of the output")
    placement_timeout_seconds: float = Field(
        300.0, gt=0, description="how long an LSH shard actor may wait for a node to place it (at start, or "
        "replacing a lost one): past it the run stops (exit 1, the ledger consistent: rerun to resume) instead of "
        "waiting for a node with its shard_resources / memory / CPUs to join; a shard not placed within seconds "
        "is reported, naming what it needs and the nodes that offer it; not part of the output")

    paragraphs: ParagraphDedupConfig = Field(default_factory=ParagraphDedupConfig)

    @model_validator(mode="after")
    def _fits(self) -> DedupConfig:
        b, r = self.bands_rows
        if b * r > self.num_perm:
            raise ValueError(f"{b} bands x {r} rows need num_perm >= {b * r} (got {self.num_perm})")
        if self.against and not self.enabled:
            raise ValueError("against needs url, exact or near dedup on")
        if len(set(self.against)) != len(self.against):
            raise ValueError("against lists an output twice")
        if self.paragraphs.enabled and not self.enabled:
            raise ValueError("paragraphs needs url, exact or near dedup on (it runs on the documents they keep)")
        return self

    @property
    def bands_rows(self) -> tuple[int, int]:
        b, r = PRESETS[self.preset]
        return self.bands or b, self.rows or r

    @property
    def enabled(self) -> bool:
        return self.url or self.exact or self.near
