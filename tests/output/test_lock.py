"""One writer per output: the lease in lock.json, its staleness rules, and fencing of checkpoints."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter

import numpy as np
import pytest

from raycorpus.ingest.storage import Storage
from raycorpus.output.commit import CorpusWriter
from raycorpus.output.lock import LOCK_FILE, OutputLock, OutputLocked
from raycorpus.output.shards import stage_tokens
from raycorpus.process.results import WarcSummary

META = {"tokenizer": "t", "tokenizer_sha256": "0" * 64, "vocab_size": 100, "dtype": "<u2", "eos_id": 0}


def test_a_second_run_is_refused_while_the_first_holds_the_lease(tmp_path):
    first = OutputLock(Storage(), str(tmp_path))
    first.acquire()
    with pytest.raises(OutputLocked, match=rf"being written by run {first.run_id}.*delete .*{LOCK_FILE}"):
        OutputLock(Storage(), str(tmp_path)).acquire()
    first.refresh()
    first.release()
    assert not (tmp_path / LOCK_FILE).exists()
    OutputLock(Storage(), str(tmp_path)).acquire()  # free again


def test_create_new_writes_once_and_only_where_nothing_is(tmp_path):
    storage = Storage()
    url = str(tmp_path / "sub" / "lock.json")
    assert storage.create_new(url, b"first") is True
    assert storage.create_new(url, b"second") is False
    assert (tmp_path / "sub" / "lock.json").read_bytes() == b"first"
    assert sorted(p.name for p in (tmp_path / "sub").iterdir()) == ["lock.json"]  # no temp file left
    assert storage.create_new("s3://bucket/out/lock.json", b"x") is None  # not offered: write_atomic and settle


_RIVAL = """
import sys
from raycorpus.ingest.storage import Storage
from raycorpus.output.lock import OutputLock, OutputLocked
try:
    OutputLock(Storage(), sys.argv[1]).acquire()
    print("holds", flush=True)
    sys.stdin.read()  # holds the lease (its process alive) until every rival has answered
except OutputLocked:
    print("refused", flush=True)
"""


def test_of_runs_starting_at_once_on_a_local_output_exactly_one_holds_it(tmp_path):
    for attempt in range(3):
        out = tmp_path / str(attempt)
        procs = [subprocess.Popen([sys.executable, "-c", _RIVAL, str(out)], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True) for _ in range(4)]
        answers = sorted(p.stdout.readline().strip() for p in procs)
        for p in procs:
            p.communicate(timeout=120)
        assert answers == ["holds", "refused", "refused", "refused"], answers


def test_a_torn_or_foreign_lock_file_is_no_lease(tmp_path):
    (tmp_path / LOCK_FILE).write_text('{"run_id": "abc", "heart')
    lock = OutputLock(Storage(), str(tmp_path))
    lock.acquire()
    assert json.loads((tmp_path / LOCK_FILE).read_text())["run_id"] == lock.run_id


def test_a_stale_lease_is_taken_over_and_fences_the_old_writer(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    old = OutputLock(Storage(), str(tmp_path))
    old.acquire()
    held = json.loads((tmp_path / LOCK_FILE).read_text())
    (tmp_path / LOCK_FILE).write_text(json.dumps({**held, "pid": int(dead.stdout)}))  # its process is gone
    new = OutputLock(Storage(), str(tmp_path))
    new.acquire()
    with pytest.raises(OutputLocked, match="lost the lease"):
        old.check()
    # the old run's packer cannot checkpoint any more
    writer = CorpusWriter(Storage(), str(tmp_path), 1000, META, 3600, fence=old.check)
    staged = stage_tokens(Storage(), str(tmp_path), 0, np.array([5, 0], np.uint16), np.array([2], np.uint64))
    writer.commit(0, "w0", WarcSummary(0, "w0", 1, 0, 0.0, Counter()), staged)
    with pytest.raises(OutputLocked):
        writer.checkpoint()
    assert not (tmp_path / "ledger").exists()
    # an expired heartbeat is stale too
    held = json.loads((tmp_path / LOCK_FILE).read_text())
    (tmp_path / LOCK_FILE).write_text(json.dumps({**held, "heartbeat": time.time() - 1000}))
    OutputLock(Storage(), str(tmp_path)).acquire()
