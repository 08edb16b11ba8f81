"""The CLI as a user runs it: a new process, its exit code and output."""

import subprocess
import sys
from pathlib import Path

MINIMAL = "input: {manifest: m.txt}\noutput: {path: out}\ntokenizer: {path: t.json}\n"


def cli(*args: str, cwd: Path | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "raycorpus.cli", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd, check=False)


def run_config(tmp_path: Path, yaml_text: str) -> subprocess.CompletedProcess:
    """`raycorpus run` on a config file holding ``yaml_text``."""
    p = tmp_path / "config.yaml"
    p.write_text(yaml_text)
    return cli("run", str(p), timeout=120)
