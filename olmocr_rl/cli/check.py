"""`olmocr-rl validate` and `olmocr-rl check`: load a test suite, run tests on one page."""

import json
import warnings
from pathlib import Path
from types import SimpleNamespace as Namespace
from typing import Annotated, Optional

import typer

from olmocr_rl.cli import GuardChoice, app, echo, fail


@app.command("validate", help="Load and validate test JSONL as olmOCR-bench does; list every invalid record.")
def validate_command(
    tests: Annotated[Path, typer.Argument(help="A bench folder (top-level *.jsonl) or a .jsonl file.", show_default=False)],
) -> int:
    return validate(Namespace(tests=tests))


@app.command("check", help="Run tests on one page of model output and print their verdicts.")
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
) -> int:
    return check(Namespace(tests=tests, page=page, test_id=test_id, pdf=pdf, as_json=as_json, guard=guard.value))


def _load(path: Path, strict: bool):
    from olmocr_rl.suite import BenchSuite, SuiteError

    try:
        return BenchSuite.load(path, strict=strict)
    except (SuiteError, FileNotFoundError) as e:
        fail(str(e))


def validate(args: Namespace) -> int:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # every error is printed below
        suite = _load(args.tests, strict=False)
    for err in suite.errors:
        echo(err, err=True)
    counts: dict[str, int] = {}
    for test_id in suite.ids:
        t = suite.info(test_id).type
        counts[t] = counts.get(t, 0) + 1
    summary = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
    echo(f"{len(suite)} valid tests ({summary}); {len(suite.errors)} invalid")
    return 1 if suite.errors else 0


def check(args: Namespace) -> int:
    suite = _load(args.tests, strict=True)
    ids = list(args.test_id or [])
    if args.pdf:
        ids += [i for i in suite.ids if suite.info(i).pdf == args.pdf]
    if not ids:
        fail("name tests with --test or --pdf")
    missing = [i for i in ids if i not in suite]
    if missing:
        fail(f"no test with id {missing[0]!r} in {args.tests}")
    try:  # read as the benchmark does: UTF-8 with universal newlines
        text = args.page.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        fail(f"cannot read {args.page}: {e}")
    passed = 0
    for i, r in zip(ids, suite.check_batch([(text, ids)], guard=args.guard)[0]):
        passed += r.passed
        if args.as_json:
            echo(json.dumps({"id": i, "type": suite.info(i).type, **r._asdict()}, ensure_ascii=False))
        else:
            echo(f"{'PASS' if r.passed else 'FAIL'}  {i}" + (f"  {r.explanation}" if r.explanation else ""))
    if not args.as_json:
        echo(f"{passed}/{len(ids)} passed")
    return 0
