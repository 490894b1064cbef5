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
from typing import Any, Literal, Optional, Union, get_args, get_origin, get_type_hints

from olmocr_rl.errors import UserError

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


REPORT_TO = ("tensorboard", "wandb", "none")


def options_table() -> list[tuple[str, str, str, str]]:
    """(key, type, default, help) of every TrainConfig field, for `olmocr-rl train --options`."""
    hints = get_type_hints(TrainConfig)
    rows = []
    for f in dataclasses.fields(TrainConfig):
        typ = hints[f.name]
        if get_origin(typ) is Literal:
            shown = " | ".join(map(str, get_args(typ)))
        elif get_origin(typ) is Union:
            inner = [a for a in get_args(typ) if a is not type(None)][0]
            shown = f"{getattr(inner, '__name__', inner)} or none"
        else:
            shown = getattr(typ, "__name__", str(typ))
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default  # type: ignore[misc]
        rows.append((f.name, shown, json.dumps(default), f.metadata.get("help", "")))
    return rows


class ConfigError(UserError, ValueError):
    """A configuration problem the user fixes by editing the config or the command line."""


def opt(default: Any = None, help: str = "", *, trl: str | None = None, factory: Any = None) -> Any:
    """A TrainConfig field with its help text (read by `olmocr-rl train --options` and the docs);
    `trl`: "direct" when trl.GRPOConfig takes the value under the same name, "vllm" when it does
    so only with use_vllm."""
    meta = {"help": help, "trl": trl}
    if factory is not None:
        return field(default_factory=factory, metadata=meta)
    return field(default=default, metadata=meta)


LossType = Literal["grpo", "bnpo", "dr_grpo", "dapo", "cispo", "sapo", "luspo", "vespo"]
ImportanceSamplingMode = Literal["token_truncate", "token_mask", "sequence_truncate", "sequence_mask"]


