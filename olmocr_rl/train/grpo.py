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
from collections.abc import Callable
from pathlib import Path
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


def _model_files(cfg: TrainConfig, *, local: bool) -> tuple[Any, Callable[[], Any]]:
    """(the model's transformers config, a loader of its tokenizer), each a ConfigError naming the
    model when it cannot be read. `local`: from the folder or the Hugging Face cache only (a plan
    downloads nothing beyond what it reads of the model: olmocr_rl/train/shape.py)."""
    from transformers import AutoConfig, AutoTokenizer

    model, kw = str(cfg.model), {"trust_remote_code": cfg.trust_remote_code, **({"local_files_only": True} if local else {})}
    where = " here (each rank reads it from the hub)" if local and not Path(model).is_dir() else ""
    try:
        config = AutoConfig.from_pretrained(model, **kw)
    except (OSError, ValueError) as e:
        raise ConfigError(f"cannot load the config of {model}{where}: {e}") from e

    def tokenizer() -> Any:
        # transformers 5 builds an empty tokenizer (one token) for a folder without tokenizer files:
        # its end token would be a made-up 0.
        try:
            found = AutoTokenizer.from_pretrained(model, **kw)
        except (OSError, ValueError, ImportError, KeyError) as e:
            raise ConfigError(f"cannot load the tokenizer of {model}{where}: {e}") from e
        if len(found) < 2:
            raise ConfigError(f"{model} has no tokenizer files (transformers made an empty tokenizer)")
        return found

    return config, tokenizer


def generation_kwargs(cfg: TrainConfig, *, strict: bool = True) -> tuple[dict[str, Any], list[str]]:
    """(trl.GRPOConfig's `generation_kwargs`, what of it could not be read here): what every
    generation request carries besides trl's own sampling options. Placeholder tokens are never
    sampled, whichever engine generates (olmocr_rl/engines.py: `logit_bias` for vLLM,
    `suppress_tokens` for transformers), their ids from the model's config; with vLLM each request
    switches the loop stop on (`extra_args`, its end token from the model's tokenizer; the
    transformers path stops loops with the trainer's stopping criterion); then trl.generation_kwargs
    set for the run, its own extra_args beside ours. `strict` False (the plan, made before a rank
    reads the model): read from the model folder or the Hugging Face cache only, a part whose source
    cannot be read here left out and named in the second value; a source that says something wrong
    (a tokenizer without an end token) raises either way."""
    from olmocr_rl.engines import transformers_suppression, vllm_loop_stop, vllm_suppression
    from olmocr_rl.loops import rule_from

    suppression: dict[str, Any] = {}
    stop: dict[str, Any] = {}
    missing: list[str] = []
    tokenizer: Callable[[], Any] | None = None
    try:
        config, tokenizer = _model_files(cfg, local=not strict)
        suppression = vllm_suppression(config) if cfg.use_vllm else transformers_suppression(config)
    except ConfigError as e:
        if strict:
            raise
        missing.append(f"{'logit_bias' if cfg.use_vllm else 'suppress_tokens'} (the placeholder token ids, from the model's config: {e})")
    if cfg.use_vllm and (rule := rule_from(cfg)) is not None:
        try:
            if tokenizer is None:
                raise ConfigError("its config could not be read either")
            found = tokenizer()
        except ConfigError as e:
            if strict:
                raise
            missing.append(f"extra_args (the loop stop's switch and end token, from the model's tokenizer: {e})")
        else:
            stop = vllm_loop_stop(rule, found, str(cfg.model))
    own = dict(cfg.trl.get("generation_kwargs") or {})
    if stop and isinstance(own.get("extra_args"), dict):  # trl.generation_kwargs' own extra_args keep theirs beside ours
        stop = {"extra_args": {**own.pop("extra_args"), **stop["extra_args"]}}
    return {**suppression, **stop, **own}, missing


def grpo_kwargs(
    cfg: TrainConfig,
    *,
    cuda: bool | None = None,
    has_eval: bool = True,
    world_size: int | None = None,
    deepspeed: bool | None = None,
    generation: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The keyword arguments for trl.GRPOConfig (for the installed trl), before construction: every
    one the ranks train with (nothing changes the config once built). Raises ConfigError on a `trl:`
    key the installed GRPOConfig does not have. `cuda` None: asked of torch; `generation`: the run's
    `generation_kwargs` (None: read here, leaving out what cannot be read)."""
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
    if generation is None:
        generation = generation_kwargs(cfg, strict=False)[0]
    if generation:
        kw["generation_kwargs"] = generation  # trl.generation_kwargs' own are in it (`generation_kwargs`)
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
    if cfg.progress:
        out["disable_tqdm"] = True  # our rich display (olmocr_rl/train/callbacks.py) replaces the tqdm bar
    if cfg.eval_enabled and has_eval and cfg.eval_steps > 0:
        out["eval_strategy"] = "steps"
        out["eval_steps"] = cfg.eval_steps
    else:
        out["eval_strategy"] = "no"
        kw.pop("eval_on_start", None)
    return out


def build_grpo_config(
    cfg: TrainConfig,
    *,
    cuda: bool | None = None,
    has_eval: bool = True,
    world_size: int | None = None,
    deepspeed: bool | None = None,
    strict: bool = False,
) -> Any:
    """THE builder: TrainConfig -> trl.GRPOConfig, the config a rank trains with as built (the plan
    prints the same arguments: `grpo_kwargs`). trl's own checks (e.g. the divisibility of the
    generation batch) surface as ConfigError with trl's message. `strict` (a rank): the model's
    config and tokenizer must be readable (`generation_kwargs`)."""
    from trl import GRPOConfig

    generation = generation_kwargs(cfg, strict=strict)[0]
    kw = grpo_kwargs(cfg, cuda=cuda, has_eval=has_eval, world_size=world_size, deepspeed=deepspeed, generation=generation)
    try:
        return GRPOConfig(**kw)
    except (ValueError, TypeError) as e:
        raise ConfigError(f"trl rejected the configuration: {e}") from e
