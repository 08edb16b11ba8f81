"""``raycorpus report``: an output as one self-contained HTML page (charts and a document browser).

Built from what the output keeps for it (:mod:`raycorpus.output.report_state`, written at every checkpoint),
the ledger and the run summary; never from the documents, so it costs the same at any corpus size. ``run`` and
``select`` write it as ``OUTPUT/report.html`` when they end (also on an interrupt: for the committed prefix).
"""

from __future__ import annotations

from raycorpus.ingest.storage import Storage, join_url
from raycorpus.report.page import render
from raycorpus.report.view import NotAnOutput, OutputView, open_output

REPORT_FILE = "report.html"

__all__ = ["REPORT_FILE", "NotAnOutput", "OutputView", "open_output", "render", "write_report"]


def write_report(storage: Storage, out_url: str, target: str | None = None, against: str | None = None) -> str:
    """Write the report of the output at ``out_url`` to ``target`` (default: ``OUTPUT/report.html``), with
    ``against`` beside it; return where it went."""
    view = open_output(storage, out_url)
    other = open_output(storage, against) if against is not None else None
    target = target or join_url(view.url, REPORT_FILE)
    storage.write_atomic(target, render(view, other).encode("utf-8"))
    return target
