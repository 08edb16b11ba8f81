"""`raycorpus select TAGGED_OUTPUT CONFIG`: a filter-mode corpus from a tag-mode output, with CONFIG's
thresholds, without reading a WARC again (see raycorpus.process.select)."""

from __future__ import annotations

import argparse

from raycorpus.cli.common import EXIT_USAGE, err
from raycorpus.cli.run import _overrides, build
from raycorpus.config import load_config


def cmd_select(args: argparse.Namespace) -> int:
    from raycorpus.ingest.storage import Storage
    from raycorpus.process.select import SelectError, check_select_config, open_source

    cfg = load_config(args.config, overrides=_overrides(args))
    try:
        source = open_source(Storage(cfg.storage), args.source)
        check_select_config(source.config, cfg)  # ConfigError: exit 2 naming the field (cli.main)
    except SelectError as e:
        err(f"cannot select from {args.source}: {e}")
        return EXIT_USAGE
    return build(cfg, progress=args.progress, select=source)
