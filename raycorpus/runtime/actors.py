"""Ray actors: thin wrappers over the core objects. None of them holds the only copy of anything."""

from __future__ import annotations

import logging
import os
import resource
import time
from dataclasses import dataclass

import numpy as np
import ray
from ray.exceptions import RayActorError

from raycorpus.config import Config
from raycorpus.ingest.split import WarcPart
from raycorpus.ingest.storage import Storage, StorageError, join_url
from raycorpus.output.clusters import ClusterError, write_cluster_sizes
from raycorpus.output.commit import CorpusWriter, Position
from raycorpus.output.docfiles import DOCUMENTS_DIR, doc_row, write_jsonl_zst, write_parquet
from raycorpus.output.lock import OutputLock
from raycorpus.output.shards import StagingError, WarcTokens, stage_tokens
from raycorpus.process.dedup.arrays import Asked, Taken
from raycorpus.process.dedup.clusters import DupLinks
from raycorpus.process.dedup.index import (
    DEDUP_DIR,
    Layout,
    LshShard,
    RecordRows,
)
from raycorpus.process.dedup.output import DedupVerdict, apply_decision
from raycorpus.process.dedup.paragraphs import TokenCuts
from raycorpus.process.dedup.prior import PriorIndex, load_prior
from raycorpus.process.dedup.records import RecordReader, RowBlocks, encode_keys, keys_name
from raycorpus.process.dedup.shardlog import ShardFiles, ShardLog, shard_dir
from raycorpus.process.document import Document
from raycorpus.process.pipeline import WarcProcessor
from raycorpus.process.profile import SampleBounds
from raycorpus.process.results import DedupPayload, StorageUse, WarcResult, WarcSummary
from raycorpus.process.select import SelectProcessor, SelectSource
from raycorpus.process.tagrecord import TagRecord, unwritable_texts, write_tag_record
from raycorpus.process.tokenize import TokenEncoder
from raycorpus.runtime import faults
from raycorpus.runtime.closer import ShardCloser
from raycorpus.runtime.cluster import freeze_heap
from raycorpus.runtime.metrics import Metrics

log = logging.getLogger("raycorpus")


def peak_rss_mb() -> float:
    """This process's peak resident set size (Linux reports KiB)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def cpu_seconds() -> float:
    """CPU time this process has used (user + system, every thread)."""
    use = resource.getrusage(resource.RUSAGE_SELF)
    return use.ru_utime + use.ru_stime


class Measured:
    def peak_rss_mb(self) -> float:
        return peak_rss_mb()

    def cpu_seconds(self) -> float:
        return cpu_seconds()

    def main_thread_cpu_seconds(self) -> float:
        """CPU time of the thread that runs this actor's methods (Ray's own threads left out)."""
        return time.thread_time()


@ray.remote
class WarcWorker(Measured):
    """Stateless: one WARC in; (summary, documents, dedup keys, staged tokens) out. The tokens themselves
    go to the output's ``tokens/`` folder, not to the head."""

    def __init__(self, cfg: Config, resources: dict[str, object] | None = None, tokenizer_json: str | None = None,
                 select: SelectSource | None = None):
        """``select``: read a tag-mode output instead of the WARCs (``raycorpus select``)."""
        os.environ.setdefault("RAYON_NUM_THREADS", "1")  # one core per worker: Ray schedules the rest
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        encoder = TokenEncoder(cfg.tokenizer, tokenizer_json) if tokenizer_json else None  # None: no tokens
        self.processor = (WarcProcessor(cfg, resources=resources, encoder=encoder) if select is None
                          else SelectProcessor(cfg, select, encoder))
        self.metrics = Metrics(cfg.output.path)
        self.out_url = cfg.output.path
        self.layout = worker_layout(cfg)
        self.send_docs = needs_documents(cfg)  # else the commit path takes only tokens: no text to the object store
        self.node_id = ray.get_runtime_context().get_node_id()

    def ready(self) -> str:
        return self.node_id

    @ray.method(num_returns=5)
    def process(self, ordinal: int, url: str, part: WarcPart | None = None, bounds: SampleBounds | None = None
                ) -> tuple[None, WarcSummary, list[Document] | None, DedupPayload, WarcTokens]:
        """The WARC's results, or (``part``) those of one range of it (never in tag mode: the driver does not
        cut a WARC whose worker writes a per-WARC file). The documents only if the commit path writes their text
        (else None: a WARC's text in the object store costs the driver, its owner, ~0.7 ms per WARC). ``bounds``:
        the report's sample bounds (see :mod:`raycorpus.process.profile`). First a marker (None) that tells the
        driver the call ended: it travels with the reply, the other results stay in this node's object store until
        they are read."""
        stats = self.processor.storage.stats
        before = dict(stats)
        result = self.processor.process(ordinal, url, part, bounds)
        faults.point("processed", ordinal if part is None else f"{ordinal}.{part.index}")
        summary = result.summary()
        summary.storage = StorageUse(stats["retries"] - before["retries"], stats["throttled"] - before["throttled"])
        summary.node = self.node_id
        self.metrics.warc_processed(summary)
        tag = self.processor.chain is not None and self.processor.chain.tag
        if tag:  # what `raycorpus select` reads instead of the WARC, durable before the WARC is committed
            write_tag_record(self.processor.storage, self.out_url, ordinal, TagRecord(
                result.content_hashes, result.signatures, result.extract_failed or [], result.counts,
                result.bytes_read, unwritable_texts([d.text for d in result.docs])))
        staged = stage_tokens(self.processor.storage, self.out_url, ordinal, *result.encoded(),
                              part=None if part is None else part.index)
        layout = self.layout if part is None else None  # a range's keys: the head computes them for the whole WARC
        payload = result.dedup_payload(eligible_for_dedup(result, tag), layout)
        if layout is not None:
            write_keys(self.processor.storage, self.out_url, ordinal, payload, layout)
        return None, summary, result.docs if self.send_docs else None, payload, staged


