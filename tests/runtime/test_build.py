"""End to end on a real Ray cluster: determinism, failures, resume after SIGKILL, S3 and HTTP input."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from raycorpus.config import Config
from raycorpus.ingest.storage import Storage
from raycorpus.output.ledger import Ledger
from raycorpus.output.verify import format_checks, verify_output
from tests.support.corpus import (
    make_config,
    run,
    shard_digests,
    wait_for_actors,
    wait_for_checkpoints,
    wait_until_no_actors,
)
from tests.support.servers import LocalHTTPServer


def test_reference_build_is_complete_and_plausible(reference, crawl):
    out, s = reference
    assert s["complete"] and s["warcs"]["committed"] == 8 and s["warcs"]["failed"] == 0
    assert s["docs"]["kept"] > 100 and s["tokens"] > 20_000 and s["shards"] >= 3
    assert s["records"]["skipped"]["not_html"] > 0 and s["records"]["skipped"]["not_200"] > 0
    assert s["docs"]["dropped"]["dedup:exact"] > 0 and s["docs"]["dropped"]["dedup:near"] > 0
    assert s["docs"]["dropped"]["dedup:url"] > 0  # exact copies behind campaign links (utm_*): their URL first
    assert json.loads((out / "shards" / "shard-000000.json").read_text())["sources"][0]["ordinal"] == 0
    state = Ledger(Storage(), str(out)).load()
    assert state.packer.docs == s["docs"]["kept"]  # the summary is the ledger's numbers
    checks = verify_output(Storage(), str(out))
    assert all(c.ok for c in checks), format_checks(checks)


def test_same_bytes_whatever_the_worker_count_and_buffer(reference, crawl, tmp_path):
    c, tok = crawl
    ref_out, ref_summary = reference
    for name, ray_cfg in {"w2": {"workers": 2}, "w2-inflight4": {"workers": 2, "in_flight_per_worker": 4,
                                                                    "reorder_buffer": 16}}.items():
        s = run(make_config(str(c.manifest_path), str(tmp_path / name), tok, ray=ray_cfg))
        assert shard_digests(tmp_path / name) == shard_digests(ref_out), name
        assert s["docs"] == ref_summary["docs"] and s["records"] == ref_summary["records"]


def test_unreadable_warcs_are_retried_then_listed_as_failed(crawl, tmp_path, ray_address):
    c, tok = crawl
    (tmp_path / "garbage.warc.gz").write_bytes(b"\x1f\x8b\x08\x00" + os.urandom(5000))
    lines = c.manifest_path.read_text().split()
    manifest = tmp_path / "warc.paths"
    manifest.write_text("\n".join([str(c.manifest_path.parent / lines[0]), str(tmp_path / "garbage.warc.gz"),
                                   str(tmp_path / "missing.warc.gz"), str(c.manifest_path.parent / lines[1])]))
    s = run(make_config(str(manifest), str(tmp_path / "out"), tok))
    assert s["warcs"] == {"total": 4, "committed": 2, "failed": 2, "pending": 0}
    failed = {Path(f["warc"]).name: f for f in s["failed"]}
    assert failed["garbage.warc.gz"]["attempts"] == 3 and failed["garbage.warc.gz"]["error"]
    assert "missing.warc.gz" in failed and "NotFound" in failed["missing.warc.gz"]["error"]
    assert s["this_run"]["retried"] >= 2
    # the CLI turns a failure over budget into exit 1, listing what failed; within budget exit 0
    cfg_path = tmp_path / "c.yaml"
    for budget, code in ((0, 1), (2, 0)):
        cfg_path.write_text(json.dumps({
            "input": {"manifest": str(manifest)}, "output": {"path": str(tmp_path / f"cli{budget}")},
            "tokenizer": {"path": tok}, "warc": {"retry_backoff_seconds": 0.1},
            "run": {"failure_budget": budget, "progress": "off"}}))
        r = subprocess.run([sys.executable, "-m", "raycorpus.cli", "run", str(cfg_path)],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == code, r.stderr[-2000:]
        assert "FAILED" in r.stdout and "garbage.warc.gz" in r.stdout


@pytest.mark.parametrize("kill_at_checkpoint, shards", [(1, 1), (5, 1), (4, 3)])
def test_resume_after_sigkill_of_the_driver(reference, crawl, tmp_path, kill_at_checkpoint, shards):
    """The resumed run reads no committed WARC again, and each LSH shard reads its own files only (those
    the checkpoint it resumes from names for it): not the whole index's records."""
    c, tok = crawl
    ref_out, ref_summary = reference
    out = tmp_path / "out"
    cfg_path = tmp_path / "c.yaml"
    held = c.manifest_path.read_text().split()[6]  # WARC #6 waits: the kill lands mid-run, whatever the speed
    with LocalHTTPServer(c.manifest_path.parent, hold=(held,)) as www:
        cfg_path.write_text(json.dumps({
            "input": {"manifest": str(c.manifest_path), "base": www.url},
            "output": {"path": str(out), "shard_size_tokens": 5000},
            "tokenizer": {"path": tok}, "ray": {"workers": 1}, "dedup": {"shards": shards},
            "run": {"checkpoint_interval_seconds": 0, "progress": "log"}}))
        cmd = [sys.executable, "-m", "raycorpus.cli", "run", str(cfg_path)]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        ledger = Ledger(Storage(), str(out))
        wait_for_checkpoints(proc, out, kill_at_checkpoint)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        www.release()
        before = ledger.load()
        assert 0 < before.next_ordinal < 8, "the driver was not killed mid-run"
        own = [sum((out / "dedup" / f"shard-{i:04d}" / name).stat().st_size for name in named.files)
               for i, named in enumerate(before.dedup)]  # each shard's files, as the checkpoint names them
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    s = json.loads((out / "summary.json").read_text())
    assert s["this_run"]["resumed_at"] == before.next_ordinal
    assert s["this_run"]["processed"] == 8 - before.next_ordinal  # committed WARCs are not read again
    assert shard_digests(out) == shard_digests(ref_out)
    assert s["docs"] == ref_summary["docs"] and s["tokens"] == ref_summary["tokens"]
    entries = list(ledger.iter_entries())
    assert [e["ordinal"] for e in entries] == list(range(8))  # each WARC exactly once
    r = subprocess.run([sys.executable, "-m", "raycorpus.cli", "verify", str(out)], capture_output=True, text=True,
                       check=False)
    assert r.returncode == 0 and "FAIL" not in r.stdout, r.stdout
    reads = s["this_run"]["dedup"]["start_reads"]
    assert len(reads) == len(before.dedup) == shards
    for i, (read, named) in enumerate(zip(reads, before.dedup, strict=True)):
        assert read == {"files": len(named.files), "file_bytes": own[i], "records": 0, "record_bytes": 0}, (i, read)
    assert sum(own) > 0


