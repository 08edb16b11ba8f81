"""A build from WET files (`input.format: wet`) on a real Ray cluster: the WET text of the crawl's pages
gives the token shards of the WARC build, whatever the worker count."""

from tests.support.corpus import make_config, run, shard_digests
from tests.support.wet import wet_manifest


def _tokens_and_index(digests: dict[str, str]) -> dict[str, str]:
    return {name: d for name, d in digests.items() if not name.endswith(".json")}  # the sidecars name the files


def test_a_wet_build_gives_the_warc_builds_token_shards(reference, crawl, tmp_path):
    c, tok = crawl
    ref_out, ref_summary = reference
    manifest = wet_manifest(c.warc_paths, tmp_path / "wet")
    out = tmp_path / "out"
    s = run(make_config(str(manifest), str(out), tok, input={"format": "wet"}, ray={"workers": 2}))
    assert _tokens_and_index(shard_digests(out)) == _tokens_and_index(shard_digests(ref_out))
    assert s["docs"]["kept"] == ref_summary["docs"]["kept"] and s["tokens"] == ref_summary["tokens"]
    assert "extract" not in s["stage_seconds"] and s["charset_sources"] == {"wet": s["docs"]["in"]}  # no extraction
