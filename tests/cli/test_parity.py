"""The FineWeb filters against datatrove's own classes, page by page (`python -m raycorpus.cli.parity`): with
English settings on every shared page, at least 99 % of the keep / drop decisions agree per filter and 99.5 %
for the chain. Every disagreement is printed with raycorpus's signal values."""

from __future__ import annotations

import pytest

from raycorpus.cli.parity import STAGES, compare, format_disagreements, shared_texts
from tests.support.paths import SHARED, need_shared

pytestmark = pytest.mark.slow  # ~1,100 pages through both sides (datatrove's spaCy tokenizer is the slow one)


def test_fineweb_filters_take_datatrove_s_decisions_on_the_shared_pages():
    pytest.importorskip("datatrove.pipeline.filters", reason="datatrove is not installed (the test extra)")
    pytest.importorskip("spacy", reason="spaCy (datatrove's English word tokenizer) is not installed (the test extra)")
    need_shared(SHARED / "data" / "extraction")
    texts = shared_texts(SHARED / "data")
    assert len(texts) > 1000
    parity = compare(texts, "en")
    print(f"\n{parity.table()}\n{format_disagreements(parity)}")
    for stage in STAGES:
        assert parity.agreement(stage) >= 0.99, f"{stage}\n{parity.table()}\n{format_disagreements(parity)}"
    assert parity.agreement("chain") >= 0.995, f"{parity.table()}\n{format_disagreements(parity)}"
