"""The prepared folder as a run reads it: once per process (`load_inputs`: the manifest, the rows of
the train and eval splits, the tests; pre-flight checks what was read, the trainer trains on it),
and a split's rows as the dataset trl's GRPOTrainer takes (`build_dataset`: one row per page, the
page image loaded lazily on access, the page's reference output, if any, as `claude_original`).
The folder itself is read by olmocr_rl/prepared.py."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from olmocr_rl.prepared import PreparedError, read_manifest, read_split, tests_dir
from olmocr_rl.prompts import IMAGE_FIRST, Prompt, conversation


@dataclass
class Inputs:
    """What a run reads of its prepared folder, read once per process."""

    prepared: Path
    manifest: dict | None = None  # None: not a prepared folder (`problems["manifest"]` says why)
    train_rows: list[dict] = field(default_factory=list)
    eval_rows: list[dict] = field(default_factory=list)  # [] when evaluation is off
    test_files: int = 0  # tests/*.jsonl
    suite: Any = None  # the tests as a BenchSuite, loaded when a reward scores them
    problems: dict[str, str] = field(default_factory=dict)  # "manifest" | "splits" | "tests" -> why it could not be read


def load_inputs(prepared_dir: str | os.PathLike[str], train_split: str, eval_split: str | None, *, load_tests: bool) -> Inputs:
    """Reads the prepared folder's manifest, the two splits (`eval_split` None: evaluation off) and,
    with `load_tests`, its tests; what cannot be read is recorded, not raised."""
    from olmocr_rl.suite import BenchSuite, SuiteError

    inputs = Inputs(Path(prepared_dir))
    try:
        inputs.manifest = read_manifest(prepared_dir)
    except PreparedError as e:
        inputs.problems["manifest"] = str(e)
        return inputs
    try:
        inputs.train_rows = read_split(prepared_dir, train_split)
        inputs.eval_rows = read_split(prepared_dir, eval_split) if eval_split is not None else []
    except PreparedError as e:
        inputs.problems["splits"] = str(e)
    inputs.test_files = len(list(tests_dir(prepared_dir).glob("*.jsonl")))
    if load_tests and inputs.test_files:
        try:
            inputs.suite = BenchSuite.load(tests_dir(prepared_dir))
        except (SuiteError, OSError) as e:
            inputs.problems["tests"] = f"{tests_dir(prepared_dir)}: the tests do not load ({e})"
    return inputs


def build_dataset(prepared_dir: str | os.PathLike[str], rows: list[dict], prompt: Prompt | None = None) -> Any:
    """A `datasets.Dataset` of the rows whose `image` column is a PIL image loaded on access
    (trl >= 1.11 takes only `datasets` datasets). `prompt`: instead of the rows' own instruction."""
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
