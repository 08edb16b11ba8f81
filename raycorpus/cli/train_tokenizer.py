"""`raycorpus train-tokenizer CONFIG`: fit a byte-level BPE on text extracted from a config's input."""

from __future__ import annotations

import argparse

from raycorpus.cli.common import EXIT_OK, EXIT_USAGE, err
from raycorpus.config import load_config


def cmd_train_tokenizer(args: argparse.Namespace) -> int:
    from raycorpus.process.prepare import train_tokenizer_from_input

    cfg = load_config(args.config)
    out = args.out or cfg.tokenizer.path
    if not out:
        err("give --out or set tokenizer.path in the config")
        return EXIT_USAGE
    train_tokenizer_from_input(cfg, out, args.vocab_size, args.sample_docs)
    print(f"wrote {out}")
    return EXIT_OK
