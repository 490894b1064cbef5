"""Reward functions chosen by name, with weights; and the recorder that writes completions
with their failing tests for inspection."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from olmocr_rl.rewards import (
    BenchReward,
    EditDistanceReward,
    ElementCountReward,
    EosReward,
    FrontMatterReward,
    MedoidReward,
    RectTablesReward,
    rates,
)
from olmocr_rl.suite import TRAINING_GUARD, BenchSuite, Guard, PageScore
from olmocr_rl.train.config import REWARD_NAMES, ConfigError, is_user_reward

_AVERAGE = {"bench": "micro", "bench-macro": "macro", "bench-graded": "graded"}


class CompletionRecorder:
    """Appends scored completions (text, reward, failing tests) to
    `<output_dir>/completions/failing_<train|eval>[_rank<R>].jsonl`. Eval completions are all
    written; train completions only every `every` steps and at most `per_call` per reward call,
    so a long run does not write gigabytes. `mode` is read from the trainer's model (train/eval),
    as trl does."""

    def __init__(self, output_dir: str | os.PathLike[str], *, rank: int = 0, world_size: int = 1, every: int = 1, per_call: int = 4):
        self.dir = Path(output_dir) / "completions"
        self.suffix = f"_rank{rank}" if world_size > 1 else ""
        self.every = max(1, every)
        self.per_call = per_call
        self.trainer: Any = None
        self._lock = threading.Lock()

    def mode(self) -> str:
        model = getattr(self.trainer, "model", None)
        return "eval" if model is not None and not model.training else "train"

    def path(self, mode: str) -> Path:
        return self.dir / f"failing_{mode}{self.suffix}.jsonl"

    def record(self, step: int, texts: Sequence[str | None], scores: Sequence[PageScore | None], meta: dict[str, Sequence[Any]]) -> None:
        mode = self.mode()
        if mode == "train" and step % self.every:
            return
        rows = []
        for i, (text, s) in enumerate(zip(texts, scores)):
            if s is None:
                continue
            rows.append(
                {
                    "step": step,
                    "mode": mode,
                    "pdf": meta["pdf"][i] if "pdf" in meta else None,
                    "page": meta["page"][i] if "page" in meta else None,
                    "reward": s.reward,
                    "passed": s.passed,
                    "total": s.total,
                    "failed": [{"id": r.id, "type": r.type, "explanation": r.explanation} for r in s.results if not r.passed],
                    "completion": text,
                }
            )
        if mode == "train":
            rows = rows[: self.per_call]
        if not rows:
            return
        with self._lock:
            self.dir.mkdir(parents=True, exist_ok=True)
            with self.path(mode).open("a", encoding="utf-8") as f:
                for r in rows:
                    f.write(json.dumps(r, ensure_ascii=False) + "\n")


def sum_over_ranks(counts: dict[str, tuple[int, int]]) -> dict[str, tuple[int, int]]:
    """(passed, total) counts added up over all training ranks (every rank calls the reward
    once per batch, so this collective is matched); the counts themselves in one process."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return counts
    gathered: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, counts)
    total: dict[str, list[int]] = {}
    for part in gathered:
        for name, (p, n) in part.items():
            acc = total.setdefault(name, [0, 0])
            acc[0] += p
            acc[1] += n
    return {name: (p, n) for name, (p, n) in sorted(total.items())}


def gather_over_ranks(local: list) -> list[list]:
    """Every training rank's list, in rank order (this rank's included); [local] in one process.
    Every rank calls the reward once per batch, so this collective is matched."""
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return [local]
    gathered: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(gathered, local)
    return gathered


def this_rank() -> int:
    import torch.distributed as dist

    return dist.get_rank() if dist.is_available() and dist.is_initialized() else 0


