"""`olmocr-rl prepare`: a bench folder to a validated training dataset (see olmocr_rl/data.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from olmocr_rl.cli import app


@app.command()
def prepare(
    bench_dir: Annotated[Path, typer.Argument(help="olmOCR-bench folder: top-level *.jsonl tests and pdfs/**.pdf.")],
    out_dir: Annotated[Path, typer.Argument(help="Where to write the prepared dataset (a re-run resumes).")],
    longest_side: Annotated[int, typer.Option("--longest-side", "--target-longest-image-dim", help="Longest side of rendered pages, px.")] = 1288,
    jsonl_filter: Annotated[
        Optional[str], typer.Option(help="Only JSONL files whose name matches this regex (case-insensitive search).")
    ] = None,
    type_filter: Annotated[
        Optional[list[str]], typer.Option("--type-filter", help="Only tests of this type (repeatable).")
    ] = None,
    max_pages: Annotated[Optional[int], typer.Option(help="At most this many pages, first in (pdf, page) order.")] = None,
    eval_fraction: Annotated[float, typer.Option(help="Hold out this fraction of the PDFs as the eval split.")] = 0.0,
    eval_dir: Annotated[
        Optional[Path], typer.Option(help="A separate bench folder to prepare as the eval split.")
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the --eval-fraction split.")] = 0,
    workers: Annotated[Optional[int], typer.Option(help="Render processes (default: one per CPU).")] = None,
    prompt_file: Annotated[
        Optional[Path], typer.Option(help="UTF-8 file with the exact instruction your checkpoint was trained with.")
    ] = None,
    patch_size: Annotated[int, typer.Option(help="Pixels per image token side for the estimate (Qwen2.5-VL: 28).")] = 28,
    strict: Annotated[bool, typer.Option(help="Exit with status 1 if any problem was found.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
) -> None:
    """Validate a bench folder, render every tested page once and write a training dataset.

    Broken tests and PDFs are reported (a table here, report.json in OUT_DIR) and skipped."""
    from olmocr_rl.data import PrepareError, PrepareOptions, print_report
    from olmocr_rl.data import prepare as run_prepare
    from olmocr_rl.prompts import DEFAULT_PROMPT, read_prompt_file

    try:
        prompt = read_prompt_file(prompt_file) if prompt_file else DEFAULT_PROMPT
        options = PrepareOptions(
            longest_side=longest_side,
            jsonl_filter=jsonl_filter,
            type_filter=list(type_filter or []),
            max_pages=max_pages,
            eval_fraction=eval_fraction,
            eval_dir=str(eval_dir) if eval_dir else None,
            seed=seed,
            workers=workers,
            prompt=prompt,
            prompt_file=str(prompt_file) if prompt_file else None,
            patch_size=patch_size,
        )
        result = run_prepare(bench_dir, out_dir, options, progress=not quiet)
    except (PrepareError, ValueError) as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(1) from None
    print_report(result)
    rows = len(result.train) + len(result.eval)
    typer.echo(f"wrote {out_dir}: {len(result.train)} train + {len(result.eval)} eval pages, report in {out_dir / 'report.json'}")
    if not rows:
        typer.echo("error: no page could be prepared (see the report)", err=True)
        raise typer.Exit(1)
    if strict and result.report.problems:
        typer.echo(f"error: {result.report.problems} problem(s) found and --strict was given", err=True)
        raise typer.Exit(1)