def test_resume_refuses_a_different_config(reference, crawl, tmp_path):
    c, tok = crawl
    ref_out, _ = reference
    from raycorpus.output.ledger import LedgerError

    with pytest.raises(LedgerError, match="config_fingerprint"):
        run(make_config(str(c.manifest_path), str(ref_out), tok, output={"shard_size_tokens": 777}))


def copied_reference(reference, crawl, tmp_path) -> tuple[Path, dict, Config]:
    """A copy of the reference output, its run.json (with the copy's config fingerprint: the output's path is
    part of it) and the config that resumes it."""
    import shutil

    c, tok = crawl
    out = tmp_path / "out"
    shutil.copytree(reference[0], out)
    cfg = make_config(str(c.manifest_path), str(out), tok)
    info = json.loads((out / "run.json").read_text()) | {"config_fingerprint": cfg.fingerprint()}
    return out, info, cfg


def test_resume_refuses_an_output_extracted_with_other_rules(reference, crawl, tmp_path):
    """run.json records the extraction rules' revision: an output started under another one is not continued with
    these rules (its documents would come from two extractors); one from before the record is."""
    from raycorpus.output.ledger import LedgerError
    from raycorpus.process.extract_rules import RULES_REVISION

    out, info, cfg = copied_reference(reference, crawl, tmp_path)
    assert info["extract_rules"] == RULES_REVISION
    (out / "run.json").write_text(json.dumps(info | {"extract_rules": RULES_REVISION - 1}))
    with pytest.raises(LedgerError, match=f"revision {RULES_REVISION - 1}; this raycorpus extracts with revision"):
        run(cfg)
    (out / "run.json").write_text(json.dumps({k: v for k, v in info.items() if k != "extract_rules"}))
    again = run(cfg)  # finished already: its summary, nothing read
    assert again["warcs"] == reference[1]["warcs"] and again["this_run"]["processed"] == 0


