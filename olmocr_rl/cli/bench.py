"""`olmocr-rl bench`: score candidate outputs in an olmOCR-bench folder, as the reference does."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from olmocr_rl.cli import fail, non_negative_int, positive_int, unit_float

DESCRIPTION = """Run olmOCR-bench on every candidate folder: majority over repeats, per-JSONL pass
rates, their mean as the score, a bootstrap CI; a candidate with any error is FAILED as upstream."""


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="Score candidate outputs in an olmOCR-bench folder, as the reference runner does.",
                       description=DESCRIPTION)
    p.add_argument("bench_dir", type=Path, help="A bench folder (*.jsonl, pdfs/, one folder per candidate), or one of its .jsonl files.")
    p.add_argument("--candidate", "-c", action="append", help="Evaluate only this candidate folder (repeatable).")
    p.add_argument("--details", type=Path, help="Write one JSON line per (test, md file): id, type, jsonl, md, passed, explanation.")
    p.add_argument("--json", dest="as_json", action="store_true", help="Print the summary as JSON on stdout.")
    p.add_argument("--skip-baseline", "--skip_baseline", action="store_true", help="Drop every baseline test, the auto-added ones included.")
    p.add_argument("--force", action="store_true", help="Run even if some PDF pages have no test (missing page files still fail a candidate).")
    p.add_argument("--workers", type=positive_int, help="Threads for the checks (default: all cores; env OLMOCR_RL_THREADS).")
    p.add_argument("--bootstrap-samples", "--bootstrap_samples", type=non_negative_int, default=1000, help="Bootstrap resamples for the confidence interval (default: 1000).")
    p.add_argument("--confidence-level", "--confidence_level", type=unit_float, default=0.95, help="Confidence level of the interval (default: 0.95).")
    p.add_argument("--seed", type=int, default=0, help="Seed of the bootstrap (the reference's CI is unseeded).")
    p.add_argument("--show-failures", action="store_true", help="List every test that failed on some repeat.")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from olmocr_rl.bench import BenchError, print_summary, run_bench, summary_dict

    bar = None
    # rich (a noticeable part of start-up) only when it has something to show: a progress bar
    # on a terminal, or the tables of the summary.
    maybe_terminal = sys.stderr.isatty() or any(os.environ.get(v) for v in ("FORCE_TERMINAL", "TTY_INTERACTIVE", "TTY_COMPATIBLE"))
    if maybe_terminal and not os.environ.get("CI"):
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        err = Console(stderr=True)
        if err.is_terminal:
            columns = (SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
            bar = Progress(*columns, console=err, transient=True)
            task = bar.add_task("loading the bench folder", total=None)

    def progress(msg: str, done: int | None = None, total: int | None = None) -> None:
        if bar is not None:
            bar.update(task, description=msg, completed=done or 0, total=total)

    try:
        if bar is not None:
            bar.start()
        summary = run_bench(args.bench_dir, args.candidate, skip_baseline=args.skip_baseline, force=args.force,
                            details=args.details, threads=args.workers, bootstrap_samples=args.bootstrap_samples,
                            confidence_level=args.confidence_level, seed=args.seed, progress=progress)
    except (BenchError, OSError) as e:  # OSError: e.g. the details file cannot be written
        fail(str(e))
    finally:
        if bar is not None:
            bar.stop()
    if args.as_json:
        import orjson

        sys.stdout.write(orjson.dumps(summary_dict(summary), option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        from rich.console import Console

        print_summary(summary, Console(), show_failures=args.show_failures)
    return 0
