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


class NeedsArguments:
    """A reward class the registry cannot build (it takes an argument)."""

    def __init__(self, scale: float) -> None:
        self.scale = scale


def test_names_of_rewards_and_the_errors_for_wrong_ones():
    """Which names are a user's reward, which rewards score the tests, and every word of the errors
    (mutation survivors of olmocr_rl/reward_registry.py, tools/mutants.toml)."""
    import pytest

    from olmocr_rl.errors import ConfigError
    from olmocr_rl.reward_registry import is_user_reward, load_user_reward, unknown_reward, uses_tests

    assert is_user_reward("pkg.mod:fn") and not is_user_reward("1pkg.mod:fn") and not is_user_reward("pkg.mod:1fn")
    assert not uses_tests(["eos"]) and not uses_tests(["pkg.mod:fn"]) and uses_tests(["eos", "bench-macro"])
    assert unknown_reward("bench") is None and unknown_reward("pkg.mod:fn") is None
    choose = f"; choose from {', '.join(REWARDS)}, or name a function of your own as 'package.module:function'"
    # four names are close to bench-batch: the three closest are offered
    assert (
        str(unknown_reward("bench-batch")) == "unknown reward 'bench-batch' (did you mean 'bench-macro', 'bench', 'medoid-batch'?)" + choose
    )
    assert str(unknown_reward("zzz")) == "unknown reward 'zzz'" + choose
    with pytest.raises(ConfigError) as e:
        load_user_reward("no_such_module_here:fn")
    assert str(e.value) == ("reward 'no_such_module_here:fn': cannot import no_such_module_here (ModuleNotFoundError: No module "
                            "named 'no_such_module_here')")  # fmt: skip
    with pytest.raises(ConfigError) as e:
        load_user_reward("test_reward_registry:NeedsArguments")
    assert str(e.value).startswith("reward 'test_reward_registry:NeedsArguments': NeedsArguments() failed (TypeError: ")
    assert str(e.value).endswith("; a reward class must take no arguments")


NOT_CALLABLE = 3


def only_keywords(**kwargs):
    return []


def any_arguments(*args, **kwargs):
    return []


def test_user_reward_signatures_and_the_context_s_parts():
    """A user's reward that is no function, or cannot take trl's call; an unknown name through
    build_rewards; the context's bench reward with its threads and guard, its suite loaded from a
    path, and each place the eos token is read from (mutation survivors of reward_registry.py)."""
    from types import SimpleNamespace

    import pytest

    from olmocr_rl.errors import ConfigError
    from olmocr_rl.reward_registry import load_user_reward
    from olmocr_rl.suite import BenchSuite

    with pytest.raises(ConfigError) as e:
        load_user_reward("test_reward_registry:NOT_CALLABLE")
    assert str(e.value) == "reward 'test_reward_registry:NOT_CALLABLE': int is not callable"
    with pytest.raises(ConfigError) as e:
        load_user_reward("test_reward_registry:only_keywords")
    assert str(e.value) == ("reward 'test_reward_registry:only_keywords': its signature (**kwargs) cannot take trl's call; "
                            "write it as def reward(prompts, completions, **kwargs) -> list[float]")  # fmt: skip
    assert load_user_reward("test_reward_registry:any_arguments") is any_arguments
    with pytest.raises(ConfigError, match=r"^unknown reward 'bogus'; choose from "):
        build_rewards({"bogus": 1.0}, RewardContext(None))

    tests = ROOT / "bench_fixtures" / "text_tests.jsonl"
    ctx = RewardContext(tests, threads=3, guard="none")  # 3: not what no threads resolve to on these 2 cores
    assert isinstance(ctx.suite(), BenchSuite) and ctx.suite() is ctx.suite()
    reward = ctx.bench("macro")
    assert (reward.suite, reward.average, reward.threads, reward.guard) == (ctx.suite(), "macro", 3, "none")

    def eos(processor=None, model=None):
        return RewardContext(None, processor=processor, model=model).eos_token_ids()

    assert eos(SimpleNamespace(tokenizer=SimpleNamespace(eos_token_id=7))) == [7]
    assert eos(SimpleNamespace(eos_token_id=5)) == [5]  # a tokenizer given as the processor
    config = SimpleNamespace(generation_config=SimpleNamespace(eos_token_id=[9, 4, 9]))
    assert eos(SimpleNamespace(tokenizer=SimpleNamespace()), config) == [4, 9]
    assert eos(SimpleNamespace(tokenizer=SimpleNamespace(eos_token_id=None)), config) == [4, 9]
    message = "the eos reward needs an end-of-sequence token, but neither the tokenizer nor the generation config has one"
    for model in (SimpleNamespace(), SimpleNamespace(generation_config=SimpleNamespace())):
        with pytest.raises(ConfigError) as e:
            eos(SimpleNamespace(), model)
        assert str(e.value) == message


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
