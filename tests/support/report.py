"""Reading a written report back, for the tests."""

from __future__ import annotations

import json
import re
from pathlib import Path


def page_data(html_file: Path) -> dict:
    """The JSON the report's page renders from."""
    text = html_file.read_text(encoding="utf-8")
    found = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', text, re.S)
    assert found, f"{html_file}: no report data in the page"
    return json.loads(found.group(1))
