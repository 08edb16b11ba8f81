"""`dedup.against` end to end: build A, then B against A, on halves of one crawl that share exact, near and URL copies.

The heart: B keeps the documents (and their tokens) that one build of A's and B's manifests keeps of B's WARCs.
Shards cannot be compared file by file: the one-run build continues A's last shard with B's first documents,
while B starts a shard of its own, so the packing boundaries differ; the sequence of documents and tokens
is what must be (and is) identical.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from raycorpus.cli.summary import format_summary
from raycorpus.ingest.storage import Storage
from raycorpus.output.docfiles import read_jsonl_zst
from raycorpus.output.ledger import Ledger, LedgerError
from raycorpus.output.verify import verify_output
from tests.support.corpus import make_config, run, shard_digests, wait_for_checkpoints
from tests.support.servers import LocalHTTPServer

KINDS = ("url", "exact", "near")


def _documents(out: Path) -> list[bytes]:
    """Every document's tokens (EOS included) in shard order."""
    docs = []
    for meta_path in sorted((out / "shards").glob("shard-*.json")):
        meta = json.loads(meta_path.read_text())
        tokens = np.fromfile(meta_path.with_suffix(".tokens"), dtype=meta["dtype"])
        ends = np.fromfile(meta_path.with_suffix(".idx"), dtype="<u8")
        docs += [tokens[a:b].tobytes() for a, b in zip(np.r_[0, ends[:-1]], ends, strict=True)]
    return docs


def _state(root: Path) -> dict[str, tuple[str, int]]:
    """sha256 and mtime of every file under ``root``."""
    return {str(p.relative_to(root)): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
            for p in sorted(root.rglob("*")) if p.is_file()}


def _dedup_counts(out: Path, ordinals) -> Counter:
    """The dedup drops of the ledger entries of ``ordinals``, summed."""
    got: Counter = Counter()
    for e in Ledger(Storage(), str(out)).iter_entries():
        if e["ordinal"] in ordinals:
            got.update({k.removeprefix("drop:dedup:"): n for k, n in e["counts"].items()
                        if k.startswith("drop:dedup:")})
    return got


@pytest.fixture(scope="module")
def halves(crawl, tmp_path_factory):
    """Manifests of the crawl's first and second four WARCs, and of all eight (read from the crawl's folder)."""
    c, _ = crawl
    lines = c.manifest_path.read_text().split()
    root = tmp_path_factory.mktemp("halves")
    paths = {}
    for name, part in (("a", lines[:4]), ("b", lines[4:]), ("ab", lines)):
        paths[name] = root / f"{name}.paths"
        paths[name].write_text("".join(f"{x}\n" for x in part))
    return paths, str(c.manifest_path.parent)


@pytest.fixture(scope="module")
def built(crawl, halves, tmp_path_factory, ray_address):
    """A, the one-run build of A+B, and B against A (1 worker, 1 shard): their paths and summaries."""
    _, tok = crawl
    paths, base = halves
    root = tmp_path_factory.mktemp("against")
    common = {"input": {"base": base}, "output": {"documents": True}, "dedup": {"audit": True}}

    def build(name, manifest, workers=1, shards=1, against=(), **dedup):
        cfg = make_config(str(paths[manifest]), str(root / name), tok, ray={"workers": workers},
                          **{**common, "dedup": {**common["dedup"], "shards": shards, "against": list(against),
                                                 **dedup}})
        return root / name, run(cfg)

    a = build("A", "a", shards=2)
    ab = build("AB", "ab")
    before = _state(a[0])
    b = build("B", "b", against=[str(a[0])])
    return {"A": a, "AB": ab, "B": b, "build": build, "before": before}


def test_b_keeps_what_one_build_of_a_and_b_keeps_of_b(built):
    (a, sa), (ab, sab), (b, sb) = built["A"], built["AB"], built["B"]
    docs_a, docs_ab, docs_b = _documents(a), _documents(ab), _documents(b)
    assert docs_ab[: len(docs_a)] == docs_a  # A is the one-run build's prefix
    assert docs_b == docs_ab[len(docs_a):]  # the heart: B = (A + B in one run) minus A's part, token for token
    assert sb["tokens"] == sab["tokens"] - sa["tokens"]
    # B drops exactly the copies of what A indexed: the one-run build's dedup drops of B's WARCs, split by
    # whether the first copy was in A (prior) or in B
    one_run, got = _dedup_counts(ab, range(4, 8)), _dedup_counts(b, range(4))
    for kind in KINDS:
        assert got[kind] + got[f"prior_{kind}"] == one_run[kind], (kind, got, one_run)
    assert got["prior_exact"] > 0 and got["prior_near"] > 0, got  # the halves share exact and near copies
    for kind in KINDS:
        assert sb["docs"]["dropped"].get(f"dedup:prior_{kind}", 0) == got[f"prior_{kind}"]
    shown = format_summary(sb)  # `raycorpus summary`
    assert f"{got['prior_exact']:>10,}  dedup:prior_exact" in shown and "dedup:prior_near" in shown
    assert f"{sa['this_run']['dedup']['indexed_docs']:,} of them from dedup.against" in shown
    run_json = json.loads((b / "run.json").read_text())
    assert [x["output"] for x in run_json["dedup_against"]] == [str(a)]
    assert sb["this_run"]["dedup"]["prior_docs"] == sa["this_run"]["dedup"]["indexed_docs"]


