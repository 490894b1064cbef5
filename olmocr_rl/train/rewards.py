"""What training adds to the rewards (olmocr_rl/reward_registry.py builds them by name): the bench
rewards log per-type pass rates over every rank and record failing completions
(`TrainRewardContext`), the medoid reward gathers page groups across ranks, and the recorder writes
completions with their failing tests for inspection."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from olmocr_rl.reward_registry import RewardContext
from olmocr_rl.rewards import BenchReward, rates
from olmocr_rl.suite import TRAINING_GUARD, BenchSuite, Guard, PageScore


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


@dataclass
class TrainRewardContext(RewardContext):
    """The training run's reward context (olmocr_rl/reward_registry.py): the bench rewards share one
    suite and log per-type pass rates (the first of them: with several, one logs) and record
    failing completions; the medoid reward gathers each page's group from every rank."""

    gather: Callable[[list], list[list]] = gather_over_ranks
    rank: int = -1  # -1: this process's rank in torch.distributed (0 without)
    recorder: CompletionRecorder | None = None
    _logged: bool = field(default=False, repr=False)

    def __post_init__(self) -> None:
        if self.rank < 0:
            self.rank = this_rank()

    def bench(self, average: str) -> Callable:
        first, self._logged = not self._logged, True
        return TrainBenchReward(self.suite(), average, log_metrics=first, recorder=self.recorder if first else None,
                                threads=self.threads, guard=self.guard)  # fmt: skip
