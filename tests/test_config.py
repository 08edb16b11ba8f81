"""Config validation: every bad config names its field; the CLI exits 2 before starting anything."""

import pytest

from raycorpus.config import ConfigError, config_from_dict, load_config
from tests.support.cli import MINIMAL, run_config

GOOD = {
    "input": {"manifest": "m.txt"},
    "output": {"path": "out"},
    "tokenizer": {"path": "tok.json"},
}


def test_minimal_config_gets_defaults(tmp_path):
    cfg = config_from_dict(GOOD, base_dir=tmp_path)
    assert cfg.output.shard_size_tokens == 100_000_000
    assert cfg.extract.main_content is True
    assert cfg.input.manifest == str(tmp_path / "m.txt")  # relative to the config's folder
    assert cfg.warc.max_attempts == 3


@pytest.mark.parametrize(
    "patch, field, expected",
    [
        ({"output": {"path": "o", "shard_size_tokens": 0}}, "output.shard_size_tokens", "greater than or equal to 1"),
        ({"output": {"path": "o", "shard_size_tokens": "big"}}, "output.shard_size_tokens", "valid integer"),
        ({"input": {}}, "input", "set one of `manifest` (a warc.paths file) and `prefix`"),
        ({"extract": {"main_contnet": True}}, "extract.main_contnet", "unknown field"),
        ({"ray": {"workers": -1}}, "ray.workers", "greater than or equal to 1"),
        ({"tokenizer": {"eos": "x"}}, "tokenizer", "set `path`"),
        ({"run": {"progress": "fancy"}}, "run.progress", "'auto', 'bar', 'log' or 'off'"),
        ({"storage": {"max_attempts": 0}}, "storage.max_attempts", "greater than or equal to 1"),
        ({"dedup": {"paragraphs": {"enabled": True, "threshold": 0}}}, "dedup.paragraphs.threshold", "greater than 0"),
        ({"dedup": {"paragraphs": {"enabled": True}, "url": False, "exact": False, "near": False}}, "dedup",
         "paragraphs needs url, exact or near dedup on"),
        ({"dedup": {"paragraphs": {"enabled": True}}, "filters": {"mode": "tag"}}, "(top level)",
         "dedup.paragraphs removes text, which tag mode keeps whole"),
    ],
)
def test_bad_fields_are_named(patch, field, expected):
    raw = {**GOOD, **patch}
    with pytest.raises(ConfigError) as e:
        config_from_dict(raw)
    msg = str(e.value)
    assert f"  {field}:" in msg or f"  {field}" in msg
    assert expected in msg


