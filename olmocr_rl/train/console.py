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
"""

from __future__ import annotations

import os
import random
from collections.abc import Sequence
from typing import Any

COMPLETION_CHARS = 60  # of each completion, on one line
FAILED_CHARS = 24  # of the first failing test's id


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
        if self.last == key:
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
        Console(width=max(140, Console().width), soft_wrap=False).print(table)


def quiet_libraries(cuda: bool) -> None:
    """Library noise off unless debugging (see the module docstring)."""
    if debug():
        return
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    if not cuda:
        os.environ.setdefault("DS_ACCELERATOR", "cpu")
