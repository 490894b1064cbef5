"""`olmocr-rl soup`: average the weights of several checkpoints of one architecture."""

from pathlib import Path
from typing import Annotated

import typer

from olmocr_rl.cli import app, echo, example, fail

DESCRIPTION = """Average the weights of checkpoints of one model (a model soup).

Architecture, tensor names and shapes must match; tensors are summed in float32 and cast back;
config, tokenizer and processor files are copied from the first checkpoint."""


@app.command(
    "soup",
    epilog=example("olmocr-rl soup run/checkpoint-100 run/checkpoint-200 --output soup"),
    help=DESCRIPTION,
    short_help="Average the weights of checkpoints of one model (a model soup).",
)
def soup_command(
    checkpoints: Annotated[
        list[Path], typer.Argument(help="Two or more checkpoint folders (save_pretrained layout, safetensors).", show_default=False)
    ],
    output: Annotated[Path, typer.Option("--output", "-o", help="Folder to write the averaged model to.", show_default=False)],
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace files in a non-empty --output folder.")] = False,
) -> int:
    from olmocr_rl.model_ref import missing_part
    from olmocr_rl.soup import soup as make_soup

    for ckpt in checkpoints:  # a mistyped folder named with the close names beside it, before anything is read
        if not ckpt.exists():
            fail(f"{ckpt}: no such checkpoint folder ({missing_part(ckpt)})")
    try:
        out = make_soup(checkpoints, output, overwrite=overwrite)
    except ImportError as e:
        fail(f"soup needs the training extra: pip install 'olmocr-rl[train]' ({e})")
    echo(f"averaged {len(checkpoints)} checkpoints into {out}")
    return 0
