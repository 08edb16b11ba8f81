"""`raycorpus select`: a tag-mode output re-thresholded gives the bytes of a filter-mode run with those
thresholds (shards, trainer formats, documents, dedup records, counts), without reading a WARC."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from raycorpus.cli import main
from raycorpus.ingest.storage import Storage
from raycorpus.output.ledger import Ledger
from raycorpus.output.verify import format_checks, verify_output
from raycorpus.process.select import SelectError, check_select_config, open_source
from tests.support.corpus import make_config, run, shard_digests

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


def raw_config(crawl, out: Path, **filters) -> dict:
    c, tok = crawl
    return {"input": {"manifest": str(c.manifest_path)},
            "output": {"path": str(out), "shard_size_tokens": 5000, **OUTPUT},
            "tokenizer": {"path": tok}, "warc": {"retry_backoff_seconds": 0.1},
            "run": {"checkpoint_interval_seconds": 0, "progress": "off"}, "filters": filters}


@pytest.fixture(scope="module")
def tagged(crawl, tmp_path_factory, ray_address):
    c, tok = crawl
    out = tmp_path_factory.mktemp("tagged") / "out"
    run(make_config(str(c.manifest_path), str(out), tok, output=OUTPUT, filters={"mode": "tag"}))
    return out


@pytest.fixture(scope="module")
def filtered(crawl, tmp_path_factory, ray_address):
    """A filter-mode run with the thresholds T: what select must reproduce."""
    c, tok = crawl
    out = tmp_path_factory.mktemp("filtered") / "out"
    return out, run(make_config(str(c.manifest_path), str(out), tok, output=OUTPUT, filters=T))


def test_select_is_byte_identical_to_a_filter_run_with_its_thresholds(crawl, tagged, filtered, reference, tmp_path):
    c, tok = crawl
    filter_out, filtered = filtered
    selected = select(make_config(str(c.manifest_path), str(tmp_path / "select"), tok, output=OUTPUT, filters=T),
                      tagged)
    assert counts(selected) == counts(filtered)
    assert counts(filtered)["dropped"] != reference[1]["docs"]["dropped"]  # T changed what is kept
    dropped = filtered["docs"]["dropped"]
    assert "lang:not_kept:de" not in dropped and "lang:en<0.5" in dropped  # langid keep and threshold
    before = reference[1]["docs"]["dropped"].get("gopher_quality:too_few_words", 0)
    assert dropped["gopher_quality:too_few_words"] > before  # min_words 80 drops pages that 50 keeps
    ours, theirs = digests(tmp_path / "select"), digests(filter_out)
    assert ours and any(k.startswith("documents/") for k in ours)
    assert ours == theirs
    checks = verify_output(Storage(), str(tmp_path / "select"))
    assert all(c.ok for c in checks), format_checks(checks)



def test_select_turns_on_paragraph_dedup_with_its_own_threshold_byte_identical_to_a_filter_run(crawl, tagged,
                                                                                             tmp_path):
    """A tag output keeps text whole; select cuts and keys the paragraphs of what it keeps, as the filter-mode
    worker does, and decides them in manifest order with select's own length and threshold."""
    c, tok = crawl
    outs = {}
    for threshold in (0.3, 0.9):
        dedup = {"paragraphs": {"enabled": True, "min_chars": 16, "threshold": threshold}}
        filter_out, select_out = tmp_path / f"filter{threshold}", tmp_path / f"select{threshold}"
        filtered = run(make_config(str(c.manifest_path), str(filter_out), tok, output=OUTPUT, filters=T, dedup=dedup))
        selected = select(make_config(str(c.manifest_path), str(select_out), tok, output=OUTPUT, filters=T,
                                      dedup=dedup), tagged)
        assert counts(selected) == counts(filtered)
        assert selected["dedup_paragraphs"] == filtered["dedup_paragraphs"]
        assert selected["dedup_paragraphs"]["removed"] > 0
        assert digests(select_out) == digests(filter_out)
        assert shard_digests(select_out) == shard_digests(filter_out)  # the cluster sizes too
        checks = verify_output(Storage(), str(select_out))
        assert all(c.ok for c in checks), format_checks(checks)
        outs[threshold] = selected
    low, high = (outs[t]["docs"]["dropped"].get("dedup:paragraphs", 0) for t in (0.3, 0.9))
    assert low > high  # the threshold is select's: a lower one drops more documents
    assert outs[0.3]["tokens"] < outs[0.9]["tokens"]


# every language kept: the de/fr/es/ru/ja/zh pages run with FineWeb-2's settings for their language
# (filters.language_defaults: fineweb2); some thresholds changed are fields those settings set
# (backend: fasttext, the tag run's: keep: null alone would mean the ensemble, which select cannot replay)
T_LANGS = {"langid": {"keep": None, "backend": "fasttext"}, "gopher_quality": {"min_words": 60},
           "fineweb": {"max_short_line_ratio": 0.5}, "gopher_repetition": {"dup_line_frac": 0.2}}