def needs_documents(cfg: Config) -> bool:
    """Whether the commit path writes document files (so it needs the documents' text, not only tokens)."""
    audit = cfg.dedup.enabled and cfg.dedup.audit and cfg.filters.mode != "tag"
    return cfg.output.documents or "parquet" in cfg.output.format or audit


def write_keys(storage: Storage, out_url: str, ordinal: int, payload: DedupPayload, layout: Layout) -> None:
    """A worker's part of its WARC's dedup record (see :mod:`raycorpus.process.dedup.records`), durable before the
    WARC can be committed."""
    rows = payload.rows(payload.eligible)
    if not rows[0].size:
        return
    try:
        storage.write_atomic(join_url(join_url(out_url, DEDUP_DIR), keys_name(ordinal)),
                             encode_keys(*rows, layout, payload.paragraphs))
    except StorageError as e:
        raise StagingError(str(e)) from e


def worker_layout(cfg: Config) -> Layout | None:
    """What a worker needs of the dedup index's layout to compute a WARC's keys (not the shard count)."""
    return Layout.from_config(cfg.dedup, 1) if cfg.dedup.enabled else None


def eligible_for_dedup(result: WarcResult, tag: bool) -> np.ndarray | None:
    """Tag mode dedups what filter mode would keep; None (filter mode): every document."""
    return np.array([not d.metadata.get("would_drop") for d in result.docs], bool) if tag else None


@ray.remote
class DocumentWriter(Measured):
    """Writes a committed WARC's document files: documents/*.jsonl.zst and *.parquet (the kept documents,
    or in tag mode every document with its dedup marks) and the dedup audit. Started only when the
    output asks for one of them; what it writes is durable before the packer's checkpoint names the WARC."""

    def __init__(self, cfg: Config, token_meta: dict):
        self.storage = Storage(cfg.storage)
        self.out_url = cfg.output.path
        self.token_meta = token_meta
        self.write_documents = cfg.output.documents
        self.write_parquet = "parquet" in cfg.output.format
        self.tag = cfg.filters.mode == "tag"

    def write(self, ordinal: int, warc: str, docs: list[Document], verdict: DedupVerdict | None = None) -> int:
        faults.point("write", ordinal, whole_run=False)
        if verdict is not None:
            docs = apply_decision(self.storage, self.out_url, ordinal, warc, docs, verdict, self.tag)
        if self.write_documents:
            write_jsonl_zst(self.storage, self.out_url, DOCUMENTS_DIR, ordinal, [doc_row(d, warc) for d in docs])
        if self.write_parquet:
            write_parquet(self.storage, self.out_url, ordinal, docs, warc, self.token_meta)
        return len(docs)


