"""The single writer, Ray-free: shard boundaries, checkpoints, and resume from any checkpoint."""

import hashlib
from collections import Counter

import numpy as np
import pytest

from raycorpus import counts as ck
from raycorpus.ingest.storage import Storage
from raycorpus.output.commit import CorpusWriter
from raycorpus.output.ledger import Ledger, LedgerError
from raycorpus.output.shards import iter_documents, read_shard, stage_tokens
from raycorpus.process.results import WarcSummary

META = {"tokenizer": "t", "tokenizer_sha256": "x", "vocab_size": 1000, "dtype": "<u2", "eos_id": 0}


def warcs(n=12, seed=0):
    """Deterministic fake WARC results: (tokens, lengths, keep) with varied document sizes; dedup drops
    about a quarter of the documents (``keep``)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        lengths = rng.integers(1, 60, size=int(rng.integers(0, 9))).astype(np.uint64)
        tokens = rng.integers(1, 1000, size=int(lengths.sum())).astype("<u2")
        tokens[np.cumsum(lengths).astype(np.int64) - 1] = META["eos_id"]  # every document ends with EOS
        out.append((tokens, lengths, rng.random(len(lengths)) < 0.75))
    return out


def commit(w, out, i, data):
    """What a worker and the committer do: stage the WARC's tokens, then commit the kept documents."""
    tokens, lengths, keep = data[i]
    return w.commit(i, f"w{i}", summary(i), stage_tokens(Storage(), str(out), i, tokens, lengths), keep)


def summary(i):
    return WarcSummary(i, f"w{i}", 1, bytes_read=100, seconds=0.01, counts=Counter({ck.KEPT: 1, ck.RECORDS: 3}))


def digest(out):
    h = hashlib.sha256()
    for p in sorted((out / "shards").iterdir()):
        h.update(p.name.encode() + p.read_bytes())
    return h.hexdigest()


def build(out, data, interval=0.0, stop_after=None, shard=100):
    w = CorpusWriter(Storage(), str(out), shard, META, interval)
    start = w.state.next_ordinal
    for i in range(start, len(data)):
        if stop_after is not None and i >= stop_after:
            return w
        if i == 5:
            w.fail(i, f"w{i}", "OSError: bad gzip", 3)
            continue
        commit(w, out, i, data)
    w.finish()
    return w


def test_documents_are_whole_and_in_order(tmp_path):
    data = warcs()
    w = build(tmp_path, data)
    expect = []
    for i, (tokens, lengths, keep) in enumerate(data):
        if i == 5:
            continue
        pos = 0
        for n, kept in zip(lengths, keep, strict=True):
            if kept:
                expect.append(tokens[pos:pos + int(n)])
            pos += int(n)
    got = list(iter_documents(Storage(), str(tmp_path)))
    assert len(got) == len(expect) == w.state.packer.docs
    assert all(np.array_equal(a, b) for a, b in zip(got, expect, strict=True))
    # every shard but the last holds >= shard_size tokens and closes right after the doc that fills it
    n_shards = w.state.packer.shards_closed
    for i in range(n_shards):
        tokens, ends, meta = read_shard(Storage(), str(tmp_path), i)
        assert len(tokens) == int(ends[-1]) == meta["tokens"]
        if i < n_shards - 1:
            assert len(tokens) >= 100 and int(ends[-2]) < 100
        assert meta["sha256"]["tokens"] == hashlib.sha256(tokens.tobytes()).hexdigest()
    assert not list((tmp_path / "tokens").glob("*"))  # staged files are gone once their shards closed
    state = Ledger(Storage(), str(tmp_path)).load()
    assert state.complete and state.committed == 11 and state.failed[0]["ordinal"] == 5


@pytest.mark.parametrize("stop_after", [1, 4, 5, 6, 9, 11])
def test_resume_from_any_checkpoint_is_byte_identical(tmp_path, stop_after):
    data = warcs()
    build(tmp_path / "ref", data)
    build(tmp_path / "run", data, stop_after=stop_after)  # "crash": the writer is dropped mid-run
    build(tmp_path / "run", data)  # resume
    assert digest(tmp_path / "run") == digest(tmp_path / "ref")
    entries = list(Ledger(Storage(), str(tmp_path / "run")).iter_entries())
    assert [e["ordinal"] for e in entries] == list(range(12))  # each WARC committed exactly once


def test_uncheckpointed_work_is_redone_not_duplicated(tmp_path):
    data = warcs()
    build(tmp_path / "ref", data)
    # checkpoints only every hour: a crash after 8 commits loses them all (nothing durable names them) ...
    w = build(tmp_path / "run", data, interval=3600, stop_after=8)
    assert w.state.seq == 0 and Ledger(Storage(), str(tmp_path / "run")).load().next_ordinal == 0
    build(tmp_path / "run", data)  # ... and they are redone exactly once
    assert digest(tmp_path / "run") == digest(tmp_path / "ref")


