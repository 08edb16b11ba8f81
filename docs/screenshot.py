"""Regenerate the README's picture of the report: runs ``raycorpus demo`` in a temporary folder, opens its
``report.html`` in Debian's Chromium (Playwright with ``executable_path``: nothing downloaded) and saves the
top of the page, and the quality-signals and document-browser sections, as PNGs under ``docs/img/``.

    python docs/screenshot.py [--chromium /usr/bin/chromium]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

IMG = Path(__file__).parent / "img"
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]
SECTIONS = {"report-signals.png": "#signals", "report-documents.png": "#documents"}  # besides the top: report.png


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
        subprocess.run([sys.executable, "-m", "raycorpus.cli", "demo", "--dir", tmp, "--progress", "off"],
                       check=True, env=env, stdout=subprocess.DEVNULL)
        report = Path(tmp) / "corpus" / "report.html"
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=args.chromium, args=FLAGS)
            page = browser.new_page(viewport={"width": 1400, "height": 1000}, device_scale_factor=1)
            page.goto(report.as_uri())
            page.wait_for_function("[...document.querySelectorAll('[data-chart]')]"
                                   ".every(d => d.classList.contains('js-plotly-plot'))")
            top = {"x": 0, "y": 0, "width": 1400, "height": 1500}  # the overview and the funnel
            page.screenshot(path=str(IMG / "report.png"), full_page=True, clip=top)
            for name, selector in SECTIONS.items():
                box = page.locator(selector).bounding_box()
                page.screenshot(path=str(IMG / name), full_page=True, clip={
                    "x": 0, "y": box["y"] - 8, "width": 1400, "height": min(box["height"] + 16, 1300)})
            browser.close()
    for name in ["report.png", *SECTIONS]:
        print(IMG / name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
