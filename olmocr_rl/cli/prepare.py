"""`olmocr-rl prepare`: a bench folder to a validated training dataset (see olmocr_rl/data.py)."""

from pathlib import Path
from types import SimpleNamespace as Namespace
from typing import Annotated, Optional

import typer

from olmocr_rl.cli import app, echo, fail

DESCRIPTION = """Validate a bench folder, render every tested page once and write a training dataset.

Broken tests and PDFs are reported (a table here, report.json in OUT_DIR) and skipped."""


@app.command("prepare", help=DESCRIPTION, short_help="Validate a bench folder, render every tested page once and write a training dataset.")
def prepare_command(
    bench_dir: Annotated[Path, typer.Argument(help="olmOCR-bench folder: top-level *.jsonl tests and pdfs/**.pdf.", show_default=False)],
    out_dir: Annotated[Path, typer.Argument(help="Where to write the prepared dataset (a re-run resumes).", show_default=False)],
    longest_side: Annotated[
        int, typer.Option("--longest-side", "--target-longest-image-dim", min=1, help="Longest side of rendered pages, px.")
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
    prompt_file: Annotated[
        Optional[Path], typer.Option("--prompt-file", help="UTF-8 file with the exact instruction your checkpoint was trained with.")
    ] = None,
    patch_size: Annotated[
        int, typer.Option("--patch-size", min=1, help="Pixels per image token side for the estimate (Qwen2.5-VL: 28).")
    ] = 28,
    strict: Annotated[bool, typer.Option("--strict", help="Exit with status 1 if any problem was found.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> int:
    return run(Namespace(**locals()))


def run(args: Namespace) -> int:
    from olmocr_rl.data import PrepareError, PrepareOptions, print_report
    from olmocr_rl.data import prepare as run_prepare
    from olmocr_rl.prompts import DEFAULT_PROMPT, read_prompt_file

    try:
        prompt = read_prompt_file(args.prompt_file) if args.prompt_file else DEFAULT_PROMPT
        options = PrepareOptions(
            longest_side=args.longest_side,
            jsonl_filter=args.jsonl_filter,
            type_filter=list(args.type_filter or []),
            max_pages=args.max_pages,
            eval_fraction=args.eval_fraction,
            eval_dir=str(args.eval_dir) if args.eval_dir else None,
            seed=args.seed,
            workers=args.workers,
            prompt=prompt,
            prompt_file=str(args.prompt_file) if args.prompt_file else None,
            patch_size=args.patch_size,
        )
        result = run_prepare(args.bench_dir, args.out_dir, options, progress=not args.quiet)
    except (PrepareError, ValueError) as e:
        fail(str(e))
    print_report(result)
    out_dir = args.out_dir
    echo(f"wrote {out_dir}: {len(result.train)} train + {len(result.eval)} eval pages, report in {out_dir / 'report.json'}")
    if not len(result.train) + len(result.eval):
        fail("no page could be prepared (see the report)")
    if args.strict and result.report.problems:
        fail(f"{result.report.problems} problem(s) found and --strict was given")
    return 0
