"""`olmocr-rl validate` and `olmocr-rl check`: load a test suite (and open the PDFs its tests name),
run tests on one page."""

import json
import os
import warnings
from pathlib import Path
from typing import Annotated, Optional

import typer

from olmocr_rl.cli import GuardChoice, app, echo, example, fail


@app.command(
    "validate",
    epilog=example("olmocr-rl validate olmOCR-bench/bench_data"),
    help="Load and validate test JSONL as olmOCR-bench does; list every invalid record. In a bench folder (pdfs/ beside the "
    "tests) also open every PDF the tests name, as bench and prepare read them: a missing or unreadable PDF, or a page past "
    "its end, is listed with the tests that name it.",
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
    pdf_problems, bad = _pdf_problems(tests, suite)
    for problem in pdf_problems:
        echo(problem, err=True)
    counts: dict[str, int] = {}
    for i in suite.ids:
        if i not in bad:
            t = suite.info(i).type
            counts[t] = counts.get(t, 0) + 1
    summary = f" ({', '.join(f'{k} {v}' for k, v in sorted(counts.items()))})" if counts else ""
    invalid = len(suite.errors) + len(bad)
    on_pdfs = f" ({len(bad)} on {len(pdf_problems)} PDF(s) that cannot be used)" if bad else ""
    echo(f"{len(suite) - len(bad)} valid tests{summary}; {invalid} invalid{on_pdfs}")
    return 1 if invalid else 0


def _pdf_problems(tests: Path, suite) -> tuple[list[str], set[str]]:
    """Each PDF the suite's tests name that bench or prepare could not use (not under pdfs/, not
    readable, or shorter than a test's page), one line naming it and the tests (file:line, id) that
    name it; and the ids of those tests. Nothing when no pdfs/ folder is beside the tests."""
    from olmocr_rl import pdfs
    from olmocr_rl.paths import inside, shown

    pdf_dir = (tests if tests.is_dir() else tests.parent) / "pdfs"
    if not pdf_dir.is_dir():
        return [], set()
    named: dict[str, list] = {}
    for i in suite.ids:
        info = suite.info(i)
        named.setdefault(info.pdf, []).append(info)
    found = {key: inside(pdf_dir, key) for key in named}
    readable = {key: path for key, path in found.items() if path is not None and path.is_file()}
    counts = dict(zip(readable, pdfs.page_counts(list(readable.values()))))
    problems, bad = [], set()

    def report(key: str, why: str, infos: list) -> None:
        where = ", ".join(f"{os.path.basename(t.source)}:{t.line} {t.id!r}" for t in infos[:3])
        more = f" and {len(infos) - 3} more" if len(infos) > 3 else ""
        problems.append(f"{shown(pdf_dir / key)}: {why}; named by {len(infos)} test(s): {where}{more}")
        bad.update(t.id for t in infos)

    for key, infos in named.items():
        if found[key] is None:
            report(key, "not a path inside pdfs/", infos)
        elif key not in readable:
            report(key, "no such file in pdfs/", infos)
        elif isinstance(counts[key], pdfs.PdfUnreadable):
            report(key, f"cannot read the PDF ({counts[key]}), so bench stops on it", infos)
        elif why := _pdfium_problem(readable[key]):
            report(key, why, infos)
        else:
            past = [t for t in infos if _page(t.page) is not None and _page(t.page) > counts[key]]
            if past:
                report(key, f"a test's page is past the PDF's end (it has {counts[key]} page(s))", past)
    return problems, bad


def _pdfium_problem(path: Path) -> str | None:
    from olmocr_rl import pdfs

    try:
        pdfs.open_document(path).close()
    except pdfs.PdfUnreadable as e:
        return f"pdfium cannot open the PDF ({e}), so prepare cannot render its pages"
    return None


def _page(page: object) -> int | None:
    """A test's page as a number (a JSON integer or a string of digits, as bench runs it)."""
    if isinstance(page, bool):
        return None
    if isinstance(page, int):
        return page
    return int(page) if isinstance(page, str) and page.isdigit() else None


@app.command(
    "check",
    epilog=example("olmocr-rl check bench_fixtures page.md --pdf letter.pdf"),
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
        typer.Option(
            "--guard",
            help="none: the published checks; short-output: with allenai/olmocr PR #462's short-output guard; "
            "short-output+footnote: also PR #476's rule for footnote tests, as training rewards score by default.",
        ),
    ] = GuardChoice.none,
    strict: Annotated[
        bool, typer.Option("--strict", help="Exit with status 1 when a test fails, for CI; the verdicts are printed first.")
    ] = False,
) -> int:
    suite = _load(tests, strict=True)
    if not test_id and not pdf:
        fail("name tests with --test or --pdf")
    missing = [i for i in test_id or [] if i not in suite]
    if missing:
        fail(f"no test with id {missing[0]!r} in {tests}{_did_you_mean(missing[0], suite.ids)}")
    ids = list(test_id or [])
    if pdf:
        of_pdf = [i for i in suite.ids if suite.info(i).pdf == pdf]
        if not of_pdf:
            named = sorted({suite.info(i).pdf for i in suite.ids})
            fail(f"no test in {tests} names the PDF {pdf!r}{_did_you_mean(pdf, named)}")
        ids += of_pdf
    ids = list(dict.fromkeys(ids))  # a test named twice (by --test and by --pdf) runs and counts once
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


def _did_you_mean(given: str, names: list[str]) -> str:
    """ " (did you mean 'x'?)" for the names closest to `given` (by spelling, or by file name for a
    PDF given with a folder), else "" ."""
    import difflib

    base = os.path.basename(given)
    close = [n for n in names if os.path.basename(n) == base and n != given] or difflib.get_close_matches(given, names, n=3)
    return f" (did you mean {', '.join(repr(n) for n in close[:-1])}{' or ' if len(close) > 1 else ''}{close[-1]!r}?)" if close else ""


def _load(path: Path, strict: bool):
    from olmocr_rl.suite import BenchSuite

    try:
        return BenchSuite.load(path, strict=strict)
    except FileNotFoundError as e:  # (invalid records, SuiteError, are a UserError: main prints them)
        fail(str(e))
