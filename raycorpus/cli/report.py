"""`raycorpus report OUTPUT [--out FILE] [--against OTHER]`: write an output's report (one HTML file)."""

from __future__ import annotations

import argparse
from pathlib import Path

from raycorpus.cli.common import EXIT_OK, EXIT_USAGE, err
from raycorpus.ingest.storage import Storage, StorageConfig, is_remote


def cmd_report(args: argparse.Namespace) -> int:
    from raycorpus.report import NotAnOutput, write_report

    storage = Storage(StorageConfig(s3_endpoint_url=args.s3_endpoint_url) if args.s3_endpoint_url else None)
    target = args.out
    if target is not None and not is_remote(target):
        target = str(Path(target).resolve())
    try:
        written = write_report(storage, args.output, target, args.against)
    except NotAnOutput as e:
        err(str(e))
        return EXIT_USAGE
    print(written)
    return EXIT_OK
