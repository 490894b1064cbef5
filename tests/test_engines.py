"""What every generation engine is told (olmocr_rl/engines.py), and the processor settings they
share: the placeholder tokens, the seed, the pixel budget."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest
from conftest import need

need("transformers")

from olmocr_rl.engines import (
    EngineSettings,
    colocated_llm_kwargs,
    placeholder_token_ids,
    rank_seed,
    transformers_suppression,
    vllm_suppression,
)
from olmocr_rl.errors import ConfigError


def test_placeholders_of_every_qwen_vl_family(tmp_path):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench_fixtures"))
    from tiny_vlm import FAMILIES, _configs

    for family in FAMILIES:
        config, _ = _configs(family)
        assert sorted(placeholder_token_ids(config)) == [259, 260, 261, 262], family
    config, _ = _configs("qwen2_5_vl")
    assert transformers_suppression(config) == {"suppress_tokens": [261, 262, 259, 260]}
    assert vllm_suppression(config) == {"logit_bias": {261: -100.0, 262: -100.0, 259: -100.0, 260: -100.0}}
    assert placeholder_token_ids(types.SimpleNamespace(text_config=types.SimpleNamespace(image_token_id=7))) == [7]
    assert transformers_suppression(types.SimpleNamespace()) == {} and vllm_suppression(types.SimpleNamespace()) == {}


def test_the_colocated_engine_gets_the_runs_seed_bounds_and_eager_mode():
    """What trl's colocated `vllm.LLM` is built with (olmocr_rl/train/trainer.py hands it over while
    trl builds the engine: tests/test_trainer.py): trl's arguments, with the run's seed per group."""
    settings = EngineSettings("m", seed=11, max_pixels=100352, eager=True)
    made = [colocated_llm_kwargs(settings, {"model": "m", "seed": group}) for group in (0, 3)]  # trl's seed: ranks 0-1, ranks 6-7
    assert made[0] == {"model": "m", "seed": 11, "mm_processor_kwargs": {"max_pixels": 100352}, "enforce_eager": True}
    assert made[1]["seed"] == rank_seed(11, 3) != rank_seed(12, 3)  # each run's seed reaches every group
    assert colocated_llm_kwargs(EngineSettings("m", seed=11, eager=False), {"model": "m", "seed": 0}) == {"model": "m", "seed": 11}


def test_max_pixels_reaches_the_processor_and_is_checked(tiny_model, monkeypatch):
    """`max_pixels` shrinks what the processor makes of a page (transformers 5 ignores the attribute
    this project used to set, so the budget silently did nothing), and a processor that ignores
    it is refused."""
    from PIL import Image

    from olmocr_rl import modeling

    page = Image.new("RGB", (600, 800))

    def tokens(processor) -> int:
        grid = processor.image_processor(images=[page], return_tensors="np")["image_grid_thw"][0]
        return int(grid.prod()) // processor.image_processor.merge_size**2

    default = modeling.load_processor(str(tiny_model))
    bounded = modeling.load_processor(str(tiny_model), max_pixels=28 * 28 * 8)
    assert tokens(bounded) <= 8 < tokens(default)

    monkeypatch.setattr(modeling, "set_max_pixels", lambda image_processor, max_pixels: None)  # a processor that ignores it
    with pytest.raises(ConfigError, match=r"max_pixels=6272: the processor of .* ignores it"):
        modeling.load_processor(str(tiny_model), max_pixels=6272)