def test_resume_refuses_an_output_filtered_with_other_definitions(reference, crawl, tmp_path):
    """run.json records the quality stages' definitions: an output judged by another revision (or one from before
    the record: raycorpus's own definitions) is not continued with FineWeb's, which would judge half its documents
    otherwise."""
    from raycorpus.output.ledger import LedgerError
    from raycorpus.process.filters.base import FILTER_RULES

    out, info, cfg = copied_reference(reference, crawl, tmp_path)
    assert info["filter_rules"] == FILTER_RULES
    (out / "run.json").write_text(json.dumps({k: v for k, v in info.items() if k != "filter_rules"}))
    with pytest.raises(LedgerError, match="definitions of revision 1 .raycorpus's own, before FineWeb's.; this "
                       f"raycorpus filters with revision {FILTER_RULES}"):
        run(cfg)
    (out / "run.json").write_text(json.dumps(info))
    again = run(cfg)  # the same revision: finished already, its summary, nothing read
    assert again["warcs"] == reference[1]["warcs"] and again["this_run"]["processed"] == 0


def test_s3_input_and_output_give_the_same_bytes(reference, crawl, s3_server):
    """Manifest, WARCs and output all on a real S3-compatible server (credentials from the environment)."""
    c, tok = crawl
    ref_out, ref_summary = reference
    client = s3_server.client()
    client.create_bucket(Bucket="crawl")
    client.create_bucket(Bucket="corpus")
    for p in c.warc_paths:
        client.upload_file(str(p), "crawl", f"sample/{p.name}")
    client.put_object(Bucket="crawl", Key="warc.paths.gz", Body=gzip.compress(c.manifest_path.read_bytes()))
    # the same manifest lines under another base: the WARCs' identities, and so the bytes, are the same
    cfg = make_config("s3://crawl/warc.paths.gz", "s3://corpus/run1", tok, input={"base": "s3://crawl/sample/"},
                      ray={"workers": 2}, storage={"s3_endpoint_url": s3_server.endpoint_url})
    s = run(cfg)
    assert s["docs"] == ref_summary["docs"] and s["warcs"]["committed"] == 8
    st = Storage(cfg.storage)
    got = {"/".join(u.rsplit("/", 2)[1:]): st.read_bytes(u) for folder in ("shards", "clusters")
           for u in st.list(f"s3://corpus/run1/{folder}")}
    assert {k: hashlib.sha256(v).hexdigest() for k, v in got.items()} == shard_digests(ref_out)
    assert Ledger(st, "s3://corpus/run1").load().complete
    assert not st.list("s3://corpus/run1/open") and not st.list("s3://corpus/run1/tokens")  # staged: all deleted


def test_http_input_with_flaky_server(reference, crawl):
    """WARCs over HTTP from a local server that fails the first requests and cuts every first body."""
    from tests.support.servers import LocalHTTPServer

    c, tok = crawl
    ref_out, ref_summary = reference
    with LocalHTTPServer(str(c.manifest_path.parent), fail_first_n=1, reset_after_bytes=20_000) as www:
        cfg = make_config(www.url + c.manifest_path.name, str(reference[0].parent / "http-out"), tok,
                          input={"base": www.url}, ray={"workers": 2},
                          storage={"backoff_seconds": 0.05})
        s = run(cfg)
        gets = www.gets
    assert s["warcs"]["committed"] == 8 and s["docs"] == ref_summary["docs"]
    assert shard_digests(reference[0].parent / "http-out") == shard_digests(ref_out)
    assert all(gets[f"/{p.name}"] >= 2 for p in c.warc_paths)  # every WARC needed a retry or a ranged re-read


