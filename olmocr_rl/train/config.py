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
import types
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


def _type_name(typ: Any) -> str:
    if get_origin(typ) is Literal:
        return " | ".join(map(str, get_args(typ)))
    if get_origin(typ) in (Union, types.UnionType):
        args = [a for a in get_args(typ) if a is not type(None)]
        named = " or ".join(getattr(a, "__name__", str(a)) for a in args)
        return f"{named} or none" if len(args) < len(get_args(typ)) else named
    return getattr(typ, "__name__", str(typ))


def options_table() -> list[tuple[str, str, str, str]]:
    """(key, type, default, help) of every option, for `olmocr-rl train --options`: ours (TrainConfig)
    and trl's GRPOConfig options with their defaults here (olmOCR 2's overrides marked)."""
    hints = get_type_hints(TrainConfig)
    rows = []
    for f in dataclasses.fields(TrainConfig):
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default  # type: ignore[misc]
        rows.append((f.name, _type_name(hints[f.name]), json.dumps(default), f.metadata.get("help", "")))
    for name, (typ, default, help_) in sorted(trl_fields().items()):
        if name in _OWN:
            continue
        mark = "(olmOCR 2; trl: %s) " % json.dumps(default, default=str) if name in GRPO_OVERRIDES else ""
        shown = GRPO_OVERRIDES.get(name, default)
        rows.append((name, _type_name(typ), json.dumps(shown, default=str), mark + "trl: " + " ".join(help_.split())[:200]))
    return rows


class ConfigError(UserError, ValueError):
    """A configuration problem the user fixes by editing the config or the command line."""


def opt(default: Any = None, help: str = "", *, factory: Any = None) -> Any:
    """A TrainConfig field with its help text (read by `olmocr-rl train --options` and the docs)."""
    meta = {"help": help}
    if factory is not None:
        return field(default_factory=factory, metadata=meta)
    return field(default=default, metadata=meta)


# --- trl's options: GRPOConfig's own fields are the valid keys, with trl's defaults but for ------
# olmOCR 2's recipe, which overrides these (olmocr_rl/recipes/olmocr2.yaml cites each source).
GRPO_OVERRIDES: dict[str, Any] = {
    "num_generations": 28,  # completions per page
    "num_generations_eval": 4,
    "per_device_train_batch_size": 1,  # completions (not pages) per rank per micro-step
    # olmOCR ran 8 with 7 GPUs (7 * 1 * 8 = 56 = 2 pages x 28); 28 divides at any world size.
    "gradient_accumulation_steps": 28,
    "per_device_eval_batch_size": 4,
    "num_train_epochs": 1.0,
    "learning_rate": 2e-6,
    "warmup_steps": 100,
    "max_completion_length": 8000,
    "temperature": 0.8,
    "loss_type": "bnpo",
    "vllm_server_timeout": 900.0,  # a 7B model's server takes minutes to start
    "save_steps": 25,
    "logging_steps": 5,
    "log_completions": True,
    "num_completions_to_print": 2,
    "dataloader_num_workers": 2,
}
# trl options given to GRPOConfig only with use_vllm (trl validates some of them otherwise).
VLLM_ONLY = (
    "vllm_mode", "vllm_gpu_memory_utilization", "vllm_tensor_parallel_size", "vllm_server_base_url", "vllm_server_host",
    "vllm_server_port", "vllm_enable_sleep_mode", "vllm_server_timeout", "vllm_importance_sampling_correction",
    "vllm_importance_sampling_mode",
)  # fmt: skip
# Every key of the resolved config (ours and the trl options it states), in the order it lists them.
LAYOUT = [
    "prepared_dir", "model", "output_dir", "train_split", "eval_split", "max_train_pages", "prompt", "max_eval_pages",
    "rewards", "reward_threads", "bench_guard", "num_generations", "num_generations_eval",
    "per_device_train_batch_size", "gradient_accumulation_steps", "steps_per_generation", "per_device_eval_batch_size",
    "num_train_epochs", "max_steps", "learning_rate", "lr_scheduler_type", "warmup_steps", "weight_decay",
    "max_grad_norm", "max_completion_length", "max_prompt_tokens", "temperature", "top_p", "beta", "loss_type",
    "scale_rewards", "importance_sampling_level", "num_iterations", "epsilon", "mask_truncated_completions", "seed",
    "dtype", "bf16", "attn_implementation", "trust_remote_code", "gradient_checkpointing", "max_pixels", "lora",
    "lora_r", "lora_alpha", "lora_dropout", "lora_target_modules", "use_vllm", "vllm_mode",
    "vllm_gpu_memory_utilization", "vllm_tensor_parallel_size", "vllm_server_base_url", "vllm_server_host",
    "vllm_server_port", "vllm_enable_sleep_mode", "vllm_max_model_length", "vllm_enforce_eager",
    "vllm_data_parallel_size", "vllm_server_gpu_memory_utilization", "vllm_server_timeout", "vllm_server_args",
    "vllm_server_command", "vllm_importance_sampling_correction", "vllm_importance_sampling_mode",
    "vllm_importance_sampling_cap", "save_steps", "save_total_limit", "resume", "eval_steps", "eval_on_start",
    "logging_steps", "report_to", "run_name", "log_completions", "num_completions_to_print",
    "write_failing_completions", "progress", "dataloader_num_workers", "final_outputs", "final_output_repeats",
    "final_temperature", "final_batch_size", "trl",
]  # fmt: skip
_TRL_FIELDS: dict[str, tuple[Any, Any, str]] | None = None


