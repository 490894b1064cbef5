"""`olmocr-rl train`: GRPO on a prepared folder; one process in-process, several via accelerate."""

import json
import os
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace as Namespace
from typing import Annotated, Optional

import typer

from olmocr_rl.cli import app, debug_enabled, echo, fail

ABOUT = "Train a VLM with GRPO, the olmOCR-bench pass rate as the reward (olmOCR 2 recipe defaults)."


def _options(value: bool) -> None:
    if value:
        from rich.console import Console
        from rich.table import Table

        from olmocr_rl.train.config import options_table

        table = Table(title="training config keys (YAML/TOML --config, KEY=VALUE, --set)", title_justify="left")
        table.add_column("key", no_wrap=True)
        for col in ("type", "default", "meaning"):
            table.add_column(col, overflow="fold")
        for row in options_table():
            table.add_row(*row)
        Console().print(table)
        raise typer.Exit(0)


@app.command("train", help=ABOUT)
def train_command(
    prepared_dir: Annotated[Path, typer.Argument(help="A folder made by `olmocr-rl prepare`.", show_default=False)],
    # KEY=VALUE words anywhere on the line (click collects positionals between options).
    overrides: Annotated[
        Optional[list[str]],
        typer.Argument(metavar="[KEY=VALUE]...", help="Config overrides (rewards.eos=0.1, trl.top_k=50).", show_default=False),
    ] = None,
    model: Annotated[str, typer.Option("--model", help="Model path or hub id (an image-text-to-text VLM).")] = "",
    output_dir: Annotated[Optional[Path], typer.Option("--output-dir", "-o", help="Checkpoints, logs, outputs.")] = None,
    config: Annotated[
        Optional[str], typer.Option("--config", "-c", help="A recipe: a YAML/TOML file, or a packaged one by name (olmocr2).")
    ] = None,
    set_: Annotated[Optional[list[str]], typer.Option("--set", metavar="KEY=VALUE", help="Config override (repeatable).")] = None,
    resume: Annotated[
        Optional[str], typer.Option("--resume", help="'auto' (latest checkpoint in --output-dir) or a checkpoint folder.")
    ] = None,
    num_processes: Annotated[
        Optional[int],
        typer.Option(
            "--num-processes",
            min=1,
            help="Training processes in total (all machines). Default 1, or every training GPU with --vllm-gpus.",
            show_default=False,
        ),
    ] = None,
    zero: Annotated[Optional[int], typer.Option("--zero", min=1, max=3, help="DeepSpeed ZeRO stage (1, 2 or 3).")] = None,
    launcher: Annotated[str, typer.Option("--launcher", help="What starts the ranks: accelerate or deepspeed.")] = "accelerate",
    vllm_gpus: Annotated[
        Optional[int],
        typer.Option("--vllm-gpus", min=1, help="Serve generation with vLLM on this node's last K GPUs; train on the others."),
    ] = None,
    num_machines: Annotated[int, typer.Option("--num-machines", min=1, help="Machines (nodes) in the run.")] = 1,
    machine_rank: Annotated[int, typer.Option("--machine-rank", min=0, help="This machine's rank, 0 to --num-machines - 1.")] = 0,
    main_process_ip: Annotated[
        Optional[str], typer.Option("--main-process-ip", help="Address of the rank-0 machine (several machines).")
    ] = None,
    main_process_port: Annotated[
        Optional[int], typer.Option("--main-process-port", help="Its port (default: a free one; 29500 for several machines).")
    ] = None,
    hostfile: Annotated[
        Optional[Path], typer.Option("--hostfile", help="DeepSpeed hostfile (--launcher deepspeed on several machines).")
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the plan (config, batch arithmetic, GPU split, commands) and exit.")
    ] = False,
    debug: Annotated[bool, typer.Option("--debug", help="Show the traceback when the training stack refuses the configuration.")] = False,
    strict: Annotated[
        bool, typer.Option("--strict", help="Pre-flight warnings (e.g. checkpoints that will not fit on the disk) stop the run.")
    ] = False,
    # What the `deepspeed` launcher passes each rank it starts (`deepspeed -m olmocr_rl.train ...`).
    local_rank: Annotated[Optional[int], typer.Option("--local_rank", "--local-rank", hidden=True)] = None,
    options: Annotated[
        Optional[bool],
        typer.Option(
            "--options", callback=_options, is_eager=True, help="List every config key with its type, default and meaning, and exit."
        ),
    ] = None,
) -> int:
    if debug:
        os.environ["OLMOCR_RL_DEBUG"] = "1"  # also for the launched ranks
    args = Namespace(**{k: v for k, v in locals().items() if k != "options"})
    args.overrides = list(overrides or [])
    return run(args)


