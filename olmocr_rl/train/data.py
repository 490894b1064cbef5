"""A prepared folder's split as the dataset trl's GRPOTrainer takes: one row per page, the page
image loaded lazily on access, the page's reference output (if any) as `claude_original`. The
folder is read by `olmocr_rl.prepared` (its errors become ConfigError here)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from olmocr_rl.prepared import tests_dir  # noqa: F401  (re-exported for the trainer)
from olmocr_rl.prompts import IMAGE_FIRST, Prompt, conversation
from olmocr_rl.train.config import ConfigError


def read_manifest(prepared_dir: str | os.PathLike[str]) -> dict:
    """`olmocr_rl.prepared.read_manifest`, its errors as ConfigError (the trainer's one error)."""
    from olmocr_rl.prepared import PreparedError
    from olmocr_rl.prepared import read_manifest as read

    try:
        return read(prepared_dir)
    except PreparedError as e:
        raise ConfigError(str(e)) from None


def read_split(prepared_dir: str | os.PathLike[str], split: str) -> list[dict]:
    """`olmocr_rl.prepared.read_split`, its errors as ConfigError."""
    from olmocr_rl.prepared import PreparedError
    from olmocr_rl.prepared import read_split as read

    try:
        return read(prepared_dir, split)
    except PreparedError as e:
        raise ConfigError(str(e)) from None


def build_dataset(prepared_dir: str | os.PathLike[str], rows: list[dict], prompt: Prompt | None = None) -> Any:
    """A `datasets.Dataset` of the rows whose `image` column is a PIL image loaded on access
    (trl >= 1.10 takes only `datasets` datasets). `prompt`: instead of the rows' own instruction."""
    from datasets import Dataset

    root = Path(prepared_dir).resolve()
    meta = [
        {
            "prompt_text": prompt.text if prompt else str(r["prompt"]),
            "prompt_layout": prompt.layout if prompt else str(r.get("prompt_layout", IMAGE_FIRST)),
            "image_path": str(root / r["image"]),
            "pdf": str(r["pdf"]),
            "page": int(r["page"]),
            "jsonl_file": str(r.get("jsonl_file", "")),
            "test_ids": [str(t) for t in r["test_ids"]],
            # The page's reference output (olmOCR's name for the column), where prepare found one.
            "claude_original": (root / r["reference"]).read_text(encoding="utf-8") if r.get("reference") else None,
        }
        for r in rows
    ]
    return Dataset.from_list(meta).with_transform(_materialize)


def _materialize(batch: dict[str, list]) -> dict[str, list]:
    from PIL import Image

    images = []
    for p in batch["image_path"]:
        with Image.open(p) as im:
            images.append(im.convert("RGB"))
    return {
        "prompt": [conversation(t, layout) for t, layout in zip(batch["prompt_text"], batch["prompt_layout"])],
        "image": images,
        "pdf": batch["pdf"],
        "page": batch["page"],
        "jsonl_file": batch["jsonl_file"],
        "test_ids": batch["test_ids"],
        "claude_original": batch["claude_original"],
    }
