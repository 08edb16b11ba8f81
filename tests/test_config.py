"""Config validation: every bad config names its field; the CLI exits 2 before starting anything."""

import subprocess
import sys

import pytest

from raycorpus.config import ConfigError, config_from_dict, load_config

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
        ({"input": {}}, "input.manifest", "Field required"),
        ({"extract": {"main_contnet": True}}, "extract.main_contnet", "unknown field"),
        ({"ray": {"workers": -1}}, "ray.workers", "greater than or equal to 1"),
        ({"tokenizer": {"eos": "x"}}, "tokenizer", "set `path`"),
        ({"run": {"progress": "fancy"}}, "run.progress", "'auto', 'bar', 'log' or 'off'"),
        ({"storage": {"max_attempts": 0}}, "storage.max_attempts", "greater than or equal to 1"),
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
    p = tmp_path / "bad.yaml"
    p.write_text(f"input: {{manifest: m.txt}}\noutput: {{path: {out}, shard_size_tokens: -5}}\n"
                 "tokenizer: {path: t.json}\n")
    r = subprocess.run([sys.executable, "-m", "raycorpus.cli", "run", str(p)], capture_output=True, text=True)
    assert r.returncode == 2
    assert "output.shard_size_tokens" in r.stderr and "greater than or equal to 1" in r.stderr
    assert not out.exists()
