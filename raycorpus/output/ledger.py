"""The progress ledger: which WARCs are committed (in manifest order), what each gave, what failed.

Layout under the output folder / prefix::

    run.json                       identity of the run (config fingerprint, manifest, tokenizer)
    ledger/ckpt-000000042.json     one file per checkpoint, written atomically after the shard
                                   files and staged token files it names are durable
    ledger/entries-L1-A-B.json     the per-WARC entries of checkpoints A..B, compacted: the newest
                                   16 checkpoints stay, older files merge 16 at a time a level up

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
KEEP_CHECKPOINTS = 16  # newest checkpoint files never compacted
COMPACT_FANIN = 16
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
    report: str | None = None  # the report's data as of this checkpoint (report/state-N.json.zst; None: none)


@dataclass(frozen=True, order=True)
class _LedgerFile:
    """``ckpt-N.json`` (level 0: checkpoint N) or ``entries-Ll-A-B.json`` (checkpoints A..B's entries)."""

    first: int
    last: int
    level: int
    url: str = field(compare=False)

    @classmethod
    def of(cls, url: str) -> _LedgerFile | None:
        name = url.rsplit("/", 1)[-1].removesuffix(".json")
        if name.startswith("ckpt-"):
            seq = int(name[5:])
            return cls(seq, seq, 0, url)
        if name.startswith("entries-L"):
            level, first, last = name[9:].split("-")
            return cls(int(first), int(last), int(level), url)
        return None


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

    def _files(self) -> list[_LedgerFile]:
        """Checkpoint files and compacted entry files, in order; checkpoints an entry file already holds
        (a compaction stopped between writing it and deleting them) are left out."""
        files = sorted(f for u in self.storage.list(self.dir_url) if (f := _LedgerFile.of(u)) is not None)
        archived = [f for f in files if f.level]
        return [f for f in files if f.level or not any(a.first <= f.first <= a.last for a in archived)]

    def load(self) -> LedgerState:
        files = self._files()
        if not files:
            return LedgerState()
        last = json.loads(self.storage.read_bytes(files[-1].url))
        covered = [seq for f in files for seq in range(f.first, f.last + 1)]
        if files[-1].level or covered != list(range(1, last["seq"] + 1)):
            raise LedgerError(
                f"ledger {self.dir_url} does not hold checkpoints 1..{last.get('seq')} exactly once: "
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
            report=last.get("report"),
        )

    def compact(self, keep_last: int = KEEP_CHECKPOINTS, fanin: int = COMPACT_FANIN) -> None:
        """Merge the oldest ``fanin`` consecutive files of one level (never the newest ``keep_last``
        checkpoints) into one entries file a level up, then delete them: ``ledger/`` holds a few dozen
        files after any number of checkpoints, and a resume still reads one."""
        files = self._files()
        stale = [f for f in sorted(filter(None, map(_LedgerFile.of, self.storage.list(self.dir_url))))
                 if f not in files]
        for f in stale:
            self.storage.delete(f.url)
        candidates = files[: max(0, len(files) - keep_last)]
        run: list[_LedgerFile] = []
        for f in candidates:
            run = [*run, f] if run and f.level == run[0].level else [f]
            if len(run) == fanin:
                break
        if len(run) < fanin:
            return
        entries = [e for f in run for e in json.loads(self.storage.read_bytes(f.url))["warcs"]]
        name = f"entries-L{run[0].level + 1}-{run[0].first:09d}-{run[-1].last:09d}.json"
        self.storage.write_atomic(join_url(self.dir_url, name), canonical_json({"warcs": entries}))
        for f in run:
            self.storage.delete(f.url)

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
        if state.report is not None:
            body["report"] = state.report
        self.storage.write_atomic(self.ckpt_url(state.seq), canonical_json(body))

    def iter_entries(self):
        """Every per-WARC entry ever checkpointed, in manifest order."""
        for f in self._files():
            yield from json.loads(self.storage.read_bytes(f.url))["warcs"]

    def entries_since(self, ordinal: int) -> list[dict]:
        """The entries of WARCs ``>= ordinal``, reading the checkpoints from the last one back."""
        out: list[dict] = []
        for f in reversed(self._files()):
            entries = json.loads(self.storage.read_bytes(f.url))["warcs"]
            out[:0] = [e for e in entries if e["ordinal"] >= ordinal]
            if entries and entries[0]["ordinal"] <= ordinal:
                break
        return out
