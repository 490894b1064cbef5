"""`olmocr-rl validate` and `olmocr-rl check`: load a test suite, run tests on one page."""

import json
import warnings
from pathlib import Path
from typing import Annotated, Optional

import typer

from olmocr_rl.cli import GuardChoice, app, echo, fail


@app.command(
    "validate",
    help="Load and validate test JSONL as olmOCR-bench does; list every invalid record.",
    short_help="Load and validate test JSONL as olmOCR-bench does; list every invalid record.",
)
def validate_command(
    tests: Annotated[Path, typer.Argument(help="A bench folder (top-level *.jsonl) or a .jsonl file.", show_default=False)],
) -> int:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # every error is printed below
        suite = _load(tests, strict=False)
    for err in suite.errors:
        echo(err, err=True)
    counts: dict[str, int] = {}
    for i in suite.ids:
        t = suite.info(i).type
        counts[t] = counts.get(t, 0) + 1
    summary = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
    echo(f"{len(suite)} valid tests ({summary}); {len(suite.errors)} invalid")
    return 1 if suite.errors else 0


@app.command(
    "check",
    help="Run tests on one page of model output and print their verdicts.",
    short_help="Run tests on one page of model output and print their verdicts.",
)
def check_command(
    tests: Annotated[Path, typer.Argument(help="A bench folder or a .jsonl file.", show_default=False)],
    page: Annotated[Path, typer.Argument(help="A markdown/text file: the model's output for one page.", show_default=False)],
    test_id: Annotated[
        Optional[list[str]], typer.Option("--test", "-t", help="Test id to run (repeatable; default: all tests of --pdf).")
    ] = None,
    pdf: Annotated[Optional[str], typer.Option("--pdf", help="Run every test of this PDF (as named in the JSONL).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per test.")] = False,
    guard: Annotated[
        GuardChoice,
        typer.Option("--guard", help="none: the published checks; short-output: with allenai/olmocr PR #462's short-output guard."),
    ] = GuardChoice.none,
    strict: Annotated[
        bool, typer.Option("--strict", help="Exit with status 1 when a test fails, for CI; the verdicts are printed first.")
    ] = False,
) -> int:
    suite = _load(tests, strict=True)
    ids = list(test_id or [])
    if pdf:
        ids += [i for i in suite.ids if suite.info(i).pdf == pdf]
    if not ids:
        fail("name tests with --test or --pdf")
    missing = [i for i in ids if i not in suite]
    if missing:
        fail(f"no test with id {missing[0]!r} in {tests}")
    try:  # read as the benchmark does: UTF-8 with universal newlines
        text = page.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        fail(f"cannot read {page}: {e}")
    passed = 0
    for i, r in zip(ids, suite.check_batch([(text, ids)], guard=guard.value)[0]):
        passed += r.passed
        if as_json:
            echo(json.dumps({"id": i, "type": suite.info(i).type, **r._asdict()}, ensure_ascii=False))
        else:
            echo(f"{'PASS' if r.passed else 'FAIL'}  {i}" + (f"  {r.explanation}" if r.explanation else ""))
    if not as_json:
        echo(f"{passed}/{len(ids)} passed")
    if strict and passed < len(ids):
        fail(f"--strict: {len(ids) - passed} of {len(ids)} test(s) failed")
    return 0


def _load(path: Path, strict: bool):
    from olmocr_rl.suite import BenchSuite

    try:
        return BenchSuite.load(path, strict=strict)
    except FileNotFoundError as e:  # (invalid records, SuiteError, are a UserError: main prints them)
        fail(str(e))
