"""`input.prefix`: the WARCs under a folder, in sorted order, named by their path under it (the real
../shared WARC folders)."""

from __future__ import annotations

import pytest

from raycorpus.config import ConfigError, config_from_dict
from raycorpus.ingest.manifest import iter_input_entries, iter_prefix_entries
from raycorpus.ingest.storage import Storage, StorageConfig
from tests.support.paths import SHARED_WARC, need_shared


def test_a_prefix_lists_every_warc_under_it_sorted_and_nothing_else(tmp_path):
    root = need_shared(SHARED_WARC)
    entries = list(iter_prefix_entries(str(root), Storage()))
    lines = [e.line for e in entries]
    assert lines == sorted(lines) and len(lines) >= 10
    assert all(line.endswith((".warc", ".warc.gz", ".wet", ".wet.gz")) for line in lines)
    assert all(e.url == f"{root}/{e.line}" and (root / e.line).is_file() for e in entries)
    assert not any(line.endswith((".json", ".txt", "LICENSE")) for line in lines)
    expected = sorted(str(p.relative_to(root)) for p in root.rglob("*")
                      if p.is_file() and p.name.endswith((".warc", ".warc.gz", ".wet", ".wet.gz"))
                      and not any(part.startswith(".") for part in p.relative_to(root).parts))
    assert lines == expected


def test_a_file_being_written_under_a_hidden_name_is_not_listed(tmp_path):
    (tmp_path / "b.warc.gz").write_bytes(b"x")
    (tmp_path / ".a.warc.gz").write_bytes(b"x")  # written, not renamed yet
    (tmp_path / "a.warc.gz.tmp").write_bytes(b"x")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "c.wet.gz").write_bytes(b"x")
    cfg = config_from_dict({"input": {"prefix": str(tmp_path)}, "output": {"path": str(tmp_path / "out")},
                            "tokenizer": {"path": "t.json"}})
    assert [e.line for e in iter_input_entries(cfg.input, Storage())] == ["b.warc.gz", "sub/c.wet.gz"]


@pytest.mark.parametrize("inp, message", [
    ({}, "set one of `manifest`"),
    ({"manifest": "warc.paths", "prefix": "warcs/"}, "set one of `manifest`"),
    ({"prefix": "warcs/", "base": "s3://commoncrawl/"}, "`base` goes with `manifest`"),
    ({"prefix": "https://data.commoncrawl.org/crawl-data/"}, "HTTP cannot be listed"),
])
def test_a_bad_input_is_refused_naming_the_field(inp, message):
    with pytest.raises(ConfigError, match=f"input.*{message}"):
        config_from_dict({"input": inp, "output": {"path": "out"}, "tokenizer": {"path": "t.json"}})


def test_the_prefix_is_in_the_fingerprint():
    """(A manifest config keeps the fingerprint of before `prefix`: tests/test_config.py's pinned values.)"""
    raw = {"input": {"manifest": "warc.paths"}, "output": {"path": "out"}, "tokenizer": {"path": "t.json"}}
    a, b = ({**raw, "input": {"prefix": p}} for p in ("/data/warcs", "/data/other"))
    assert len({config_from_dict(c).fingerprint() for c in (raw, a, b)}) == 3


def test_an_s3_prefix_lists_the_warcs_under_it(s3_server, tmp_path):
    """A real S3-compatible server (SeaweedFS): the keys under the prefix, sorted, named relative to it."""
    bucket = "raycorpus-prefix"
    if bucket not in {b["Name"] for b in s3_server.client().list_buckets()["Buckets"]}:
        s3_server.create_bucket(bucket)
    st = Storage(StorageConfig(s3_endpoint_url=s3_server.endpoint_url, s3_region="us-east-1"))
    for key in ("crawl/b/2.warc.gz", "crawl/a/1.warc.gz", "crawl/a/SOURCE.txt", "crawl/c.wet.gz", "other/x.warc.gz"):
        st.write_atomic(f"s3://{bucket}/{key}", b"x")
    entries = list(iter_prefix_entries(f"s3://{bucket}/crawl/", st))
    assert [e.line for e in entries] == ["a/1.warc.gz", "b/2.warc.gz", "c.wet.gz"]
    assert [e.url for e in entries] == [f"s3://{bucket}/crawl/{e.line}" for e in entries]
