"""The `olmocr-rl` command line. Each command lives in its own module; heavy imports (torch,
trl) stay inside command bodies so `olmocr-rl --help` is instant."""

from __future__ import annotations

from typing import Annotated

import typer

app = typer.Typer(
    name="olmocr-rl",
    no_args_is_help=True,
    help="Train document-OCR models with GRPO on olmOCR-bench unit tests, scored in Rust.",
    pretty_exceptions_show_locals=False,
)


def _version(value: bool) -> None:
    if value:
        from olmocr_rl import __version__

        typer.echo(f"olmocr-rl {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit."),
    ] = False,
) -> None:
    """olmocr-rl: olmOCR-bench checks as a GRPO reward."""


from olmocr_rl.cli import check as _check  # noqa: E402,F401  (registers the command)
from olmocr_rl.cli import bench as _bench  # noqa: E402,F401
from olmocr_rl.cli import prepare as _prepare  # noqa: E402,F401
from olmocr_rl.cli import soup as _soup  # noqa: E402,F401
from olmocr_rl.cli import train as _train  # noqa: E402,F401