@ray.remote
class LshShardActor(Measured):
    """One slice of the dedup index, in memory, and its durable files. Started from the files the last
    checkpoint names plus the records of ``tail`` (WARCs committed after them): its own slice only."""

    def __init__(self, layout: Layout, index: int, cfg: Config, durable: ShardFiles, tail: list[int],
                 priors: tuple[PriorIndex, ...] = ()):
        storage = Storage(cfg.storage)
        dedup_url = join_url(cfg.output.path, DEDUP_DIR)
        self.shard = LshShard(layout, index, cfg.dedup.expected_docs)
        prior_bytes = sum(load_prior(self.shard, storage, p) for p in priors)  # dedup.against: first, read-only
        self.log = ShardLog(storage, shard_dir(dedup_url, index), durable)
        self.log.remove_orphans()
        for request in self.log.load():
            self.shard.insert(*request)
        self.read = {"files": len(durable.files), "file_bytes": self.log.bytes_read, "records": len(tail),
                     "record_bytes": 0, **({"prior_bytes": prior_bytes} if priors else {})}
        self.docnos = max(durable.docnos, sum(p.docnos for p in priors))  # this build's documents follow theirs
        self.compact_cpu = 0.0  # CPU seconds of the end of the build's compaction (not a cost per WARC)
        records = RecordReader(storage, dedup_url)
        for ordinal in tail:  # committed after the files: replayed from their records, and logged again
            record, read = records.read(ordinal)
            self.read["record_bytes"] += read
            self.insert(ordinal, *self.shard.slice_of(record, self.docnos))
            self.docnos += record.gids.size

    def ready(self) -> dict:
        """What this shard read to start (its own files, the records of the WARCs after them) and the
        documents the whole index held then (``docnos``: the next docno)."""
        return {"docnos": self.docnos, **self.read}

    def query(self, round_: list[Asked], insert: list[tuple[int, Taken]] | None = None):
        """The hits of a round's keys (:meth:`LshShard.query`), after the earlier WARCs' ``insert`` if any."""
        self._take(insert)
        return self.shard.query(round_)

    def documents(self, docnos: np.ndarray):
        return self.shard.documents(docnos)

    def insert(self, ordinal: int, *request) -> None:
        self.shard.insert(*request)
        self.log.add(ordinal, request)

    def _take(self, insert: list[tuple[int, Taken]] | None) -> None:
        """Insert what the index took of WARCs queried before (``(ordinal, Taken)`` each, in manifest order)."""
        for ordinal, taken in insert or ():
            self.insert(ordinal, *self.shard.take(taken, ordinal))

    def flush(self, upto: int, docnos: int, insert: list[tuple[int, Taken]] | None = None) -> ShardFiles:
        self._take(insert)  # the WARCs below ``upto`` not sent yet
        return self.log.flush(upto, docnos)

    def confirm(self, upto: int) -> None:
        self.log.confirm(upto)

    def compact(self, upto: int, docnos: int, insert: list[tuple[int, Taken]] | None = None) -> ShardFiles:
        """The end of the build: the slice as one file (see :meth:`ShardLog.compact`), after the last WARC's
        ``insert`` if it was not sent yet."""
        self._take(insert)
        before = cpu_seconds()
        files = self.log.compact(upto, docnos)
        self.compact_cpu += cpu_seconds() - before
        return files

    def compact_cpu_seconds(self) -> float:
        return self.compact_cpu

    def stats(self) -> dict:
        return self.shard.stats()


@dataclass(frozen=True)
class RecordSource:
    """What the packer writes as a WARC's dedup record: what the index took of the WARC's documents. Its keys are
    on the output already (its worker wrote them), except for a WARC cut into ranges, whose keys the head computed:
    ``payload`` then holds the joined dedup payload (an ObjectRef in a list, so that the packer gets the reference)
    and the packer writes them too."""

    rows: RecordRows | None  # None: the index took none of its documents
    payload: list | None = None  # [ObjectRef of the DedupPayload]
    links: DupLinks | None = None  # its dropped duplicates and the documents they name (None: none)


@dataclass(frozen=True)
class PackerItem:
    """One WARC for the packer, in manifest order: committed (``summary`` set; its staged tokens travel beside
    the list, so that Ray hands them over as it does any argument), or listed as failed with its ``error``."""

    ordinal: int
    warc: str
    attempts: int
    summary: WarcSummary | None = None
    keep: np.ndarray | None = None  # the documents dedup keeps (None: all)
    record: RecordSource | None = None
    error: str = ""
    cuts: TokenCuts | None = None  # dedup.paragraphs: the token spans of the removed paragraphs


