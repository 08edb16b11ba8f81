"""A Common-Crawl-shaped gzip WARC of real pages (../shared's readability test pages, one gzip member per
record), built once per session with ../shared/tools/make_bench_warc.py; tests skip without ../shared."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support.paths import SHARED, need_shared

PAGES = SHARED / "data" / "extraction" / "readability"
TOOL = SHARED / "tools" / "make_bench_warc.py"


def make_real_warc(out: Path) -> Path:
    """Write the WARC (about 4.2 MB, 395 records, 120 real pages plus copies) to ``out``."""
    need_shared(PAGES)
    need_shared(TOOL)
    subprocess.run([sys.executable, str(TOOL), str(out), str(PAGES)], check=True, capture_output=True)
    return out
