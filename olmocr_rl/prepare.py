"""`olmocr-rl prepare`: an olmOCR-bench folder (`pdfs/**.pdf` + top-level test `*.jsonl`) turned,
once, into what `olmocr-rl train` reads, so the training loop does no PDF work and no test parsing.

Output (`OUT_DIR/`):

* `prepared.json`: format, version, bench folder, image size, prompt, row counts per split and
  every option used. Written last: a directory without it is an unfinished run.
* `train.jsonl`, `eval.jsonl`: one row per (pdf, page) with tests, sorted by (pdf, page):
  `{"pdf", "page", "image", "width", "height", "prompt", "prompt_layout", "jsonl_file", "test_ids"}`,
  plus `"reference"` where the bench folder has the page's reference output. The page's image tokens
  are not written: they depend on the model that reads it and the run's `max_pixels`, so `train`,
  `curate` and `generate` compute them from width and height (olmocr_rl/image_tokens.py); rows of an
  older prepare carry an `image_tokens` estimate for Qwen2.5-VL, which is then ignored.
* `references/...md`: those reference outputs, copied from the bench folder's `claude_original/`
  (where olmOCR's GRPO trainer reads them: `<pdf folder>/<name>_page<N>_pg1_repeat1.md`); the
  trainer gives them to the rewards that compare with a reference (front-matter, edit-distance,
  element-count) as the `claude_original` column.
* `tests/<name>.jsonl`: the accepted test records (verbatim source lines) of every row, so
  `BenchSuite.load(OUT_DIR / "tests")` loads exactly the tests the rows name.
* `images/<pdf key without .pdf>_pg<N>.png`: pages rendered with pdfium, longest side exact.
  (`eval_images/` for pages of a separate `eval_dir`.)
* `report.json`: the validation report (see `PrepareReport`).

What mirrors the reference's GRPO dataset (`OlmOCRBenchDataset`, docs/checks.md §1.2): JSONL files
are the sorted top-level `*.jsonl`; `jsonl_filter` is a case-insensitive `re.search` on each
file's basename; tests are grouped by (pdf, page), the group keeps the first file it was seen in;
`type_filter` keeps only tests of the given types and a page left with none is dropped (the
reference returns no reward for it); `max_pages` keeps the first pages in (pdf, page) order.
Where we differ, on purpose: tests are validated exactly as the checks load them (the reference
skips only unparsable lines and ones without pdf/id, then crashes at reward time); a page's tests
from every JSONL file are kept (the reference loads only the first file's at reward time); pages
are rendered with pdfium rather than pdftoppm, to the same longest side.
"""

from __future__ import annotations

import glob
import math
import os
import random
import re
import shutil
from collections import defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from olmocr_rl.atomic import atomic_write, write_bytes
from olmocr_rl.errors import UserError
from olmocr_rl.folder_lock import folder_lock
from olmocr_rl.image_tokens import ImageBudget
from olmocr_rl.jsonl import read_jsonl
from olmocr_rl.paths import REFERENCE_DIR, is_utf8, shown
from olmocr_rl.paths import reference_file as reference_name
from olmocr_rl.prepared import FORMAT, VERSION
from olmocr_rl.prompts import DEFAULT_PROMPT, IMAGE_FIRST

TEST_TYPES = ("present", "absent", "order", "table", "math", "baseline", "format", "footnote")
DEFAULT_LONGEST_SIDE = 1288  # olmOCR 2's training and inference resolution
EVAL_PREFIX = "eval_"  # tests/ and image prefix for the pages of a separate eval folder
_PAGES_PER_TASK = 16
_PNG_COMPRESS_LEVEL = 1  # zlib level 1: ~3x faster than the default 6, files ~1.5x larger


class PrepareError(UserError, ValueError):
    """A problem with the request itself (no pdfs/ folder, a filter matching nothing, ...):
    nothing can be prepared. Problems with individual tests or PDFs are reported instead."""


# ---------------------------------------------------------------------------------------------
# Image tokens: computed where the model is known (olmocr_rl/image_tokens.py, from each row's width
# and height); prepare only reports an estimate for the processor it is told of.


