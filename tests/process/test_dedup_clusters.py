"""Duplicate clusters: links from dropped duplicates, cluster sizes, FineWeb-2's upsampling weights."""

from __future__ import annotations

import io

import numpy as np
import pytest

from raycorpus.ingest.storage import Storage
from raycorpus.process.dedup.clusters import Clusters, DupLinks, Links, upsampling
from raycorpus.process.dedup.index import EXACT, KEEP, NEAR, URL, Decision, RecordRows, make_gids
from raycorpus.process.dedup.lsh import NO_MATCH
from raycorpus.process.dedup.prior import PRIOR_SHIFT
from raycorpus.process.dedup.records import RowBlocks, block_name, decode_block, decode_links, encode_block


def gid(ordinal: int, index: int) -> int:
    return int(make_gids(ordinal, index + 1)[index])


def test_a_near_duplicate_of_an_indexed_near_duplicate_counts_for_the_kept_document():
    a, b, c, d, e = gid(0, 0), gid(0, 1), gid(1, 0), gid(1, 1), gid(2, 0)
    # b is a URL copy of a; c a near copy of a (indexed); d a near copy of c; e an exact copy of a
    clusters = Clusters.of(Links.of(np.array([b, c, d, e], np.uint64), np.array([a, a, c, a], np.uint64)))
    assert clusters.roots.tolist() == [a] and clusters.dups.tolist() == [4] and clusters.prior == 0
    assert clusters.sizes(np.array([a, gid(3, 0)], np.uint64)).tolist() == [5, 1]


def test_duplicates_of_an_earlier_outputs_documents_are_counted_apart():
    earlier = (1 << PRIOR_SHIFT) | gid(7, 3)  # (dedup.against: the first earlier output's document)
    a, b, c = gid(0, 0), gid(0, 1), gid(1, 0)
    clusters = Clusters.of(Links.of(np.array([b, c], np.uint64), np.array([earlier, b], np.uint64)))
    assert clusters.prior == 2 and clusters.roots.size == 0
    assert clusters.sizes(np.array([a], np.uint64)).tolist() == [1]


def test_no_links_give_clusters_of_one():
    empty = np.zeros(0, np.uint64)
    assert Clusters.of(Links.of(empty, empty)).sizes(np.array([gid(0, 0), gid(0, 1)], np.uint64)).tolist() == [1, 1]


def test_upsampling_reproduces_fineweb2s_weights():
    # huggingface/fineweb-2 README: no duplicates 1 time; N = 2 or 3: N times; N = 4: 3; 5 <= N < 100: 5;
    # N >= 100: 8; N >= 1000: 1 (very large clusters are taken to be low quality)
    sizes = np.array([1, 2, 3, 4, 5, 6, 99, 100, 101, 999, 1000, 1001, 50_000])
    assert upsampling(sizes).tolist() == [1, 2, 3, 3, 5, 5, 5, 8, 8, 8, 1, 1, 1]
    assert upsampling(sizes, {1: 1, 10: 2}).tolist() == [1] * 6 + [2] * 7
    with pytest.raises(ValueError, match="below 1"):
        upsampling(np.array([0]))


def test_links_name_the_decided_documents_in_tag_mode_too():
    kind = np.array([KEEP, URL, KEEP, NEAR + 3, EXACT], np.uint8)
    dup_of = np.array([NO_MATCH, gid(0, 0), NO_MATCH, 99, gid(0, 2)], np.uint64)
    decision = Decision(kind, dup_of, np.zeros(5, np.float32), 2)
    links = DupLinks.of(decision)
    assert links.rows.tolist() == [1, 3, 4] and links.dup_of.tolist() == [gid(0, 0), 99, gid(0, 2)]
    eligible = np.array([True, False, True, True, True, True])
    spread = DupLinks.of(decision.expand(eligible))
    assert spread.rows.tolist() == links.rows.tolist()  # positions among the documents that took part (gids)
    assert spread.gids(5).tolist() == [gid(5, 1), gid(5, 3), gid(5, 4)]


def test_blocks_carry_links_and_older_blocks_say_they_have_none():
    rows = {32: RecordRows(np.array([True, False, True]), None)}
    links = {32: DupLinks(np.array([1], np.uint32), np.array([gid(32, 0)], np.uint64)),
             33: DupLinks(np.array([0, 2], np.uint32), np.array([gid(32, 0), gid(32, 2)], np.uint64))}
    data = encode_block(rows, links)
    got = decode_links(data)
    assert sorted(got) == [32, 33] and got[33].rows.tolist() == [0, 2] and got[33].dup_of.tolist() == [
        gid(32, 0), gid(32, 2)]
    assert decode_block(data)[32].index.tolist() == [True, False, True]
    buf = io.BytesIO()  # a block as written before links
    with np.load(io.BytesIO(data)) as z:
        np.savez(buf, **{k: z[k] for k in z.files if not k.startswith("links_")})
    assert decode_links(buf.getvalue()) is None


def test_a_restarted_packer_keeps_the_links_its_checkpoint_named(tmp_path):
    st, url = Storage(), str(tmp_path)
    blocks = RowBlocks(st, url, 0)
    blocks.add(0, RecordRows(np.array([True, True]), None))
    blocks.add(1, None, DupLinks(np.array([0], np.uint32), np.array([gid(0, 1)], np.uint64)))
    blocks.flush()  # (the checkpoint at ordinal 2)
    blocks.add(2, None, DupLinks(np.array([0], np.uint32), np.array([gid(0, 0)], np.uint64)))
    blocks.flush()  # past the checkpoint: a restart from it drops ordinal 2's links, and commits it again
    again = RowBlocks(st, url, 2)
    assert sorted(again.links) == [1] and sorted(again.rows) == [0]
    again.flush()
    assert sorted(decode_links(st.read_bytes(f"{url}/{block_name(0)}"))) == [1]


def test_a_block_written_before_links_is_rewritten_without_them(tmp_path):
    st, url = Storage(), str(tmp_path)
    st.write_atomic(f"{url}/{block_name(0)}", encode_block({0: RecordRows(np.array([True]), None)}, None))
    blocks = RowBlocks(st, url, 1)  # (a build resumed by this raycorpus)
    blocks.add(1, RecordRows(np.array([True, False]), None),
               DupLinks(np.array([1], np.uint32), np.array([gid(0, 0)], np.uint64)))
    blocks.flush()
    data = st.read_bytes(f"{url}/{block_name(0)}")
    assert sorted(decode_block(data)) == [0, 1] and decode_links(data) is None  # no sizes for this output
