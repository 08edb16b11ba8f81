"""What the report reads of an output: run.json, the last ledger checkpoint, the report's data file that
checkpoint names, summary.json and a listing of the files. Never the documents, the shards or the
per-WARC ledger entries, so it costs the same at 10 WARCs and at 100,000."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from raycorpus.config import Config
from raycorpus.ingest.storage import NotFound, Storage, is_remote
from raycorpus.output.clusters import read_cluster_summary
from raycorpus.output.ledger import RUN_FILE, Ledger, LedgerError, LedgerState
from raycorpus.output.report_state import ReportState
from raycorpus.output.summary import RunSummary, ThisRun, build_summary


class NotAnOutput(ValueError):
    """The path is missing, or holds no raycorpus output (the message names it)."""


@dataclass
class OutputView:
    url: str
    run: dict  # run.json: what the output was built from
    state: LedgerState  # the last checkpoint
    summary: RunSummary  # the ledger's totals (and the last run's figures, when its summary.json is current)
    report: ReportState | None  # None: written before raycorpus kept report data, or with output.report off
    config: Config | None  # the config it was built with (from the report's data)
    files: list[tuple[str, int]] = field(default_factory=list)  # (path under the output, bytes)

    @property
    def total_warcs(self) -> int:
        return int(self.run.get("warcs") or 0)

    @property
    def partial(self) -> bool:
        return not self.state.complete

    @property
    def tag_mode(self) -> bool:
        return self.config is not None and self.config.filters.mode == "tag"


def open_output(storage: Storage, url: str) -> OutputView:
    """Read an output's report inputs; raise :class:`NotAnOutput` for a missing folder or a folder that is not
    a raycorpus output."""
    url = url.rstrip("/") if is_remote(url) else str(Path(url).resolve())
    if not is_remote(url) and not Path(url).is_dir():
        raise NotAnOutput(f"{url}: no such folder")
    ledger = Ledger(storage, url)
    run = ledger.read_run()
    if run is None:
        raise NotAnOutput(f"{url} is not a raycorpus output (no {RUN_FILE})")
    try:
        state = ledger.load()
    except LedgerError as e:
        raise NotAnOutput(f"{url}: its ledger cannot be read ({e})") from None
    report = ReportState.read(storage, url, state.report) if state.report else None
    config = _config(report)
    summary = _summary(storage, url, state, run, config)
    return OutputView(url, run, state, summary, report, config, _files(storage, url))


def _config(report: ReportState | None) -> Config | None:
    if report is None or not report.config:
        return None
    try:
        return Config.model_validate(report.config)
    except ValidationError:  # written by another raycorpus whose settings this one does not know
        return None


def _summary(storage: Storage, url: str, state: LedgerState, run: dict, config: Config | None) -> RunSummary:
    """The ledger's totals as a run summary: summary.json when it describes this very state (then with the last
    run's own figures, ``this_run``), else built from the ledger (a partial output has none, or an older one)."""
    try:
        written = RunSummary.read(storage, url)
    except NotFound:
        written = None
    total = int(run.get("warcs") or 0)
    built = build_summary(config.output.path if config is not None else url, state, total, ThisRun(),
                          read_cluster_summary(storage, url))
    if written is not None and (written.warcs, written.docs, written.complete) == (built.warcs, built.docs,
                                                                                   built.complete):
        return written
    return built


def _files(storage: Storage, url: str) -> list[tuple[str, int]]:
    prefix = url.rstrip("/") + "/"
    return [(u.removeprefix(prefix), n) for u, n in storage.list_sizes(url)]
