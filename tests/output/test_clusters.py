"""The cluster-size sidecar's reading side: links from the rows blocks, the histogram."""

from __future__ import annotations

import numpy as np
import pytest

from raycorpus.ingest.storage import Storage
from raycorpus.output.clusters import ClusterError, histogram, ordered, read_links
from raycorpus.process.dedup.clusters import DupLinks
from raycorpus.process.dedup.index import DEDUP_DIR, RecordRows, make_gids
from raycorpus.process.dedup.records import block_name, encode_block


def test_links_come_from_every_block_and_an_older_block_refuses(tmp_path):
    st, dedup = Storage(), tmp_path / DEDUP_DIR
    a, b = (int(make_gids(o, 1)[0]) for o in (0, 17))
    st.write_atomic(str(dedup / block_name(0)), encode_block({0: RecordRows(np.array([True, False]), None)},
                                                             {0: DupLinks(np.array([1], np.uint32),
                                                                          np.array([a], np.uint64))}))
    st.write_atomic(str(dedup / block_name(1)), encode_block({}, {17: DupLinks(np.array([0], np.uint32),
                                                                              np.array([a], np.uint64))}))
    links = read_links(st, str(tmp_path), 40)  # (block 2 has no file: nothing indexed or dropped there)
    assert links.children.tolist() == [a + 1, b] and links.parents.tolist() == [a, a]
    st.write_atomic(str(dedup / block_name(2)), encode_block({32: RecordRows(np.array([True]), None)}, None))
    with pytest.raises(ClusterError, match="before duplicate links"):
        read_links(st, str(tmp_path), 40)


def test_histogram_bins_are_fineweb2s():
    assert histogram(np.array([1, 1, 2, 3, 4, 5, 99, 100, 999, 1000, 7000])) == {
        "1": 2, "2": 1, "3-4": 2, "5-99": 2, "100-999": 2, "1000+": 2}
    as_text = dict(sorted(histogram(np.array([1, 2, 150])).items()))  # (summary.json sorts keys as text)
    assert [k for k, _ in ordered(as_text)] == ["1", "2", "3-4", "5-99", "100-999", "1000+"]
