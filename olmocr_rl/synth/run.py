"""`olmocr-rl synth`: HTML pages (yours, or a model's rewrite of your PDF pages) to an olmOCR-bench
folder whose tests and reference markdown are derived from the HTML, as olmOCR's synthetic pipeline
does (docs/preparing.md, "Your own documents").

OUT_BENCH/
  NAME.jsonl                            the tests of every page kept, pages in name order
  pdfs/NAME/PAGE.pdf                    each page rendered by Chromium (one page)
  claude_original/NAME/PAGE_pg1_repeat1.md   its reference markdown (a file; a candidate folder for bench)
  html/NAME/PAGE.html                   --from-pdf: the HTML the model wrote for the page
  synth.json                            what was done: options, pages kept, pages dropped and why (last)
  .synth/NAME/PAGE.json                 per page: its outcome, for a rerun (the page is done)

PAGE is upstream's name of a synthetic page, `<id>_page<N>` (olmocr_rl/paths.py, `synthetic_key`):
HTML_DIR's `invoice.html` is `invoice_page1`, page 3 of --from-pdf's `report.pdf` is `report_page3`;
so `prepare` (as olmOCR's GRPO trainer) finds each page's reference markdown. An HTML file whose
name that lookup would misread (one holding `_page`) is skipped, named.

HTML_DIR's pages are its top-level .html/.htm files whose real path (links followed) is in HTML_DIR:
a link to a file elsewhere is skipped, named, and never read. Each page's tests are drawn with
`random.Random(seed)`, seed as upstream seeds a document: the first 8 hex digits of the sha1 of its
file (the HTML file; --from-pdf: the PDF, whose generator first draws the page) as an integer, plus
`--seed` (default 0: upstream's seeds exactly; another value draws other tests from the same pages).

Every file is written atomically; a page's record in .synth/ is written last, so a killed run leaves
whole pages only, and a rerun redoes just the pages without a record (or whose HTML changed, or that
were dropped for a time or memory bound or a Chromium failure). One run at a time per OUT_BENCH
(a lock); a second fails at once naming the first.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import queue
import random
import threading
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import orjson

from olmocr_rl.atomic import write_bytes, write_text
from olmocr_rl.errors import UserError
from olmocr_rl.paths import REFERENCE_DIR, candidate_file, inside, reference_file, shown, synthetic_key

FORMAT = "olmocr-rl synth"
VERSION = 2  # 2: pages named <id>_page<N>, records hold the seed and settings
MAX_HTML_BYTES = 5 << 20
RETRIED = ("took longer than", "used more than", "Chromium failed")  # outcomes a rerun tries again


class SynthError(UserError, ValueError):
    """Bad arguments or inputs for synth (one line naming the file or option)."""


@dataclass
class Page:
    """One page to synthesize. `key` names its files (`pdfs/NAME/KEY.pdf`); `html`
    is where its HTML is (HTML_DIR mode: the user's file; --from-pdf: html/NAME/KEY.html once the
    model wrote it); `assets` the folder its relative URLs are served from; `seed` makes its
    `random.Random`, advanced by `draws` page choices (--from-pdf, as upstream); `layout` None: the
    HTML's CSS page size, else US Letter."""

    key: str
    html: Path
    assets: Path
    seed: int | str
    doc_id: str = ""  # the id upstream's test generator is given (HTML_DIR: the file's stem; --from-pdf: the key)
    draws: int = 0
    pages_in_pdf: int = 0
    layout: Any = None
    source: str = ""
    pdf: Path | None = None  # --from-pdf: the PDF and the page of it
    page_number: int = 0

    def rng(self) -> random.Random:
        rng = random.Random(self.seed)
        for _ in range(self.draws):
            rng.randint(1, self.pages_in_pdf)
        return rng


@dataclass
class Outcome:
    key: str
    ok: bool
    reason: str = ""
    tests: int = 0
    scale: float | None = None
    html_sha1: str = ""
    source: str = ""
    by_type: dict[str, int] = field(default_factory=dict)
    warning: str = ""  # kept, but worth a look (an empty page)