def launched_rank(args: Namespace) -> bool:
    """True in a process a launcher started as one rank: the `deepspeed` launcher passes
    --local_rank (or, with --no_local_rank, sets LOCAL_SIZE/CROSS_RANK), torchrun sets
    TORCHELASTIC_RUN_ID; a LOCAL_RANK left in the environment alone is not enough."""
    env = os.environ
    return args.local_rank is not None or (
        "LOCAL_RANK" in env and "WORLD_SIZE" in env and any(k in env for k in ("TORCHELASTIC_RUN_ID", "LOCAL_SIZE", "CROSS_RANK"))
    )


def run(args: Namespace) -> int:
    from olmocr_rl.train.preflight import trl_problem

    if (problem := trl_problem()) is not None:  # before anything imports trl
        fail(f"{problem.message}; {problem.fix}")
    from olmocr_rl.train.config import ConfigError, cuda_available, grpo_kwargs, load_config
    from olmocr_rl.train.preflight import errors, generation_batch, preflight

    rank_mode = launched_rank(args)
    try:
        cfg = load_config(
            args.config,
            [*(args.set_ or []), *args.overrides],
            prepared_dir=str(args.prepared_dir),
            model=args.model or None,
            output_dir=str(args.output_dir) if args.output_dir else None,
            resume=args.resume,
        )
        cuda = cuda_available()
        if cfg.bf16 is None:
            cfg.bf16 = cuda  # resolved here so every rank (and accelerate's mixed precision) agrees
        plan = None if rank_mode else plan_launch(args, cfg)
        world = int(os.environ.get("WORLD_SIZE", "1")) if plan is None else plan.num_processes
        kwargs = grpo_kwargs(cfg, cuda=cuda, world_size=world, deepspeed=args.zero is not None)
    except (ConfigError, ValueError) as e:
        fail(str(e))
    problems = preflight(cfg, world, cfg.prepared_dir, cuda=cuda, deepspeed=True if args.zero is not None else None)
    if plan is not None and plan.server is not None:
        from olmocr_rl.train.vllm_server import port_problems

        problems += port_problems(cfg)
    if args.strict:
        problems = [replace(p, severity="error") for p in problems]
    quiet = rank_mode and int(os.environ.get("RANK", "0")) != 0
    for p in problems if not quiet else []:
        echo(str(p), err=True)
    config_path = Path(cfg.output_dir) / "train_config.json"
    if args.dry_run and plan is None:  # one rank of a launcher's job: the config it would train with
        if not quiet:
            echo(json.dumps(cfg.to_dict(), indent=2))
        return 1 if errors(problems) else 0
    if args.dry_run and plan is not None:
        _print_plan(cfg, kwargs, world, generation_batch(cfg, world), config_path, plan)
        return 1 if errors(problems) else 0
    if errors(problems):
        fail(f"{len(errors(problems))} pre-flight problem(s); nothing was launched")
    if rank_mode:
        return run_rank(cfg, args.zero, config_path)
    cfg.to_json(config_path)
    from olmocr_rl.train.worker import run as run_worker
    from olmocr_rl.train.worker import write_final_outputs

    try:
        if not plan.distributed:
            outputs = _in_process(cfg, run_worker)
        else:
            code = _launch(plan, config_path, cfg)
            if code != 0:
                fail(f"training exited with status {code}", code)
            # Ranks do not generate: one process writes the outputs from the saved model.
            outputs = write_final_outputs(cfg) if args.machine_rank == 0 and cfg.final_outputs != "none" else None
    except ConfigError as e:
        if debug_enabled():
            import traceback

            traceback.print_exc()
        fail(str(e))
    if outputs:
        echo(f"outputs: {outputs['candidate']}  (score them: {outputs['bench_command']})")
    return 0


def _in_process(cfg, run_worker):
    """One process: training here; its DataLoader workers stopped with it on SIGINT/SIGTERM/SIGHUP."""
    from olmocr_rl.procs import Interrupted, ProcessTree, interrupts

    tree = ProcessTree()
    try:
        with interrupts():
            return run_worker(cfg).get("outputs")
    except Interrupted as e:
        tree.stop(grace=10)
        fail(f"interrupted ({e}). {resume_hint(cfg)}", 130)


