"""What every command shares: exit codes and the one-line error report."""

from __future__ import annotations

import sys

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_STORAGE, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


def err(msg: str) -> None:
    print(f"raycorpus: {msg}", file=sys.stderr)


def remote_cause(e: BaseException) -> BaseException:
    """The exception an actor raised (a RayTaskError carries it as ``cause``), else ``e`` itself."""
    cause = getattr(e, "cause", None)
    return cause if isinstance(cause, BaseException) else e
