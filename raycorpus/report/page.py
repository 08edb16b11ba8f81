"""The report as one self-contained HTML file: the page's data as JSON, plotly.js (from the plotly wheel), the
page's own CSS and JavaScript, all inline. It opens from ``file://`` with no network."""

from __future__ import annotations

import html
import json
from datetime import UTC, datetime
from importlib import resources

from raycorpus import __version__
from raycorpus.report import sections
from raycorpus.report.compare import compare
from raycorpus.report.view import OutputView

#: section id -> (title, builder); a builder's None means the output lacks the data (said on the page)
SECTIONS = {
    "overview": ("Overview", sections.overview),
    "funnel": ("Funnel", sections.funnel),
    "languages": ("Languages", sections.languages),
    "lengths": ("Lengths", sections.lengths),
    "signals": ("Quality signals", sections.signals),
    "dedup": ("Dedup", sections.dedup),
    "cost": ("Cost", sections.cost),
    "output": ("Output", sections.output),
    "documents": ("Documents", sections.documents),
}


def page_data(view: OutputView, against: OutputView | None = None) -> dict:
    """Everything the page shows, as JSON-able values."""
    data: dict = {
        "path": view.url, "generated": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "raycorpus": __version__, "partial": view.partial, "tag": view.tag_mode,
        "committed": view.state.committed, "total": view.total_warcs, "sections": [], "missing": {},
    }
    why = sections.missing_note(view)
    for key, (title, build) in SECTIONS.items():
        data["sections"].append({"id": key, "title": title})
        value = build(view)
        data[key] = value
        if value is None:
            data["missing"][key] = why or "this output has no data for it (dedup is off)"
    if against is not None:
        data["sections"].append({"id": "against", "title": "Comparison"})
        data["against"] = compare(view, against)
    return data


def render(view: OutputView, against: OutputView | None = None) -> str:
    """The report's HTML."""
    data = json.dumps(page_data(view, against), ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    assets = resources.files("raycorpus.report") / "assets"
    plotly_js = (resources.files("plotly") / "package_data" / "plotly.min.js").read_text(encoding="utf-8")
    return TEMPLATE.format(
        title=html.escape(f"raycorpus report: {view.url}"),
        css=(assets / "report.css").read_text(encoding="utf-8"),
        plotly=_script(plotly_js),
        data=data.replace("<", "\\u003c"),  # nothing in the data can end the script element
        js=_script((assets / "report.js").read_text(encoding="utf-8")),
    )


def _script(js: str) -> str:
    return js.replace("</script", "<\\/script")


TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval';
 style-src 'unsafe-inline'; img-src data:; font-src data:">
<title>{title}</title>
<style>{css}</style>
</head>
<body>
<header id="top"></header>
<nav id="nav"></nav>
<main id="main"></main>
<script>{plotly}</script>
<script type="application/json" id="report-data">{data}</script>
<script>{js}</script>
</body>
</html>
"""
