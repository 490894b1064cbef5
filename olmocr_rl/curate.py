"""Pages chosen by difficulty (`olmocr-rl curate`): sample N completions of every page with the
engines `olmocr-rl generate` uses, score them with the training reward, and keep for training the
pages whose samples disagree.

    PREPARED/difficulty.jsonl   one line per scored page: split, pdf, page, samples, rewards, mean,
                                std, min, max, empty, tokens, the settings it was made with, key
    PREPARED/<name>.jsonl       the kept train pages, as prepared rows: a split `train` reads
                                (`olmocr-rl train PREPARED ... train_split=<name>`)

GRPO's advantage of a completion is its reward minus its group's mean (divided by the group's std
under `scale_rewards=group`), so a page whose completions all earn the same reward teaches nothing
and costs a full group of generations. Which pages those are depends on the policy, so they are
measured by sampling it: a page is kept when the (Bessel-corrected, as trl's) std of its N sample
rewards exceeds `min_std` (default 0: any disagreement), optionally with its mean strictly between
`min_mean` and `max_mean`.

The difficulty file is append-only: each page's line is written with one `write` and fsync'd
before the next page is generated, so a killed run leaves every finished page and at most a torn
last line, which the next run drops (rewriting the valid prefix through a temporary file) before
it appends. Pages already in the file with the same row (image, prompt, tests) are not generated
again; a row that changed since (prepare re-run) is scored again and its newest line wins. A file
made with other settings (model, samples, temperature, completion length, rewards, guard) is
refused rather than mixed. The selection split is written whole, to a temporary file and renamed.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from olmocr_rl.atomic import atomic_write
from olmocr_rl.errors import UserError

DIFFICULTY = "difficulty.jsonl"
BENCH_REWARDS = ("bench", "bench-macro", "bench-graded")
# The splits `prepare` writes: curate measures these, never a selection it wrote itself.
SOURCE_SPLITS = ("train", "eval")
RECORD_KEYS = ("split", "pdf", "page", "key", "rewards", "settings")

# (images, one conversation per image, temperature) -> one completion per image (olmocr_rl.generate.GenerateFn)
GenerateFn = Callable[[list, list[str], float], list[str]]
# (completions, test ids per completion) -> one reward per completion
RewardFn = Callable[[list[str], list[list[str]]], list[float]]


class CurateError(UserError, ValueError):
    """A problem the user fixes (a file, an option); the message names the file and line."""


@dataclass(frozen=True)
class Settings:
    """What a page's statistics depend on; records made with other settings are not comparable."""

    model: str
    samples: int
    temperature: float
    max_new_tokens: int
    rewards: dict[str, float]  # the bench rewards of the training config, with their weights
    guard: str

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "samples": self.samples, "temperature": self.temperature,
                "max_new_tokens": self.max_new_tokens, "rewards": dict(self.rewards), "guard": self.guard}  # fmt: skip

    def describe(self) -> str:
        rewards = " + ".join(name if w == 1 else f"{w:g} x {name}" for name, w in self.rewards.items())
        return f"{rewards}, guard {self.guard}, temperature {self.temperature:g}, <= {self.max_new_tokens} tokens"


def row_key(row: dict) -> str:
    """A fingerprint of what a page's samples depend on in its prepared row."""
    data = [row["pdf"], int(row["page"]), row["image"], row.get("width"), row.get("height"), str(row["prompt"]),
            sorted(str(t) for t in row["test_ids"])]  # fmt: skip
    return hashlib.sha256(json.dumps(data, ensure_ascii=False).encode()).hexdigest()[:16]


def statistics(rewards: Sequence[float]) -> dict[str, float]:
    """mean, std (Bessel-corrected, as trl's per-group std), min, max."""
    n = len(rewards)
    mean = math.fsum(rewards) / n
    var = math.fsum((r - mean) ** 2 for r in rewards) / (n - 1) if n > 1 else 0.0
    return {"mean": mean, "std": math.sqrt(var), "min": min(rewards), "max": max(rewards)}


