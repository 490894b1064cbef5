"""The packaged olmOCR 2 recipe (`--config olmocr2`): it loads, every value names its source, and
its batch arithmetic works on upstream's 7 training GPUs."""

from __future__ import annotations

import re

import pytest

from olmocr_rl.recipes import recipe_names, recipe_path
from olmocr_rl.train.config import ConfigError, load_config
from olmocr_rl.train.preflight import generation_batch


def test_olmocr2_recipe_values():
    cfg = load_config("olmocr2", prepared_dir="p", model="m", output_dir="o")
    assert cfg.rewards == {"bench": 1.0, "front-matter": 1.0, "eos": 1.0}
    assert (cfg.num_generations, cfg.gradient_accumulation_steps, cfg.per_device_train_batch_size) == (28, 28, 1)
    assert (cfg.learning_rate, cfg.beta, cfg.temperature, cfg.loss_type, cfg.scale_rewards) == (2e-6, 0.01, 0.8, "bnpo", "group")
    assert (cfg.importance_sampling_level, cfg.seed, cfg.max_completion_length) == ("token", 1, 8000)
    assert (cfg.use_vllm, cfg.vllm_mode, cfg.vllm_importance_sampling_mode, cfg.vllm_importance_sampling_cap) == (
        True,
        "server",
        "sequence_mask",
        3.0,
    )
    assert cfg.vllm_max_model_length == 16384 and cfg.bf16 is True
    # 7 training GPUs x 1 x 28 = 196 completions = 7 pages x 28 generations per step.
    assert generation_batch(cfg, 7) == 196 and generation_batch(cfg, 7) % cfg.num_generations == 0
    # The sequence-level seeds: one override.
    assert load_config("olmocr2", ["importance_sampling_level=sequence", "seed=2"], prepared_dir="p", model="m", output_dir="o").seed == 2


def test_every_recipe_value_names_its_source():
    """Each value's line says where it comes from ([paper], [readme], [script], [launch]) or that
    it is ours; a comment block may carry it for the line that follows."""
    lines = recipe_path("olmocr2").read_text().splitlines()
    for n, line in enumerate(lines):
        m = re.match(r"^\s*([a-z_-]+):\s*([^#\s][^#]*)?(#.*)?$", line)
        if not m or m.group(2) is None:
            continue  # a comment, or a mapping header
        comment, k = m.group(3) or "", n - 1
        while not m.group(3) and k >= 0 and lines[k].lstrip().startswith("#"):  # the comment block just above
            comment, k = lines[k] + comment, k - 1
        assert re.search(r"\[(paper|readme|script|launch)\]|ours:", comment), f"olmocr2.yaml:{n + 1} cites no source: {line}"


def test_recipe_lookup():
    assert "olmocr2" in recipe_names()
    assert recipe_path("olmocr2") is not None and recipe_path("../olmocr2") is None and recipe_path("olmocr3") is None
    with pytest.raises(ConfigError, match=r"olmocr3: no such config file \(packaged recipes: olmocr2\)"):
        load_config("olmocr3", prepared_dir="p", model="m", output_dir="o")
