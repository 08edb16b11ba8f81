"""``raycorpus select`` on the build's runtime: the work units are the tag output's WARCs in manifest
order, read by the same workers (with a :class:`~raycorpus.process.select.SelectProcessor` instead of
the extraction chain); dedup, tokens, shards, ledger and resume are the build's own."""

from __future__ import annotations

from raycorpus.config import Config
from raycorpus.ingest.storage import Storage
from raycorpus.process.select import SelectSource
from raycorpus.process.tokenize import load_tokenizer
from raycorpus.runtime.actors import WarcWorker
from raycorpus.runtime.driver import _manifest_size
from raycorpus.runtime.pool import WorkSource, manifest_tasks


def select_work(cfg: Config, source: SelectSource) -> WorkSource:
    """The manifest's WARCs (the tag run's, since the input must be the same), processed from ``source``."""
    storage = Storage(cfg.storage)
    return WorkSource(_manifest_size(cfg, storage), lambda start: manifest_tasks(cfg, storage, start), WarcWorker,
                      (None, load_tokenizer(cfg.tokenizer).to_str(), source))
