"""A config typo is refused before trl (and torch) is imported (olmocr_rl/train/keys.py), with the
message the full check gives; trl's keys are read from its sources without importing it, and that
read equals the imported GRPOConfig's fields."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
from clirun import invoke
from conftest import need

need("trl")

TYPOS = [
    ([], ["temprature=0.9"]),  # ours, flat
    ([], ["top_kk=50"]),  # trl's, flat
    ([], ["trl.top_kk=50"]),  # under trl
    ([], ["lora.r=8"]),  # a dotted key with no such head
    (["temprature: 0.9\n"], []),  # in a config file
    (["trl:\n  top_kk: 50\n"], []),
    ([], ["rewards.non-emty=1"]),  # a reward name
    (["rewards:\n  benchh: 1\n"], []),
]


def test_the_source_read_equals_the_imported_grpo_config():
    from olmocr_rl.train.keys import trl_field_names
    from olmocr_rl.train.schema import trl_fields

    assert trl_field_names() == frozenset(trl_fields())


def test_the_source_read_types_equal_the_imported_grpo_configs():
    """The annotations read as source (the early type check's) are trl's own; only those naming
    another class (an enum: lr_scheduler_type, the strategies) are left to the full check."""
    from olmocr_rl.train.keys import trl_field_types
    from olmocr_rl.train.schema import trl_fields

    types = trl_field_types()
    assert {name: typ for name, typ in types.items()} == {name: trl_fields()[name][0] for name in types}
    assert "learning_rate" in types and "num_generations" in types and len(types) >= 0.9 * len(trl_fields()), sorted(
        set(trl_fields()) - set(types)
    )


@pytest.mark.parametrize("lines, overrides", TYPOS)
def test_a_typo_is_refused_early_with_the_full_checks_message(tmp_path, lines, overrides):
    from olmocr_rl.errors import ConfigError
    from olmocr_rl.train.config import load_config
    from olmocr_rl.train.keys import check_keys

    config = None
    if lines:
        config = str(tmp_path / "c.yaml")
        (tmp_path / "c.yaml").write_text("".join(lines))
    with pytest.raises(ConfigError) as early:
        check_keys(config, overrides)
    with pytest.raises(ConfigError) as full:
        load_config(config, overrides, prepared_dir="p", model="m", output_dir="o")
    assert str(early.value) == str(full.value)


def test_valid_keys_pass_and_the_model_set_is_returned(tmp_path):
    from olmocr_rl.train.keys import check_keys

    (tmp_path / "c.yaml").write_text("model: a/b\ntemperature: 1.0\ntrl:\n  top_k: 5\nrewards:\n  bench: 1\n")
    assert check_keys(str(tmp_path / "c.yaml"), ["top_k=50", "trl.min_p=0.1", "rewards.eos=0.1", "max-steps=3"]) == "a/b"
    assert check_keys(str(tmp_path / "c.yaml"), ["model=./m"]) == "./m"
    assert check_keys(None, []) is None


def test_the_command_refuses_a_typo_without_importing_trl_or_torch(prepared, tiny_model):
    """The whole command line, in a fresh process: the error line, and neither trl nor torch was
    imported to give it."""
    code = ("import sys; from olmocr_rl.cli import main; code = main(sys.argv[1:]); "
            "print('imported:', [m for m in ('trl', 'torch', 'transformers') if m in sys.modules]); sys.exit(code)")  # fmt: skip
    start = time.monotonic()
    res = subprocess.run([sys.executable, "-c", code, "train", str(prepared), "--model", str(tiny_model), "-o", "run", "temprature=0.9",
                          "--dry-run"], capture_output=True, text=True, timeout=120)  # fmt: skip
    took = time.monotonic() - start
    assert res.returncode == 1 and "unknown key 'temprature' (did you mean 'temperature'" in res.stderr, res.stderr
    assert "imported: []" in res.stdout, res.stdout
    print(f"config typo answered in {took:.2f} s")
    res = invoke(["curate", prepared, "--model", tiny_model, "temprature=0.9", "-q"])
    assert res.exit_code == 1 and "unknown key 'temprature'" in res.stderr
