"""benchmarks/vs_datatrove.py on a tiny input: each side runs its chain; no timing is asserted.

The datatrove side needs the venv of ``benchmarks/vs_datatrove_setup.sh`` (``VS_DATATROVE_PYTHON``,
default /tmp/dt-venv/bin/python) and skips without it.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from benchmarks import vs_datatrove as vs
from raycorpus.config import load_config

DT_PYTHON = os.environ.get("VS_DATATROVE_PYTHON", vs.DEFAULT_DT_PYTHON)


@pytest.fixture
def tiny(crawls, tmp_path) -> tuple[str, str]:
    """(config, WARC): one sample WARC of 30 pages and a config naming its BPE."""
    c, tok = crawls(1, 30, 1)
    cfg = tmp_path / "bench.yaml"
    cfg.write_text(yaml.safe_dump({"input": {"manifest": str(c.manifest_path)},
                                   "output": {"path": str(tmp_path / "out")}, "tokenizer": {"path": tok}}))
    return str(cfg), str(c.warc_paths[0])


@pytest.mark.parametrize("variant", ["comparable", "full"])
def test_the_raycorpus_side_runs_its_chain(tiny, variant):
    config, warc = tiny
    proc = vs.rc_processor(config, variant, tokenize=variant == "full")
    stages = [cls.name for cls, _ in proc.cfg.filters.enabled_stages()]
    if variant == "comparable":
        assert stages == vs.COMPARABLE_CHAIN
        assert proc.minhasher is None and proc.encoder is None
    else:
        assert stages[:6] == vs.COMPARABLE_CHAIN and proc.encoder is not None
    assert proc.cfg.filters.langid.keep == ["en"] and proc.cfg.filters.mode == "filter"
    r = vs.rc_pass(proc, warc)
    assert r["docs_in"] > 0 and 0 < r["docs_out"] <= r["docs_in"]


def test_the_whole_process_config_loads(tiny, tmp_path):
    config, warc = tiny
    manifest = tmp_path / "warc.paths"
    manifest.write_text(warc + "\n")
    cfg = load_config(vs.rc_whole_config(config, "comparable", str(manifest), 1, str(tmp_path / "whole")))
    assert cfg.ray.workers == 1 and cfg.ray.num_cpus == 1 and not cfg.dedup.near
    assert cfg.output.path == str(tmp_path / "whole") and cfg.input.manifest == str(manifest)
    assert yaml.safe_load(Path(config).read_text())["input"]["manifest"] != str(manifest)  # the bench config untouched


@pytest.mark.skipif(not Path(DT_PYTHON).exists(),
                    reason=f"datatrove's venv is absent ({DT_PYTHON}): run benchmarks/vs_datatrove_setup.sh")
def test_the_datatrove_side_runs_its_chain(tiny, tmp_path):
    _, warc = tiny
    inp = tmp_path / "in"
    inp.mkdir()
    (inp / "tiny.warc.gz").symlink_to(warc)
    env = dict(os.environ, PYTHONPATH="", HF_HUB_OFFLINE="1")
    p = subprocess.run([DT_PYTHON, vs.__file__, "_dt-steady", str(inp), "resiliparse"], input="run\nquit\n",
                       capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    lines = [json.loads(x) for x in p.stdout.splitlines() if x.startswith("{")]
    assert lines[0] == {"ready": True}
    assert lines[1]["docs_in"] > 0 and 0 <= lines[1]["docs_out"] <= lines[1]["docs_in"]
    assert "download" not in p.stderr.lower(), p.stderr[-3000:]
