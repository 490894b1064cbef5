"""A page's image tokens, computed once for the model that reads it (olmocr_rl/image_tokens.py), equal
what transformers' own image processor makes of the page: for Qwen2-VL, Qwen2.5-VL and Qwen3-VL
processor configs (the layouts their hub files and transformers 5's save use), on pages of several
sizes, without and with a run's max_pixels (set as the run sets it: modeling.set_max_pixels). The
golden counts come from transformers (image_grid_thw of each processed page), never from our code;
this file also runs at transformers' floor (make test-lower).

The configs are the image-processor files of the three families' 7-8B checkpoints as published on
the hub (Qwen2-VL-7B-Instruct, Qwen2.5-VL-7B-Instruct: top-level min/max_pixels, 14-pixel patches;
Qwen3-VL-8B-Instruct: size.shortest_edge/longest_edge, 16-pixel patches), and a processor_config.json
as transformers 5 writes it (the nested image_processor of the tiny Qwen3-VL)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import need

need("torchvision")
transformers = need("transformers")

from olmocr_rl.image_tokens import QWEN2_5_VL, ImageBudget, UnknownProcessor, budget_from_config, folder_budget, row_tokens, smart_resize

CLIP = {"image_mean": [0.48145466, 0.4578275, 0.40821073], "image_std": [0.26862954, 0.26130258, 0.27577711]}
CONFIGS = {
    "Qwen2-VL": {"min_pixels": 3136, "max_pixels": 12845056, "patch_size": 14, "temporal_patch_size": 2, "merge_size": 2, **CLIP,
                 "image_processor_type": "Qwen2VLImageProcessor", "processor_class": "Qwen2VLProcessor"},
    "Qwen2.5-VL": {"min_pixels": 3136, "max_pixels": 12845056, "patch_size": 14, "temporal_patch_size": 2, "merge_size": 2, **CLIP,
                   "image_processor_type": "Qwen2VLImageProcessor", "processor_class": "Qwen2_5_VLProcessor"},
    "Qwen3-VL": {"size": {"longest_edge": 16777216, "shortest_edge": 65536}, "patch_size": 16, "temporal_patch_size": 2,
                 "merge_size": 2, "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5],
                 "processor_class": "Qwen3VLProcessor", "image_processor_type": "Qwen2VLImageProcessorFast"},
}  # fmt: skip
# Pages as prepare renders them (longest side 1288: letter, A4, landscape), smaller and larger
# renders, sides that are no multiple of a token, one below min_pixels and one far above max_pixels.
PAGES = [(996, 1288), (911, 1288), (1288, 996), (1288, 1288), (1001, 1289), (1654, 2339), (2550, 3300), (224, 290), (60, 41),
         (3100, 4300), (3000, 30)]  # fmt: skip
MAX_PIXELS = [None, 1_003_520, 500_000]  # the processor's own; Qwen's class default (28 x 28 x 1280); one no token divides


def real_tokens(processor, width: int, height: int) -> tuple[int, tuple[int, int]]:
    """(image tokens, pixel_values shape) transformers' processor makes of a width x height page."""
    from PIL import Image

    out = processor(images=[Image.new("RGB", (width, height), "white")], return_tensors="pt")
    t, h, w = (int(x) for x in out["image_grid_thw"][0])
    return t * h * w // processor.merge_size**2, tuple(out["pixel_values"].shape)


def folder_with(tmp_path: Path, name: str, conf: dict, file: str = "preprocessor_config.json") -> Path:
    folder = tmp_path / name.replace(".", "_")
    folder.mkdir()
    data = {"image_processor": conf, "processor_class": conf.get("processor_class")} if file == "processor_config.json" else conf
    (folder / file).write_text(json.dumps(data))
    return folder


