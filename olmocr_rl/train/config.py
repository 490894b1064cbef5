"""The training configuration: one typed dataclass, `TrainConfig`, loaded from YAML/TOML plus
`key=value` overrides and the command line's own options (`load_config`), checked (`validate`), and
resolved once for the run (`resolve`): a read-only copy that every later stage reads.

Its fields are the keys: ours, and the trl.GRPOConfig options the run states (`trl_opt`: their
types, defaults and help are the installed trl's, read from GRPOConfig itself by
olmocr_rl/train/schema.py, and a `trl_opt` with a value is olmOCR 2's departure from trl's default).
Any other GRPOConfig option is valid too, under `trl:` (or flat on the command line). The resolved
config (`to_dict`, what every rank reads) is every field, then `trl:`: nothing is listed twice, so a
field added here reaches the ranks without another edit. olmocr_rl/train/grpo.py turns it into
trl's GRPOConfig.

Defaults follow olmOCR 2's GRPO recipe where it is known (28 generations per page, beta 0,
temperature 0.8, bnpo loss with group-scaled rewards, lr 2e-6, 8000-token completions). Unknown
keys are errors naming the key and the closest known ones, or ours where trl calls it otherwise
(olmocr_rl/train/schema.py `unknown_key`, `ALIASES`; keys.py's early check raises the same): a typo must not
silently train with a default.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Optional

from olmocr_rl.atomic import write_text
from olmocr_rl.errors import ConfigError
from olmocr_rl.loops import LOOP_OPTIONS, rule_from
from olmocr_rl.reward_registry import REWARDS, unknown_reward
from olmocr_rl.train.config_file import ConfigFile, parse_override, read_config
from olmocr_rl.train.schema import ALIASES, coerce, trl_fields, trl_value, trl_version, unknown_key, unknown_trl_key  # noqa: F401 (ALIASES)

REPORT_TO = ("tensorboard", "wandb", "none")


class _TrlDefault:
    def __repr__(self) -> str:
        return "trl's default"


TRL_DEFAULT: Any = _TrlDefault()  # a trl_opt without a value of ours: the installed trl's default


def opt(default: Any = None, help: str = "", *, factory: Any = None) -> Any:
    """A field of ours with its help text (read by `olmocr-rl train --options` and the docs)."""
    meta = {"help": help}
    if factory is not None:
        return field(default_factory=factory, metadata=meta)
    return field(default=default, metadata=meta)


def loop_opt(name: str) -> Any:
    """A key of the loop stop, its default and help read from its one table (loops.LOOP_OPTIONS)."""
    (option,) = [o for o in LOOP_OPTIONS if o.name == name]
    return opt(option.default, option.help)


def trl_opt(default: Any = TRL_DEFAULT) -> Any:
    """A trl.GRPOConfig option the resolved config states (trl's type, default and help; a value
    here is olmOCR 2's, which `--options` marks)."""
    return field(default=default, metadata={"trl": True})


@dataclass
class TrainConfig:
    """Ours: what to train on and with, rewards, the model, LoRA, vLLM orchestration, checkpoints,
    final outputs; the trl options the run states (`trl_opt`); and `trl`, any other GRPOConfig
    options set for this run. A config file or KEY=VALUE may name a trl option flat or under `trl:`."""

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

    # --- rewards (olmocr_rl/reward_registry.py) --------------------------------------------------
    rewards: dict = opt(help="reward name (or package.module:function) -> weight", factory=lambda: {"bench": 1.0})
    reward_threads: Optional[int] = opt(None, "Rust scoring threads per rank (default: cores / local ranks)")
    bench_guard: Literal["short-output+footnote", "short-output", "none"] = opt(
        "short-output+footnote", "bench rewards: olmocr PRs #462 (present/absent) and #476 (footnote) guards; short-output: #462 only; none"
    )

    # --- online group filtering (olmocr_rl/train/filtering.py; docs/training.md) ------------------
    filter_groups: bool = opt(False, "train only on page groups whose rewards disagree (curate's rule), refilled from further pages")
    filter_reward: Optional[str] = opt(None, "the reward groups are judged on (none: the weighted total, the advantage's)")
    filter_min_std: float = opt(0.0, "keep a group whose reward std is above this (0: any disagreement, trl's frac_reward_zero_std test)")
    filter_min_mean: Optional[float] = opt(None, "and whose mean reward is above this (none: no lower bound)")
    filter_max_mean: Optional[float] = opt(None, "and whose mean reward is below this (none: no upper bound)")
    filter_extra_rounds: int = opt(3, "generation rounds added at most per generation batch; then filled with dropped groups (warned)")

    # --- the loop stop (olmocr_rl/loops.py: each key's type, default and help in LOOP_OPTIONS) ---------
    loop_stop: bool = loop_opt("loop_stop")
    loop_max_period: int = loop_opt("loop_max_period")
    loop_min_span: int = loop_opt("loop_min_span")
    loop_min_repeats: int = loop_opt("loop_min_repeats")

    # --- the GRPO recipe (olmOCR 2; olmocr_rl/recipes/olmocr2.yaml cites each source) -------------
    num_generations: Optional[int] = trl_opt(28)  # completions per page
    num_generations_eval: Optional[int] = trl_opt(4)
    per_device_train_batch_size: int = trl_opt(1)  # completions (not pages) per rank per micro-step
    # olmOCR ran 8 with 7 GPUs (7 * 1 * 8 = 56 = 2 pages x 28); 28 divides at any world size.
    gradient_accumulation_steps: int = trl_opt(28)
    steps_per_generation: Optional[int] = trl_opt()
    per_device_eval_batch_size: int = trl_opt(4)
    num_train_epochs: float = trl_opt(1.0)
    max_steps: int = trl_opt()
    learning_rate: float = trl_opt(2e-6)
    lr_scheduler_type: str = trl_opt()
    warmup_steps: float = trl_opt(100)
    weight_decay: float = trl_opt()
    max_grad_norm: float = trl_opt()
    max_completion_length: Optional[int] = trl_opt(8000)
    max_prompt_tokens: int = opt(3000, "prompt text + image tokens at most (checked against the prepared rows)")
    temperature: float = trl_opt(0.8)
    top_p: float = trl_opt()
    beta: float = trl_opt()
    loss_type: str = trl_opt("bnpo")
    scale_rewards: str = trl_opt()
    importance_sampling_level: str = trl_opt()
    num_iterations: int = trl_opt()
    epsilon: float = trl_opt()
    mask_truncated_completions: bool = trl_opt()
    seed: int = trl_opt()

    # --- model -----------------------------------------------------------------------------
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = opt(
        "auto", "weights' dtype at load (auto: float32 for trained weights; bfloat16 under DeepSpeed bf16 and for LoRA's frozen base)"
    )
    bf16: Optional[bool] = opt(None, "bf16 autocast over float32 weights (None: with CUDA; true on CPU: CPU autocast)")
    attn_implementation: Optional[str] = opt(None, "transformers' attention implementation (sdpa, flash_attention_2, ...)")
    trust_remote_code: bool = opt(False, "allow the model's own code from the hub")
    gradient_checkpointing: bool = trl_opt()
    max_pixels: Optional[int] = opt(None, "override the processor's image budget (pixels)")

    # --- LoRA (peft) -----------------------------------------------------------------------
    lora: bool = opt(False, "train a LoRA adapter instead of the full model")
    lora_r: int = opt(16, "LoRA rank")
    lora_alpha: int = opt(32, "LoRA scaling")
    lora_dropout: float = opt(0.05, "LoRA dropout")
    lora_target_modules: list = opt(help="modules that get adapters", factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj"])

    # --- vLLM generation (optional; trl's vllm_* options reach GRPOConfig only with use_vllm) -----
    use_vllm: bool = trl_opt()
    vllm_mode: str = trl_opt()
    vllm_gpu_memory_utilization: float = trl_opt()
    vllm_tensor_parallel_size: int = trl_opt()
    vllm_server_base_url: Optional[str] = trl_opt()
    vllm_server_host: str = trl_opt()
    vllm_server_port: int = trl_opt()
    vllm_enable_sleep_mode: bool = trl_opt()
    vllm_max_model_length: Optional[int] = opt(None, "vLLM's context (None: max_prompt_tokens + max_completion_length)")
    vllm_enforce_eager: bool = opt(False, "vLLM without CUDA graphs or torch.compile (starts faster; on CPU, compiling takes minutes)")
    # The server `olmocr-rl train --vllm-gpus K` starts on the last K GPUs (trl's `vllm serve` command):
    vllm_data_parallel_size: int = opt(1, "--vllm-gpus server: data parallel replicas (tensor parallel = K / this)")
    vllm_server_gpu_memory_utilization: float = opt(0.9, "--vllm-gpus server: its share of its GPUs")
    vllm_server_timeout: float = trl_opt(900.0)  # a 7B model's server takes minutes to start
    vllm_server_args: list = opt(help="--vllm-gpus server: extra `vllm serve` arguments, as is", factory=list)
    vllm_server_command: Optional[str] = opt(None, "--vllm-gpus server: replaces `vllm serve` (e.g. a container wrapper)")
    vllm_importance_sampling_correction: bool = trl_opt()
    vllm_importance_sampling_mode: str = trl_opt()
    vllm_importance_sampling_cap: float = opt(3.0, "the ratio bound (trl >= 1.6: vllm_importance_sampling_clip_max)")

    # --- checkpoints, eval, logging --------------------------------------------------------
    save_steps: float = trl_opt(25)
    save_total_limit: Optional[int] = trl_opt()
    resume: Optional[str] = opt(None, '"auto" (latest checkpoint in output_dir) or a checkpoint folder')
    eval_steps: int = opt(50, "evaluate every N steps (0: only at the end)")
    eval_on_start: bool = trl_opt()
    logging_steps: float = trl_opt(5)
    report_to: list = opt(help="tensorboard, wandb or none", factory=lambda: ["tensorboard"])
    run_name: Optional[str] = trl_opt()
    log_completions: bool = trl_opt(True)
    num_completions_to_print: Optional[int] = trl_opt(2)
    write_failing_completions: bool = opt(True, "completions/failing_<split>.jsonl with the failed tests")
    progress: bool = opt(True, "rich progress display on rank 0")
    dataloader_num_workers: int = trl_opt(2)

    # --- after training: bench-style candidate files ---------------------------------------
    final_outputs: Literal["eval", "train", "all", "none"] = opt("eval", "pages transcribed into output_dir/outputs/")
    final_output_repeats: int = opt(1, "files per page")
    final_temperature: float = opt(0.0, "0 = greedy")
    final_batch_size: int = opt(8, "pages per generate call")

    # --- any other trl.GRPOConfig option set for this run (checked against its fields) -----------
    trl: dict = opt(help="trl.GRPOConfig options set for this run, e.g. trl.top_k=50 (or top_k=50)", factory=dict)

    def __post_init__(self) -> None:
        for f in TRL_STATED:
            if getattr(self, f.name) is TRL_DEFAULT:
                setattr(self, f.name, trl_default(f.name))

    def __setattr__(self, name: str, value: Any) -> None:
        if self.__dict__.get("_resolved"):  # `resolve`'s copy; dataclasses.replace derives another
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}: the resolved config is read-only")
        object.__setattr__(self, name, value)

    def to_dict(self) -> dict:
        """The resolved config: every field (ours and the trl options it states), then under `trl`
        the other GRPOConfig options set for this run."""
        return {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self)}

    def to_json(self, path: str | os.PathLike[str]) -> Path:
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        write_text(p, json.dumps(self.to_dict(), indent=2, sort_keys=False) + "\n")
        return p

    @classmethod
    def from_dict(cls, data: dict, *, source: str = "config") -> "TrainConfig":
        cfg = cls()
        apply_mapping(cfg, data, source=source)
        return cfg

    @property
    def eval_enabled(self) -> bool:
        return bool(self.eval_split) and self.eval_split.lower() != "none"