@dataclass
class SynthResult:
    out: Path
    name: str
    kept: list[Outcome] = field(default_factory=list)
    dropped: list[Outcome] = field(default_factory=list)
    skipped: list[dict] = field(default_factory=list)  # pages never tried: excluded, budget, endpoint failures
    reused: set[str] = field(default_factory=set)  # keys of the pages whose outcome an earlier run recorded
    tests_failing_reference: list[dict] = field(default_factory=list)
    tokens: dict[str, int] = field(default_factory=dict)

    @property
    def kept_now(self) -> int:
        return sum(1 for o in self.kept if o.key not in self.reused)

    @property
    def kept_reused(self) -> int:
        return len(self.kept) - self.kept_now


def reference_path(name: str, key: str) -> str:
    """The page's reference markdown, relative to OUT_BENCH."""
    return f"{REFERENCE_DIR}/{candidate_file(f'{name}/{key}.pdf', 1, 1)}"


def html_pages(html_dir: Path, seed: int = 0) -> tuple[list[Page], list[dict]]:
    """The top-level *.html / *.htm files of `html_dir` (their real path inside it), in name order,
    each named `<stem>_page1`, seeded as the module docstring says and laid out at its CSS page size;
    and the files skipped, with why (a link out of the folder, a name the reference lookup misreads)."""
    if not html_dir.is_dir():
        raise SynthError(f"{shown(html_dir)}: no such folder (give a folder of .html files)")
    pages, skipped = [], []
    for path in sorted(p for p in html_dir.iterdir() if p.suffix.lower() in (".html", ".htm")):
        real = inside(html_dir, path.name)  # links and .. resolved; None when it leads out of the folder
        if real is None:
            skipped.append({"source": shown(path), "reason": f"a link to {shown(os.path.realpath(path))}, outside {shown(html_dir)}: "
                            "not read (give the file itself)"})  # fmt: skip
            continue
        if not real.is_file():
            continue
        key = synthetic_key(path.stem, 1)
        if reference_file(f"x/{key}.pdf", 1) != f"{REFERENCE_DIR}/x/{key}_pg1_repeat1.md":
            skipped.append({"source": shown(path), "reason": "its name holds '_page', which olmOCR's trainer splits a page's name "
                            "on, so its reference markdown would not be found: rename it"})  # fmt: skip
            continue
        page_seed = int(hashlib.sha1(real.read_bytes()).hexdigest()[:8], 16) + seed
        pages.append(Page(key=key, html=real, assets=html_dir, seed=page_seed, doc_id=path.stem, source=str(path)))
    if not pages and not skipped:
        raise SynthError(f"{shown(html_dir)}: no .html files in this folder")
    keys = [p.key for p in pages]
    if dupes := sorted({k for k in keys if keys.count(k) > 1}):
        raise SynthError(f"{shown(html_dir)}: {', '.join(dupes)}: two files with the same name (.html and .htm)")
    return pages, skipped


def record_path(out: Path, name: str, key: str) -> Path:
    return out / ".synth" / name / f"{key}.json"


def done_record(out: Path, name: str, page: Page, html_sha1: str, settings: dict) -> dict | None:
    """The page's record from an earlier run, if it still holds: same HTML, seed and settings,
    files present, and not an outcome a rerun tries again."""
    path = record_path(out, name, page.key)
    try:
        record = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    if (record.get("html_sha1"), record.get("version"), record.get("settings")) != (html_sha1, VERSION, settings):
        return None
    if record["ok"]:
        files = (out / "pdfs" / name / f"{page.key}.pdf", out / reference_path(name, page.key))
        return record if all(f.is_file() for f in files) else None
    return None if record["reason"].startswith(RETRIED) else record


def page_settings(page: Page, options: SynthOptions) -> dict:
    """What a page's outcome depends on besides its HTML (a rerun with others redoes it)."""
    return {"seed": page.seed, "keep_katex_math": options.keep_katex_math}


