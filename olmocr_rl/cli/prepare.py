"""`olmocr-rl prepare`: a bench folder to a validated training dataset (see olmocr_rl/prepare.py)."""

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from olmocr_rl.cli import OneNamePerOption, QuietOption, app, echo, example, fail

if TYPE_CHECKING:
    from olmocr_rl.prepare import PrepareResult

DESCRIPTION = """Validate a bench folder, render every tested page once and write a training dataset.

Broken tests and PDFs are reported (a table here, report.json in OUT_DIR) and skipped."""


@app.command(
    "prepare",
    cls=OneNamePerOption,
    epilog=example("olmocr-rl prepare olmOCR-bench/bench_data prepared --eval-fraction 0.05"),
    help=DESCRIPTION,
    short_help="Validate a bench folder, render every tested page once and write a training dataset.",
)
def prepare_command(
    bench_dir: Annotated[Path, typer.Argument(help="olmOCR-bench folder: top-level *.jsonl tests and pdfs/**.pdf.", show_default=False)],
    out_dir: Annotated[Path, typer.Argument(help="Where to write the prepared dataset (a re-run resumes).", show_default=False)],
    longest_side: Annotated[
        int,
        typer.Option(
            "--longest-side",
            "--target-longest-image-dim",
            min=1,
            help="Longest side of rendered pages, px (olmOCR's target_longest_image_dim).",
        ),
    ] = 1288,
    jsonl_filter: Annotated[
        Optional[str], typer.Option("--jsonl-filter", help="Only JSONL files whose name matches this regex (case-insensitive search).")
    ] = None,
    type_filter: Annotated[Optional[list[str]], typer.Option("--type-filter", help="Only tests of this type (repeatable).")] = None,
    max_pages: Annotated[
        Optional[int], typer.Option("--max-pages", min=1, help="At most this many pages, first in (pdf, page) order.")
    ] = None,
    eval_fraction: Annotated[float, typer.Option("--eval-fraction", help="Hold out this fraction of the PDFs as the eval split.")] = 0.0,
    eval_dir: Annotated[Optional[Path], typer.Option("--eval-dir", help="A separate bench folder to prepare as the eval split.")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the --eval-fraction split.")] = 0,
    workers: Annotated[Optional[int], typer.Option("--workers", min=1, help="Render processes (default: one per CPU).")] = None,
    prompt: Annotated[
        Optional[str],
        typer.Option(
            "--prompt", help="The instruction by name: olmocr-rl (ours, the default) or olmocr-v4 (olmOCR 2's, text before image)."
        ),
    ] = None,
    prompt_file: Annotated[
        Optional[Path], typer.Option("--prompt-file", help="UTF-8 file with the exact instruction your checkpoint was trained with.")
    ] = None,
    processor: Annotated[
        Optional[str],
        typer.Option(
            "--processor",
            help="Report the image tokens this model's processor makes of the pages (a model folder or hub id; default: "
            "Qwen2.5-VL's). Only a report: train, curate and generate compute them for their own model and max_pixels.",
        ),
    ] = None,
    patch_size: Annotated[
        Optional[int],
        typer.Option("--patch-size", min=1, help="Deprecated (use --processor): pixels per image token side for the report's estimate."),
    ] = None,
    strict: Annotated[bool, typer.Option("--strict", help="Exit with status 1 if any problem was found.")] = False,
    quiet: QuietOption = False,
) -> int:
    from olmocr_rl.prepare import PrepareOptions
    from olmocr_rl.prepare import prepare as run_prepare
    from olmocr_rl.prompts import resolve_prompt

    if prompt and prompt_file:
        fail("give --prompt or --prompt-file, not both")
    chosen = resolve_prompt(prompt, prompt_file)
    if patch_size is not None:
        echo("warning: --patch-size is deprecated: the prepared rows keep each page's size, and train, curate and generate "
             "compute its image tokens for their model's own processor and max_pixels; --processor MODEL reports them for a model",
             err=True)  # fmt: skip
    options = PrepareOptions(
        longest_side=longest_side,
        jsonl_filter=jsonl_filter,
        type_filter=list(type_filter or []),
        max_pages=max_pages,
        eval_fraction=eval_fraction,
        eval_dir=str(eval_dir) if eval_dir else None,
        seed=seed,
        workers=workers,
        prompt=chosen.text,
        prompt_file=str(prompt_file) if prompt_file else None,
        prompt_name=chosen.name,
        prompt_layout=chosen.layout,
        processor=processor,
        patch_size=patch_size,
    )
    from olmocr_rl.procs import Interrupted, interrupts

    try:
        with interrupts():  # SIGTERM and SIGHUP as Ctrl-C: what was kept is said either way
            result = run_prepare(bench_dir, out_dir, options, progress=not quiet)
    except (KeyboardInterrupt, Interrupted) as e:
        from olmocr_rl.prepare import interrupted_message

        fail(interrupted_message(out_dir, str(e) or "SIGINT"), 130)
    print_report(result)
    echo(f"wrote {out_dir}: {len(result.train)} train + {len(result.eval)} eval pages, report in {out_dir / 'report.json'}")
    if not len(result.train) + len(result.eval):
        fail("no page could be prepared (see the report)")
    if strict and result.report.problems:
        fail(f"{result.report.problems} problem(s) found and --strict was given")
    return 0


def print_report(result: "PrepareResult", console: Any = None) -> None:
    """The validation report as tables (olmocr_rl/tables.py): a summary, then one line per problem."""
    from rich.console import Console

    import olmocr_rl.tables as tables
    from olmocr_rl.paths import for_rich

    console = console or Console()
    r = result.report
    s = r.summary
    pages = s["pages_train"] + s["pages_eval"]
    references = f"{s['pages_with_reference']} of {pages} pages"
    if s["references_not_used"]:
        references += (f"; {s['references_not_used']} claude_original/ file(s) not used (a page's is "
                       "<name>_page<N>_pg1_repeat1.md beside its PDF's folder, as olmOCR's trainer looks for it)")  # fmt: skip
    rows: list[tuple[str, object]] = [
        ("JSONL files", len(s["jsonl_files"])),
        ("valid tests", s["tests_valid"]),
        ("tests used", s["tests_used"]),
        ("train pages (PDFs)", f"{s['pages_train']} ({s['pdfs_train']})"),
        ("eval pages (PDFs)", f"{s['pages_eval']} ({s['pdfs_eval']})"),
        ("rendered now / reused", f"{result.rendered} / {pages - result.rendered}"),
        (
            f"image tokens ({r.image_tokens['patch_size'] * r.image_tokens['merge_size']} px a token, estimate for "
            f"{r.image_tokens['estimate_for']}) min/mean/max",
            f"{r.image_tokens['min']} / {r.image_tokens['mean']} / {r.image_tokens['max']}",
        ),
        ("reference outputs", references),
        ("PDFs without tests", len(r.pdfs_without_tests)),
        ("problems", r.problems),
    ]
    if s["tests_excluded_by_type"]:
        excluded = ", ".join(f"{k} {v}" for k, v in s["tests_excluded_by_type"].items())
        rows.append(("excluded by --type-filter", f"tests: {excluded}; pages left without tests: {s['pages_excluded_by_type']}"))
    if s["jsonl_files_excluded"]:
        rows.append(("excluded by --jsonl-filter", ", ".join(s["jsonl_files_excluded"])))
    tables.show(console, tables.facts(rows), "olmocr-rl prepare")
    if not r.problems:
        return
    table = tables.table()
    tables.name_column(table, "kind")
    tables.name_column(table, "where")
    tables.text_column(table, "detail")

    def add(*cells: str) -> None:
        table.add_row(*(for_rich(c) for c in cells))

    def short(path: str) -> str:  # a JSONL path relative to its bench folder
        for base, tag in ((r.bench_dir, ""), (r.eval_bench_dir, "eval: ")):
            if base and path.startswith(base + os.sep):
                return tag + path[len(base) + 1 :]
        return path

    for e in r.rejected_tests:
        add("invalid test", f"{short(e['file'])}:{e['line']}", (f"{e['id']}: " if e["id"] else "") + e["reason"])
    for e in r.duplicate_ids:
        add("duplicate id", f"{short(e['file'])}:{e['line']}", f"{e['id']}: {e['reason']}")
    for e in r.missing_pdfs:
        add("missing PDF", e["pdf"], f"{e['reason']}; {_tests(e['tests'])}")
    for e in r.unreadable_pdfs:
        add("unreadable PDF", e["pdf"], f"{e['error']}; {_tests(e['tests'])}")
    for e in r.pages_out_of_range:
        add("bad page", f"{e['pdf']} page {e['page']}", f"{e['reason']}; {_tests(e['tests'])}")
    for e in r.render_failures:
        add("render failed", f"{e['pdf']} page {e['page']}", f"{e['error']}; {_tests(e['tests'])}")
    for e in r.pages_without_tests:
        add("no tests", e["pdf"], "page(s) " + ", ".join(map(str, e["pages"])))
    for e in r.environment:
        add("environment", "math tests", e["reason"])
    tables.show(console, table, "problems (skipped)")


def _tests(ids: Sequence[str]) -> str:
    shown = ", ".join(ids[:3]) + (f" and {len(ids) - 3} more" if len(ids) > 3 else "")
    return f"{len(ids)} test(s): {shown}"
