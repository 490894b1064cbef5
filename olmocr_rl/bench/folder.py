"""A bench folder as the reference reads it: its PDFs (pages counted as pypdf counts them), its tests
(plus the auto-added baseline tests) and its candidate folders with their page files."""

from __future__ import annotations

import glob
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import olmocr_rl.pdfs as pdfs
from olmocr_rl.errors import UserError
from olmocr_rl.jsonl import read_jsonl
from olmocr_rl.paths import PAGE_FILE, is_utf8, page_stem, require_utf8, shown
from olmocr_rl.suite import BenchSuite, Guard, SuiteError, TestInfo

BASELINE_GROUP = "baseline"


_AUTO_SOURCE = "<auto baseline>"


class BenchError(UserError, ValueError):
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
    notes: list[str] = field(default_factory=list)  # e.g. sub-folders that are not candidates
    uncovered: list[tuple[str, int]] = field(default_factory=list)  # (PDF, page) without a test: allowed by `force`


def load_bench(path: str | os.PathLike[str], *, skip_baseline: bool = False, force: bool = False, guard: Guard = "none") -> Bench:
    """Loads a bench folder (or one of its `.jsonl` files); raises BenchError on what the
    reference would refuse to run (no pdfs/, no PDFs, no tests, invalid tests, pages without
    tests unless `force`), listing every problem. The suite checks under `guard` ("none": the
    published benchmark)."""
    given = Path(path)
    if not given.exists():
        raise BenchError(f"{shown(given)}: no such file or directory")
    require_utf8(given, "bench folder" if given.is_dir() else "test file")
    single = given.is_file()
    if single and given.suffix != ".jsonl":
        raise BenchError(f"{given}: not a folder (give a bench folder, or one of its .jsonl test files)")
    root = given.parent if single else given
    pdf_dir = root / "pdfs"
    if not pdf_dir.is_dir():
        whose = f"{given}: its folder {root} has" if single else f"{given}:"
        raise BenchError(f"{whose} no pdfs/ folder (a bench folder holds *.jsonl, pdfs/ and one folder per candidate)")
    found = glob.glob(os.path.join(glob.escape(str(pdf_dir)), "**", "*.pdf"), recursive=True)
    pdf_keys = sorted(os.path.relpath(p, pdf_dir) for p in found)
    if not pdf_keys:
        raise BenchError(f"{pdf_dir}: no PDF files")
    # glob.glob, as the reference: hidden files (".x.jsonl") are not tests.
    top = glob.glob(os.path.join(glob.escape(str(root)), "*.jsonl"))
    jsonl_files = [given] if single else sorted(Path(p) for p in top if os.path.isfile(p))
    if not jsonl_files:
        raise BenchError(f"{root}: no *.jsonl test files at the top level")
    odd = [shown(pdf_dir / k) for k in pdf_keys if not is_utf8(k)] + [shown(f) for f in jsonl_files if not is_utf8(f)]
    if odd:  # no test can name such a PDF, and no message or JSON output could name either
        raise BenchError([f"{name}: the file's name is not UTF-8 text; rename it" for name in odd])
    sources, unreadable = [], []
    for f in jsonl_files:
        try:
            read = read_jsonl(f)
        except OSError as e:
            raise BenchError(f"{f}: cannot read ({e.strerror or e})") from None
        sources.append((str(f), read.text))
        unreadable += read.messages()
    if unreadable:  # the reference cannot read such a file at all
        raise BenchError(unreadable)
    try:
        suite = BenchSuite.from_sources(sources, strict=True, guard=guard)
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
            suite = BenchSuite.from_sources([*sources, (_AUTO_SOURCE, text)], strict=True, guard=guard)
        except SuiteError as e:
            raise BenchError([m.replace(_AUTO_SOURCE, "auto-added baseline tests") for m in e.errors]) from None
        infos = [suite.info(i) for i in suite.ids]

    # Page coverage, over every test (baseline ones included), before skip_baseline.
    page_counts, uncovered, problems, warnings = _coverage(pdf_dir, pdf_keys, infos, force)
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
        uncovered=uncovered,
    )


