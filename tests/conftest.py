"""Session fixtures (the real components) and the two passes of the suite.

``pytest -m "not integration"`` is the unit pass: it starts nothing real (no Ray, no SeaweedFS,
no HTTP server or proxy, no Prometheus). A test is ``integration`` when it asks for a real
component's fixture (marked here automatically), is ``slow``, or is marked by hand because it
starts one itself; an unmarked test that tries anyway fails with a message naming the marker
(``tests/support/guard.py``).
"""

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support import guard
from tests.support.corpus import Crawl
from tests.support.paths import REPO, SHARED, SHARED_WARC, need_shared  # noqa: F401  (re-exported)

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
os.environ["RAY_AUTH_MODE"] = "disabled"


@pytest.fixture(scope="session")
def s3_server():
    """A real S3-compatible server (SeaweedFS) for the whole session, its credentials in the environment.

    Session-scoped and started before Ray, so Ray's worker processes inherit the credentials
    through boto3's standard chain, exactly as on a real cluster node.
    """
    from tests.support.servers import SeaweedS3

    with SeaweedS3() as server, pytest.MonkeyPatch.context() as mp:
        for key, value in server.env().items():
            mp.setenv(key, value)
        for key in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE"):
            mp.delenv(key, raising=False)
        yield server


@pytest.fixture(scope="session")
def ray_address(tmp_path_factory, s3_server):
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


@pytest.fixture(scope="session")
def crawls(tmp_path_factory) -> Callable[..., Crawl]:
    """Sample crawls by size, each with a BPE trained on it, made once per session: ``crawls(n_warcs, pages, seed)``."""
    from tests.support.corpus import make_crawl, make_tokenizer

    made: dict[tuple[int, int, int], Crawl] = {}

    def crawl_of(n_warcs: int = 8, pages: int = 40, seed: int = 1) -> Crawl:
        key = (n_warcs, pages, seed)
        if key not in made:
            root = tmp_path_factory.mktemp(f"crawl-{n_warcs}x{pages}-s{seed}")
            sample = make_crawl(root / "warcs", n_warcs=n_warcs, pages=pages, seed=seed)
            made[key] = Crawl(sample, make_tokenizer(sample, root / "tokenizer.json"))
        return made[key]

    return crawl_of


@pytest.fixture(scope="session")
def crawl(crawls) -> Crawl:
    """The sample crawl most tests build (8 WARCs of 40 pages) and a BPE trained on it."""
    return crawls()


@pytest.fixture(scope="session")
def reference(crawl, tmp_path_factory, ray_address):
    """One undisturbed single-worker build of ``crawl``: the bytes every fault and scaling test must reproduce."""
    from tests.support.corpus import make_config, run

    c, tok = crawl
    out = tmp_path_factory.mktemp("ref") / "out"
    return out, run(make_config(str(c.manifest_path), str(out), tok, ray={"workers": 1}))


# asking for any of these (directly or through another fixture) makes a test an integration test
REAL_COMPONENTS = {"s3_server", "ray_address", "reference"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if REAL_COMPONENTS & set(item.fixturenames) or item.get_closest_marker("slow"):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(autouse=True)
def _unit_tests_start_nothing(request, monkeypatch):
    """Around a unit test: no server may start, and Ray (here or in a CLI the test runs) finds no cluster."""
    if request.node.get_closest_marker("integration"):
        yield
        return
    monkeypatch.setenv("RAY_ADDRESS", guard.NO_RAY_ADDRESS)
    guard.arm(True)
    try:
        yield
    finally:
        guard.arm(False)


@pytest.fixture(scope="session")
def real_warc(tmp_path_factory) -> Path:
    """A gzip WARC of real pages (one member per record, ~4.2 MB): see tests/support/realwarc.py."""
    from tests.support.realwarc import make_real_warc

    return make_real_warc(tmp_path_factory.mktemp("real-warc") / "pages.warc.gz")
