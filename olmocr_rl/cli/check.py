"""`olmocr-rl validate` and `olmocr-rl check`: load a test suite, run tests on one page."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Annotated, Optional

import typer

from olmocr_rl.cli import app


def _load(path: Path, strict: bool):
    from olmocr_rl.suite import BenchSuite, SuiteError

    try:
        return BenchSuite.load(path, strict=strict)
    except (SuiteError, FileNotFoundError) as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(1) from None


@app.command()
def validate(
    tests: Annotated[Path, typer.Argument(help="A bench folder (top-level *.jsonl) or a .jsonl file.")],
) -> None:
    """Load and validate test JSONL as olmOCR-bench does; list every invalid record."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # every error is printed below
        suite = _load(tests, strict=False)
    for err in suite.errors:
        typer.echo(err, err=True)
    counts: dict[str, int] = {}
    for test_id in suite.ids:
        t = suite.info(test_id).type
        counts[t] = counts.get(t, 0) + 1
    summary = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
    typer.echo(f"{len(suite)} valid tests ({summary}); {len(suite.errors)} invalid")
    if suite.errors:
        raise typer.Exit(1)


@app.command()
def check(
    tests: Annotated[Path, typer.Argument(help="A bench folder or a .jsonl file.")],
    page: Annotated[Path, typer.Argument(help="A markdown/text file: the model's output for one page.")],
    test_id: Annotated[
        Optional[list[str]], typer.Option("--test", "-t", help="Test id to run (repeatable; default: all tests of the page's PDF).")
    ] = None,
    pdf: Annotated[Optional[str], typer.Option(help="Run every test of this PDF (as named in the JSONL).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per test.")] = False,
) -> None:
    """Run tests on one page of model output and print their verdicts."""
    suite = _load(tests, strict=True)
    ids = list(test_id or [])
    if pdf:
        ids += [i for i in suite.ids if suite.info(i).pdf == pdf]
    if not ids:
        typer.echo("error: name tests with --test or --pdf", err=True)
        raise typer.Exit(1)
    missing = [i for i in ids if i not in suite]
    if missing:
        typer.echo(f"error: no test with id {missing[0]!r} in {tests}", err=True)
        raise typer.Exit(1)
    # Read as the benchmark does: UTF-8 with universal newlines.
    text = page.read_text(encoding="utf-8")
    passed = 0
    for i, r in zip(ids, suite.check_batch([(text, ids)])[0]):
        passed += r.passed
        if as_json:
            typer.echo(json.dumps({"id": i, "type": suite.info(i).type, **r._asdict()}, ensure_ascii=False))
        else:
            typer.echo(f"{'PASS' if r.passed else 'FAIL'}  {i}" + (f"  {r.explanation}" if r.explanation else ""))
    if not as_json:
        typer.echo(f"{passed}/{len(ids)} passed")