def load_user_reward(name: str) -> Callable:
    """`package.module:attribute` imported: a function, or a class instantiated without
    arguments. ConfigError naming it when it does not import, is not callable, or cannot take
    trl's keyword arguments (`prompts`, `completions` and the dataset columns)."""
    import importlib
    import inspect

    module_name, _, attr = name.partition(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as e:  # noqa: BLE001 - any import failure is the user's to fix
        raise ConfigError(f"reward {name!r}: cannot import {module_name} ({type(e).__name__}: {e})") from None
    try:
        obj = getattr(module, attr)
    except AttributeError:
        raise ConfigError(f"reward {name!r}: {module_name} has no attribute {attr!r}") from None
    if inspect.isclass(obj):
        try:
            obj = obj()
        except Exception as e:  # noqa: BLE001
            raise ConfigError(
                f"reward {name!r}: {attr}() failed ({type(e).__name__}: {e}); a reward class must take no arguments"
            ) from None
    if not callable(obj):
        raise ConfigError(f"reward {name!r}: {type(obj).__name__} is not callable")
    try:
        params = inspect.signature(obj).parameters.values()
    except (TypeError, ValueError):
        return obj
    kinds = {p.kind for p in params}
    named = {p.name for p in params}
    if inspect.Parameter.VAR_KEYWORD not in kinds or not ({"completions"} <= named or inspect.Parameter.VAR_POSITIONAL in kinds):
        raise ConfigError(
            f"reward {name!r}: its signature {inspect.signature(obj)} cannot take trl's call; "
            "write it as def reward(prompts, completions, **kwargs) -> list[float]"
        )
    return obj


class TrainBenchReward(BenchReward):
    """BenchReward that also logs per-type pass rates (only when `log_metrics`: with several
    bench rewards one logs them), records failing tests, and adds the failing test ids to trl's
    completions table (`log_extra`)."""

    def __init__(
        self,
        suite: BenchSuite,
        average: str,
        *,
        log_metrics: bool = True,
        recorder: CompletionRecorder | None = None,
        threads: int | None = None,
        guard: Guard = TRAINING_GUARD,
    ):
        super().__init__(suite, average, threads=threads, guard=guard)  # type: ignore[arg-type]
        self.log_metrics = log_metrics
        self.recorder = recorder

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["recorder"] = None  # holds a lock and the trainer
        return state

    def __call__(
        self,
        prompts: Sequence[Any] | None = None,
        completions: Sequence[Any] = (),
        test_ids: Sequence[Sequence[str] | None] | None = None,
        log_metric: Callable[[str, float], None] | None = None,
        log_extra: Callable[[str, list], None] | None = None,
        trainer_state: Any = None,
        **kwargs: Any,
    ) -> list[float | None]:
        texts, test_ids = self.checked_inputs(completions, test_ids)
        scores = self.score_texts(texts, test_ids, details=True)
        if self.log_metrics and log_metric is not None:
            # Pass rates of the whole batch, not of this rank's slice: trl averages a logged
            # metric over ranks, which is the batch's rate only if every rank logs that rate.
            for name, value in rates(sum_over_ranks(self.metric_counts(scores, test_ids))).items():
                log_metric(name, value)
        if self.log_metrics and log_extra is not None:
            pages = zip(kwargs.get("pdf") or [None] * len(texts), kwargs.get("page") or [None] * len(texts))
            log_extra("page", [f"{pdf} p{page}" if pdf is not None else "" for pdf, page in pages])
            log_extra("failed_tests", [",".join(r.id for r in s.results if not r.passed) if s is not None else "" for s in scores])
        if self.recorder is not None:
            step = int(getattr(trainer_state, "global_step", 0) or 0)
            self.recorder.record(step, texts, scores, kwargs)
        return self.rewards_of(scores)


def eos_token_ids(processor: Any, model: Any = None) -> list[int]:
    ids: list[int] = []
    gen = getattr(model, "generation_config", None)
    for source in (getattr(gen, "eos_token_id", None), getattr(getattr(processor, "tokenizer", processor), "eos_token_id", None)):
        if isinstance(source, int):
            ids.append(source)
        elif isinstance(source, (list, tuple)):
            ids.extend(int(x) for x in source)
    if not ids:
        raise ConfigError("the eos reward needs an end-of-sequence token, but neither the tokenizer nor the generation config has one")
    return sorted(set(ids))


def build_rewards(
    rewards: dict[str, float],
    tests: str | os.PathLike[str] | BenchSuite,
    *,
    processor: Any = None,
    model: Any = None,
    recorder: CompletionRecorder | None = None,
    threads: int | None = None,
    guard: Guard = TRAINING_GUARD,
) -> tuple[list[Callable], list[float]]:
    """Reward callables and their weights, in the order given. Bench rewards share one suite
    (the prepared folder's accepted tests) and score under `guard`; the first one logs
    bench/<type>/pass_rate."""
    funcs: list[Callable] = []
    weights: list[float] = []
    suite: BenchSuite | None = None
    logged = False
    for name, weight in rewards.items():
        if name in _AVERAGE:
            if suite is None:
                suite = tests if isinstance(tests, BenchSuite) else BenchSuite.load(tests)
            funcs.append(
                TrainBenchReward(
                    suite, _AVERAGE[name], log_metrics=not logged, recorder=None if logged else recorder, threads=threads, guard=guard
                )
            )
            logged = True
        elif name == "eos":
            funcs.append(EosReward(eos_token_ids(processor, model)))
        elif name == "front-matter":
            funcs.append(FrontMatterReward())
        elif name == "medoid":
            funcs.append(MedoidReward("page", threads=threads, gather=gather_over_ranks, rank=this_rank()))
        elif name == "medoid-batch":
            funcs.append(MedoidReward("batch", threads=threads))
        elif name == "edit-distance":
            funcs.append(EditDistanceReward(threads=threads))
        elif name == "element-count":
            funcs.append(ElementCountReward(threads=threads))
        elif name == "rect-tables":
            funcs.append(RectTablesReward(threads=threads))
        elif is_user_reward(name):
            funcs.append(load_user_reward(name))
        else:
            raise ConfigError(f"unknown reward {name!r}; choose from {', '.join(REWARD_NAMES)}")
        weights.append(float(weight))
    return funcs, weights
