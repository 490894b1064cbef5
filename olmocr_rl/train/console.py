"""What a training run prints: trl's completions table made compact, library noise kept out.

trl prints a sample of each logged step's completions as a rich table whose prompt column holds
the whole chat (the instruction, one word per line in a narrow terminal: 1,272 lines for three
steps of the demo). A `CompletionsTable` takes its place (printed by the trainer's `log`,
olmocr_rl/train/trainer.py): one line per completion with its page (the `page` column the bench
reward logs), the start of the completion on one line, its rewards, advantage and failing tests,
titled with the mode (train or eval); a table identical to the last one it printed (trl logs again
at the end of training) is not printed twice.

Unless `--debug` (OLMOCR_RL_DEBUG): no weight loading/saving progress bars from transformers, and
no DeepSpeed "Setting accelerator to CPU" warning on a machine where torch found no CUDA (the
accelerator is named instead).

What a run says, each line in WIDTH columns (the completions tables keep theirs): `start_lines`, printed by `execute` (olmocr_rl/train/plan.py)
once the plan is built, before any process loads the model: the model, the pages, the steps, the
output folder, where the metrics and the tensorboard files go, the generation engine; then one
`step_lines` block per log (olmocr_rl/train/callbacks.py), the headline metrics abbreviated
(STEP_METRICS; every metric is in logs/metrics.jsonl) and the per-type pass rates on a line of
their own. `--quiet` (olmocr_rl/engines.py QUIET_ENV, in every rank): no bar, no step lines, no
completions tables; the start block and the final lines stay.
"""

from __future__ import annotations

import math
import os
import random
from collections.abc import Sequence
from typing import Any

from olmocr_rl.engines import quiet

COMPLETION_CHARS = 60  # of each completion, on one line
FAILED_CHARS = 24  # of the first failing test's id
WIDTH = 100  # columns of the start block and of every progress line
# A step line's metrics: (logged key, shown as, format). frac_reward_zero_std: trl's share of the
# step's page groups whose rewards are all equal (no advantage, no gradient; `olmocr-rl curate` drops
# such pages); loops/stopped: completions the loop stop ended since the last log (olmocr_rl/loops.py).
STEP_METRICS = (("loss", "loss", ".4g"), ("reward", "reward", ".4f"), ("eval_reward", "reward", ".4f"),
                ("frac_reward_zero_std", "zero-std", ".2f"), ("completions/mean_length", "len", ".1f"),
                ("loops/stopped", "loops", "g"), ("learning_rate", "lr", ".2e"), ("time/step_s", "s/step", ".1f"))  # fmt: skip


def debug() -> bool:
    return os.environ.get("OLMOCR_RL_DEBUG", "").lower() in ("1", "true", "yes")


def one_line(text: Any, limit: int) -> str:
    """`text` on one line (newlines shown as ⏎), cut to `limit` characters with what was left out."""
    s = str(text if text is not None else "").replace("\r\n", "\n").replace("\n", "⏎").replace("\t", " ")
    if len(s) <= limit:
        return s
    return f"{s[:limit]}… (+{len(s) - limit} chars)"


def _completion_text(completion: Any) -> str:
    if isinstance(completion, list):  # conversational: the assistant messages' text
        parts = []
        for message in completion:
            content = message.get("content") if isinstance(message, dict) else message
            if isinstance(content, list):
                content = "".join(c.get("text", "") for c in content if isinstance(c, dict))
            parts.append(str(content))
        return "".join(parts)
    return str(completion)


