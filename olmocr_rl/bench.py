"""`olmocr-rl bench`: an olmOCR-bench-compatible benchmark runner.

It reads a bench folder exactly as upstream `olmocr.bench.benchmark` does (spec §1.1, §8):

* tests: every top-level `*.jsonl` (or one `.jsonl` given as the folder: then only the PDFs its
  tests name are considered); PDFs: `pdfs/**/*.pdf`, keyed by their path relative to `pdfs/`;
* a `baseline` test `<pdfkey>_baseline` (page 1, defaults) is added for every PDF that has no
  baseline test, filed under the pseudo-category "baseline"; `skip_baseline` drops all of them;
* every page 1..N of every PDF must have a test, unless `force` (N as pypdf counts it: the core
  reads plain PDFs itself, pypdf the rest; see `_pypdf_page_count`);
* candidates: every sub-directory except `pdfs`; a candidate's page files are the `*.md` whose
  path relative to the candidate folder fully matches `<pdf key without .pdf>_pg<N>_repeat<M>.md`;
  a test on page P uses those whose basename contains `_pg<P>_`, each one a repeat; files are
  read as UTF-8 with universal newlines;
* a test passes when more than half of its repeats pass (`test_avg > 0.5`); the per-type figures
  are means of `test_avg`; each JSONL file (and "baseline") gets a pass rate and the score is the
  unweighted mean of those rates;
* any candidate error (a missing page file, an unreadable file, a test that raises) makes the
  candidate "FAILED (errors)" with score 0.

Where we differ, on purpose:

* Every (test, md file) pair of a candidate is checked in one batch in Rust, in parallel.
* A failed candidate still gets every figure computed (`score_ignoring_errors`, per type, per
  JSONL, with errors counted as failed repeats) next to the reference-compatible status and
  `score` 0. The reference stops at a PDF without any page file; we list every missing file.
* The bootstrap CI is deterministic: `random.Random(seed)` (default seed 0). Per group and per
  resample we draw the group's pass count from Binomial(n, passed/n), which is the distribution
  of the reference's `np.random.choice(scores, n, replace=True).sum()` over 0/1 scores, and take
  numpy's default (linear) percentiles. The reference's CI is unseeded and varies run to run.
* Math checks need KaTeX 0.16.21 (installed by `make setup`); without it a bench with math tests
  stops before checking, naming the fix (it would otherwise score every math test as an error).
* Test ids must be unique across files (the reference only checks within a file); every invalid
  record of every file is listed at once (the reference stops at the first).
* Page files are taken in sorted order (the reference uses the file system's order), so the
  first failure explanation of a test is deterministic.
* A corrupt PDF is an error naming the file (the reference crashes); a PDF that is not readable
  is skipped by the page-coverage check when `force` is given.
"""

from __future__ import annotations

import bisect
import glob
import json
import math
import os
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Optional

from olmocr_rl import _core
from olmocr_rl.suite import BenchSuite, CheckResult, SuiteError, TestInfo, check_threads

BASELINE_GROUP = "baseline"
_AUTO_SOURCE = "<auto baseline>"
# A page file's path relative to its candidate folder: "<pdf key without .pdf>_pg<N>_repeat<M>.md".
# The suffix is anchored, so the base is unique and matching it equals the reference's per-PDF
# `^{re.escape(base)}_pg\d+_repeat\d+\.md$`.
_PAGE_FILE = re.compile(r"^(.*)_pg\d+_repeat\d+\.md$", re.DOTALL)

# progress(message, done, total): what runs now and, while pairs are checked, how many of
# `total` (test, page file) pairs are done (None otherwise).
Progress = Callable[[str, Optional[int], Optional[int]], None]


class BenchError(ValueError):
    """A bench folder the benchmark cannot run on; `.errors` lists every problem found."""

    def __init__(self, errors: str | list[str]):
        self.errors = [errors] if isinstance(errors, str) else list(errors)
        shown = "\n  ".join(self.errors[:20])
        more = f"\n  ... and {len(self.errors) - 20} more" if len(self.errors) > 20 else ""
        super().__init__(shown if len(self.errors) == 1 else f"{len(self.errors)} problems:\n  {shown}{more}")