def synthesize_page(renderer: Any, out: Path, name: str, page: Page, html: str, settings: dict) -> dict:
    """Renders one page and derives its tests and markdown; writes its PDF, markdown and record
    (in that order) and returns the record."""
    from olmocr_rl.front_matter import split_front_matter
    from olmocr_rl.synth.markdown import page_markdown
    from olmocr_rl.synth.page_tests import PageTestError, generate_page_tests

    sha1 = hashlib.sha1(html.encode("utf-8")).hexdigest()
    record: dict[str, Any] = {"version": VERSION, "key": page.key, "html_sha1": sha1, "source": page.source, "ok": False,
                              "settings": settings}  # fmt: skip
    rendered, pdf, layout = renderer.render(html, page.assets, page.layout)
    if not rendered.ok:
        return _write_record(out, name, page, {**record, "reason": rendered.reason})
    try:
        markdown = page_markdown(html)
        tests = generate_page_tests(html, page.doc_id or page.key, 1, page.rng())
    except PageTestError as e:
        return _write_record(out, name, page, {**record, "reason": f"olmOCR's test generator fails on it: {e}"})
    except RecursionError:
        return _write_record(out, name, page, {**record, "reason": "its HTML is nested too deeply to convert"})
    for test in tests:
        test["pdf"] = f"{name}/{page.key}.pdf"
    pdf_path = out / "pdfs" / name / f"{page.key}.pdf"
    md_path = out / reference_path(name, page.key)
    for path in (pdf_path, md_path):
        path.parent.mkdir(parents=True, exist_ok=True)
    write_bytes(pdf_path, pdf)
    write_text(md_path, markdown)
    viewport = [layout.width, layout.height] if layout else None
    if not split_front_matter(markdown)[1].strip():
        record["warning"] = f"the page has no text (its markdown is empty): kept with only {len(tests)} test(s) ({_kinds(tests)})"
    return _write_record(out, name, page, {**record, "ok": True, "scale": rendered.scale, "viewport": viewport, "tests": tests})


def _kinds(tests: list[dict]) -> str:
    return ", ".join(sorted({t["type"] for t in tests})) or "none"


def _write_record(out: Path, name: str, page: Page, record: dict) -> dict:
    path = record_path(out, name, page.key)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_bytes(path, orjson.dumps(record))
    return record


def outcome_of(record: dict) -> Outcome:
    tests = record.get("tests") or []
    by_type: dict[str, int] = {}
    for t in tests:
        by_type[t["type"]] = by_type.get(t["type"], 0) + 1
    return Outcome(record["key"], record["ok"], record.get("reason", ""), len(tests), record.get("scale"), record["html_sha1"],
                   record.get("source", ""), by_type, record.get("warning", ""))  # fmt: skip


def read_html(page: Page) -> tuple[str | None, str]:
    """The page's HTML as text, or None and why not (too large, not UTF-8, unreadable)."""
    try:
        size = page.html.stat().st_size
        if size > MAX_HTML_BYTES:
            return None, f"its HTML is {size} bytes (more than {MAX_HTML_BYTES})"
        return page.html.read_bytes().decode("utf-8"), ""
    except UnicodeDecodeError as e:
        return None, f"its HTML is not UTF-8 ({e.reason} at byte {e.start})"
    except OSError as e:
        return None, f"cannot read its HTML ({e.strerror or e})"


def reference_failures(records: list[dict], out: Path, name: str) -> list[dict]:
    """Tests that fail on their own page's reference markdown (upstream keeps some: an absent test
    whose text the markdown has in a table, a math test KaTeX cannot render): a sanity check."""
    import olmocr_rl._core as _core

    failing = []
    for record in records:
        text = (out / reference_path(name, record["key"])).read_text(encoding="utf-8")
        suite = _core.Suite.from_sources([("page.jsonl", "\n".join(orjson.dumps(t).decode() for t in record["tests"]))])
        ids = [r.id for r in suite.records()]
        for test_id, verdict in zip(ids, suite.check_batch([(text, ids)])[0]):
            if not verdict.passed:
                failing.append({"page": record["key"], "id": test_id, "explanation": verdict.explanation})
    return failing


def write_bench(out: Path, name: str, records: list[dict]) -> None:
    """NAME.jsonl: every kept page's tests, pages in key order."""
    lines = [orjson.dumps(t).decode() for r in sorted(records, key=lambda r: r["key"]) for t in r["tests"]]
    write_text(out / f"{name}.jsonl", "".join(line + "\n" for line in lines))


def write_manifest(result: SynthResult, options: dict) -> None:
    manifest = {
        "format": FORMAT,
        "version": VERSION,
        "name": result.name,
        "options": options,
        "pages_kept": len(result.kept),
        "pages_kept_now": result.kept_now,
        "pages_kept_reused": result.kept_reused,
        "pages_dropped": len(result.dropped),
        "tests": sum(o.tests for o in result.kept),
        "kept": [asdict(o) for o in result.kept],
        "dropped": [asdict(o) for o in result.dropped],
        "skipped": result.skipped,
        "tests_failing_their_reference": result.tests_failing_reference,
        "tokens": result.tokens,
    }
    write_bytes(result.out / "synth.json", orjson.dumps(manifest, option=orjson.OPT_INDENT_2))


