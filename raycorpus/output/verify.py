"""Re-read a finished (or partial) output and check it against its ledger."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from raycorpus import counts as ck
from raycorpus.ingest.storage import NotFound, Storage, join_url
from raycorpus.output.clusters import CLUSTERS_DIR, SUMMARY_FILE, sizes_name
from raycorpus.output.docfiles import DOCUMENTS_DIR, read_jsonl_zst
from raycorpus.output.ledger import Ledger, LedgerState
from raycorpus.output.shards import SHARDS_DIR, shard_name
from raycorpus.output.streaming_formats import STREAMING_FORMATS, streaming_format_problems
from raycorpus.process.dedup.index import DEDUP_DIR, split_gid
from raycorpus.process.dedup.records import RecordReader
from raycorpus.process.dedup.shardlog import shard_dir


@dataclass
class Check:
    name: str
    ok: bool
    detail: str


def verify_output(storage: Storage, out_url: str) -> list[Check]:
    checks: list[Check] = []

    def check(name: str, ok: bool, detail: str) -> None:
        checks.append(Check(name, bool(ok), detail))

    ledger = Ledger(storage, out_url)
    run = ledger.read_run()
    check("run.json", run is not None, "present" if run else "missing: not a raycorpus output")
    if run is None:
        return checks
    state = ledger.load()
    committed = _check_ledger(ledger, state, check)
    held = _check_shards(storage, out_url, state, run["token_meta"]["eos_id"], check)
    open_names = sorted(state.packer.files())
    missing = [n for n in open_names if not storage.exists(join_url(out_url, n))]
    check("open shard", not missing,
          f"{len(open_names)} staged token files present" if not missing else f"missing {missing}")
    if state.complete:
        shard_docs, shard_tokens = held.docs, held.tokens
        check("complete", not open_names and shard_docs == state.packer.docs and shard_tokens == state.packer.tokens,
              f"closed shards hold all {shard_docs:,} docs and {shard_tokens:,} tokens")
        per_warc = {e["ordinal"]: e["docs"] for e in committed if e["docs"]}
        check("docs per WARC", dict(held.by_warc) == per_warc,
              "every committed WARC's documents are in the shards exactly once" if dict(held.by_warc) == per_warc
              else "shard sources disagree with the ledger")
        _check_clusters(storage, out_url, state, held.per_shard, check)
    _check_formats(storage, out_url, state.packer.shards_closed, check)
    _check_dedup_records(storage, out_url, committed, check)
    _check_shard_files(storage, out_url, state, check)
    _check_documents(storage, out_url, check)
    return checks


def _check_ledger(ledger: Ledger, state: LedgerState, check) -> list[dict]:
    """Entries in manifest order, each WARC once, totals adding up; returns the committed entries."""
    entries = list(ledger.iter_entries())
    ordinals = [e["ordinal"] for e in entries]
    check("ledger order", ordinals == list(range(state.next_ordinal)),
          f"{len(entries)} entries, WARCs 0..{state.next_ordinal - 1} each exactly once, in manifest order"
          if ordinals == list(range(state.next_ordinal)) else "entries missing, repeated or out of order")
    committed = [e for e in entries if e["status"] == "committed"]
    check("ledger totals", sum(e["docs"] for e in committed) == state.packer.docs
          and sum(e["tokens"] for e in committed) == state.packer.tokens,
          f"{state.packer.docs:,} docs, {state.packer.tokens:,} tokens in {len(committed):,} committed WARCs")
    return committed


@dataclass
class _ShardTotals:
    """What the closed shards hold: documents per WARC ordinal, documents, tokens."""

    by_warc: Counter = field(default_factory=Counter)
    per_shard: list[int] = field(default_factory=list)  # documents of each closed shard
    docs: int = 0
    tokens: int = 0


def _check_shards(storage: Storage, out_url: str, state: LedgerState, eos: int, check) -> _ShardTotals:
    held = _ShardTotals()
    bad: list[str] = []
    for i in range(state.packer.shards_closed):
        base = join_url(join_url(out_url, SHARDS_DIR), shard_name(i))
        meta = json.loads(storage.read_bytes(base + ".json"))
        problems = _shard_problems(storage.read_bytes(base + ".tokens"), storage.read_bytes(base + ".idx"), meta, eos)
        if problems:
            bad.append(f"{shard_name(i)}: {', '.join(problems)}")
        for s in meta["sources"]:
            held.by_warc[s["ordinal"]] += s["docs"]
        held.docs += meta["docs"]
        held.per_shard.append(meta["docs"])
        held.tokens += meta["tokens"]
    check("shards", not bad, "; ".join(bad) if bad else f"{state.packer.shards_closed} shards: checksums, "
          "document index and EOS all consistent")
    return held


def _check_clusters(storage: Storage, out_url: str, state: LedgerState, per_shard: list[int], check) -> None:
    """clusters/ (a finished filter-mode build with dedup): one sizes file per shard, a size ≥ 1 per document, the
    summary's checksums, and every document dedup dropped counted once in a cluster."""
    folder = join_url(out_url, CLUSTERS_DIR)
    try:
        summary = json.loads(storage.read_bytes(join_url(folder, SUMMARY_FILE)))
    except NotFound:
        return
    bad, dups = [], 0
    for i, docs in enumerate(per_shard):
        name = sizes_name(i)
        try:
            data = storage.read_bytes(join_url(folder, name))
        except NotFound:
            bad.append(f"{name} missing")
            continue
        sizes = np.frombuffer(data, "<u4")
        if sizes.size != docs or (sizes.size and sizes.min() < 1):
            bad.append(f"{name}: {sizes.size} sizes for {docs} documents" if sizes.size != docs else f"{name}: a 0")
        if hashlib.sha256(data).hexdigest() != summary["files"].get(name):
            bad.append(f"{name}: checksum")
        dups += int(sizes.astype(np.int64).sum()) - sizes.size
    dropped = sum(n for k, n in state.totals.items() if k.kind == ck.Kind.DROP and k.name == "dedup"
                  and k.reason != "paragraphs")  # (dropped for their removed paragraphs: no one's duplicate)
    against = sum(e["duplicates"] for e in summary.get("against", []))
    unplaced = summary.get("unplaced_duplicates", 0)  # (of a document then dropped for its paragraphs)
    if not bad and (dups != summary["duplicates"] or dups + summary["prior_duplicates"] + unplaced != dropped
                    or against != summary["prior_duplicates"]):
        bad.append(f"{dups:,} duplicates in the sizes, {summary['duplicates']:,} in clusters.json "
                   f"(+ {summary['prior_duplicates']:,} of earlier outputs, {against:,} in their against files, "
                   f"{unplaced:,} of documents dropped for their paragraphs), {dropped:,} dropped by dedup")
    check("cluster sizes", not bad, "; ".join(bad) if bad else f"{len(per_shard)} sizes files: {dups:,} dropped "
          f"duplicates in the clusters of {summary['documents']:,} documents")


