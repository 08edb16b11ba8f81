"""The documentation: the generated configuration reference is current, the site builds with no broken link
or anchor, and the README stays a short user's guide with the quick-start commands CI runs.

Unit tests: they read files and run ``mkdocs build`` into a temporary folder (no server, no network)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

from raycorpus.cli import config_docs
from tests.support.paths import REPO

README = REPO / "README.md"
QUICK_START = (
    "python3 -m venv .venv && . .venv/bin/activate && pip install -e . && raycorpus demo",
    "python3 -m venv .venv && . .venv/bin/activate && pip install -e '.[test]' && pytest -q -m \"not slow\"",
)
README_MAX_LINES = 250


def test_configuration_reference_is_generated_from_the_settings_models():
    current = (REPO / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert current == config_docs.render(), (
        f"docs/configuration.md is stale (the settings models changed): run `{config_docs.COMMAND}`")


def test_configuration_reference_check_command_names_the_fix(tmp_path, capsys):
    stale = tmp_path / "configuration.md"
    stale.write_text("# old\n", encoding="utf-8")
    assert config_docs.main(["--check", "--file", str(stale)]) == 1
    assert config_docs.COMMAND in capsys.readouterr().err
    assert config_docs.main(["--write", "--file", str(stale)]) == 0
    assert config_docs.main(["--check", "--file", str(stale)]) == 0


def test_configuration_reference_documents_every_field():
    """Every field of every section (nested models and the built-in stages included) has a row and a
    description."""
    text = config_docs.render()
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    assert len(rows) > 150
    undocumented = [row.split("|")[1].strip() for row in rows if row.rstrip().endswith("|  |")]
    assert not undocumented, f"fields without a description: {undocumented}"
    for dotted in ("input.manifest", "output.report.enabled", "tokenizer.train.vocab_size", "warc.timeout_seconds",
                   "extract.max_depth", "filters.mode", "filters.exclusions.sample_rate", "filters.langid.keep",
                   "filters.decontam.benchmarks[].fields", "dedup.against", "storage.max_attempts", "ray.workers",
                   "run.split_warcs"):
        assert f"| `{dotted}` |" in text, dotted


def test_site_builds_strictly_offline(tmp_path):
    """``mkdocs build --strict``: every internal link and anchor resolves (mkdocs.yml turns its link and
    anchor checks into warnings, which --strict makes errors); the theme fetches no fonts."""
    missing = [name for name in ("mkdocs", "material") if importlib.util.find_spec(name) is None]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed: pip install -e '.[test]' installs mkdocs-material")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-4000:]
    assert (tmp_path / "site" / "configuration" / "index.html").exists()
    index = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    assert "fonts.googleapis.com" not in index


def test_readme_is_a_short_guide_with_the_quick_start_commands():
    text = README.read_text(encoding="utf-8")
    lines = text.splitlines()
    assert len(lines) <= README_MAX_LINES, (
        f"README.md has {len(lines)} lines (at most {README_MAX_LINES}): move the detail into docs/")
    assert "Quick start" in text
    for command in QUICK_START:
        assert command in lines, f"README.md lost the quick-start command: {command}"