PARAGRAPHS = {"enabled": True, "min_chars": 16, "threshold": 0.5}  # (the crawl's pages share short lines)


def test_with_paragraph_dedup_b_removes_what_one_build_of_a_and_b_removes_of_b(built):
    """A's shards hold the keys of the paragraphs its kept documents had: B against A removes them as the one-run
    build does (B's documents and tokens are its tail), and more than B alone; a B with paragraph dedup against an A
    without is refused (its index lacks the paragraphs)."""
    build = built["build"]
    a, sa = build("A_para", "a", shards=2, paragraphs=PARAGRAPHS)
    ab, sab = build("AB_para", "ab", paragraphs=PARAGRAPHS)
    b, sb = build("B_para", "b", against=[str(a)], paragraphs=PARAGRAPHS)
    _, alone = build("B_para_alone", "b", paragraphs=PARAGRAPHS)
    docs_a, docs_ab, docs_b = _documents(a), _documents(ab), _documents(b)
    assert docs_ab[: len(docs_a)] == docs_a
    assert docs_b == docs_ab[len(docs_a):]
    removed = {k: s["dedup_paragraphs"]["removed"] for k, s in (("a", sa), ("ab", sab), ("b", sb), ("alone", alone))}
    assert removed["b"] == removed["ab"] - removed["a"]
    assert removed["b"] > removed["alone"] > 0, removed  # paragraphs first seen in A
    assert all(c.ok for c in verify_output(Storage(), str(b)))
    with pytest.raises(LedgerError, match="other dedup settings"):  # built["A"]: without paragraph dedup
        build("B_para_refused", "b", against=[str(built["A"][0])], paragraphs=PARAGRAPHS)


def _sizes(out: Path) -> np.ndarray:
    """Every document's cluster size (clusters/), in shard order."""
    return np.concatenate([np.fromfile(p, "<u4") for p in sorted((out / "clusters").glob("shard-*.sizes"))])


def test_cluster_sizes_of_a_counted_with_b_are_the_one_run_builds(built):
    from raycorpus.output.clusters import ClusterError, sizes_with_later
    from raycorpus.training.loader import TokenWindows

    (a, _), (ab, _), (b, sb) = built["A"], built["AB"], built["B"]
    one, n_a = _sizes(ab), len(_documents(a))
    with_b = np.concatenate(sizes_with_later(Storage(), str(a), (str(b),)))
    assert with_b.tolist() == one[:n_a].tolist()  # A's clusters, B's duplicates of its documents counted
    assert _sizes(b).tolist() == one[n_a:].tolist()
    assert (with_b > _sizes(a)).any() and (with_b >= _sizes(a)).all()
    against = json.loads((b / "clusters" / "clusters.json").read_text())["against"]
    prior = sum(n for k, n in sb["docs"]["dropped"].items() if k.startswith("dedup:prior_"))
    assert [x["against"] for x in against] == [0] and against[0]["duplicates"] == prior > 0
    assert len(TokenWindows(a, 16, rehydrate=True, rehydrate_with=(str(b),))) > len(TokenWindows(a, 16))
    with pytest.raises(ClusterError, match="was not built against"):  # A came first: it counts nothing of B's
        sizes_with_later(Storage(), str(b), (str(a),))
    checks = {c.name: c for c in verify_output(Storage(), str(b))}
    assert checks["cluster sizes"].ok, checks["cluster sizes"].detail


def test_audit_rows_name_the_earlier_output_and_document(built):
    (a, _), (b, _) = built["A"], built["B"]
    st = Storage()
    kept_a = {r["metadata"]["id"]: r["text"] for u in sorted(st.list(str(a / "documents")))
              for r in read_jsonl_zst(st, u)}
    rows = [r for u in sorted(st.list(str(b / "exclusions"))) for r in read_jsonl_zst(st, u)]
    prior = [r for r in rows if r["reason"].startswith("dedup:prior_")]
    assert prior and all(r["dup_of_output"] == str(a) for r in prior)
    assert all("dup_of_output" not in r for r in rows if not r["reason"].startswith("dedup:prior_"))
    for r in prior:
        if r["reason"] in ("dedup:prior_exact", "dedup:prior_url"):  # URL and exact tables name kept documents
            assert r["dup_of"] in kept_a, r
    exact = [r for r in prior if r["reason"] == "dedup:prior_exact"]
    assert exact and all(kept_a[r["dup_of"]] == r["text"] for r in exact)


def test_b_is_the_same_with_2_workers_and_shards_and_a_is_never_written(built, tmp_path):
    a, _ = built["A"]
    b, _ = built["B"]
    b2, _ = built["build"]("B2", "b", workers=2, shards=3, against=[str(a)])  # A has 2 shards: each filters
    assert shard_digests(b2) == shard_digests(b)
    assert _state(a) == built["before"]  # bytes and mtimes of every file of A


