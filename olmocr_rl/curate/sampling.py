"""Sampling and scoring the pages (`curate`): every page of the splits not yet in the difficulty
file is sampled N times with an engine (olmocr_rl/engines.py) and scored with the training reward,
each page's record appended before the next page is generated."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from olmocr_rl.curate.records import DIFFICULTY, CurateError, DifficultyFile, Settings, row_key
from olmocr_rl.engines import Engine, sample_seed
from olmocr_rl.keep_rule import statistics
from olmocr_rl.prompts import row_conversation

# The splits `prepare` writes: curate measures these, never a selection it wrote itself.
SOURCE_SPLITS = ("train", "eval")
# (completions, test ids per completion) -> one reward per completion
RewardFn = Callable[[list[str], list[list[str]]], list[float]]


@dataclass
class Page:
    split: str
    row: dict
    where: str  # the row's file and line, for messages

    @property
    def id(self) -> tuple[str, str, int]:
        return (self.split, str(self.row["pdf"]), int(self.row["page"]))


@dataclass
class Result:
    records: dict[tuple[str, str, int], dict]  # every page of the splits, its newest record
    pages: list[Page]
    scored: int = 0  # pages sampled and scored by this run
    reused: int = 0  # pages whose record was already in the file
    torn: bool = False  # a torn last line was dropped
    errors: list[dict] = field(default_factory=list)  # pages whose generation failed
    seconds: float = 0.0


def source_pages(prepared_dir: str | os.PathLike[str], splits: Sequence[str]) -> list[Page]:
    """The rows of `splits`, their image paths checked to stay inside the prepared folder."""
    from olmocr_rl.prepared import numbered_rows

    root = Path(prepared_dir)
    return [Page(split, row, f"{root / (split + '.jsonl')}:{n}") for split in splits for n, row in numbered_rows(root, split)]


def _groups(todo: list[Page], samples: int, batch_size: int, mixes_pages: bool) -> Iterator[list[Page]]:
    """Pages sampled together: as many as fit `batch_size` completions (at least one), or one page
    at a time for an engine that samples a call from one random stream (olmocr_rl/engines.py)."""
    per_call = max(1, batch_size // samples) if mixes_pages else 1
    for i in range(0, len(todo), per_call):
        yield todo[i : i + per_call]


def _sample(engine: Engine, root: Path, group: list[Page], samples: int, batch_size: int, temperature: float, seed: int,
            saved: list[list[int | None]] | None = None) -> list[list[str]]:  # fmt: skip
    """`samples` completions of each page of `group`, in calls of at most `batch_size`; sample j of a
    page seeded with `sample_seed(seed, pdf, page, j)`. With the loop stop on, `saved[i]` gets each of
    page i's samples' decode tokens saved (None: not stopped)."""
    from PIL import Image

    images = []
    for p in group:
        with Image.open(root / p.row["image"]) as im:
            images.append(im.convert("RGB"))
    conversations = [row_conversation(p.row) for p in group]
    items = [(i, j) for i in range(len(group)) for j in range(samples)]
    texts: list[list[str]] = [[] for _ in group]
    for start in range(0, len(items), batch_size):
        chunk = items[start : start + batch_size]
        seeds = [sample_seed(seed, str(group[i].row["pdf"]), int(group[i].row["page"]), j) for i, j in chunk]
        out = engine.generate([images[i] for i, _ in chunk], [conversations[i] for i, _ in chunk], temperature, seeds)
        if len(out) != len(chunk):
            raise RuntimeError(f"the engine returned {len(out)} completions for {len(chunk)} prompts")
        for (i, _), text in zip(chunk, out):
            if not isinstance(text, str):
                raise RuntimeError(f"the engine returned a {type(text).__name__}, not text")
            texts[i].append(text)
        if saved is not None and engine.loops is not None:
            for (i, _), (loop, tokens) in zip(chunk, engine.loops.last, strict=True):
                saved[i].append(tokens if loop is not None else None)
    return texts


def check_settings(settings: Settings) -> None:
    if settings.samples < 2:
        raise CurateError("--samples must be at least 2: the spread of one sample is not defined")
    if settings.temperature <= 0:
        raise CurateError("temperature must be above 0: greedy samples are all the same, so every page would look uniform")


def job_pages(prepared_dir: str | os.PathLike[str], splits: Sequence[str], prompt: Any = None) -> list[Page]:
    """The pages of `splits`, with the training config's instruction (olmocr_rl.prompts.Prompt) when
    it gives one, as train uses it."""
    pages = source_pages(prepared_dir, splits)
    if prompt is not None:
        for p in pages:
            p.row = {**p.row, "prompt": prompt.text, "prompt_layout": prompt.layout}
    return pages


def pending(pages: Sequence[Page], records: dict[tuple[str, str, int], dict]) -> list[Page]:
    """The pages without a record of their current row."""
    return [p for p in pages if records.get(p.id, {}).get("key") != row_key(p.row)]


def current(pages: Sequence[Page], records: dict[tuple[str, str, int], dict]) -> dict[tuple[str, str, int], dict]:
    """Each page's record of its current row, in page order."""
    return {p.id: records[p.id] for p in pages if p.id in records and records[p.id].get("key") == row_key(p.row)}


