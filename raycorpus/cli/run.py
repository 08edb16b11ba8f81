"""`raycorpus run CONFIG`: build or resume the corpus a config describes (and `build`, which `demo` shares)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING

from raycorpus.cli.common import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_STORAGE, EXIT_USAGE, err, remote_cause
from raycorpus.config import Config, load_config

if TYPE_CHECKING:
    from raycorpus.output.summary import RunSummary
    from raycorpus.process.select import SelectSource


def _budget_exceeded(cfg: Config, summary: RunSummary) -> bool:
    failed, total = summary.warcs.failed, summary.warcs.total
    budget = cfg.run.failure_budget
    allowed = budget if budget >= 1 else budget * total
    return failed > allowed


def build(cfg: Config, progress: str | None = None, quiet: bool = False, select: SelectSource | None = None,
          follow: bool = False) -> int:
    """Prepare the tokenizer, run (or resume) the build, write and print the summary. ``select``: read
    that tag-mode output instead of the WARCs (``raycorpus select``); ``follow``: ``run --follow``."""
    from raycorpus.cli.summary import format_summary
    from raycorpus.ingest.manifest import ManifestError
    from raycorpus.ingest.storage import NotFound, Storage, StorageError
    from raycorpus.output.ledger import LedgerError
    from raycorpus.output.lock import OutputLocked
    from raycorpus.process.prepare import prepare_tokenizer
    from raycorpus.process.tokenize import TokenizerError
    from raycorpus.runtime.cluster import stop_ray
    from raycorpus.runtime.driver import RunAborted, RunInterrupted, run_build

    try:
        encoder = prepare_tokenizer(cfg)
        if select is None:
            summary = run_build(cfg, encoder.meta(), progress_mode=progress, follow=follow)
        else:
            from raycorpus.runtime.select import select_work

            summary = run_build(cfg, encoder.meta(), progress, select_work(cfg, select), select.identity)
        summary.write(Storage(cfg.storage), cfg.output.path)
        report = write_report(cfg)
    except (TokenizerError, LedgerError, ManifestError, OutputLocked) as e:
        err(str(e))
        return EXIT_USAGE
    except NotFound as e:
        err(f"input not found: {remote_cause(e)}")
        return EXIT_USAGE
    except StorageError as e:  # raised here or in an actor (disk full, permission denied, S3 gave up, ...)
        os.environ["RAY_IGNORE_UNHANDLED_ERRORS"] = "1"  # commits queued behind it failed the same way: one message
        err(str(remote_cause(e)))
        err("committed WARCs are checkpointed: fix the cause and run the same command again to resume")
        return EXIT_STORAGE
    except RunInterrupted:
        err("interrupted: committed WARCs are checkpointed; run the same command again to resume")
        write_report(cfg, "the committed prefix's ")
        return EXIT_INTERRUPTED
    except RunAborted as e:
        os.environ["RAY_IGNORE_UNHANDLED_ERRORS"] = "1"
        err(f"run aborted: {e}")
        write_report(cfg, "the committed prefix's ")
        return EXIT_FAILED
    finally:
        stop_ray()
    if not quiet:
        print(format_summary(summary))
        if report is not None:
            print(f"report        {report}")
    if _budget_exceeded(cfg, summary):
        err(f"{summary.warcs.failed} WARCs failed, over the failure budget "
            f"({cfg.run.failure_budget}); they are listed above and in summary.json")
        return EXIT_FAILED
    return EXIT_OK


def write_report(cfg: Config, what: str = "") -> str | None:
    """Write ``report.html`` into the output (unless ``output.report`` is off); its path, or None. Never fails
    the run: a report that cannot be written is said, and ``raycorpus report OUTPUT`` can write it later."""
    if not cfg.output.report.enabled:
        return None
    from raycorpus.ingest.storage import Storage
    from raycorpus.report import write_report as write

    try:
        path = write(Storage(cfg.storage), cfg.output.path)
    except Exception as e:  # the corpus is written and checkpointed whatever happens here
        err(f"could not write {what}report ({type(e).__name__}: {e}); `raycorpus report {cfg.output.path}` "
            "writes it from the output")
        return None
    if what:
        err(f"{what}report: {path}")
    return path


def _overrides(args: argparse.Namespace) -> dict:
    o = {}
    if getattr(args, "workers", None):
        o["ray.workers"] = args.workers
    if getattr(args, "output", None):
        o["output.path"] = str(Path(args.output).resolve()) if "://" not in args.output else args.output
    return o


def cmd_run(args: argparse.Namespace) -> int:
    cfg = load_config(args.config, overrides=_overrides(args))
    return build(cfg, progress=args.progress, follow=args.follow)
