"""`dedup.against` in the core (no Ray): an earlier build's shard files, loaded read-only ahead of this build's
documents, decide as one build over both would, whatever the two shard counts."""

from __future__ import annotations

import gzip

import numpy as np
import pytest
from resiliparse.extract.html2text import extract_plain_text
from resiliparse.parse.html import HTMLTree

from raycorpus.ingest.storage import Storage, join_url
from raycorpus.process.dedup.index import EXACT, KEEP, KINDS, NEAR, PRIOR, URL, Deduplicator, Layout, LocalShards
from raycorpus.process.dedup.output import doc_id
from raycorpus.process.dedup.prior import PriorIndex, load_prior, local_gid, prior_number
from raycorpus.process.dedup.settings import DedupConfig
from raycorpus.process.dedup.shardlog import ShardFiles, encode_inserts, shard_dir
from raycorpus.process.dedup.sketch import Signer
from raycorpus.process.dedup.urlkey import url_key
from raycorpus.process.pipeline import content_hash
from tests.support.paths import SHARED, need_shared

CFG = DedupConfig()


class RecordingShards(LocalShards):
    """Local shards that keep every insert request, per shard (what a shard actor writes to its files)."""

    def __init__(self, layout: Layout):
        super().__init__(layout)
        self.requests: list[list[tuple]] = [[] for _ in range(layout.n_shards)]

    def insert(self, requests, ordinal):
        super().insert(requests, ordinal)
        for log, r in zip(self.requests, requests, strict=True):
            log.append(r)


@pytest.fixture(scope="module")
def pages() -> list[str]:
    """Main-content text of 60 real pages."""
    root = need_shared(SHARED / "data" / "extraction" / "trafilatura-eval")
    texts = []
    for path in sorted(root.glob("**/*.html.gz")):
        text = extract_plain_text(HTMLTree.parse(gzip.decompress(path.read_bytes()).decode("utf-8", "replace")),
                                  main_content=True)
        if len(text.split()) >= 200:
            texts.append(text)
        if len(texts) == 60:
            break
    return texts


def _near(text: str) -> str:
    words = text.split()
    return " ".join([*words[:-8], "and", "one", "more", "sentence", "here"])  # a few words changed at the end


def _warcs(pages: list[str]) -> list[list[tuple[str, str]]]:
    """Four WARCs (url, text): A's two, then B's two with exact, near and URL copies of A's pages, of one another
    and new pages."""
    a0 = [(f"https://a.example/{i}", t) for i, t in enumerate(pages[:20])]
    a1 = [*((f"https://a.example/{i}", t) for i, t in enumerate(pages[20:35], 20)),
          ("https://a.example/n0", _near(pages[3]))]
    b0 = ([(f"https://b.example/x{i}", pages[i]) for i in (1, 5, 22)]  # exact copies of A's kept pages
          + [(f"https://b.example/n{i}", _near(pages[i])) for i in (7, 30)]  # near copies
          + [("https://a.example/9?utm_source=feed", pages[40])]  # A's URL, new text
          + [(f"https://b.example/{i}", t) for i, t in enumerate(pages[41:50], 41)])
    b1 = ([("https://b.example/again", pages[45]), ("https://b.example/n3", _near(_near(pages[3])))]
          + [(f"https://b.example/{i}", t) for i, t in enumerate(pages[50:60], 50)])
    return [a0, a1, b0, b1]


def _batch(signer: Signer, pages: list[tuple[str, str]]) -> tuple:
    urls, texts = zip(*pages, strict=True)
    return (np.array([content_hash(t) for t in texts], np.uint64), signer.signatures(list(texts)),
            np.array([url_key(u) for u in urls], np.uint64))


def _write_prior(tmp_path, shards: RecordingShards, docnos: int) -> PriorIndex:
    """The earlier build's shard files as its shard actors write them, and what its ledger says of them."""
    storage, out = Storage(), str(tmp_path / "A")
    files = []
    for i, requests in enumerate(shards.requests):
        storage.write_atomic(join_url(shard_dir(join_url(out, "dedup"), i), "L0-000000000-000000002.npz"),
                             encode_inserts(requests))
        files.append(ShardFiles(("L0-000000000-000000002.npz",), 2, docnos))
    return PriorIndex(out, 0, tuple(files), docnos, 0, "test")


