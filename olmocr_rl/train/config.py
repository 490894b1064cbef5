"""The training configuration: one typed dataclass, loaded from YAML/TOML plus `key=value`
overrides, and ONE builder that turns it into trl's `GRPOConfig` for the installed trl.

Defaults follow olmOCR 2's GRPO recipe where it is known (28 generations per page, beta 0,
temperature 0.8, bnpo loss with group-scaled rewards, lr 2e-6, 8000-token completions). Unknown
keys are errors naming the key and the closest known ones: a typo must not silently train with
a default.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Union, get_args, get_origin, get_type_hints

REWARD_NAMES = (
    "bench", "bench-macro", "bench-graded", "eos", "front-matter",
    "medoid", "medoid-batch", "edit-distance", "element-count", "rect-tables",
)  # fmt: skip
# Rewards scored against the page's reference output (the `claude_original` column).
NEEDS_REFERENCE = ("front-matter", "edit-distance", "element-count")


def is_user_reward(name: str) -> bool:
    """`package.module:attribute`: a reward function (or class) of the user's own."""
    module, _, attr = name.partition(":")
    return bool(module and attr) and all(part.isidentifier() for part in module.split(".")) and attr.isidentifier()
VLLM_MODES = ("colocate", "server")
FINAL_OUTPUTS = ("eval", "train", "all", "none")
REPORT_TO = ("tensorboard", "wandb", "none")


class ConfigError(ValueError):
    """A configuration problem the user fixes by editing the config or the command line."""


