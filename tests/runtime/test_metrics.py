"""The metric catalogue. A real build scraped by a real Prometheus is in test_dashboard.py
(every declared metric and every panel has data; the totals equal the run summary)."""

from __future__ import annotations

import re

from raycorpus.runtime.metrics import CATALOGUE, PREFIX, exported_names


def test_the_catalogue_names_are_valid_and_unique():
    names = [m.name for m in CATALOGUE]
    assert len(names) == len(set(names))
    for m in CATALOGUE:
        assert re.fullmatch(r"raycorpus_[a-z_]+", m.name), m.name
        assert (m.kind == "counter") == m.name.endswith("_total"), m.name  # Prometheus naming conventions
        assert m.kind != "histogram" or m.boundaries, m.name
    assert all(n.startswith(PREFIX + "raycorpus_") for n in exported_names())
