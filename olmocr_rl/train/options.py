"""What `olmocr-rl train --options` prints: every config key (olmocr_rl/train/config.py
`options_table`), then the built-in rewards (olmocr_rl/reward_registry.py). A list, not a table:
each key on its own line with its type and default, its meaning wrapped below it, readable at any
width and in a pipe (a table squeezed the meanings into a 10-character column at 80 columns)."""

from __future__ import annotations


def print_options() -> None:
    import shutil
    import textwrap

    from olmocr_rl.reward_registry import REWARDS
    from olmocr_rl.train.config import options_table

    width = max(40, shutil.get_terminal_size().columns)

    def wrap(text: str, indent: str) -> list[str]:
        return textwrap.wrap(text, width, initial_indent=indent, subsequent_indent="    ", break_on_hyphens=False)

    lines = [*wrap("training config keys (YAML/TOML --config, KEY=VALUE, --set), as key (type) = default:", ""), ""]
    for key, kind, default, meaning in options_table():
        lines += wrap(f"{key} ({kind}) = {default}", "") + (wrap(meaning, "    ") or [""])
    lines += ["", *wrap("rewards (rewards.NAME=WEIGHT; or package.module:function, a reward of your own):", ""), ""]
    for name, r in REWARDS.items():
        how = ", ".join(
            x
            for x in (f"{r.average} average of the page's tests" if r.average else "", "needs a reference" if r.needs_reference else "")
            if x
        )
        lines += wrap(f"{name}{f' ({how})' if how else ''}", "") + wrap(r.about, "    ")
    print("\n".join(lines))
