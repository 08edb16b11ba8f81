"""Before a run: make sure the tokenizer exists (training one on the input if asked)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

from raycorpus.config import Config
from raycorpus.ingest.manifest import iter_input_urls
from raycorpus.process.pipeline import WarcProcessor
from raycorpus.process.tokenize import TokenEncoder, train_bpe


def sample_texts(cfg: Config, max_docs: int) -> Iterator[str]:
    """Extracted texts of the first documents of the manifest, in order (deterministic)."""
    proc = WarcProcessor(cfg)
    urls = iter_input_urls(cfg.input, proc.storage)
    n = 0
    for ordinal, url in enumerate(itertools.islice(urls, cfg.input.limit)):
        for doc in proc.process(ordinal, url).docs:
            yield doc.text
            n += 1
            if n >= max_docs:
                return


def train_tokenizer_from_input(cfg: Config, out_path: str, vocab_size: int, sample_docs: int,
                               min_frequency: int = 2) -> str:
    texts = list(sample_texts(cfg, sample_docs))
    if not texts:
        raise ValueError("no documents could be extracted from the input to train a tokenizer on")
    train_bpe(texts, vocab_size, out_path, cfg.tokenizer.eos, min_frequency)
    return out_path


def prepare_tokenizer(cfg: Config) -> TokenEncoder:
    t = cfg.tokenizer
    if t.path and t.train and not Path(t.path).exists():
        train_tokenizer_from_input(cfg, t.path, t.train.vocab_size, t.train.sample_docs, t.train.min_frequency)
    return TokenEncoder(t)