def test_select_is_byte_identical_with_every_language_under_its_fineweb2_settings(crawl, tagged, tmp_path):
    c, tok = crawl
    filter_out, select_out = tmp_path / "filter", tmp_path / "select"
    filtered = run(make_config(str(c.manifest_path), str(filter_out), tok, output=OUTPUT, filters=T_LANGS))
    selected = select(make_config(str(c.manifest_path), str(select_out), tok, output=OUTPUT, filters=T_LANGS), tagged)
    assert counts(selected) == counts(filtered)
    dropped = filtered["docs"]["dropped"]
    assert any(k.endswith("]") for k in dropped), dropped  # a drop under a language's own settings
    assert digests(select_out) == digests(filter_out)


@pytest.mark.slow  # three builds (~40 s)
def test_select_from_a_wet_tag_output_is_byte_identical_to_a_wet_filter_run(crawl, tmp_path, ray_address):
    """input.format: wet: the tag output keeps no extraction drops (there is no extraction) and select
    replays it like any other."""
    from tests.support.wet import wet_manifest

    c, tok = crawl
    manifest = str(wet_manifest(c.warc_paths, tmp_path / "wet"))
    outs = {name: tmp_path / name for name in ("tag", "filter", "select")}
    wet = {"format": "wet"}
    run(make_config(manifest, str(outs["tag"]), tok, input=wet, output=OUTPUT, filters={"mode": "tag"}))
    filtered = run(make_config(manifest, str(outs["filter"]), tok, input=wet, output=OUTPUT, filters=T))
    selected = select(make_config(manifest, str(outs["select"]), tok, input=wet, output=OUTPUT, filters=T),
                      outs["tag"])
    assert counts(selected) == counts(filtered) and selected["charset_sources"] == filtered["charset_sources"]
    assert digests(outs["select"]) == digests(outs["filter"])

@pytest.mark.slow
def test_select_killed_mid_run_resumes_to_the_same_bytes(crawl, tagged, filtered, tmp_path):
    """The driver is SIGKILLed when a worker reaches WARC #4; the same command resumes and reads no committed
    WARC again."""
    filter_out, filter_summary = filtered
    out = tmp_path / "select"
    cfg_path = tmp_path / "select.yaml"
    cfg_path.write_text(json.dumps(raw_config(crawl, out, **T) | {"ray": {"workers": 1}}))
    cmd = [sys.executable, "-m", "raycorpus.cli", "select", str(tagged), str(cfg_path)]
    killed = subprocess.run(cmd, capture_output=True, text=True, timeout=300,
                            env={**os.environ, "RAYCORPUS_FAULT": "processed:4"})
    assert killed.returncode == -9, killed.stderr[-2000:]
    before = Ledger(Storage(), str(out)).load()
    assert before.next_ordinal < 8
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    s = json.loads((out / "summary.json").read_text())
    assert s["this_run"]["resumed_at"] == before.next_ordinal
    assert counts(s) == counts(filter_summary)
    assert digests(out) == digests(filter_out)


def test_select_refuses_a_changed_rewriting_stage_and_a_source_that_is_not_tagged(crawl, tagged, reference,
                                                                                  tmp_path, capsys):
    cfg_path = tmp_path / "pii.yaml"
    cfg_path.write_text(json.dumps(raw_config(crawl, tmp_path / "pii", pii={"email": False})))
    assert main(["select", str(tagged), str(cfg_path)]) == 2
    assert "filters.pii.email" in capsys.readouterr().err
    assert not (tmp_path / "pii").exists()  # refused before anything was written
    cfg_path.write_text(json.dumps(raw_config(crawl, tmp_path / "x", **T)))
    assert main(["select", str(reference[0]), str(cfg_path)]) == 2
    assert "not a tag-mode output" in capsys.readouterr().err
    with pytest.raises(SelectError, match="not a raycorpus output"):
        open_source(Storage(), str(tmp_path / "nothing"))


def test_select_refuses_a_tag_output_of_other_filter_definitions(tagged, tmp_path):
    """A tag run recorded the signals of its quality stages' definitions: select decides with this raycorpus's,
    so a tag output of another revision (or of before the record) is refused, naming both."""
    import shutil

    from raycorpus.process.filters.base import FILTER_RULES

    old = tmp_path / "old-tagged"
    shutil.copytree(tagged, old)
    info = json.loads((old / "run.json").read_text())
    (old / "run.json").write_text(json.dumps({k: v for k, v in info.items() if k != "filter_rules"}))
    with pytest.raises(SelectError, match=f"revision 1; this raycorpus decides with revision {FILTER_RULES}"):
        open_source(Storage(), str(old))
    assert open_source(Storage(), str(tagged)).path == str(tagged)


def test_a_select_output_refuses_to_resume_from_another_source(tmp_path):
    from raycorpus.output.ledger import LedgerError
    from raycorpus.runtime.driver import check_run_identity

    ledger = Ledger(Storage(), str(tmp_path / "out"))
    run_info = {"config_fingerprint": "f", "manifest": "m", "warcs": 8,
                "source": {"path": "/a", "config_fingerprint": "1"}}
    check_run_identity(ledger, run_info)
    check_run_identity(ledger, run_info)  # the same source: resumes
    with pytest.raises(LedgerError, match="different source"):
        check_run_identity(ledger, run_info | {"source": {"path": "/a", "config_fingerprint": "2"}})