def test_a_staged_file_stays_while_a_checkpoint_names_it_and_goes_after(tmp_path):
    data = warcs()
    w = build(tmp_path, data, stop_after=3)
    w.checkpoint()
    named = Ledger(Storage(), str(tmp_path)).load().packer.files()
    assert named and {f"tokens/{p.name}" for p in (tmp_path / "tokens").iterdir()} == named
    for i in range(3, 9):
        commit(w, tmp_path, i, data)
    w.checkpoint()  # the earlier files' documents are in closed shards now, and this checkpoint says so
    left = {f"tokens/{p.name}" for p in (tmp_path / "tokens").iterdir()}
    assert left == Ledger(Storage(), str(tmp_path)).load().packer.files() and not named & left


def test_progress_counts_what_is_committed_not_only_what_is_checkpointed(tmp_path):
    """The progress line and this run's rates read ``progress()``: between two checkpoints (an hour apart) it
    must count the documents and tokens of the WARCs committed since the last one."""
    data = warcs()
    w = build(tmp_path, data, interval=3600, stop_after=3)
    w.checkpoint()
    at_checkpoint = w.progress()
    for i in range(3, 9):
        if i == 5:
            w.fail(i, f"w{i}", "OSError: bad gzip", 3)
        else:
            commit(w, tmp_path, i, data)
    p = w.progress()
    kept = [(int(keep.sum()), int(lengths[keep].sum())) for _, lengths, keep in (data[i] for i in (3, 4, 6, 7, 8))]
    assert (p.next_ordinal, p.durable_ordinal) == (9, 3)
    assert p.docs - at_checkpoint.docs == sum(d for d, _ in kept) > 0
    assert p.tokens - at_checkpoint.tokens == sum(t for _, t in kept) > 0
    assert Ledger(Storage(), str(tmp_path)).load().packer.docs == at_checkpoint.docs  # none of it is durable yet


def test_a_legacy_open_shard_of_segments_resumes(tmp_path):
    """Earlier outputs kept the open shard as segments under open/: a resume reads them."""
    import io
    import json

    data = warcs()
    build(tmp_path / "ref", data)
    w = build(tmp_path / "run", data, stop_after=3)
    w.checkpoint()
    ckpt = sorted((tmp_path / "run" / "ledger").glob("ckpt-*.json"))[-1]
    state = json.loads(ckpt.read_text())
    packer = state["packer"]
    segments = []
    for n, piece in enumerate(packer.pop("pieces")):  # rewrite the open shard the old way
        with np.load(tmp_path / "run" / piece["file"]) as z:
            tokens, lengths = z["tokens"], z["lengths"]
        ends = np.r_[0, np.cumsum(lengths)].astype(np.int64)
        sel = [(tokens[ends[a]:ends[b]], lengths[a:b]) for a, b in piece["ranges"]]
        buf = io.BytesIO()
        np.savez(buf, tokens=np.concatenate([t for t, _ in sel]), lengths=np.concatenate([n for _, n in sel]))
        name = f"shard-{packer['shard_index']:06d}.seg-{n:06d}.npz"
        (tmp_path / "run" / "open").mkdir(exist_ok=True)
        (tmp_path / "run" / "open" / name).write_bytes(buf.getvalue())
        segments.append(name)
    packer["segments"] = segments
    del packer["open_docs"], packer["open_tokens"]
    ckpt.write_text(json.dumps(state))
    build(tmp_path / "run", data)
    assert digest(tmp_path / "run") == digest(tmp_path / "ref")
    assert not list((tmp_path / "run" / "open").iterdir())


def test_checkpoint_frequency_does_not_change_bytes(tmp_path):
    data = warcs()
    build(tmp_path / "a", data, interval=0)
    build(tmp_path / "b", data, interval=3600)
    assert digest(tmp_path / "a") == digest(tmp_path / "b")


def test_out_of_order_commit_is_refused(tmp_path):
    w = CorpusWriter(Storage(), str(tmp_path), 100, META, 0)
    with pytest.raises(LedgerError, match="out of order"):
        commit(w, tmp_path, 1, warcs())


def test_verify_passes_and_catches_damage(tmp_path):
    from raycorpus.output.verify import verify_output

    build(tmp_path, warcs())
    import json

    Ledger(Storage(), str(tmp_path)).write_run({"token_meta": META})
    assert all(c.ok for c in verify_output(Storage(), str(tmp_path)))
    p = tmp_path / "shards" / "shard-000001.tokens"
    data = bytearray(p.read_bytes())
    data[0] ^= 1
    p.write_bytes(bytes(data))
    bad = {c.name: c for c in verify_output(Storage(), str(tmp_path)) if not c.ok}
    assert "tokens checksum" in bad["shards"].detail
    assert json.loads((tmp_path / "shards" / "shard-000001.json").read_text())["docs"] > 0


def test_a_temp_file_left_by_a_lost_shard_writer_is_gone_when_the_run_finishes(tmp_path):
    """A shard-closing task that dies with its node mid-write leaves a ``.tmp-`` file; the shard is written
    again by its retry, and the finished output holds only what the reference holds."""
    data = warcs()
    build(tmp_path / "ref", data)
    w = build(tmp_path / "run", data, stop_after=6)
    stray = tmp_path / "run" / "shards" / ".tmp-shard-000002.idx.0123abcd"
    stray.write_bytes(b"half a shard")
    for i in range(6, len(data)):
        commit(w, tmp_path / "run", i, data)
    w.finish()
    assert not stray.exists()
    assert digest(tmp_path / "run") == digest(tmp_path / "ref")
