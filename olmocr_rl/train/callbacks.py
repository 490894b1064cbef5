"""Trainer callbacks: metrics as JSONL (every log, train and eval), and a compact rich progress
display on rank 0 (replacing transformers' tqdm bar rather than drawing over it)."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

# Shown in the progress line, when logged. frac_reward_zero_std: trl's share of the step's groups
# whose rewards are all equal (no advantage, no gradient); `olmocr-rl curate` drops such pages.
HEADLINE = ("loss", "reward", "rewards/olmocr_bench/mean", "frac_reward_zero_std", "eval_reward", "completions/mean_length",
            "learning_rate")  # fmt: skip


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}" if math.isfinite(v) else str(v)
    return str(v)


class MetricsJsonlCallback(TrainerCallback):
    """Appends each log (train and eval metrics, step, epoch) to output_dir/logs/metrics.jsonl."""

    def __init__(self, output_dir: str | Path):
        self.path = Path(output_dir) / "logs" / "metrics.jsonl"  # not top level: output_dir is also a bench folder

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not state.is_world_process_zero or not logs:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        row = {"step": state.global_step, "time": round(time.time(), 3), **logs}
        with self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(row, default=str) + "\n")


class RichProgressCallback(TrainerCallback):
    """A progress bar with the headline metrics and per-type bench pass rates on a terminal; one
    plain line per log elsewhere (CI logs, files). Rank 0 only."""

    def __init__(self) -> None:
        self.live: Any = None
        self.progress: Any = None
        self.task: Any = None
        self.console: Any = None
        self.status: Any = None

    def on_train_begin(self, args, state, control, **kwargs):
        if not state.is_world_process_zero:
            return
        from rich.console import Console, Group
        from rich.live import Live
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
        from rich.text import Text

        self.console = Console(stderr=True)
        if not self.console.is_terminal:
            return
        self.progress = Progress(
            TextColumn("[bold blue]GRPO"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=self.console,
        )
        self.task = self.progress.add_task("train", total=state.max_steps, completed=state.global_step)
        self.status = Text("waiting for the first log ...")
        self.live = Live(Group(self.progress, self.status), console=self.console, refresh_per_second=4)
        self.live.start()

    def on_step_end(self, args, state, control, **kwargs):
        if self.progress is not None:
            self.progress.update(self.task, completed=state.global_step)

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not state.is_world_process_zero or not logs:
            return
        parts = [f"{k}={_fmt(logs[k])}" for k in HEADLINE if k in logs]
        parts += [
            f"{k.removesuffix('/pass_rate')}={_fmt(v)}"
            for k, v in sorted(logs.items())
            if k.startswith(("bench/", "eval_bench/")) and "/jsonl/" not in k
        ]
        if not parts:  # e.g. the end-of-training runtime summary
            return
        line = f"step {state.global_step}/{state.max_steps}: " + "  ".join(parts)
        if self.live is not None:
            from rich.text import Text

            self.status = Text(line)
            self.live.update(self._group())
        elif self.console is not None:
            self.console.print(line, highlight=False, soft_wrap=True)

    def _group(self) -> Any:
        from rich.console import Group

        return Group(self.progress, self.status)

    def on_train_end(self, args, state, control, **kwargs):
        if self.live is not None:
            self.live.stop()
            self.live = None