def report_budget(opts: PrepareOptions) -> ImageBudget:
    """The processor `prepare`'s report estimates image tokens for: --processor's (a model folder,
    or a hub id whose processor config is fetched without its weights), the deprecated --patch-size
    (one token per N-pixel square within Qwen2.5-VL's pixel bounds), else Qwen2.5-VL's (olmOCR 2's)."""
    from olmocr_rl.image_tokens import QWEN2_5_VL, UnknownProcessor, budget_from_config, folder_budget, image_processor_config

    if opts.patch_size is not None:
        return ImageBudget(opts.patch_size, 1, QWEN2_5_VL.min_pixels, QWEN2_5_VL.max_pixels, f"--patch-size {opts.patch_size}")
    if opts.processor is None:
        return QWEN2_5_VL
    try:
        if Path(opts.processor).expanduser().is_dir():
            return folder_budget(Path(opts.processor).expanduser())
        from olmocr_rl.hub import HubUnavailable, hub_model_files

        try:
            hub = hub_model_files(opts.processor, tensors=False)
        except HubUnavailable as e:
            raise UnknownProcessor(str(e)) from None
        found = image_processor_config(hub.files)
        if found is None:
            raise UnknownProcessor(f"{opts.processor} has no image processor config")
        return budget_from_config(*found)
    except UnknownProcessor as e:
        raise PrepareError(f"--processor {opts.processor}: {e}") from None


# ---------------------------------------------------------------------------------------------
# Rendering (runs in worker processes; pdfium is not thread-safe)


def page_scale(width_pt: float, height_pt: float, longest_side: int) -> float:
    """The largest render scale at which pdfium's bitmap (ceil(size x scale)) has a longest side
    of exactly `longest_side` px."""
    longest = max(width_pt, height_pt)
    if not longest > 0:
        raise ValueError(f"page has no area ({width_pt} x {height_pt} pt)")
    scale = longest_side / longest
    while math.ceil(longest * scale) > longest_side:
        scale = math.nextafter(scale, 0.0)
    return scale


def _existing_size(path: str) -> tuple[int, int] | None:
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as im:
            return im.size if im.format == "PNG" else None
    except (OSError, UnidentifiedImageError, ValueError):
        return None


def _render_task(task: tuple[str, list[int], list[str], int, str]) -> dict[str, Any]:
    """Renders some pages of one PDF. Returns {"page_count", "pages": [(page, w, h, status)]}
    where status is "rendered", "reused", "out of range" or an error message; or {"error"} when
    the PDF cannot be opened. Never raises for a bad PDF or page."""
    import pypdfium2 as pdfium

    from olmocr_rl.pdfs import PdfUnreadable, open_document

    pdf_path, pages, outs, longest_side, tmp_dir = task
    try:
        doc = open_document(pdf_path)
    except PdfUnreadable as e:
        return {"error": str(e)}
    results: list[tuple[int, int | None, int | None, str]] = []
    try:
        n = len(doc)
        for page, out in zip(pages, outs):
            if page > n:
                results.append((page, None, None, "out of range"))
                continue
            try:
                results.append((page, *_render_page(doc, pdf_path, page, out, longest_side, tmp_dir)))
            # pdfium reports a broken page as PdfiumError (a RuntimeError); PIL as OSError.
            except (pdfium.PdfiumError, RuntimeError, OSError, ValueError) as e:
                results.append((page, None, None, f"{type(e).__name__}: {e}"))
    finally:
        doc.close()
    return {"page_count": n, "pages": results}


def _render_page(doc: Any, doc_path: str, page: int, out: str, longest_side: int, tmp_dir: str) -> tuple[int, int, str]:
    p = doc[page - 1]
    try:
        w_pt, h_pt = p.get_size()
        scale = page_scale(w_pt, h_pt, longest_side)
        expected = (math.ceil(w_pt * scale), math.ceil(h_pt * scale))
        # Reuse a page an earlier run wrote if it has the size this run would give and is
        # newer than the PDF (a replaced PDF is rendered again).
        if _existing_size(out) == expected and os.stat(out).st_mtime_ns >= os.stat(doc_path).st_mtime_ns:
            return (*expected, "reused")
        image = p.render(scale=scale, rev_byteorder=True).to_pil()
    finally:
        p.close()
    if image.mode != "RGB":
        image = image.convert("RGB")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    # Written beside the output under a unique name, then renamed: a killed run never leaves a
    # truncated PNG where a finished one is expected.
    with atomic_write(out, "wb", tmp_dir=tmp_dir) as f:
        image.save(f, format="PNG", compress_level=_PNG_COMPRESS_LEVEL)
    return (*image.size, "rendered")


# ---------------------------------------------------------------------------------------------
# Report


