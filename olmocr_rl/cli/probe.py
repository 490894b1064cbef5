"""`olmocr-rl probe`: how much degenerate outputs earn on a test set, without a model."""

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from olmocr_rl.cli import app, example, fail

DESCRIPTION = """Score built-in degenerate candidates (empty, one newline, a repetition loop, common
words, a stray letter by each footnote marker) and an upper bound (the page's own present/order
texts) on every tested page, with the published checks and with the training guard; print the
verdict first, then each exploit (a test type a degenerate candidate passes too often) apart
from the expected floors (absent and baseline tests)."""


@app.command(
    "probe",
    epilog=example("olmocr-rl probe olmOCR-bench/bench_data"),
    help=DESCRIPTION,
    short_help="Show how much degenerate outputs earn on a test set (no model needed).",
)
def probe_command(
    tests: Annotated[
        Path,
        typer.Argument(help="A bench folder (top-level *.jsonl), a .jsonl file, or a prepared folder (its tests/).", show_default=False),
    ],
    flag_share: Annotated[
        float,
        typer.Option(
            "--flag-share", min=0.0, max=1.0, help="Flag a test type when a degenerate candidate passes more than this share of it."
        ),
    ] = 0.5,
    details: Annotated[
        Optional[Path],
        typer.Option("--details", help="Write one JSON line per test behind a flag: candidate, guard, id, type, jsonl, pdf, page."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the figures as JSON on stdout.")] = False,
    workers: Annotated[
        Optional[int], typer.Option("--workers", min=1, help="Threads for the checks (default: all cores; env OLMOCR_RL_THREADS).")
    ] = None,
) -> int:
    from olmocr_rl.atomic import atomic_write, check_output, refuse_inputs
    from olmocr_rl.jsonl import json_line
    from olmocr_rl.probe import details_rows, print_result, probe, result_dict, tests_path
    from olmocr_rl.suite import BenchSuite, EnvironmentProblem, SuiteError, _jsonl_files

    if details is not None:
        check_output(details, "--details")
    path = tests_path(tests)
    try:
        suite = BenchSuite.load(path)
        if details is not None:
            refuse_inputs({"--details": details}, _jsonl_files(path))
        suite.require_environment()  # math tests without KaTeX would all be error verdicts
    except (SuiteError, FileNotFoundError, EnvironmentProblem) as e:
        fail(str(e))
    if not len(suite):
        fail(f"{path}: the test files hold no tests")
    result = probe(suite, flag_share=flag_share, threads=workers, source=str(tests))
    if details is not None:
        rows = details_rows(result)
        try:
            with atomic_write(details) as f:
                f.writelines(json_line(r) for r in rows)
        except OSError as e:
            fail(f"cannot write {details}: {e}")
    if as_json:
        import json

        sys.stdout.write(json.dumps(result_dict(result), indent=2, ensure_ascii=False) + "\n")
    else:
        from rich.console import Console

        print_result(result, Console())
        if details is not None:
            print(f"{len(details_rows(result))} test(s) behind the flags: {details}")
    return 0