@dataclass
class Bench:
    """A loaded bench folder: the tests to score, in the reference's order, and their groups."""

    root: Path
    jsonl_files: list[Path]
    pdf_keys: list[str]
    page_counts: dict[str, int]
    suite: BenchSuite
    tests: list[TestInfo]  # every test that is scored or reported (after skip_baseline)
    group: dict[str, str]  # test id -> JSONL basename or "baseline"
    warnings: list[str] = field(default_factory=list)


@dataclass
class TestOutcome:
    id: str
    type: str
    group: str
    pdf: str
    page: Any
    md_files: list[str]  # relative to the candidate folder, sorted
    passes: int = 0
    explanations: list[str] = field(default_factory=list)  # of the failed repeats, in file order
    errors: list[str] = field(default_factory=list)

    @property
    def repeats(self) -> int:
        return len(self.md_files)

    @property
    def avg(self) -> float:
        return self.passes / self.repeats if self.repeats else 0.0

    @property
    def passed(self) -> bool:
        return self.avg > 0.5  # majority of repeats, strictly


@dataclass
class CandidateResult:
    name: str
    outcomes: list[TestOutcome]
    errors: list[str]
    missing: list[str]
    ci: tuple[float, float]
    details: list[dict] = field(default_factory=list)  # the details rows, when run_bench keeps them

    @property
    def failed(self) -> bool:
        return bool(self.errors)

    @cached_property
    def by_jsonl(self) -> dict[str, tuple[int, int]]:
        out: dict[str, list[int]] = {}
        for o in self.outcomes:
            g = out.setdefault(o.group, [0, 0])
            g[0] += o.passed
            g[1] += 1
        return {k: (p, t) for k, (p, t) in out.items()}

    @cached_property
    def by_type(self) -> dict[str, tuple[float, int]]:
        sums: dict[str, list[float]] = {}
        for o in self.outcomes:
            s = sums.setdefault(o.type, [0.0, 0])
            s[0] += o.avg
            s[1] += 1
        return {k: (s / n, int(n)) for k, (s, n) in sorted(sums.items())}

    @property
    def score_ignoring_errors(self) -> float:
        rates = [p / t for p, t in self.by_jsonl.values() if t]
        return sum(rates) / len(rates) if rates else 0.0

    @property
    def score(self) -> float:
        """The reference's headline: 0 for a candidate with any error."""
        return 0.0 if self.failed else self.score_ignoring_errors

    @property
    def status(self) -> str:
        """As the reference prints it."""
        return "FAILED (errors)" if self.failed else f"{self.score * 100:0.1f}%"


@dataclass
class BenchSummary:
    bench: Bench
    candidates: list[CandidateResult]
    bootstrap_samples: int
    confidence_level: float
    seed: int


# ----------------------------------------------------------------------------------------------
# Loading


def _pypdf_page_count(path: str | os.PathLike[str]) -> int:
    """Pages in a PDF as the reference counts them: `len(pypdf.PdfReader(path).pages)`, the leaves
    of the page tree. Only for the files the core's own reader (`_core.pdf_page_counts`, the same
    number without importing pypdf, ~80 ms) declines."""
    import logging

    from pypdf import PdfReader

    logging.getLogger("pypdf").setLevel(logging.ERROR)
    return len(PdfReader(path).pages)