def test_tag_mode_keeps_everything_with_signals_in_the_documents_files(reference, crawl, tmp_path):
    from raycorpus.output.docfiles import read_jsonl_zst

    c, tok = crawl
    _, ref_summary = reference
    out = tmp_path / "tagged"
    s = run(make_config(str(c.manifest_path), str(out), tok, output={"documents": True}, filters={"mode": "tag"},
                        ray={"workers": 2}))
    in_docs = ref_summary["docs"]["in"]
    dropped_by_extract = sum(v for k, v in ref_summary["docs"]["dropped"].items() if k.startswith("extract:"))
    assert s["docs"]["kept"] == in_docs - dropped_by_extract > ref_summary["docs"]["kept"]
    assert not any(k.startswith(("lang", "gopher")) for k in s["docs"]["dropped"])
    st = Storage()
    rows = [r for u in st.list(str(out / "documents")) for r in read_jsonl_zst(st, u)]
    assert len(rows) == s["docs"]["kept"]
    # every document the filter-mode run dropped has at least one would-drop reason here
    filtered_out = in_docs - dropped_by_extract - ref_summary["docs"]["kept"]
    assert filtered_out > 0 and sum(s["docs"]["tagged"].values()) >= filtered_out
    assert sum(1 for r in rows if r["metadata"]["would_drop"]) == filtered_out
    assert all("lang" in r["metadata"] and "would_drop" in r["metadata"] and r["warc"] for r in rows)
    assert any("gopher_quality.mean_word_length" in r["metadata"] for r in rows)
    # dedup sees the documents filter mode keeps, so it tags exactly what filter mode dropped
    for kind in ("url", "exact", "near"):
        assert s["docs"]["tagged"][f"dedup:{kind}"] == ref_summary["docs"]["dropped"][f"dedup:{kind}"]
    assert all(r["metadata"]["dedup"]["dup_of"] for r in rows if "dedup:near" in r["metadata"]["would_drop"])
    checks = verify_output(st, str(out))
    assert all(c.ok for c in checks), format_checks(checks)


def test_dedup_keeps_the_first_copy_and_the_audit_names_it(reference, crawl, tmp_path):
    from raycorpus.output.docfiles import read_jsonl_zst
    from raycorpus.process.dedup.urlkey import url_key
    from raycorpus.process.pipeline import content_hash

    c, tok = crawl
    ref_out, ref_summary = reference
    out = tmp_path / "out"
    s = run(make_config(str(c.manifest_path), str(out), tok, output={"documents": True}, ray={"workers": 2},
                        dedup={"shards": 3, "audit": True}))
    assert shard_digests(out) == shard_digests(ref_out)  # 3 LSH shards decide like 1
    assert s["docs"] == ref_summary["docs"] and s["this_run"]["dedup"]["shards"] == 3
    st = Storage()
    docs = [r for u in sorted(st.list(str(out / "documents"))) for r in read_jsonl_zst(st, u)]
    audit = [r for u in sorted(st.list(str(out / "exclusions"))) for r in read_jsonl_zst(st, u)]
    hashes = [content_hash(r["text"]) for r in docs]
    assert len(set(hashes)) == len(hashes)  # no exact copies survive
    kept = {r["metadata"]["id"]: r for r in docs}
    dropped = s["docs"]["dropped"]
    assert len(audit) == dropped["dedup:url"] + dropped["dedup:exact"] + dropped["dedup:near"]
    indexed = {**kept, **{r["id"]: r for r in audit if r["reason"] == "dedup:near"}}  # near copies are indexed too
    for row in audit:
        # the copy it matched came earlier in manifest order: a URL or exact match names a kept document (near
        # copies insert no URL key or content hash), a near match any indexed one
        first = (indexed if row["reason"] == "dedup:near" else kept)[row["dup_of"]]
        assert tuple(map(int, first["metadata"]["id"].split("/"))) < tuple(map(int, row["id"].split("/")))
        if row["reason"] == "dedup:url":  # the sample crawl has copies behind campaign links (utm_*)
            assert url_key(first["url"]) == url_key(row["url"]) and row["jaccard"] is None
        elif row["reason"] == "dedup:exact":
            assert content_hash(first["text"]) == content_hash(row["text"])
        else:
            assert row["reason"] == "dedup:near" and row["jaccard"] >= 0.8
    assert s["this_run"]["dedup"]["indexed_docs"] == s["docs"]["kept"] + dropped["dedup:near"]
    _cluster_sizes_follow_the_audit(out, docs, audit)


def _cluster_sizes_follow_the_audit(out: Path, docs: list[dict], audit: list[dict]) -> None:
    """clusters/: each kept document's cluster size (1 + the duplicates whose links reach it), in shard order."""
    from raycorpus.output.clusters import CLUSTERS_DIR

    parent = {row["id"]: row["dup_of"] for row in audit}
    reach: dict[str, int] = {}
    for row in audit:
        root = row["dup_of"]
        while root in parent:  # a near copy may match an indexed near copy
            root = parent[root]
        reach[root] = reach.get(root, 0) + 1
    expect = [1 + reach.get(r["metadata"]["id"], 0) for r in docs]  # (documents/ is in commit order, as the shards)
    folder = out / CLUSTERS_DIR
    got = np.concatenate([np.fromfile(p, "<u4") for p in sorted(folder.glob("shard-*.sizes"))])
    assert got.tolist() == expect and max(expect) > 1
    summary = json.loads((folder / "clusters.json").read_text())
    assert summary["documents"] == len(docs) and summary["duplicates"] == len(audit) == sum(expect) - len(expect)
    assert {c.name: c.ok for c in verify_output(Storage(), str(out))}["cluster sizes"]
    first = folder / "shard-000000.sizes"
    first.write_bytes(first.read_bytes()[:-4])  # a size lost
    assert not {c.name: c.ok for c in verify_output(Storage(), str(out))}["cluster sizes"]


