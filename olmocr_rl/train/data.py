"""Reading a prepared folder (`olmocr-rl prepare`) and turning a split into the dataset trl's
GRPOTrainer takes: one row per page, the page image loaded lazily on access.

The folder: `prepared.json` {"format": "olmocr-rl-prepared", "version": 1, "bench_dir",
"target_longest_image_dim", "prompt", "splits", "options"}, `<split>.jsonl` (one row per
(pdf, page): pdf, page, image (PNG relative to the folder), width, height, prompt, jsonl_file,
test_ids, image_tokens; reference: the page's reference output under references/, where the
bench folder has one in claude_original/) and `tests/*.jsonl` (the accepted tests).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from olmocr_rl.train.config import ConfigError

FORMAT = "olmocr-rl-prepared"
ROW_KEYS = ("pdf", "page", "image", "prompt", "test_ids")


def read_manifest(prepared_dir: str | os.PathLike[str]) -> dict:
    root = Path(prepared_dir)
    path = root / "prepared.json"
    if not path.is_file():
        raise ConfigError(f"{root}: no prepared.json (make this folder with `olmocr-rl prepare BENCH_DIR {root}`)")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise ConfigError(f"{path}: invalid JSON ({e})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ConfigError(f"{path}: not an olmocr-rl prepared folder (format must be {FORMAT!r})")
    if manifest.get("version") != 1:
        raise ConfigError(f"{path}: prepared format version {manifest.get('version')!r} is not supported (expected 1); re-run prepare")
    return manifest


def read_split(prepared_dir: str | os.PathLike[str], split: str) -> list[dict]:
    """The rows of one split; [] when the split file does not exist."""
    path = Path(prepared_dir) / f"{split}.jsonl"
    if not path.is_file():
        return []
    rows = []
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise ConfigError(f"{path}:{n}: invalid JSON ({e})") from None
            missing = [k for k in ROW_KEYS if k not in row]
            if missing:
                raise ConfigError(f"{path}:{n}: missing {', '.join(missing)}; re-run prepare")
            rows.append(row)
    return rows


def tests_dir(prepared_dir: str | os.PathLike[str]) -> Path:
    return Path(prepared_dir) / "tests"


def conversation(prompt_text: str) -> list[dict]:
    """The conversational prompt trl needs for images: one user turn, the page image then the
    instruction."""
    return [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": prompt_text}]}]


def build_dataset(prepared_dir: str | os.PathLike[str], rows: list[dict]) -> Any:
    """A `datasets.Dataset` of the rows whose `image` column is a PIL image loaded on access
    (trl >= 1.10 takes only `datasets` datasets)."""
    from datasets import Dataset

    root = Path(prepared_dir).resolve()
    meta = [
        {
            "prompt_text": str(r["prompt"]),
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
        "prompt": [conversation(t) for t in batch["prompt_text"]],
        "image": images,
        "pdf": batch["pdf"],
        "page": batch["page"],
        "jsonl_file": batch["jsonl_file"],
        "test_ids": batch["test_ids"],
        "claude_original": batch["claude_original"],
    }
