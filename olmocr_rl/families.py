"""The model families olmocr-rl trains, and why a model's config.json rules it out: read as plain
JSON, nothing imported (model_ref.py asks before anything loads; train/model.py again when a rank
loads). One table, TRAINED_FAMILIES, that every message and check reads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

# The model families olmocr-rl plans and trains, by config.json's `model_type`: the Qwen-VL ones. Their
# processors' image tokens (olmocr_rl/image_tokens.py), `max_pixels` (`set_max_pixels`), vLLM's pixel
# bounds (olmocr_rl/engines.py) and the memory plan's vision terms (olmocr_rl/train/memory.py: patches
# merged into tokens) are what the project computes, and its training tests run them
# (bench_fixtures/tiny_vlm.py). Another vision-language family (Gemma 3, LLaVA, Idefics3 / SmolVLM /
# granite-docling, ...) is refused before anything loads rather than planned with Qwen's arithmetic.
TRAINED_FAMILIES = {"qwen2_vl": "Qwen2-VL", "qwen2_5_vl": "Qwen2.5-VL", "qwen3_vl": "Qwen3-VL", "qwen3_vl_moe": "Qwen3-VL-MoE"}
# config.json keys of a model that reads images (any one of them): a config with none is a text-only model.
_VISION_KEYS = ("vision_config", "vision_tower", "mm_vision_tower", "visual", "image_token_id", "image_token_index", "patch_size")


def trained_families() -> str:
    """The families `train` takes, for a message: "Qwen2-VL, Qwen2.5-VL, Qwen3-VL or Qwen3-VL-MoE"."""
    names = list(TRAINED_FAMILIES.values())
    return f"{', '.join(names[:-1])} or {names[-1]}"


def family_problem(config: dict[str, Any], model: str, what: str = "--model", *, trains: bool = True) -> str | None:
    """Why the model of this config.json (its dict, as read from the file: nothing imported) cannot be
    given to olmocr-rl, in one line: a text-only model (no key of a model that reads images) for any
    command; for `train` (`trains`), a family outside TRAINED_FAMILIES. None when it may be, or when
    the config says too little to tell (no model_type: transformers names the problem when it loads)."""
    from olmocr_rl.paths import shown

    kind = config.get("model_type")
    if not isinstance(kind, str) or kind in TRAINED_FAMILIES:
        return None
    model = shown(model)
    archs = config.get("architectures")
    named = f"{archs[0]}, model_type {kind}" if isinstance(archs, list) and archs and isinstance(archs[0], str) else f"model_type {kind}"
    if not any(k in config for k in _VISION_KEYS):
        wanted = f"olmocr-rl trains {trained_families()} models" if trains else "give a vision-language (image-text-to-text) model"
        return f"{what} {model} is a text-only model ({named}; its config.json has no vision_config): it cannot read a page image; {wanted}"
    if trains:
        return (f"{what} {model} is a vision-language family olmocr-rl does not train ({named}): it plans and trains {trained_families()} "
                "models (the image tokens, max_pixels and memory plan it computes are theirs)")  # fmt: skip
    return None


def config_problem(folder: str | Path, model: str, what: str = "--model", *, trains: bool = True) -> str | None:
    """`family_problem` of a model folder's config.json (read as JSON, in a millisecond); None when it
    has none (a LoRA adapter's folder) or it is not readable JSON (transformers says why when it loads)."""
    import json

    try:
        config = json.loads((Path(folder) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return family_problem(config, model, what, trains=trains) if isinstance(config, dict) else None
