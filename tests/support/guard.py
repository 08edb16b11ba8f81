"""Unit tests start nothing real. The conftest arms this guard around every test not marked ``integration``:
starting a server (SeaweedFS, an HTTP server or proxy, Prometheus, a Ray node) then fails the test with a
message naming the marker, and ``RAY_ADDRESS`` names no cluster, so ``ray.init`` (in the test or in a CLI it
runs) fails at once."""

from __future__ import annotations

import pytest

NO_RAY_ADDRESS = "unit-test-not-marked-integration"
_armed = False


def arm(on: bool) -> None:
    global _armed
    _armed = on


def need_integration(what: str) -> None:
    if _armed:
        pytest.fail(f"this test starts {what}: mark it @pytest.mark.integration (pytest -m 'not integration' "
                    "is the unit pass, which starts nothing)", pytrace=False)
