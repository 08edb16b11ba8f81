"""Output-disk faults (issue 6, test 5): a disk that fills up and an output folder that becomes unwritable.

The output lives on a small tmpfs mounted for the test (root in this sandbox; skipped with the
reason where mounting is not allowed). The CLI must stop with a short message naming the path
and the OS error, leave a ledger that names only durable shards, and, once the cause is fixed,
finish on a rerun of the same command with the same shard bytes as an undisturbed run.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from raycorpus.ingest.storage import Storage
from raycorpus.output.ledger import Ledger
from raycorpus.output.verify import format_checks, verify_output
from tests.support.corpus import shard_digests, wait_for_checkpoints
from tests.support.servers import LocalHTTPServer

PAGE = 4096


def _mount(*args: str) -> None:
    subprocess.run(["mount", *args], check=True, capture_output=True, text=True, timeout=30)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """An empty tmpfs mounted at a fresh folder (4 KiB to start: tests size it with ``resize``)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs for the output needs root (CAP_SYS_ADMIN)")
    mnt = tmp_path / "disk"
    mnt.mkdir()
    try:
        _mount("-t", "tmpfs", "-o", f"size={PAGE},mode=0755", "raycorpus-test-disk", str(mnt))
    except (OSError, subprocess.SubprocessError) as e:
        reason = getattr(e, "stderr", "") or e
        pytest.skip(f"cannot mount a tmpfs in this sandbox ({str(reason).strip()}): no small disk to fill")
    try:
        yield mnt
    finally:
        if subprocess.run(["umount", str(mnt)], capture_output=True, timeout=30).returncode:
            subprocess.run(["umount", "-l", str(mnt)], capture_output=True, timeout=30)


def resize(mnt: Path, size: int) -> None:
    _mount("-o", f"remount,size={-(-size // PAGE) * PAGE}", str(mnt))


