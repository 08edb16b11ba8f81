"""Command line: the `raycorpus` command (run, select, demo, report, summary, verify, bench, plan, inspect, mix, eval).

The faces of raycorpus: this module is the flat argparse table; each command is one module of
this package (``raycorpus.cli.<command>``), imported only when it runs, so ``--help`` stays fast.
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
from collections.abc import Callable

from raycorpus.cli.common import EXIT_STORAGE, EXIT_USAGE, err, remote_cause


def _command(module: str, name: str) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        return getattr(importlib.import_module(f"raycorpus.cli.{module}"), name)(args)

    return run


def _interrupt(signum, frame):
    raise KeyboardInterrupt  # SIGTERM (ray job stop, Kubernetes) checkpoints like Ctrl-C


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    signal.signal(signal.SIGTERM, _interrupt)
    p = argparse.ArgumentParser(prog="raycorpus", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    progress_help = "progress display: bar (terminal), log (a line every 10 s), off"

    r = sub.add_parser("run", help="build or resume the corpus a config describes")
    r.add_argument("config")
    r.add_argument("--workers", type=int, help="override ray.workers")
    r.add_argument("--output", help="override output.path")
    r.add_argument("--progress", choices=["auto", "bar", "log", "off"], help=progress_help)
    r.add_argument("--follow", action="store_true", help="after the last manifest line, keep polling the manifest "
                   "every run.follow_interval_seconds and commit new WARCs as they appear, until SIGTERM / Ctrl-C")
    r.set_defaults(func=_command("run", "cmd_run"))

    sel = sub.add_parser("select", help="a filter-mode corpus from a tag-mode output with other thresholds, "
                         "without reading the WARCs again")
    sel.add_argument("source", help="the tag-mode output (filters.mode: tag, finished)")
    sel.add_argument("config", help="the tag run's config with other thresholds, mode: filter, another output.path")
    sel.add_argument("--workers", type=int, help="override ray.workers")
    sel.add_argument("--output", help="override output.path")
    sel.add_argument("--progress", choices=["auto", "bar", "log", "off"], help=progress_help)
    sel.set_defaults(func=_command("select", "cmd_select"))

    d = sub.add_parser("demo", help="generate a small sample crawl and build it on a local Ray")
    d.add_argument("--dir", default="raycorpus-demo", help="folder for the sample crawl and the corpus")
    d.add_argument("--warcs", type=int, default=4)
    d.add_argument("--pages", type=int, default=60, help="pages per WARC")
    d.add_argument("--seed", type=int, default=0)
    d.add_argument("--workers", type=int)
    d.add_argument("--shard-tokens", type=int, default=20_000)
    d.add_argument("--paragraphs", action="store_true",
                   help="with paragraph dedup (dedup.paragraphs, min_chars 16: the sample pages share short lines)")
    d.add_argument("--progress", choices=["auto", "bar", "log", "off"], help=progress_help)
    d.set_defaults(func=_command("demo", "cmd_demo"))

    t = sub.add_parser("train-tokenizer", help="fit a byte-level BPE on text extracted from a config's input")
    t.add_argument("config")
    t.add_argument("--out", help="tokenizer.json to write (default: tokenizer.path of the config)")
    t.add_argument("--vocab-size", type=int, default=32768)
    t.add_argument("--sample-docs", type=int, default=20000)
    t.set_defaults(func=_command("train_tokenizer", "cmd_train_tokenizer"))

    b = sub.add_parser("bench", help="per-stage cost on one core, the bare bound, and the Ray pipeline's rate")
    b.add_argument("config")
    b.add_argument("warc", nargs="*", help="WARC files or urls (default: the first --warcs of the manifest)")
    b.add_argument("--warcs", type=int, default=2)
    b.add_argument("--repeats", type=int, default=3, help="timed runs after a warm-up (medians reported)")
    b.add_argument("--workers", default="1,2", help="worker counts of the end-to-end Ray runs")
    b.add_argument("--copies", type=int, default=4, help="times the input is listed in the Ray runs' manifest")
    b.add_argument("--no-pipeline", action="store_true", help="only the in-process figures")
    b.add_argument("--commit-path", action="store_true",
                   help="replay the input's worker results through the real commit path: what one head sustains")
    b.add_argument("--replayed", type=int, default=40, help="--commit-path: WARCs replayed per run")
    b.add_argument("--pages-per-warc", type=int, default=35_000,
                   help="--commit-path: HTML pages per replayed WARC (Common Crawl: ~35,000)")
    b.add_argument("--dup-rate", type=float, default=0.1, help="--commit-path: share of replayed duplicates")
    b.add_argument("--worker-ms", type=float, help="--commit-path: a worker's ms per input page (default: measured)")
    b.add_argument("--wet", action="store_true",
                   help="WET input against WARC: the chain's time on the WARCs and on WETs of their text, and the "
                   "text kept on real WARC/WET pairs (--wet-pair)")
    b.add_argument("--wet-pair", action="append", default=[], metavar="WARC,WET",
                   help="--wet: a WARC and Common Crawl's WET of it (default: the CC-MAIN-2024-22 pair in "
                   "../shared/data/warc/whirlwind, if present)")
    b.add_argument("--chain", action="store_true",
                   help="only the tag-mode chain against bare extraction per page (the ratio; no Ray)")
    b.add_argument("--startup", action="store_true",
                   help="the fixed cost of `raycorpus run` on the given WARCs (a new process each time): wall time "
                   "minus processing")
    b.add_argument("--split", action="store_true",
                   help="one WARC (the first given) over 2 workers cut into ranges (run.split_warcs) against 1 "
                   "worker, and 2 WARCs over 1 and 2 workers for reference")
    b.add_argument("--save", help="also write the JSON here (for tracking across commits)")
    b.add_argument("--json", action="store_true")
    b.set_defaults(func=_command("bench", "cmd_bench"))

    v = sub.add_parser("verify", help="re-read an output and check it against its ledger")
    v.add_argument("output")
    v.add_argument("--s3-endpoint-url")
    v.set_defaults(func=_command("verify", "cmd_verify"))

    i = sub.add_parser("inspect", help="print one training row with its document boundaries")
    i.add_argument("output", help="a built corpus")
    i.add_argument("--shard", type=int, default=0)
    i.add_argument("--row", type=int, default=0)
    i.add_argument("--ctx-len", type=int, help="window length when there is no packed/ folder")
    i.add_argument("--tokenizer", help="tokenizer.json to decode each document's tokens (default: token ids)")
    i.add_argument("--width", type=int, default=100, help="characters of each document's text shown")
    i.set_defaults(func=_command("inspect", "cmd_inspect"))
    pl = sub.add_parser("plan", help="core-hours, wall time, LSH memory, output and S3 rate for a full crawl")
    pl.add_argument("bench", help="a `raycorpus bench --save` JSON")
    pl.add_argument("--manifest", help="the crawl's warc.paths(.gz), local or remote")
    pl.add_argument("--warcs", type=int, help="number of WARCs (instead of --manifest)")
    pl.add_argument("--workers", default="1000",
                    help="workers, or several comma-separated (1000,10000): one plan each (--json: a list)")
    pl.add_argument("--shards", type=int, default=16, help="LSH shard actors")
    pl.add_argument("--warc-bytes", type=float, help="bytes per crawl WARC (CC: ~1e9; default: the benchmarked ones)")
    pl.add_argument("--efficiency", type=float, help="default: measured by the bench's Ray runs, else 0.85")
    pl.add_argument("--extra-formats", type=int, default=0, help="token formats written besides shards/")
    pl.add_argument("--replay", help="a `raycorpus bench --commit-path --save` JSON: head cores from its figures")
    pl.add_argument("--nodes", type=int, help="nodes in the cluster: LSH memory per node")
    pl.add_argument("--node-memory", type=float, default=64, help="GiB of memory per node (default 64)")
    pl.add_argument("--paragraph-keys", type=float, default=0.0, metavar="N",
                    help="with dedup.paragraphs: distinct paragraph keys each indexed document adds (docs/dedup.md "
                         "gives the bench WARC's; benchmarks/paragraph_dedup.py measures an input's): 8.5 bytes each "
                         "in the LSH shards"),
    pl.add_argument("--against", action="append", metavar="OUTPUT",
                    help="a finished output this crawl is deduplicated against (dedup.against; repeat for each): "
                         "its indexed documents count in the LSH memory")
    pl.add_argument("--json", action="store_true")
    pl.set_defaults(func=_command("plan", "cmd_plan"))
    m = sub.add_parser("mix", help="mix built corpora by weights into a reproducible training order")
    m.add_argument("config", help="MIX.yaml: domains (name, path, weight), tokens, ctx_len, temperature, output")
    m.set_defaults(func=_command("mix", "cmd_mix"))
    e = sub.add_parser("eval", help="extraction F1, language-ID accuracy and decontamination catch rates")
    e.add_argument("--extraction", default="../shared/data/extraction",
                   help="folder holding trafilatura-eval/ and readability/")
    e.add_argument("--langid", default="../shared/data/langid/sample_20_per_lang.jsonl")
    e.add_argument("--warc", default="../shared/data/warc",
                   help="WARCs whose pages time each language ID backend on real text and make the near-dup web set")
    e.add_argument("--decontam", default="../shared/data/decontam",
                   help="GSM8K / HumanEval / MMLU / MT-Bench folders: items injected into the extraction set's pages")
    e.add_argument("--decontam-every", type=int, default=1, help="test every k-th benchmark item")
    e.add_argument("--dedup-every", type=int, default=1, help="near-dup sets from every k-th page (and a smaller "
                   "memory measurement)")
    e.add_argument("--config", help="evaluate this config's extract options (default: the shipped ones)")
    e.add_argument("--repeats", type=int, default=3, help="timing repeats (median)")
    e.add_argument("--trafilatura", action="store_true", help="also run trafilatura (must be installed)")
    e.add_argument("--json", action="store_true")
    e.set_defaults(func=_command("evaluate", "cmd_eval"))

    s = sub.add_parser("summary", help="print the summary of a finished or partial output")
    s.add_argument("output")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=_command("summary", "cmd_summary"))

    rp = sub.add_parser("report", help="write an output's report: one self-contained HTML file (charts, document "
                        "browser) that opens offline")
    rp.add_argument("output", help="a raycorpus output (finished or partial), local or s3://")
    rp.add_argument("--out", help="HTML file to write (default: OUTPUT/report.html)")
    rp.add_argument("--against", metavar="OTHER_OUTPUT",
                    help="put another output beside it: deltas per reason and language, documents kept by one only")
    rp.add_argument("--s3-endpoint-url")
    rp.set_defaults(func=_command("report", "cmd_report"))

    args = p.parse_args(argv)
    from raycorpus.config import ConfigError
    from raycorpus.ingest.storage import NotFound, StorageError

    try:
        return args.func(args)
    except ConfigError as e:  # a bad config exits 2 naming the field, before anything starts
        err(str(e))
        return EXIT_USAGE
    except NotFound as e:  # a path given on the command line (plan --manifest, verify OUTPUT, ...)
        err(f"not found: {remote_cause(e)}")
        return EXIT_USAGE
    except StorageError as e:
        err(str(remote_cause(e)))
        return EXIT_STORAGE


if __name__ == "__main__":
    sys.exit(main())