class CompletionsTable:
    """The compact completions table of one trainer (see the module docstring); it remembers the
    last table it printed."""

    def __init__(self) -> None:
        self.last: Any = None

    def __call__(
        self,
        prompts: Sequence[Any],
        completions: Sequence[Any],
        rewards: dict[str, Sequence[float]],
        advantages: Sequence[float] | None,
        step: int,
        num_samples: int | None = None,
        extra: dict[str, Sequence[Any]] | None = None,
        mode: str | None = None,
    ) -> None:
        """trl's `print_prompt_completions_sample`'s arguments, and the `mode` (train, eval) trl's
        `log` is in (None: the title names none)."""
        from rich.console import Console
        from rich.markup import escape
        from rich.table import Table

        n = len(completions)
        extra = dict(extra or {})
        rows = list(range(n))
        if num_samples is not None and num_samples < n:
            rows = sorted(random.Random(step).sample(rows, num_samples))
        pages = extra.pop("page", None)
        failed = extra.pop("failed_tests", None)
        key = (mode, step, tuple(_completion_text(completions[i]) for i in rows), tuple(rows))
        if self.last == key or quiet():
            return
        self.last = key
        title = f"{mode} completions, step {step}: {len(rows)} of {n}" if mode else f"step {step}: {len(rows)} of {n} completions"
        table = Table(title=title, title_justify="left", expand=False, show_lines=False)
        table.add_column("page", no_wrap=True, min_width=max((len(str(p)) for p in pages or []), default=4))
        table.add_column("completion", no_wrap=True, overflow="ellipsis", max_width=COMPLETION_CHARS + 16)
        for name in rewards:
            table.add_column(name, justify="right", no_wrap=True)
        if advantages is not None:
            table.add_column("advantage", justify="right", no_wrap=True)
        if failed is not None:
            table.add_column("failing tests", no_wrap=True, overflow="ellipsis")
        for column in extra:
            table.add_column(escape(str(column)), no_wrap=True)

        def num(values: Sequence[Any], i: int) -> str:
            try:
                return f"{float(values[i]):.2f}"
            except (TypeError, ValueError, IndexError):
                return "–"

        for i in rows:
            cells = [escape(str(pages[i])) if pages is not None and i < len(pages) else "–"]
            cells.append(escape(one_line(_completion_text(completions[i]), COMPLETION_CHARS)))
            cells += [num(values, i) for values in rewards.values()]
            if advantages is not None:
                cells.append(num(advantages, i))
            if failed is not None:
                ids = [t for t in str(failed[i] if i < len(failed) else "").split(",") if t]
                cells.append(escape(f"{len(ids)}: {one_line(ids[0], FAILED_CHARS)}" + (", …" if len(ids) > 1 else "")) if ids else "0")
            cells += [escape(one_line(values[i] if i < len(values) else "", FAILED_CHARS)) for values in extra.values()]
            table.add_row(*cells)
        live = live_console()
        if live is not None:  # above the progress bar, through its console (else the two run together)
            live.print(table)
        else:
            Console(width=max(140, Console().width), soft_wrap=False).print(table)


def quiet_libraries(cuda: bool) -> None:
    """Library noise off unless debugging (see the module docstring)."""
    if debug():
        return
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    if not cuda:
        os.environ.setdefault("DS_ACCELERATOR", "cpu")


_LIVE: list[Any] = []  # the rich Console of the progress bar on the screen (callbacks.RichProgressCallback), while it is


def live_console() -> Any:
    """The console of the progress bar on the screen, or None: what prints while it is shown prints
    through it, above the bar."""
    return _LIVE[-1] if _LIVE else None


def set_live(console: Any, shown: bool) -> None:
    """`console`'s progress bar is on the screen (`shown`), or no longer."""
    if shown:
        _LIVE.append(console)
    elif console in _LIVE:
        _LIVE.remove(console)


def fit(text: str, width: int = WIDTH) -> str:
    """`text` cut to `width` columns, ending in … when cut."""
    return text if len(text) <= width else text[: width - 1] + "…"


def _shown_path(path: str | os.PathLike[str]) -> str:
    """A path as the user can type it: relative to the working folder when inside it."""
    full = os.path.abspath(path)
    rel = os.path.relpath(full)
    return rel if not rel.startswith("..") and len(rel) < len(full) else full