@contextlib.contextmanager
def progress_bar(total: int, enabled: bool, label: str = "synthesizing") -> Iterator[Callable[[], None]]:
    """A rich progress bar on stderr (none when disabled); yields the function that advances it."""
    if not enabled or not total:
        yield lambda: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    columns = (TextColumn(label), BarColumn(), MofNCompleteColumn(), TextColumn("pages"), TimeElapsedColumn(), TimeRemainingColumn())
    with Progress(*columns, console=Console(stderr=True)) as bar:
        task = bar.add_task(label, total=total)
        yield lambda: bar.advance(task)


def pdf_pages(from_pdf: Path, out: Path, name: str, all_pages: bool, exclude: list[Path], seed: int = 0) -> tuple[list[Page], list[dict]]:
    """--from-pdf: the pages to ask the model for (one random page of each PDF, chosen as upstream:
    `random.Random(int(sha1(pdf)[:8], 16)).randint(1, pages)`, whose generator then makes the page's
    tests; or every page, each seeded with "sha1:page"), and the PDFs skipped with why (a benchmark's,
    by sha256 content hash; unreadable)."""
    import pypdf
    import pypdfium2 as pdfium

    from olmocr_rl.synth.render import letter_layout_from_png

    if not from_pdf.exists():
        raise SynthError(f"--from-pdf {shown(from_pdf)}: no such file or folder")
    files = [from_pdf] if from_pdf.is_file() else sorted(p for p in from_pdf.rglob("*") if p.suffix.lower() == ".pdf" and p.is_file())
    if not files:
        raise SynthError(f"--from-pdf {shown(from_pdf)}: no .pdf files there")
    banned = _benchmark_hashes(exclude)
    html_dir, empty = out / "html" / name, out / ".synth" / "empty"
    pages: list[Page] = []
    skipped: list[dict] = []
    for path in files:
        data = path.read_bytes()
        if (twin := banned.get(hashlib.sha256(data).hexdigest())) is not None:
            skipped.append({"source": shown(path), "reason": f"excluded: the same file as {shown(twin)} (--exclude)"})
            continue
        try:
            count = len(pypdf.PdfReader(path).pages)  # upstream's count, which the page choice depends on
            doc = pdfium.PdfDocument(data)
            sizes = [doc[i].get_size() for i in range(min(count, len(doc)))]
            doc.close()
        except Exception as e:  # noqa: BLE001 - pypdf and pdfium raise many kinds on a broken PDF: the PDF is skipped, named
            skipped.append({"source": shown(path), "reason": f"cannot read it ({type(e).__name__}: {e})"})
            continue
        if len(sizes) != count:
            skipped.append({"source": shown(path), "reason": f"pypdf counts {count} pages, pdfium {len(sizes)}"})
            continue
        if not sizes:
            skipped.append({"source": shown(path), "reason": "it has no pages"})
            continue
        stem = path.relative_to(from_pdf).with_suffix("").as_posix() if path != from_pdf else path.stem
        sha1 = hashlib.sha1(data).hexdigest()
        chosen = range(1, len(sizes) + 1) if all_pages else [random.Random(int(sha1[:8], 16) + seed).randint(1, len(sizes))]
        for k in chosen:
            layout = letter_layout_from_png(*png_size(*sizes[k - 1]))
            page_seed: int | str = (f"{sha1}:{k}" + (f":{seed}" if seed else "")) if all_pages else int(sha1[:8], 16) + seed
            key = synthetic_key(stem, k)
            pages.append(Page(key, html_dir / f"{key}.html", empty, page_seed, key, 0 if all_pages else 1, len(sizes), layout,
                              f"{shown(path)} page {k}", path, k))  # fmt: skip
    return pages, skipped


def _benchmark_hashes(exclude: list[Path]) -> dict[str, Path]:
    """sha256 -> file, of every PDF under the --exclude paths (files or folders)."""
    out: dict[str, Path] = {}
    for root in exclude:
        if not root.exists():
            raise SynthError(f"--exclude {shown(root)}: no such file or folder")
        files = [root] if root.is_file() else [p for p in root.rglob("*") if p.suffix.lower() == ".pdf" and p.is_file()]
        for f in files:
            out.setdefault(hashlib.sha256(f.read_bytes()).hexdigest(), f)
    return out