def _coverage(
    pdf_dir: Path, pdf_keys: list[str], infos: list[TestInfo], force: bool
) -> tuple[dict[str, int], list[tuple[str, int]], list[str], list[str]]:
    """Every page 1..N of every PDF must have a test (N as pypdf counts it): the page counts, the
    (PDF, page) without a test, and the problems they are (warnings instead with `force`)."""
    covered: set[tuple[str, Any]] = set()
    for t in infos:
        try:
            covered.add((t.pdf, t.page))
        except TypeError:  # an unhashable page (a JSON list/object) equals no page number
            pass
    problems: list[str] = []
    warnings: list[str] = []
    uncovered: list[tuple[str, int]] = []
    page_counts: dict[str, int] = {}
    for k, n in zip(pdf_keys, pdfs.page_counts([pdf_dir / k for k in pdf_keys])):
        if isinstance(n, pdfs.PdfUnreadable):
            (warnings if force else problems).append(f"{pdf_dir / k}: cannot read the PDF ({n})")
            continue
        page_counts[k] = n
        for page in range(1, page_counts[k] + 1):
            if (k, page) not in covered:
                uncovered.append((k, page))
                if force:
                    warnings.append(f"no test for {k} page {page} (scored anyway: --force)")
                else:
                    problems.append(f"no test for {k} page {page} (use --force to run anyway)")
    return page_counts, uncovered, problems, warnings


def find_candidates(bench: Bench, names: Sequence[str] | None = None) -> list[Path]:
    """Candidate folders: the ones named, in the order named (a name given twice counts once:
    `--compare` and the report take B − A in this order), else every sub-directory of the bench
    folder except `pdfs` that holds a page file of one of its PDFs (sorted; the others, such as a
    run's `logs/` or `checkpoint-N/`, are named once in `bench.notes`). A folder whose name is
    not UTF-8 is skipped with a warning."""
    folders = sorted(e.name for e in os.scandir(bench.root) if e.is_dir() and e.name != "pdfs")
    odd = [n for n in folders if not is_utf8(n)]
    bench.warnings += [f"{shown(bench.root / n)}: skipped: the folder's name is not UTF-8 text; rename it" for n in odd]
    available = [n for n in folders if n not in odd]
    if names:
        unknown = [n for n in names if n not in available]
        if unknown:
            found = ", ".join(available) or "none"
            raise BenchError(f"no candidate folder {shown(unknown[0])!r} in {bench.root} (found: {found})")
        return [bench.root / n for n in dict.fromkeys(names)]
    empty = [n for n in available if not any(_page_files(bench.root / n, bench.pdf_keys).values())]
    if empty:
        bench.notes.append(f"not candidates (no page file of a PDF in pdfs/): {', '.join(empty)}")
    available = [n for n in available if n not in empty]
    if not available:
        raise BenchError(f"{bench.root}: no candidate folders (sub-folders besides pdfs/ holding <pdf>_pg<N>_repeat<M>.md files)")
    return [bench.root / n for n in available]


def _page_files(folder: Path, pdf_keys: Sequence[str]) -> dict[str, list[str]]:
    base_to_pdf = {page_stem(k): k for k in pdf_keys}
    out: dict[str, list[str]] = {k: [] for k in pdf_keys}
    root = os.path.join(str(folder), "")
    for f in glob.glob(os.path.join(glob.escape(root), "**", "*.md"), recursive=True):
        rel = f[len(root) :] if f.startswith(root) else os.path.relpath(f, folder)
        m = PAGE_FILE.match(rel)
        if m and m.group(1) in base_to_pdf:
            out[base_to_pdf[m.group(1)]].append(rel)
    for files in out.values():
        files.sort()
    return out


def _read_page(path: Path) -> str:
    if not os.path.isfile(path):  # a FIFO would block open() forever (the reference's does)
        raise OSError("not a regular file")
    with open(path, encoding="utf-8") as f:  # universal newlines, as the reference reads
        return f.read()