@dataclass
class PrepareReport:
    """Everything `prepare` found wrong or noteworthy. `problems` counts the entries that
    `--strict` turns into a failure; `pdfs_without_tests` and the summary are informational."""

    bench_dir: str
    eval_bench_dir: str | None = None
    summary: dict[str, Any] = field(default_factory=dict)
    # {"file", "line", "id", "reason"}: invalid test records and undecodable lines
    rejected_tests: list[dict[str, Any]] = field(default_factory=list)
    # {"file", "line", "id", "reason"}: later definitions of an id (the first one is kept)
    duplicate_ids: list[dict[str, Any]] = field(default_factory=list)
    # {"bench", "pdf", "reason", "tests"}: a test's `pdf` names no file under pdfs/
    missing_pdfs: list[dict[str, Any]] = field(default_factory=list)
    # {"bench", "pdf", "error", "tests"}: pdfium cannot open it
    unreadable_pdfs: list[dict[str, Any]] = field(default_factory=list)
    # {"bench", "pdf", "page", "page_count", "reason", "tests"}: page past the end, or not a
    # positive integer (page_count null)
    pages_out_of_range: list[dict[str, Any]] = field(default_factory=list)
    # {"bench", "pdf", "page", "error", "tests"}: the PDF opened but this page did not render
    render_failures: list[dict[str, Any]] = field(default_factory=list)
    # {"bench", "pdf", "pages"}: pages of a tested PDF that no valid test names
    pages_without_tests: list[dict[str, Any]] = field(default_factory=list)
    # {"bench", "pdf"}: PDFs under pdfs/ that no valid test of the selected JSONL files names
    # (informational: expected with --jsonl-filter)
    pdfs_without_tests: list[dict[str, Any]] = field(default_factory=list)
    # {"reason"}: this environment cannot check some accepted tests (math tests without KaTeX)
    environment: list[dict[str, Any]] = field(default_factory=list)
    # An estimate for one processor (train computes the model's own from each row's width and height):
    # {"estimate_for", "patch_size", "merge_size", "min_pixels", "max_pixels", "pages", "min", "mean", "max", "total"}
    image_tokens: dict[str, Any] = field(default_factory=dict)
    references_used: set[str] = field(default_factory=set, repr=False)  # claude_original/ files a row took (not written)

    @property
    def problems(self) -> int:
        return (
            len(self.rejected_tests)
            + len(self.duplicate_ids)
            + len(self.missing_pdfs)
            + len(self.unreadable_pdfs)
            + len(self.pages_out_of_range)
            + len(self.render_failures)
            + len(self.pages_without_tests)
            + len(self.environment)
        )

    def to_dict(self) -> dict[str, Any]:
        return {**{k: v for k, v in asdict(self).items() if k != "references_used"}, "problems": self.problems}


@dataclass
class PrepareResult:
    out_dir: Path
    train: list[dict[str, Any]]
    eval: list[dict[str, Any]]
    report: PrepareReport
    rendered: int  # pages rendered by this run (the rest were reused from an earlier one)


# ---------------------------------------------------------------------------------------------
# Inputs


@dataclass
class _Folder:
    root: Path
    name_prefix: str  # prepended to JSONL names in tests/ and to "images" for its pages
    pdf_keys: set[str]
    jsonl: list[Path]
    excluded: list[str]

    @property
    def image_dir(self) -> str:
        return f"{self.name_prefix}images"


def _pdf_keys(pdf_dir: Path) -> list[str]:
    # As the bench runner: glob (no hidden files), keys relative to pdfs/ with "/" separators.
    found = glob.glob(os.path.join(glob.escape(str(pdf_dir)), "**", "*.pdf"), recursive=True)
    return sorted(Path(os.path.relpath(p, pdf_dir)).as_posix() for p in found)


def _open_folder(root: Path, jsonl_filter: re.Pattern[str] | None, prefix: str) -> _Folder:
    if not root.is_dir():
        raise PrepareError(f"{root}: not a folder")
    pdf_dir = root / "pdfs"
    if not pdf_dir.is_dir():
        raise PrepareError(f"{root}: no pdfs/ folder (a bench folder holds *.jsonl and pdfs/)")
    files = sorted(Path(p) for p in glob.glob(os.path.join(glob.escape(str(root)), "*.jsonl")) if os.path.isfile(p))
    if not files:
        raise PrepareError(f"{root}: no *.jsonl test files at the top level")
    excluded: list[str] = []
    if jsonl_filter is not None:
        excluded = [f.name for f in files if not jsonl_filter.search(f.name)]
        files = [f for f in files if jsonl_filter.search(f.name)]
        if not files:
            raise PrepareError(f"{root}: no JSONL file name matches --jsonl-filter {jsonl_filter.pattern!r}")
    keys = _pdf_keys(pdf_dir)
    # Refused before any work: no test can name such a PDF, and no report could name either.
    odd = [shown(p) for p in (root, *(pdf_dir / k for k in keys), *files) if not is_utf8(p)]
    if odd:
        more = f" (and {len(odd) - 1} more)" if len(odd) > 1 else ""
        raise PrepareError(f"{odd[0]}: the name is not UTF-8 text; rename it{more}")
    return _Folder(root, prefix, set(keys), files, excluded)


