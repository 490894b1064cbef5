"""The reward table (olmocr_rl/reward_registry.py) is the one list of built-in rewards: docs/training.md
shows it as it is, and adding a reward is its function plus one entry there. The example of
docs/development.md ("Adding a built-in reward") is applied to a copy of the package, and the copy
validates, pre-flights, lists (`train --options`) and trains a config with the new reward."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import need

from olmocr_rl.reward_registry import REWARDS, RewardContext, bench_names, build_rewards, markdown_table

ROOT = Path(__file__).resolve().parent.parent


def test_docs_show_the_table_as_it_is():
    text = (ROOT / "docs" / "training.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- the reward table:[^\n]*-->\n(.*?)\n<!-- end of the reward table -->", text, re.S)
    assert block is not None, "docs/training.md has no reward table"
    assert block.group(1) == markdown_table(), "docs/training.md's reward table differs from the registry; paste:\n" + markdown_table()


def test_the_table_is_what_the_rest_reads():
    assert bench_names() == ["bench", "bench-macro", "bench-graded"]
    assert [n for n, r in REWARDS.items() if r.needs_reference] == ["front-matter", "edit-distance", "element-count"]
    assert all(r.without_reference for r in REWARDS.values() if r.needs_reference)  # pre-flight's warning says what it pays
    funcs, weights = build_rewards({"rect-tables": 2, "medoid-batch": 1.0}, RewardContext(None))
    assert [f.__name__ for f in funcs] == ["rect_tables", "medoid_batch"] and weights == [2.0, 1.0]


def example_diff() -> str:
    text = (ROOT / "docs" / "development.md").read_text(encoding="utf-8")
    section = text[text.index("## Adding a built-in reward") :]
    return section[section.index("```diff\n") + len("```diff\n") : section.index("\n```", section.index("```diff"))] + "\n"


def test_adding_a_reward_is_its_function_and_one_entry(prepared, tiny_model, tmp_path):
    need("trl")
    import olmocr_rl

    root = tmp_path / "copy"
    shutil.copytree(Path(olmocr_rl.__file__).parent, root / "olmocr_rl", ignore=shutil.ignore_patterns("__pycache__"))
    applied = subprocess.run(
        ["patch", "-p1", "--forward", "--batch", "-d", str(root)], input=example_diff(), capture_output=True, text=True
    )
    assert applied.returncode == 0, applied.stdout + applied.stderr
    env = {**os.environ, "PYTHONPATH": str(root)}

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=600, env=env, cwd=root)

    check = run("-c", "from olmocr_rl.reward_registry import RewardContext, build_rewards; "
                      "(f,), _ = build_rewards({'non-empty': 1.0}, RewardContext(None)); print(f(completions=['text', ' \\n']))")  # fmt: skip
    assert check.returncode == 0 and check.stdout.strip() == "[1.0, 0.0]", check.stderr
    options = run("-m", "olmocr_rl.cli", "train", "--options")
    assert options.returncode == 0 and "non-empty" in options.stdout
    out = tmp_path / "run"
    train = run("-m", "olmocr_rl.cli", "train", str(prepared), "--model", str(tiny_model), "-o", str(out), "--config",
                str(ROOT / "bench_fixtures" / "tiny_grpo.yaml"), "rewards.non-empty=0.5", "max_steps=1", "save_steps=0",
                "eval_split=none", "final_outputs=none", "report_to=[none]", "progress=false")  # fmt: skip
    assert train.returncode == 0, train.stdout[-3000:] + train.stderr[-3000:]
    logged = [json.loads(line) for line in (out / "logs" / "metrics.jsonl").read_text().splitlines()]
    assert any("rewards/non_empty/mean" in r for r in logged)
    unknown = run("-m", "olmocr_rl.cli", "train", str(prepared), "--model", "m", "-o", str(out), "rewards.non-emty=1", "--dry-run")
    assert "did you mean 'non-empty'" in unknown.stderr