def disk_usage(folder: Path) -> int:
    """Bytes the files under ``folder`` take on a tmpfs (whole pages per file)."""
    return sum(-(-p.stat().st_size // PAGE) * PAGE for p in folder.rglob("*") if p.is_file())




def write_config(path: Path, manifest: Path, out: Path, tok: str, base: str | None = None) -> list[str]:
    """A config file like the e2e tests' (checkpoint after every WARC); returns the CLI command.
    ``num_cpus`` and ``object_store_memory`` only apply where the CLI starts its own Ray; ``base``: where
    the WARCs are read from (a server that can hold one back)."""
    path.write_text(json.dumps({
        "input": {"manifest": str(manifest), **({"base": base} if base else {})},
        "output": {"path": str(out), "shard_size_tokens": 5000},
        "tokenizer": {"path": tok}, "warc": {"retry_backoff_seconds": 0.1},
        "ray": {"workers": 2, "num_cpus": 2, "object_store_memory": 200 * 2**20},
        "run": {"checkpoint_interval_seconds": 0, "progress": "off"}}))
    return [sys.executable, "-m", "raycorpus.cli", "run", str(path)]


def _ctrl_c_reaches() -> None:
    """In the child: SIGINT raises KeyboardInterrupt, as Ctrl-C in a terminal does. A job started in the
    background of a non-interactive shell (as CI may run pytest) inherits SIGINT ignored, and Python then
    keeps ignoring it, so without this the test's Ctrl-C would never reach the CLI."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def assert_clear_failure(r: subprocess.CompletedProcess, out: Path, os_error: str) -> None:
    """Non-zero exit, a short message naming a path under the output and the OS error, no traceback."""
    assert r.returncode == 3, (r.returncode, r.stderr[-3000:])
    assert not any(spam in r.stderr for spam in ("Traceback", "RayTaskError", "Unhandled error", 'File "')), \
        r.stderr[-3000:]
    lines = [line for line in r.stderr.splitlines() if line.startswith("raycorpus: ")]
    assert lines, r.stderr[-3000:]
    # the operation that failed first (a write, a rename, a delete: whichever met the error) on a path under the output
    assert re.match(rf"raycorpus: \w+ {re.escape(str(out))}/\S+: ", lines[0]) and os_error in lines[0], lines
    assert "run the same command again" in r.stderr


def assert_ledger_consistent(out: Path) -> int:
    """The ledger loads, every WARC it names is committed once, and every shard it names is durable."""
    state = Ledger(Storage(), str(out)).load()
    checks = verify_output(Storage(), str(out))
    assert all(c.ok for c in checks), format_checks(checks)
    assert not state.complete
    return state.next_ordinal


def test_disk_full_then_freed_resumes_to_the_same_bytes(reference, crawl, small_disk, tmp_path):
    c, tok = crawl
    ref_out, ref_summary = reference
    out = small_disk / "out"
    cmd = write_config(tmp_path / "c.json", c.manifest_path, out, tok)
    resize(small_disk, disk_usage(ref_out) // 2)  # room for about half of the output
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert_clear_failure(r, out, "No space left on device")
    done = assert_ledger_consistent(out)
    assert 0 < done < 8, "the disk did not fill up mid-run"

    resize(small_disk, 4 * disk_usage(ref_out))  # space freed: the same command resumes
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    s = json.loads((out / "summary.json").read_text())
    assert s["complete"] and s["this_run"]["resumed_at"] == done
    assert shard_digests(out) == shard_digests(ref_out)
    assert s["docs"] == ref_summary["docs"] and s["tokens"] == ref_summary["tokens"]
    checks = verify_output(Storage(), str(out))
    assert all(c.ok for c in checks), format_checks(checks)


def test_output_turned_read_only_then_writable_resumes_to_the_same_bytes(reference, crawl, small_disk, tmp_path):
    c, tok = crawl
    ref_out, ref_summary = reference
    out = small_disk / "out"
    resize(small_disk, 4 * disk_usage(ref_out))
    held = c.manifest_path.read_text().split()[5]  # the run cannot finish before it is interrupted
    with LocalHTTPServer(c.manifest_path.parent, hold=(held,)) as www:
        cmd = write_config(tmp_path / "c.json", c.manifest_path, out, tok, base=www.url)
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=_ctrl_c_reaches)
        wait_for_checkpoints(proc, out, 2)
        proc.send_signal(signal.SIGINT)  # Ctrl-C: committed WARCs checkpointed, exit 130
        assert proc.wait(timeout=300) == 130
        www.release()
        done = assert_ledger_consistent(out)
        assert 0 < done < 8, "the run was not stopped mid-way"

        _mount("-o", "remount,ro", str(small_disk))  # the output folder can no longer be written
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        assert_clear_failure(r, out, "Read-only file system")
        assert assert_ledger_consistent(out) == done

        _mount("-o", "remount,rw", str(small_disk))
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    s = json.loads((out / "summary.json").read_text())
    assert s["complete"] and s["this_run"]["resumed_at"] == done
    assert shard_digests(out) == shard_digests(ref_out)
    assert s["docs"] == ref_summary["docs"]


NO_DAC = ["--bounding-set=-dac_override,-dac_read_search", "--inh-caps=-dac_override,-dac_read_search"]


@pytest.mark.slow
def test_output_folder_losing_write_permission_mid_run_then_restored(reference, crawl, tmp_path):
    """Permission denied (EACCES) in the actors. Root ignores file modes, so the CLI runs as root
    without CAP_DAC_OVERRIDE (setpriv) and starts its own Ray, whose processes inherit that."""
    setpriv = shutil.which("setpriv")
    if setpriv is None or os.geteuid() != 0:
        pytest.skip("needs root and setpriv (util-linux) to run the build without CAP_DAC_OVERRIDE")
    if subprocess.run([setpriv, *NO_DAC, "true"], capture_output=True, timeout=30).returncode:
        pytest.skip("setpriv cannot drop CAP_DAC_OVERRIDE in this sandbox")
    c, tok = crawl
    ref_out, ref_summary = reference
    out = tmp_path / "out"
    ray_tmp = tempfile.mkdtemp(prefix="rc-ray-")  # short: Ray's socket paths must fit in 107 bytes
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"} | {"RAY_TMPDIR": ray_tmp}
    folders = [out]
    held = c.manifest_path.read_text().split()[5]  # the run cannot finish before the permission is gone
    with LocalHTTPServer(c.manifest_path.parent, hold=(held,)) as www:
        cmd = write_config(tmp_path / "c.json", c.manifest_path, out, tok, base=www.url)
        try:
            proc = subprocess.Popen([setpriv, *NO_DAC, *cmd], env=env, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
            wait_for_checkpoints(proc, out, 2)
            folders = [out, *(p for p in out.rglob("*") if p.is_dir())]
            for folder in folders:
                folder.chmod(0o555)  # nothing new can be created in the output any more
            www.release()
            stdout, stderr = proc.communicate(timeout=600)
        finally:
            for folder in folders:
                folder.chmod(0o755)
            shutil.rmtree(ray_tmp, ignore_errors=True)
        assert_clear_failure(subprocess.CompletedProcess(cmd, proc.returncode, stdout, stderr), out,
                             "Permission denied")
        done = assert_ledger_consistent(out)
        assert 0 < done < 8, "the run was not stopped mid-way"

        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)  # permission back: rerun (test cluster)
    assert r.returncode == 0, r.stderr[-3000:]
    s = json.loads((out / "summary.json").read_text())
    assert s["complete"] and s["this_run"]["resumed_at"] == done
    assert shard_digests(out) == shard_digests(ref_out)
    assert s["docs"] == ref_summary["docs"]