def _read_lines(path: Path, report: PrepareReport) -> list[str] | None:
    """The file's lines (olmocr_rl.jsonl, numbered as the suite numbers them); an undecodable line
    is reported and blanked so the rest still load."""
    try:
        read = read_jsonl(path)
    except OSError as e:
        report.rejected_tests.append({"file": str(path), "line": 0, "id": None, "reason": f"cannot read the file ({e.strerror or e})"})
        return None
    for number, why in read.errors:
        report.rejected_tests.append({"file": str(path), "line": number, "id": None, "reason": why})
    return read.lines


def _default_workers() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


@dataclass
class PrepareOptions:
    """Every option of `prepare` (recorded in prepared.json)."""

    longest_side: int = DEFAULT_LONGEST_SIDE
    jsonl_filter: str | None = None
    type_filter: list[str] = field(default_factory=list)
    max_pages: int | None = None
    eval_fraction: float = 0.0
    eval_dir: str | None = None
    seed: int = 0
    workers: int | None = None
    prompt: str = DEFAULT_PROMPT
    prompt_file: str | None = None
    prompt_name: str = "olmocr-rl"  # olmocr_rl/prompts.py: a name, or "file"
    prompt_layout: str = IMAGE_FIRST  # the instruction after the image (ours) or before it (olmOCR's)
    processor: str | None = None  # the model whose processor the report's image-token estimate is for
    patch_size: int | None = None  # deprecated: pixels per image-token side for that estimate

    def check(self) -> None:
        if self.longest_side < 1:
            raise PrepareError(f"the longest image side must be positive, got {self.longest_side}")
        if self.max_pages is not None and self.max_pages < 1:
            raise PrepareError(f"--max-pages must be positive, got {self.max_pages}")
        if not 0.0 <= self.eval_fraction < 1.0:
            raise PrepareError(f"--eval-fraction must be in [0, 1), got {self.eval_fraction}")
        if self.eval_fraction and self.eval_dir:
            raise PrepareError("give --eval-fraction or --eval-dir, not both")
        unknown = sorted(set(self.type_filter) - set(TEST_TYPES))
        if unknown:
            raise PrepareError(f"unknown test type {unknown[0]!r} in --type-filter (known: {', '.join(TEST_TYPES)})")
        if self.patch_size is not None and self.patch_size < 1:
            raise PrepareError(f"--patch-size must be positive, got {self.patch_size}")
        if self.workers is not None and self.workers < 1:
            raise PrepareError(f"--workers must be positive, got {self.workers}")
        if not self.prompt.strip():
            raise PrepareError("the prompt is empty")


# ---------------------------------------------------------------------------------------------
# prepare