@pytest.mark.parametrize("n_prior, n_here", [(2, 2), (2, 3), (3, 1)])
def test_b_against_a_decides_as_one_build_over_both(pages, tmp_path, n_prior, n_here):
    signer = Signer()
    batches = [_batch(signer, w) for w in _warcs(pages)]
    one_run = Deduplicator(Layout.from_config(CFG, n_here), CFG.threshold, LocalShards(Layout.from_config(CFG, n_here)))
    expected = [one_run.decide(o, *b)[0] for o, b in enumerate(batches)]
    lay_a = Layout.from_config(CFG, n_prior)
    rec = RecordingShards(lay_a)
    a = Deduplicator(lay_a, CFG.threshold, rec)
    for o, b in enumerate(batches[:2]):
        a.decide(o, *b)
    prior = _write_prior(tmp_path, rec, a.next_docno)

    lay_b = Layout.from_config(CFG, n_here)
    here = LocalShards(lay_b)
    read = [load_prior(s, Storage(), prior) for s in here.shards]
    assert all(read) if n_prior != n_here else sum(read) > 0  # another shard count: each shard reads every file
    b = Deduplicator(lay_b, CFG.threshold, here, prior.docnos)
    got = [b.decide(o, *batch)[0] for o, batch in enumerate(batches[2:])]
    assert b.next_docno == one_run.next_docno  # B indexed what the one run indexed of B's WARCs
    for g, e, ordinal in zip(got, expected[2:], (2, 3), strict=True):
        from_a = np.array([prior_number(d) == 0 for d in g.dup_of])
        assert np.array_equal(g.kind - PRIOR * from_a, e.kind)  # the same decision, a prior kind where A had it
        assert np.array_equal(g.jaccard, e.jaccard, equal_nan=True)
        ids = [doc_id(d) for d in g.dup_of[g.kind != KEEP]]
        shifted = [f"{int(x.split('/')[0]) + (0 if f else 2)}/{x.split('/')[1]}"  # B's own ids are 2 WARCs lower
                   for x, f in zip(ids, from_a[g.kind != KEEP], strict=True)]
        assert shifted == [doc_id(d) for d in e.dup_of[e.kind != KEEP]], ordinal
    kinds = {KINDS[int(k)] for d in got for k in d.kind if k != KEEP}
    assert {"prior_exact", "prior_near", "prior_url", "exact"} <= kinds, kinds  # every kind of prior match happened


def test_a_prior_match_names_the_document_as_its_output_knows_it(pages, tmp_path):
    signer = Signer()
    lay = Layout.from_config(CFG, 1)
    rec = RecordingShards(lay)
    a = Deduplicator(lay, CFG.threshold, rec)
    a.decide(7, *_batch(signer, [("https://a.example/p", pages[0]), ("https://a.example/q", pages[1])]))
    prior = _write_prior(tmp_path, rec, a.next_docno)
    here = LocalShards(lay)
    load_prior(here.shards[0], Storage(), prior)
    b = Deduplicator(lay, CFG.threshold, here, prior.docnos)
    d, _ = b.decide(0, *_batch(signer, [("https://b.example/1", pages[1]), ("https://b.example/2", pages[2]),
                                        ("https://b.example/3", pages[2])]))
    assert d.kind.tolist() == [EXACT + PRIOR, KEEP, EXACT]
    assert doc_id(d.dup_of[0]) == "7/1" and prior_number(d.dup_of[0]) == 0 and local_gid(d.dup_of[0]) == 7 << 24 | 1
    assert doc_id(d.dup_of[2]) == "0/1" and prior_number(d.dup_of[2]) is None
    assert d.counts() == {"url": 0, "exact": 1, "near": 0, "prior_exact": 1}
    assert {URL, NEAR} < set(KINDS)


@pytest.mark.parametrize("tag", [False, True])
def test_the_audit_and_tag_mode_name_the_earlier_output(pages, tmp_path, tag):
    from raycorpus.output.docfiles import read_jsonl_zst
    from raycorpus.process.dedup.output import DedupVerdict, apply_decision
    from raycorpus.process.document import Document

    signer = Signer()
    lay = Layout.from_config(CFG, 1)
    rec = RecordingShards(lay)
    Deduplicator(lay, CFG.threshold, rec).decide(3, *_batch(signer, [("https://a.example/p", pages[0])]))
    prior = _write_prior(tmp_path, rec, 1)
    here = LocalShards(lay)
    load_prior(here.shards[0], Storage(), prior)
    b = Deduplicator(lay, CFG.threshold, here, prior.docnos)
    got = [("https://b.example/1", pages[0]), ("https://b.example/2", _near(pages[0]))]
    d, _ = b.decide(0, *_batch(signer, got))
    docs = [Document(t, u, f"<urn:{i}>", "2026-01-01") for i, (u, t) in enumerate(got)]
    verdict = DedupVerdict(d, True, (prior.output,))
    out = apply_decision(Storage(), str(tmp_path / "B"), 0, "w.warc.gz", docs, verdict, tag)
    if tag:
        assert [x.metadata["would_drop"] for x in out] == [["dedup:prior_exact"], ["dedup:prior_near"]]
        assert [x.metadata["dedup"]["dup_of_output"] for x in out] == [prior.output] * 2
        assert [x.metadata["dedup"]["dup_of"] for x in out] == ["3/0"] * 2
    else:
        assert out == []
        st = Storage()
        rows = [r for u in st.list(str(tmp_path / "B" / "exclusions")) for r in read_jsonl_zst(st, u)]
        assert [(r["reason"], r["dup_of"], r["dup_of_output"]) for r in rows] == [
            ("dedup:prior_exact", "3/0", prior.output), ("dedup:prior_near", "3/0", prior.output)]
