"""`olmocr-rl bench`: score candidate outputs in an olmOCR-bench folder, as the reference does."""

import os
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from olmocr_rl.cli import GuardChoice, app, fail

DESCRIPTION = """Run olmOCR-bench on every candidate folder: majority over repeats, per-JSONL pass
rates, their mean as the score, a bootstrap CI; a candidate with any error is FAILED as upstream."""


@app.command("bench", help=DESCRIPTION, short_help="Score candidate outputs in an olmOCR-bench folder, as the reference runner does.")
def bench_command(
    bench_dir: Annotated[
        Path,
        typer.Argument(help="A bench folder (*.jsonl, pdfs/, one folder per candidate), or one of its .jsonl files.", show_default=False),
    ],
    candidate: Annotated[
        Optional[list[str]], typer.Option("--candidate", "-c", help="Evaluate only this candidate folder (repeatable).")
    ] = None,
    details: Annotated[
        Optional[Path], typer.Option("--details", help="Write one JSON line per (test, md file): id, type, jsonl, md, passed, explanation.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON on stdout.")] = False,
    skip_baseline: Annotated[
        bool, typer.Option("--skip-baseline", "--skip_baseline", help="Drop every baseline test, the auto-added ones included.")
    ] = False,
    force: Annotated[
        bool, typer.Option("--force", help="Run even if some PDF pages have no test (missing page files still fail a candidate).")
    ] = False,
    workers: Annotated[
        Optional[int], typer.Option("--workers", min=1, help="Threads for the checks (default: all cores; env OLMOCR_RL_THREADS).")
    ] = None,
    bootstrap_samples: Annotated[
        int, typer.Option("--bootstrap-samples", "--bootstrap_samples", min=0, help="Bootstrap resamples for the confidence interval.")
    ] = 1000,
    confidence_level: Annotated[
        float, typer.Option("--confidence-level", "--confidence_level", min=0.0, max=1.0, help="Confidence level of the interval.")
    ] = 0.95,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the bootstrap (the reference's CI is unseeded).")] = 0,
    show_failures: Annotated[bool, typer.Option("--show-failures", help="List every test that failed on some repeat.")] = False,
    compare: Annotated[
        bool,
        typer.Option("--compare", help="Each candidate minus the first -c (else the first by name): paired bootstrap over tests, flips."),
    ] = False,
    report: Annotated[
        Optional[Path],
        typer.Option("--report", "--test-report", help="Write an HTML report, NAME.html with NAME_files/: summary, comparison, pages."),
    ] = None,
    max_reports: Annotated[
        Optional[int], typer.Option("--max-reports", "--max_reports", min=1, help="In the report, at most N PDFs per JSONL file.")
    ] = None,
    sample: Annotated[Optional[int], typer.Option("--sample", min=1, help="Score only N tests, drawn with --seed.")] = None,
    guard: Annotated[
        GuardChoice,
        typer.Option(
            "--guard",
            help="none: the published benchmark's checks; short-output: allenai/olmocr PR #462's guard (a page too short for a present/absent text fails present, passes absent), as training rewards score by default.",
        ),
    ] = GuardChoice.none,
    output_failed: Annotated[
        Optional[Path],
        typer.Option(
            "--output-failed",
            "--output_failed",
            help="Write the tests no candidate passed as JSONL (a path as given; the reference puts a relative one in the bench folder, where the next run would read it as tests).",
        ),
    ] = None,
) -> int:
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
        summary = run_bench(
            bench_dir,
            candidate,
            skip_baseline=skip_baseline,
            force=force,
            details=details,
            threads=workers,
            bootstrap_samples=bootstrap_samples,
            confidence_level=confidence_level,
            seed=seed,
            progress=progress,
            sample=sample,
            keep_details=report is not None,
            guard=guard.value,
        )
    except (BenchError, OSError) as e:  # OSError: e.g. the details file cannot be written
        fail(str(e))
    finally:
        if bar is not None:
            bar.stop()
    comparisons = []
    if compare:
        from olmocr_rl.bench.compare import compare_summary

        if len(summary.candidates) < 2:
            fail("--compare needs two or more candidates")
        comparisons = compare_summary(summary, candidate[0] if candidate else None)
    notes = []
    if report is not None:
        from olmocr_rl.report import bench_report

        try:
            notes.append(f"report: {bench_report(summary, report, max_reports=max_reports, workers=workers)}")
        except OSError as e:
            fail(f"cannot write the report {report}: {e}")
    if output_failed is not None:
        from olmocr_rl.bench import failed_everywhere, test_records

        target = output_failed
        failed = failed_everywhere(summary)
        if failed:
            target.write_text("".join(line + "\n" for line in test_records(failed)), encoding="utf-8")
            notes.append(f"{len(failed)} test(s) that no candidate passed: {target}")
        else:
            notes.append("no test failed for every candidate: no file written")
    if as_json:
        import orjson

        sys.stdout.write(orjson.dumps(summary_dict(summary, comparisons), option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        from rich.console import Console

        print_summary(summary, Console(), show_failures=show_failures)
        if comparisons:
            from olmocr_rl.bench.compare import print_comparisons

            print_comparisons(comparisons, Console())
    for note in notes:
        print(note, file=sys.stderr if as_json else sys.stdout)
    return 0