def prepare(
    bench_dir: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    options: PrepareOptions | None = None,
    *,
    progress: bool = False,
    on_progress: Callable[[int], None] | None = None,
) -> PrepareResult:
    """Validates the bench folder, renders every tested page once (reusing pages an earlier run
    finished) and writes the prepared directory. Broken tests and PDFs are reported in the
    result's `report` and skipped; raises PrepareError only when nothing can be done."""
    opts = options or PrepareOptions()
    opts.check()
    budget = report_budget(opts)
    try:
        pattern = re.compile(opts.jsonl_filter, re.IGNORECASE) if opts.jsonl_filter else None
    except re.error as e:
        raise PrepareError(f"invalid --jsonl-filter regex {opts.jsonl_filter!r}: {e}") from None
    root = Path(bench_dir).resolve()
    out = Path(out_dir).resolve()
    folders = [_open_folder(root, pattern, "")]
    if opts.eval_dir:
        folders.append(_open_folder(Path(opts.eval_dir).resolve(), pattern, EVAL_PREFIX))
    report = PrepareReport(bench_dir=str(root), eval_bench_dir=str(folders[1].root) if opts.eval_dir else None)

    tests = _load_tests(folders, report)
    pages = _group_pages(tests, folders, opts, report)
    from olmocr_rl.suite import math_environment_problem

    problem = math_environment_problem(sum(1 for ts in pages.tests.values() for t in ts if t.type == "math"))
    if problem:  # training on these pages would score every math test as an error
        report.environment.append({"reason": problem})
    candidates: list[_Page] = []
    for fi in range(len(folders)):
        mine = sorted(k for k in pages.tests if k[0] == fi)
        candidates += mine[: opts.max_pages] if opts.max_pages else mine
    eval_pdfs = _eval_pdfs(candidates, opts)

    # One run at a time per OUT_DIR (a second one fails at once, naming this one).
    with folder_lock(out, "prepare"):
        (out / "prepared.json").unlink(missing_ok=True)  # the directory is unfinished until rewritten
        sizes, rendered = _render_all(candidates, pages, folders, out, opts, report, progress, on_progress)

        splits: dict[str, list[dict[str, Any]]] = {"train": [], "eval": []}
        used: dict[str, set[int]] = defaultdict(set)  # source -> lines of the tests the rows use
        for fi, key, page in candidates:
            if (fi, key, page) not in sizes:
                continue
            w, h = sizes[(fi, key, page)]
            page_tests = pages.tests[(fi, key, page)]
            for t in page_tests:
                used[t.source].add(t.line)
            row = {
                "pdf": key,
                "page": page,
                "image": _image_rel(folders[fi], key, page),
                "width": w,
                "height": h,
                "prompt": opts.prompt,
                "prompt_layout": opts.prompt_layout,
                "jsonl_file": tests.out_name[page_tests[0].source],
                "test_ids": [t.id for t in page_tests],
            }
            ref = reference_file(folders[fi].root, key, page)
            if ref is not None:
                report.references_used.add(str(ref))
                rel = f"{folders[fi].name_prefix}references/{ref.relative_to(folders[fi].root / 'claude_original').as_posix()}"
                (out / rel).parent.mkdir(parents=True, exist_ok=True)
                _write_bytes(out / rel, ref.read_bytes())
                row["reference"] = rel
            splits["eval" if (fi, key) in eval_pdfs else "train"].append(row)

        # Written in this order, prepared.json last: it marks a finished directory.
        _write_tests(
            out / "tests",
            {tests.out_name[s]: [tests.lines[s][n - 1].rstrip("\r") for n in sorted(ns)] for s, ns in used.items()},
        )
        for split, rows in splits.items():
            _write_bytes(out / f"{split}.jsonl", b"".join(_dumps(r) + b"\n" for r in rows))
        _summarize(report, splits, tests, pages, folders, budget)
        _write_bytes(out / "report.json", _dumps(report.to_dict(), indent=True) + b"\n")
        meta = {
            "format": FORMAT,
            "version": VERSION,
            "bench_dir": str(root),
            "target_longest_image_dim": opts.longest_side,
            "prompt": opts.prompt,
            "splits": {k: len(v) for k, v in splits.items()},
            "options": {k: v for k, v in asdict(opts).items() if k != "prompt"} | {"eval_dir": report.eval_bench_dir},
        }
        _write_bytes(out / "prepared.json", _dumps(meta, indent=True) + b"\n")
        return PrepareResult(out, splits["train"], splits["eval"], report, rendered)


def interrupted_message(out_dir: str | os.PathLike[str], signal_name: str) -> str:
    """What an interrupted `prepare` kept in `out_dir`, and how to go on: the folder untouched (its
    prepared.json, which a run removes first and writes last, still there), or unfinished with the
    pages rendered so far, which a re-run reuses (`_render_page`: same size, newer than the PDF)."""
    out = Path(out_dir)
    if not out.is_dir():
        return f"interrupted ({signal_name}) before anything was written; run the same command to prepare {shown(out)}"
    if (out / "prepared.json").is_file():
        return f"interrupted ({signal_name}) before anything was changed: {shown(out)} is as the last prepare left it"
    rendered = sum(1 for d in ("images", f"{EVAL_PREFIX}images") if (out / d).is_dir() for _ in (out / d).rglob("*.png"))
    return (f"interrupted ({signal_name}): {shown(out)} is unfinished (no prepared.json: train refuses it); {rendered} rendered "
            f"page(s) are kept there, and the same command again reuses them and renders only the rest")  # fmt: skip


def reference_file(root: Path, key: str, page: int) -> Path | None:
    """The page's reference output in a bench folder, where olmOCR's GRPO trainer looks for it
    (olmocr_rl/paths.py, `reference_file`). None when there is none."""
    rel = reference_name(key, page)
    path = root / rel if rel is not None else None
    return path if path is not None and path.is_file() else None


_Page = tuple[int, str, int]  # (folder index, pdf key, page)