def test_killed_lsh_shard_is_rebuilt_and_the_output_is_unchanged(reference, crawl, tmp_path):
    """A shard actor SIGKILLed mid-run starts again from its own files (named by the last checkpoint) and
    the records of the WARCs committed since."""
    c, tok = crawl
    ref_out, ref_summary = reference
    out = tmp_path / "out"
    cfg_path = tmp_path / "c.yaml"
    held = c.manifest_path.read_text().split()[5]  # WARC #5 waits: the kill lands mid-run, whatever the speed
    with LocalHTTPServer(c.manifest_path.parent, hold=(held,)) as www:
        cfg_path.write_text(json.dumps({
            "input": {"manifest": str(c.manifest_path), "base": www.url},
            "output": {"path": str(out), "shard_size_tokens": 5000},
            "tokenizer": {"path": tok}, "ray": {"workers": 1}, "dedup": {"shards": 2},
            "run": {"checkpoint_interval_seconds": 0, "progress": "off"}}))
        wait_until_no_actors("LshShardActor")  # earlier tests' shard actors are still exiting: only this run's
        proc = subprocess.Popen([sys.executable, "-m", "raycorpus.cli", "run", str(cfg_path)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        pids = wait_for_actors(proc, "LshShardActor", 2)
        wait_for_checkpoints(proc, out, 2)
        os.kill(pids[0], signal.SIGKILL)
        www.release()
        _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr[-2000:]
    s = json.loads((out / "summary.json").read_text())
    assert s["this_run"]["dedup"]["restarts"] == 1, "the shard was not killed mid-run"
    assert "LSH shard(s) [" in stderr and "restarted from their files" in stderr
    assert shard_digests(out) == shard_digests(ref_out)
    assert s["docs"] == ref_summary["docs"]


def test_decontamination_drops_documents_holding_benchmark_text(crawl, tmp_path, ray_address):
    from raycorpus.output.docfiles import read_jsonl_zst
    from raycorpus.process.dedup.minhash import normalize

    c, tok = crawl
    st = Storage()
    first = run(make_config(str(c.manifest_path), str(tmp_path / "a"), tok, output={"documents": True}))
    docs = [r for u in sorted(st.list(str(tmp_path / "a" / "documents"))) for r in read_jsonl_zst(st, u)]
    by_warc = {r["warc"]: r for r in docs if len(r["text"].split()) > 120}
    spans = [" ".join(r["text"].split()[40:80]) for r in list(by_warc.values())[:3]]
    assert len(spans) == 3
    bench = tmp_path / "probe.jsonl"
    bench.write_text("".join(json.dumps({"question": s, "answer": "42"}) + "\n" for s in spans))
    decontam = {"enabled": True, "benchmarks": [{"name": "probe", "path": str(bench), "fields": ["question"]}]}
    s = run(make_config(str(c.manifest_path), str(tmp_path / "b"), tok, output={"documents": True},
                        filters={"decontam": decontam}, ray={"workers": 2}))
    holding = sum(1 for r in docs if any(normalize(sp) in normalize(r["text"]) for sp in spans))
    assert s["docs"]["dropped"]["decontam:probe"] >= holding >= 3
    kept = [r for u in sorted(st.list(str(tmp_path / "b" / "documents"))) for r in read_jsonl_zst(st, u)]
    assert not any(normalize(sp) in normalize(r["text"]) for r in kept for sp in spans)
    assert s["docs"]["kept"] == len(kept) < first["docs"]["kept"]


def test_trainer_formats_beside_the_shards(reference, crawl, tmp_path):
    import pyarrow.parquet as pq

    from raycorpus.output.formats import read_megatron_index
    from raycorpus.output.shards import iter_documents

    c, tok = crawl
    ref_out, ref_summary = reference
    out = tmp_path / "out"
    s = run(make_config(str(c.manifest_path), str(out), tok, ray={"workers": 2},
                        output={"format": ["megatron", "datatrove", "packed", "mds", "litdata", "parquet"],
                                "ctx_len": 64}))
    assert shard_digests(out) == shard_digests(ref_out)  # extra formats never change the canonical shards
    st = Storage()
    docs = list(iter_documents(st, str(out)))
    mega = []
    for i in range(s["shards"]):
        dtype, lengths, pointers, _ = read_megatron_index((out / "megatron" / f"shard-{i:06d}.idx").read_bytes())
        data = np.frombuffer((out / "megatron" / f"shard-{i:06d}.bin").read_bytes(), dtype)
        mega += [data[p // dtype.itemsize : p // dtype.itemsize + n] for p, n in zip(pointers, lengths, strict=True)]
        assert (out / "datatrove" / f"shard-{i:06d}.ds").read_bytes() == (out / "shards" / f"shard-{i:06d}.tokens"
                                                                          ).read_bytes()
        assert (out / "packed" / f"shard-{i:06d}.rows.npy").exists()
    assert len(mega) == len(docs) == s["docs"]["kept"]
    assert all(np.array_equal(a, b) for a, b in zip(mega, docs, strict=True))
    for fmt, key in (("mds", "shards"), ("litdata", "chunks")):  # their readers: tests/output/test_streaming_formats
        assert len(json.loads((out / fmt / "index.json").read_text())[key]) == s["shards"]
    table = pq.read_table(str(out / "documents"))
    assert table.num_rows == s["docs"]["kept"] and {"text", "url", "record_id", "warc", "lang", "metadata"} <= set(
        table.column_names)
    assert json.loads(pq.read_schema(next((out / "documents").glob("*.parquet"))).metadata[b"raycorpus"])[
        "tokenizer_sha256"] == ref_summary.get("tokenizer_sha256", json.loads((out / "run.json").read_text())[
            "tokenizer_sha256"])
    try:
        import datasets
    except ImportError:
        datasets = None  # the test extra installs it; the pyarrow read above still ran
    if datasets is not None:
        os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
        ds = datasets.load_dataset("parquet", data_files=str(out / "documents" / "*.parquet"), split="train",
                                   cache_dir=str(tmp_path / "hf-cache"))
        assert len(ds) == s["docs"]["kept"] and ds[0]["text"] and ds[0]["warc"]
    checks = verify_output(st, str(out))
    assert all(c.ok for c in checks), format_checks(checks)


def test_a_hung_warc_times_out_and_is_listed_as_failed(crawl, tmp_path, ray_address):
    c, tok = crawl
    fifo = tmp_path / "hangs.warc.gz"
    os.mkfifo(fifo)  # opening it for reading blocks forever: a real hang, in a real worker
    lines = c.manifest_path.read_text().split()
    manifest = tmp_path / "warc.paths"
    manifest.write_text("\n".join([str(c.manifest_path.parent / lines[0]), str(fifo),
                                   str(c.manifest_path.parent / lines[1])]))
    s = run(make_config(str(manifest), str(tmp_path / "out"), tok, ray={"workers": 2},
                        warc={"timeout_seconds": 8, "max_attempts": 2}))  # room for a good WARC on a loaded machine
    assert s["warcs"] == {"total": 3, "committed": 2, "failed": 1, "pending": 0}
    assert s["failed"][0]["warc"] == str(fifo) and s["failed"][0]["attempts"] == 2
    assert "timed out after 8 s" in s["failed"][0]["error"]


def test_a_second_run_on_the_same_output_is_refused(reference, crawl, tmp_path):
    c, tok = crawl
    ref_out, _ = reference
    out = tmp_path / "out"
    cfg_path = tmp_path / "c.yaml"
    cfg_path.write_text(json.dumps({
        "input": {"manifest": str(c.manifest_path)}, "output": {"path": str(out), "shard_size_tokens": 5000},
        "tokenizer": {"path": tok}, "ray": {"workers": 1}, "run": {"checkpoint_interval_seconds": 0}}))
    cmd = [sys.executable, "-m", "raycorpus.cli", "run", str(cfg_path), "--progress", "off"]
    first = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not (out / "lock.json").exists() and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    second = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    _, err = first.communicate(timeout=300)
    assert first.returncode == 0, err[-2000:]
    assert second.returncode == 2 and "is being written by run" in second.stderr, second.stderr[-2000:]
    assert shard_digests(out) == shard_digests(ref_out) and not (out / "lock.json").exists()
