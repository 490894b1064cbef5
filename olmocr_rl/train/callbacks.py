"""Trainer callbacks: metrics as JSONL (every log, train and eval), a compact rich progress display
on rank 0 (replacing transformers' tqdm bar rather than drawing over it), where each step's time
goes, whether the weights moved, the online filter's state in each checkpoint, and the end of
training at the end of a step in which a stop signal came."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from transformers import TrainerCallback


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
    """Rank 0's view of the run, WIDTH columns (olmocr_rl/train/console.py `step_lines`): on a
    terminal, a progress bar with each log's lines printed above it (through the bar's console, as
    the completions tables are: nothing runs together); elsewhere (CI logs, files) the same lines,
    plain. Nothing with --quiet (QUIET_ENV)."""

    def __init__(self) -> None:
        self.progress: Any = None
        self.task: Any = None
        self.console: Any = None

    def on_train_begin(self, args, state, control, **kwargs):
        from olmocr_rl.engines import quiet

        if not state.is_world_process_zero or quiet():
            return
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

        from olmocr_rl.train.console import WIDTH, set_live

        self.console = Console(stderr=True, highlight=False)
        if not self.console.is_terminal:
            return
        self.progress = Progress(
            TextColumn("[bold blue]GRPO"),
            BarColumn(bar_width=min(40, WIDTH - 48)),
            MofNCompleteColumn(),
            TextColumn("steps"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=self.console,
        )
        self.task = self.progress.add_task("train", total=state.max_steps, completed=state.global_step)
        self.progress.start()
        set_live(self.console, True)
        import atexit

        atexit.register(self._stop)  # a run that ends in an error (Ctrl-C) leaves no bar drawn behind its last line

    def on_step_end(self, args, state, control, **kwargs):
        if self.progress is not None:
            self.progress.update(self.task, completed=state.global_step)

    def on_log(self, args, state, control, logs=None, **kwargs):
        if self.console is None or not logs:
            return
        from olmocr_rl.train.console import step_lines

        for line in step_lines(logs, state.global_step, state.max_steps):
            self.console.print(line, highlight=False, markup=False, soft_wrap=True)

    def on_train_end(self, args, state, control, **kwargs):
        self._stop()

    def _stop(self) -> None:
        from olmocr_rl.train.console import set_live

        if self.progress is not None:
            self.progress.stop()
            self.progress = None
            set_live(self.console, False)


class StopOnSignal(TrainerCallback):
    """Ends training at the end of the step in which SIGINT, SIGTERM or SIGHUP came (one process:
    olmocr_rl/train/plan.py runs it in `procs.interrupts()`), in case the `Interrupted` raised where
    the signal landed was lost on its way up: a C extension's callback, a finalizer."""

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        from olmocr_rl.procs import Interrupted, interrupted

        if (signum := interrupted()) is not None:
            raise Interrupted(signum)