def png_size(width_pt: float, height_pt: float) -> tuple[int, int]:
    """The size of a page rendered by pdfium with its longest side LONGEST_SIDE px (upstream: by
    pdftoppm, which may differ by a pixel)."""
    import math

    from olmocr_rl.prepare import page_scale
    from olmocr_rl.synth.render import LONGEST_SIDE

    scale = page_scale(width_pt, height_pt, LONGEST_SIDE)
    return math.ceil(width_pt * scale), math.ceil(height_pt * scale)


def original_png(page: Page) -> tuple[bytes, tuple[int, int]]:
    """The PDF page rendered as upstream shows it to the model: longest side LONGEST_SIDE px."""
    import io

    import pypdfium2 as pdfium

    from olmocr_rl.prepare import page_scale
    from olmocr_rl.synth.render import LONGEST_SIDE

    doc = pdfium.PdfDocument(str(page.pdf))
    try:
        p = doc[page.page_number - 1]
        w, h = p.get_size()
        image = p.render(scale=page_scale(w, h, LONGEST_SIDE)).to_pil()
    finally:
        doc.close()
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return buf.getvalue(), image.size


def rendered_png(renderer: Any, html: str, assets: Path, size: tuple[int, int]) -> bytes | None:
    """An HTML page printed at `size` and rendered back to PNG at its longest side (step 3 of the
    conversation), or None when it does not render."""
    import io

    import pypdfium2 as pdfium

    from olmocr_rl.synth.render import letter_layout_from_png

    rendered, pdf, _ = renderer.render(html, assets, letter_layout_from_png(*size))
    if not rendered.ok or pdf is None:
        return None
    doc = pdfium.PdfDocument(pdf)
    try:
        p = doc[0]
        w, h = p.get_size()
        image = p.render(scale=max(size) / max(w, h)).to_pil()
    finally:
        doc.close()
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return buf.getvalue()


class MainThreadCalls:
    """Lets worker threads run a function on the main thread (Playwright's sync API and pdfium
    belong to the thread that made them): `run` from a worker, `serve` in the main loop."""

    def __init__(self) -> None:
        self.calls: queue.Queue = queue.Queue()

    def run(self, fn: Callable[..., Any], *args: Any) -> Any:
        done = threading.Event()
        box: dict[str, Any] = {}
        self.calls.put((fn, args, box, done))
        done.wait()
        if "error" in box:
            raise box["error"]
        return box["value"]

    def serve(self, timeout: float) -> None:
        try:
            fn, args, box, done = self.calls.get(timeout=timeout)
        except queue.Empty:
            return
        try:
            box["value"] = fn(*args)
        except Exception as e:  # noqa: BLE001 - handed to the worker that asked, which raises it
            box["error"] = e
        finally:
            done.set()


@dataclass
class SynthOptions:
    name: str = "synthetic"
    timeout_s: float = 120.0
    memory_mb: int = 1024
    endpoint: Any = None  # EndpointOptions for --from-pdf
    keep_katex_math: bool = False  # --keep-katex-math (render.py: KaTeX's MathML copy is not text cut off)


def synthesize(pages: list[Page], out: Path, options: SynthOptions, *, skipped: list[dict] | None = None,
               progress: bool = False, manifest_options: dict | None = None) -> SynthResult:  # fmt: skip
    """Synthesizes every page not done yet (see the module docstring) and writes the bench folder."""
    from olmocr_rl.folder_lock import folder_lock
    from olmocr_rl.synth.assets import katex_files, pipeline_module
    from olmocr_rl.synth.endpoint import Usage, read_conversation
    from olmocr_rl.synth.render import Renderer, ready

    katex = katex_files()
    turns = read_conversation(pipeline_module()) if options.endpoint else None
    result = SynthResult(out, options.name, skipped=list(skipped or []))
    usage = Usage()
    created = not out.exists()
    try:
        with folder_lock(out, "synth"):
            records, to_render, to_ask = _resume(out, options, pages, result)
            result.reused = set(records)
            if to_render or to_ask:  # else no browser is started
                ready()  # Playwright and Chromium, named before a page is written
                with (
                    Renderer(katex, timeout_s=options.timeout_s, memory_mb=options.memory_mb,
                             katex_mathml_ok=options.keep_katex_math) as renderer,
                    progress_bar(len(to_render) + len(to_ask), progress) as advance,
                ):  # fmt: skip
                    for page, html in to_render:
                        records[page.key] = synthesize_page(renderer, out, options.name, page, html, page_settings(page, options))
                        advance()
                    for page, record in _ask_and_render(renderer, out, options, turns, to_ask, usage, result, advance):
                        records[page.key] = record
            kept = sorted((r for r in records.values() if r["ok"]), key=lambda r: r["key"])
            result.kept = [outcome_of(r) for r in kept]
            result.dropped += [outcome_of(r) for r in sorted(records.values(), key=lambda r: r["key"]) if not r["ok"]]
            write_bench(out, options.name, kept)
            result.tests_failing_reference = reference_failures(kept, out, options.name)
            result.tokens = {"prompt": usage.prompt, "completion": usage.completion, "requests": usage.requests}
            write_manifest(result, manifest_options or {})
    except BaseException:
        if created:
            _remove_if_unused(out)
        raise
    return result