@dataclass
class TrainConfig:
    # --- what to train on, what to train, where to write ---------------------------------
    prepared_dir: str = ""  # the output of `olmocr-rl prepare`
    model: str = ""  # a local path or a hub id of an image-text-to-text model
    output_dir: str = ""
    train_split: str = "train"
    eval_split: str = "eval"  # "" or "none" disables evaluation
    max_train_pages: Optional[int] = None  # keep only the first N pages of the train split
    max_eval_pages: Optional[int] = None

    # --- rewards: name -> weight (see REWARD_NAMES) ----------------------------------------
    rewards: dict = field(default_factory=lambda: {"bench": 1.0})
    reward_threads: Optional[int] = None  # Rust pool size per rank (default: cores / local ranks)

    # --- the GRPO recipe (olmOCR 2) --------------------------------------------------------
    num_generations: int = 28
    num_generations_eval: Optional[int] = 4
    per_device_train_batch_size: int = 1  # counts completions, not pages
    # olmOCR ran 8 with 7 GPUs (7 * 1 * 8 = 56 = 2 pages x 28); 28 divides at any world size.
    gradient_accumulation_steps: int = 28
    steps_per_generation: Optional[int] = None
    per_device_eval_batch_size: int = 4
    num_train_epochs: float = 1.0
    max_steps: int = -1
    learning_rate: float = 2e-6
    lr_scheduler_type: str = "linear"
    warmup_steps: int = 100
    weight_decay: float = 0.0
    max_grad_norm: float = 1.0
    max_completion_length: int = 8000
    max_prompt_tokens: int = 3000  # prompt text + image tokens; checked against the manifest
    temperature: float = 0.8
    top_p: float = 1.0
    beta: float = 0.0
    loss_type: str = "bnpo"
    scale_rewards: str = "group"
    importance_sampling_level: str = "token"
    num_iterations: int = 1
    epsilon: float = 0.2
    mask_truncated_completions: bool = False
    seed: int = 42

    # --- model -----------------------------------------------------------------------------
    dtype: str = "auto"  # auto = bfloat16 with CUDA, float32 without; or float32/bfloat16/float16
    bf16: Optional[bool] = None  # None = auto (True only with CUDA)
    attn_implementation: Optional[str] = None
    trust_remote_code: bool = False
    gradient_checkpointing: bool = True
    max_pixels: Optional[int] = None  # override the processor's image budget (pixels)

    # --- LoRA (peft) -----------------------------------------------------------------------
    lora: bool = False
    lora_r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.05
    lora_target_modules: list = field(default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj"])

    # --- vLLM generation (optional) --------------------------------------------------------
    use_vllm: bool = False
    vllm_mode: str = "colocate"
    vllm_gpu_memory_utilization: float = 0.3
    vllm_tensor_parallel_size: int = 1
    vllm_server_base_url: Optional[str] = None
    vllm_server_host: str = "0.0.0.0"
    vllm_server_port: int = 8000
    vllm_enable_sleep_mode: bool = False
    vllm_max_model_length: Optional[int] = None  # None = max_prompt_tokens + max_completion_length
    # The server `olmocr-rl train --vllm-gpus K` starts on the last K GPUs (trl's `vllm serve` command):
    vllm_data_parallel_size: int = 1  # tensor parallel = K / this
    vllm_server_gpu_memory_utilization: float = 0.9  # the server has its GPUs to itself
    vllm_server_timeout: float = 900.0  # seconds to wait for its health endpoint (a 7B model loads in 1-3 min)
    vllm_server_args: list = field(default_factory=list)  # extra `vllm serve` arguments, as is
    vllm_server_command: Optional[str] = None  # replaces `vllm serve` (e.g. a container wrapper); args appended
    vllm_importance_sampling_correction: bool = True
    vllm_importance_sampling_mode: str = "sequence_mask"
    vllm_importance_sampling_cap: float = 3.0  # trl >= 1.6: vllm_importance_sampling_clip_max

    # --- checkpoints, eval, logging --------------------------------------------------------
    save_steps: int = 25
    save_total_limit: Optional[int] = None
    resume: Optional[str] = None  # "auto" (latest checkpoint in output_dir) or a checkpoint path
    eval_steps: int = 50
    eval_on_start: bool = False
    logging_steps: int = 5
    report_to: list = field(default_factory=lambda: ["tensorboard"])
    run_name: Optional[str] = None
    log_completions: bool = True  # trl's completions table (printed on rank 0) + completions/*.parquet
    num_completions_to_print: int = 2
    write_failing_completions: bool = True  # output_dir/completions/failing_<split>_step<N>.jsonl
    progress: bool = True  # rich progress display on rank 0
    dataloader_num_workers: int = 2

    # --- after training: bench-style candidate files ---------------------------------------
    final_outputs: str = "eval"  # which pages get output_dir/outputs/*.md: eval|train|all|none
    final_output_repeats: int = 1
    final_temperature: float = 0.0  # 0 = greedy
    final_batch_size: int = 8

    # --- anything else: passed to trl.GRPOConfig verbatim (checked against its fields) ------
    trl: dict = field(default_factory=dict)

    # ------------------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def to_json(self, path: str | os.PathLike[str]) -> Path:
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps(self.to_dict(), indent=2, sort_keys=False) + "\n", encoding="utf-8")
        return p

    @classmethod
    def from_dict(cls, data: dict, *, source: str = "config") -> "TrainConfig":
        cfg = cls()
        apply_mapping(cfg, data, source=source)
        return cfg

    @property
    def eval_enabled(self) -> bool:
        return bool(self.eval_split) and self.eval_split.lower() != "none"


def _field_types() -> dict[str, Any]:
    hints = get_type_hints(TrainConfig)
    return {f.name: hints[f.name] for f in dataclasses.fields(TrainConfig)}


def _suggest(key: str, known: list[str]) -> str:
    close = difflib.get_close_matches(key, known, n=3, cutoff=0.6)
    return f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""


def unknown_key_error(key: str, source: str) -> ConfigError:
    known = sorted(f.name for f in dataclasses.fields(TrainConfig))
    return ConfigError(
        f"{source}: unknown key {key!r}{_suggest(key, known)}; "
        "pass trl.GRPOConfig options under 'trl:' (e.g. trl.top_k=50)"
    )