class StepTimer(TrainerCallback):
    """Where each optimizer step's time goes, logged with the step's metrics (rank 0's view):
    `time/step_s`, `time/generation_s` (trl's `_generate_single_turn`: the transformers or vLLM
    generate call, with vLLM the weight push before a step's first one), `time/reward_s` (all
    reward functions), `time/forward_backward_s` (the training steps less their input preparation,
    which holds generation and rewards), `time/other_s`, and `memory/peak_gib` (CUDA: the step's peak
    allocation; else the process's peak RSS so far). Each trainer owns one: its overridden methods
    time themselves with `timing` (olmocr_rl/train/trainer.py), so two trainers in one process time
    apart and nothing of trl's is replaced."""

    def __init__(self, cuda: bool = False) -> None:
        self.acc = {"generation_s": 0.0, "reward_s": 0.0, "train_s": 0.0, "prepare_s": 0.0}
        self.pending: dict[str, float] = {}
        self.cuda = cuda  # synchronise around each timed call (CUDA runs asynchronously)
        self.run_peak = 0  # CUDA: the largest step peak of the run, bytes

    def _sync(self) -> None:
        if self.cuda:
            import torch

            torch.cuda.synchronize()

    @contextlib.contextmanager
    def timing(self, key: str) -> Iterator[None]:
        """Adds the block's time to `key` (generation_s, reward_s, train_s, prepare_s)."""
        self._sync()
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self._sync()
            self.acc[key] += time.perf_counter() - t0

    def on_step_begin(self, args, state, control, **kwargs):
        self._sync()
        if self.cuda:
            import torch

            torch.cuda.reset_peak_memory_stats()
        self.t0, self.mark = time.perf_counter(), dict(self.acc)

    def on_step_end(self, args, state, control, **kwargs):
        self._sync()
        d = {k: self.acc[k] - self.mark[k] for k in self.acc}
        step = time.perf_counter() - self.t0
        fwd_bwd = max(0.0, d["train_s"] - d["prepare_s"])
        if self.cuda:
            import torch

            self.run_peak = max(self.run_peak, torch.cuda.max_memory_allocated())
            peak = torch.cuda.max_memory_allocated() / 2**30
        else:
            import resource

            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
        self.pending = {
            "time/step_s": step, "time/generation_s": d["generation_s"], "time/reward_s": d["reward_s"],
            "time/forward_backward_s": fwd_bwd,
            "time/other_s": max(0.0, step - d["generation_s"] - d["reward_s"] - fwd_bwd), "memory/peak_gib": peak,
        }  # fmt: skip

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs is not None and self.pending and not any(k.startswith("eval_") for k in logs):
            logs.update({k: round(v, 4) for k, v in self.pending.items()})
            self.pending = {}


class WeightsMoved(TrainerCallback):
    """Did training move the weights the optimizer owns (its float32 master copy under DeepSpeed,
    the trainable parameters otherwise)? A sample of up to `sample` elements is kept at the start
    and compared at the end: `share` changed, and the median change over the learning rate (AdamW's
    steps are about lr each). A run whose weights barely moved is warned about: a silent failure
    (half-precision weights that round updates away, zero advantages, a frozen model)."""

    def __init__(self, sample: int = 1_000_000) -> None:
        self.sample = sample
        self.before: list[Any] = []
        self.result: dict | None = None

    def _owned(self, model: Any, optimizer: Any) -> list[Any]:
        inner = getattr(optimizer, "optimizer", optimizer)
        groups = getattr(inner, "single_partition_of_fp32_groups", None) or getattr(inner, "fp32_partitioned_groups_flat", None)
        tensors = list(groups) if groups else [p for p in model.parameters() if p.requires_grad]
        out, left = [], self.sample
        for t in tensors:
            if left <= 0:
                break
            flat = t.detach().reshape(-1)[:left]
            out.append(flat.float().cpu().clone())
            left -= flat.numel()
        return out

    def on_train_begin(self, args, state, control, model=None, optimizer=None, **kwargs):
        self.before = self._owned(model, optimizer) if model is not None else []

    def on_train_end(self, args, state, control, model=None, optimizer=None, **kwargs):
        import torch

        if not self.before or model is None:
            return
        after = self._owned(model, optimizer)
        delta = torch.cat([(a - b).abs() for a, b in zip(after, self.before)])
        moved = delta[delta > 0]
        self.result = {
            "elements_sampled": int(delta.numel()),
            "share": round(float(moved.numel() / max(1, delta.numel())), 4),
            "median_change_over_lr": round(float(moved.median() / args.learning_rate), 4) if moved.numel() and args.learning_rate else 0.0,
        }


class FilterCheckpoint(TrainerCallback):
    """Writes the online filter's page order (olmocr_rl/train/filtering.py `OnlineFilter.state`)
    into each checkpoint folder (rank 0), beside trl's own state, as `online_filter.json`."""

    def __init__(self, online: Any) -> None:
        self.online = online

    def on_save(self, args, state, control, **kwargs):
        from olmocr_rl.atomic import write_text
        from olmocr_rl.train.filtering import STATE_FILE

        folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
        if state.is_world_process_zero and folder.is_dir():
            write_text(folder / STATE_FILE, json.dumps(self.online.state(), indent=2) + "\n")