@dataclass
class _Tests:
    suite: Any  # BenchSuite of every selected JSONL file of every folder
    infos: list[Any]  # its TestInfo records in file and line order
    lines: dict[str, list[str]]  # source -> its lines (the records are copied verbatim)
    out_name: dict[str, str]  # source -> its name under tests/
    folder: dict[str, int]  # source -> folder index


def _load_tests(folders: list[_Folder], report: PrepareReport) -> _Tests:
    """Every file of every folder in one suite, so duplicate ids across files (and across the
    train and eval folders) are found, with the checks' own validation rules."""
    import olmocr_rl._core as _core
    from olmocr_rl.suite import BenchSuite

    sources: list[tuple[str, str]] = []
    tests = _Tests(None, [], {}, {}, {})
    for fi, folder in enumerate(folders):
        for f in folder.jsonl:
            name = folder.name_prefix + f.name
            if name in tests.out_name.values():
                raise PrepareError(f"{f}: tests/{name} would also hold the training file of that name; rename one")
            text_lines = _read_lines(f, report)
            if text_lines is None:
                continue
            src = str(f)
            sources.append((src, "\n".join(text_lines)))
            tests.lines[src], tests.out_name[src], tests.folder[src] = text_lines, name, fi
    core = _core.Suite.from_sources(sources)
    tests.suite = BenchSuite(core, sources)
    for e in core.errors:
        entry = {"file": e.source, "line": e.line, "id": e.id, "reason": e.message}
        (report.duplicate_ids if e.message.startswith("duplicate test id") else report.rejected_tests).append(entry)
    order = {src: i for i, (src, _) in enumerate(sources)}
    tests.infos = sorted((tests.suite.info(i) for i in tests.suite.ids), key=lambda t: (order[t.source], t.line))
    return tests


@dataclass
class _Pages:
    tests: dict[_Page, list[Any]]  # usable pages and their tests (after --type-filter)
    covered: dict[tuple[int, str], set[Any]]  # pages that any valid test names, per PDF
    filtered: dict[str, int]  # tests left out by --type-filter, per type
    filtered_pages: set[tuple[int, str, Any]]  # pages of those tests


def _group_pages(tests: _Tests, folders: list[_Folder], opts: PrepareOptions, report: PrepareReport) -> _Pages:
    """Groups valid tests by (folder, pdf, page); reports missing PDFs and non-integer pages."""
    pages = _Pages(defaultdict(list), defaultdict(set), defaultdict(int), set())
    missing: dict[tuple[int, str], list[str]] = defaultdict(list)
    bad_page: dict[tuple[int, str, str], list[str]] = defaultdict(list)
    for t in tests.infos:
        fi = tests.folder[t.source]
        page = _page_number(t.page)
        if t.pdf in folders[fi].pdf_keys:
            pages.covered[(fi, t.pdf)].add(page)
        if opts.type_filter and t.type not in opts.type_filter:
            pages.filtered[t.type] += 1
            if page is not None:
                pages.filtered_pages.add((fi, t.pdf, page))
        elif t.pdf not in folders[fi].pdf_keys:
            missing[(fi, t.pdf)].append(t.id)
        elif page is None:
            bad_page[(fi, t.pdf, _json(t.page))].append(t.id)
        else:
            pages.tests[(fi, t.pdf, page)].append(t)
    for (fi, key), ids in sorted(missing.items()):
        report.missing_pdfs.append({"bench": str(folders[fi].root), "pdf": key, "reason": _missing_reason(folders[fi], key), "tests": ids})
    for (fi, key, page_json), ids in sorted(bad_page.items()):
        report.pages_out_of_range.append(
            {
                "bench": str(folders[fi].root),
                "pdf": key,
                "page": _unjson(page_json),
                "page_count": None,
                "reason": "page is not a positive integer",
                "tests": ids,
            }
        )
    for fi, folder in enumerate(folders):
        report.pdfs_without_tests += [
            {"bench": str(folder.root), "pdf": k} for k in sorted(folder.pdf_keys) if (fi, k) not in pages.covered
        ]
    return pages


def _eval_pdfs(candidates: list[_Page], opts: PrepareOptions) -> set[tuple[int, str]]:
    """The PDFs of the eval split: all of a separate eval folder's (index 1), or a seeded
    `eval_fraction` of the PDFs (at least one when there are two or more, never all)."""
    if not opts.eval_fraction:
        return {(fi, key) for fi, key, _ in candidates if fi == 1}
    pdfs = sorted({(fi, key) for fi, key, _ in candidates})
    n_eval = round(opts.eval_fraction * len(pdfs))
    if n_eval == 0 and len(pdfs) > 1:
        n_eval = 1
    n_eval = min(n_eval, len(pdfs) - 1)
    random.Random(opts.seed).shuffle(pdfs)
    return set(pdfs[:n_eval])


