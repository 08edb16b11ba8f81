"""WET versions of a sample crawl's WARCs (the shipped extractor's text as conversion records)."""

from __future__ import annotations

from pathlib import Path

from raycorpus.demo.wet import write_wet_from_warc


def wet_manifest(warcs: list[Path], folder: Path) -> Path:
    """Write one WET per WARC into ``folder`` and a manifest listing them in the same order."""
    folder.mkdir(parents=True, exist_ok=True)
    wets = []
    for warc in warcs:
        wet = folder / warc.name.replace(".warc.gz", ".warc.wet.gz")
        write_wet_from_warc(warc, wet)
        wets.append(wet)
    manifest = folder / "wet.paths"
    manifest.write_text("".join(f"{w}\n" for w in wets))
    return manifest