def _shard_problems(tok_bytes: bytes, idx_bytes: bytes, meta: dict, eos: int) -> list[str]:
    tokens = np.frombuffer(tok_bytes, dtype=np.dtype(meta["dtype"]))
    ends = np.frombuffer(idx_bytes, dtype="<u8")
    problems = []
    if hashlib.sha256(tok_bytes).hexdigest() != meta["sha256"]["tokens"]:
        problems.append("tokens checksum")
    if hashlib.sha256(idx_bytes).hexdigest() != meta["sha256"]["idx"]:
        problems.append("idx checksum")
    if len(ends) != meta["docs"] or (len(ends) and int(ends[-1]) != len(tokens)) or np.any(np.diff(ends) <= 0):
        problems.append("document index")
    elif len(ends) and np.any(tokens[ends.astype(np.int64) - 1] != eos):
        problems.append("a document does not end with EOS")
    if sum(s["docs"] for s in meta["sources"]) != meta["docs"]:
        problems.append("sources")
    return problems


def _check_dedup_records(storage: Storage, out_url: str, committed: list[dict], check) -> None:
    indexed = [e for e in committed if e.get("counts", {}).get("dedup_indexed")]
    if not indexed:
        return
    wrong = []
    records = RecordReader(storage, join_url(out_url, DEDUP_DIR))
    for e in indexed:
        try:
            record, _ = records.read(e["ordinal"])
        except NotFound as missing:
            wrong.append(f"WARC #{e['ordinal']}: its dedup record is incomplete: {missing}")
            continue
        except ValueError as bad:
            wrong.append(str(bad))
            continue
        gids, hashes = record.gids, record.hashes
        if gids.size != e["counts"]["dedup_indexed"] or hashes.size != gids.size or any(
                split_gid(g)[0] != e["ordinal"] for g in gids[:1]):
            wrong.append(f"WARC #{e['ordinal']}: record disagrees with the ledger")
    n = sum(e["counts"]["dedup_indexed"] for e in indexed)
    check("dedup records", not wrong, "; ".join(wrong[:5]) if wrong
          else f"{n:,} indexed documents in {len(indexed):,} records, as the ledger says")