def _render_all(
    candidates: list[_Page],
    pages: _Pages,
    folders: list[_Folder],
    out: Path,
    opts: PrepareOptions,
    report: PrepareReport,
    progress: bool,
    on_progress: Callable[[int], None] | None,
) -> tuple[dict[_Page, tuple[int, int]], int]:
    """Renders the candidate pages (tasks of up to _PAGES_PER_TASK pages of one PDF); reports
    unreadable PDFs, pages past the end, render failures and untested pages. Returns each
    usable page's (width, height) and how many pages this run rendered."""
    tmp_dir = out / ".tmp"
    tmp_dir.mkdir(exist_ok=True)
    by_pdf: dict[tuple[int, str], list[int]] = defaultdict(list)
    for fi, key, page in candidates:
        by_pdf[(fi, key)].append(page)
    tasks = []
    for (fi, key), pdf_pages in by_pdf.items():
        pdf_path = str(folders[fi].root / "pdfs" / key)
        for i in range(0, len(pdf_pages), _PAGES_PER_TASK):
            chunk = pdf_pages[i : i + _PAGES_PER_TASK]
            outs = [str(out / _image_rel(folders[fi], key, p)) for p in chunk]
            tasks.append(((fi, key), (pdf_path, chunk, outs, opts.longest_side, str(tmp_dir))))
    results = _run_tasks(tasks, opts.workers or _default_workers(), len(candidates), progress, on_progress)
    shutil.rmtree(tmp_dir, ignore_errors=True)

    page_counts: dict[tuple[int, str], int] = {}
    sizes: dict[_Page, tuple[int, int]] = {}
    rendered = 0
    unreadable: dict[tuple[int, str], str] = {}
    for (fi, key), res in results:
        if "error" in res:
            unreadable[(fi, key)] = res["error"]
            continue
        page_counts[(fi, key)] = n = res["page_count"]
        for page, w, h, status in res["pages"]:
            ids = [t.id for t in pages.tests[(fi, key, page)]]
            base = {"bench": str(folders[fi].root), "pdf": key, "page": page}
            if status in ("rendered", "reused"):
                sizes[(fi, key, page)] = (w, h)
                rendered += status == "rendered"
            elif status == "out of range":
                report.pages_out_of_range.append({**base, "page_count": n, "reason": f"the PDF has {n} page(s)", "tests": ids})
            else:
                report.render_failures.append({**base, "error": status, "tests": ids})
    for (fi, key), error in sorted(unreadable.items()):
        ids = [t.id for page in by_pdf[(fi, key)] for t in pages.tests[(fi, key, page)]]
        report.unreadable_pdfs.append({"bench": str(folders[fi].root), "pdf": key, "error": error, "tests": ids})
    report.pages_out_of_range.sort(key=lambda e: (e["bench"], e["pdf"], not _is_page(e["page"]), _json(e["page"]).zfill(12)))
    report.render_failures.sort(key=lambda e: (e["bench"], e["pdf"], e["page"]))
    for (fi, key), n in sorted(page_counts.items()):
        untested = [p for p in range(1, n + 1) if p not in pages.covered[(fi, key)]]
        if untested:
            report.pages_without_tests.append({"bench": str(folders[fi].root), "pdf": key, "pages": untested})
    return sizes, rendered


def _summarize(
    report: PrepareReport,
    splits: dict[str, list[dict[str, Any]]],
    tests: _Tests,
    pages: _Pages,
    folders: list[_Folder],
    budget: ImageBudget,
) -> None:
    tokens = [budget.tokens(r["width"], r["height"]) for rows in splits.values() for r in rows]
    report.image_tokens = {
        "estimate_for": budget.source,
        "patch_size": budget.patch_size,
        "merge_size": budget.merge_size,
        "min_pixels": budget.min_pixels,
        "max_pixels": budget.max_pixels,
        "pages": len(tokens),
        "min": min(tokens, default=0),
        "mean": round(sum(tokens) / len(tokens), 1) if tokens else 0,
        "max": max(tokens, default=0),
        "total": sum(tokens),
    }
    report.summary = {
        "jsonl_files": list(tests.out_name.values()),
        "jsonl_files_excluded": [f.name_prefix + n for f in folders for n in f.excluded],
        "tests_valid": len(tests.suite),
        "tests_used": sum(len(r["test_ids"]) for rows in splits.values() for r in rows),
        "tests_excluded_by_type": dict(sorted(pages.filtered.items())),
        "pages_excluded_by_type": len(pages.filtered_pages - set(pages.tests)),
        "pdfs_train": len({r["pdf"] for r in splits["train"]}),
        "pdfs_eval": len({r["pdf"] for r in splits["eval"]}),
        "pages_train": len(splits["train"]),
        "pages_eval": len(splits["eval"]),
        # Reference outputs (olmocr_rl/paths.py reference_file): the pages that have one, and the claude_original/
        # files no page took (named otherwise than olmOCR's trainer looks for them, or of pages not prepared).
        "pages_with_reference": sum(1 for rows in splits.values() for r in rows if r.get("reference")),
        "references_not_used": sum(
            1 for f in folders for p in (f.root / REFERENCE_DIR).rglob("*.md") if str(p) not in report.references_used
        ),
    }