def _coerce(name: str, typ: Any, value: Any, source: str) -> Any:
    """Checks (and mildly converts) one value against the field's annotation."""
    origin = get_origin(typ)
    if origin is Union:
        args = [a for a in get_args(typ) if a is not type(None)]
        if value is None or (isinstance(value, str) and value.lower() in ("none", "null") and args[0] is not str):
            return None
        typ = args[0]
        origin = get_origin(typ)
    if typ is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false", "yes", "no", "1", "0"):
            return value.lower() in ("true", "yes", "1")
    elif typ is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
    elif typ is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str):
            try:
                return float(value)
            except ValueError:
                pass
    elif typ is str:
        if isinstance(value, (str, int, float)) and not isinstance(value, bool):
            return str(value)
    elif typ is list or origin is list:
        if isinstance(value, str):
            return [v.strip() for v in value.split(",") if v.strip()]
        if isinstance(value, (list, tuple)):
            return list(value)
    elif typ is dict or origin is dict:
        if isinstance(value, dict):
            return dict(value)
    else:  # pragma: no cover - every field type is handled above
        return value
    tname = getattr(typ, "__name__", str(typ))
    raise ConfigError(f"{source}: {name} must be {tname}, got {value!r}")


def apply_mapping(cfg: TrainConfig, data: dict, *, source: str) -> None:
    """Sets fields from a (possibly nested: `rewards:`, `trl:`) mapping; unknown keys raise."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping of option names to values, got {type(data).__name__}")
    types = _field_types()
    for key, value in data.items():
        name = str(key).replace("-", "_")
        if name not in types:
            raise unknown_key_error(str(key), source)
        if name in ("rewards", "trl") and isinstance(value, dict):
            value = {str(k): v for k, v in value.items()}
        setattr(cfg, name, _coerce(name, types[name], value, source))


def recipe_path(name: str) -> Path | None:
    """A packaged recipe (olmocr_rl/recipes/NAME.yaml) by name, e.g. `--config olmocr2`."""
    from importlib import resources

    if not name or any(c in name for c in "/\\."):
        return None
    p = Path(str(resources.files("olmocr_rl.recipes").joinpath(f"{name}.yaml")))
    return p if p.is_file() else None


def recipe_names() -> list[str]:
    from importlib import resources

    return sorted(Path(str(f)).stem for f in resources.files("olmocr_rl.recipes").iterdir() if str(f).endswith(".yaml"))


def load_config_file(path: str | os.PathLike[str]) -> dict:
    p = Path(path)
    if not p.is_file() and (packaged := recipe_path(str(path))) is not None:
        p = packaged
    if not p.is_file():
        raise ConfigError(f"{p}: no such config file (packaged recipes: {', '.join(recipe_names())})")
    text = p.read_text(encoding="utf-8")
    suffix = p.suffix.lower()
    if suffix == ".toml":
        try:
            import tomllib
        except ModuleNotFoundError:  # Python 3.10
            import tomli as tomllib  # type: ignore[no-redef]
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise ConfigError(f"{p}: invalid TOML ({e})") from None
    elif suffix in (".yaml", ".yml", ".json"):
        import yaml

        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise ConfigError(f"{p}: invalid YAML ({e})") from None
    else:
        raise ConfigError(f"{p}: config files must end in .yaml, .yml, .toml or .json")
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{p}: the top level must be a mapping of option names to values")
    return data


def parse_override(item: str) -> tuple[str, Any]:
    """`key=value` (value parsed as a YAML scalar/list); `rewards.eos=0.1` and
    `trl.top_k=50` set one entry of those mappings."""
    import yaml

    if "=" not in item:
        raise ConfigError(f"override {item!r}: expected KEY=VALUE (e.g. num_generations=8)")
    key, raw = item.split("=", 1)
    key = key.strip()
    if not key:
        raise ConfigError(f"override {item!r}: empty key")
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError:
        value = raw
    return key, value


def apply_overrides(cfg: TrainConfig, overrides: list[str]) -> None:
    for item in overrides:
        key, value = parse_override(item)
        src = f"override {item!r}"
        if "." in key:
            head, sub = key.split(".", 1)
            head = head.replace("-", "_")
            if head not in ("rewards", "trl"):
                raise unknown_key_error(key, src)
            getattr(cfg, head)[sub] = value
        else:
            apply_mapping(cfg, {key: value}, source=src)


def load_config(
    path: str | os.PathLike[str] | None = None,
    overrides: list[str] | None = None,
    **explicit: Any,
) -> TrainConfig:
    """Defaults ← config file ← `key=value` overrides ← explicit keyword arguments (the CLI's
    own options, None meaning "not given"). Validates the result (`validate`)."""
    cfg = TrainConfig()
    if path is not None:
        apply_mapping(cfg, load_config_file(path), source=str(path))
    apply_overrides(cfg, list(overrides or []))
    given = {k: v for k, v in explicit.items() if v is not None}
    if given:
        apply_mapping(cfg, given, source="command line")
    validate(cfg)
    return cfg


def validate(cfg: TrainConfig) -> None:
    """Value checks that need no torch/trl (the batch arithmetic lives in preflight)."""
    for name in ("prepared_dir", "model", "output_dir"):
        if not getattr(cfg, name):
            raise ConfigError(f"{name} is required")
    for name, weight in cfg.rewards.items():
        if name not in REWARD_NAMES and not is_user_reward(name):
            raise ConfigError(
                f"unknown reward {name!r}{_suggest(name, list(REWARD_NAMES))}; choose from {', '.join(REWARD_NAMES)}, "
                "or name a function of your own as 'package.module:function'"
            )
        if isinstance(weight, bool) or not isinstance(weight, (int, float)):
            raise ConfigError(f"reward {name!r}: the weight must be a number, got {weight!r}")
    if not cfg.rewards:
        raise ConfigError(f"no rewards configured; set e.g. rewards.bench=1.0 (choose from {', '.join(REWARD_NAMES)})")
    if cfg.vllm_mode not in VLLM_MODES:
        raise ConfigError(f"vllm_mode must be one of {', '.join(VLLM_MODES)}, not {cfg.vllm_mode!r}")
    if cfg.final_outputs not in FINAL_OUTPUTS:
        raise ConfigError(f"final_outputs must be one of {', '.join(FINAL_OUTPUTS)}, not {cfg.final_outputs!r}")
    bad = [r for r in cfg.report_to if r not in REPORT_TO]
    if bad:
        raise ConfigError(f"report_to: unknown {bad[0]!r}; choose from {', '.join(REPORT_TO)}")
    if cfg.resume is not None and cfg.resume != "auto" and not Path(cfg.resume).exists():
        raise ConfigError(f"resume: {cfg.resume} does not exist (use 'auto' or a checkpoint-N folder)")
    if cfg.dtype not in ("auto", "float32", "bfloat16", "float16"):
        raise ConfigError(f"dtype must be auto, float32, bfloat16 or float16, not {cfg.dtype!r}")
    if cfg.vllm_data_parallel_size < 1 or cfg.vllm_tensor_parallel_size < 1:
        raise ConfigError("vllm_data_parallel_size and vllm_tensor_parallel_size must be >= 1")
    if cfg.vllm_server_timeout <= 0:
        raise ConfigError(f"vllm_server_timeout must be positive, got {cfg.vllm_server_timeout}")
    if cfg.final_output_repeats < 1 or cfg.final_batch_size < 1:
        raise ConfigError("final_output_repeats and final_batch_size must be >= 1")


# ---------------------------------------------------------------------------------------------
# The builder: TrainConfig -> trl.GRPOConfig
# ---------------------------------------------------------------------------------------------

# Our name -> GRPOConfig name, for fields that take the value as is.
_DIRECT = (
    "num_generations", "num_generations_eval", "per_device_train_batch_size", "gradient_accumulation_steps",
    "steps_per_generation", "per_device_eval_batch_size", "num_train_epochs", "max_steps", "learning_rate",
    "lr_scheduler_type", "warmup_steps", "weight_decay", "max_grad_norm", "max_completion_length", "temperature",
    "top_p", "beta", "loss_type", "scale_rewards", "importance_sampling_level", "num_iterations", "epsilon",
    "mask_truncated_completions", "seed", "gradient_checkpointing", "save_steps", "save_total_limit",
    "logging_steps", "log_completions", "num_completions_to_print", "dataloader_num_workers", "output_dir", "run_name", "eval_on_start",
    "use_vllm",
)
_VLLM = (
    "vllm_mode", "vllm_gpu_memory_utilization", "vllm_tensor_parallel_size", "vllm_server_base_url",
    "vllm_server_host", "vllm_server_port", "vllm_enable_sleep_mode", "vllm_importance_sampling_correction",
    "vllm_importance_sampling_mode", "vllm_server_timeout",
)
# Renames across trl versions: ours -> candidates, newest first.
_RENAMES = {
    "vllm_importance_sampling_cap": ("vllm_importance_sampling_clip_max", "vllm_importance_sampling_cap"),
}


def max_model_length(cfg: TrainConfig) -> int:
    """vLLM's context length: prompt (text + image tokens) plus completion, unless set."""
    return cfg.vllm_max_model_length or cfg.max_prompt_tokens + cfg.max_completion_length