def test_b_resumes_after_sigkill_to_the_same_bytes_and_refuses_a_changed_prior(crawl, built, halves, tmp_path):
    _, tok = crawl
    paths, base = halves
    a, _ = built["A"]
    b, _ = built["B"]
    prior = tmp_path / "A-copy"
    shutil.copytree(a, prior)
    out, cfg_path = tmp_path / "B", tmp_path / "b.yaml"
    held = paths["b"].read_text().split()[2]  # B's third WARC waits: the kill lands mid-run
    with LocalHTTPServer(Path(base), hold=(held,)) as www:
        cfg_path.write_text(json.dumps({
            "input": {"manifest": str(paths["b"]), "base": www.url},
            "output": {"path": str(out), "shard_size_tokens": 5000}, "tokenizer": {"path": tok},
            "ray": {"workers": 1}, "dedup": {"against": [str(prior)]},  # no shards: A's count (2)
            "run": {"checkpoint_interval_seconds": 0, "progress": "off"}}))
        cmd = [sys.executable, "-m", "raycorpus.cli", "run", str(cfg_path)]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for_checkpoints(proc, out, 1)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        www.release()
        assert 0 < Ledger(Storage(), str(out)).load().next_ordinal < 4, "the driver was not killed mid-run"
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert shard_digests(out) == shard_digests(b)
    r = subprocess.run([sys.executable, "-m", "raycorpus.cli", "verify", str(out)], capture_output=True, text=True)
    assert r.returncode == 0 and "FAIL" not in r.stdout, r.stdout
    # each shard loaded the slice it owns of A: A's files of the same shard, nothing else
    named = Ledger(Storage(), str(prior)).load().dedup
    reads = json.loads((out / "summary.json").read_text())["this_run"]["dedup"]["start_reads"]
    assert [r["prior_bytes"] for r in reads] == [
        sum((prior / "dedup" / f"shard-{i:04d}" / n).stat().st_size for n in d.files) for i, d in enumerate(named)]
    # the earlier output changes (here: its run.json): the resumed (or rerun) build refuses, exit 2
    run_json = json.loads((prior / "run.json").read_text())
    (prior / "run.json").write_text(json.dumps({**run_json, "note": "rebuilt"}))
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and "deduplicated against" in r.stderr, r.stderr[-2000:]


def test_a_prior_that_is_unfinished_or_built_otherwise_is_refused(crawl, built, halves, tmp_path):
    _, tok = crawl
    paths, base = halves
    a, _ = built["A"]
    cfg = make_config(str(paths["b"]), str(tmp_path / "B"), tok, input={"base": base},
                      dedup={"against": [str(a)], "num_perm": 128})
    with pytest.raises(LedgerError, match="other dedup settings"):
        run(cfg)
    cfg = make_config(str(paths["b"]), str(tmp_path / "B"), tok, input={"base": base},
                      dedup={"against": [str(tmp_path / "nothing")]})
    with pytest.raises(LedgerError, match="not a raycorpus output"):
        run(cfg)


def test_an_earlier_output_on_s3_is_read_in_place(crawl, built, halves, tmp_path, s3_server):
    _, tok = crawl
    paths, base = halves
    b, _ = built["B"]
    storage = {"s3_endpoint_url": s3_server.endpoint_url}
    client = s3_server.client()
    client.create_bucket(Bucket="earlier")
    run(make_config(str(paths["a"]), "s3://earlier/A", tok, input={"base": base}, ray={"workers": 1},
                    dedup={"shards": 2}, storage=storage))

    def objects():
        listed = client.list_objects_v2(Bucket="earlier", Prefix="A/")["Contents"]
        return {o["Key"]: (o["ETag"], o["LastModified"]) for o in listed}

    before = objects()
    s = run(make_config(str(paths["b"]), str(tmp_path / "B"), tok, input={"base": base}, ray={"workers": 1},
                        dedup={"against": ["s3://earlier/A"]}, storage=storage))
    assert shard_digests(tmp_path / "B") == shard_digests(b)  # the same bytes as against the local A
    assert s["this_run"]["dedup"]["shards"] == 2  # A's shard count
    assert objects() == before


def test_plan_counts_what_an_earlier_output_indexed(built, tmp_path):
    a, a_summary = built["A"]
    bench = tmp_path / "b.json"
    bench.write_text(json.dumps({"chain": {"warcs": 1, "docs_in": 100, "docs_kept": 50, "tokens": 10_000,
                                           "bytes_read": 10**6, "ms_per_doc_total": 4.0}}))
    r = subprocess.run([sys.executable, "-m", "raycorpus.cli", "plan", str(bench), "--warcs", "10", "--against",
                        str(a), "--against", str(a), "--json"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    p = json.loads(r.stdout)
    assert p["docs_indexed_prior"] == 2 * a_summary["this_run"]["dedup"]["indexed_docs"] > 0
    assert p["docs_indexed"] == 10 * 50 + p["docs_indexed_prior"]
