"""One writer per output: a lease in ``OUTPUT/lock.json`` that a second run refuses to break.

The driver takes the lease at start (run id, host, pid, heartbeat), refreshes the heartbeat
while it runs and deletes it at the end. Another run finding a lease refuses to start
unless the lease is stale: its heartbeat older than ``lease_seconds``, or its process gone
(same host). On a local output with no lease, the lease is created in one step (a hard link
that fails if the file exists), so of two runs starting at once one creates it and the other
refuses. Elsewhere (S3), or when a stale lease is taken over, both write, wait 0.2 s and read
back; the one whose id is not there refuses. The packer re-reads the lease before every checkpoint (fencing),
so even a run that lost its lease without noticing cannot write the ledger.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
import uuid

from raycorpus.ingest.storage import NotFound, Storage, StorageError, join_url

LOCK_FILE = "lock.json"


class OutputLocked(RuntimeError):
    """Another run holds the output."""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


class OutputLock:
    def __init__(self, storage: Storage, out_url: str, lease_seconds: float = 120.0, run_id: str | None = None):
        self.storage = storage
        self.url = join_url(out_url, LOCK_FILE)
        self.out_url = out_url
        self.lease = lease_seconds
        self.run_id = run_id or uuid.uuid4().hex[:16]
        self.host = socket.gethostname()

    def read(self) -> dict | None:
        try:
            return json.loads(self.storage.read_bytes(self.url))
        except NotFound:
            return None
        except ValueError:
            return None  # a torn or foreign file: treat as no lease

    def _stale(self, lock: dict) -> bool:
        if time.time() - lock.get("heartbeat", 0) > self.lease:
            return True
        return lock.get("host") == self.host and not _alive(int(lock.get("pid", 0)))

    def _body(self) -> bytes:
        return json.dumps({"run_id": self.run_id, "host": self.host, "pid": os.getpid(), "heartbeat": time.time(),
                           "lease_seconds": self.lease}).encode()

    def _write(self) -> None:
        self.storage.write_atomic(self.url, self._body())

    def acquire(self) -> None:
        held = self.read()
        if held and held.get("run_id") != self.run_id and not self._stale(held):
            raise OutputLocked(self._message(held))
        if held is None:  # no lease: created in one step where the storage offers it (local files), nothing to settle
            created = self.storage.create_new(self.url, self._body())
            if created:
                return
            if created is False and (rival := self.read()) is not None and not self._stale(rival):
                raise OutputLocked(self._message(rival))  # a rival's, created since the read
        self._write()
        time.sleep(0.2)  # a rival that read the same state writes now; the last write wins, the other refuses
        held = self.read()
        if not held or held.get("run_id") != self.run_id:
            raise OutputLocked(self._message(held or {}))

    def refresh(self) -> None:
        self.check()
        self._write()

    def check(self) -> None:
        held = self.read()
        if not held or held.get("run_id") != self.run_id:
            raise OutputLocked(f"run {self.run_id} lost the lease on {self.out_url}: "
                               + (self._message(held) if held else "lock.json was removed"))

    def release(self) -> None:
        """Delete the lease if it is still ours. Best effort: on an output that can no longer be
        written, the error that stopped the run is the one to report; a dead run's lease is stale."""
        with contextlib.suppress(StorageError):
            held = self.read()
            if held and held.get("run_id") == self.run_id:
                self.storage.delete(self.url)

    def _message(self, held: dict) -> str:
        age = time.time() - held.get("heartbeat", time.time())
        return (f"output {self.out_url} is being written by run {held.get('run_id')} on {held.get('host')} "
                f"(pid {held.get('pid')}, heartbeat {age:.0f} s ago); two runs must not write one output. "
                f"If that run is dead, rerun after its lease ({self.lease:g} s) or delete {self.url}")