def _plain(value: Any) -> Any:
    """A copy of a field's value (the resolved config shares no list or dict with the config)."""
    return json.loads(json.dumps(value, default=str)) if isinstance(value, (dict, list)) else value


OWN = tuple(f for f in dataclasses.fields(TrainConfig) if not f.metadata.get("trl"))
TRL_STATED = tuple(f for f in dataclasses.fields(TrainConfig) if f.metadata.get("trl"))
# olmOCR 2's departures from trl's defaults: the trl options declared with a value.
GRPO_OVERRIDES: dict[str, Any] = {f.name: f.default for f in TRL_STATED if f.default is not TRL_DEFAULT}
_OWN_NAMES = frozenset(f.name for f in OWN)
_STATED_NAMES = frozenset(f.name for f in TRL_STATED)


def trl_default(name: str) -> Any:
    """The value of a trl option no one set: olmOCR 2's, else the installed trl's default (None
    when the installed trl does not have the option)."""
    if name in GRPO_OVERRIDES:
        return GRPO_OVERRIDES[name]
    return trl_fields()[name][1] if name in trl_fields() else None


def trl_options_set(cfg: TrainConfig) -> dict[str, Any]:
    """The trl options this run sets away from the recipe: the stated ones it changed, then `trl:`."""
    return {f.name: getattr(cfg, f.name) for f in TRL_STATED if getattr(cfg, f.name) != trl_default(f.name)} | cfg.trl


