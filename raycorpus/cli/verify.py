"""`raycorpus verify OUTPUT`: re-read an output and check it against its ledger."""

from __future__ import annotations

import argparse

from raycorpus.cli.common import EXIT_FAILED, EXIT_OK


def cmd_verify(args: argparse.Namespace) -> int:
    from raycorpus.ingest.storage import Storage, StorageConfig
    from raycorpus.output.verify import format_checks, verify_output

    storage = Storage(StorageConfig(s3_endpoint_url=args.s3_endpoint_url) if args.s3_endpoint_url else None)
    checks = verify_output(storage, args.output)
    print(format_checks(checks))
    return EXIT_OK if all(c.ok for c in checks) else EXIT_FAILED
