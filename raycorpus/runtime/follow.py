"""Grown manifests and follow mode, the driver's side.

A run reads the manifest's WARC lines once (:func:`manifest_lines`); :func:`accept_grown` decides
whether an output started with other lines may continue with these (the original lines followed
by new ones) and records the new ones in ``run.json``. :class:`Follower` is ``raycorpus run
--follow``: once every WARC is committed, it checkpoints and polls the manifest every
``run.follow_interval_seconds`` (holding the output's lock and reporting the gauges meanwhile)
until the manifest grows; the run then commits the new WARCs the same way, and so on until
SIGTERM / Ctrl-C (checkpoint, exit 130). The output stays what a one-shot build of the manifest
so far would be, minus the closing of its last shard: a plain ``raycorpus run`` finishes it.
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Callable, Iterator

from raycorpus.config import Config
from raycorpus.ingest.growth import ManifestChanged, ManifestLines
from raycorpus.ingest.manifest import iter_input_entries
from raycorpus.ingest.storage import Storage, StorageError
from raycorpus.output.grow import listed_lines
from raycorpus.output.ledger import Ledger, LedgerError
from raycorpus.runtime.metrics import Metrics
from raycorpus.runtime.pool import Task, manifest_tasks

__all__ = ["Follower", "accept_grown", "manifest_lines"]

TICK_SECONDS = 0.25  # how often a waiting follower wakes (SIGTERM, the lease, the gauges)

log = logging.getLogger("raycorpus")


def manifest_lines(cfg: Config, storage: Storage) -> ManifestLines:
    """The WARC lines of the manifest, the first ``input.limit`` of them."""
    entries = iter_input_entries(cfg.input, storage)
    return ManifestLines([e.line for e in itertools.islice(entries, cfg.input.limit)])


def accept_grown(ledger: Ledger, old: dict, lines: ManifestLines, known: ManifestLines | None = None) -> None:
    """Record ``lines`` in run.json if they are the lines ``old`` (run.json) names followed by new ones;
    else raise :class:`LedgerError` naming the first difference (from the lines the ledger lists, and
    ``known``: lines already accepted)."""
    def original() -> dict[int, str]:
        return {**dict(enumerate(known.lines if known is not None else [])), **listed_lines(ledger)}

    try:
        lines.check_extends(old["warcs"], old.get("manifest_sha256"), original)
    except ManifestChanged as e:
        raise LedgerError(
            f"output {ledger.out_url} was started with another manifest: {e}. A rerun accepts the original lines "
            "followed by new ones only: restore the original lines (new lines go at the end) or use a new output path"
        ) from None
    grown = old.get("grown_from", []) + ([{"warcs": old["warcs"], "manifest_sha256": old.get("manifest_sha256")}]
                                         if lines.warcs != old["warcs"] else [])
    ledger.write_run({**old, "warcs": lines.warcs, "manifest_sha256": lines.sha256(),
                      **({"grown_from": grown} if grown else {})})


class Follower:
    """Waits for the manifest to grow, polling it every ``run.follow_interval_seconds``."""

    def __init__(self, cfg: Config, storage: Storage, ledger: Ledger, lines: ManifestLines,
                 metrics: Metrics | None = None):
        self.cfg, self.storage, self.ledger = cfg, storage, ledger
        self.source = cfg.input.manifest or cfg.input.prefix  # what is polled
        self.metrics = metrics or Metrics(cfg.output.path)
        self.lines, self.warcs = lines, lines.warcs  # the manifest's WARC lines as last accepted
        self.idle_since: float | None = None

    def wait_for_growth(self, tick: Callable[[], None]) -> int:
        """Poll until the manifest holds more WARC lines (accepted and recorded in run.json); return their
        number. ``tick()`` is called every ``TICK_SECONDS`` meanwhile (the lease, the gauges)."""
        self.idle_since = time.monotonic()
        next_poll = self.idle_since + self.cfg.run.follow_interval_seconds
        log.info("following %s: all %d WARCs committed; polling every %.3g s", self.source, self.warcs,
                 self.cfg.run.follow_interval_seconds)
        while True:
            tick()
            self.report(0)
            if time.monotonic() >= next_poll:
                grown = self._poll()
                if grown:
                    self.idle_since = None
                    return grown
                next_poll = time.monotonic() + self.cfg.run.follow_interval_seconds
            time.sleep(TICK_SECONDS)

    def _poll(self) -> int:
        """The new number of WARC lines if the manifest grew, else 0 (a manifest that cannot be read now is
        tried again at the next poll; one that changed otherwise stops the run)."""
        try:
            lines = manifest_lines(self.cfg, self.storage)
        except (StorageError, ValueError) as e:
            log.warning("following %s: not readable now (%s); trying again", self.source, e)
            return 0
        if lines.warcs <= self.warcs:
            if lines.warcs < self.warcs or lines.sha256() != self.ledger.read_run().get("manifest_sha256"):
                accept_grown(self.ledger, self.ledger.read_run(), lines, self.lines)  # names what changed
            return 0
        accept_grown(self.ledger, self.ledger.read_run(), lines, self.lines)
        log.info("following %s: %d new WARCs", self.source, lines.warcs - self.warcs)
        self.lines, self.warcs = lines, lines.warcs
        return lines.warcs

    def tasks(self, start: int) -> Iterator[Task]:
        """The WARCs from ``start`` to the last line accepted; a line that changed since is refused."""
        end = self.warcs
        for task in itertools.takewhile(lambda t: t.ordinal < end, manifest_tasks(self.cfg, self.storage, start)):
            if task.warc != self.lines.lines[task.ordinal]:
                accept_grown(self.ledger, self.ledger.read_run(), manifest_lines(self.cfg, self.storage), self.lines)
                raise LedgerError(f"input {self.source} changed while it was read: WARC #{task.ordinal}")
            yield task

    def report(self, backlog: int) -> None:
        """The follow gauges: WARCs listed but not committed yet, and seconds spent waiting for new ones."""
        self.metrics.follow_state(backlog, 0.0 if self.idle_since is None else time.monotonic() - self.idle_since)