def _count(n: int, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def _field(label: str, value: str, note: str = "") -> str:
    """`  label: value (note)`, the note left out where the line would pass WIDTH."""
    line = f"  {label + ':':<13}{value}"
    return f"{line} ({note})" if note and len(line) + len(note) + 3 <= WIDTH else line


def start_lines(plan: Any) -> list[str]:
    """What `train` prints before any process loads the model (the module docstring): the plan's
    model, pages, steps, processes, engine, output folder and logs."""
    cfg, inputs = plan.cfg, plan.inputs
    out = _shown_path(cfg.output_dir)
    train = len(inputs.train_rows[: cfg.max_train_pages]) if inputs is not None else 0
    pages = f"{train:,} train"
    if inputs is not None and cfg.max_train_pages is not None and cfg.max_train_pages < len(inputs.train_rows):
        pages += f" (of {len(inputs.train_rows):,}: max_train_pages)"
    if cfg.eval_enabled and inputs is not None:
        pages += f", {len(inputs.eval_rows[: cfg.max_eval_pages]):,} eval"
        pages += f" (evaluated every {cfg.eval_steps} steps and at the end)" if cfg.eval_steps else " (evaluated at the end)"
    else:
        pages += ", no evaluation"
    processes = "this process trains" if not plan.distributed else f"started by {plan.options.launcher}"
    lines = [
        f"train: {cfg.model}",
        _field("pages", pages),
        _field("prepared", _shown_path(cfg.prepared_dir)),
        _field("steps", f"{_count(plan.steps, 'optimizer step')}, {cfg.num_generations} completions a page"),
        *([_field("resume", str(cfg.resume), "the steps include the checkpoint's")] if cfg.resume else []),
        _field("processes", f"{plan.world_size} ({processes})"),
        _field("generation", engine_line(plan)),
        _field("output", out, f"a checkpoint every {cfg.save_steps:g} steps" if cfg.save_steps else ""),
        _field("metrics", os.path.join(out, "logs", "metrics.jsonl"), "every metric of every logged step"),
    ]
    if "tensorboard" in cfg.report_to:
        lines.append(_field("tensorboard", os.path.join(out, "runs"), "tensorboard --logdir it"))
    if "wandb" in cfg.report_to:
        lines.append(_field("wandb", f"run {cfg.run_name}" if cfg.run_name else "a new run (WANDB_PROJECT, run_name)"))
    lines.append("loading the model; " + ("--quiet: no step lines (the metrics go on)" if quiet() else "a line per logged step follows"))
    return lines


def engine_line(plan: Any) -> str:
    """How the run generates its completions, in words."""
    cfg = plan.cfg
    if not cfg.use_vllm:
        return "transformers' generate, in each training process"
    if cfg.vllm_mode == "server":
        where = f" on GPU {','.join(plan.split.server)}" if plan.split is not None else ""
        return f"a vLLM server{where} at {cfg.vllm_server_host}:{cfg.vllm_server_port}"
    return f"vLLM colocated in each training process ({cfg.vllm_gpu_memory_utilization:g} of its GPU)"


def announce(plan: Any) -> None:
    """The start block (`start_lines`), printed by `execute` once the plan is built: on stderr, with
    the step lines that follow it (stdout keeps the command's results)."""
    import sys

    from olmocr_rl.paths import shown

    print("\n".join(map(shown, start_lines(plan))), file=sys.stderr, flush=True)


def _value(v: Any, spec: str) -> str:
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return format(v, spec) if math.isfinite(v) else str(v)
    return str(v)


def step_lines(logs: dict[str, Any], step: int, max_steps: int, width: int = WIDTH) -> list[str]:
    """One log as at most two lines of `width` columns: the step and its headline metrics
    (STEP_METRICS), then the per-type pass rates (`bench/<type>/pass_rate`; eval_ for an evaluation).
    [] for a log with neither (the end-of-training runtime summary)."""
    evaluation = any(k.startswith("eval_") for k in logs)
    head = [f"{short} {_value(logs[key], spec)}" for key, short, spec in STEP_METRICS if key in logs]
    prefix = "eval_bench/" if evaluation else "bench/"
    rates = [f"{k[len(prefix):].removesuffix('/pass_rate')} {_value(v, '.2f')}" for k, v in sorted(logs.items())
             if k.startswith(prefix) and k.endswith("/pass_rate") and "/jsonl/" not in k]  # fmt: skip
    if not head and not rates:
        return []
    lines = [fit(f"{'eval ' if evaluation else ''}step {step}/{max_steps}  " + "  ".join(head), width)]
    if rates:
        lines.append(fit("  pass rates: " + "  ".join(rates), width))
    return lines
