"""Tokenizing with HF `tokenizers`: load, fingerprint, encode with EOS, train a byte-level BPE.

Encoding goes through tiktoken (:mod:`raycorpus.process.tokenize_fast`) where it gives HF's ids, ~4x faster;
HF encodes everything else."""

from __future__ import annotations

import hashlib
import itertools
import logging
import os
from collections.abc import Iterable
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from raycorpus.config import TokenizerConfig
from raycorpus.process.tokenize_fast import FastBPE, NotReproducible

log = logging.getLogger(__name__)


class TokenizerError(RuntimeError):
    pass


def load_tokenizer(cfg: TokenizerConfig) -> Tokenizer:
    if cfg.path:
        if not Path(cfg.path).exists():
            raise TokenizerError(
                f"tokenizer.path {cfg.path} does not exist (train one with `raycorpus train-tokenizer`)"
            )
        return Tokenizer.from_file(cfg.path)
    try:
        return Tokenizer.from_pretrained(cfg.name)
    except Exception as e:
        raise TokenizerError(f"cannot load tokenizer.name {cfg.name!r} from the hub: {e}") from None


def tokenizer_fingerprint(tok: Tokenizer) -> str:
    """sha256 of the tokenizer's canonical JSON: the identity recorded in shards and ledger."""
    return hashlib.sha256(tok.to_str().encode()).hexdigest()


def token_dtype(vocab_size: int) -> np.dtype:
    return np.dtype("<u2") if vocab_size < 65536 else np.dtype("<u4")


class TokenEncoder:
    """Encodes batches of documents into one flat token array plus per-document lengths.

    ``tokenizer_json``: the tokenizer itself (``Tokenizer.to_str()``), as the driver hands it to the
    workers of a cluster, whose nodes need not have ``cfg.path``; else it is loaded from ``cfg``. ``fast``:
    encode through tiktoken where it reproduces HF's ids (False: HF always; the tests compare the two)."""

    def __init__(self, cfg: TokenizerConfig, tokenizer_json: str | None = None, fast: bool = True):
        self.tokenizer = Tokenizer.from_str(tokenizer_json) if tokenizer_json else load_tokenizer(cfg)
        eos_id = self.tokenizer.token_to_id(cfg.eos)
        if eos_id is None:
            raise TokenizerError(f"tokenizer.eos {cfg.eos!r} is not a token of the tokenizer")
        self.eos_id = eos_id
        self.vocab_size = self.tokenizer.get_vocab_size(with_added_tokens=True)
        self.dtype = token_dtype(self.vocab_size)
        self.fingerprint = tokenizer_fingerprint(self.tokenizer)
        self.name = Path(cfg.path).name if cfg.path else cfg.name or ""
        self._fast: FastBPE | bool | None = False if fast else None  # False: not built yet
        self._why_hf: str | None = None if fast else "fast=False"

    @property
    def engine(self) -> str:
        """"tiktoken" or "hf": what encodes documents (tiktoken only where it gives HF's ids)."""
        return "tiktoken" if self._fast_bpe() is not None else "hf"

    @property
    def fast_unavailable(self) -> str | None:
        """Why HF encodes (None: tiktoken does)."""
        self._fast_bpe()
        return self._why_hf

    def _fast_bpe(self) -> FastBPE | None:
        """The tiktoken encoder, built on first use (meta() alone does not pay for it); None: HF encodes."""
        if self._fast is False:
            try:
                self._fast = FastBPE(self.tokenizer)
            except (NotReproducible, ImportError) as e:
                log.info("tokenizer %s is encoded by HF tokenizers: %s", self.name, e)
                self._why_hf, self._fast = str(e), None
        return self._fast

    def encode(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """Return (tokens, lengths): every document's ids followed by EOS, concatenated."""
        if not texts:
            return np.zeros(0, self.dtype), np.zeros(0, np.uint64)
        return self._joined(self._encode_distinct(texts))

    def encode_pieces(self, docs: list[list[str]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Return (tokens, lengths, piece_tokens) of documents given as pieces (their paragraphs): a document's ids
        are its pieces' ids in order, then EOS; ``piece_tokens`` (uint32) counts each piece's ids."""
        flat = [p for pieces in docs for p in pieces]
        ids = self._encode_distinct(flat) if flat else []
        piece_tokens = np.fromiter(map(len, ids), np.uint32, len(ids))
        if not docs:
            return np.zeros(0, self.dtype), np.zeros(0, np.uint64), piece_tokens
        ends = list(itertools.accumulate(map(len, docs)))
        joined = [list(itertools.chain.from_iterable(ids[a:b])) for a, b in zip([0, *ends[:-1]], ends, strict=True)]
        return (*self._joined(joined), piece_tokens)

    def _joined(self, ids: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
        """(tokens, lengths) of documents given as their ids: each followed by EOS, concatenated."""
        lengths = np.fromiter((len(i) + 1 for i in ids), dtype=np.uint64, count=len(ids))
        tokens = np.empty(int(lengths.sum()), dtype=self.dtype)
        pos = 0
        for doc_ids in ids:
            n = len(doc_ids)
            tokens[pos : pos + n] = doc_ids
            tokens[pos + n] = self.eos_id
            pos += n + 1
        return tokens, lengths

    def _encode_distinct(self, texts: list[str]) -> list[list[int]]:
        """Each document's ids, each distinct text encoded once: by tiktoken where it can, the rest in one
        HF batch."""
        fast = self._fast_bpe()
        memo: dict[str, list[int] | None] = {}
        for text in texts:
            if text not in memo:
                memo[text] = fast.encode(text) if fast is not None else None
        rest = [text for text, ids in memo.items() if ids is None]
        if rest:  # each read of ``Encoding.ids`` builds a new list: once per document
            for text, enc in zip(rest, self.tokenizer.encode_batch_fast(rest, add_special_tokens=False), strict=True):
                memo[text] = enc.ids
        return [memo[text] for text in texts]

    def meta(self) -> dict:
        return {
            "tokenizer": self.name,
            "tokenizer_sha256": self.fingerprint,
            "vocab_size": self.vocab_size,
            "dtype": self.dtype.str,
            "eos_id": self.eos_id,
        }


def keep_documents(tokens: np.ndarray, lengths: np.ndarray, keep: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """The tokens and lengths of the documents ``keep`` marks (None: all of them)."""
    if keep is None or keep.all():
        return tokens, lengths
    return tokens[np.repeat(keep, lengths.astype(np.int64))], lengths[keep]


def train_bpe(texts: Iterable[str], vocab_size: int, out_path: str, eos: str, min_frequency: int = 2) -> Tokenizer:
    """Fit a byte-level BPE (GPT-2 style) on ``texts`` and write tokenizer.json atomically."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=[eos],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".tmp-{out.name}")
    tok.save(str(tmp))
    os.replace(tmp, out)
    return tok
