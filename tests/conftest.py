import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
SHARED_WARC = SHARED / "data" / "warc"

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
os.environ["RAY_AUTH_MODE"] = "disabled"


def need_shared(path: Path) -> Path:
    """Skip (with the reason) when the read-only ../shared data set is not beside the checkout."""
    if not path.exists():
        pytest.skip(f"{path} not present: the ../shared data set is only on the developers' machines and CI")
    return path


@pytest.fixture(scope="session")
def ray_address(tmp_path_factory):
    """A real local Ray cluster (2 CPUs) owned by this test session; drivers join it by address.

    Started by ray.init in this process, so ray.shutdown() stops exactly the processes it started.
    """
    import ray

    temp = tmp_path_factory.mktemp("ray")
    ray.init(num_cpus=2, include_dashboard=False, _temp_dir=str(temp), object_store_memory=200 * 2**20,
             log_to_driver=False)
    address = ray.get_runtime_context().gcs_address
    os.environ["RAY_ADDRESS"] = address  # subprocess drivers (the CLI) join this cluster
    yield address
    os.environ.pop("RAY_ADDRESS", None)
    ray.shutdown()
