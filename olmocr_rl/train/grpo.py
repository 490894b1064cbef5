"""The bridge to trl: ONE builder that turns a TrainConfig into trl's `GRPOConfig` for the installed
trl (`build_grpo_config`, its keyword arguments `grpo_kwargs` for `--dry-run`).

What GRPOConfig gets is derived from the config's fields (olmocr_rl/train/config.py), not listed
here: every trl option the config states (its vllm_* ones only with use_vllm, where trl validates
them), our `output_dir`, then the arguments whose values we decide (reward weights, precision, the
CPU backend, strategies), then any other trl option set for the run (`trl:`).
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from olmocr_rl.errors import ConfigError
from olmocr_rl.train.config import TRL_STATED, TrainConfig, precision, trl_default
from olmocr_rl.train.schema import suggest, trl_version

# Our fields GRPOConfig takes under another name across trl versions: ours -> candidates, newest first.
_RENAMES = {
    "vllm_importance_sampling_cap": ("vllm_importance_sampling_clip_max", "vllm_importance_sampling_cap"),
}


def max_model_length(cfg: TrainConfig) -> int:
    """vLLM's context length: prompt (text + image tokens) plus completion, unless set."""
    return cfg.vllm_max_model_length or cfg.max_prompt_tokens + cfg.max_completion_length


def _vllm_only(name: str) -> bool:
    """trl options given to GRPOConfig only with use_vllm (trl validates some of them otherwise);
    vllm_mode always (its default changed across trl versions)."""
    return name.startswith("vllm_") and name != "vllm_mode"


def grpo_kwargs(
    cfg: TrainConfig, *, cuda: bool | None = None, has_eval: bool = True, world_size: int | None = None, deepspeed: bool | None = None
) -> dict[str, Any]:
    """The keyword arguments for trl.GRPOConfig (for the installed trl), before construction.
    Raises ConfigError on a `trl:` key the installed GRPOConfig does not have. `cuda` None: asked of torch."""
    from trl import GRPOConfig

    if cuda is None:
        from olmocr_rl.launch.gpus import cuda_available

        cuda = cuda_available()
    names = {f.name for f in dataclasses.fields(GRPOConfig)}
    kw: dict[str, Any] = {}

    def put(ours: str, value: Any, *, default: Any = None) -> None:
        for cand in _RENAMES.get(ours, (ours,)):
            if cand in names:
                kw[cand] = value
                return
        if value != default:  # an option the installed trl lacks, set to something it would need
            raise ConfigError(f"{ours}: not supported by the installed trl {trl_version()} (need trl >= 1.11)")

    put("output_dir", cfg.output_dir)
    for f in TRL_STATED:
        if not _vllm_only(f.name) and f.name != "vllm_mode":
            put(f.name, getattr(cfg, f.name), default=trl_default(f.name))
    if cfg.use_vllm:
        for f in TRL_STATED:
            if _vllm_only(f.name) or f.name == "vllm_mode":
                put(f.name, getattr(cfg, f.name), default=trl_default(f.name))
        put("vllm_importance_sampling_cap", cfg.vllm_importance_sampling_cap, default=cfg.vllm_importance_sampling_cap)
        put("vllm_max_model_length", max_model_length(cfg), default=max_model_length(cfg))
    else:
        put("vllm_mode", cfg.vllm_mode)  # trl's default changed across versions: always explicit
    kw.update(_decided(cfg, names, cuda=cuda, has_eval=has_eval, world_size=world_size, deepspeed=deepspeed, kw=kw))
    for key, value in cfg.trl.items():
        if key not in names:
            raise ConfigError(f"trl.{key}: not a GRPOConfig option in trl {trl_version()}{suggest(key, sorted(names))}")
        kw[key] = value
    return kw


def _decided(
    cfg: TrainConfig, names: set[str], *, cuda: bool, has_eval: bool, world_size: int | None, deepspeed: bool | None, kw: dict
) -> dict[str, Any]:
    """The arguments whose values this project decides (in the order GRPOConfig is given them)."""
    from olmocr_rl.launch.launchers import deepspeed_active

    out: dict[str, Any] = {}
    out["reward_weights"] = [float(w) for w in cfg.rewards.values()]
    out["remove_unused_columns"] = False  # the rewards read test_ids etc. from the dataset columns
    # bf16 autocast (float32 weights, see train/model.py training_dtype); without CUDA only when
    # asked for (CPU autocast: slow, but the same numerics as a GPU run).
    out["bf16"] = precision(cfg, cuda)
    out["fp16"] = False
    world_size = int(os.environ.get("WORLD_SIZE", "1")) if world_size is None else world_size
    deepspeed = deepspeed_active() if deepspeed is None else deepspeed
    if not cuda and world_size > 1:
        # Several CPU ranks. gloo: else accelerate sees 1 process while torch.distributed has N
        # (docs/training.md: without CUDA the ranks use gloo). use_cpu: makes accelerate's state
        # MULTI_CPU (else "NO", and its gather silently returns the local slice), but must stay
        # off under DeepSpeed: with use_cpu set, accelerate skips DeepSpeed altogether.
        out["ddp_backend"] = "gloo"
        if not deepspeed:
            out["use_cpu"] = True
    elif not cuda:
        out["use_cpu"] = True  # one process: gloo would ask for a process group that does not exist
    if "activation_checkpointing" in names:  # transformers >= 5 renamed it; the old name warns
        out["activation_checkpointing"] = kw.pop("gradient_checkpointing")
        out["gradient_checkpointing"] = None
    out["report_to"] = [r for r in cfg.report_to if r != "none"] or "none"
    out["save_strategy"] = "steps" if cfg.save_steps > 0 else "no"
    if cfg.save_steps <= 0:
        kw.pop("save_steps", None)
    out["logging_strategy"] = "steps"
    if cfg.eval_enabled and has_eval and cfg.eval_steps > 0:
        out["eval_strategy"] = "steps"
        out["eval_steps"] = cfg.eval_steps
    else:
        out["eval_strategy"] = "no"
        kw.pop("eval_on_start", None)
    return out


def build_grpo_config(
    cfg: TrainConfig, *, cuda: bool | None = None, has_eval: bool = True, world_size: int | None = None, deepspeed: bool | None = None
) -> Any:
    """THE builder: TrainConfig -> trl.GRPOConfig. trl's own checks (e.g. the divisibility of
    the generation batch) surface as ConfigError with trl's message."""
    from trl import GRPOConfig

    kw = grpo_kwargs(cfg, cuda=cuda, has_eval=has_eval, world_size=world_size, deepspeed=deepspeed)
    try:
        return GRPOConfig(**kw)
    except (ValueError, TypeError) as e:
        raise ConfigError(f"trl rejected the configuration: {e}") from e
