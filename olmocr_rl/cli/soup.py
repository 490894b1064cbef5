"""`olmocr-rl soup`: average the weights of several checkpoints of one architecture."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from olmocr_rl.cli import app


@app.command()
def soup(
    checkpoints: Annotated[
        list[Path], typer.Argument(help="Two or more checkpoint folders (save_pretrained layout, safetensors).")
    ],
    output: Annotated[Path, typer.Option("--output", "-o", help="Folder to write the averaged model to.")],
    overwrite: Annotated[bool, typer.Option(help="Replace files in a non-empty --output folder.")] = False,
) -> None:
    """Average the weights of checkpoints of one model (a model soup).

    Architecture, tensor names and shapes must match; tensors are summed in float32 and cast
    back; config, tokenizer and processor files are copied from the first checkpoint."""
    from olmocr_rl.soup import SoupError
    from olmocr_rl.soup import soup as make_soup

    try:
        out = make_soup(checkpoints, output, overwrite=overwrite)
    except ImportError as e:
        typer.echo(f"error: soup needs the training extra: pip install 'olmocr-rl[train]' ({e})", err=True)
        raise typer.Exit(1) from None
    except SoupError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(1) from None
    typer.echo(f"averaged {len(checkpoints)} checkpoints into {out}")
