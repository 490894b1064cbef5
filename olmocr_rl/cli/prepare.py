"""`olmocr-rl prepare`: a bench folder to a validated training dataset (see olmocr_rl/data.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

from olmocr_rl.cli import echo, fail, positive_int

DESCRIPTION = """Validate a bench folder, render every tested page once and write a training dataset.

Broken tests and PDFs are reported (a table here, report.json in OUT_DIR) and skipped."""


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("prepare", help="Validate a bench folder, render every tested page once and write a training dataset.",
                       description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("bench_dir", type=Path, help="olmOCR-bench folder: top-level *.jsonl tests and pdfs/**.pdf.")
    p.add_argument("out_dir", type=Path, help="Where to write the prepared dataset (a re-run resumes).")
    p.add_argument("--longest-side", "--target-longest-image-dim", type=positive_int, default=1288, help="Longest side of rendered pages, px (default: 1288).")
    p.add_argument("--jsonl-filter", help="Only JSONL files whose name matches this regex (case-insensitive search).")
    p.add_argument("--type-filter", action="append", help="Only tests of this type (repeatable).")
    p.add_argument("--max-pages", type=positive_int, help="At most this many pages, first in (pdf, page) order.")
    p.add_argument("--eval-fraction", type=float, default=0.0, help="Hold out this fraction of the PDFs as the eval split.")
    p.add_argument("--eval-dir", type=Path, help="A separate bench folder to prepare as the eval split.")
    p.add_argument("--seed", type=int, default=0, help="Seed of the --eval-fraction split.")
    p.add_argument("--workers", type=positive_int, help="Render processes (default: one per CPU).")
    p.add_argument("--prompt-file", type=Path, help="UTF-8 file with the exact instruction your checkpoint was trained with.")
    p.add_argument("--patch-size", type=positive_int, default=28, help="Pixels per image token side for the estimate (Qwen2.5-VL: 28).")
    p.add_argument("--strict", action="store_true", help="Exit with status 1 if any problem was found.")
    p.add_argument("--quiet", "-q", action="store_true", help="No progress bar.")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
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
