"""`raycorpus mix MIX.yaml`: mix built corpora by weights into a reproducible training order."""

from __future__ import annotations

import argparse

from raycorpus.cli.common import EXIT_OK


def cmd_mix(args: argparse.Namespace) -> int:
    from raycorpus.training.mix import build_mix, format_plan, load_mix_config

    cfg = load_mix_config(args.config)
    p = build_mix(cfg)
    print(format_plan(p))
    print(f"order: {p['samples']:,} windows of {cfg.ctx_len} tokens -> {cfg.output}")
    return EXIT_OK