def cuda_available() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def grpo_kwargs(
    cfg: TrainConfig, *, cuda: bool | None = None, has_eval: bool = True, world_size: int | None = None, deepspeed: bool | None = None
) -> dict[str, Any]:
    """The keyword arguments for trl.GRPOConfig (for the installed trl), before construction.
    Raises ConfigError on a `trl:` key the installed GRPOConfig does not have."""
    import trl

    from trl import GRPOConfig

    if cuda is None:
        cuda = cuda_available()
    names = {f.name for f in dataclasses.fields(GRPOConfig)}
    kw: dict[str, Any] = {}

    def put(ours: str, value: Any, *, required: bool = False) -> None:
        for cand in _RENAMES.get(ours, (ours,)):
            if cand in names:
                kw[cand] = value
                return
        if required:
            raise ConfigError(f"{ours}: not supported by the installed trl {trl.__version__} (need trl >= 1.10)")

    for name in _DIRECT:
        put(name, getattr(cfg, name), required=name not in ("num_generations_eval", "steps_per_generation"))
    if cfg.use_vllm:
        for name in _VLLM:
            put(name, getattr(cfg, name), required=True)
        put("vllm_importance_sampling_cap", cfg.vllm_importance_sampling_cap)
        put("vllm_max_model_length", max_model_length(cfg))
    else:
        put("vllm_mode", cfg.vllm_mode)  # trl's default changed across versions: always explicit

    kw["reward_weights"] = [float(w) for w in cfg.rewards.values()]
    kw["remove_unused_columns"] = False  # the rewards read test_ids etc. from the dataset columns
    kw["bf16"] = cuda if cfg.bf16 is None else bool(cfg.bf16)
    if kw["bf16"] and not cuda:
        raise ConfigError("bf16=true needs CUDA (none available); drop it or set bf16=false")
    kw["fp16"] = False
    if world_size is None:
        world_size = int(os.environ.get("WORLD_SIZE", "1"))
    if deepspeed is None:
        deepspeed = os.environ.get("ACCELERATE_USE_DEEPSPEED", "").lower() == "true"  # set by accelerate launch
    if not cuda and world_size > 1:
        # Several CPU ranks. gloo: else accelerate sees 1 process while torch.distributed has N
        # (trainer-notes 1.5). use_cpu: makes accelerate's state MULTI_CPU (else "NO", and its
        # gather silently returns the local slice), but must stay off under DeepSpeed, which
        # accelerate would then skip (trainer-notes 4.6).
        kw["ddp_backend"] = "gloo"
        if not deepspeed:
            kw["use_cpu"] = True
    elif not cuda:
        kw["use_cpu"] = True  # one process: gloo would ask for a process group that does not exist
    if "activation_checkpointing" in names:  # transformers >= 5 renamed it; the old name warns
        kw["activation_checkpointing"] = kw.pop("gradient_checkpointing")
        kw["gradient_checkpointing"] = None
    kw["report_to"] = [r for r in cfg.report_to if r != "none"] or "none"
    kw["save_strategy"] = "steps" if cfg.save_steps > 0 else "no"
    if cfg.save_steps <= 0:
        kw.pop("save_steps", None)
    kw["logging_strategy"] = "steps"
    if cfg.eval_enabled and has_eval and cfg.eval_steps > 0:
        kw["eval_strategy"] = "steps"
        kw["eval_steps"] = cfg.eval_steps
    else:
        kw["eval_strategy"] = "no"
        kw.pop("eval_on_start", None)
    for key, value in cfg.trl.items():
        if key not in names:
            raise ConfigError(
                f"trl.{key}: not a GRPOConfig option in trl {trl.__version__}{_suggest(key, sorted(names))}"
            )
        kw[key] = value
    return kw


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