def is_trl_key(name: str) -> bool:
    """A trl.GRPOConfig option (stated here, or only trl's)."""
    return name in _STATED_NAMES or name in trl_fields()


def precision(cfg: TrainConfig, cuda: bool) -> bool:
    """Whether the run trains with bf16 autocast, the one rule: as set, else with CUDA (on CPU only
    when asked for)."""
    return cuda if cfg.bf16 is None else bool(cfg.bf16)


def resolve(cfg: TrainConfig, cuda: bool, **decided: Any) -> TrainConfig:
    """The run's config: a copy of `cfg` (no list or dict shared) with bf16 decided (`precision`) and
    what the plan decided (`decided`: the vLLM server's mode and address), refusing any assignment.
    The parent resolves it before it writes the ranks' config, so every rank and accelerate's mixed
    precision agree; a rank a user's own launcher started resolves what it read the same way."""
    values = {f.name: copy.deepcopy(getattr(cfg, f.name)) for f in dataclasses.fields(cfg)}
    out = TrainConfig(**{**values, "bf16": precision(cfg, cuda), **decided})
    object.__setattr__(out, "_resolved", True)
    return out


def engine_settings(cfg: TrainConfig, *, model: str | None = None, eager: bool | None = None, stop_loops: bool = True) -> Any:
    """What the run's generation engines are told (olmocr_rl/engines.py): the trainer's processor
    bounds, seed, completion length and loop stop (`stop_loops=False`: none, as the final outputs,
    an evaluation, are generated); `model` instead of cfg.model (the trained one); `eager` (the
    command line's) over vllm_enforce_eager."""
    from olmocr_rl.engines import EngineSettings

    return EngineSettings(model or cfg.model, max_new_tokens=cfg.max_completion_length, seed=cfg.seed, max_pixels=cfg.max_pixels,
                          trust_remote_code=cfg.trust_remote_code, eager=eager if eager is not None else (cfg.vllm_enforce_eager or None),
                          loop_rule=rule_from(cfg) if stop_loops else None)  # fmt: skip


