"""The Ray-free parts of workers sharing one WARC: how many ranges, the range tasks, a failed range."""

from __future__ import annotations

from raycorpus.config import config_from_dict
from raycorpus.ingest.storage import Storage
from raycorpus.runtime.pool import Finished, Task
from raycorpus.runtime.split import RangeGather, ranges_per_warc, split_tasks

BASE = {"input": {"manifest": "m.paths"}, "output": {"path": "out"}, "tokenizer": {"path": "t.json"}}


def _cfg(split="auto", **sections):
    return config_from_dict({**BASE, "run": {"split_warcs": split}, **sections})


def test_how_many_ranges():
    assert ranges_per_warc(_cfg(), warcs=1, workers=2) == 16  # 8 per worker
    assert ranges_per_warc(_cfg(), warcs=3, workers=4) == 11
    assert ranges_per_warc(_cfg(), warcs=2, workers=2) == 1  # as many WARCs as workers: none cut
    assert ranges_per_warc(_cfg(), warcs=90_000, workers=1000) == 1
    assert ranges_per_warc(_cfg("off"), warcs=1, workers=8) == 1
    assert ranges_per_warc(_cfg(5), warcs=100, workers=2) == 5
    # their workers write one file per WARC: never cut
    assert ranges_per_warc(_cfg(5, filters={"mode": "tag"}), warcs=1, workers=8) == 1
    assert ranges_per_warc(_cfg(5, filters={"exclusions": {"enabled": True}}), warcs=1, workers=8) == 1


def test_range_tasks_cover_the_warc_and_what_is_not_cut(real_warc, tmp_path):
    size = real_warc.stat().st_size
    tasks = [Task(0, "a", str(real_warc)), Task(1, "bad line", ""), Task(2, "gone", str(tmp_path / "missing.gz"))]
    out = list(split_tasks(iter(tasks), Storage(), 8))
    ranges = [t for t in out if t.ordinal == 0]
    assert [t.part.index for t in ranges] == [0, 1, 2, 3] and {t.parts for t in ranges} == {4}  # >= 1 MiB each
    assert ranges[0].part.start == 0 and ranges[-1].part.end == size
    assert [(t.ordinal, t.part, t.parts) for t in out[4:]] == [(1, None, 1), (2, None, 1)]  # passed on whole
    assert [t.ordinal for t in split_tasks(iter(tasks), Storage(), 1)] == [0, 1, 2]


def test_a_range_failed_for_good_fails_its_warc_once_and_drops_the_others(real_warc):
    ranges = list(split_tasks(iter([Task(7, "w", str(real_warc))]), Storage(), 4))
    gather = RangeGather(need_docs=False)
    ranges[2].error, ranges[2].attempts = "WarcFormatError: bad gzip", 3
    failed = gather.fail(Finished(ranges[2]))
    assert (failed.task.ordinal, failed.task.part, failed.task.parts, failed.task.attempts) == (7, None, 1, 3)
    assert failed.task.error.startswith("WarcFormatError: bad gzip (record range 3 of 4, bytes ")
    assert all(gather.dropped(t) for t in ranges)  # not retried
    assert gather.add(Finished(ranges[0])) is None and not gather.done  # a late range is dropped
