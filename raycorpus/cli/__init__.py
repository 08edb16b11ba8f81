"""Command line: raycorpus run | demo | train-tokenizer | summary."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sys
from pathlib import Path

from raycorpus.config import Config, ConfigError, config_from_dict, load_config

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_STORAGE, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


def _err(msg: str) -> None:
    print(f"raycorpus: {msg}", file=sys.stderr)


def _remote_cause(e: BaseException) -> BaseException:
    """The exception an actor raised (a RayTaskError carries it as ``cause``), else ``e`` itself."""
    cause = getattr(e, "cause", None)
    return cause if isinstance(cause, BaseException) else e


def _budget_exceeded(cfg: Config, summary: dict) -> bool:
    failed, total = summary["warcs"]["failed"], summary["warcs"]["total"]
    budget = cfg.run.failure_budget
    allowed = budget if budget >= 1 else budget * total
    return failed > allowed


def build(cfg: Config, progress: str | None = None, quiet: bool = False) -> int:
    """Prepare the tokenizer, run (or resume) the build, write and print the summary."""
    from raycorpus.ingest.manifest import ManifestError
    from raycorpus.ingest.storage import NotFound, Storage, StorageError, join_url
    from raycorpus.output.ledger import LedgerError
    from raycorpus.output.lock import OutputLocked
    from raycorpus.output.shards import canonical_json
    from raycorpus.output.summary import format_summary
    from raycorpus.process.prepare import prepare_tokenizer
    from raycorpus.process.tokenize import TokenizerError
    from raycorpus.runtime.driver import RunAborted, RunInterrupted, run_build

    try:
        encoder = prepare_tokenizer(cfg)
        summary = run_build(cfg, encoder.meta(), progress_mode=progress)
        Storage(cfg.storage).write_atomic(join_url(cfg.output.path, "summary.json"), canonical_json(summary))
    except (TokenizerError, LedgerError, ManifestError, OutputLocked) as e:
        _err(str(e))
        return EXIT_USAGE
    except NotFound as e:
        _err(f"input not found: {_remote_cause(e)}")
        return EXIT_USAGE
    except StorageError as e:  # raised here or in an actor (disk full, permission denied, S3 gave up, ...)
        os.environ["RAY_IGNORE_UNHANDLED_ERRORS"] = "1"  # commits queued behind it failed the same way: one message
        _err(str(_remote_cause(e)))
        _err("committed WARCs are checkpointed: fix the cause and run the same command again to resume")
        return EXIT_STORAGE
    except RunInterrupted:
        _err("interrupted: committed WARCs are checkpointed; run the same command again to resume")
        return EXIT_INTERRUPTED
    except RunAborted as e:
        os.environ["RAY_IGNORE_UNHANDLED_ERRORS"] = "1"
        _err(f"run aborted: {e}")
        return EXIT_FAILED
    if not quiet:
        print(format_summary(summary))
    if _budget_exceeded(cfg, summary):
        _err(f"{summary['warcs']['failed']} WARCs failed, over the failure budget "
             f"({cfg.run.failure_budget}); they are listed above and in summary.json")
        return EXIT_FAILED
    return EXIT_OK


def _overrides(args: argparse.Namespace) -> dict:
    o = {}
    if getattr(args, "workers", None):
        o["ray.workers"] = args.workers
    if getattr(args, "output", None):
        o["output.path"] = str(Path(args.output).resolve()) if "://" not in args.output else args.output
    return o


def cmd_run(args: argparse.Namespace) -> int:
    cfg = load_config(args.config, overrides=_overrides(args))
    return build(cfg, progress=args.progress)


DEMO_MARKER = ".raycorpus-demo"


def cmd_demo(args: argparse.Namespace) -> int:
    from raycorpus.demo.sample import write_sample_crawl

    root = Path(args.dir).resolve()
    if root.exists() and any(root.iterdir()) and not (root / DEMO_MARKER).exists():
        _err(f"{root} exists and was not made by `raycorpus demo`; pick another --dir")
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
        },
        source="demo",
    )
    code = build(cfg, progress=args.progress)
    if code == EXIT_OK:
        print(f"\nshards: {root / 'corpus' / 'shards'}   summary: {root / 'corpus' / 'summary.json'}")
    return code


def cmd_train_tokenizer(args: argparse.Namespace) -> int:
    from raycorpus.process.prepare import train_tokenizer_from_input

    cfg = load_config(args.config)
    out = args.out or cfg.tokenizer.path
    if not out:
        _err("give --out or set tokenizer.path in the config")
        return EXIT_USAGE
    train_tokenizer_from_input(cfg, out, args.vocab_size, args.sample_docs)
    print(f"wrote {out}")
    return EXIT_OK


def cmd_bench(args: argparse.Namespace) -> int:
    import itertools

    from raycorpus.cli.bench import bench_chain, bench_formats, format_bench
    from raycorpus.ingest.manifest import iter_manifest
    from raycorpus.ingest.storage import Storage
    from raycorpus.process.prepare import prepare_tokenizer

    cfg = load_config(args.config)
    token_meta = prepare_tokenizer(cfg).meta()
    warcs = args.warc or list(itertools.islice(
        iter_manifest(cfg.input.manifest, cfg.input.base, Storage(cfg.storage)), args.warcs))
    workers = [int(w) for w in args.workers.split(",") if w]
    if args.no_pipeline or not workers:
        result = {"chain": bench_chain(cfg, warcs, repeats=args.repeats)}
    else:
        from raycorpus.cli.bench_pipeline import bench_all

        result = bench_all(cfg, warcs, token_meta, copies=args.copies, workers=tuple(workers), repeats=args.repeats)
    result["formats"] = bench_formats(repeats=args.repeats)
    if args.save:
        Path(args.save).write_text(json.dumps(result, indent=1) + "\n")
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        print(format_bench(result["chain"], result["formats"]))
        if "pipeline" in result:
            from raycorpus.cli.bench_pipeline import format_pipeline

            print(format_pipeline(result))
    return EXIT_OK


def cmd_verify(args: argparse.Namespace) -> int:
    from raycorpus.ingest.storage import Storage, StorageConfig
    from raycorpus.output.verify import format_checks, verify_output

    storage = Storage(StorageConfig(s3_endpoint_url=args.s3_endpoint_url) if args.s3_endpoint_url else None)
    checks = verify_output(storage, args.output)
    print(format_checks(checks))
    return EXIT_OK if all(c.ok for c in checks) else EXIT_FAILED


def cmd_eval(args: argparse.Namespace) -> int:
    from raycorpus.cli import evaluate
    from raycorpus.process.filters import langid
    from raycorpus.process.filters.resources import fasttext_predict, load_fasttext

    cfg = load_config(args.config).extract if args.config else None
    results: dict = {}
    if Path(args.extraction).is_dir():
        results.update(evaluate.evaluate_extraction(args.extraction, cfg, repeats=args.repeats,
                                                    trafilatura=args.trafilatura))
    else:
        _err(f"no extraction test sets at {args.extraction} (--extraction DIR); skipping extraction")
    if Path(args.langid).is_file():
        bare_model = load_fasttext(langid.DEFAULT_MODEL)

        def bare(texts):  # fastText as it comes: one line per text, top label
            return [(fasttext_predict(bare_model, t.replace("\n", " "))[0]) for t in texts]

        results["langid/shipped"] = evaluate.eval_langid(args.langid, langid.predict)
        results["langid/bare-fasttext"] = evaluate.eval_langid(args.langid, bare)
    else:
        _err(f"no language ID test set at {args.langid} (--langid FILE); skipping language ID")
    if Path(args.decontam).is_dir() and Path(args.extraction).is_dir():
        from raycorpus.process.dedup.benchmark import load_texts

        pages = load_texts(Path(args.extraction) / "trafilatura-eval")
        results["decontam"] = evaluate.eval_decontam(args.decontam, pages, every=args.decontam_every)
    else:
        _err(f"no benchmark sets at {args.decontam} (--decontam DIR); skipping decontamination")
    if not results:
        return EXIT_USAGE
    print(json.dumps(results, indent=1) if args.json else evaluate.format_eval(results))
    return EXIT_OK


def cmd_plan(args: argparse.Namespace) -> int:
    from raycorpus.cli.plan import format_plan, plan
    from raycorpus.ingest.manifest import count_manifest
    from raycorpus.ingest.storage import Storage

    try:
        bench = json.loads(Path(args.bench).read_text())
        bench["chain"]["ms_per_doc_total"]
    except (OSError, ValueError, KeyError, TypeError):
        _err(f"{args.bench}: not a `raycorpus bench --save` JSON")
        return EXIT_USAGE
    warcs = args.warcs or (count_manifest(args.manifest, None, Storage()) if args.manifest else 0)
    if not warcs:
        _err("give --manifest (a warc.paths[.gz]) or --warcs N")
        return EXIT_USAGE
    p = plan(bench, warcs=warcs, workers=args.workers, shards=args.shards, warc_bytes=args.warc_bytes,
             efficiency=args.efficiency, extra_formats=args.extra_formats)
    print(json.dumps(p, indent=1) if args.json else format_plan(p))
    return EXIT_OK


def cmd_mix(args: argparse.Namespace) -> int:
    from raycorpus.training.mix import build_mix, format_plan, load_mix_config

    cfg = load_mix_config(args.config)
    p = build_mix(cfg)
    print(format_plan(p))
    print(f"order: {p['samples']:,} windows of {cfg.ctx_len} tokens -> {cfg.output}")
    return EXIT_OK


def cmd_inspect(args: argparse.Namespace) -> int:
    from raycorpus.cli.inspect import inspect_row

    print(inspect_row(args.output, args.shard, args.row, tokenizer=args.tokenizer, ctx_len=args.ctx_len,
                      width=args.width))
    return EXIT_OK


def cmd_summary(args: argparse.Namespace) -> int:
    from raycorpus.ingest.storage import NotFound, Storage, join_url
    from raycorpus.output.summary import format_summary

    try:
        s = json.loads(Storage().read_bytes(join_url(args.output, "summary.json")))
    except NotFound:
        _err(f"no summary.json in {args.output}")
        return EXIT_USAGE
    print(json.dumps(s, indent=1) if args.json else format_summary(s))
    return EXIT_OK


def _interrupt(signum, frame):
    raise KeyboardInterrupt  # SIGTERM (ray job stop, Kubernetes) checkpoints like Ctrl-C


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    signal.signal(signal.SIGTERM, _interrupt)
    p = argparse.ArgumentParser(prog="raycorpus", description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    progress_help = "progress display: bar (terminal), log (a line every 10 s), off"

    r = sub.add_parser("run", help="build or resume the corpus a config describes")
    r.add_argument("config")
    r.add_argument("--workers", type=int, help="override ray.workers")
    r.add_argument("--output", help="override output.path")
    r.add_argument("--progress", choices=["auto", "bar", "log", "off"], help=progress_help)
    r.set_defaults(func=cmd_run)

    d = sub.add_parser("demo", help="generate a small sample crawl and build it on a local Ray")
    d.add_argument("--dir", default="raycorpus-demo", help="folder for the sample crawl and the corpus")
    d.add_argument("--warcs", type=int, default=4)
    d.add_argument("--pages", type=int, default=60, help="pages per WARC")
    d.add_argument("--seed", type=int, default=0)
    d.add_argument("--workers", type=int)
    d.add_argument("--shard-tokens", type=int, default=20_000)
    d.add_argument("--progress", choices=["auto", "bar", "log", "off"], help=progress_help)
    d.set_defaults(func=cmd_demo)

    t = sub.add_parser("train-tokenizer", help="fit a byte-level BPE on text extracted from a config's input")
    t.add_argument("config")
    t.add_argument("--out", help="tokenizer.json to write (default: tokenizer.path of the config)")
    t.add_argument("--vocab-size", type=int, default=32768)
    t.add_argument("--sample-docs", type=int, default=20000)
    t.set_defaults(func=cmd_train_tokenizer)

    b = sub.add_parser("bench", help="per-stage cost on one core, the bare bound, and the Ray pipeline's rate")
    b.add_argument("config")
    b.add_argument("warc", nargs="*", help="WARC files or urls (default: the first --warcs of the manifest)")
    b.add_argument("--warcs", type=int, default=2)
    b.add_argument("--repeats", type=int, default=3, help="timed runs after a warm-up (medians reported)")
    b.add_argument("--workers", default="1,2", help="worker counts of the end-to-end Ray runs")
    b.add_argument("--copies", type=int, default=4, help="times the input is listed in the Ray runs' manifest")
    b.add_argument("--no-pipeline", action="store_true", help="only the in-process figures")
    b.add_argument("--save", help="also write the JSON here (for tracking across commits)")
    b.add_argument("--json", action="store_true")
    b.set_defaults(func=cmd_bench)

    v = sub.add_parser("verify", help="re-read an output and check it against its ledger")
    v.add_argument("output")
    v.add_argument("--s3-endpoint-url")
    v.set_defaults(func=cmd_verify)

    i = sub.add_parser("inspect", help="print one training row with its document boundaries")
    i.add_argument("output", help="a built corpus")
    i.add_argument("--shard", type=int, default=0)
    i.add_argument("--row", type=int, default=0)
    i.add_argument("--ctx-len", type=int, help="window length when there is no packed/ folder")
    i.add_argument("--tokenizer", help="tokenizer.json to decode each document's tokens (default: token ids)")
    i.add_argument("--width", type=int, default=100, help="characters of each document's text shown")
    i.set_defaults(func=cmd_inspect)
    pl = sub.add_parser("plan", help="core-hours, wall time, LSH memory, output and S3 rate for a full crawl")
    pl.add_argument("bench", help="a `raycorpus bench --save` JSON")
    pl.add_argument("--manifest", help="the crawl's warc.paths(.gz), local or remote")
    pl.add_argument("--warcs", type=int, help="number of WARCs (instead of --manifest)")
    pl.add_argument("--workers", type=int, default=1000)
    pl.add_argument("--shards", type=int, default=16, help="LSH shard actors")
    pl.add_argument("--warc-bytes", type=float, help="bytes per crawl WARC (CC: ~1e9; default: the benchmarked ones)")
    pl.add_argument("--efficiency", type=float, help="default: measured by the bench's Ray runs, else 0.85")
    pl.add_argument("--extra-formats", type=int, default=0, help="token formats written besides shards/")
    pl.add_argument("--json", action="store_true")
    pl.set_defaults(func=cmd_plan)
    m = sub.add_parser("mix", help="mix built corpora by weights into a reproducible training order")
    m.add_argument("config", help="MIX.yaml: domains (name, path, weight), tokens, ctx_len, temperature, output")
    m.set_defaults(func=cmd_mix)
    e = sub.add_parser("eval", help="extraction F1, language-ID accuracy and decontamination catch rates")
    e.add_argument("--extraction", default="../shared/data/extraction",
                   help="folder holding trafilatura-eval/ and readability/")
    e.add_argument("--langid", default="../shared/data/langid/sample_20_per_lang.jsonl")
    e.add_argument("--decontam", default="../shared/data/decontam",
                   help="GSM8K / HumanEval / MMLU / MT-Bench folders: items injected into the extraction set's pages")
    e.add_argument("--decontam-every", type=int, default=1, help="test every k-th benchmark item")
    e.add_argument("--config", help="evaluate this config's extract options (default: the shipped ones)")
    e.add_argument("--repeats", type=int, default=3, help="timing repeats (median)")
    e.add_argument("--trafilatura", action="store_true", help="also run trafilatura (must be installed)")
    e.add_argument("--json", action="store_true")
    e.set_defaults(func=cmd_eval)

    s = sub.add_parser("summary", help="print the summary of a finished or partial output")
    s.add_argument("output")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_summary)

    args = p.parse_args(argv)
    from raycorpus.ingest.storage import NotFound, StorageError

    try:
        return args.func(args)
    except ConfigError as e:  # a bad config exits 2 naming the field, before anything starts
        _err(str(e))
        return EXIT_USAGE
    except NotFound as e:  # a path given on the command line (plan --manifest, verify OUTPUT, ...)
        _err(f"not found: {_remote_cause(e)}")
        return EXIT_USAGE
    except StorageError as e:
        _err(str(_remote_cause(e)))
        return EXIT_STORAGE


if __name__ == "__main__":
    sys.exit(main())