def set_option(cfg: TrainConfig, key: str, value: Any, source: str) -> None:
    """One key of ours (checked against its annotation) or of trl's GRPOConfig (against trl's)."""
    from typing import get_type_hints

    name = key.replace("-", "_")
    if name == "trl":
        if not isinstance(value, dict):
            raise ConfigError(f"{source}: trl must be a mapping of trl.GRPOConfig options, got {value!r}")
        for k, v in value.items():
            k = str(k)
            if not is_trl_key(k):
                raise unknown_trl_key(k, source, trl_fields(), trl_version())
            _set_trl(cfg, k, v, source)
    elif name in _OWN_NAMES:
        if name == "rewards" and isinstance(value, dict):
            value = {str(k): v for k, v in value.items()}
        setattr(cfg, name, coerce(name, get_type_hints(TrainConfig)[name], value, source))
    elif is_trl_key(name):
        _set_trl(cfg, name, value, source)
    else:
        raise unknown_key_error(key, source)


def _set_trl(cfg: TrainConfig, name: str, value: Any, source: str) -> None:
    value = trl_value(name, value, source, GRPO_OVERRIDES.get(name))
    if name in _STATED_NAMES:
        setattr(cfg, name, value)
    else:
        cfg.trl[name] = value


def known_keys() -> list[str]:
    """Every valid key: ours and the installed trl's GRPOConfig options."""
    return sorted(_OWN_NAMES | _STATED_NAMES | set(trl_fields()))


