"""Test-only fault injection: the exact kill points the fault tests aim at, wired in by the runtime.

``RAYCORPUS_FAULT=<point>:<arg>`` takes the whole run down (SIGKILL of the driver, then of the
process that reached the point) exactly there, as a machine loss would:

- ``before_write:<file name>``, e.g. ``ckpt-000000003.json``: the shards it counts durable, ledger not
- ``after_write:<file name>``, e.g. ``shard-000001.tokens``: a shard's tokens written, its .idx/.json not
- ``processed:<ordinal>``: a worker has read the WARC, nothing of it is returned or committed
  (``processed:<ordinal>.<range>``: one range of a WARC cut into ranges)
- ``write:<ordinal>``: only the document writer dies, at the start of the WARC's write (every time)
- ``shard_write:<shard>``: only the shard writer dies, at the start of the shard's write (every time)

The variable is read once per process. Unset, nothing here costs anything: :func:`wrap_storage`
returns the storage itself, :func:`point` is one comparison, :func:`actor_options` is empty.
The core (``raycorpus.output.commit``, the workers' processor) knows nothing of this module.
"""

from __future__ import annotations

import os
import signal

FAULT_ENV = "RAYCORPUS_FAULT"
FAULT_PID_ENV = "RAYCORPUS_FAULT_PID"  # the driver's pid, set by the driver for the actors
_FAULT = os.environ.get(FAULT_ENV)


def actor_options() -> dict:
    """Ray actor (or task) options that let the fault setting (and the driver's pid) reach an actor's process."""
    if not _FAULT:
        return {}
    driver = os.environ.get(FAULT_PID_ENV, str(os.getpid()))  # an actor passes its driver's pid on
    return {"runtime_env": {"env_vars": {FAULT_ENV: _FAULT, FAULT_PID_ENV: driver}}}


def point(name: str, arg: object, whole_run: bool = True) -> None:
    """If RAYCORPUS_FAULT names ``name:arg``, SIGKILL the driver (``whole_run``) and this process."""
    if _FAULT and f"{name}:{arg}" == _FAULT:
        if whole_run:
            os.kill(int(os.environ[FAULT_PID_ENV]), signal.SIGKILL)
        os.kill(os.getpid(), signal.SIGKILL)


class _FaultyStorage:
    """A storage whose atomic writes pass the before_write / after_write points."""

    def __init__(self, storage):
        self._storage = storage

    def __getattr__(self, name: str):
        return getattr(self._storage, name)

    def write_atomic(self, url: str, data: bytes) -> None:
        name = url.rsplit("/", 1)[-1]
        point("before_write", name)
        self._storage.write_atomic(url, data)
        point("after_write", name)


def wrap_storage(storage):
    """The writer's storage, with the write kill points when a fault is set (else itself)."""
    return _FaultyStorage(storage) if _FAULT else storage
