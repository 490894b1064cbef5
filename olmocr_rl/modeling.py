"""Loading models and processors, in one place for `train`, `generate` and `curate`: any
image-text-to-text model transformers knows (AutoModelForImageTextToText + AutoProcessor: Qwen2-VL,
Qwen2.5-VL, Qwen3-VL, ...), the processor checked to be multimodal and its pixel budget to take
effect, a trained model (full weights or a LoRA adapter) for generation. The policy a run trains
(its dtype, LoRA) is loaded by olmocr_rl/train/model.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from olmocr_rl.errors import ConfigError


def model_problem(model: str, what: str = "model") -> str | None:
    """Why `model` (a folder, or a hub id) cannot be a model, found without loading anything or the
    network (olmocr_rl/model_ref.py, `local_problem`); None when it may be. A path that is not a
    model folder is named, with the close names beside it, before anything is written."""
    from olmocr_rl.model_ref import local_problem

    return local_problem(model, what)


def inference_dtype(cuda: bool) -> Any:
    """Generation only (final outputs, `olmocr-rl generate`): bfloat16 on CUDA, else float32."""
    import torch

    return torch.bfloat16 if cuda else torch.float32


def load_processor(model: str, *, trust_remote_code: bool = False, max_pixels: int | None = None) -> Any:
    """AutoProcessor, checked to really be multimodal: for an unknown processor class
    transformers silently returns the bare tokenizer, and trl would then train text-only.
    `max_pixels` is set where the installed transformers reads it and checked to take effect (the
    `max_pixels` attribute alone is silently ignored by transformers 5)."""
    from transformers import AutoProcessor
    from transformers.processing_utils import ProcessorMixin

    try:
        processor = AutoProcessor.from_pretrained(model, trust_remote_code=trust_remote_code)
    except (OSError, ImportError, ValueError) as e:
        raise ConfigError(f"cannot load the processor of {model}: {e}") from e
    if not isinstance(processor, ProcessorMixin) or getattr(processor, "image_processor", None) is None:
        raise ConfigError(
            f"{model}: AutoProcessor returned a {type(processor).__name__}, not a multimodal processor with an image "
            "processor, so training would be text-only. Check processor_config.json / preprocessor_config.json in the "
            "model folder, install torchvision (the Qwen-VL processors need it), or pass trust_remote_code=true "
            "for a custom processor."
        )
    if max_pixels is not None:
        set_max_pixels(processor.image_processor, max_pixels)
    if max_pixels is not None and (used := image_pixels(processor.image_processor, 4 * max_pixels)) is not None and used > max_pixels:
        raise ConfigError(
            f"max_pixels={max_pixels}: the processor of {model} ({type(processor.image_processor).__name__}) ignores it "
            f"(an image of {4 * max_pixels} pixels is resized to {used}); set the budget in its preprocessor_config.json"
        )
    return processor


def set_max_pixels(image_processor: Any, max_pixels: int) -> None:
    """The image budget where each transformers version reads it: `size.longest_edge` (a dict in
    4.x, a SizeDict in 5.x, where the `max_pixels` attribute is no longer read) and `max_pixels`."""
    size = getattr(image_processor, "size", None)
    if isinstance(size, dict):
        if "longest_edge" in size:
            size["longest_edge"] = max_pixels
    elif hasattr(size, "longest_edge"):
        size.longest_edge = max_pixels
    if hasattr(image_processor, "max_pixels"):
        image_processor.max_pixels = max_pixels


def image_pixels(image_processor: Any, pixels: int) -> int | None:
    """The pixels a square image of about `pixels` pixels keeps after `image_processor` resizes it
    (Qwen-VL processors: patches x patch size squared), or None when it does not say."""
    patch = getattr(image_processor, "patch_size", None)
    if not isinstance(patch, int):
        return None
    from PIL import Image

    side = max(1, int(pixels**0.5))
    try:
        grid = image_processor(images=[Image.new("RGB", (side, side))], return_tensors="np")["image_grid_thw"][0]
    except (KeyError, TypeError, ValueError):
        return None
    return int(grid[1]) * int(grid[2]) * patch * patch


def load_trained(path: str | Path, *, dtype: Any, trust_remote_code: bool = False) -> Any:
    """A model saved by training: full weights, or a LoRA adapter over its base model."""
    from transformers import AutoModelForImageTextToText

    p = Path(path)
    try:
        if (p / "adapter_config.json").is_file():
            import json

            from peft import PeftModel

            base_name = json.loads((p / "adapter_config.json").read_text())["base_model_name_or_path"]
            base = AutoModelForImageTextToText.from_pretrained(base_name, dtype=dtype, trust_remote_code=trust_remote_code)
            return PeftModel.from_pretrained(base, str(p)).merge_and_unload()
        return AutoModelForImageTextToText.from_pretrained(str(p), dtype=dtype, trust_remote_code=trust_remote_code)
    except (OSError, ValueError) as e:  # transformers refusing the folder: missing or unreadable files, an unknown model
        raise ConfigError(f"cannot load the model {path}: {e}") from e


def model_config(model: str, *, trust_remote_code: bool = False) -> Any:
    """The model's transformers config (AutoConfig), its refusal a ConfigError naming the model."""
    from transformers import AutoConfig

    try:
        return AutoConfig.from_pretrained(model, trust_remote_code=trust_remote_code)
    except (OSError, ValueError) as e:
        raise ConfigError(f"cannot load the model {model}: {e}") from e