def load_bench(path: str | os.PathLike[str], *, skip_baseline: bool = False, force: bool = False) -> Bench:
    """Loads a bench folder (or one of its `.jsonl` files); raises BenchError on what the
    reference would refuse to run (no pdfs/, no PDFs, no tests, invalid tests, pages without
    tests unless `force`), listing every problem."""
    given = Path(path)
    if not given.exists():
        raise BenchError(f"{given}: no such file or directory")
    single = given.is_file()
    root = given.parent if single else given
    pdf_dir = root / "pdfs"
    if not pdf_dir.is_dir():
        raise BenchError(f"{root}: no pdfs/ folder (a bench folder holds *.jsonl, pdfs/ and one folder per candidate)")
    pdf_keys = sorted(
        os.path.relpath(p, pdf_dir) for p in glob.glob(os.path.join(glob.escape(str(pdf_dir)), "**", "*.pdf"), recursive=True)
    )
    if not pdf_keys:
        raise BenchError(f"{pdf_dir}: no PDF files")
    # glob.glob, as the reference: hidden files (".x.jsonl") are not tests.
    top = glob.glob(os.path.join(glob.escape(str(root)), "*.jsonl"))
    jsonl_files = [given] if single else sorted(Path(p) for p in top if os.path.isfile(p))
    if not jsonl_files:
        raise BenchError(f"{root}: no *.jsonl test files at the top level")
    sources = []
    for f in jsonl_files:
        try:
            sources.append((str(f), f.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError) as e:
            raise BenchError(f"{f}: cannot read ({e})") from None
    try:
        suite = BenchSuite.from_sources(sources, strict=True)
    except SuiteError as e:
        raise BenchError(e.errors) from None
    if not len(suite):
        raise BenchError(f"{root}: the test files hold no tests")
    problem = suite.environment_problem()  # e.g. math tests without KaTeX: stop, never score them all as errors
    if problem:
        raise BenchError(f"{root}: {problem}")
    infos = [suite.info(i) for i in suite.ids]
    if single:
        referenced = {t.pdf for t in infos}
        pdf_keys = [k for k in pdf_keys if k in referenced]

    with_baseline = {t.pdf for t in infos if t.type == "baseline"}
    auto = [{"id": f"{k}_baseline", "pdf": k, "page": 1, "type": "baseline"} for k in pdf_keys if k not in with_baseline]
    if auto:
        text = "\n".join(json.dumps(r, ensure_ascii=False) for r in auto)
        try:
            suite = BenchSuite.from_sources([*sources, (_AUTO_SOURCE, text)], strict=True)
        except SuiteError as e:
            raise BenchError([m.replace(_AUTO_SOURCE, "auto-added baseline tests") for m in e.errors]) from None
        infos = [suite.info(i) for i in suite.ids]

    # Page coverage, over every test (baseline ones included), before skip_baseline.
    covered: set[tuple[str, Any]] = set()
    for t in infos:
        try:
            covered.add((t.pdf, t.page))
        except TypeError:  # an unhashable page (a JSON list/object) equals no page number
            pass
    problems: list[str] = []
    warnings: list[str] = []
    page_counts: dict[str, int] = {}
    known = _core.pdf_page_counts([pdf_dir / k for k in pdf_keys])
    for k, n in zip(pdf_keys, known):
        try:
            page_counts[k] = n if n is not None else _pypdf_page_count(pdf_dir / k)
        except Exception as e:  # noqa: BLE001 - pypdf raises many types on a corrupt file
            (warnings if force else problems).append(f"{pdf_dir / k}: cannot read the PDF ({type(e).__name__}: {e})")
            continue
        for page in range(1, page_counts[k] + 1):
            if (k, page) not in covered:
                (warnings if force else problems).append(f"no test for {k} page {page} (use --force to run anyway)")
    if problems:
        raise BenchError(problems)

    if skip_baseline:
        infos = [t for t in infos if t.type != "baseline"]
    group = {t.id: BASELINE_GROUP if t.source == _AUTO_SOURCE else os.path.basename(t.source) for t in infos}
    return Bench(
        root=root,
        jsonl_files=jsonl_files,
        pdf_keys=pdf_keys,
        page_counts=page_counts,
        suite=suite,
        tests=infos,
        group=group,
        warnings=warnings,
    )


def find_candidates(bench: Bench, names: Sequence[str] | None = None) -> list[Path]:
    """Candidate folders: every sub-directory of the bench folder except `pdfs` (sorted), or
    the ones named."""
    available = sorted(e.name for e in os.scandir(bench.root) if e.is_dir() and e.name != "pdfs")
    if names:
        unknown = [n for n in names if n not in available]
        if unknown:
            raise BenchError(f"no candidate folder {unknown[0]!r} in {bench.root} (found: {', '.join(available) or 'none'})")
        available = [n for n in available if n in set(names)]
    if not available:
        raise BenchError(f"{bench.root}: no candidate folders (sub-directories besides pdfs/)")
    return [bench.root / n for n in available]


# ----------------------------------------------------------------------------------------------
# Scoring


def _page_files(folder: Path, pdf_keys: Sequence[str]) -> dict[str, list[str]]:
    base_to_pdf = {os.path.splitext(k)[0]: k for k in pdf_keys}
    out: dict[str, list[str]] = {k: [] for k in pdf_keys}
    root = os.path.join(str(folder), "")
    for f in glob.glob(os.path.join(glob.escape(root), "**", "*.md"), recursive=True):
        rel = f[len(root) :] if f.startswith(root) else os.path.relpath(f, folder)
        m = _PAGE_FILE.match(rel)
        if m and m.group(1) in base_to_pdf:
            out[base_to_pdf[m.group(1)]].append(rel)
    for files in out.values():
        files.sort()
    return out


def _read_page(path: Path) -> str:
    with open(path, encoding="utf-8") as f:  # universal newlines, as the reference reads
        return f.read()


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
            rows.extend(suite._core.check_files(chunk, threads))
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
            r = [tuple(c) for c in _run_checks(suite, [(text, test_ids)], threads)[0]]
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
            missing.append(f"{k}: no page files (expected {os.path.splitext(k)[0]}_pg<N>_repeat<M>.md)")
    page_re: dict[str, Optional[re.Pattern[str]]] = {}
    outcomes: list[TestOutcome] = []
    # md file -> (outcome index, position of the file among that outcome's md files), for each
    # test the file serves; results[j][i] is then the verdict of outcomes[j] on its i-th file.
    by_file: dict[str, list[tuple[int, int]]] = {}
    results: list[list[Any]] = []
    missing_pages: set[tuple[str, str]] = set()
    page_md: dict[tuple[str, str], list[str]] = {}  # (pdf, page text) -> its md files
    for t in bench.tests:
        page_text = f"{t.page}"
        if page_text not in page_re:
            try:
                page_re[page_text] = re.compile(rf"_pg{page_text}_")
            except re.error:
                page_re[page_text] = None
        pattern = page_re[page_text]
        pdf_files = files.get(t.pdf, [])
        md = page_md.get((t.pdf, page_text))
        if md is None:
            md = [f for f in pdf_files if pattern is not None and pattern.search(os.path.basename(f))]
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
                base = os.path.splitext(t.pdf)[0]
                if (t.pdf, page_text) not in missing_pages:
                    missing_pages.add((t.pdf, page_text))
                    missing.append(f"{t.pdf} page {page_text}: no page files (expected {base}_pg{page_text}_repeat<M>.md)")
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


# ----------------------------------------------------------------------------------------------
# Confidence interval


def percentile(values: Sequence[float], q: float) -> float:
    """numpy.percentile(values, q) with the default linear method."""
    xs = sorted(values)
    if not xs:
        raise ValueError("percentile of no values")
    pos = (len(xs) - 1) * (q / 100.0)
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    t = pos - lo
    a, b = xs[lo], xs[hi]
    diff = b - a
    # numpy's _lerp: a + diff*t, computed from the upper end when t >= 0.5
    return b - diff * (1 - t) if t >= 0.5 else a + diff * t


def _binomial_cdf(n: int, k: int) -> list[float]:
    """Cumulative Binomial(n, k/n) probabilities of 0..n successes."""
    p = k / n
    logs = [
        math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * math.log(p) + (n - i) * math.log1p(-p) for i in range(n + 1)
    ]
    top = max(logs)
    acc, cdf = 0.0, []
    for v in logs:
        acc += math.exp(v - top)
        cdf.append(acc)
    return [c / acc for c in cdf]


def bootstrap_ci(groups: Sequence[Sequence[float]], *, samples: int = 1000, level: float = 0.95, seed: int = 0) -> tuple[float, float]:
    """Bootstrap CI of the mean of group means over 0/1 scores, resampling within each group
    (the reference's `calculate_bootstrap_ci` with splits), seeded. Each resampled group's pass
    count is drawn from Binomial(n, passed/n), the law of a with-replacement resample's sum."""
    groups = [g for g in groups if len(g)]
    if not groups or samples <= 0:
        return (0.0, 0.0)
    rng = random.Random(seed)
    # Per group: its size and the cumulative Binomial(n, passed/n) law (None: constant group).
    laws: list[tuple[int, float, Optional[list[float]]]] = []
    for g in groups:
        n, k = len(g), int(sum(g))
        laws.append((n, k / n, None if k in (0, n) else _binomial_cdf(n, k)))

    # Group by group (each group's draws in one comprehension): the resample means are the
    # per-resample sums of the groups' resampled rates.
    totals = [0.0] * samples
    for n, rate, cdf in laws:
        if cdf is None:
            draws = [rate] * samples
        else:
            r, cut = rng.random, bisect.bisect_right
            draws = [min(cut(cdf, r()), n) / n for _ in range(samples)]
        totals = [a + b for a, b in zip(totals, draws)]
    means = [t / len(laws) for t in totals]
    alpha = (1 - level) / 2
    return (percentile(means, alpha * 100), percentile(means, (1 - alpha) * 100))


# ----------------------------------------------------------------------------------------------
# Whole run


def run_bench(
    path: str | os.PathLike[str],
    candidates: Sequence[str] | None = None,
    *,
    skip_baseline: bool = False,
    force: bool = False,
    details: str | os.PathLike[str] | None = None,
    threads: int | None = None,
    bootstrap_samples: int = 1000,
    confidence_level: float = 0.95,
    seed: int = 0,
    progress: Progress | None = None,
    sample: int | None = None,
    keep_details: bool = False,
) -> BenchSummary:
    """Runs the benchmark on a bench folder; see the module docstring. `sample`: score only that
    many tests, drawn with `random.Random(seed)` (the reference's `--sample`, unseeded there), kept
    in file order. `keep_details`: keep each candidate's details rows on its result."""
    threads = check_threads(threads)
    bench = load_bench(path, skip_baseline=skip_baseline, force=force)
    if sample is not None and 0 < sample < len(bench.tests):
        chosen = set(random.Random(seed).sample(range(len(bench.tests)), sample))
        bench.tests = [t for i, t in enumerate(bench.tests) if i in chosen]
    folders = find_candidates(bench, candidates)
    out = []
    sink = open(details, "w", encoding="utf-8") if details else None
    try:
        for folder in folders:
            result, rows = evaluate_candidate(bench, folder, progress=progress, details=sink is not None or keep_details, threads=threads)
            if keep_details:
                result.details = rows
            groups: dict[str, list[float]] = {}
            for o in result.outcomes:
                groups.setdefault(o.group, []).append(1.0 if o.passed else 0.0)
            result.ci = bootstrap_ci(list(groups.values()), samples=bootstrap_samples, level=confidence_level, seed=seed)
            out.append(result)
            if sink:
                for row in rows:
                    sink.write(json.dumps(row, ensure_ascii=False) + "\n")
    finally:
        if sink:
            sink.close()
    return BenchSummary(bench, out, bootstrap_samples, confidence_level, seed)


def failed_everywhere(summary: BenchSummary) -> list[TestInfo]:
    """The tests that no candidate without errors passed (the reference's `--output_failed`)."""
    valid = [c for c in summary.candidates if not c.failed]
    if not valid:
        return []
    passed = {o.id for c in valid for o in c.outcomes if o.passed}
    scored = {o.id for c in valid for o in c.outcomes}
    return [t for t in summary.bench.tests if t.id in scored and t.id not in passed]


def test_records(tests: Sequence[TestInfo]) -> list[str]:
    """Each test's JSON record as its file holds it (the auto-added baseline tests, which no file
    holds, written as the record they stand for)."""
    lines: dict[str, list[str]] = {}
    out = []
    for t in tests:
        if t.source and os.path.isfile(t.source):
            if t.source not in lines:
                with open(t.source, encoding="utf-8") as f:
                    lines[t.source] = f.read().splitlines()
            out.append(lines[t.source][t.line - 1])
        else:
            out.append(json.dumps({"pdf": t.pdf, "page": t.page, "id": t.id, "type": t.type}))
    return out


def summary_dict(summary: BenchSummary) -> dict:
    """The summary as plain JSON data (what `--json` prints)."""
    b = summary.bench
    counts: dict[str, int] = {}
    for t in b.tests:
        counts[t.type] = counts.get(t.type, 0) + 1
    cands = []
    for c in summary.candidates:
        cands.append(
            {
                "name": c.name,
                "status": "failed" if c.failed else "ok",
                "reference_status": c.status,
                "score": c.score,
                "score_ignoring_errors": c.score_ignoring_errors,
                "ci": list(c.ci),
                "ci_half_width": (c.ci[1] - c.ci[0]) / 2,
                "tests": len(c.outcomes),
                "by_type": {k: {"score": s, "tests": n} for k, (s, n) in c.by_type.items()},
                "by_jsonl": {k: {"passed": p, "total": t, "rate": p / t} for k, (p, t) in sorted(c.by_jsonl.items())},
                "missing": c.missing,
                "errors": c.errors,
                "failed_tests": [
                    {
                        "id": o.id,
                        "pdf": o.pdf,
                        "page": o.page,
                        "passes": o.passes,
                        "repeats": o.repeats,
                        "passed": o.passed,
                        "explanation": o.explanations[0] if o.explanations else None,
                    }
                    for o in c.outcomes
                    if o.avg < 1.0
                ],
            }
        )
    return {
        "bench": str(b.root),
        "jsonl_files": [f.name for f in b.jsonl_files],
        "pdfs": len(b.pdf_keys),
        "tests": len(b.tests),
        "tests_by_type": dict(sorted(counts.items())),
        "warnings": b.warnings,
        "ci": {"level": summary.confidence_level, "samples": summary.bootstrap_samples, "seed": summary.seed},
        "candidates": cands,
    }


def print_summary(summary: BenchSummary, console: Any = None, *, show_failures: bool = False) -> None:
    """Human-readable report (rich tables), like the reference's final summary."""
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    b = summary.bench
    for w in b.warnings:
        console.print(f"[yellow]warning:[/] {w}", highlight=False)
    pct = f"{summary.confidence_level * 100:g}%"
    table = Table(title=f"olmOCR-bench: {b.root}", title_justify="left")
    for col, justify in (("candidate", "left"), ("score", "right"), (f"± ({pct} CI)", "right"), ("tests", "right")):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for c in summary.candidates:
        half = f"{(c.ci[1] - c.ci[0]) / 2 * 100:0.1f}%"
        if c.failed:
            score = f"[red]FAILED (errors)[/] [dim]{c.score_ignoring_errors * 100:0.1f}% ignoring errors[/]"
        else:
            score = c.status
        table.add_row(c.name, score, "" if c.failed else half, str(len(c.outcomes)))
    console.print(table)

    breakdown = Table(title="pass rate by JSONL file (tests passed) and by test type (mean over repeats)", title_justify="left")
    breakdown.add_column("")
    for c in summary.candidates:
        breakdown.add_column(c.name, justify="right")
    for g in sorted({g for c in summary.candidates for g in c.by_jsonl}):
        cells = []
        for c in summary.candidates:
            p, t = c.by_jsonl.get(g, (0, 0))
            cells.append(f"{p / t * 100:0.1f}% ({p}/{t})" if t else "")
        breakdown.add_row(g, *cells)
    breakdown.add_section()
    for kind in sorted({t for c in summary.candidates for t in c.by_type}):
        cells = []
        for c in summary.candidates:
            s, n = c.by_type.get(kind, (0.0, 0))
            cells.append(f"{s * 100:0.1f}% (n={n})" if n else "")
        breakdown.add_row(f"[dim]type[/] {kind}", *cells)
    console.print(breakdown)
    legend = "score: the mean of the per-JSONL pass rates (a test passes when most of its repeats pass)."
    if any(c.failed for c in summary.candidates):
        legend += " FAILED (errors): the candidate has errors (listed below) and the reference scores it 0."
    console.print(legend, style="dim", highlight=False)
    for c in summary.candidates:
        if c.errors:
            console.print(f"[red]{c.name}: {len(c.errors)} error(s)[/]", highlight=False)
            for e in c.errors[:20]:
                console.print(f"  {e}", highlight=False, markup=False)
            if len(c.errors) > 20:
                console.print(f"  ... and {len(c.errors) - 20} more (see --json)", highlight=False)
        if show_failures:
            for o in c.outcomes:
                if o.avg < 1.0:
                    ex = o.explanations[0] if o.explanations else ""
                    console.print(
                        f"  [FAIL] {c.name}: {o.id} ({o.pdf} page {o.page}) {o.passes}/{o.repeats} repeats passed. {ex}",
                        highlight=False,
                        markup=False,
                    )
