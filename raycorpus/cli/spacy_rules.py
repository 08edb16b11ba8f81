"""``python -m raycorpus.cli.spacy_rules``: write the spaCy tokenizer rules raycorpus ships as data.

For every language label the language ID can give and FineWeb-2 has settings for (plus English), datatrove
0.10.1's tokenizer assignment names a word tokenizer. Where that is spaCy's rule-based tokenizer (and needs
no other package: not jieba, SudachiPy, pyvi, ...), this writes ``spacy.blank(code)``'s rules to
``raycorpus/data/spacy/<code>.json.gz`` and the label -> code map to ``languages.json``. Needs spaCy and
datatrove (the test extra); run when upgrading the reference.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import itertools
import json
import re
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "data" / "spacy"
OTHER_SEGMENTERS = {"zh", "ja", "vi", "th", "ko"}  # spaCy languages that segment with another package

def assignment() -> dict[str, str]:
    """label -> spaCy code, for the labels datatrove tokenizes with spaCy."""
    import datatrove

    from raycorpus.process.filters.langcodes import fineweb2_name
    from raycorpus.process.filters.multilingual import table_labels

    path = Path(datatrove.__file__).parent / "assets" / "tokenizer_assignment.csv"
    rows = {r["code_3"]: r for r in csv.DictReader(path.open(encoding="utf-8"))}
    out = {"en": "en"}
    for label in table_labels():
        row = rows.get(fineweb2_name(label).split("_")[0])
        if row is not None and row["type"] == "SpaCyTokenizer" and row["tok_code"] not in OTHER_SEGMENTERS:
            out[label] = row["tok_code"]
    return dict(sorted(out.items()))


def sample_chunks(shared: Path) -> list[str]:
    """Chunks (between spaces) to check the quick tests on: the shared pages' texts, each word also joined to
    the next by a hyphen (compounds some languages keep whole)."""
    from raycorpus.cli.parity import shared_texts

    chunks = {c for _, text in shared_texts(shared) for c in text.split()}
    words = sorted(w for w in chunks if w.isalpha())
    return sorted(chunks | {f"{a}-{b}" for a, b in itertools.pairwise(words)})


def rules_data(code: str, chunks: list[str]) -> dict:
    """spaCy ``code``'s tokenizer rules as raycorpus reads them, with the quick tests its port makes before the
    rules (a chunk of letters alone is one token; a chunk ending in a letter or digit outside
    ``suffix_alnum_ends`` has no suffix), derived from the rules and checked on ``chunks``."""
    import spacy
    from spacy.lang import char_classes

    tok = spacy.blank(code).tokenizer
    prefix, suffix = tok.prefix_search.__self__.pattern, tok.suffix_search.__self__.pattern
    pre, suf, inf = re.compile(prefix), re.compile(suffix), re.compile(tok.infix_finditer.__self__.pattern)
    unit_ends = {w[-1] for w in f"{char_classes._units} {char_classes._currency}".split() if w[-1].isalnum()}
    alnum = [c for c in map(chr, range(0x110000)) if c.isalnum()]
    contexts = ("0", "'", "\u2019", "a'", "a\u2019", "°", "a", "A")
    ends = unit_ends | {c for c in alnum if any(suf.search(x + c) for x in contexts)}
    ends |= {m.group()[-1] for c in chunks if c[-1].isalnum() and (m := suf.search(c)) and m.group()
             and m.group()[-1].isalnum()}
    alpha_split = [c for c in chunks if c.isalpha() and (pre.match(c) or suf.search(c) or inf.search(c))]
    data = {
        "code": code,
        "source": f"spaCy {spacy.__version__} (MIT licence, ../spacy_LICENSE.txt): spacy.blank({code!r}).tokenizer",
        "prefix": prefix, "suffix": suffix, "infix": inf.pattern,
        "url": tok.url_match.__self__.pattern if tok.url_match else None,
        "token_match": tok.token_match.__self__.pattern if tok.token_match else None,
        "specials": {k: [p[65] for p in v] for k, v in sorted(tok.rules.items()) if not k.isspace()},
        "prefix_alnum_firsts": "".join(sorted(
            {p[1] for p in prefix.split("|") if len(p) > 1 and p[0] == "^" and p[1].isalnum()}
            | {c for c in alnum if any(pre.match(c + x) for x in ("$", "S$", ".", "'"))})),
        "suffix_alnum_ends": "".join(sorted(ends)),
        "letters_are_one_token": not alpha_split,
    }
    data["dot_split_after"] = dot_split_after(data)
    data["common_shapes"] = common_shapes_hold(data, chunks)
    return data


def dot_split_after(data: dict) -> str:
    """The lowercase letters after which the rules cut a final "." off a word of letters (whatever comes
    before: checked after a capital, the letter itself and another letter)."""
    from raycorpus.process.filters.spacy_tokens import SpacyRules

    rules = SpacyRules(data)
    letters = [c for c in map(chr, range(0x10000)) if c.isalpha() and c.islower()]
    return "".join(c for c in letters if all(
        rules._join_specials(rules.chunk_tokens(w + ".")) == (w, ".") for w in (f"A{c}", f"{c}{c}", f"x{c}")
        if w not in rules.specials and w + "." not in rules.specials))


def common_shapes_hold(data: dict, chunks: list[str]) -> bool:
    """Whether the port's shortcut for a word with one mark after or before it gives what the rules give, on
    every such chunk of ``chunks`` and on their words with each mark."""
    from raycorpus.process.filters.spacy_tokens import _FIRST_MARKS, _LAST_MARKS, SpacyRules

    rules = SpacyRules({**data, "common_shapes": True})
    cased = [c for c in map(chr, range(0x10000)) if c.isalpha() and (c.islower() or c.isupper())]
    words = [c for c in chunks if c.isalpha()][:5000] + [f"{c}{c}" for c in cased] + [f"A{c}" for c in cased]
    shaped = [c for c in chunks if len(c) > 1 and (c[:-1].isalpha() or c[1:].isalpha())]
    shaped += [w + m for w in words for m in (*_LAST_MARKS, ".")] + [m + w for w in words for m in _FIRST_MARKS]
    for chunk in shaped:
        short = rules._common_shape(chunk)
        if short is not None and rules._join_specials(list(short)) != rules._join_specials(rules.chunk_tokens(chunk)):
            return False
    return True


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--shared", default="../shared/data", help="the pages the quick tests are checked on")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    labels = assignment()
    chunks = sample_chunks(Path(args.shared))
    for code in sorted(set(labels.values())):
        data = json.dumps(rules_data(code, chunks), ensure_ascii=False, sort_keys=True).encode()
        (out / f"{code}.json.gz").write_bytes(gzip.compress(data, mtime=0))
        print(code, len(data))
    (out / "languages.json").write_text(json.dumps(labels, indent=0, sort_keys=True) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
