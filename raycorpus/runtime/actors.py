"""Ray actors: thin wrappers over the core objects. None of them holds the only copy of anything."""

from __future__ import annotations

import os
import resource

import numpy as np
import ray

from raycorpus.config import Config
from raycorpus.ingest.storage import Storage, join_url
from raycorpus.output.commit import CorpusWriter, Position
from raycorpus.output.docfiles import DOCUMENTS_DIR, doc_row, write_jsonl_zst, write_parquet
from raycorpus.output.lock import OutputLock
from raycorpus.process.dedup.index import DEDUP_DIR, Layout, LshShard, decode_record, record_name
from raycorpus.process.dedup.output import DedupVerdict, apply_decision
from raycorpus.process.document import Document
from raycorpus.process.pipeline import WarcProcessor
from raycorpus.process.results import DedupPayload, StorageUse, WarcSummary
from raycorpus.runtime import faults
from raycorpus.runtime.metrics import Metrics


def peak_rss_mb() -> float:
    """This process's peak resident set size (Linux reports KiB)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


class _Measured:
    def peak_rss_mb(self) -> float:
        return peak_rss_mb()


@ray.remote
class WarcWorker(_Measured):
    """Stateless: one WARC in, (summary, documents, dedup keys) out."""

    def __init__(self, cfg: Config, resources: dict[str, object] | None = None):
        self.processor = WarcProcessor(cfg, resources=resources)
        self.metrics = Metrics(cfg.output.path)
        self.node_id = ray.get_runtime_context().get_node_id()

    def ready(self) -> str:
        return self.node_id

    @ray.method(num_returns=3)
    def process(self, ordinal: int, url: str) -> tuple[WarcSummary, list[Document], DedupPayload]:
        stats = self.processor.storage.stats
        before = dict(stats)
        result = self.processor.process(ordinal, url)
        faults.point("processed", ordinal)
        summary = result.summary()
        summary.storage = StorageUse(stats["retries"] - before["retries"], stats["throttled"] - before["throttled"])
        summary.node = self.node_id
        self.metrics.warc_processed(summary)
        eligible = None
        if self.processor.chain is not None and self.processor.chain.tag:  # dedup what filter mode would keep
            eligible = np.array([not d.metadata.get("would_drop") for d in result.docs], bool)
        return summary, result.docs, result.dedup_payload(eligible)


@ray.remote
class TokenizerActor(_Measured):
    """Encodes a committed WARC's documents (and writes its documents file, if asked)."""

    def __init__(self, cfg: Config):
        os.environ.setdefault("RAYON_NUM_THREADS", "1")  # one core per actor; Ray schedules the rest
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        from raycorpus.process.tokenize import TokenEncoder

        self.encoder = TokenEncoder(cfg.tokenizer)
        self.storage = Storage(cfg.storage)
        self.out_url = cfg.output.path
        self.write_documents = cfg.output.documents
        self.write_parquet = "parquet" in cfg.output.format
        self.tag = cfg.filters.mode == "tag"

    def encode(self, ordinal: int, warc: str, docs: list[Document], verdict: DedupVerdict | None = None):
        """Everything below is durable before the packer's checkpoint names this WARC."""
        faults.point("encode", ordinal, whole_run=False)
        if verdict is not None:
            if verdict.record is not None:
                url = join_url(join_url(self.out_url, DEDUP_DIR), record_name(ordinal))
                self.storage.write_atomic(url, verdict.record)
            docs = apply_decision(self.storage, self.out_url, ordinal, warc, docs, verdict, self.tag)
        if self.write_documents:
            write_jsonl_zst(self.storage, self.out_url, DOCUMENTS_DIR, ordinal, [doc_row(d, warc) for d in docs])
        if self.write_parquet:
            write_parquet(self.storage, self.out_url, ordinal, docs, warc, self.encoder.meta())
        return self.encoder.encode([d.text for d in docs])


@ray.remote
class LshShardActor(_Measured):
    """One slice of the dedup index: a cache, rebuilt from committed WARCs' dedup records."""

    def __init__(self, layout: Layout, index: int, cfg: Config):
        self.shard = LshShard(layout, index, cfg.dedup.expected_docs)
        self.storage = Storage(cfg.storage)
        self.dir_url = join_url(cfg.output.path, DEDUP_DIR)

    def load(self, ordinals: list[int]) -> int:
        records = (decode_record(self.storage.read_bytes(join_url(self.dir_url, record_name(o)))) for o in ordinals)
        return self.shard.load(records)

    def query(self, exact_keys: np.ndarray, band_keys: np.ndarray):
        return self.shard.query(exact_keys, band_keys)

    def documents(self, docnos: np.ndarray):
        return self.shard.documents(docnos)

    def insert(self, *args) -> None:
        self.shard.insert(*args)

    def stats(self) -> dict:
        return self.shard.stats()


@ray.remote
class PackerActor(_Measured):
    """The single writer. Rebuilt from the ledger if it is ever restarted (``replacement``: by the
    driver, mid-run, after the previous one died)."""

    def __init__(self, cfg: Config, token_meta: dict, run_id: str | None = None, replacement: bool = False):
        storage = Storage(cfg.storage)
        fence = OutputLock(storage, cfg.output.path, run_id=run_id).check if run_id else None
        self.writer = CorpusWriter(
            faults.wrap_storage(storage), cfg.output.path, cfg.output.shard_size_tokens, token_meta,
            cfg.run.checkpoint_interval_seconds, tuple(cfg.output.format), cfg.output.ctx_len, fence,
            whole_output=not replacement,
        )

    def progress(self) -> Position:
        return self.writer.progress()

    def commit(self, ordinal: int, warc: str, summary: WarcSummary, encoded, attempts: int) -> Position:
        tokens, lengths = encoded
        return self.writer.commit(ordinal, warc, summary, tokens, lengths, attempts)

    def fail(self, ordinal: int, warc: str, error: str, attempts: int) -> Position:
        return self.writer.fail(ordinal, warc, error, attempts)

    def checkpoint(self) -> Position:
        return self.writer.checkpoint()

    def finish(self) -> Position:
        return self.writer.finish()
