"""What `olmocr-rl train --options` prints: every config key (olmocr_rl/train/config.py
`options_table`), then the built-in rewards (olmocr_rl/reward_registry.py)."""

from __future__ import annotations


def print_options() -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from olmocr_rl.reward_registry import REWARDS
    from olmocr_rl.train.config import options_table

    table = Table(title="training config keys (YAML/TOML --config, KEY=VALUE, --set)", title_justify="left")
    table.add_column("key", no_wrap=True)
    for col in ("type", "default", "meaning"):
        table.add_column(col, overflow="fold")
    for row in options_table():
        table.add_row(*(escape(c) for c in row))  # help texts hold [brackets], not markup
    rewards = Table(title="rewards (rewards.NAME=WEIGHT; or package.module:function, a reward of your own)", title_justify="left")
    rewards.add_column("reward", no_wrap=True)
    for col in ("what it pays", "page's tests", "needs a reference"):
        rewards.add_column(col, overflow="fold")
    for name, r in REWARDS.items():
        rewards.add_row(escape(name), escape(r.about), r.average or "", "yes" if r.needs_reference else "")
    console = Console()
    console.print(table)
    console.print(rewards)
