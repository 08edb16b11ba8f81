"""The run summary model: it reads the summary.json raycorpus has always written and writes the same bytes back;
build_summary gives those bytes from a ledger state; an older summary (parts missing) still loads."""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

from raycorpus import counts as ck
from raycorpus.cli.summary import cmd_summary, format_summary
from raycorpus.ingest.storage import Storage
from raycorpus.output.ledger import LedgerState
from raycorpus.output.shards import PackerState
from raycorpus.output.summary import SUMMARY_FILE, DedupStats, RunSummary, ThisRun, build_summary

DEMO = Path(__file__).parent / "data" / "summary-main-demo.json"  # written by `raycorpus demo` before the model


def test_a_summary_written_before_the_model_reads_and_writes_back_byte_identical():
    raw = DEMO.read_bytes()
    s = RunSummary.from_json(raw)
    assert s.to_json_bytes() == raw
    assert (s.output, s.complete, s.tokens, s.shards) == ("/tmp/demo1/corpus", True, 98642, 5)
    assert (s.warcs.total, s.warcs.committed, s.warcs.failed) == (4, 4, 0)
    assert (s.docs.in_, s.docs.kept, s.docs.dropped["dedup:near"]) == (212, 139, 5)
    assert s.records.skipped == {"not_200": 8, "not_html": 16} and s.stage_seconds["extract"] == 0.231
    run = s.this_run
    assert (run.processed, run.workers, run.docs_per_second, run.cpu_seconds["driver"]) == (4, 2, 185.1, 0.059)
    assert run.dedup.indexed_docs == 144 and run.dedup.prior_docs is None and run.dedup.start_reads[0].files == 0
    assert s.storage.retries == 0 and s.failed == []


def test_read_and_write_through_storage(tmp_path):
    s = RunSummary.from_json(DEMO.read_bytes())
    s.write(Storage(), str(tmp_path))
    assert (tmp_path / SUMMARY_FILE).read_bytes() == DEMO.read_bytes()
    assert RunSummary.read(Storage(), str(tmp_path)) == s


def test_build_summary_gives_the_bytes_of_before_from_the_same_ledger_state():
    """The demo's summary rebuilt from its ledger totals and run stats: same keys, values and rates."""
    expect = json.loads(DEMO.read_bytes())
    state = LedgerState(next_ordinal=4, committed=4, complete=True, totals=_totals(expect),
                        packer=PackerState(tokens=expect["tokens"], shards_closed=expect["shards"]))
    run = ThisRun.model_validate({k: v for k, v in expect["this_run"].items() if not k.endswith("_per_second")})
    assert run.docs_per_second is None
    assert build_summary(expect["output"], state, 4, run).to_json_bytes() == DEMO.read_bytes()


def _totals(s: dict) -> Counter:
    d, r = s["docs"], s["records"]
    t = Counter({ck.RECORDS: r["read"], ck.RESPONSES: r["responses"], ck.HTML: r["html_200"], ck.KEPT: d["kept"],
                 ck.BYTES_READ: s["bytes_read"]})
    t.update({ck.skip(k): n for k, n in r["skipped"].items()})
    t.update({ck.drop(*k.split(":", 1)): n for k, n in d["dropped"].items()})
    t.update({ck.charset(k): n for k, n in s["charset_sources"].items()})
    t.update({ck.time_in(k): round(sec * 1e9) for k, sec in s["stage_seconds"].items()})
    return t


def test_optional_parts_are_absent_from_the_json_when_absent():
    done = ThisRun(resumed_at=8, processed=0)  # an output complete already: nothing measured
    assert done.model_dump() == {"resumed_at": 8, "processed": 0} and done.with_rates() == done
    dedup = DedupStats(shards=1, restarts=0, indexed_docs=0, indexed_docs_in_shards=0, table_bytes=0,
                       signature_bytes=0, bytes_per_doc=None)
    assert "prior_docs" not in dedup.model_dump() and dedup.model_dump()["bytes_per_doc"] is None  # null, as before
    assert "prior_docs" in dedup.model_copy(update={"prior_docs": 5}).model_dump()


def test_an_older_summary_without_the_later_parts_loads_with_defaults():
    old = json.loads(DEMO.read_bytes())
    for key in ("storage", "stage_seconds", "charset_sources", "bytes_read"):
        del old[key]
    del old["docs"]["tagged"]
    old["this_run"] = {"resumed_at": 4, "processed": 0}
    s = RunSummary.model_validate(old)
    assert (s.storage.retries, s.stage_seconds, s.docs.tagged, s.this_run.dedup) == (0, {}, {}, None)
    assert format_summary(s).splitlines()[-1] == "resumed       at WARC #4 (earlier WARCs were already committed)"


def test_format_summary_and_json_print(tmp_path, capsys):
    s = RunSummary.from_json(DEMO.read_bytes())
    shown = format_summary(s).splitlines()
    assert shown[1] == "WARCs         4 committed, 0 failed, 0 pending of 4"
    assert "dedup index   144 documents in 1 LSH shard(s), 443 B/doc" in shown
    assert shown[-1] == "this run      4 WARCs in 0.8 s: 185 docs/s, 131,348 tokens/s, 1.3 MB/s read, 2 workers"
    (tmp_path / SUMMARY_FILE).write_bytes(DEMO.read_bytes())
    assert cmd_summary(argparse.Namespace(output=str(tmp_path), json=True)) == 0
    assert capsys.readouterr().out == json.dumps(json.loads(DEMO.read_bytes()), indent=1) + "\n"  # as before


def test_the_dict_view_reads_parts_as_the_json_holds_them():
    s = RunSummary.from_json(DEMO.read_bytes())
    assert s["docs"]["in"] == 212 and s["this_run"]["dedup"]["shards"] == 1 and s.get("nothing", 7) == 7


def test_a_real_build_summary_round_trips(reference):
    """The summary of the session's reference build (real Ray): the same bytes back, the demo's parts."""
    s = reference[1]
    again = RunSummary.from_json(s.to_json_bytes())
    assert again == s and again.to_json_bytes() == s.to_json_bytes()
    demo = json.loads(DEMO.read_bytes())
    assert set(s.to_dict()) == set(demo) | {"clusters"}  # (the demo's summary file predates the cluster sizes)
    assert set(s.to_dict()["this_run"]) == set(demo["this_run"])
