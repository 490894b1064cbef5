"""The prepared folder `olmocr-rl prepare` writes, read in one place (`prepare`'s tests, `train`,
`generate` and the reports all use these):

    prepared.json         format, version, bench folder, image size, prompt, split sizes, options
    <split>.jsonl         one row per (pdf, page): pdf, page, image, width, height, prompt,
                          jsonl_file, test_ids, image_tokens[, reference]
    tests/*.jsonl         the accepted test records
    images/, references/  the rendered pages and the pages' reference outputs

A folder without a valid prepared.json is not prepared (prepare writes it last); a split without
a file has no rows.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from olmocr_rl.errors import UserError
from olmocr_rl.paths import inside

FORMAT = "olmocr-rl-prepared"
VERSION = 1
ROW_KEYS = ("pdf", "page", "image", "prompt", "test_ids")


class PreparedError(UserError, ValueError):
    """The folder is not a (finished, readable) prepared folder; the message names the file."""


def read_manifest(prepared_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """prepared.json of a finished `prepare` run."""
    import orjson

    root = Path(prepared_dir)
    path = root / "prepared.json"
    try:
        manifest = orjson.loads(path.read_bytes())
    except FileNotFoundError:
        raise PreparedError(
            f"{root}: no prepared.json (not a prepared folder, or its prepare did not finish); {prepare_fix(root)}"
        ) from None
    except orjson.JSONDecodeError as e:
        raise PreparedError(f"{path}: invalid JSON ({e})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise PreparedError(f"{path}: not an olmocr-rl prepared folder (format must be {FORMAT!r})")
    if manifest.get("version") != VERSION:
        raise PreparedError(
            f"{path}: prepared format version {manifest.get('version')!r} is not supported (expected {VERSION}); re-run prepare"
        )
    return manifest


def prepare_fix(folder: str | os.PathLike[str]) -> str:
    """How to make a prepared folder of `folder`, which is not one: an olmOCR-bench folder (*.jsonl
    tests beside pdfs/) is prepared into a new folder beside it; any other is the one to prepare into."""
    import shlex

    root = Path(folder)
    if (root / "pdfs").is_dir() and any(root.glob("*.jsonl")):
        new = root.parent / f"{root.name}-prepared"
        return (f"it is a bench folder: prepare it with `olmocr-rl prepare {shlex.quote(str(root))} {shlex.quote(str(new))}`, "
                f"then give {new} in its place")  # fmt: skip
    return f"make it with `olmocr-rl prepare BENCH_DIR {shlex.quote(str(root))}` (or run that again if it did not finish)"


def read_split(prepared_dir: str | os.PathLike[str], split: str) -> list[dict[str, Any]]:
    """The rows of one split of a prepared folder (images stay on disk: each row's "image" is
    relative to the folder, and must stay inside it, as must its "reference"); [] when the split
    has no file."""
    return [row for _, row in numbered_rows(prepared_dir, split)]


def numbered_rows(prepared_dir: str | os.PathLike[str], split: str) -> list[tuple[int, dict[str, Any]]]:
    """`read_split`'s rows with their line numbers in the split's file. The file is split at "\n"
    only: a raw U+2028, U+2029 or U+0085 inside a JSON string is text, not a line end."""
    import orjson

    read_manifest(prepared_dir)
    path = Path(prepared_dir) / f"{split}.jsonl"
    if not path.is_file():
        return []
    rows = []
    with path.open("rb") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = orjson.loads(line)
            except orjson.JSONDecodeError as e:
                raise PreparedError(f"{path}:{n}: invalid JSON ({e})") from None
            missing = [k for k in ROW_KEYS if not isinstance(row, dict) or k not in row]
            if missing:
                raise PreparedError(f"{path}:{n}: missing {', '.join(missing)}; re-run prepare")
            for key in ("image", "reference"):  # paths in the folder: never a way out of it
                if key in row and row[key] is not None and inside(prepared_dir, row[key]) is None:
                    raise PreparedError(f"{path}:{n}: {key} {row[key]!r} is outside {prepared_dir} (its paths stay inside it)")
            rows.append((n, row))
    return rows


def tests_dir(prepared_dir: str | os.PathLike[str]) -> Path:
    return Path(prepared_dir) / "tests"
