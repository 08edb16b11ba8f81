"""Shared helpers for end-to-end tests: a sample crawl, a trained tokenizer, configs, digests."""

from __future__ import annotations

import hashlib
import subprocess
import time
from pathlib import Path
from typing import NamedTuple

from raycorpus.config import Config, config_from_dict
from raycorpus.demo import SampleCrawl, write_sample_crawl
from raycorpus.ingest.storage import Storage
from raycorpus.output.ledger import Ledger
from raycorpus.process.prepare import train_tokenizer_from_input


class Crawl(NamedTuple):
    """A sample crawl and the path of a BPE tokenizer trained on it (unpacks as ``sample, tokenizer``)."""

    sample: SampleCrawl
    tokenizer: str


def make_crawl(root: Path, n_warcs: int = 8, pages: int = 40, seed: int = 1):
    return write_sample_crawl(root, n_warcs=n_warcs, pages_per_warc=pages, seed=seed)


def make_config(manifest: str, out: str, tokenizer: str, **sections) -> Config:
    raw = {
        "input": {"manifest": manifest},
        "output": {"path": out, "shard_size_tokens": 5000},
        "tokenizer": {"path": tokenizer},
        "warc": {"retry_backoff_seconds": 0.1},
        "run": {"checkpoint_interval_seconds": 0, "progress": "off"},
    }
    for section, values in sections.items():
        raw.setdefault(section, {}).update(values)
    return config_from_dict(raw)


def make_tokenizer(crawl, path: Path) -> str:
    cfg = make_config(str(crawl.manifest_path), str(path.parent / "unused"), str(path))
    return train_tokenizer_from_input(cfg, str(path), vocab_size=1024, sample_docs=500)


def shard_digests(out: Path) -> dict[str, str]:
    """sha256 of every file under shards/ and clusters/ (the byte-identity the invariants talk about)."""
    files = sorted((out / "shards").iterdir()) + sorted((out / "clusters").glob("*") if (out / "clusters").is_dir()
                                                        else [])
    return {f"{p.parent.name}/{p.name}": hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


def run(cfg: Config) -> dict:
    """Build in this process (joining the test cluster) and return the summary."""
    from raycorpus.process.prepare import prepare_tokenizer
    from raycorpus.runtime.driver import run_build

    return run_build(cfg, prepare_tokenizer(cfg).meta())


def actor_pids(class_name: str) -> list[int]:
    """PIDs of live actors of ``class_name`` on the test cluster (workers whose raylet runs in its session)."""
    import ray

    session = ray._private.worker._global_node.get_session_dir_path()
    pids = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            title = (d / "cmdline").read_bytes().split(b"\0")[0].decode(errors="replace").strip()
            if title.split(".")[0] != f"ray::{class_name}":
                continue
            ppid = (d / "stat").read_text().rsplit(")", 1)[1].split()[1]
            if session in Path(f"/proc/{ppid}/cmdline").read_bytes().decode(errors="replace"):
                pids.append(int(d.name))
        except (OSError, IndexError):
            continue  # exited while we looked
    return pids


def wait_for_actors(proc: subprocess.Popen, class_name: str, n: int, timeout: float = 240) -> list[int]:
    """The PIDs of the ``n`` live ``class_name`` actors the run ``proc`` started; fails if they do not appear."""
    deadline, pids = time.monotonic() + timeout, []
    while time.monotonic() < deadline and proc.poll() is None and len(pids) < n:
        pids = actor_pids(class_name)
        time.sleep(0.02)
    assert len(pids) == n, f"the run did not start its {n} {class_name} actors"
    return pids


def wait_until_no_actors(class_name: str, timeout: float = 240) -> None:
    """Until no ``class_name`` actor lives on the test cluster: a SIGKILLed driver's actors end only when
    Ray notices that their owner is gone, and until then they go on reading WARCs and staging tokens."""
    deadline = time.monotonic() + timeout
    while actor_pids(class_name):
        assert time.monotonic() < deadline, f"the killed run's {class_name} actors did not end"
        time.sleep(0.1)


def wait_for_checkpoints(proc: subprocess.Popen, out: Path, n: int) -> None:
    """Until the run at ``out`` has written ``n`` checkpoints; fails if it ends or stalls before."""
    ledger = Ledger(Storage(), str(out))
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        if (out / "ledger").exists() and len(ledger.checkpoint_urls()) >= n:
            return
        time.sleep(0.01)
    raise AssertionError(f"the run ended (exit {proc.poll()}) or stalled before checkpoint {n}")


RUN_SPECIFIC = ("timeline", "config", "versions", "retries", "retry_examples")  # times, settings, this run's retries


def report_data(out: Path) -> dict:
    """The output's report data as of its last checkpoint, without what depends on the run rather than on
    (manifest, config): timings, the config as written (worker counts), versions and retried attempts."""
    from raycorpus.output.report_state import ReportState

    state = Ledger(Storage(), str(out)).load()
    assert state.report is not None, f"{out}: no report data named by its ledger"
    data = ReportState.read(Storage(), str(out), state.report).to_json()
    return {k: v for k, v in data.items() if k not in RUN_SPECIFIC}