@dataclass
class TrainConfig:
    # --- what to train on, what to train, where to write ---------------------------------
    prepared_dir: str = opt("", "the output of `olmocr-rl prepare`")
    model: str = opt("", "a local path or a hub id of an image-text-to-text model")
    output_dir: str = opt("", "checkpoints, logs, outputs", trl="direct")
    train_split: str = opt("train", "the prepared split to train on")
    eval_split: str = opt("eval", 'the prepared split to evaluate on ("" or "none": no evaluation)')
    max_train_pages: Optional[int] = opt(None, "keep only the first N pages of the train split")
    prompt: Optional[str] = opt(None, "the instruction by name: olmocr-rl or olmocr-v4 (olmOCR 2's); none: the prepared folder's")
    max_eval_pages: Optional[int] = opt(
        10, "evaluate on the first N pages of the eval split (none: all; each page costs num_generations_eval completions)"
    )

    # --- rewards -------------------------------------------------------------------------------
    rewards: dict = opt(help="reward name (or package.module:function) -> weight", factory=lambda: {"bench": 1.0})
    reward_threads: Optional[int] = opt(None, "Rust scoring threads per rank (default: cores / local ranks)")
    bench_guard: Literal["short-output", "none"] = opt("short-output", "bench rewards: olmocr PR #462's short-output guard, or none")

    # --- the GRPO recipe (olmOCR 2) --------------------------------------------------------
    num_generations: int = opt(28, "completions sampled per page", trl="direct")
    num_generations_eval: Optional[int] = opt(4, "completions per page when evaluating", trl="direct")
    per_device_train_batch_size: int = opt(1, "completions (not pages) per rank per micro-step", trl="direct")
    # olmOCR ran 8 with 7 GPUs (7 * 1 * 8 = 56 = 2 pages x 28); 28 divides at any world size.
    gradient_accumulation_steps: int = opt(28, "micro-steps per optimizer step", trl="direct")
    steps_per_generation: Optional[int] = opt(None, "micro-steps fed by one generation round (default: accumulation)", trl="direct")
    per_device_eval_batch_size: int = opt(4, "completions per rank per eval step", trl="direct")
    num_train_epochs: float = opt(1.0, "passes over the train split", trl="direct")
    max_steps: int = opt(-1, "optimizer steps (-1: from num_train_epochs)", trl="direct")
    learning_rate: float = opt(2e-6, "peak learning rate", trl="direct")
    lr_scheduler_type: str = opt("linear", "transformers' scheduler name (linear, constant, cosine, ...)", trl="direct")
    warmup_steps: int = opt(100, "steps of linear warm-up", trl="direct")
    weight_decay: float = opt(0.0, "AdamW weight decay", trl="direct")
    max_grad_norm: float = opt(1.0, "gradient clipping norm", trl="direct")
    max_completion_length: int = opt(8000, "tokens per completion at most", trl="direct")
    max_prompt_tokens: int = opt(3000, "prompt text + image tokens at most (checked against the prepared rows)")
    temperature: float = opt(0.8, "sampling temperature", trl="direct")
    top_p: float = opt(1.0, "nucleus sampling", trl="direct")
    beta: float = opt(0.0, "KL coefficient (0: no reference model)", trl="direct")
    loss_type: LossType = opt("bnpo", "trl's loss aggregation", trl="direct")
    scale_rewards: Literal["group", "batch", "none"] = opt("group", "advantage scaling by the reward std", trl="direct")
    importance_sampling_level: Literal["token", "sequence"] = opt("token", "token (GRPO) or sequence (GSPO) ratios", trl="direct")
    num_iterations: int = opt(1, "optimization passes per generation round", trl="direct")
    epsilon: float = opt(0.2, "ratio clipping", trl="direct")
    mask_truncated_completions: bool = opt(False, "leave completions cut by max_completion_length out of the loss", trl="direct")
    seed: int = opt(42, "seed of sampling and shuffling (each rank derives its own)", trl="direct")

    # --- model -----------------------------------------------------------------------------
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = opt(
        "auto", "weights' dtype at load (auto: float32 for trained weights; bfloat16 under DeepSpeed bf16 and for LoRA's frozen base)"
    )
    bf16: Optional[bool] = opt(None, "bf16 autocast over float32 weights (None: with CUDA; true on CPU: CPU autocast)")
    attn_implementation: Optional[str] = opt(None, "transformers' attention implementation (sdpa, flash_attention_2, ...)")
    trust_remote_code: bool = opt(False, "allow the model's own code from the hub")
    gradient_checkpointing: bool = opt(True, "recompute activations in the backward pass", trl="direct")
    max_pixels: Optional[int] = opt(None, "override the processor's image budget (pixels)")

    # --- LoRA (peft) -----------------------------------------------------------------------
    lora: bool = opt(False, "train a LoRA adapter instead of the full model")
    lora_r: int = opt(16, "LoRA rank")
    lora_alpha: int = opt(32, "LoRA scaling")
    lora_dropout: float = opt(0.05, "LoRA dropout")
    lora_target_modules: list = opt(help="modules that get adapters", factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj"])

    # --- vLLM generation (optional) --------------------------------------------------------
    use_vllm: bool = opt(False, "generate with vLLM (colocated, or a server)", trl="direct")
    vllm_mode: Literal["colocate", "server"] = opt("colocate", "vLLM inside each rank, or a server (--vllm-gpus starts one)", trl="vllm")
    vllm_gpu_memory_utilization: float = opt(0.3, "colocated vLLM's share of each GPU", trl="vllm")
    vllm_tensor_parallel_size: int = opt(1, "colocated vLLM's tensor parallel size (divides the world size)", trl="vllm")
    vllm_server_base_url: Optional[str] = opt(None, "a running server's URL (instead of host and port)", trl="vllm")
    vllm_server_host: str = opt("0.0.0.0", "the server's host", trl="vllm")
    vllm_server_port: int = opt(8000, "the server's port", trl="vllm")
    vllm_enable_sleep_mode: bool = opt(False, "colocated vLLM frees its memory during the optimizer step", trl="vllm")
    vllm_max_model_length: Optional[int] = opt(None, "vLLM's context (None: max_prompt_tokens + max_completion_length)")
    vllm_enforce_eager: bool = opt(False, "vLLM without CUDA graphs or torch.compile (starts faster; on CPU, compiling takes minutes)")
    # The server `olmocr-rl train --vllm-gpus K` starts on the last K GPUs (trl's `vllm serve` command):
    vllm_data_parallel_size: int = opt(1, "--vllm-gpus server: data parallel replicas (tensor parallel = K / this)")
    vllm_server_gpu_memory_utilization: float = opt(0.9, "--vllm-gpus server: its share of its GPUs")
    vllm_server_timeout: float = opt(900.0, "seconds to wait for the server's health endpoint", trl="vllm")
    vllm_server_args: list = opt(help="--vllm-gpus server: extra `vllm serve` arguments, as is", factory=list)
    vllm_server_command: Optional[str] = opt(None, "--vllm-gpus server: replaces `vllm serve` (e.g. a container wrapper)")
    vllm_importance_sampling_correction: bool = opt(True, "correct for vLLM's sampling probabilities", trl="vllm")
    vllm_importance_sampling_mode: ImportanceSamplingMode = opt("sequence_mask", "how the correction treats large ratios", trl="vllm")
    vllm_importance_sampling_cap: float = opt(3.0, "the ratio bound (trl >= 1.6: vllm_importance_sampling_clip_max)")

    # --- checkpoints, eval, logging --------------------------------------------------------
    save_steps: int = opt(25, "checkpoint every N steps (0: none)", trl="direct")
    save_total_limit: Optional[int] = opt(None, "keep at most N checkpoints", trl="direct")
    resume: Optional[str] = opt(None, '"auto" (latest checkpoint in output_dir) or a checkpoint folder')
    eval_steps: int = opt(50, "evaluate every N steps (0: only at the end)")
    eval_on_start: bool = opt(False, "evaluate before the first step", trl="direct")
    logging_steps: int = opt(5, "log every N steps", trl="direct")
    report_to: list = opt(help="tensorboard, wandb or none", factory=lambda: ["tensorboard"])
    run_name: Optional[str] = opt(None, "the run's name in the trackers", trl="direct")
    log_completions: bool = opt(True, "trl's completions table and completions/*.parquet", trl="direct")
    num_completions_to_print: int = opt(2, "completions in that table", trl="direct")
    write_failing_completions: bool = opt(True, "completions/failing_<split>.jsonl with the failed tests")
    progress: bool = opt(True, "rich progress display on rank 0")
    dataloader_num_workers: int = opt(2, "data loading processes per rank", trl="direct")

    # --- after training: bench-style candidate files ---------------------------------------
    final_outputs: Literal["eval", "train", "all", "none"] = opt("eval", "pages transcribed into output_dir/outputs/")
    final_output_repeats: int = opt(1, "files per page")
    final_temperature: float = opt(0.0, "0 = greedy")
    final_batch_size: int = opt(8, "pages per generate call")

    # --- anything else: passed to trl.GRPOConfig verbatim (checked against its fields) ------
    trl: dict = opt(help="any other trl.GRPOConfig option, e.g. trl.top_k=50", factory=dict)

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
    return ConfigError(f"{source}: unknown key {key!r}{_suggest(key, known)}; pass trl.GRPOConfig options under 'trl:' (e.g. trl.top_k=50)")


def _coerce(name: str, typ: Any, value: Any, source: str) -> Any:
    """Checks (and mildly converts) one value against the field's annotation."""
    origin = get_origin(typ)
    if origin is Union:
        args = [a for a in get_args(typ) if a is not type(None)]
        if value is None or (isinstance(value, str) and value.lower() in ("none", "null") and args[0] is not str):
            return None
        typ = args[0]
        origin = get_origin(typ)
    if origin is Literal:
        choices = get_args(typ)
        if value in choices:
            return value
        raise ConfigError(
            f"{source}: {name} must be one of {', '.join(map(str, choices))}, not {value!r}{_suggest(str(value), [str(c) for c in choices])}"
        )
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
    bad = [r for r in cfg.report_to if r not in REPORT_TO]
    if bad:
        raise ConfigError(f"report_to: unknown {bad[0]!r}; choose from {', '.join(REPORT_TO)}")
    if cfg.resume is not None and cfg.resume != "auto" and not Path(cfg.resume).exists():
        raise ConfigError(f"resume: {cfg.resume} does not exist (use 'auto' or a checkpoint-N folder)")
    if cfg.vllm_data_parallel_size < 1 or cfg.vllm_tensor_parallel_size < 1:
        raise ConfigError("vllm_data_parallel_size and vllm_tensor_parallel_size must be >= 1")
    if cfg.vllm_server_timeout <= 0:
        raise ConfigError(f"vllm_server_timeout must be positive, got {cfg.vllm_server_timeout}")
    if cfg.final_output_repeats < 1 or cfg.final_batch_size < 1:
        raise ConfigError("final_output_repeats and final_batch_size must be >= 1")


# ---------------------------------------------------------------------------------------------
# The builder: TrainConfig -> trl.GRPOConfig
# ---------------------------------------------------------------------------------------------

# Our fields that trl.GRPOConfig takes under the same name (always, or only with use_vllm).
_DIRECT = tuple(f.name for f in dataclasses.fields(TrainConfig) if f.metadata.get("trl") == "direct")
_VLLM = tuple(f.name for f in dataclasses.fields(TrainConfig) if f.metadata.get("trl") == "vllm")
# Renames across trl versions: ours -> candidates, newest first.
_RENAMES = {
    "vllm_importance_sampling_cap": ("vllm_importance_sampling_clip_max", "vllm_importance_sampling_cap"),
}


def max_model_length(cfg: TrainConfig) -> int:
    """vLLM's context length: prompt (text + image tokens) plus completion, unless set."""
    return cfg.vllm_max_model_length or cfg.max_prompt_tokens + cfg.max_completion_length


def deepspeed_active(env: dict[str, str] | None = None) -> bool:
    """This process is a rank of a DeepSpeed job (`accelerate launch` with a DeepSpeed config, or
    our `deepspeed` launcher's ranks, which export the same variable)."""
    env = os.environ if env is None else env  # type: ignore[assignment]
    return env.get("ACCELERATE_USE_DEEPSPEED", "").lower() == "true"


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
    # bf16 autocast (float32 weights, see modeling.training_dtype); without CUDA only when asked
    # for (CPU autocast: slow, but the same numerics as a GPU run).
    kw["bf16"] = cuda if cfg.bf16 is None else bool(cfg.bf16)
    kw["fp16"] = False
    if world_size is None:
        world_size = int(os.environ.get("WORLD_SIZE", "1"))
    if deepspeed is None:
        deepspeed = deepspeed_active()
    if not cuda and world_size > 1:
        # Several CPU ranks. gloo: else accelerate sees 1 process while torch.distributed has N
        # (docs/training.md: without CUDA the ranks use gloo). use_cpu: makes accelerate's state
        # MULTI_CPU (else "NO", and its gather silently returns the local slice), but must stay
        # off under DeepSpeed: with use_cpu set, accelerate skips DeepSpeed altogether.
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
            raise ConfigError(f"trl.{key}: not a GRPOConfig option in trl {trl.__version__}{_suggest(key, sorted(names))}")
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
