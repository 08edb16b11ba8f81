"""`raycorpus select`: a tag-mode output re-thresholded gives the bytes of a filter-mode run with those
thresholds (shards, trainer formats, documents, dedup records, counts), without reading a WARC."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from raycorpus.ingest.storage import Storage
from raycorpus.process.select import SelectError, check_select_config, open_source
from tests.support.corpus import make_config, run

# thresholds that differ from the defaults in several stages (each changes which pages are kept here)
T = {
    "langid": {"threshold": 0.5, "keep": ["en", "de"]},
    "gopher_quality": {"min_words": 80, "max_symbol_word_ratio": 0.2},
    "gopher_repetition": {"dup_line_frac": 0.2},
    "c4": {"min_sentences": 3},
    "fineweb": {"min_line_punct_ratio": 0.3},
}
OUTPUT = {"documents": True, "format": ["megatron", "parquet"]}
COMPARED = ("shards", "documents", "megatron", "dedup")


def digests(out: Path) -> dict[str, str]:
    """sha256 of every file of the compared folders, by path under the output."""
    return {str(p.relative_to(out)): hashlib.sha256(p.read_bytes()).hexdigest()
            for d in COMPARED if (out / d).exists() for p in sorted((out / d).rglob("*")) if p.is_file()}


def counts(summary: dict) -> dict:
    return {k: summary["docs"][k] for k in ("in", "kept", "dropped")} | {"tokens": summary["tokens"]}


def select(cfg, source_path: Path) -> dict:
    from raycorpus.process.prepare import prepare_tokenizer
    from raycorpus.runtime.driver import run_build
    from raycorpus.runtime.select import select_work

    source = open_source(Storage(), str(source_path))
    check_select_config(source.config, cfg)
    return run_build(cfg, prepare_tokenizer(cfg).meta(), work=select_work(cfg, source), source=source.identity)


@pytest.fixture(scope="module")
def tagged(crawl, tmp_path_factory, ray_address):
    c, tok = crawl
    out = tmp_path_factory.mktemp("tagged") / "out"
    run(make_config(str(c.manifest_path), str(out), tok, output=OUTPUT, filters={"mode": "tag"}))
    return out


def test_select_is_byte_identical_to_a_filter_run_with_its_thresholds(crawl, tagged, reference, tmp_path):
    c, tok = crawl
    filtered = run(make_config(str(c.manifest_path), str(tmp_path / "filter"), tok, output=OUTPUT, filters=T))
    selected = select(make_config(str(c.manifest_path), str(tmp_path / "select"), tok, output=OUTPUT, filters=T),
                      tagged)
    assert counts(selected) == counts(filtered)
    assert counts(filtered)["dropped"] != reference[1]["docs"]["dropped"]  # T changed what is kept
    dropped = filtered["docs"]["dropped"]
    assert "lang:not_kept:de" not in dropped and "lang:en<0.5" in dropped  # langid keep and threshold
    assert dropped["gopher_quality:too_few_words"] > reference[1]["docs"]["dropped"]["gopher_quality:too_few_words"]
    ours, theirs = digests(tmp_path / "select"), digests(tmp_path / "filter")
    assert ours and any(k.startswith("documents/") for k in ours)
    assert ours == theirs
