"""The training plan: everything `olmocr-rl train` decides before it starts a process, as one typed
object, and the one function that carries it out.

    build_plan(cfg, LaunchOptions(...))   the resolved config (precision; with --vllm-gpus the server's
                                          mode and address), world size, steps, GPU split, launcher
                                          and server commands, their environment, trl's options, the
                                          prepared folder read once and the pre-flight problems found
                                          in it: one frozen value that no later stage changes
    plan.describe()                       what `--dry-run` prints
    execute(plan)                         train here (one process) or start the launcher (and the
                                          vLLM server) and supervise them; then the final outputs

A process a launcher started is one rank (olmocr_rl/train/rank.py). The command line
(olmocr_rl/cli/train.py) parses options into a TrainConfig and LaunchOptions
(olmocr_rl/launch/launchers.py) and calls these; nothing here imports the command line.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

from olmocr_rl.errors import ConfigError, UserError
from olmocr_rl.folder_lock import folder_lock
from olmocr_rl.launch.launchers import LaunchOptions
from olmocr_rl.train.config import TrainConfig
from olmocr_rl.train.data import Inputs
from olmocr_rl.train.preflight import Problem, errors
from olmocr_rl.train.rank import config_file, rank_program


class TrainingFailed(UserError):
    """The launched training exited with a non-zero status (its ranks printed why)."""

    def __init__(self, message: str, code: int):
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Plan:
    """Everything `olmocr-rl train` decided before it starts a process, resolved once (`build_plan`)
    and read, never changed, by every later stage."""

    cfg: TrainConfig  # resolved (config.resolve, read-only): bf16 decided; with vllm_gpus the server's mode and address
    options: LaunchOptions  # resolved: num_processes is the training processes in all
    cuda: bool
    distributed: bool  # False: train in this process
    grpo_kwargs: dict  # trl.GRPOConfig's arguments
    inputs: Inputs  # the prepared folder, read once
    steps: int  # the optimizer steps trl will run (olmocr_rl/train/budget.py; 0: none, a pre-flight error)
    problems: tuple[Problem, ...] = ()
    launcher_argv: list[str] | None = None  # when distributed
    env: dict[str, str] | None = None  # the ranks' environment, when distributed
    split: Any = None  # launch.gpus.GpuSplit with vllm_gpus
    server_argv: list[str] | None = None  # on machine rank 0 with vllm_gpus
    target: Any = None  # memory.Target: the node planned for
    recipe: str | None = None  # the packaged recipe the config came from (--config olmocr2)
    unresolved: tuple[str, ...] = ()  # parts of grpo_kwargs each rank reads from the model, unreadable here (grpo.generation_kwargs)

    @property
    def world_size(self) -> int:
        """Training processes in all."""
        return self.options.processes

    @property
    def config_path(self) -> Path:
        return config_file(self.cfg)

    @property
    def parent_writes_outputs(self) -> bool:
        return parent_writes_outputs(self.options)

    def describe(self, *, show_config: bool = False, config_file: str | os.PathLike[str] | None = None) -> str:
        """The plan as `--dry-run` prints it: the verdict in a line first, the plan's parts, then
        the verdict again in full (`verdict_lines`). `show_config`: the resolved config and
        trl.GRPOConfig's arguments too (else only the file they are written to, `config_file`)."""
        from olmocr_rl.launch.launchers import format_plan
        from olmocr_rl.loops import rule_from, stop_line
        from olmocr_rl.train.budget import filter_cost, steps_per_generation

        cfg, world = self.cfg, self.world_size
        budget, memory = self._budget(), self.memory_estimate()
        lines = [self.summary_line(budget, memory)]
        if show_config:
            lines += ["resolved config:", json.dumps(cfg.to_dict(), indent=2)]
            lines.append("trl.GRPOConfig: " + json.dumps({k: v for k, v in self.grpo_kwargs.items() if k != "output_dir"}, default=str))
        if self.unresolved:
            lines.append(f"trl.GRPOConfig: each rank fills in generation_kwargs' {'; '.join(self.unresolved)}")
        lines.append(f"world size: {world}" + self._idle_note())
        steps = steps_per_generation(cfg, world)  # trl.generation_batch_size's where it is set
        batch = cfg.per_device_train_batch_size * world * steps
        lines.append(
            f"generation batch: {cfg.per_device_train_batch_size} per device x {world} processes x {steps} steps = {batch} "
            f"completions = {batch / cfg.num_generations:g} pages x {cfg.num_generations} generations"
        )
        lines += budget.lines()
        lines.append(stop_line(rule_from(cfg), cfg.max_completion_length))
        if (cost := filter_cost(cfg, world)) is not None:
            lines.append(cost.line())
        lines += self._memory_lines(memory)
        lines.append(f"prompt: {prompt_line(cfg)}")
        from olmocr_rl.recipes import departures

        if self.recipe == "olmocr2" and (made := departures(cfg)):
            lines.append("departures from upstream's olmOCR 2 runs (allenai/olmocr f7cfe4c; docs/training.md):")
            lines += [f"  {d.what}: {d.ours} (upstream: {d.upstream}): {d.why}" for d in made]
        if self.split is not None:
            from olmocr_rl.launch.server import server_env
            from olmocr_rl.train.vllm_server import weight_sync_port

            lines.append(self.split.describe())
            if self.server_argv is not None:
                lines.append("server: " + format_plan(self.server_argv, None, server_env(self.split, base={})))
                lines.append(
                    f"ports: server {cfg.vllm_server_port} (vllm_server_port), weight sync {weight_sync_port(cfg)} (trl.vllm_group_port)"
                )
            else:
                lines.append(
                    f"server: none on this machine (machine rank {self.options.machine_rank}); the trainer connects to "
                    f"{cfg.vllm_server_host}:{cfg.vllm_server_port}"
                )
        if self.distributed:
            assert self.launcher_argv is not None and self.env is not None
            shown = (
                {"CUDA_VISIBLE_DEVICES": self.env["CUDA_VISIBLE_DEVICES"]}
                if self.split is not None and "CUDA_VISIBLE_DEVICES" in self.env
                else {}
            )
            lines.append("command: " + format_plan(self.launcher_argv, self.env, shown))
        else:
            lines.append(f"command: this process trains (config {self.config_path})")
        lines += self.verdict_lines(budget, memory, config_file, show_config)
        return "\n".join(lines)

    def _idle_note(self) -> str:
        """The GPUs of the planned node(s) no process uses (a --num-processes below them), in words."""
        target, o = self.target, self.options  # without --num-processes every GPU trains (`_placement`): none idle
        if target is None or not target.gpus:
            return ""
        machines = max(1, o.num_machines)
        idle = (target.gpus - (o.vllm_gpus or 0)) * machines - self.world_size
        if idle <= 0:
            return ""
        return (f" (--num-processes {self.world_size}: {idle} of the {target.gpus * machines} GPUs"
                f"{' of the ' + str(machines) + ' machines' if machines > 1 else ''} would sit idle; "
                f"leave --num-processes out to train on every one)")  # fmt: skip

    # --- the verdict: will it start, fit the GPUs and the disk, how long, how much generation ------

    def summary_line(self, budget: Any, memory: MemoryPlan) -> str:
        """The plan's answer in one line: whether it starts, fits each GPU and the disk, its steps."""
        bad = errors(self.problems)
        warned = [p for p in self.problems if p not in bad]
        if bad:
            starts = f"will NOT start ({len(bad)} error{'s' if len(bad) > 1 else ''}: {', '.join(dict.fromkeys(p.key for p in bad))})"
        else:
            starts = f"ready ({len(warned)} warning{'s' if len(warned) > 1 else ''})" if warned else "ready"
        return (f"plan: {starts}; {self._memory_verdict(memory, short=True)}; {self._disk_verdict(budget, short=True)}; "
                f"{budget.steps} optimizer step{'' if budget.steps == 1 else 's'}")  # fmt: skip

    def verdict_lines(self, budget: Any, memory: MemoryPlan, config_file: str | os.PathLike[str] | None, shown: bool) -> list[str]:
        """The closing block: starts, memory per GPU (peak and share), disk needed and free, steps,
        generation at most, and where the resolved config is."""
        from olmocr_rl.train.budget import filter_cost

        bad = errors(self.problems)
        warned = [p for p in self.problems if p not in bad]
        if bad:
            starts = f"no: {len(bad)} error{'s' if len(bad) > 1 else ''} ({', '.join(dict.fromkeys(p.key for p in bad))}; printed above)"
        else:
            starts = "yes" + (f", with {len(warned)} warning{'s' if len(warned) > 1 else ''} (printed above)" if warned else "")
        out = ["verdict:", f"  starts:     {starts}", f"  memory:     {self._memory_verdict(memory)}"]
        if memory.server is not None:
            out.append(f"  server GPU: {memory.server}")
        out.append(f"  disk:       {self._disk_verdict(budget)}")
        out.append(f"  steps:      {budget.steps} optimizer step{'' if budget.steps == 1 else 's'} (as trl counts them)"
                   + (": nothing would train" if not budget.steps else ""))  # fmt: skip
        cost = filter_cost(self.cfg, self.world_size)
        parts = [f"at most {cost.completions_max:,} completions a generation batch (online filtering's worst case, {cost.rounds} rounds)"
                 ] if cost is not None else []  # fmt: skip
        tokens = f"up to {budget.train_tokens:,} completion tokens for training"
        if budget.evaluations:
            tokens += f", {budget.eval_tokens:,} per evaluation x {budget.evaluations}"
        out.append(f"  generation: {'; '.join([*parts, tokens])}")
        if config_file is not None:
            out.append(f"  config:     {config_file}" + ("" if shown else " (the resolved config; --show-config prints it here)"))
        return out

    def _memory_verdict(self, memory: MemoryPlan, short: bool = False) -> str:
        est = memory.estimate
        if est is None:
            return f"memory not estimated ({'a CPU plan' if memory.cpu else 'see above'})" if short else f"not estimated: {memory.why}"
        from olmocr_rl.train.memory import GIB

        if est.gpu_bytes is None:
            return f"memory {est.peak / GIB:,.1f} GiB per training GPU (the card's size unknown)"
        close = f"; {words}" if (words := est.spare_words()) else ""  # a fit within 1 GiB says how close
        share = f"{est.peak / GIB:,.1f} of {est.gpu_bytes / GIB:,.1f} GiB per training GPU ({100 * est.peak / est.gpu_bytes:.0f} %{close})"
        word = "fits" if est.fits() else "does NOT fit"
        return f"memory {word}, {share}" if short else f"{word}: {share} at the peak (an estimate; usable: the card less 1 GiB)"

    def _disk_verdict(self, budget: Any, short: bool = False) -> str:
        if budget.disk_gb is None:
            return "disk size unknown" if short else f"size unknown ({budget.unknown})"
        if budget.free_gb is None:
            return f"disk {budget.disk_gb:,.0f} GB at the peak" + ("" if short else ", free space unknown")
        word = "fits" if budget.disk_gb <= budget.free_gb else "does NOT fit"
        figures = f"{budget.disk_gb:,.0f} GB at the peak, {budget.free_gb:,.0f} GB free"
        return f"disk {word}, {figures}" if short else f"{word}: {figures}"

    def _budget(self) -> Any:
        from olmocr_rl.train.budget import estimate

        cfg, inputs = self.cfg, self.inputs
        train = len(inputs.train_rows[: cfg.max_train_pages]) if inputs is not None else 0
        evaluated = len(inputs.eval_rows[: cfg.max_eval_pages]) if inputs is not None else 0
        return estimate(cfg, self.world_size, train, evaluated, deepspeed=self.options.zero is not None, zero=self.options.zero)

    def memory_estimate(self) -> MemoryPlan:
        """The estimate per training GPU (olmocr_rl/train/memory.py) with what it was made of (what was
        read of the model, the image tokens of its largest page: olmocr_rl/image_tokens.py), or why
        there is none; and what vLLM takes of a server GPU."""
        from olmocr_rl.train import memory
        from olmocr_rl.train.preflight import Context, plan_layout
        from olmocr_rl.train.shape import ShapeUnknown, read_shape

        target, cfg = self.target, self.cfg
        rows = self.inputs.train_rows[: cfg.max_train_pages] if self.inputs is not None else []
        if target is None or not target.gpus or self.inputs is None:
            return MemoryPlan(why="a CPU plan (give --gpus N --gpu-memory GIB to plan a GPU node)", cpu=True,
                              read=tuple(image_lines(cfg, None, rows)))  # fmt: skip
        try:
            shape = read_shape(str(cfg.model))
        except ShapeUnknown as e:
            return MemoryPlan(why=str(e), read=tuple(image_lines(cfg, None, rows)))
        read = (f"model: {shape.source}", *image_lines(cfg, shape, rows))
        ctx = Context(cfg, self.world_size, self.inputs, self.options.zero is not None, True, zero=self.options.zero, target=target,
                      vllm_server=self.split is not None)  # fmt: skip
        layout = plan_layout(ctx)
        tokens = memory.tokens_of(cfg, rows, memory.planning_budget(cfg, shape)[0])
        est = memory.estimate_memory(cfg, shape, layout, tokens)
        server = None
        if self.split is not None and target.gpu_bytes:
            share, weights = memory.server_share(cfg, shape, target.gpu_bytes, self.split.tensor_parallel)
            server = (f"vLLM takes {memory.gib(share)} of {memory.gib(target.gpu_bytes)} (vllm_server_gpu_memory_utilization="
                      f"{cfg.vllm_server_gpu_memory_utilization:g}): 16-bit weights {memory.gib(weights)}, the rest KV cache")  # fmt: skip
        return MemoryPlan(est, shape=shape, layout=layout, tokens=tokens, server=server, read=read,
                          pushes=memory.weight_pushes(cfg, shape, layout.zero))  # fmt: skip

    def _memory_lines(self, plan: MemoryPlan | None = None) -> list[str]:
        """The estimate per training GPU, by component (olmocr_rl/train/memory.py)."""
        plan = plan or self.memory_estimate()
        target = self.target
        lines = [target.describe()] if target is not None else []
        lines += plan.read
        if plan.cpu:
            return lines + ["memory: not estimated for a CPU plan (give --gpus N --gpu-memory GIB to plan a GPU node)"]
        if plan.estimate is None:
            return lines + [f"memory: not estimated ({plan.why})"]
        layout, shape = plan.layout, plan.shape
        zero = f"ZeRO-{layout.zero}" if layout.zero else "no ZeRO"
        lines.append(f"memory per training GPU (estimate; {shape.params / 1e9:.2f} B parameters, {layout.world} ranks, {zero}, "
                     f"{'bf16' if layout.bf16 else 'float32'}, longest sequence {plan.tokens.sequence:,} tokens):")  # fmt: skip
        lines += plan.estimate.lines()
        if plan.pushes is not None:
            lines.append(plan.pushes)
        if plan.server is not None:
            lines.append(f"memory per server GPU: {plan.server}")
        return lines


