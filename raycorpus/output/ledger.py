"""The progress ledger: which WARCs are committed (in manifest order), what each gave, what failed.

Layout under the output folder / prefix::

    run.json                       identity of the run (config fingerprint, manifest, tokenizer)
    ledger/ckpt-000000042.json     one file per checkpoint, written atomically after the shard
                                   files and segments it names are durable

Commits happen in manifest order, so progress is a prefix: every WARC with
``ordinal < next_ordinal`` is committed (or listed as failed). Each checkpoint holds the
entries since the previous one plus the cumulative state, so resume reads one file and
``verify`` can read them all.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field

from raycorpus import counts as ck
from raycorpus.ingest.storage import NotFound, Storage, join_url
from raycorpus.output.shards import PackerState, canonical_json
from raycorpus.process.dedup.shardlog import ShardFiles

LEDGER_DIR = "ledger"
RUN_FILE = "run.json"


class LedgerError(RuntimeError):
    pass


@dataclass
class LedgerState:
    seq: int = 0  # number of checkpoints written
    next_ordinal: int = 0
    packer: PackerState = field(default_factory=PackerState)
    totals: Counter = field(default_factory=Counter)  # Counter[counts.Key]: summed per-WARC counters
    committed: int = 0
    failed: list[dict] = field(default_factory=list)
    complete: bool = False
    dedup: list[ShardFiles] | None = None  # each LSH shard's durable files (None: no per-shard files yet)


class Ledger:
    def __init__(self, storage: Storage, out_url: str):
        self.storage = storage
        self.out_url = out_url
        self.dir_url = join_url(out_url, LEDGER_DIR)

    def ckpt_url(self, seq: int) -> str:
        return join_url(self.dir_url, f"ckpt-{seq:09d}.json")

    # -- run identity
    def read_run(self) -> dict | None:
        try:
            return json.loads(self.storage.read_bytes(join_url(self.out_url, RUN_FILE)))
        except NotFound:
            return None

    def write_run(self, run: dict) -> None:
        self.storage.write_atomic(join_url(self.out_url, RUN_FILE), canonical_json(run))

    # -- checkpoints
    def checkpoint_urls(self) -> list[str]:
        return sorted(u for u in self.storage.list(self.dir_url) if u.rsplit("/", 1)[-1].startswith("ckpt-"))

    def load(self) -> LedgerState:
        urls = self.checkpoint_urls()
        if not urls:
            return LedgerState()
        last = json.loads(self.storage.read_bytes(urls[-1]))
        if last["seq"] != len(urls):
            raise LedgerError(
                f"ledger {self.dir_url} has {len(urls)} checkpoints but the last says seq {last['seq']}: "
                "files were removed or added by hand"
            )
        return LedgerState(
            seq=last["seq"],
            next_ordinal=last["next_ordinal"],
            packer=PackerState.from_json(last["packer"]),
            totals=ck.from_json(last["totals"]),
            committed=last["committed"],
            failed=last["failed"],
            complete=last.get("complete", False),
            dedup=[ShardFiles.from_json(d) for d in last["dedup_shards"]] if "dedup_shards" in last else None,
        )

    def write_checkpoint(self, state: LedgerState, entries: list[dict]) -> None:
        """Write checkpoint ``state.seq`` (already incremented by the caller)."""
        body = {
            "seq": state.seq,
            "next_ordinal": state.next_ordinal,
            "committed": state.committed,
            "complete": state.complete,
            "packer": state.packer.to_json(),
            "totals": ck.to_json(state.totals),
            "failed": state.failed,
            "warcs": entries,
        }
        if state.dedup is not None:
            body["dedup_shards"] = [d.to_json() for d in state.dedup]
        self.storage.write_atomic(self.ckpt_url(state.seq), canonical_json(body))

    def iter_entries(self):
        """Every per-WARC entry ever checkpointed, in manifest order."""
        for url in self.checkpoint_urls():
            yield from json.loads(self.storage.read_bytes(url))["warcs"]

    def entries_since(self, ordinal: int) -> list[dict]:
        """The entries of WARCs ``>= ordinal``, reading the checkpoints from the last one back."""
        out: list[dict] = []
        for url in reversed(self.checkpoint_urls()):
            entries = json.loads(self.storage.read_bytes(url))["warcs"]
            out[:0] = [e for e in entries if e["ordinal"] >= ordinal]
            if entries and entries[0]["ordinal"] <= ordinal:
                break
        return out
