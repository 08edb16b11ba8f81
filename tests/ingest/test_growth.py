"""Grown manifests, the core: which reruns extend the original manifest, and what the refusals name
(on the real CC-MAIN-2025-33 manifest's lines)."""

from __future__ import annotations

import gzip

import pytest

from raycorpus.ingest.growth import ManifestChanged, ManifestLines, describe_change, lines_sha256
from tests.support.paths import SHARED, need_shared


@pytest.fixture(scope="module")
def cc_lines() -> list[str]:
    path = need_shared(SHARED / "data" / "cc-manifests" / "CC-MAIN-2025-33.warc.paths.gz")
    with gzip.open(path, "rt") as f:
        return [next(f).strip() for _ in range(200)]


def _check(lines: list[str], original: list[str], with_hash: bool = True, listed: int | None = None) -> None:
    known = dict(enumerate(original[: len(original) if listed is None else listed]))
    ManifestLines(lines).check_extends(len(original), lines_sha256(original) if with_hash else None, lambda: known)


def test_the_original_and_a_grown_manifest_are_accepted(cc_lines):
    _check(cc_lines[:100], cc_lines[:100])
    _check(cc_lines, cc_lines[:100])
    _check(cc_lines, cc_lines[:100], with_hash=False)  # an output from before the hash: its ledger lists them all
    assert ManifestLines(cc_lines).sha256(100) == lines_sha256(cc_lines[:100]) != ManifestLines(cc_lines).sha256()


@pytest.mark.parametrize("edit, message", [
    (lambda ls: [*ls[:40], "crawl-data/other.warc.gz", *ls[41:]], r"a line changed: WARC #40 \(the 41st"),
    (lambda ls: ls[:40] + ls[41:], r"a line removed: WARC #40 \(the 41st WARC line\)"),
    (lambda ls: [*ls[:40], ls[41], ls[40], *ls[42:]], r"lines reordered: WARC #40 \(the 41st WARC line\) is now .*"
                                                      r"which was WARC #41"),
    (lambda ls: [*ls[:40], "crawl-data/new.warc.gz", *ls[40:]], r"a line inserted: WARC #40 .*new lines go at the end"),
    (lambda ls: ls[:90], r"lines removed: the manifest has 90 WARC lines, the output was started with 100"),
])
def test_every_other_change_is_refused_naming_the_first_difference(cc_lines, edit, message):
    for with_hash in (True, False):
        with pytest.raises(ManifestChanged, match=message):
            _check(edit(cc_lines), cc_lines[:100], with_hash)


def test_a_difference_in_lines_no_checkpoint_lists_is_still_refused(cc_lines):
    changed = [*cc_lines[:80], "crawl-data/other.warc.gz", *cc_lines[81:]]
    with pytest.raises(ManifestChanged, match="the first 100 WARC lines are not the ones"):
        _check(changed, cc_lines[:100], listed=50)


def test_an_output_without_the_hash_grows_only_once_its_ledger_lists_every_line(cc_lines):
    with pytest.raises(ManifestChanged, match="resume it with its own manifest first"):
        _check(cc_lines, cc_lines[:100], with_hash=False, listed=60)
    _check(cc_lines[:100], cc_lines[:100], with_hash=False, listed=60)  # its own manifest resumes as before


def test_describe_change_names_a_changed_line_in_plain_words():
    said = describe_change(["a", "b", "c"], ["a", "x", "c"])
    assert said == "a line changed: WARC #1 (the 2nd WARC line) was 'b', now 'x'"
