"""`olmocr-rl bench`: score candidate outputs in an olmOCR-bench folder, as the reference does."""

import os
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from olmocr_rl.cli import GuardChoice, app, echo, fail

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
    strict: Annotated[
        bool,
        typer.Option("--strict", help="Exit with status 1 when a candidate is FAILED (has errors), for CI; the summary is printed first."),
    ] = False,
) -> int:
    from olmocr_rl.atomic import check_output
    from olmocr_rl.bench import BenchError, print_summary, run_bench, summary_dict

    # Every output path is checked before any work, and none may be a file the run reads.
    outputs = {"--details": details, "--report": report, "--output-failed": output_failed}
    for option, target in outputs.items():
        if target is not None:
            check_output(target, option, make_folders=option == "--report")  # the report makes its folder, as it always has
    if report is not None:
        files_dir = report.with_name(report.stem + "_files")
        if files_dir.exists() and not files_dir.is_dir():
            fail(f"--report {report}: {files_dir} (where the report keeps its images) is a file; remove it or choose another name")
        outputs["--report's folder"] = files_dir

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
            outputs={k: v for k, v in outputs.items() if k != "--details"},
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
    # The summary first: a failing optional output below loses no score.
    if as_json:
        import orjson

        sys.stdout.write(orjson.dumps(summary_dict(summary, comparisons), option=orjson.OPT_INDENT_2).decode() + "\n")
        for line in [f"warning: {w}" for w in summary.bench.warnings] + [f"note: {n}" for n in summary.bench.notes]:
            echo(line, err=True)  # also in the JSON; said here for whoever reads the terminal
    else:
        from rich.console import Console

        print_summary(summary, Console(), show_failures=show_failures)
        if comparisons:
            from olmocr_rl.bench.compare import print_comparisons

            print_comparisons(comparisons, Console())
    sys.stdout.flush()

    def note(message: str) -> None:  # beside --json's output, on stderr
        echo(message, err=as_json)

    if report is not None:
        from olmocr_rl.report import bench_report

        try:
            note(f"report: {bench_report(summary, report, max_reports=max_reports, workers=workers)}")
        except OSError as e:
            fail(f"cannot write the report {report}: {e}")
    if output_failed is not None:
        from olmocr_rl.atomic import write_text
        from olmocr_rl.bench import failed_everywhere, test_records

        failed = failed_everywhere(summary)
        if failed:
            try:
                write_text(output_failed, "".join(line + "\n" for line in test_records(failed)))
            except OSError as e:
                fail(f"cannot write --output-failed {output_failed}: {e}")
            note(f"{len(failed)} test(s) that no candidate passed: {output_failed}")
        else:
            note("no test failed for every candidate: no file written")
    bad = [c.name for c in summary.candidates if c.failed]
    if strict and bad:
        fail(f"--strict: {len(bad)} candidate(s) FAILED (errors): {', '.join(bad)}")
    return 0
