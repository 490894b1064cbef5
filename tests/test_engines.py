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


@pytest.mark.parametrize("max_pixels", [None, 32 * 32 * 9])
def test_the_vllm_context_is_sized_by_the_one_image_token_function(tiny_family, max_pixels):
    """`longest_prompt` (the vLLM engine's context for generate and curate) counts a page's image
    tokens with olmocr_rl/image_tokens.py under the loaded processor's bounds (the run's max_pixels in
    them): equal to the real processor's prompt of every row, for Qwen3-VL's 32-pixel tokens."""
    from PIL import Image

    from olmocr_rl.engines import longest_prompt
    from olmocr_rl.modeling import load_processor
    from olmocr_rl.prompts import IMAGE_FIRST, TEXT_FIRST, row_conversation

    processor = load_processor(str(tiny_family("qwen3_vl")), max_pixels=max_pixels)
    rows = [{"width": w, "height": h, "prompt": p, "prompt_layout": layout}
            for (w, h) in [(140, 108), (33, 400), (300, 300), (61, 62)] for p, layout in [("Read it.", IMAGE_FIRST), ("Transcribe this page, please.", TEXT_FIRST)]]  # fmt: skip

    def real(row: dict) -> int:
        text = processor.apply_chat_template(row_conversation(row), add_generation_prompt=True, tokenize=False)
        return len(processor(text=[text], images=[Image.new("RGB", (row["width"], row["height"]))])["input_ids"][0])

    assert longest_prompt(processor, rows) == max(real(r) for r in rows)
    assert longest_prompt(processor, rows[:2]) == max(real(r) for r in rows[:2])


def test_a_hub_ids_bounds_come_from_its_cached_processor_config(tmp_path, monkeypatch):
    """A hub id's processor bounds reach vLLM both at once (transformers 5.17 drops a `max_pixels`
    given without `min_pixels`): read from the Hugging Face cache as transformers reads a folder's
    (top-level min/max_pixels over size), with the run's max_pixels in place of the processor's."""
    import json

    from huggingface_hub import constants
    from training import QWEN3_VL_PROCESSOR

    from olmocr_rl.engines import pixel_bounds

    snap = tmp_path / "hub" / "models--Qwen--Qwen3-VL-8B-Instruct" / "snapshots" / ("0" * 40)
    snap.mkdir(parents=True)
    (snap / "preprocessor_config.json").write_text(json.dumps(QWEN3_VL_PROCESSOR))
    (snap.parent.parent / "refs").mkdir()
    (snap.parent.parent / "refs" / "main").write_text("0" * 40)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    assert pixel_bounds(None, "Qwen/Qwen3-VL-8B-Instruct") == {"min_pixels": 65536, "max_pixels": 16777216}
    assert pixel_bounds(1_003_520, "Qwen/Qwen3-VL-8B-Instruct") == {"min_pixels": 65536, "max_pixels": 1_003_520}
    assert pixel_bounds(1_003_520, "Qwen/not-cached") == {"max_pixels": 1_003_520}  # offline: nothing else to be had
