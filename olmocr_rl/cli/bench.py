"""`olmocr-rl bench`: score candidate outputs in an olmOCR-bench folder, as the reference does. The
options become a BenchOptions; olmocr_rl.bench.plan carries them out."""

from pathlib import Path
from typing import Annotated, Optional

import typer

from olmocr_rl.cli import GuardChoice, OneNamePerOption, app, example

DESCRIPTION = """Run olmOCR-bench on every candidate folder: majority over repeats, per-JSONL pass
rates, their mean as the score, a bootstrap CI; a candidate with any error is FAILED as upstream."""

# The reference runner's spellings of its options (--skip_baseline, ..., --test_report) are kept as
# second names, which --help does not list (OneNamePerOption; docs/bench.md).


@app.command(
    "bench",
    epilog=example("olmocr-rl bench bench_fixtures -c demo_model -c other_model --compare"),
    cls=OneNamePerOption,
    help=DESCRIPTION,
    short_help="Score candidate outputs in an olmOCR-bench folder, as the reference runner does.",
)
def bench_command(
    bench_dir: Annotated[
        Path,
        typer.Argument(help="A bench folder (*.jsonl, pdfs/, one folder per candidate), or one of its .jsonl files.", show_default=False),
    ],
    candidate: Annotated[
        Optional[list[str]],
        typer.Option(
            "--candidate",
            "-c",
            help="Evaluate only this candidate folder (repeatable; in this order: --compare takes B − A against the first).",
        ),
    ] = None,
    details: Annotated[
        Optional[Path],
        typer.Option(
            "--details", help="Write one JSON line per (test, md file): candidate, id, type, jsonl, md, passed, explanation, semantics."
        ),
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
        int,
        typer.Option(
            "--bootstrap-samples", "--bootstrap_samples", min=0, help="Bootstrap resamples for the confidence interval (0: no interval)."
        ),
    ] = 1000,
    confidence_level: Annotated[
        float, typer.Option("--confidence-level", "--confidence_level", min=0.0, max=1.0, help="Confidence level of the interval.")
    ] = 0.95,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the bootstrap (the reference's CI is unseeded).")] = 0,
    show_failures: Annotated[bool, typer.Option("--show-failures", help="List every test that failed on some repeat.")] = False,
    compare: Annotated[
        bool,
        typer.Option(
            "--compare",
            help="Each candidate minus the first -c (else the first by name): paired bootstrap over tests, flips; the report states the same pairs.",
        ),
    ] = False,
    report: Annotated[
        Optional[Path],
        typer.Option(
            "--report",
            "--test-report",
            "--test_report",
            help="Write an HTML report, NAME.html with NAME_files/: summary, comparison, pages.",
        ),
    ] = None,
    max_reports: Annotated[
        Optional[int], typer.Option("--max-reports", "--max_reports", min=1, help="In the report, at most N PDFs per JSONL file.")
    ] = None,
    sample: Annotated[Optional[int], typer.Option("--sample", min=1, help="Score only N tests, drawn with --seed.")] = None,
    guard: Annotated[
        GuardChoice,
        typer.Option(
            "--guard",
            help="none: the published benchmark's checks; short-output: allenai/olmocr PR #462's guard (a page too short for a present/absent text fails present, passes absent); short-output+footnote: also PR #476's rule for footnote tests (a stray character by a marker is no match), as training rewards score by default.",
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
    from olmocr_rl.bench.plan import BenchOptions, execute

    execute(
        BenchOptions(
            bench_dir, candidate, details, as_json, skip_baseline, force, workers, bootstrap_samples, confidence_level, seed,
            show_failures, compare, report, max_reports, sample, guard.value, output_failed, strict,
        )
    )  # fmt: skip
    return 0
