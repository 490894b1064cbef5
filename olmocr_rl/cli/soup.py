"""`olmocr-rl soup`: average the weights of several checkpoints of one architecture."""

from __future__ import annotations

import argparse
from pathlib import Path

from olmocr_rl.cli import echo, fail

DESCRIPTION = """Average the weights of checkpoints of one model (a model soup).

Architecture, tensor names and shapes must match; tensors are summed in float32 and cast back;
config, tokenizer and processor files are copied from the first checkpoint."""


def add(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("soup", help="Average the weights of checkpoints of one model (a model soup).",
                       description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("checkpoints", type=Path, nargs="+", help="Two or more checkpoint folders (save_pretrained layout, safetensors).")
    p.add_argument("--output", "-o", type=Path, required=True, help="Folder to write the averaged model to.")
    p.add_argument("--overwrite", action="store_true", help="Replace files in a non-empty --output folder.")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from olmocr_rl.soup import SoupError
    from olmocr_rl.soup import soup as make_soup

    try:
        out = make_soup(args.checkpoints, args.output, overwrite=args.overwrite)
    except ImportError as e:
        fail(f"soup needs the training extra: pip install 'olmocr-rl[train]' ({e})")
    except SoupError as e:
        fail(str(e))
    echo(f"averaged {len(args.checkpoints)} checkpoints into {out}")
    return 0