@dataclass(frozen=True)
class MemoryPlan:
    """The memory estimate of a plan (`Plan.memory_estimate`): None and why not, or the estimate with
    what it was made of; `server`: what vLLM takes of a server GPU, in words."""

    estimate: Any = None  # memory.Memory
    why: str = ""
    shape: Any = None
    layout: Any = None
    tokens: Any = None
    server: str | None = None
    cpu: bool = False  # no GPU planned for
    read: tuple[str, ...] = ()  # what was read of the model, and the image tokens of the largest page
    pushes: str | None = None  # colocated vLLM with sleep mode: the weight pushes per generation batch


def write_config(plan: Plan) -> Path:
    """The resolved config a dry run plans (what the run would write to OUTPUT_DIR/train_config.json),
    written to the system's temporary folder (a dry run creates nothing in the output folder),
    named after its content."""
    import hashlib
    import tempfile

    from olmocr_rl.atomic import write_text

    text = json.dumps(plan.cfg.to_dict(), indent=2) + "\n"
    path = Path(tempfile.gettempdir()) / f"olmocr-rl-plan-{hashlib.sha1(text.encode()).hexdigest()[:12]}.json"
    write_text(path, text)
    return path


def image_lines(cfg: TrainConfig, shape: Any, rows: list[dict]) -> list[str]:
    """The image tokens of the largest page under the model's processor and the run's max_pixels."""
    from olmocr_rl.image_tokens import row_tokens
    from olmocr_rl.train.memory import planning_budget

    budget, assumed = planning_budget(cfg, shape)
    sized = [(row_tokens(r, budget), int(r.get("width") or 0), int(r.get("height") or 0)) for r in rows]
    if not sized:
        return [f"image tokens: {budget.describe()}" + (f"; {assumed}" if assumed else "")]
    n, w, h = max(sized)
    page = f" ({w}x{h} px)" if w and h else ""
    return [f"image tokens: {n:,} for the largest page{page}, {budget.describe()}" + (f"; {assumed}" if assumed else "")]