def _remove_if_unused(out: Path) -> None:
    """OUT_BENCH as a run that could not start leaves it (its lock file, empty folders): removed,
    so that no folder is left behind; one holding anything else is kept."""
    from olmocr_rl.folder_lock import LOCK_NAME

    files = [p for p in out.rglob("*") if not p.is_dir()]
    if any(p.name != LOCK_NAME for p in files):
        return
    for p in files:
        p.unlink(missing_ok=True)
    for d in sorted((p for p in out.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
        d.rmdir()
    out.rmdir()


def _resume(out: Path, options: SynthOptions, pages: list[Page], result: SynthResult) -> tuple[dict[str, dict], list, list]:
    """Pages done by an earlier run (their records), pages to render (with their HTML) and pages
    to ask the model for (--from-pdf pages without HTML yet)."""
    records: dict[str, dict] = {}
    to_render, to_ask = [], []
    for page in pages:
        if page.pdf is not None and not page.html.is_file():
            to_ask.append(page)
            continue
        html, why = read_html(page)
        if html is None:
            result.dropped.append(Outcome(page.key, False, why, source=page.source))
            continue
        record = done_record(out, options.name, page, hashlib.sha1(html.encode("utf-8")).hexdigest(), page_settings(page, options))
        if record is not None:
            records[page.key] = record
        else:
            to_render.append((page, html))
    return records, to_render, to_ask


def _ask_and_render(renderer: Any, out: Path, options: SynthOptions, turns: Any, pages: list[Page], usage: Any,
                    result: SynthResult, advance: Callable[[], None]) -> Iterator[tuple[Page, dict]]:  # fmt: skip
    """--from-pdf: asks the model for each page's HTML (`concurrency` conversations at a time, in
    daemon threads, so a Ctrl-C never waits for an answer), saves it, renders the page here."""
    from olmocr_rl.synth.endpoint import ChatClient, EndpointError, page_html

    if not pages:
        return
    endpoint = options.endpoint
    calls = MainThreadCalls()
    jobs: queue.Queue = queue.Queue()
    answers: queue.Queue = queue.Queue()
    for page in pages:
        jobs.put(page)

    def work() -> None:
        client = ChatClient(endpoint, usage)
        while True:
            try:
                page = jobs.get_nowait()
            except queue.Empty:
                return
            if endpoint.budget is not None and usage.total() >= endpoint.budget:
                answers.put((page, None, f"not started: the token budget ({endpoint.budget}) is spent"))
                continue
            try:
                png, size = calls.run(original_png, page)
                html, why = page_html(client, turns, png, size, lambda h, a=page.assets, s=size: calls.run(rendered_png, renderer, h, a, s))
            except EndpointError as e:
                html, why = None, f"the endpoint failed: {e}"
            except Exception as e:  # noqa: BLE001 - re-raised in the main thread below
                html, why = e, ""
            answers.put((page, html, why))

    (out / ".synth" / "empty").mkdir(parents=True, exist_ok=True)
    for _ in range(min(endpoint.concurrency, len(pages))):
        threading.Thread(target=work, daemon=True, name="olmocr-rl synth endpoint").start()
    for _ in pages:
        while True:
            try:
                page, html, why = answers.get_nowait()
                break
            except queue.Empty:
                calls.serve(0.05)
        if isinstance(html, Exception):
            raise html
        if html is None:
            result.skipped.append({"source": page.source, "key": page.key, "reason": why, "asked": True})
            advance()
            continue
        page.html.parent.mkdir(parents=True, exist_ok=True)
        write_text(page.html, html)
        yield page, synthesize_page(renderer, out, options.name, page, html, page_settings(page, options))
        advance()