# ---------------------------------------------------------------------------------------------
# the difficulty file
# ---------------------------------------------------------------------------------------------


def _check_record(rec: Any) -> str | None:
    if not isinstance(rec, dict):
        return "not a JSON object"
    missing = [k for k in RECORD_KEYS if k not in rec]
    if missing:
        return f"missing {', '.join(missing)}"
    rewards = rec["rewards"]
    if not isinstance(rewards, list) or not rewards or not all(isinstance(r, (int, float)) and not isinstance(r, bool) for r in rewards):
        return "rewards must be a list of numbers"
    if not isinstance(rec["settings"], dict):
        return "settings must be an object"
    return None


def read_records(path: str | os.PathLike[str]) -> tuple[list[tuple[int, dict]], int, bool]:
    """(line number, record) of every line, the byte length of the valid part, and whether a torn
    last line (what a kill during its write leaves: no newline, or not JSON) was left out. A bad
    line before the last one is an error naming the file and line."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        return [], 0, False
    lines = data.split(b"\n")
    last = len(lines) - 1  # the part after the final newline: b"" when the file ends with one
    records: list[tuple[int, dict]] = []
    valid = 0
    for n, line in enumerate(lines):
        if n == last:
            return records, valid, bool(line.strip())
        if line.strip():
            try:
                rec = json.loads(line)
                problem = _check_record(rec)
            except (json.JSONDecodeError, UnicodeDecodeError) as e:
                rec, problem = None, f"invalid JSON ({e})"
            if problem is not None:
                if n == last - 1 and rec is None:  # a complete but garbled last line: torn as well
                    return records, valid, True
                raise CurateError(f"{p}:{n + 1}: {problem} (not a line `olmocr-rl curate` wrote; move the file away)")
            records.append((n + 1, rec))
        valid += len(line) + 1
    return records, valid, False  # not reached: the last part returns above


class DifficultyFile:
    """The append-only difficulty file of one run: locked against a second writer, its torn last
    line cut off on open, each record appended with one write and fsync'd."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self._f: Any = None

    def open(self) -> tuple[list[tuple[int, dict]], bool]:
        """Locks the file and returns its records (line number, record) and whether a torn last line
        was dropped."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        created = not self.path.exists()
        f = self._locked()
        records, valid, torn = read_records(self.path)
        if torn or valid != self.path.stat().st_size:
            # Keep the valid part only (a temporary file renamed over the old one), then append to it.
            with self.path.open("rb") as src, atomic_write(self.path, "wb", durable=True) as dst:
                dst.write(src.read(valid))
            f.close()
            f = self._locked()
        self._f = f
        if created:
            _fsync_dir(self.path.parent)
        return records, torn

    def _locked(self) -> Any:
        import fcntl

        f = self.path.open("ab")
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.close()
            raise CurateError(f"{self.path}: another `olmocr-rl curate` is writing this file") from None
        return f

    def append(self, record: dict) -> None:
        self._f.write((json.dumps(record, ensure_ascii=False) + "\n").encode())
        self._f.flush()
        os.fsync(self._f.fileno())

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def file_model(path: str | os.PathLike[str]) -> str | None:
    """The model the difficulty file's records were made with (None: no file, no records)."""
    records, _, _ = read_records(path)
    models = {str(rec["settings"].get("model")) for _, rec in records}
    if len(models) > 1:
        raise CurateError(f"{path}: records of several models ({', '.join(sorted(models))}); give --model")
    return models.pop() if models else None


# ---------------------------------------------------------------------------------------------
# sampling and scoring
# ---------------------------------------------------------------------------------------------


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
    from olmocr_rl.prepared import PreparedError, read_split

    root = Path(prepared_dir)
    pages = []
    for split in splits:
        try:
            rows = read_split(root, split)
        except PreparedError as e:
            raise CurateError(str(e)) from None
        for n, row in enumerate(rows, 1):
            pages.append(Page(split, row, f"{root / (split + '.jsonl')}:{n}"))  # read_split keeps images inside root
    return pages