def trl_fields() -> dict[str, tuple[Any, Any, str]]:
    """GRPOConfig's options for the installed trl: name -> (type, default, help)."""
    global _TRL_FIELDS
    if _TRL_FIELDS is None:
        from trl import GRPOConfig

        hints = get_type_hints(GRPOConfig)
        out = {}
        for f in dataclasses.fields(GRPOConfig):
            if not f.init:
                continue
            default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default  # type: ignore[misc]
            out[f.name] = (hints.get(f.name, Any), None if default is dataclasses.MISSING else default, str(f.metadata.get("help", "")))
        _TRL_FIELDS = out
    return _TRL_FIELDS


def trl_default(name: str) -> Any:
    """The value of a trl option no one set: the olmOCR 2 override, else trl's default."""
    if name in GRPO_OVERRIDES:
        return GRPO_OVERRIDES[name]
    return trl_fields()[name][1]


@dataclass(init=False)
class TrainConfig:
    """Ours: what to train on and with, rewards, the model, LoRA, vLLM orchestration, checkpoints,
    final outputs; and `trl`, the GRPOConfig options (trl's own fields and defaults, olmOCR 2's
    overrides in GRPO_OVERRIDES). A trl option reads and writes as an attribute too
    (`cfg.num_generations`), and a config file or KEY=VALUE may name one flat or under `trl:`."""

    # --- what to train on, what to train, where to write ---------------------------------
    prepared_dir: str = opt("", "the output of `olmocr-rl prepare`")
    model: str = opt("", "a local path or a hub id of an image-text-to-text model")
    output_dir: str = opt("", "checkpoints, logs, outputs")
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
    bench_guard: Literal["short-output+footnote", "short-output", "none"] = opt(
        "short-output+footnote", "bench rewards: olmocr PRs #462 (present/absent) and #476 (footnote) guards; short-output: #462 only; none"
    )

    # --- the GRPO recipe (olmOCR 2) --------------------------------------------------------
    max_prompt_tokens: int = opt(3000, "prompt text + image tokens at most (checked against the prepared rows)")

    # --- model -----------------------------------------------------------------------------
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = opt(
        "auto", "weights' dtype at load (auto: float32 for trained weights; bfloat16 under DeepSpeed bf16 and for LoRA's frozen base)"
    )
    bf16: Optional[bool] = opt(None, "bf16 autocast over float32 weights (None: with CUDA; true on CPU: CPU autocast)")
    attn_implementation: Optional[str] = opt(None, "transformers' attention implementation (sdpa, flash_attention_2, ...)")
    trust_remote_code: bool = opt(False, "allow the model's own code from the hub")
    max_pixels: Optional[int] = opt(None, "override the processor's image budget (pixels)")

    # --- LoRA (peft) -----------------------------------------------------------------------
    lora: bool = opt(False, "train a LoRA adapter instead of the full model")
    lora_r: int = opt(16, "LoRA rank")
    lora_alpha: int = opt(32, "LoRA scaling")
    lora_dropout: float = opt(0.05, "LoRA dropout")
    lora_target_modules: list = opt(help="modules that get adapters", factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj"])

    # --- vLLM generation (optional) --------------------------------------------------------
    vllm_max_model_length: Optional[int] = opt(None, "vLLM's context (None: max_prompt_tokens + max_completion_length)")
    vllm_enforce_eager: bool = opt(False, "vLLM without CUDA graphs or torch.compile (starts faster; on CPU, compiling takes minutes)")
    # The server `olmocr-rl train --vllm-gpus K` starts on the last K GPUs (trl's `vllm serve` command):
    vllm_data_parallel_size: int = opt(1, "--vllm-gpus server: data parallel replicas (tensor parallel = K / this)")
    vllm_server_gpu_memory_utilization: float = opt(0.9, "--vllm-gpus server: its share of its GPUs")
    vllm_server_args: list = opt(help="--vllm-gpus server: extra `vllm serve` arguments, as is", factory=list)
    vllm_server_command: Optional[str] = opt(None, "--vllm-gpus server: replaces `vllm serve` (e.g. a container wrapper)")
    vllm_importance_sampling_cap: float = opt(3.0, "the ratio bound (trl >= 1.6: vllm_importance_sampling_clip_max)")

    # --- checkpoints, eval, logging --------------------------------------------------------
    resume: Optional[str] = opt(None, '"auto" (latest checkpoint in output_dir) or a checkpoint folder')
    eval_steps: int = opt(50, "evaluate every N steps (0: only at the end)")
    report_to: list = opt(help="tensorboard, wandb or none", factory=lambda: ["tensorboard"])
    write_failing_completions: bool = opt(True, "completions/failing_<split>.jsonl with the failed tests")
    progress: bool = opt(True, "rich progress display on rank 0")

    # --- after training: bench-style candidate files ---------------------------------------
    final_outputs: Literal["eval", "train", "all", "none"] = opt("eval", "pages transcribed into output_dir/outputs/")
    final_output_repeats: int = opt(1, "files per page")
    final_temperature: float = opt(0.0, "0 = greedy")
    final_batch_size: int = opt(8, "pages per generate call")

    # --- trl.GRPOConfig options set explicitly (checked against its fields) ------------------
    trl: dict = opt(help="trl.GRPOConfig options set for this run, e.g. trl.top_k=50 (or top_k=50)", factory=dict)

    # ------------------------------------------------------------------------------------------
    def __init__(self, **values: Any) -> None:
        for f in dataclasses.fields(self):
            object.__setattr__(self, f.name, f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default)  # type: ignore[misc]
        for k, v in values.items():
            setattr(self, k, v)

    def __getattr__(self, name: str) -> Any:  # only for names that are not our fields
        if name.startswith("_"):
            raise AttributeError(name)
        explicit = self.__dict__.get("trl", {})
        if name in explicit:
            return explicit[name]
        if name in GRPO_OVERRIDES or name in GRPO_SHOWN or name in trl_fields():
            return trl_default(name)
        raise AttributeError(f"TrainConfig has no option {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _OWN or name.startswith("_"):
            object.__setattr__(self, name, value)
        elif name in GRPO_OVERRIDES or name in GRPO_SHOWN or name in trl_fields():
            self.trl[name] = value
        else:
            raise unknown_key_error(name, "TrainConfig")

    def to_dict(self) -> dict:
        """The resolved config: every key of LAYOUT (ours and the trl options it states), then
        under `trl` the other GRPOConfig options set for this run."""
        own = dataclasses.asdict(self)
        out = {k: own[k] if k in _OWN else getattr(self, k) for k in LAYOUT}
        out["trl"] = {k: v for k, v in self.trl.items() if k not in LAYOUT}
        return out

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


_OWN = frozenset(f.name for f in dataclasses.fields(TrainConfig))
# The trl options the resolved config always states (our code reads them); any other GRPOConfig
# option set for a run is listed under `trl:`.
GRPO_SHOWN = tuple(k for k in LAYOUT if k not in _OWN)


def _field_types() -> dict[str, Any]:
    hints = get_type_hints(TrainConfig)
    return {f.name: hints[f.name] for f in dataclasses.fields(TrainConfig)}


def _suggest(key: str, known: list[str]) -> str:
    close = difflib.get_close_matches(key, known, n=3, cutoff=0.6)
    return f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""


def known_keys() -> list[str]:
    """Every valid key: ours and the installed trl's GRPOConfig options."""
    return sorted(_OWN | set(GRPO_OVERRIDES) | set(trl_fields()))


def unknown_key_error(key: str, source: str) -> ConfigError:
    return ConfigError(f"{source}: unknown key {key!r}{_suggest(key, known_keys())}: neither an olmocr-rl option nor a trl.GRPOConfig one")


def _coerce(name: str, typ: Any, value: Any, source: str) -> Any:
    """Checks (and mildly converts) one value against the field's annotation (ours, or trl's)."""
    origin = get_origin(typ)
    if origin is Union or origin is types.UnionType:
        args = [a for a in get_args(typ) if a is not type(None)]
        if value is None or (isinstance(value, str) and value.lower() in ("none", "null") and str not in args):
            if len(args) < len(get_args(typ)) or value is None:
                return None
        if len(args) > 1:  # the first member that takes the value
            for a in args:
                try:
                    return _coerce(name, a, value, source)
                except ConfigError:
                    continue
            raise ConfigError(f"{source}: {name} must be {' or '.join(getattr(a, '__name__', str(a)) for a in args)}, got {value!r}")
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
    else:  # a type of trl's this reader does not know: as given (trl checks it)
        return value
    tname = getattr(typ, "__name__", str(typ))
    raise ConfigError(f"{source}: {name} must be {tname}, got {value!r}")


def _trl_type(name: str) -> Any:
    return trl_fields()[name][0] if name in trl_fields() else type(GRPO_OVERRIDES[name])


def _trl_value(name: str, value: Any, source: str) -> Any:
    """A trl option's value checked against trl's annotation; a whole number stays an int where
    trl annotates float (transformers 5's steps may also be ratios)."""
    if isinstance(GRPO_OVERRIDES.get(name), float) and isinstance(value, int) and not isinstance(value, bool):
        return float(value)  # as the override's own type
    if _trl_type(name) is float and isinstance(value, int) and not isinstance(value, bool):
        return value
    return _coerce(name, _trl_type(name), value, source)


def set_option(cfg: TrainConfig, key: str, value: Any, source: str) -> None:
    """One key of ours (checked against its annotation) or of trl's GRPOConfig (against trl's)."""
    name = key.replace("-", "_")
    if name in _OWN and name != "trl":
        if name == "rewards" and isinstance(value, dict):
            value = {str(k): v for k, v in value.items()}
        setattr(cfg, name, _coerce(name, _field_types()[name], value, source))
    elif name == "trl":
        if not isinstance(value, dict):
            raise ConfigError(f"{source}: trl must be a mapping of trl.GRPOConfig options, got {value!r}")
        for k, v in value.items():
            k = str(k)
            if k not in trl_fields() and k not in GRPO_OVERRIDES:
                raise ConfigError(f"{source}: trl.{k}: not a GRPOConfig option in trl {_trl_version()}{_suggest(k, sorted(trl_fields()))}")
            cfg.trl[k] = _trl_value(k, v, source)
    elif name in GRPO_OVERRIDES or name in trl_fields():
        cfg.trl[name] = _trl_value(name, value, source)
    else:
        raise unknown_key_error(key, source)


def _trl_version() -> str:
    import trl

    return str(trl.__version__)


def apply_mapping(cfg: TrainConfig, data: dict, *, source: str) -> None:
    """Sets options from a (possibly nested: `rewards:`, `trl:`) mapping; unknown keys raise."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping of option names to values, got {type(data).__name__}")
    for key, value in data.items():
        set_option(cfg, str(key), value, source)


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
            if head == "rewards":
                cfg.rewards[sub] = value
            elif head == "trl":
                set_option(cfg, "trl", {sub: value}, src)
            else:
                raise unknown_key_error(key, src)
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
# What GRPOConfig always gets under the same name, and what only with use_vllm.
_DIRECT = ("output_dir", *(k for k in GRPO_SHOWN if k not in VLLM_ONLY))
_VLLM = tuple(k for k in GRPO_SHOWN if k in VLLM_ONLY)
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
        if key in GRPO_SHOWN:
            continue  # given above
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
