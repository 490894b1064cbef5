"""The selection: the train pages whose sampled rewards the keep rule keeps (olmocr_rl/keep_rule.py),
with the counts and the generation they save, written as a prepared split `train` reads."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from olmocr_rl.atomic import atomic_write
from olmocr_rl.curate.records import DIFFICULTY, CurateError
from olmocr_rl.curate.sampling import SOURCE_SPLITS, Page
from olmocr_rl.keep_rule import KeepRule
from olmocr_rl.prepared import PreparedError, numbered_rows


@dataclass
class Selection:
    kept: list[dict]  # prepared rows, each with its "difficulty"
    dropped: list[dict]  # the records of the pages left out
    counts: dict[str, int]  # all_pass, all_fail, uniform (same reward otherwise), disagree
    saved_pages: float  # share of the pages dropped (= of the completion budget per epoch)
    saved_tokens: float | None  # share of the sampled completion tokens on the dropped pages


def select(pages: Sequence[Page], records: dict[tuple[str, str, int], dict], rule: KeepRule = KeepRule(), *, top: float = 1.0) -> Selection:
    """The train pages the rule keeps (by default those whose samples disagree); every train page
    must have a record. `top` is the highest reward a sample can earn (the sum of the bench
    rewards' weights), to tell "all pass" from "all the same"."""
    train = [p for p in pages if p.split == "train"]
    missing = [p for p in train if p.id not in records]
    if missing:
        raise CurateError(f"{len(missing)} train page(s) have no difficulty yet (first: {missing[0].where}); run curate again")
    counts = {"all_pass": 0, "all_fail": 0, "uniform": 0, "disagree": 0}
    kept, dropped = [], []
    for p in train:
        rec = records[p.id]
        if rec["std"] > 0:
            counts["disagree"] += 1
        elif rec["min"] >= top:
            counts["all_pass"] += 1
        elif rec["max"] <= 0:
            counts["all_fail"] += 1
        else:
            counts["uniform"] += 1
        if rule.keeps_stats(rec):
            stats = {k: rec[k] for k in ("samples", "mean", "std", "min", "max")}
            kept.append({**p.row, "difficulty": stats})
        else:
            dropped.append(rec)
    saved_pages = len(dropped) / len(train) if train else 0.0
    saved_tokens = None
    all_recs = [records[p.id] for p in train]
    if all_recs and all(isinstance(r.get("tokens"), list) and r["tokens"] for r in all_recs):

        def mean_tokens(r: dict) -> float:
            return sum(r["tokens"]) / len(r["tokens"])

        total = sum(mean_tokens(r) for r in all_recs)
        saved_tokens = sum(mean_tokens(r) for r in dropped) / total if total else 0.0
    return Selection(kept, dropped, counts, saved_pages, saved_tokens)


def write_split(prepared_dir: str | os.PathLike[str], name: str, rows: Sequence[dict]) -> Path:
    """PREPARED/<name>.jsonl, through a temporary file renamed over it. Refuses the splits prepare
    wrote and any file curate did not write."""
    if not name or not all(c.isalnum() or c in "-_." for c in name) or name.startswith("."):
        raise CurateError(f"--name {name!r}: give a split name of letters, digits, '-', '_' or '.'")
    if name in SOURCE_SPLITS or name == Path(DIFFICULTY).stem:
        raise CurateError(f"--name {name!r}: that name is taken by prepare's split or the difficulty file; choose another")
    path = Path(prepared_dir) / f"{name}.jsonl"
    try:  # the file there read as every split is (olmocr_rl/prepared.py)
        first = numbered_rows(prepared_dir, name)[:1]
    except PreparedError as e:
        raise CurateError(f"{e}: not a selection `olmocr-rl curate` wrote; choose another --name") from None
    if first and "difficulty" not in first[0][1]:
        raise CurateError(f"{path}:{first[0][0]}: not a selection `olmocr-rl curate` wrote; choose another --name")
    with atomic_write(path, "w", durable=True) as f:
        f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    return path