@ray.remote
class PackerActor(Measured):
    """The single writer. Rebuilt from the ledger if it is ever restarted (``replacement``: by the
    driver, mid-run, after the previous one died)."""

    def __init__(self, cfg: Config, token_meta: dict, run_id: str | None = None, replacement: bool = False):
        storage = Storage(cfg.storage)
        self.storage = faults.wrap_storage(storage)
        self.dedup_url = join_url(cfg.output.path, DEDUP_DIR)
        self.layout = worker_layout(cfg)  # (what a record holds)
        self.against = tuple(cfg.dedup.against)  # (the earlier outputs the cluster sizes name)
        self._flushes: list | None = None  # the LSH shards' flush calls for the coming checkpoint
        fence = OutputLock(storage, cfg.output.path, run_id=run_id).check if run_id else None
        self.writer = CorpusWriter(  # checkpoints when the committer says (it also has the shards flush first)
            self.storage, cfg.output.path, cfg.output.shard_size_tokens, token_meta, float("inf"),
            tuple(cfg.output.format), cfg.output.ctx_len, fence,
            whole_output=not replacement, dedup_files=self._shard_files if cfg.dedup.enabled else None,
            closer=ShardCloser(cfg.storage, cfg.ray.writer_cpus), on_complete=self._cluster_sizes if
            cfg.dedup.enabled and cfg.filters.mode != "tag" else None,
        )
        self.rows = RowBlocks(self.storage, self.dedup_url, self.writer.progress().next_ordinal)
        freeze_heap()  # (this process lives for the build)

    def _cluster_sizes(self, shards: int, next_ordinal: int) -> None:
        """The cluster-size sidecar (end of the build), from the records :meth:`finish` has just flushed."""
        try:
            write_cluster_sizes(self.storage, self.writer.ledger.out_url, shards, next_ordinal, self.against)
        except ClusterError as e:  # an output begun by a raycorpus that kept no links
            log.warning("cluster sizes not written: %s", e)

    def _shard_files(self, upto: int, docnos: int, durable: list[ShardFiles] | None) -> list[ShardFiles] | None:
        """The LSH shards' files as of ``upto`` (their flush calls, made by the committer right after the
        inserts of the WARCs below it); a lost shard keeps its last durable files (the committer replaces
        it from them and the records of the WARCs committed since)."""
        flushes, self._flushes = self._flushes, None
        if not flushes:
            return durable
        durable = durable or [ShardFiles()] * len(flushes)
        out = []
        for ref, old in zip(flushes, durable, strict=True):
            try:
                out.append(ray.get(ref))
            except RayActorError:
                out.append(old)
        return out

    def progress(self) -> Position:
        return self.writer.progress()

    def closing_cpu_seconds(self) -> float:
        """CPU the tasks that closed shards took (off the head), as far as checkpoints waited for them."""
        return self.writer.packer.closer.cpu_seconds

    def commit(self, ordinal: int, warc: str, summary: WarcSummary, staged: WarcTokens, keep: np.ndarray | None,
               attempts: int, record: RecordSource | None = None, cuts: TokenCuts | None = None) -> Position:
        """Place the kept documents (``keep``: per document; None keeps all) of the WARC its worker
        ``staged``; the WARC's dedup ``record`` joins its rows block (durable by the checkpoint that names the
        WARC, :class:`~raycorpus.process.dedup.records.RowBlocks`)."""
        if record is not None:
            if record.payload is not None:
                payload = ray.get(record.payload[0])
                keys = encode_keys(*payload.rows(payload.eligible), self.layout, payload.paragraphs)
                self.storage.write_atomic(join_url(self.dedup_url, keys_name(ordinal)), keys)
            self.rows.add(ordinal, record.rows, record.links)  # durable with the block, by the next checkpoint
        return self.writer.commit(ordinal, warc, summary, staged, keep, attempts, cuts)

    def fail(self, ordinal: int, warc: str, error: str, attempts: int) -> Position:
        return self.writer.fail(ordinal, warc, error, attempts)

    def take(self, items: list[PackerItem], *staged_then_written) -> Position:
        """A run of WARCs in manifest order, in one call (a round's: the committer sends them together).
        ``staged_then_written``: the committed items' staged tokens, in order, then the document writers' calls
        of their documents (dependencies only: the WARCs are taken once their documents are written)."""
        staged = iter(staged_then_written)
        position = self.writer.progress()
        for item in items:
            if item.summary is None:
                position = self.fail(item.ordinal, item.warc, item.error, item.attempts)
            else:
                position = self.commit(item.ordinal, item.warc, item.summary, next(staged), item.keep,
                                       item.attempts, item.record, item.cuts)
        self.rows.passed(position.next_ordinal)
        return position

    def checkpoint(self, flushes: list | None = None, report: bytes | None = None) -> Position:
        """Make everything committed durable; ``flushes``: the LSH shards' flush calls (ObjectRefs in a list,
        so a lost shard fails only its own); ``report``: the report's data as of here."""
        self._flushes = flushes
        self.rows.flush()
        return self.writer.checkpoint(report=report)

    def finish(self, flushes: list | None = None, report: bytes | None = None) -> Position:
        self._flushes = flushes
        self.rows.flush()
        return self.writer.finish(report)
