"""``raycorpus inspect``: one training row and the documents it is made of (what the document mask sees)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from raycorpus.cli.common import EXIT_OK
from raycorpus.output.shards import shard_name


def row_segments(doc_ids: np.ndarray) -> list[tuple[int, int, int]]:
    """(document, start, end) runs of a row's per-token document ids."""
    cuts = np.flatnonzero(np.diff(doc_ids)) + 1
    starts = np.concatenate([[0], cuts])
    ends = np.concatenate([cuts, [len(doc_ids)]])
    return [(int(doc_ids[a]), int(a), int(b)) for a, b in zip(starts, ends, strict=True)]


def inspect_row(output: str, shard: int = 0, row: int = 0, tokenizer: str | None = None,
                ctx_len: int | None = None, width: int = 100) -> str:
    root = Path(output)
    name = shard_name(shard)
    side = root / "shards" / f"{name}.json"
    if not side.exists():
        raise SystemExit(f"{side} not found: is {root} a raycorpus output with a closed shard {shard}?")
    meta = json.loads(side.read_text())
    packed = root / "packed" / f"{name}.rows.npy"
    if packed.exists():
        rows, docs = np.load(packed, mmap_mode="r"), np.load(root / "packed" / f"{name}.docs.npy", mmap_mode="r")
        if not 0 <= row < len(rows):
            raise SystemExit(f"{name} has {len(rows)} packed rows; --row {row} is out of range")
        tokens, doc_ids = np.asarray(rows[row]), np.asarray(docs[row])
        source = f"packed/{name}.rows.npy row {row} of {len(rows)} (ctx_len {rows.shape[1] - 1})"
    else:
        if not ctx_len:
            raise SystemExit(f"{root} has no packed/ folder: give --ctx-len to cut windows from shards/")
        flat = np.fromfile(root / "shards" / f"{name}.tokens", meta["dtype"])
        ends = np.fromfile(root / "shards" / f"{name}.idx", "<u8")
        w = ctx_len + 1
        if not 0 <= row < len(flat) // w:
            raise SystemExit(f"{name} has {len(flat) // w} windows of {w} tokens; --row {row} is out of range")
        tokens = flat[row * w : (row + 1) * w]
        doc_ids = np.searchsorted(ends, np.arange(row * w, (row + 1) * w), side="right")
        source = f"shards/{name}.tokens window {row} (ctx_len {ctx_len})"
    decode = None
    if tokenizer:
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(tokenizer)
        decode = tok.decode
    eos = meta["eos_id"]
    lines = [f"{source}; tokenizer {meta['tokenizer']} ({meta['tokenizer_sha256'][:12]}), EOS {eos}",
             f"{'doc':>6} {'tokens':>13} {'n':>5}  ends with EOS  text" if decode else
             f"{'doc':>6} {'tokens':>13} {'n':>5}  ends with EOS  ids"]
    for doc, a, b in row_segments(doc_ids):
        seg = tokens[a:b]
        ends_eos = "yes" if seg[-1] == eos else "no (continues)"
        shown = decode([int(t) for t in seg if t != eos]) if decode else " ".join(map(str, seg[:12]))
        shown = shown.replace("\n", " ")[:width]
        lines.append(f"{doc:>6} {f'[{a}:{b})':>13} {b - a:>5}  {ends_eos:<13}  {shown}")
    lines.append(f"mask: {len(row_segments(doc_ids))} documents -> block-diagonal attention over "
                 f"{len(tokens) - 1} input positions (varlen offsets: "
                 f"{[a for _, a, _ in row_segments(doc_ids)] + [len(tokens) - 1]})")
    return "\n".join(lines)


def cmd_inspect(args: argparse.Namespace) -> int:

    print(inspect_row(args.output, args.shard, args.row, tokenizer=args.tokenizer, ctx_len=args.ctx_len,
                      width=args.width))
    return EXIT_OK
