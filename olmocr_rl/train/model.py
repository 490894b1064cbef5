"""The policy a run trains: the model loaded in its training dtype (float32 master weights unless
DeepSpeed or LoRA keeps them), LoRA's adapter config, and the ZeRO-3 loading check."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

from olmocr_rl.errors import ConfigError
from olmocr_rl.train.config import TrainConfig


def training_dtype(cfg: TrainConfig, *, bf16: bool, deepspeed: bool) -> Any:
    """The dtype the policy is loaded in for training. Weights an optimizer updates must be float32
    (the "master" copy): AdamW at olmOCR 2's lr 2e-6 moves a weight by about 2e-6 a step, which a
    bfloat16 weight of magnitude 0.01-0.1 (spacing 6e-5 to 5e-4) rounds away (a CPU probe: 3.8 % of
    bf16 weights changed in 10 steps, 99.99 % with a float32 copy). So `auto` loads:
    float32 for full training without DeepSpeed (bf16 runs as autocast: the Trainer's bf16=true);
    bfloat16 under DeepSpeed with bf16 (its optimizer keeps float32 partitions of every weight) and
    for LoRA's frozen base (peft makes the adapters float32). An explicit half dtype for weights
    that train without DeepSpeed is refused by pre-flight (`precision_problem`)."""
    import torch

    if cfg.dtype != "auto":
        return getattr(torch, cfg.dtype)
    half = bf16 and (deepspeed or cfg.lora)
    return torch.bfloat16 if half else torch.float32


def load_model(cfg: TrainConfig, *, bf16: bool, deepspeed: bool, path: str | None = None) -> Any:
    """The policy: cfg.model, or `path` (a full-weight checkpoint to resume from), in the dtype
    `training_dtype` chooses. Under ZeRO-3 call it after the trainer's config exists (its
    DeepSpeed plugin then makes from_pretrained load each rank's partition only)."""
    from transformers import AutoModelForImageTextToText

    from olmocr_rl.families import config_problem, trained_families
    from olmocr_rl.model_ref import cached_folder

    # The command line's family check (olmocr_rl/model_ref.py `resolve_model`), again where a rank or
    # a library caller loads: a family the trainer does not take is one line, not a crash inside trl.
    name = str(path or cfg.model)
    folder = Path(name).expanduser() if Path(name).expanduser().is_dir() else cached_folder(name)
    if folder is not None and (why := config_problem(folder, name, "model")) is not None:
        raise ConfigError(why)
    kwargs: dict[str, Any] = {"dtype": training_dtype(cfg, bf16=bf16, deepspeed=deepspeed), "trust_remote_code": cfg.trust_remote_code}
    if cfg.attn_implementation:
        kwargs["attn_implementation"] = cfg.attn_implementation
    try:
        return AutoModelForImageTextToText.from_pretrained(path or cfg.model, **kwargs)
    except ValueError as e:
        if "Unrecognized configuration class" in str(e):
            raise ConfigError(
                f"{path or cfg.model} is not an image-text-to-text model transformers knows ({e.args[0].splitlines()[0]}); "
                f"olmocr-rl trains {trained_families()} models"
            ) from e
        raise


def lora_config(cfg: TrainConfig) -> Any:
    if not cfg.lora:
        return None
    from peft import LoraConfig

    return LoraConfig(
        r=cfg.lora_r,
        lora_alpha=cfg.lora_alpha,
        lora_dropout=cfg.lora_dropout,
        target_modules=list(cfg.lora_target_modules),
        task_type="CAUSAL_LM",
    )


def zero3_partitioned(model: Any) -> bool | None:
    """Under ZeRO-3: whether the model was loaded partitioned (its parameters carry DeepSpeed's
    ids); a whole model per rank is warned about. None when ZeRO-3 is off."""
    from transformers.integrations import is_deepspeed_zero3_enabled

    if not is_deepspeed_zero3_enabled():
        return None
    partitioned = all(hasattr(p, "ds_id") for p in model.parameters())
    if not partitioned:
        warnings.warn("ZeRO-3: the model was loaded whole on this rank, not partitioned", stacklevel=2)
    # transformers 5's ZeRO-3 loading path keeps every checkpoint-key conversion it tried, where the
    # regular path keeps those that matched; save_pretrained reverses them all and writes keys such
    # as `model.model.embed_tokens.weight` for Qwen2.5-VL, which transformers 4.x and vLLM cannot
    # load. Keep the used ones, as the regular path does (the saved keys are tested equal to the base
    # model's: tests/test_train_distributed.py).
    conversions = getattr(model, "_weight_conversions", None)
    if conversions:
        model._weight_conversions = [c for c in conversions if not hasattr(c, "was_used") or c.was_used()]
    return partitioned
