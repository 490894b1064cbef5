"""A training run's output folder, never silently reused: `olmocr-rl train -o DIR` into a folder that
holds a run (finished or not) refuses, naming the two ways on: `--resume auto` (continue it) and
`--overwrite` (delete it first), so two runs' metrics never mix in one logs/metrics.jsonl.

A folder holds a run when it has any of RUN_MARKS, what a run writes as it trains and after: a
checkpoint-N folder, logs/metrics.jsonl, runs/ (TensorBoard's), train_summary.json (written last),
outputs/ (the final transcriptions), completions/ or report.html (`olmocr-rl report`). A missing or empty folder, or
one with none of these, holds no run: training writes beside what is there. train_config.json
alone is no run: a run writes it before it trains (and a one-process rank is started with it). `clear_run` (--overwrite) deletes everything in a folder that holds a
run; `trim_metrics` (--resume) drops the rows logged (metrics, recorded completions) after the
checkpoint the run resumes from, which that run logs again.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

RUN_MARKS = ("checkpoint-*", "logs/metrics.jsonl", "runs", "train_summary.json", "outputs", "completions", "report.html")
METRICS = Path("logs") / "metrics.jsonl"


def run_marks(folder: str | os.PathLike[str]) -> list[str]:
    """What in `folder` shows a run (RUN_MARKS; checkpoints counted), [] when it holds none."""
    root = Path(folder)
    if not root.is_dir():
        return []
    found = []
    for mark in RUN_MARKS:
        if "*" in mark:
            n = sum(1 for p in root.glob(mark) if p.is_dir())
            if n:
                found.append(f"{n} checkpoint{'s' if n > 1 else ''}")
        elif (root / mark).exists():
            found.append(mark)
    return found


def reuse_problem(folder: str | os.PathLike[str], *, resume: str | None, overwrite: bool) -> tuple[str, str] | None:
    """Why `train` may not write into `folder` as asked, and the fix (None: it may): a run is there
    and neither --resume (with a checkpoint to resume from) nor --overwrite was given."""
    marks = run_marks(folder)
    if not marks or overwrite:
        return None
    held = f"{folder} holds a run ({', '.join(marks)})"
    if resume is None:
        return held, "continue it with --resume auto, or delete it and start again with --overwrite"
    if resume == "auto" and not any(p.is_dir() for p in Path(folder).glob("checkpoint-*")):
        return f"{held} but no checkpoint to resume from", "start again with --overwrite (deletes it), or give another --output-dir"
    return None


def clear_run(folder: str | os.PathLike[str], keep: tuple[str, ...] = ()) -> bool:
    """Deletes everything in `folder` (but the names in `keep`) when it holds a run; True if it did."""
    root = Path(folder)
    if not run_marks(root):
        return False
    for entry in root.iterdir():
        if entry.name in keep:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    return True


def trim_metrics(folder: str | os.PathLike[str], checkpoint: str | os.PathLike[str]) -> int:
    """Drops the rows of folder/logs/metrics.jsonl and of the recorded completions
    (completions/failing_*.jsonl) logged after `checkpoint` (checkpoint-N: step > N), which the
    resumed run logs again; returns how many were dropped. A row that is not JSON is kept."""
    import json

    from olmocr_rl.atomic import write_text

    root, name = Path(folder), Path(checkpoint).name
    if not name.startswith("checkpoint-") or not name.removeprefix("checkpoint-").isdigit():
        return 0
    step, dropped = int(name.removeprefix("checkpoint-")), 0
    for path in [root / METRICS, *sorted((root / "completions").glob("failing_*.jsonl"))]:
        if not path.is_file():
            continue
        kept, lines = [], path.read_text(encoding="utf-8").splitlines(keepends=True)
        for line in lines:
            try:
                row_step = json.loads(line).get("step")
            except (ValueError, AttributeError):
                row_step = None
            if isinstance(row_step, int) and row_step > step:
                dropped += 1
            else:
                kept.append(line)
        if len(kept) < len(lines):
            write_text(path, "".join(kept))
    return dropped
