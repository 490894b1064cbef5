"""What `olmocr-rl train --options` prints: every config key (`options_table`, from
olmocr_rl/train/config.py's fields and the installed trl's), then the built-in rewards (olmocr_rl/reward_registry.py). A list, not a table:
each key on its own line with its type and default, its meaning wrapped below it, readable at any
width and in a pipe (a table squeezed the meanings into a 10-character column at 80 columns)."""

from __future__ import annotations

import dataclasses
import json


def print_options() -> None:
    import shutil
    import textwrap

    from olmocr_rl.reward_registry import REWARDS

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


def options_table() -> list[tuple[str, str, str, str]]:
    """(key, type, default, help) of every option, for `olmocr-rl train --options`: ours, then
    every trl GRPOConfig option with its default here (olmOCR 2's marked)."""
    from typing import get_type_hints

    from olmocr_rl.train.config import GRPO_OVERRIDES, OWN, TrainConfig
    from olmocr_rl.train.schema import trl_fields, type_name

    hints, own = get_type_hints(TrainConfig), {f.name for f in OWN}
    rows = []
    for f in OWN:
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default  # type: ignore[misc]
        rows.append((f.name, type_name(hints[f.name]), json.dumps(default), f.metadata.get("help", "")))
    for name, (typ, default, help_) in sorted(trl_fields().items()):
        if name in own:
            continue
        mark = "(olmOCR 2; trl: %s) " % json.dumps(default, default=str) if name in GRPO_OVERRIDES else ""
        shown = GRPO_OVERRIDES.get(name, default)
        rows.append((name, type_name(typ), json.dumps(shown, default=str), mark + "trl: " + " ".join(help_.split())[:200]))
    return rows
