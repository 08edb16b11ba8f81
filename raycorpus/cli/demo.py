"""`raycorpus demo`: generate a small sample crawl and build it on a local Ray."""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from raycorpus.cli.common import EXIT_OK, EXIT_USAGE, err
from raycorpus.cli.run import build
from raycorpus.config import config_from_dict

DEMO_MARKER = ".raycorpus-demo"


def cmd_demo(args: argparse.Namespace) -> int:
    from raycorpus.demo import write_sample_crawl

    root = Path(args.dir).resolve()
    if root.exists() and any(root.iterdir()) and not (root / DEMO_MARKER).exists():
        err(f"{root} exists and was not made by `raycorpus demo`; pick another --dir")
        return EXIT_USAGE
    root.mkdir(parents=True, exist_ok=True)
    (root / DEMO_MARKER).write_text("made by raycorpus demo\n")
    shutil.rmtree(root / "corpus", ignore_errors=True)  # the demo always builds afresh
    crawl = write_sample_crawl(root / "sample", n_warcs=args.warcs, pages_per_warc=args.pages, seed=args.seed)
    print(f"sample crawl: {len(crawl.warc_paths)} WARC files in {root / 'sample'}")
    cfg = config_from_dict(
        {
            "input": {"manifest": str(crawl.manifest_path)},
            "output": {"path": str(root / "corpus"), "shard_size_tokens": args.shard_tokens},
            "tokenizer": {
                "path": str(root / "tokenizer.json"),
                "train": {"vocab_size": 4096, "sample_docs": 2000},
            },
            "ray": {"workers": args.workers} if args.workers else {},
            "run": {"checkpoint_interval_seconds": 0},
            **({"dedup": {"paragraphs": {"enabled": True, "min_chars": 16}}} if args.paragraphs else {}),
        },
        source="demo",
    )
    code = build(cfg, progress=args.progress)
    if code == EXIT_OK:
        print(f"\nshards: {root / 'corpus' / 'shards'}   summary: {root / 'corpus' / 'summary.json'}")
        print(f"report: {root / 'corpus' / 'report.html'}  (open it in a browser; it needs no network)")
    return code
