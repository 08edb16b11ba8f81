"""The ledger: one file read to resume, a bounded number of files after any number of checkpoints."""

from __future__ import annotations

import pytest

from raycorpus.ingest.storage import Storage
from raycorpus.output.ledger import Ledger, LedgerError, LedgerState


def _checkpoints(ledger: Ledger, n: int, per: int = 3, **compact) -> None:
    state = LedgerState()
    for seq in range(1, n + 1):
        entries = [{"ordinal": state.next_ordinal + i, "warc": f"w{state.next_ordinal + i}", "status": "committed",
                    "docs": 1, "tokens": 2} for i in range(per)]
        state.seq, state.next_ordinal, state.committed = seq, state.next_ordinal + per, state.committed + per
        ledger.write_checkpoint(state, entries)
        ledger.compact(**compact)


def test_compaction_bounds_the_files_and_keeps_every_entry_once(tmp_path):
    ledger = Ledger(Storage(), str(tmp_path))
    _checkpoints(ledger, 700, keep_last=4, fanin=4)
    names = sorted(p.name for p in (tmp_path / "ledger").iterdir())
    assert len(names) <= 4 + 4 * 5, names  # 700 checkpoints: the newest 4 plus < 4 files per level
    assert any(n.startswith("entries-L3-") for n in names)
    state = ledger.load()
    assert state.seq == 700 and state.next_ordinal == 2100
    assert [e["ordinal"] for e in ledger.iter_entries()] == list(range(2100))
    assert [e["ordinal"] for e in ledger.entries_since(1234)] == list(range(1234, 2100))


def test_a_compaction_cut_short_leaves_a_loadable_ledger(tmp_path):
    """The entries file was written, its checkpoints not yet deleted: they are read once and cleaned up."""
    ledger = Ledger(Storage(), str(tmp_path))
    _checkpoints(ledger, 40, keep_last=4, fanin=4)
    merged = next(p for p in (tmp_path / "ledger").iterdir() if p.name.startswith("entries-L1-"))
    first, last = (int(x) for x in merged.name.removesuffix(".json").split("-")[2:])
    state = ledger.load()
    for seq in range(first, last + 1):  # as if the deletes never ran
        state.seq = seq
        (tmp_path / "ledger" / f"ckpt-{seq:09d}.json").write_bytes(b'{"warcs": [{"ordinal": -1}]}')
    assert [e["ordinal"] for e in ledger.iter_entries()] == list(range(120))
    assert ledger.load().seq == 40
    ledger.compact(keep_last=4, fanin=4)
    assert not any((tmp_path / "ledger" / f"ckpt-{seq:09d}.json").exists() for seq in range(first, last + 1))


def test_a_missing_checkpoint_is_reported(tmp_path):
    ledger = Ledger(Storage(), str(tmp_path))
    _checkpoints(ledger, 10, keep_last=4, fanin=4)
    sorted((tmp_path / "ledger").glob("ckpt-*.json"))[-2].unlink()
    with pytest.raises(LedgerError, match="removed or added by hand"):
        ledger.load()