def _check_shard_files(storage: Storage, out_url: str, state: LedgerState, check) -> None:
    """Every LSH shard's files the last checkpoint names exist, and cover WARCs the ledger has. Says what it
    counts: the files that checkpoint names (a finished output: one per shard that indexed a document), the
    documents indexed, and any file under the shards' folders the checkpoint does not name (left by a killed run,
    removed when it resumes; or by a raycorpus before the end's compaction: a rerun of the finished output
    removes them)."""
    if not state.dedup:
        return
    dedup_url = join_url(out_url, DEDUP_DIR)
    on_storage = [{u.rsplit("/", 1)[-1] for u in storage.list(shard_dir(dedup_url, i))}
                  for i in range(len(state.dedup))]
    missing = [f"shard {i}: {name}" for i, d in enumerate(state.dedup) for name in d.files if name not in on_storage[i]]
    ahead = [i for i, d in enumerate(state.dedup) if d.upto > state.next_ordinal]
    named = sum(len(d.files) for d in state.dedup)
    unnamed = sum(len(files - set(d.files)) for files, d in zip(on_storage, state.dedup, strict=True))
    which = "final" if state.complete else "last"
    detail = (f"{len(state.dedup)} LSH shards: {named} segment files named by the {which} checkpoint, all present; "
              f"{state.totals[ck.DEDUP_INDEXED]:,} documents indexed"
              + (f"; {unnamed} more files under dedup/shard-*/ that it does not name" if unnamed else ""))
    check("dedup index", not missing and not ahead, "; ".join(missing[:5]) or (
        f"shards {ahead} name WARCs the ledger has not committed" if ahead else detail))


def _check_documents(storage: Storage, out_url: str, check) -> None:
    doc_files = storage.list(join_url(out_url, DOCUMENTS_DIR))
    for suffix in (".jsonl.zst", ".parquet"):
        ids: Counter = Counter()
        for url in (u for u in doc_files if u.endswith(suffix)):
            ids.update(_record_ids(storage, url))
        twice = [k for k, n in ids.items() if n > 1]
        if ids:
            check("documents", not twice, f"{len(ids):,} record ids in *{suffix}, "
                  "none twice" if not twice else f"{len(twice)} record ids appear more than once, e.g. {twice[0]}")


def _check_formats(storage: Storage, out_url: str, shards: int, check) -> None:
    """Trainer-format copies: present for every closed shard, tokens equal to the canonical shard's."""
    suffixes = {"megatron": (".bin", ".idx"), "datatrove": (".ds", ".ds.index"), "packed": (".rows.npy", ".docs.npy")}
    for fmt, (data_suffix, other) in suffixes.items():
        folder = join_url(out_url, fmt)
        names = {u.rsplit("/", 1)[-1] for u in storage.list(folder)}
        if not names:
            continue
        bad = []
        for i in range(shards):
            name = shard_name(i)
            if not {name + data_suffix, name + other, name + ".json"} <= names:
                bad.append(f"{name}: missing files")
                continue
            if fmt != "packed":
                data = storage.read_bytes(join_url(folder, name + data_suffix))
                side = json.loads(storage.read_bytes(join_url(join_url(out_url, SHARDS_DIR), name + ".json")))
                if hashlib.sha256(data).hexdigest() != side["sha256"]["tokens"]:
                    bad.append(f"{name}: tokens differ from shards/")
        ok = "files present" if fmt == "packed" else "tokens equal to shards/"
        check(fmt, not bad, "; ".join(bad[:5]) if bad else f"{shards} shards, {ok}")
    for fmt in STREAMING_FORMATS:
        if storage.list(join_url(out_url, fmt)):
            sides = [json.loads(storage.read_bytes(join_url(join_url(out_url, SHARDS_DIR), shard_name(i) + ".json")))
                     for i in range(shards)]
            bad = streaming_format_problems(storage, out_url, fmt, sides)
            check(fmt, not bad, "; ".join(bad[:5]) if bad else f"{shards} shards indexed, tokens equal to shards/")


def _record_ids(storage: Storage, url: str) -> list[str]:
    if url.endswith(".parquet"):
        import io

        import pyarrow.parquet as pq

        return pq.read_table(io.BytesIO(storage.read_bytes(url)), columns=["record_id"]).column(0).to_pylist()
    return [r["record_id"] for r in read_jsonl_zst(storage, url)]


def format_checks(checks: list[Check]) -> str:
    return "\n".join(f"{'PASS' if c.ok else 'FAIL'}  {c.name:<14} {c.detail}" for c in checks)
