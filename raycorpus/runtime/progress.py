"""Driver-side progress line: WARCs, docs/s, tokens, ETA.

The rate is this run's own: the documents it committed (a resumed run's earlier ones excluded) over the time since
its workers were ready; it reads "?" until the run has committed a WARC."""

from __future__ import annotations

import sys
import time

from raycorpus.output.commit import Position


def _hms(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def per_second(rate: float | None) -> str:
    """A rate as people read it: whole numbers from 10 up, one decimal below (a slow run is not "0/s"); "?" when
    there is nothing to measure yet."""
    if rate is None:
        return "?"
    return f"{rate:,.0f}" if rate >= 10 else f"{rate:.1f}"


class Progress:
    def __init__(self, total: int, start: int, mode: str = "auto", interval: float = 1.0, stream=None):
        self.stream = stream or sys.stderr
        if mode == "auto":
            mode = "bar" if self.stream.isatty() else "log"
        self.mode = mode
        self.interval = interval if mode == "bar" else max(interval, 10.0)
        self.total, self.start = total, start
        self.t0 = time.monotonic()
        self.last_print = 0.0
        self.docs0: int | None = None
        self._open = False

    def eta_seconds(self, done: int) -> float | None:
        elapsed = time.monotonic() - self.t0
        work = done - self.start
        if work <= 0 or elapsed <= 0:
            return None
        return (self.total - done) * elapsed / work

    def update(self, p: Position, inflight: int, workers: int, buffered: int) -> None:
        if self.mode == "off":
            return
        if self.docs0 is None:
            self.docs0 = p.docs
        now = time.monotonic()
        if now - self.last_print < self.interval and p.next_ordinal < self.total:
            return
        self.last_print = now
        done = p.next_ordinal
        elapsed = max(now - self.t0, 1e-9)
        eta = self.eta_seconds(done)
        failed = f" ({p.failed} failed)" if p.failed else ""
        rate = (p.docs - self.docs0) / elapsed if done > self.start else None  # this run's own documents
        line = (
            f"[raycorpus] WARCs {done:,}/{self.total:,}{failed} | docs {p.docs:,} ({per_second(rate)}/s)"
            f" | tokens {p.tokens:,} | shards {p.shards} | workers {workers}, in flight {inflight},"
            f" buffered {buffered} | ETA {_hms(eta) if eta is not None else '?'}"
        )
        if self.mode == "bar":
            self.stream.write("\r" + line[: 200].ljust(120))
            self._open = True
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self._open:
            self.stream.write("\n")
            self.stream.flush()
            self._open = False