@pytest.mark.parametrize("family", list(CONFIGS))
@pytest.mark.parametrize("max_pixels", MAX_PIXELS)
def test_image_tokens_are_the_real_processors(family, max_pixels, tmp_path):
    from transformers import AutoImageProcessor

    from olmocr_rl.modeling import set_max_pixels

    folder = folder_with(tmp_path, family, CONFIGS[family])
    processor = AutoImageProcessor.from_pretrained(str(folder))
    if max_pixels is not None:
        set_max_pixels(processor, max_pixels)  # as load_processor does for a run's max_pixels
    ours = folder_budget(folder).with_max_pixels(max_pixels)
    patch_values = 3 * processor.temporal_patch_size * processor.patch_size**2
    for width, height in PAGES:
        if max(width, height) / min(width, height) > 200:
            continue  # transformers refuses such a page
        tokens, pixels = real_tokens(processor, width, height)
        assert ours.tokens(width, height) == tokens, (family, max_pixels, width, height)
        # trl keeps these pixel_values on the GPU (olmocr_rl/train/memory.py): one row per patch.
        assert pixels == (ours.patches(width, height), patch_values)


def test_a_transformers_5_processor_config_and_the_full_processor(tiny_qwen3, tmp_path):
    """The layout transformers 5 saves (processor_config.json, the image processor nested), read
    through the full AutoProcessor and counted as the image tokens in the prompt's input ids."""
    from PIL import Image

    from olmocr_rl.modeling import load_processor

    budget = folder_budget(tiny_qwen3)
    assert (budget.patch_size, budget.merge_size, budget.source) == (16, 2, "processor_config.json")
    for max_pixels in (None, 32 * 32 * 9):
        processor = load_processor(str(tiny_qwen3), max_pixels=max_pixels)
        text = processor.apply_chat_template([{"role": "user", "content": [{"type": "image"}]}], tokenize=False)
        for width, height in [(140, 108), (300, 61), (33, 400)]:
            ids = processor(text=[text], images=[Image.new("RGB", (width, height))])["input_ids"][0]
            assert list(ids).count(processor.image_token_id) == budget.with_max_pixels(max_pixels).tokens(width, height)


def test_the_rows_tokens_come_from_the_page_size(tmp_path):
    """A prepared row's tokens follow the model and max_pixels; a row without a size keeps what an
    older prepare baked in."""
    qwen3 = folder_budget(folder_with(tmp_path, "q3", CONFIGS["Qwen3-VL"]))
    row = {"width": 996, "height": 1288, "image_tokens": 1}
    assert row_tokens(row, QWEN2_5_VL) == 46 * 36 and row_tokens(row, qwen3) == 40 * 31
    assert row_tokens(row, qwen3.with_max_pixels(200_000)) < 40 * 31
    assert row_tokens({"image_tokens": 1234}, qwen3) == 1234


def test_what_is_not_a_qwen_processor_is_said():
    with pytest.raises(UnknownProcessor, match="SiglipImageProcessor"):
        budget_from_config({"image_processor_type": "SiglipImageProcessor"}, "preprocessor_config.json")
    with pytest.raises(UnknownProcessor, match="positive integers"):
        budget_from_config({"patch_size": 0}, "preprocessor_config.json")
    # No keys: transformers' class defaults.
    assert budget_from_config({}, "x") == ImageBudget(14, 2, 3136, 1_003_520, "x")


def test_smart_resize_rounds_as_python_does():
    # Hand-computed with transformers' formula (round half to even, 28 px per token).
    assert smart_resize(1288, 996, 28, 3136, 12845056) == (1288, 1008)
    assert smart_resize(1288, 994, 28, 3136, 12845056) == (1288, 1008)  # 994/28 = 35.5 rounds to 36 (even)
    assert smart_resize(1288, 938, 28, 3136, 12845056) == (1288, 952)  # 938/28 = 33.5 rounds to 34 (even)
    assert smart_resize(1288, 966, 28, 3136, 12845056) == (1288, 952)  # 966/28 = 34.5 rounds to 34 (even)
    assert smart_resize(5600, 5600, 28, 3136, 12845056) == (3584, 3584)  # over max_pixels: beta = 1.5625
    assert smart_resize(10, 10, 28, 3136, 12845056) == (56, 56)  # under min_pixels
    assert smart_resize(2000, 10, 28, 3136, 12845056) == (812, 28)  # aspect over 200: estimated (rounds to 0 wide, scaled up)
    with pytest.raises(ValueError):
        smart_resize(0, 10, 28, 3136, 12845056)


@pytest.fixture(scope="module")
def tiny_qwen3(tmp_path_factory) -> Path:
    from training import build_model

    return build_model(tmp_path_factory.mktemp("q3") / "qwen3_vl", "qwen3_vl")