def parent_writes_outputs(o: LaunchOptions) -> bool:
    """Whether this process (not rank 0) writes the final outputs of a launched run: always, but
    where the ranks cannot be told (PARENT_ENV) to leave them to it: the `deepspeed` launcher starts
    the ranks of several machines over pdsh, which passes on only its own list of variables. Then
    rank 0 writes them, as under a user's own launcher."""
    return not (o.launcher == "deepspeed" and o.num_machines > 1)


def prompt_line(cfg: TrainConfig) -> str:
    """Where the run's instruction comes from, in a line."""
    from olmocr_rl.prompts import TEXT_FIRST, PromptError, resolve_prompt

    if cfg.prompt is None:
        return "each prepared page's own instruction (prepare --prompt / --prompt-file)"
    try:
        p = resolve_prompt(cfg.prompt)
    except PromptError as e:
        return f"{cfg.prompt}: {e}"
    return f"{p.name}: {p.source}; {'the instruction before the image' if p.layout == TEXT_FIRST else 'the image, then the instruction'}"


def build_plan(cfg: TrainConfig, options: LaunchOptions, *, strict: bool = False, recipe: str | None = None) -> Plan:
    """Decides how the run starts (see the module docstring), leaving `cfg` as it is: the plan holds
    the resolved config (bf16; with vllm_gpus the server's mode and address) and the resolved launch
    options. Raises ConfigError for options that cannot work together; the pre-flight problems are
    returned on the plan."""
    from olmocr_rl.launch.gpus import cuda_available
    from olmocr_rl.launch.launchers import PARENT_ENV, launch_env, launcher_argv
    from olmocr_rl.train.budget import training_steps
    from olmocr_rl.train.config import resolve
    from olmocr_rl.train.grpo import generation_kwargs, grpo_kwargs
    from olmocr_rl.train.memory import node_target
    from olmocr_rl.train.preflight import preflight, run_inputs

    # The node planned for: this machine, or one described by --gpus/--gpu-memory (a GPU node
    # planned from a machine without GPUs gets what that node will run: bf16, NCCL, its server).
    here = cuda_available()
    target = node_target(options.gpus, options.gpu_memory, cuda_here=here,
                         at_least=(options.num_processes or 1) // max(1, options.num_machines) + (options.vllm_gpus or 0))  # fmt: skip
    cuda = target.gpus > 0
    num_processes, split, gpus, server_mode = _placement(cfg, options, target)
    # Resolved here, so that every rank (and accelerate's mixed precision) agrees.
    cfg = resolve(cfg, cuda, **server_mode)
    o = replace(options, num_processes=num_processes)
    server = None
    if split is not None and o.machine_rank == 0:  # the vLLM server (on a node described by --gpus, the one trl builds there)
        from olmocr_rl.train.vllm_server import server_argv

        bind = "0.0.0.0" if o.num_machines > 1 else "127.0.0.1"
        server = server_argv(cfg, split, host=bind, port=cfg.vllm_server_port, for_node=target.described)
    distributed = num_processes > 1 or o.zero is not None or o.num_machines > 1 or split is not None or o.launcher == "deepspeed"
    argv = env = None
    if distributed:
        argv = launcher_argv(rank_program(cfg.prepared_dir, config_file(cfg), o.zero if o.launcher == "deepspeed" else None), o,
                             mixed_precision="bf16" if cfg.bf16 else "no", devices=gpus)  # fmt: skip
        env = launch_env(num_processes // o.num_machines)
        if parent_writes_outputs(o):
            env[PARENT_ENV] = "1"  # the ranks leave the final outputs to this process
        if split is not None and o.launcher == "accelerate":
            env["CUDA_VISIBLE_DEVICES"] = ",".join(split.train)
        elif gpus is not None:
            env.pop("CUDA_VISIBLE_DEVICES", None)  # the launcher's --include names them
    inputs = run_inputs(cfg)
    has_eval = bool(inputs.eval_rows[: cfg.max_eval_pages])  # as each rank decides (worker._build)
    generation, unresolved = generation_kwargs(cfg, strict=False)
    problems = preflight(cfg, num_processes, inputs, cuda=cuda, deepspeed=True if o.zero is not None else None, zero=o.zero,
                         target=target, vllm_server=split is not None, elsewhere=target.described and cuda and not here,
                         server_tensor_parallel=split.tensor_parallel if split is not None else 1, probe_server=True)  # fmt: skip
    if server is not None:
        from olmocr_rl.train.vllm_server import port_problems

        problems += port_problems(cfg)
    if strict:
        problems = [replace(p, severity="error") for p in problems]
    steps = training_steps(cfg, len(inputs.train_rows[: cfg.max_train_pages]), num_processes)
    kwargs = grpo_kwargs(cfg, cuda=cuda, has_eval=has_eval, world_size=num_processes, deepspeed=o.zero is not None, generation=generation)
    return Plan(cfg, o, cuda, distributed, kwargs, inputs, steps, tuple(problems), argv, env, split, server, target, recipe,
                unresolved=tuple(unresolved))  # fmt: skip


def _placement(cfg: TrainConfig, o: LaunchOptions, target: Any) -> tuple[int, Any, list[str] | None, dict[str, Any]]:
    """(training processes in all, the GPU split, the training GPUs to name, what the resolved
    config is told): with vllm_gpus, the last K GPUs serve and the config is pointed at the server.
    A node described by --gpus (or by --gpu-memory alone, from a machine without CUDA) is split as
    its GPUs 0..N-1."""
    from olmocr_rl.launch.gpus import cuda_available, split_gpus, visible_gpus

    if not o.vllm_gpus:
        # The deepspeed launcher ignores CUDA_VISIBLE_DEVICES once told a count: name the GPUs.
        gpus = visible_gpus() if o.launcher == "deepspeed" and os.environ.get("CUDA_VISIBLE_DEVICES") else None
        # Without a count: one process per GPU of the node(s) planned for (--gpus, or this machine's); 1 without GPUs.
        return o.num_processes or (target.gpus * max(1, o.num_machines) if target.gpus else 1), None, gpus, {}
    from olmocr_rl.launch.server import client_host

    split = split_gpus(
        [str(i) for i in range(target.gpus)] if o.gpus is not None or (target.described and not cuda_available()) else visible_gpus(),
        o.vllm_gpus,
        cfg.vllm_data_parallel_size,
    )
    per_node = len(split.train) if o.num_processes is None else o.num_processes // o.num_machines
    if per_node > len(split.train):
        raise ConfigError(
            f"--num-processes {o.num_processes} needs {per_node} training GPUs per machine; "
            f"--vllm-gpus {o.vllm_gpus} leaves {len(split.train)} ({','.join(split.train)})"
        )
    server_mode = {"use_vllm": True, "vllm_mode": "server", "vllm_server_base_url": None,
                   "vllm_server_host": client_host(o.num_machines, o.main_process_ip)}  # fmt: skip
    return per_node * o.num_machines, split, list(split.train), server_mode


def execute(plan: Plan, echo: Callable[[str], None] = print) -> dict | None:
    """Runs the plan: writes the resolved config, trains (here, or through the launcher and the
    server, every process supervised), then writes the final outputs when this process is their
    one writer (`Plan.parent_writes_outputs`). Returns their summary (None without). UserError on a
    refusal, a failed or interrupted run."""
    from olmocr_rl.procs import Interrupted

    if errors(plan.problems):
        raise ConfigError(f"{len(errors(plan.problems))} pre-flight problem(s); nothing was launched")
    cfg = plan.cfg
    # One run at a time per output folder; on several machines each holds a copy of the command
    # (and the folder is often shared storage), so the lock is for one machine only.
    lock = folder_lock(cfg.output_dir, "train") if plan.options.num_machines == 1 else contextlib.nullcontext()
    with lock:
        cfg.to_json(plan.config_path)
        from olmocr_rl.train.console import announce

        announce(plan)  # what the run is and where it writes, before any process loads the model
        from olmocr_rl.train.worker import write_final_outputs

        try:
            if not plan.distributed:
                return _in_process(plan)
            code = _launch(plan, echo)
        except Interrupted as e:
            raise TrainingFailed(f"interrupted ({e}); every process it started was stopped. {resume_hint(cfg)}", 130) from None
        if code != 0:
            raise TrainingFailed(f"training exited with status {code}", code)
        # The ranks were told to leave them to this process (PARENT_ENV): it writes them from the saved model.
        return (
            write_final_outputs(cfg)
            if plan.parent_writes_outputs and plan.options.machine_rank == 0 and cfg.final_outputs != "none"
            else None
        )


def _in_process(plan: Plan) -> dict | None:
    """One process: training here; its DataLoader workers stopped with it on SIGINT/SIGTERM/SIGHUP."""
    from olmocr_rl.procs import Interrupted, ProcessTree, interrupts
    from olmocr_rl.train.worker import run as run_worker

    tree = ProcessTree()
    try:
        with interrupts():
            return run_worker(plan.cfg, plan.inputs, cuda=plan.cuda).get("outputs")
    except Interrupted:
        tree.stop(grace=10)
        raise


def _launch(plan: Plan, echo: Callable[[str], None]) -> int:
    from olmocr_rl.launch.launchers import launch
    from olmocr_rl.launch.server import VLLMServer, server_env
    from olmocr_rl.launch.supervise import supervise

    assert plan.launcher_argv is not None and plan.env is not None
    if plan.split is None:
        return launch(plan.launcher_argv, plan.env)
    cfg, server = plan.cfg, None
    if plan.server_argv is not None:
        url = f"http://127.0.0.1:{cfg.vllm_server_port}"
        server = VLLMServer(plan.server_argv, server_env(plan.split), Path(cfg.output_dir) / "logs" / "vllm.log", url)
    echo(plan.split.describe())
    return supervise(plan.launcher_argv, plan.env, server=server, timeout=cfg.vllm_server_timeout, echo=echo)


def resume_hint(cfg: TrainConfig) -> str:
    """Where the last checkpoint is, and the line that continues from it."""
    from transformers.trainer_utils import get_last_checkpoint

    last = get_last_checkpoint(cfg.output_dir) if Path(cfg.output_dir).is_dir() else None
    if last is None:
        return "No checkpoint was written yet."
    return f"Last checkpoint: {last}; continue with the same command and --resume auto."