def unknown_key_error(key: str, source: str) -> ConfigError:
    return unknown_key(key, source, known_keys())


def apply_mapping(cfg: TrainConfig, data: dict, *, source: str) -> None:
    """Sets options from a (possibly nested: `rewards:`, `trl:`) mapping; unknown keys raise."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping of option names to values, got {type(data).__name__}")
    for key, value in data.items():
        set_option(cfg, str(key), value, source)


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
    path: str | os.PathLike[str] | ConfigFile | None = None,
    overrides: list[str] | None = None,
    **explicit: Any,
) -> TrainConfig:
    """Defaults ← config file (a path, a packaged recipe's name, or the ConfigFile a command read
    once: olmocr_rl/train/config_file.py `read_config`) ← `key=value` overrides ← explicit keyword
    arguments (the CLI's own options, None meaning "not given"). Validates the result (`validate`)."""
    cfg = TrainConfig()
    if (recipe := read_config(path)) is not None:
        apply_mapping(cfg, recipe.data, source=recipe.source)
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
    check_rewards(cfg.rewards)
    if not cfg.rewards:
        raise ConfigError(f"no rewards configured; set e.g. rewards.bench=1.0 (choose from {', '.join(REWARDS)})")
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
    try:
        rule_from(cfg, stop=True)  # the loop_* keys make a rule (olmocr_rl/loops.py), whether or not the stop is on
    except ValueError as e:  # the rule's message starts with the field's name: the key is loop_ + it
        raise ConfigError("loop_" + str(e).removeprefix("loop rule: ")) from None
    validate_filter(cfg)


def check_rewards(rewards: dict) -> None:
    """Each reward a name the registry knows (or a function of the user's), with a number as its weight."""
    for name, weight in rewards.items():
        if (error := unknown_reward(name)) is not None:
            raise error
        if isinstance(weight, bool) or not isinstance(weight, (int, float)):
            raise ConfigError(f"reward {name!r}: the weight must be a number, got {weight!r}")


def validate_filter(cfg: TrainConfig) -> None:
    """The filter_* keys (online filtering: olmocr_rl/train/filtering.py), checked whether or not
    filtering is on."""
    if cfg.filter_reward is not None and cfg.filter_reward not in cfg.rewards:
        raise ConfigError(f"filter_reward: {cfg.filter_reward!r} is not one of the run's rewards ({', '.join(cfg.rewards)})")
    if cfg.filter_min_std < 0:
        raise ConfigError(f"filter_min_std must be >= 0, got {cfg.filter_min_std}")
    low, high = cfg.filter_min_mean, cfg.filter_max_mean
    if low is not None and high is not None and low >= high:
        raise ConfigError(f"filter_min_mean ({low}) must be below filter_max_mean ({high}): no group could be kept")
    if cfg.filter_extra_rounds < 0:
        raise ConfigError(f"filter_extra_rounds must be >= 0, got {cfg.filter_extra_rounds}")
    if cfg.filter_groups and cfg.filter_reward is None and cfg.trl.get("multi_objective_aggregation") == "normalize_then_sum":
        raise ConfigError(
            "filter_groups: with trl.multi_objective_aggregation=normalize_then_sum the advantage is not computed from one "
            "total reward per completion; name the reward groups are judged on: filter_reward=NAME"
        )
