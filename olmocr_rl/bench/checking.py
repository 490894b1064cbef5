"""Scoring one candidate folder: every (test, page file) pair checked in one batch in Rust; on an
internal error, a retry page by page, then test by test, so that only the offending checks become
errors."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Optional

from olmocr_rl.bench.folder import Bench, _page_files, _read_page
from olmocr_rl.bench.results import CandidateResult, TestOutcome
from olmocr_rl.paths import candidate_file, page_marker
from olmocr_rl.suite import BenchSuite, CheckResult

# progress(message, done, total): what runs now and, while pairs are checked, how many of
# `total` (test, page file) pairs are done (None otherwise).
Progress = Callable[[str, Optional[int], Optional[int]], None]


def _run_checks(suite: BenchSuite, pages: list[tuple[str, list[str]]], threads: int | None = None) -> list[list[CheckResult]]:
    """All checks in one batch; if the core fails on the batch (an internal error), retry page by
    page and test by test so that only the offending checks become errors."""
    try:
        return suite.check_batch(pages, threads=threads)
    except (RuntimeError, NotImplementedError):
        pass
    out = []
    for text, ids in pages:
        try:
            out.extend(suite.check_batch([(text, ids)], threads=threads))
            continue
        except (RuntimeError, NotImplementedError):
            pass
        row = []
        for test_id in ids:
            try:
                row.append(suite.check(test_id, text))
            except (RuntimeError, NotImplementedError) as e:
                row.append(CheckResult(False, f"error: {type(e).__name__}: {e}", True))
        out.append(row)
    return out


# With a progress display, files are checked in chunks of about this many (test, file) pairs.
_PROGRESS_CHUNK = 4096


def _check_files(
    suite: BenchSuite,
    folder: Path,
    ids: dict[str, list[str]],
    name: str = "",
    progress: Progress | None = None,
    threads: int | None = None,
) -> list[tuple[str, Any]]:
    """(md file, its rows (passed, explanation, error) for the test ids `ids[f]`, or the message
    of why it cannot be read). Files are read and checked in Rust, in parallel; a file Rust
    cannot read is read here for Python's own error message."""
    names = list(ids)
    base = str(folder)
    items = [(os.path.join(base, f), ids[f]) for f in names]
    total = sum(len(item[1]) for item in items)
    chunks = [items]
    if progress:
        chunks, size = [[]], 0
        for item in items:
            if size >= _PROGRESS_CHUNK:
                chunks.append([])
                size = 0
            chunks[-1].append(item)
            size += len(item[1])
    rows: list[Any] = []
    done = 0
    for chunk in chunks:
        if progress:
            progress(f"{name}: checking {total} (test, page file) pairs", done, total)
        try:
            rows.extend(suite.check_files(chunk, threads=threads))
        except (RuntimeError, NotImplementedError):  # an internal error: retry per page and test
            rows.extend([None] * len(chunk))
        done += sum(len(item[1]) for item in chunk)
    if progress:
        progress(f"{name}: checked {total} (test, page file) pairs", total, total)
    out: list[tuple[str, Any]] = []
    for f, (path, test_ids), r in zip(names, items, rows):
        if r is None:
            try:
                text = _read_page(Path(path))
            except (OSError, UnicodeDecodeError) as e:
                out.append((f, f"cannot read {path}: {e}"))
                continue
            r = _run_checks(suite, [(text, test_ids)], threads)[0]
        out.append((f, r))
    return out


def evaluate_candidate(
    bench: Bench, folder: Path, *, progress: Progress | None = None, details: bool = True, threads: int | None = None
) -> tuple[CandidateResult, list[dict]]:
    """Scores one candidate folder. Returns the result and the details rows, one per
    (test, md file), plus one per test without page files (none when `details` is False)."""
    name = folder.name
    files = _page_files(folder, bench.pdf_keys)
    errors: list[str] = []
    missing: list[str] = []
    for k in bench.pdf_keys:
        if not files[k]:
            missing.append(f"{k}: no page files (expected {candidate_file(k, '<N>', '<M>')})")
    outcomes: list[TestOutcome] = []
    # md file -> (outcome index, position of the file among that outcome's md files), for each
    # test the file serves; results[j][i] is then the verdict of outcomes[j] on its i-th file.
    by_file: dict[str, list[tuple[int, int]]] = {}
    results: list[list[Any]] = []
    missing_pages: set[tuple[str, str]] = set()
    page_md: dict[tuple[str, str], list[str]] = {}  # (pdf, page text) -> its md files
    for t in bench.tests:
        page_text = f"{t.page}"  # a number or a string of digits (the suite refuses anything else)
        marker = page_marker(page_text)
        pdf_files = files.get(t.pdf, [])
        md = page_md.get((t.pdf, page_text))
        if md is None:
            md = [f for f in pdf_files if marker in os.path.basename(f)]
            page_md[(t.pdf, page_text)] = md
        o = TestOutcome(t.id, t.type, bench.group[t.id], t.pdf, t.page, list(md))
        j = len(outcomes)
        outcomes.append(o)
        results.append([None] * len(md))
        if t.pdf not in files:
            o.errors.append(f"test {t.id}: its PDF {t.pdf!r} is not in pdfs/")
            o.explanations.append("Missing MD files")
        elif not md:
            if pdf_files:
                if (t.pdf, page_text) not in missing_pages:
                    missing_pages.add((t.pdf, page_text))
                    missing.append(f"{t.pdf} page {page_text}: no page files (expected {candidate_file(t.pdf, page_text, '<M>')})")
            o.explanations.append("Missing MD files")
        for i, f in enumerate(md):
            by_file.setdefault(f, []).append((j, i))

    read_errors: dict[str, str] = {}
    ids = {f: [outcomes[j].id for j, _ in served] for f, served in by_file.items()}
    for f, rows_ in _check_files(bench.suite, folder, ids, name, progress, threads):
        if isinstance(rows_, str):
            read_errors[f] = rows_
            errors.append(rows_)
            continue
        for (j, i), r in zip(by_file[f], rows_):
            results[j][i] = r

    rows: list[dict] = []
    for o, verdicts in zip(outcomes, results):
        if details and not o.md_files:
            rows.append(_detail(name, o, None, False, "Missing MD files"))
        for f, r in zip(o.md_files, verdicts):
            if r is None:  # the file could not be read
                o.errors.append(read_errors[f])
                if details:
                    rows.append(_detail(name, o, f, False, f"error: {read_errors[f]}", error=True))
                continue
            passed, explanation, error = r
            if passed:
                o.passes += 1
            else:
                o.explanations.append(explanation)
            if error:
                why = explanation[7:] if explanation.startswith("error: ") else explanation
                o.errors.append(f"error running test {o.id} on {folder / f}: {why}")
            if details:
                rows.append(_detail(name, o, f, passed, explanation, error=error))
    errors.extend(m for m in missing)
    errors.extend(e for o in outcomes for e in o.errors if not e.startswith("cannot read "))
    result = CandidateResult(name, outcomes, errors, missing, (0.0, 0.0))
    return result, rows


def _detail(candidate: str, o: TestOutcome, md: str | None, passed: bool, explanation: str, *, error: bool = False) -> dict:
    row = {"candidate": candidate, "id": o.id, "type": o.type, "jsonl": o.group, "md": md, "passed": passed, "explanation": explanation}
    if error:
        row["error"] = True
    return row
