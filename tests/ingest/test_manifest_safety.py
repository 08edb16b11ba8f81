"""Manifest lines are data: unsafe lines are never read and are listed as failed; nothing written derives
from a line (every output name comes from the WARC's ordinal)."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from raycorpus.ingest.manifest import ManifestError, count_manifest, iter_manifest, iter_manifest_entries
from raycorpus.ingest.storage import Storage
from raycorpus.output.ledger import Ledger
from raycorpus.output.verify import format_checks, verify_output
from tests.support.corpus import make_config, run

GOOD = "crawl-data/CC-MAIN-2025-33/segments/1/warc/a.warc.gz"
UNSAFE_WITH_BASE = {
    "/etc/passwd": "is an absolute path",
    "crawl-data/../../etc/passwd": "'..' segment",
    "..": "'..' segment",
    "crawl-data/%2e%2e/%2E%2E/secret.warc.gz": "'..' segment",  # percent-encoded: a web server decodes it
    "./a.warc.gz": "'.' or '..' segment",
    "crawl-data\\..\\x.warc.gz": "backslash",
    "s3://other-bucket/x.warc.gz": "URL scheme",
    "https://evil.example/x.warc.gz": "URL scheme",
    "file:///etc/passwd": "URL scheme",
    "javascript:alert(1)": "URL scheme",
    "crawl-data/a\x00.warc.gz": "control character",
    "crawl-data/a\x1b[2J.warc.gz": "control character",
}
UNSAFE_WITHOUT_BASE = {
    "../outside.warc.gz": "'..' segment",
    "/data/crawl/../../etc/passwd": "'..' segment",
    "s3://bucket/a/../b.warc.gz": "'..' segment",
    "ftp://host/x.warc.gz": "scheme storage does not read (ftp:)",
    "data:text/plain,hello": "scheme storage does not read (data:)",
    "javascript:alert(1)": "scheme storage does not read (javascript:)",
}


def write_manifest(path: Path, lines: list[str]) -> Path:
    path.write_text("# comment\n" + "".join(f"{line}\n" for line in lines), encoding="utf-8")
    return path


@pytest.mark.parametrize("base", ["s3://commoncrawl/", "https://data.commoncrawl.org", "/srv/mirror/"])
def test_unsafe_lines_are_rejected_with_the_reason_when_a_base_is_set(tmp_path, base):
    lines = [GOOD, *UNSAFE_WITH_BASE, GOOD]
    entries = list(iter_manifest_entries(str(write_manifest(tmp_path / "warc.paths", lines)), base, Storage()))
    assert [e.line for e in entries] == lines  # every line keeps its place (and so its ordinal)
    assert entries[0].url == entries[-1].url == base.rstrip("/") + "/" + GOOD and not entries[0].problem
    for lineno, (entry, (line, why)) in enumerate(zip(entries[1:-1], UNSAFE_WITH_BASE.items(), strict=True), 3):
        assert entry.url == "" and why in entry.problem, entry
        assert f"line {lineno} " in entry.problem and repr(line) in entry.problem


def test_without_a_base_urls_and_absolute_paths_stay_but_dot_segments_and_other_schemes_do_not(tmp_path):
    fine = ["s3://b/x.warc.gz", "https://h/y.warc.gz", "file:///d/z.warc.gz", "/abs/w.warc.gz", "rel/r.warc.gz"]
    manifest = write_manifest(tmp_path / "warc.paths", [*fine, *UNSAFE_WITHOUT_BASE])
    entries = list(iter_manifest_entries(str(manifest), None, Storage()))
    assert [e.url for e in entries[: len(fine)]] == [*fine[:4], f"{tmp_path}/rel/r.warc.gz"]
    for entry, why in zip(entries[len(fine):], UNSAFE_WITHOUT_BASE.values(), strict=True):
        assert entry.url == "" and why in entry.problem, entry


def test_strict_readers_refuse_and_the_count_includes_rejected_lines(tmp_path):
    manifest = str(write_manifest(tmp_path / "warc.paths", [GOOD, "../x.warc.gz", GOOD]))
    it = iter_manifest(manifest, "s3://commoncrawl/", Storage())
    assert next(it) == f"s3://commoncrawl/{GOOD}"
    with pytest.raises(ManifestError, match=r"line 3 contains a '\.' or '\.\.' segment"):
        next(it)
    assert count_manifest(manifest, "s3://commoncrawl/", Storage()) == 3


def test_every_accepted_line_resolves_under_the_base(tmp_path):
    """Whatever a line holds, an accepted one resolves to a path inside the base folder."""
    base = tmp_path / "base"
    pieces = ["a", "..", ".", "%2e%2e", "%2E.", ".%2e", "...", "a..b", "", "~", "$HOME", "%00", "\\", "//", "?x=..",
              "#..", ";..", "%252e%252e"]
    lines = [f"{p}/{q}/{r}.warc.gz" for p in pieces for q in pieces for r in ("w", "..")]
    manifest = write_manifest(tmp_path / "warc.paths", lines)
    accepted = 0
    for entry in iter_manifest_entries(str(manifest), str(base), Storage()):
        if entry.problem:
            continue
        accepted += 1
        assert os.path.normpath(entry.url).startswith(str(base) + os.sep), entry
    assert 0 < accepted < len(lines)


OUTPUT_PATH = re.compile(  # the output layout: every name is a role or an ordinal / shard number
    r"^(run|summary|lock)\.json$|^ledger/ckpt-\d{9}\.json$|^ledger/entries-L\d+-\d{9}-\d{9}\.json$"
    r"|^(dedup|documents|exclusions)/(dedup-)?\d{9}\.(npz|keys\.npz|jsonl\.zst|parquet)$"
    r"|^dedup/shard-\d{4}/L\d+-\d{9}-\d{9}\.npz$|^dedup/rows-\d{9}\.npz$"
    r"|^(shards|open|megatron|datatrove|packed)/shard-\d{6}[\w.-]*$"
    r"|^report/state-\d{9}\.json\.zst$"
    r"|^clusters/(shard-\d{6}\.sizes|clusters\.json|against-\d{2}\.npz)$"
)


def test_a_run_lists_unsafe_lines_as_failed_reads_none_of_them_and_writes_only_under_the_output(crawls,
                                                                                                 ray_address):
    c, tok = crawls(3, 20, seed=11)  # this test's own crawl: it writes beside it
    base = c.manifest_path.parent
    root = base.parent
    names = [p.name for p in c.warc_paths]
    # real, readable WARCs sit at the places the unsafe lines point to: a line must not reach them
    outside = root / "outside.warc.gz"
    shutil.copyfile(c.warc_paths[0], outside)
    unsafe = ["../outside.warc.gz", str(outside), f"file://{outside}", f"sub/%2e%2e/../{outside.name}"]
    lines = [names[0], *unsafe[:2], names[1], *unsafe[2:], names[2]]
    manifest = write_manifest(root / "warc.paths", lines)
    out = root / "out"
    s = run(make_config(str(manifest), str(out), tok, input={"base": str(base)}, output={"documents": True},
                        ray={"workers": 2}))
    assert s["complete"] and s["warcs"] == {"total": 7, "committed": 3, "failed": 4, "pending": 0}
    assert s["this_run"]["processed"] == 3  # the rejected lines were never dispatched to a worker
    failed = {f["warc"]: f for f in s["failed"]}
    assert set(failed) == set(unsafe)
    assert all(f["attempts"] == 0 and f["error"].startswith("manifest line rejected") for f in failed.values())
    assert [e["ordinal"] for e in Ledger(Storage(), str(out)).iter_entries()] == list(range(7))
    # every file written is under the output folder and named by ordinal or role, never by a manifest line
    written = [p for p in out.rglob("*") if p.is_file()]
    assert written and all(p.resolve().is_relative_to(out.resolve()) for p in written)
    assert not [p for p in written if not OUTPUT_PATH.match(p.relative_to(out).as_posix())], written
    assert not any(n in p.name for p in written for n in [*names, outside.name])
    assert sorted(p.name for p in root.iterdir()) == sorted([base.name, "tokenizer.json", "outside.warc.gz",
                                                             "warc.paths", "out"])
    checks = verify_output(Storage(), str(out))
    assert all(ch.ok for ch in checks), format_checks(checks)