def _groups(todo: list[Page], samples: int, batch_size: int) -> Iterator[list[Page]]:
    """Pages sampled together: as many as fit `batch_size` completions (at least one)."""
    per_call = max(1, batch_size // samples)
    for i in range(0, len(todo), per_call):
        yield todo[i : i + per_call]


def _sample(generate: GenerateFn, root: Path, group: list[Page], samples: int, batch_size: int, temperature: float) -> list[list[str]]:
    """`samples` completions of each page of `group`, in calls of at most `batch_size`."""
    from PIL import Image

    images = []
    for p in group:
        with Image.open(root / p.row["image"]) as im:
            images.append(im.convert("RGB"))
    from olmocr_rl.prompts import IMAGE_FIRST, conversation

    items = [(i, images[i], conversation(str(p.row["prompt"]), str(p.row.get("prompt_layout", IMAGE_FIRST))))
             for i, p in enumerate(group) for _ in range(samples)]  # fmt: skip
    texts: list[list[str]] = [[] for _ in group]
    for start in range(0, len(items), batch_size):
        chunk = items[start : start + batch_size]
        out = generate([im for _, im, _ in chunk], [pr for _, _, pr in chunk], temperature)
        if len(out) != len(chunk):
            raise RuntimeError(f"the engine returned {len(out)} completions for {len(chunk)} prompts")
        for (i, _, _), text in zip(chunk, out):
            if not isinstance(text, str):
                raise RuntimeError(f"the engine returned a {type(text).__name__}, not text")
            texts[i].append(text)
    return texts


def curate(
    prepared_dir: str | os.PathLike[str],
    settings: Settings,
    load_engine: Callable[[list[dict]], GenerateFn],
    reward: RewardFn,
    *,
    output: str | os.PathLike[str] | None = None,
    splits: Sequence[str] = ("train",),
    batch_size: int = 16,
    count_tokens: Callable[[list[str]], list[int]] | None = None,
    engine: str = "",
    progress: Callable[[int, int], None] | None = None,
    stopped: Callable[[], bool] | None = None,
    prompt: Any = None,
) -> Result:
    """Scores every page of `splits` not yet in the difficulty file (`output`, default
    PREPARED/difficulty.jsonl) and returns every page's newest record. `load_engine(rows)` is
    called only when a page is left to sample (re-selecting from a finished file loads no model).
    `stopped()` is asked before each group of pages: True ends the run (KeyboardInterrupt) with
    every finished page written."""
    if settings.samples < 2:
        raise CurateError("--samples must be at least 2: the spread of one sample is not defined")
    if settings.temperature <= 0:
        raise CurateError("temperature must be above 0: greedy samples are all the same, so every page would look uniform")
    root = Path(prepared_dir)
    path = Path(output) if output is not None else root / DIFFICULTY
    pages = source_pages(root, splits)
    if prompt is not None:  # the training config's instruction (olmocr_rl.prompts.Prompt), as train uses it
        for p in pages:
            p.row = {**p.row, "prompt": prompt.text, "prompt_layout": prompt.layout}
    file = DifficultyFile(path)
    started = time.monotonic()
    try:
        lines, torn = file.open()
        wanted = settings.to_dict()
        records: dict[tuple[str, str, int], dict] = {}
        for n, rec in lines:
            if rec["settings"] != wanted:
                differ = ", ".join(f"{k} {rec['settings'].get(k)!r} (now {v!r})" for k, v in wanted.items() if rec["settings"].get(k) != v)
                raise CurateError(f"{path}:{n}: made with other settings: {differ}; run with those, or give --output a new file")
            records[(str(rec["split"]), str(rec["pdf"]), int(rec["page"]))] = rec  # the newest line wins
        todo = [p for p in pages if records.get(p.id, {}).get("key") != row_key(p.row)]
        result = Result(records={}, pages=pages, reused=len(pages) - len(todo), torn=torn)
        if todo:
            generate = load_engine([p.row for p in todo])
            done = 0
            for group in _groups(todo, settings.samples, batch_size):
                if stopped is not None and stopped():
                    raise KeyboardInterrupt
                for page, texts in _sample_or_split(generate, root, group, settings, batch_size, result.errors):
                    t0 = time.monotonic()
                    rewards = [float(r) for r in reward(texts, [list(map(str, page.row["test_ids"]))] * len(texts))]
                    rec = {
                        "split": page.split,
                        "pdf": str(page.row["pdf"]),
                        "page": int(page.row["page"]),
                        "samples": len(rewards),
                        "rewards": rewards,
                        **statistics(rewards),
                        "empty": sum(1 for t in texts if not t.strip()),
                        "tokens": count_tokens(texts) if count_tokens is not None else None,
                        "engine": engine,
                        "score_seconds": round(time.monotonic() - t0, 4),
                        "key": row_key(page.row),
                        "settings": wanted,
                    }
                    file.append(rec)
                    records[page.id] = rec
                    result.scored += 1
                done += len(group)
                if progress is not None:
                    progress(done, len(todo))
    finally:
        file.close()
    result.records = {p.id: records[p.id] for p in pages if p.id in records and records[p.id].get("key") == row_key(p.row)}
    result.seconds = time.monotonic() - started
    return result


def _sample_or_split(
    generate: GenerateFn, root: Path, group: list[Page], settings: Settings, batch_size: int, errors: list[dict]
) -> list[tuple[Page, list[str]]]:
    """The group's samples; when the engine fails on the group, each page alone, and a page that
    still fails is listed in `errors` (the run goes on; the next run tries it again)."""
    try:
        return list(zip(group, _sample(generate, root, group, settings.samples, batch_size, settings.temperature)))
    except Exception as e:  # noqa: BLE001 - find the page at fault; a failing page is recorded, the run goes on
        if len(group) > 1:
            return [pair for page in group for pair in _sample_or_split(generate, root, [page], settings, batch_size, errors)]
        page = group[0]
        errors.append(
            {"split": page.split, "pdf": str(page.row["pdf"]), "page": int(page.row["page"]), "error": f"{type(e).__name__}: {e}"}
        )
        return []


# ---------------------------------------------------------------------------------------------
# the selection
# ---------------------------------------------------------------------------------------------


@dataclass
class Selection:
    kept: list[dict]  # prepared rows, each with its "difficulty"
    dropped: list[dict]  # the records of the pages left out
    counts: dict[str, int]  # all_pass, all_fail, uniform (same reward otherwise), disagree
    saved_pages: float  # share of the pages dropped (= of the completion budget per epoch)
    saved_tokens: float | None  # share of the sampled completion tokens on the dropped pages


def select(
    pages: Sequence[Page],
    records: dict[tuple[str, str, int], dict],
    *,
    min_std: float = 0.0,
    min_mean: float | None = None,
    max_mean: float | None = None,
    top: float = 1.0,
) -> Selection:
    """The train pages whose samples disagree (std > min_std, mean strictly inside the optional
    bounds); every train page must have a record. `top` is the highest reward a sample can earn
    (the sum of the bench rewards' weights), to tell "all pass" from "all the same"."""
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
        keep = rec["std"] > min_std and (min_mean is None or rec["mean"] > min_mean) and (max_mean is None or rec["mean"] < max_mean)
        if keep:
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
    if path.is_file():
        for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if not line.strip():
                continue
            try:
                ours = "difficulty" in json.loads(line)
            except json.JSONDecodeError:
                ours = False
            if not ours:
                raise CurateError(f"{path}:{n}: not a selection `olmocr-rl curate` wrote; choose another --name")
            break
    with atomic_write(path, "w", durable=True) as f:
        f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    return path


# ---------------------------------------------------------------------------------------------
# the training reward and the engines
# ---------------------------------------------------------------------------------------------


def bench_rewards(rewards: dict[str, float]) -> tuple[dict[str, float], list[str]]:
    """(the bench rewards with their weights, the other rewards' names): difficulty is measured on
    the bench rewards, weighted as training weighs them."""
    bench = {n: float(w) for n, w in rewards.items() if n in BENCH_REWARDS and float(w) != 0}
    return bench, [n for n in rewards if n not in bench]


def training_reward(prepared_dir: str | os.PathLike[str], rewards: dict[str, float], guard: str, threads: int | None = None) -> RewardFn:
    """The weighted sum of the training config's bench rewards, built as `train` builds them
    (olmocr_rl.train.rewards.build_rewards: the prepared tests, the run's guard)."""
    from olmocr_rl.prepared import tests_dir
    from olmocr_rl.train.rewards import build_rewards

    funcs, weights = build_rewards(rewards, tests_dir(prepared_dir), threads=threads, guard=guard)  # type: ignore[arg-type]

    def reward(texts: list[str], test_ids: list[list[str]]) -> list[float]:
        total = [0.0] * len(texts)
        for func, weight in zip(funcs, weights):
            for i, r in enumerate(func(completions=texts, test_ids=test_ids)):
                if r is None:
                    raise CurateError(f"a page without tests ({test_ids[i]!r}) has no reward")
                total[i] += weight * r
        return total

    return reward


def load_engine(
    engine: str,
    model: str,
    rows: list[dict],
    *,
    max_new_tokens: int,
    seed: int,
    max_pixels: int | None = None,
    trust_remote_code: bool = False,
    eager: bool | None = None,
    warn: Callable[[str], None] = print,
) -> tuple[GenerateFn, Callable[[list[str]], list[int]]]:
    """The engine `olmocr-rl generate` would use (olmocr_rl/generate.py), with the trainer's
    processor settings, and a token counter of its tokenizer."""
    import torch

    from olmocr_rl import generate as gen
    from olmocr_rl.modeling import inference_dtype, load_processor, load_trained

    processor = load_processor(model, trust_remote_code=trust_remote_code, max_pixels=max_pixels)
    tok = getattr(processor, "tokenizer", processor)

    def count(texts: list[str]) -> list[int]:
        # The completions re-tokenized: their generated length for real text; text decoded from
        # arbitrary tokens (a random model's bytes) can re-tokenize longer, so capped at the budget.
        return [min(len(ids), max_new_tokens) for ids in tok(list(texts), add_special_tokens=False)["input_ids"]]

    cuda = torch.cuda.is_available()
    if engine == "vllm":
        from transformers import AutoConfig

        from olmocr_rl.engines import pixel_bounds

        config = AutoConfig.from_pretrained(model, trust_remote_code=trust_remote_code)
        longest = gen.longest_prompt(processor, rows)
        context, tokens = gen.vllm_context(gen.model_context_length(config), longest, max_new_tokens)
        if tokens < max_new_tokens:
            warn(f"warning: completions capped at {tokens} tokens: the model's context is {context} and a prompt takes up to {longest}")
        return gen.vllm_generate(model, processor, config, max_new_tokens=tokens, max_model_len=context, seed=seed,
                                 enforce_eager=(not cuda) if eager is None else eager, trust_remote_code=trust_remote_code,
                                 mm_processor_kwargs=pixel_bounds(max_pixels)), count  # fmt: skip
    if engine != "transformers":
        raise CurateError(f"--engine must be transformers or vllm, not {engine!r}")
    torch.manual_seed(seed)
    m = load_trained(model, dtype=inference_dtype(cuda), trust_remote_code=trust_remote_code)
    m = m.to("cuda") if cuda else m
    m.eval()
    return gen.transformers_generate(m, processor, max_new_tokens=max_new_tokens), count