def test_yaml_errors(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text("input: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(p)
    p.write_text("- a list\n")
    with pytest.raises(ConfigError, match="expected a mapping"):
        load_config(p)
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "missing.yaml")


def test_fingerprint_ignores_parallelism_not_output_settings():
    a = config_from_dict(GOOD)
    b = config_from_dict({**GOOD, "ray": {"workers": 7}, "run": {"progress": "off"}})
    c = config_from_dict({**GOOD, "output": {"path": "out", "shard_size_tokens": 5}})
    assert a.fingerprint() == b.fingerprint() != c.fingerprint()


def test_cli_bad_config_exits_2_and_writes_nothing(tmp_path):
    out = tmp_path / "out"
    r = run_config(tmp_path, f"input: {{manifest: m.txt}}\noutput: {{path: {out}, shard_size_tokens: -5}}\n"
                             "tokenizer: {path: t.json}\n")
    assert r.returncode == 2
    assert "output.shard_size_tokens" in r.stderr and "greater than or equal to 1" in r.stderr
    assert not out.exists()


# fingerprints computed at 4964c3d, before filters.chain and the stage registry: a resumed output compares
# them, so a config without `chain` must keep its fingerprint
TAGGED = {"input": {"manifest": "m"}, "output": {"path": "o"}, "tokenizer": {"path": "t"}, "filters": {
    "mode": "tag", "langid": {"keep": ["en", "de"], "thresholds": {"de": 0.5}},
    "gopher_repetition": {"top_n_grams": {2: 0.25}},
    "decontam": {"enabled": True, "benchmarks": [{"name": "gsm8k", "path": "b/gsm8k.jsonl",
                                                  "fields": ["question", "answer"]}]},
}}


# the same configs' fingerprints with 16-bit MinHash verification (the default before the OPH sketch)
FINGERPRINTS_16_BITS = {"c37f865cb42557e9": "4be0e95d94b94150", "fd3c321360727956": "24d2d3ad570b3b5b",
                        "5caaa300316c3154": "58f2b71c530f2f99"}
# ... and with the 1-bit OPH sketch and verify_margin 0.005 (the defaults before oph_bits)
FINGERPRINTS_ONE_BIT_OPH = {"c37f865cb42557e9": "984c767884119446", "fd3c321360727956": "35008dd380ee0c05",
                            "5caaa300316c3154": "bf05a7c1e74da1b7"}


@pytest.mark.parametrize("source, fingerprint", [
    ("configs/demo.yaml", "c37f865cb42557e9"),
    ("configs/cc-main-2025-33.yaml", "fd3c321360727956"),
    (TAGGED, "5caaa300316c3154"),
])
def test_fingerprints_of_existing_configs_are_stable(source, fingerprint):
    import yaml

    from tests.support.paths import REPO

    raw = yaml.safe_load((REPO / source).read_text()) if isinstance(source, str) else source
    # 0.2 verifies near duplicates with 16-bit signatures (a deliberate output change, so a new fingerprint);
    # with the 32 bits of before, an output built then keeps its fingerprint and resumes; so does one built
    # before URL dedup (on by default: a new fingerprint), given `url: false`.
    # FineWeb-2's per-language defaults change what a config keeping other languages than English
    # (TAGGED keeps de) outputs, so a new fingerprint; `language_defaults: none` is the output of before
    filters = {**raw.get("filters", {}), "language_defaults": "none"}
    # FineWeb's definitions join C4's kept lines by one newline (their revision is run.json's filter_rules);
    # keep_paragraphs: true joins them as before, and keeps the fingerprint
    filters["c4"] = {**filters.get("c4", {}), "keep_paragraphs": True}
    # the language ID's early exit, on by default with lid.176, moves the scores of long pages: early_exit: false
    # predicts every window as before, and keeps the fingerprint
    filters["langid"] = {**filters.get("langid", {}), "early_exit": False}
    # the OPH verification sketch, indexed near duplicates and the verify margin change the output again;
    # verify_sketch: minhash, index_duplicates: false, verify_margin: 0 decide as before and keep the fingerprint
    before_oph = {"verify_sketch": "minhash", "index_duplicates": False, "verify_margin": 0}
    old = {**raw, "dedup": {**raw.get("dedup", {}), "signature_bits": 32, "url": False, **before_oph},
           "filters": filters}
    # the extraction rules added with trim_head change the output (a new fingerprint); switched off, they give
    # the output of before and its fingerprint
    from raycorpus.process.extract import RULES_OFF_AS_BEFORE

    old["extract"] = {**raw.get("extract", {}), **RULES_OFF_AS_BEFORE}
    assert config_from_dict(old).fingerprint() == fingerprint  # no base_dir: paths as written, not resolved
    for new_value in ({"url": True}, {"verify_sketch": "oph"}, {"index_duplicates": True},
                      {"verify_margin": 0.005}):  # each new setting at its new value is a new output
        assert config_from_dict({**old, "dedup": {**old["dedup"], **new_value}}).fingerprint() != fingerprint
    assert config_from_dict(raw).fingerprint() != fingerprint
    sixteen = {**old, "dedup": {**old["dedup"], "signature_bits": 16}}  # 0.2's defaults
    assert config_from_dict(sixteen).fingerprint() == FINGERPRINTS_16_BITS[fingerprint]
    assert config_from_dict(raw).fingerprint() != FINGERPRINTS_16_BITS[fingerprint]
    # the near-dedup parameters chosen on the tuning halves (2-bit OPH samples, margin 0.0125) change the output;
    # the 1-bit sketch and margin 0.005 written out give the output, and the fingerprint, of the defaults before
    one_bit = {"signature_bits": 16, "url": True, "verify_sketch": "oph", "index_duplicates": True,
               "verify_margin": 0.005}
    before_two_bits = {**old, "dedup": {**old["dedup"], **one_bit, "oph_bits": 1}}
    assert config_from_dict(before_two_bits).fingerprint() == FINGERPRINTS_ONE_BIT_OPH[fingerprint]
    for new_value in ({"oph_bits": 2}, {"verify_margin": 0.0125}, {"oph_bits": 4}):
        changed = {**before_two_bits, "dedup": {**before_two_bits["dedup"], **new_value}}
        assert config_from_dict(changed).fingerprint() != FINGERPRINTS_ONE_BIT_OPH[fingerprint]
    from raycorpus.process.filters import DEFAULT_CHAIN

    explicit = {**old, "filters": {**filters, "chain": list(DEFAULT_CHAIN)}}
    assert config_from_dict(explicit).fingerprint() == fingerprint  # the default order, spelled out


def test_language_defaults_leave_english_only_fingerprints_alone():
    """keep: [en] (English has no FineWeb-2 entry) outputs the same with and without the defaults."""
    base = {"input": {"manifest": "m"}, "output": {"path": "o"}, "tokenizer": {"path": "t"}}
    english = [config_from_dict({**base, "filters": {"language_defaults": v}}).fingerprint()
               for v in ("fineweb2", "none")]
    assert english[0] == english[1] == config_from_dict(base).fingerprint()
    every = [config_from_dict({**base, "filters": {"langid": {"keep": None}, "language_defaults": v}}).fingerprint()
             for v in ("fineweb2", "none")]
    assert every[0] != every[1]


def test_a_value_written_over_the_language_defaults_changes_the_fingerprint():
    """Written, a stage's value wins over FineWeb-2's for every language, even when it equals the stage's
    default: another output (German pages judged by English stop words), so another fingerprint."""
    from raycorpus.process.filters.gopher import GopherQualityConfig

    base = {"input": {"manifest": "m"}, "output": {"path": "o"}, "tokenizer": {"path": "t"}}
    english_stop_words = list(GopherQualityConfig().stop_words)
    for keep, differs in ((None, True), (["en"], False)):
        plain = config_from_dict({**base, "filters": {"langid": {"keep": keep}}})
        written = config_from_dict({**base, "filters": {"langid": {"keep": keep},
                                                        "gopher_quality": {"stop_words": english_stop_words}}})
        assert plain.filters.section("gopher_quality") == written.filters.section("gopher_quality")
        assert (plain.fingerprint() != written.fingerprint()) is differs, keep


def test_cli_bad_chain_exits_2(tmp_path):
    r = run_config(tmp_path, MINIMAL + "filters: {chain: [langid, url]}\n")
    assert r.returncode == 2
    assert "filters.chain.1: stage 'url' reads the record's URL before extraction" in r.stderr


def test_input_format_names_the_field_when_unknown():
    raw = {"input": {"manifest": "m", "format": "wat"}, "output": {"path": "o"}, "tokenizer": {"path": "t.json"}}
    with pytest.raises(ConfigError, match=r"input\.format: .*'warc' or 'wet'"):
        config_from_dict(raw)


def test_dedup_against_is_in_the_fingerprint_only_when_set_and_resolved_like_other_paths(tmp_path):
    plain = config_from_dict(GOOD, base_dir=tmp_path)
    empty = config_from_dict({**GOOD, "dedup": {"against": []}}, base_dir=tmp_path)
    one = config_from_dict({**GOOD, "dedup": {"against": ["out/2026-05", "s3://b/out/2026-08"]}}, base_dir=tmp_path)
    assert plain.fingerprint() == empty.fingerprint() != one.fingerprint()
    assert one.dedup.against == (str(tmp_path / "out" / "2026-05"), "s3://b/out/2026-08")
    for bad, expected in (({"against": ["a", "a"]}, "lists an output twice"),
                          ({"against": ["a"], "url": False, "exact": False, "near": False}, "dedup on"),
                          ({"against": "a"}, "valid tuple")):
        with pytest.raises(ConfigError, match=expected) as e:
            config_from_dict({**GOOD, "dedup": bad})
        assert "  dedup" in str(e.value)
