"""An exact, faster encoder for byte-level BPE tokenizers: tiktoken's BPE over the tokenizer's own vocabulary.

HF ``tokenizers`` encodes a page of the bench WARC at ~2.7 MB/s on one thread; tiktoken, given the same
pre-tokenizer pattern and the merges as ranks, at ~11 MB/s. It gives the same ids only for the tokenizers
whose encoding it can reproduce: a GPT-2 style byte-level BPE (no normalizer, ``ByteLevel`` pre-tokenizer
without prefix space and with its regex, no post-processor that adds ids, no truncation or padding, a BPE
without dropout, affixes, byte fallback or ``ignore_merges``) whose merges produce distinct tokens with
ids increasing in merge order (HF's trainer numbers them so). :func:`why_not_fast` names what stands in
the way of any other tokenizer, and the caller keeps HF for it. At construction the whole vocabulary, each
token's text a document, is encoded both ways and must agree (tiktoken takes a piece that is itself a token
whole; HF's merges need not reach it). Documents holding an added token's text (``<|endoftext|>``: HF
splits it out first) and ones that are not valid UTF-8 are left to HF by :meth:`FastBPE.encode`.

Identity on real pages, on every Unicode scalar value and on fallback cases: tests/process/test_tokenize_fast.py.
"""

from __future__ import annotations

import json
import re

from tokenizers import Tokenizer

# HF's ByteLevel pre-tokenizer pattern (tokenizers/src/pre_tokenizers/byte_level.rs), tiktoken's "gpt2"
BYTE_LEVEL_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
_BPE_DEFAULTS = {"dropout": None, "continuing_subword_prefix": None, "end_of_word_suffix": None,
                 "byte_fallback": False, "ignore_merges": False}


class NotReproducible(ValueError):
    """The tokenizer's encoding is not one tiktoken reproduces (the message says why)."""


def byte_symbols() -> dict[str, int]:
    """GPT-2's printable symbol of each byte (the alphabet of ``ByteLevel``), symbol -> byte."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    others = [b for b in range(256) if b not in printable]
    return {**{chr(b): b for b in printable}, **{chr(256 + i): b for i, b in enumerate(others)}}


def why_not_fast(spec: dict) -> str | None:
    """What in the tokenizer's JSON (``Tokenizer.to_str()``) tiktoken does not reproduce, or None."""
    for key in ("truncation", "padding", "normalizer"):
        if spec.get(key) is not None:
            return f"it has a {key}"
    pre = spec.get("pre_tokenizer") or {}
    if pre.get("type") != "ByteLevel" or pre.get("add_prefix_space") or not pre.get("use_regex", True):
        return f"its pre-tokenizer is not ByteLevel(add_prefix_space=False, use_regex=True): {json.dumps(pre)}"
    post = spec.get("post_processor")
    if post is not None and post.get("type") != "ByteLevel":
        return f"its post-processor {post.get('type')} may add ids"
    model = spec.get("model") or {}
    if model.get("type") != "BPE":
        return f"its model is {model.get('type')}, not BPE"
    for key, default in _BPE_DEFAULTS.items():
        if (model.get(key) or default) != default:
            return f"its BPE has {key}={model.get(key)!r}"
    return None


def _merge_pairs(merges: list) -> list[tuple[str, str]]:
    """Merges as pairs, from either JSON form ("a b" strings or [a, b] lists)."""
    return [tuple(m.split(" ", 1)) if isinstance(m, str) else (m[0], m[1]) for m in merges]


def bpe_ranks(model: dict) -> dict[bytes, int]:
    """tiktoken's mergeable ranks: each byte and each merge's result, by its id. Raises :class:`NotReproducible`
    unless every merge makes a new token with an id above the previous merge's (then lowest rank first is
    HF's lowest merge first)."""
    vocab, symbols = model["vocab"], byte_symbols()
    ranks: dict[bytes, int] = {}
    for sym, byte in symbols.items():
        if sym not in vocab:
            raise NotReproducible(f"byte {byte} ({sym!r}) is not in its vocabulary")
        ranks[bytes([byte])] = vocab[sym]
    last = -1
    for a, b in _merge_pairs(model.get("merges") or []):
        token = a + b
        if token not in vocab or vocab[token] <= last or any(ch not in symbols for ch in token):
            raise NotReproducible(f"its merge {a!r} {b!r} does not make a new token numbered after the one before")
        last = vocab[token]
        ranks[bytes(symbols[ch] for ch in token)] = last
    return ranks


class FastBPE:
    """tiktoken over ``tokenizer``'s ranks; raises :class:`NotReproducible` (and ImportError without tiktoken)
    where its ids could differ from HF's."""

    def __init__(self, tokenizer: Tokenizer):
        import tiktoken

        spec = json.loads(tokenizer.to_str())
        if reason := why_not_fast(spec):
            raise NotReproducible(reason)
        enc = tiktoken.Encoding("raycorpus-bpe", pat_str=BYTE_LEVEL_PATTERN, mergeable_ranks=bpe_ranks(spec["model"]),
                                special_tokens={})
        # the core's own call: it raises on text that is not valid UTF-8 (as HF does) where Encoding's replaces
        self._encode = enc._core_bpe.encode_ordinary
        added = sorted({t.content for t in tokenizer.get_added_tokens_decoder().values() if t.content},
                       key=len, reverse=True)
        self._added = re.compile("|".join(map(re.escape, added))) if added else None
        self._check_vocabulary(tokenizer, spec["model"]["vocab"])

    def encode(self, text: str) -> list[int] | None:
        """``text``'s ids, or None where HF is to encode it (an added token's text in it, or invalid UTF-8)."""
        if self._added is not None and self._added.search(text):
            return None
        try:
            return self._encode(text)
        except UnicodeEncodeError:
            return None

    def _check_vocabulary(self, tokenizer: Tokenizer, vocab: dict[str, int]) -> None:
        """Every token's text, as a document, must give the same ids both ways."""
        symbols = byte_symbols()
        texts = []
        for token in vocab:
            try:
                texts.append(bytes(symbols[ch] for ch in token).decode())
            except (KeyError, UnicodeDecodeError):  # an added token's own symbols, or part of a character
                continue
        texts = [t for t in texts if self._added is None or not self._added.search(t)]
        for text, enc in zip(texts, tokenizer.encode_batch_fast(texts, add_special_tokens=False), strict=True):
            if self._encode(text) != enc.ids:
                raise NotReproducible(f"its token {text!r} encodes differently")