def score_pages(todo: list[Page], engine: Engine, root: Path, settings: Settings, seed: int, reward: RewardFn,
                record: Callable[[dict], None], *, batch_size: int, engine_name: str, errors: list[dict],
                progress: Callable[[int, int, int], None] | None = None, stopped: Callable[[], bool] | None = None) -> int:  # fmt: skip
    """Samples and scores `todo`, each page's record handed to `record` (written) before the next
    group is generated; a page the engine fails on goes to `errors`. `progress(done, todo, tokens)`
    after each group; `stopped()` before each: True ends it (KeyboardInterrupt). Returns the count
    of pages scored."""
    done = scored = tokens = 0
    for group in _groups(todo, settings.samples, batch_size, engine.mixes_pages):
        if stopped is not None and stopped():
            raise KeyboardInterrupt
        engine.live.follow(progress, done, len(todo), tokens)  # progress inside a long group too
        for page, texts, saved in _sample_or_split(engine, root, group, settings, seed, batch_size, errors):
            rec = _score(page, texts, reward, engine.count_tokens, settings, engine_name, saved)
            record(rec)
            scored += 1
            tokens += sum(rec["tokens"])
        done += len(group)
        if progress is not None:
            progress(done, len(todo), tokens)
    engine.live.follow(None, 0, 0, 0)
    return scored


def curate(
    prepared_dir: str | os.PathLike[str],
    settings: Settings,
    load_engine: Callable[[list[dict]], Engine],
    reward: RewardFn,
    *,
    output: str | os.PathLike[str] | None = None,
    splits: Sequence[str] = ("train",),
    batch_size: int = 16,
    engine: str = "",
    seed: int = 0,
    progress: Callable[[int, int, int], None] | None = None,
    stopped: Callable[[], bool] | None = None,
    prompt: Any = None,
) -> Result:
    """Scores every page of `splits` not yet in the difficulty file (`output`, default
    PREPARED/difficulty.jsonl) and returns every page's newest record. `load_engine(rows)` is
    called only when a page is left to sample (re-selecting from a finished file loads no model);
    `engine` is its name, recorded; `seed` the run's (each page's samples: `sample_seed`).
    `stopped()` is asked before each group of pages: True ends the run (KeyboardInterrupt) with
    every finished page written."""
    check_settings(settings)
    root = Path(prepared_dir)
    path = Path(output) if output is not None else root / DIFFICULTY
    pages = job_pages(root, splits, prompt)
    file = DifficultyFile(path)
    started = time.monotonic()
    try:
        lines, torn = file.open()
        records = comparable(lines, settings, path)
        todo = pending(pages, records)
        result = Result(records={}, pages=pages, reused=len(pages) - len(todo), torn=torn)
        if todo:

            def record(rec: dict) -> None:
                file.append(rec)
                records[(rec["split"], rec["pdf"], rec["page"])] = rec

            result.scored = score_pages(todo, load_engine([p.row for p in todo]), root, settings, seed, reward, record,
                                        batch_size=batch_size, engine_name=engine, errors=result.errors, progress=progress,
                                        stopped=stopped)  # fmt: skip
    finally:
        file.close()
    result.records = current(pages, records)
    result.seconds = time.monotonic() - started
    return result


