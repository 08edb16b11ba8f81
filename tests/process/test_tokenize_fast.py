"""tiktoken's encoding (process/tokenize_fast.py) against HF tokenizers': the same ids on real pages, on every
Unicode scalar value and on the vocabulary, and HF itself wherever the tokenizer is one tiktoken cannot
reproduce. Nothing is mocked: both encoders run on the same texts and their arrays are compared."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

from raycorpus.cli.bench_chain import tag_mode
from raycorpus.config import TokenizerConfig
from raycorpus.ingest.warc import iter_html_records
from raycorpus.process.pipeline import WarcProcessor
from raycorpus.process.tokenize import TokenEncoder, train_bpe
from tests.support.corpus import make_config
from tests.support.paths import SHARED, need_shared

EOS = "<|endoftext|>"
EXTRACTION = SHARED / "data" / "extraction"
os.environ["TOKENIZERS_PARALLELISM"] = "false"  # as a worker runs it


def encoders(path: Path) -> tuple[TokenEncoder, TokenEncoder]:
    """(HF, the default) encoders of the tokenizer at ``path``."""
    cfg = TokenizerConfig(path=str(path), eos=EOS)
    return TokenEncoder(cfg, fast=False), TokenEncoder(cfg)


def assert_same_ids(texts: list[str], path: Path, engine: str = "tiktoken") -> None:
    hf, new = encoders(path)
    assert new.engine == engine, new.fast_unavailable
    want, got = hf.encode(texts), new.encode(texts)
    assert got[0].dtype == want[0].dtype and np.array_equal(got[1], want[1])
    if not np.array_equal(got[0], want[0]):  # name the first document that differs
        ends = np.cumsum(want[1].astype(np.int64))
        first = int(np.argmax(got[0][: len(want[0])] != want[0][: len(got[0])]))
        doc = int(np.searchsorted(ends, first, side="right"))
        pytest.fail(f"document {doc} encodes differently: {texts[doc][:200]!r}")


@pytest.fixture(scope="module")
def bench_docs(tmp_path_factory) -> list[str]:
    """The documents of the bench WARC (docs/benchmarks.md: make_bench_warc.py over ../shared/data/extraction,
    981 real pages), as the tag-mode chain hands them to the tokenizer."""
    need_shared(EXTRACTION)
    tmp = tmp_path_factory.mktemp("bench")
    warc = tmp / "bench.warc.gz"
    subprocess.run([sys.executable, str(SHARED / "tools" / "make_bench_warc.py"), str(warc), str(EXTRACTION)],
                   check=True, capture_output=True)
    cfg = tag_mode(make_config(str(warc), str(tmp / "out"), str(tmp / "unused.json")))
    return [d.text for d in WarcProcessor(cfg).process(0, str(warc)).docs]


@pytest.fixture(scope="module")
def bench_tokenizer(bench_docs, tmp_path_factory) -> Path:
    """A 32 k byte-level BPE trained on the bench WARC's documents, as the bench's tokenizer is."""
    path = tmp_path_factory.mktemp("tok") / "bench-tok.json"
    train_bpe(bench_docs, 32768, str(path), EOS)
    return path


@pytest.fixture(scope="module")
def sentences() -> list[str]:
    """lingua's sentences, 20 in each of 75 languages."""
    langid = need_shared(SHARED / "data" / "langid" / "sample_20_per_lang.jsonl")
    return [json.loads(line)["text"] for line in langid.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def shared_pages(sentences) -> list[str]:
    """Real pages whole, markup and scripts included: the readability pages, the Common Crawl excerpt
    (mostly zh / ja / ru / de), ClueWeb09-ja (EUC-JP); and lingua's sentences of 75 languages."""
    readability = EXTRACTION / "readability"
    data = SHARED / "data" / "warc" / "resiliparse" / "tests" / "data"
    warcs = [data / "warcfile.warc.gz", data / "clueweb-quirk.warc.gz"]
    for p in (readability, *warcs):
        need_shared(p)
    pages = [gzip.decompress(p.read_bytes()).decode("utf-8", "replace")
             for p in sorted(readability.rglob("source.html.gz"))]
    for w in warcs:
        with open(w, "rb") as stream:
            pages += [r.html for r in iter_html_records(stream, Counter(), 10 * 2**20, False)]
    return pages + sentences + ["\n".join(sentences)]


@pytest.fixture(scope="module")
def multilingual_tokenizer(shared_pages, tmp_path_factory) -> Path:
    """A 4 k byte-level BPE trained on the shared pages: merges inside CJK, Cyrillic, Thai... characters."""
    path = tmp_path_factory.mktemp("tok") / "multi-tok.json"
    train_bpe(shared_pages, 4096, str(path), EOS)
    return path


@pytest.mark.slow  # the bench WARC built and run through the chain, a 32 k BPE trained: ~30 s
def test_the_bench_warcs_documents_get_the_same_ids(bench_docs, bench_tokenizer):
    assert len(bench_docs) > 900
    assert_same_ids(bench_docs, bench_tokenizer)


@pytest.mark.slow  # ~30 s
def test_the_shared_pages_get_the_same_ids(shared_pages, bench_tokenizer, multilingual_tokenizer):
    assert_same_ids(shared_pages, bench_tokenizer)
    assert_same_ids(shared_pages, multilingual_tokenizer)


@pytest.mark.slow
def test_the_bench_documents_get_the_same_ids_from_a_multilingual_tokenizer(bench_docs, multilingual_tokenizer):
    assert_same_ids(bench_docs, multilingual_tokenizer)


@pytest.mark.slow  # ~30 s
def test_every_unicode_scalar_value_gets_the_same_ids(multilingual_tokenizer):
    """Each code point between letters, after a space, before a digit and before a newline: where the two
    regex engines' classes (\\p{L}, \\p{N}, \\s) could disagree."""
    chars = [chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000]
    texts = ["".join(f"a{c}b {c}1{c}\n" for c in chars[i : i + 4096]) for i in range(0, len(chars), 4096)]
    assert_same_ids(texts, multilingual_tokenizer)


def test_added_tokens_duplicates_empty_documents_and_invalid_text_as_hf(sentences, tmp_path):
    """An added token's text (HF splits it out first) sends its document to HF; a repeated document is
    encoded once with the same ids; text that is not UTF-8 raises as it did."""
    tok = Tokenizer.from_file(str(small_bpe(tmp_path, sentences, "base")))
    tok.add_tokens(["raycorpus"])
    path = tmp_path / "added.json"
    tok.save(str(path))
    texts = ["a page", f"one{EOS}two", "raycorpus builds corpora", "", "a page", f"{EOS}", "raycorpu s", *sentences]
    assert_same_ids(texts, path)
    hf, new = encoders(path)
    tokens, _ = new.encode(texts)
    assert (tokens == new.eos_id).sum() == len(texts) + 2 and tok.token_to_id("raycorpus") in tokens
    for encoder in (hf, new):
        with pytest.raises(TypeError):
            encoder.encode(["fine", "a lone surrogate \udc80"])


def small_bpe(tmp_path: Path, texts: list[str], name: str, **parts) -> Path:
    """A byte-level BPE trained on ``texts``, with ``parts`` (normalizer, pre_tokenizer, ...) set after."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=600, special_tokens=[EOS], show_progress=False,
                                                       initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    for key, value in parts.items():
        setattr(tok, key, value)
    path = tmp_path / f"{name}.json"
    tok.save(str(path))
    return path


FALLBACKS = {
    "normalizer": {"normalizer": normalizers.NFKC()},
    "prefix space": {"pre_tokenizer": pre_tokenizers.ByteLevel(add_prefix_space=True)},
    "no regex": {"pre_tokenizer": pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)},
    "split first": {"pre_tokenizer": pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                                              pre_tokenizers.ByteLevel(add_prefix_space=False)])},
    "template": {"post_processor": processors.TemplateProcessing(single=f"$A {EOS}",
                                                                   special_tokens=[(EOS, 0)])},
}


@pytest.mark.parametrize("name", FALLBACKS)
def test_tokenizers_tiktoken_does_not_reproduce_are_encoded_by_hf(name, sentences, tmp_path):
    path = small_bpe(tmp_path, sentences, name.replace(" ", "-"), **FALLBACKS[name])
    _, new = encoders(path)
    assert new.engine == "hf" and new.fast_unavailable
    full_width = "".join(chr(ord(c) + 0xFEE0) for c in "Full-width-2024") + "\u3000\ufb01"  # NFKC changes these
    assert_same_ids([*sentences, full_width], path, engine="hf")
    assert encoders(small_bpe(tmp_path, sentences, "plain"))[1].engine == "tiktoken"


def vocab_json(merges: list[tuple[str, str]], **model) -> dict:
    """A byte-level BPE's JSON: the 256 byte symbols, EOS, then each merge's token in merge order."""
    from raycorpus.process.tokenize_fast import byte_symbols

    vocab = {sym: i for i, sym in enumerate(sorted(byte_symbols(), key=byte_symbols().get))}
    vocab[EOS] = len(vocab)
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    spec = json.loads(Tokenizer(models.BPE()).to_str())
    spec["pre_tokenizer"] = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    spec["added_tokens"] = [{"id": vocab[EOS], "content": EOS, "single_word": False, "lstrip": False,
                             "rstrip": False, "normalized": False, "special": True}]
    spec["model"].update(vocab=vocab, merges=[list(m) for m in merges], **model)
    return spec


def test_a_token_hf_merges_do_not_reach_or_merges_out_of_id_order_are_left_to_hf(tmp_path):
    """tiktoken takes a piece that is a token whole, and merges the lowest-numbered token first: with
    merges "b c", "a b", "c d", "ab cd", HF encodes "abcd" as a|bc|d; tiktoken would say abcd."""
    cases = {
        "unreached": vocab_json([("b", "c"), ("a", "b"), ("c", "d"), ("ab", "cd")]),
        "out of order": vocab_json([("a", "b"), ("b", "c")]),
        "dropout": vocab_json([("a", "b")], dropout=0.5),
    }
    cases["out of order"]["model"]["vocab"]["ab"], cases["out of order"]["model"]["vocab"]["bc"] = 258, 257
    for name, spec in cases.items():
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(spec))
        _, new = encoders(path)
        assert new.engine == "hf", name
    tok = Tokenizer.from_file(str(tmp_path / "unreached.json"))
    assert tok.encode("abcd").tokens == ["a", "bc", "d"]
    assert "'abcd' encodes differently" in encoders(tmp_path / "unreached.json")[1].fast_unavailable
    assert_same_ids(["abcd abc bcd", "xabcdx"], tmp_path / "unreached.json", engine="hf")
    path = tmp_path / "reached.json"
    path.write_text(json.dumps(vocab_json([("a", "b"), ("c", "d"), ("ab", "cd"), ("b", "c")])))
    assert_same_ids(["abcd abc bcd", "xabcdx", "bcd"], path)