def plan_launch(args: Namespace, cfg) -> Namespace:
    """How the ranks start: the launcher command and environment, and with --vllm-gpus the GPU
    split and the server command (the resolved config then points at the server)."""
    from olmocr_rl.train.launch import launch_env, launcher_argv

    split = server = None
    num_processes = args.num_processes or 1
    gpus = None
    if args.vllm_gpus:
        from olmocr_rl.train.vllm_server import client_host, server_argv, split_gpus, visible_gpus

        split = split_gpus(visible_gpus(), args.vllm_gpus, cfg.vllm_data_parallel_size)
        per_node = len(split.train) if args.num_processes is None else args.num_processes // args.num_machines
        if per_node > len(split.train):
            raise ValueError(
                f"--num-processes {args.num_processes} needs {per_node} training GPUs per machine; "
                f"--vllm-gpus {args.vllm_gpus} leaves {len(split.train)} ({','.join(split.train)})"
            )
        num_processes = per_node * args.num_machines
        gpus = list(split.train)
        cfg.use_vllm, cfg.vllm_mode, cfg.vllm_server_base_url = True, "server", None
        cfg.vllm_server_host = client_host(args.num_machines, args.main_process_ip)
        if args.machine_rank == 0:
            bind = "0.0.0.0" if args.num_machines > 1 else "127.0.0.1"
            server = server_argv(cfg, split, host=bind, port=cfg.vllm_server_port)
    elif args.launcher == "deepspeed" and os.environ.get("CUDA_VISIBLE_DEVICES"):
        from olmocr_rl.train.vllm_server import visible_gpus

        gpus = visible_gpus()  # the deepspeed launcher ignores CUDA_VISIBLE_DEVICES once told a count
    distributed = num_processes > 1 or args.zero is not None or args.num_machines > 1 or split is not None or args.launcher == "deepspeed"
    config_path = Path(cfg.output_dir) / "train_config.json"
    argv = env = None
    if distributed:
        argv = launcher_argv(
            config_path,
            args.launcher,
            num_processes=num_processes,
            zero=args.zero,
            num_machines=args.num_machines,
            machine_rank=args.machine_rank,
            main_process_ip=args.main_process_ip,
            main_process_port=args.main_process_port,
            hostfile=args.hostfile,
            gpus=gpus,
            mixed_precision="bf16" if cfg.bf16 else "no",  # from the config in hand (the file is written later)
        )
        env = launch_env(num_processes // args.num_machines)
        if split is not None and args.launcher == "accelerate":
            env["CUDA_VISIBLE_DEVICES"] = ",".join(split.train)
        elif gpus is not None:
            env.pop("CUDA_VISIBLE_DEVICES", None)  # the launcher's --include names them
    return Namespace(
        num_processes=num_processes, distributed=distributed, argv=argv, env=env, split=split, server=server, machine_rank=args.machine_rank,
        zero=args.zero,
    )  # fmt: skip


def _launch(plan: Namespace, config_path: Path, cfg) -> int:
    from olmocr_rl.train.launch import launch
    from olmocr_rl.train.supervise import Interrupted, ServerError, supervise
    from olmocr_rl.train.vllm_server import VLLMServer, server_env

    try:
        if plan.split is None:
            return launch(plan.argv, plan.env)
        server = None
        if plan.server is not None:
            url = f"http://127.0.0.1:{cfg.vllm_server_port}"
            server = VLLMServer(plan.server, server_env(plan.split), Path(cfg.output_dir) / "logs" / "vllm.log", url)
        echo(plan.split.describe())
        return supervise(plan.argv, plan.env, server=server, timeout=cfg.vllm_server_timeout, echo=echo)
    except ServerError as e:
        fail(str(e))
    except Interrupted as e:
        fail(f"interrupted ({e}); every process it started was stopped. {resume_hint(cfg)}", 130)


def resume_hint(cfg) -> str:
    """Where the last checkpoint is, and the line that continues from it."""
    from transformers.trainer_utils import get_last_checkpoint

    last = get_last_checkpoint(cfg.output_dir) if Path(cfg.output_dir).is_dir() else None
    if last is None:
        return "No checkpoint was written yet."
    return f"Last checkpoint: {last}; continue with the same command and --resume auto."


def run_rank(cfg, zero: Optional[int], config_path: Path) -> int:
    """This process is one rank of a launcher's job: train here, then rank 0 writes the outputs."""
    from olmocr_rl.train.config import ConfigError
    from olmocr_rl.train.launch import launch_env, shutdown_process_group, use_deepspeed_preset
    from olmocr_rl.train.worker import run as run_worker
    from olmocr_rl.train.worker import write_final_outputs

    rank = int(os.environ.get("RANK", "0"))
    # What `olmocr-rl train` gives the ranks it launches: ninja on PATH, the stable op cache.
    env = launch_env(base=dict(os.environ))
    os.environ["PATH"], os.environ["TORCH_EXTENSIONS_DIR"] = env["PATH"], env["TORCH_EXTENSIONS_DIR"]
    if rank == 0:
        cfg.to_json(config_path)
    if zero is not None:
        use_deepspeed_preset(zero, "bf16" if cfg.bf16 else "no")
    try:
        run_worker(cfg, final_outputs=False)
        shutdown_process_group()
        if rank == 0 and cfg.final_outputs != "none":
            outputs = write_final_outputs(cfg)
            echo(f"outputs: {outputs['candidate']}  (score them: {outputs['bench_command']})")
    except ConfigError as e:
        fail(str(e))
    return 0


def _prompt_line(cfg) -> str:
    from olmocr_rl.prompts import TEXT_FIRST, PromptError, resolve_prompt

    if cfg.prompt is None:
        return "each prepared page's own instruction (prepare --prompt / --prompt-file)"
    try:
        p = resolve_prompt(cfg.prompt)
    except PromptError as e:
        return f"{cfg.prompt}: {e}"
    return f"{p.name}: {p.source}; {'the instruction before the image' if p.layout == TEXT_FIRST else 'the image, then the instruction'}"


def _print_plan(cfg, kwargs: dict, world: int, gen_batch: int, config_path: Path, plan: Namespace) -> None:
    echo("resolved config:")
    echo(json.dumps(cfg.to_dict(), indent=2))
    echo(f"world size: {world}")
    steps = cfg.steps_per_generation or cfg.gradient_accumulation_steps
    echo(
        f"generation batch: {cfg.per_device_train_batch_size} per device x {world} processes x {steps} steps = {gen_batch} "
        f"completions = {gen_batch / cfg.num_generations:g} pages x {cfg.num_generations} generations"
    )
    echo("trl.GRPOConfig: " + json.dumps({k: v for k, v in kwargs.items() if k != "output_dir"}, default=str))
    from olmocr_rl.train.budget import estimate
    from olmocr_rl.train.data import read_split

    def pages(split: str, limit: int | None) -> int:
        try:
            return len(read_split(cfg.prepared_dir, split)[:limit])
        except ConfigError:
            return 0

    from olmocr_rl.train.config import ConfigError

    evaluated = pages(cfg.eval_split, cfg.max_eval_pages) if cfg.eval_enabled else 0
    budget = estimate(cfg, world, pages(cfg.train_split, cfg.max_train_pages), evaluated, deepspeed=plan.zero is not None)
    for line in budget.lines():
        echo(line)
    echo(f"prompt: {_prompt_line(cfg)}")
    if plan.split is not None:
        from olmocr_rl.train.launch import format_plan
        from olmocr_rl.train.vllm_server import server_env

        echo(plan.split.describe())
        if plan.server is not None:
            from olmocr_rl.train.vllm_server import weight_sync_port

            echo("server: " + format_plan(plan.server, None, server_env(plan.split, base={})))
            echo(f"ports: server {cfg.vllm_server_port} (vllm_server_port), weight sync {weight_sync_port(cfg)} (trl.vllm_group_port)")
        else:
            echo(
                f"server: none on this machine (machine rank {plan.machine_rank}); the trainer connects to {cfg.vllm_server_host}:{cfg.vllm_server_port}"
            )
    if plan.distributed:
        from olmocr_rl.train.launch import format_plan

        shown = (
            {"CUDA_VISIBLE_DEVICES": plan.env["CUDA_VISIBLE_DEVICES"]}
            if plan.split is not None and "CUDA_VISIBLE_DEVICES" in plan.env
            else {}
        )
        echo("command: " + format_plan(plan.argv, plan.env, shown))
    else:
        echo(f"command: python -m olmocr_rl.train.worker {config_path}  (in this process)")
