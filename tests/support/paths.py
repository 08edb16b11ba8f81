"""Where the checkout and the read-only ../shared data set are; tests skip (with the reason) without it."""

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared"
SHARED_WARC = SHARED / "data" / "warc"


def need_shared(path: Path) -> Path:
    """Skip (with the reason) when the read-only ../shared data set is not beside the checkout."""
    if not path.exists():
        pytest.skip(f"{path} not present: the ../shared data set is only on the developers' machines and CI")
    return path
