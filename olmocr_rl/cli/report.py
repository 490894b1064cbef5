"""`olmocr-rl report`: a training run's output folder as one static HTML page."""

from pathlib import Path
from typing import Annotated, Optional

import typer

from olmocr_rl.cli import app, echo, example, fail

ABOUT = "A training run at a glance: its verdict, curves, completions per page and step, the config (one HTML file)."


@app.command("report", epilog=example("olmocr-rl report run"), help=ABOUT, short_help=ABOUT)
def report_command(
    run_dir: Annotated[Path, typer.Argument(help="The --output-dir of `olmocr-rl train`.", show_default=False)],
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="The HTML file (default: RUN_DIR/report.html).")] = None,
    max_completions: Annotated[
        int, typer.Option("--max-completions", min=0, help="Entries (a page at a step: its best and worst completion) shown, latest first.")
    ] = 40,
) -> int:
    from olmocr_rl.report import run_report

    try:
        path = run_report(run_dir, output, max_completions=max_completions, warn=lambda m: echo(f"warning: {m}", err=True))
    except OSError as e:  # no run folder, a report that cannot be written; the project's own errors end in cli.main
        fail(str(e))
    echo(f"report: {path}")
    return 0