def comparable(lines: list[tuple[int, dict]], settings: Settings, path: Path) -> dict[tuple[str, str, int], dict]:
    """Each page's newest record; CurateError naming the line of one made with other settings."""
    wanted = settings.to_dict()
    records: dict[tuple[str, str, int], dict] = {}
    for n, rec in lines:
        if rec["settings"] != wanted:
            keys = dict.fromkeys([*wanted, *rec["settings"]])  # a key only one side has (the loop rule) differs too
            differ = ", ".join(
                f"{k} {rec['settings'].get(k)!r} (now {wanted.get(k)!r})" for k in keys if rec["settings"].get(k) != wanted.get(k)
            )
            raise CurateError(f"{path}:{n}: made with other settings: {differ}; run with those, or give --output a new file")
        records[(str(rec["split"]), str(rec["pdf"]), int(rec["page"]))] = rec  # the newest line wins
    return records


def _score(page: Page, texts: list[str], reward: RewardFn, count_tokens: Callable[[list[str]], list[int]], settings: Settings,
           engine: str, saved: list[int | None] | None = None) -> dict:  # fmt: skip
    """The page's record: its samples' rewards and their statistics; with the loop stop on, the samples
    stopped in a loop (`loops`) and the decode tokens that saved (`loop_tokens_saved`, an upper bound).
    `tokens` are the written texts' (a stopped loop's as run on to the limit, as the full run's)."""
    t0 = time.monotonic()
    rewards = [float(r) for r in reward(texts, [list(map(str, page.row["test_ids"]))] * len(texts))]
    return {
        "split": page.split,
        "pdf": str(page.row["pdf"]),
        "page": int(page.row["page"]),
        "samples": len(rewards),
        "rewards": rewards,
        **statistics(rewards),
        "empty": sum(1 for t in texts if not t.strip()),
        "tokens": count_tokens(texts),
        "engine": engine,
        "score_seconds": round(time.monotonic() - t0, 4),
        "key": row_key(page.row),
        "settings": settings.to_dict(),
        **({"loops": sum(t is not None for t in saved), "loop_tokens_saved": sum(t or 0 for t in saved)} if saved else {}),
    }


def _sample_or_split(
    engine: Engine, root: Path, group: list[Page], settings: Settings, seed: int, batch_size: int, errors: list[dict]
) -> list[tuple[Page, list[str], list[int | None] | None]]:
    """The group's samples (and with the loop stop on, each sample's tokens saved, `_sample`); when
    the engine fails on the group, each page alone, and a page that still fails is listed in `errors`
    (the run goes on; the next run tries it again)."""
    try:
        saved: list[list[int | None]] | None = [[] for _ in group] if engine.loops is not None else None
        texts = _sample(engine, root, group, settings.samples, batch_size, settings.temperature, seed, saved)
        return [(page, t, saved[i] if saved is not None else None) for i, (page, t) in enumerate(zip(group, texts))]
    except Exception as e:  # noqa: BLE001 - find the page at fault; a failing page is recorded, the run goes on
        if len(group) > 1:
            return [pair for page in group for pair in _sample_or_split(engine, root, [page], settings, seed, batch_size, errors)]
        page = group[0]
        errors.append(
            {"split": page.split, "pdf": str(page.row["pdf"]), "page": int(page.row["page"]), "error": f"{type(e).__name__}: {e}"}
        )
        return []


def bench_rewards(rewards: dict[str, float]) -> tuple[dict[str, float], list[str]]:
    """(the bench rewards with their weights, the other rewards' names): difficulty is measured on
    the bench rewards (olmocr_rl/reward_registry.py), weighted as training weighs them."""
    from olmocr_rl.reward_registry import bench_names

    bench = {n: float(w) for n, w in rewards.items() if n in bench_names() and float(w) != 0}
    return bench, [n for n in rewards if n not in bench]


def training_reward(prepared_dir: str | os.PathLike[str], rewards: dict[str, float], guard: str, threads: int | None = None) -> RewardFn:
    """The weighted sum of the training config's bench rewards, built as `train` builds them (the
    reward table, olmocr_rl/reward_registry.py: the prepared tests, the run's guard)."""
    from olmocr_rl.prepared import tests_dir
    from olmocr_rl.reward_registry import RewardContext, build_rewards

    funcs, weights = build_rewards(rewards, RewardContext(tests_dir(prepared_dir), threads=threads, guard=guard))  # type: ignore[arg-type]

    def reward(texts: list[str], test_ids: list[list[str]]) -> list[float]:
        total = [0.0] * len(texts)
        for func, weight in zip(funcs, weights):
            for i, r in enumerate(func(completions=texts, test_ids=test_ids)):
                if r is None:
                    raise CurateError(f"a page without tests ({test_ids[i]!r}) has no reward")
                total[i] += weight * r
        return total

    return reward