def _is_page(page: Any) -> bool:
    return type(page) is int and page >= 1  # JSON true/false are not page numbers


def _page_number(page: Any) -> int | None:
    """The page a test names: an integer >= 1, or a string of its ASCII digits (the suite loader
    accepts "3" as the reference does, which runs it on page 3's files); else None."""
    if isinstance(page, str) and page.isascii() and page.isdigit():
        page = int(page)
    return page if _is_page(page) else None


def _json(value: Any) -> str:
    import orjson

    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def _unjson(text: str) -> Any:
    import orjson

    return orjson.loads(text)


def _dumps(obj: Any, indent: bool = False) -> bytes:
    import orjson

    return orjson.dumps(obj, option=orjson.OPT_INDENT_2 if indent else 0)


def _missing_reason(folder: _Folder, key: str) -> str:
    where = folder.root / "pdfs"
    near = [k for k in folder.pdf_keys if k.lower() == key.lower() or k.endswith("/" + key)]
    hint = f" (did you mean {sorted(near)[0]!r}?)" if near else ""
    return f"no such PDF under {where}{hint}"


def _image_rel(folder: _Folder, key: str, page: int) -> str:
    return f"{folder.image_dir}/{key[: -len('.pdf')]}_pg{page}.png"


def _write_bytes(path: Path, data: bytes) -> None:
    write_bytes(path, data)


def _write_tests(test_dir: Path, files: dict[str, list[str]]) -> None:
    test_dir.mkdir(exist_ok=True)
    for stale in test_dir.glob("*.jsonl"):
        if stale.name not in files:
            stale.unlink()
    for name, records in sorted(files.items()):
        _write_bytes(test_dir / name, "".join(r + "\n" for r in records).encode("utf-8"))


def _run_tasks(
    tasks: list[tuple[Any, tuple[str, list[int], list[str], int, str]]],
    workers: int,
    total: int,
    progress: bool,
    on_progress: Callable[[int], None] | None,
) -> list[tuple[Any, dict[str, Any]]]:
    """Runs the render tasks (in `workers` processes when more than one), with a progress bar."""
    from contextlib import ExitStack

    results: list[tuple[Any, dict[str, Any]]] = []
    with ExitStack() as stack:
        bar: Any = None
        if progress and total:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

            bar = stack.enter_context(
                Progress(
                    TextColumn("rendering"),
                    BarColumn(),
                    MofNCompleteColumn(),
                    TextColumn("pages"),
                    TimeElapsedColumn(),
                    TimeRemainingColumn(),
                    console=Console(stderr=True),
                )
            )
            bar_task = bar.add_task("render", total=total)

        def advance(n: int) -> None:
            if bar is not None:
                bar.advance(bar_task, n)
            if on_progress is not None:
                on_progress(n)

        if workers <= 1 or len(tasks) <= 1:
            for key, task in tasks:
                results.append((key, _render_task(task)))
                advance(len(task[1]))
            return results
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, as_completed

        # spawn: no fork of a process holding the progress thread's or the Rust pool's locks.
        from olmocr_rl.procs import pool_worker_dies_with

        pool = stack.enter_context(
            ProcessPoolExecutor(
                max_workers=min(workers, len(tasks)), mp_context=multiprocessing.get_context("spawn"),
                initializer=pool_worker_dies_with, initargs=(os.getpid(),),
            )
        )  # fmt: skip
        futures = {pool.submit(_render_task, task): (key, len(task[1])) for key, task in tasks}
        try:
            for fut in as_completed(futures):
                key, n = futures[fut]
                results.append((key, fut.result()))
                advance(n)
        except BaseException:  # Ctrl-C: stop at once; pages written so far are reused next run
            pool.shutdown(wait=True, cancel_futures=True)  # the pages in progress finish; no other starts
            raise
    return results
