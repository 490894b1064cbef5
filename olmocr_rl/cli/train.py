"""`olmocr-rl train`: GRPO on a prepared folder; one process in-process, several via accelerate."""

import json
import os
from pathlib import Path
from types import SimpleNamespace as Namespace
from typing import Annotated, Optional

import typer

from olmocr_rl.cli import app, debug_enabled, echo, fail


ABOUT = "Train a VLM with GRPO, the olmOCR-bench pass rate as the reward (olmOCR 2 recipe defaults)."


@app.command("train", help=ABOUT)
def train_command(
    prepared_dir: Annotated[Path, typer.Argument(help="A folder made by `olmocr-rl prepare`.", show_default=False)],
    # KEY=VALUE words anywhere on the line (click collects positionals between options).
    overrides: Annotated[Optional[list[str]], typer.Argument(metavar="[KEY=VALUE]...", help="Config overrides (rewards.eos=0.1, trl.top_k=50).", show_default=False)] = None,
    model: Annotated[str, typer.Option("--model", help="Model path or hub id (an image-text-to-text VLM).")] = "",
    output_dir: Annotated[Optional[Path], typer.Option("--output-dir", "-o", help="Checkpoints, logs, outputs.")] = None,
    config: Annotated[Optional[Path], typer.Option("--config", "-c", help="A recipe: YAML or TOML.")] = None,
    set_: Annotated[Optional[list[str]], typer.Option("--set", metavar="KEY=VALUE", help="Config override (repeatable).")] = None,
    resume: Annotated[Optional[str], typer.Option("--resume", help="'auto' (latest checkpoint in --output-dir) or a checkpoint folder.")] = None,
    num_processes: Annotated[int, typer.Option("--num-processes", min=1, help="Training processes in total (all machines).")] = 1,
    zero: Annotated[Optional[int], typer.Option("--zero", min=1, max=3, help="DeepSpeed ZeRO stage (1, 2 or 3).")] = None,
    num_machines: Annotated[int, typer.Option("--num-machines", min=1, help="Machines (nodes) in the run.")] = 1,
    machine_rank: Annotated[int, typer.Option("--machine-rank", min=0, help="This machine's rank, 0 to --num-machines - 1.")] = 0,
    main_process_ip: Annotated[Optional[str], typer.Option("--main-process-ip", help="Address of the rank-0 machine (several machines).")] = None,
    main_process_port: Annotated[Optional[int], typer.Option("--main-process-port", help="Its port (default: a free one; 29500 for several machines).")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the plan (config, batch arithmetic, command) and exit.")] = False,
    debug: Annotated[bool, typer.Option("--debug", help="Show the traceback when the training stack refuses the configuration.")] = False,
) -> int:
    if debug:
        os.environ["OLMOCR_RL_DEBUG"] = "1"  # also for the launched ranks
    args = Namespace(**locals())
    args.overrides = list(overrides or [])
    return run(args)


def run(args: Namespace) -> int:
    from olmocr_rl.train.config import ConfigError, cuda_available, grpo_kwargs, load_config
    from olmocr_rl.train.preflight import errors, generation_batch, preflight

    try:
        cfg = load_config(args.config, [*(args.set_ or []), *args.overrides], prepared_dir=str(args.prepared_dir),
                          model=args.model or None, output_dir=str(args.output_dir) if args.output_dir else None, resume=args.resume)
        cuda = cuda_available()
        if cfg.bf16 is None:
            cfg.bf16 = cuda  # resolved here so every rank (and accelerate's mixed precision) agrees
        kwargs = grpo_kwargs(cfg, cuda=cuda, world_size=args.num_processes, deepspeed=args.zero is not None)
    except ConfigError as e:
        fail(str(e))
    problems = preflight(cfg, args.num_processes, cfg.prepared_dir)
    for p in problems:
        echo(str(p), err=True)
    distributed = args.num_processes > 1 or args.zero is not None or args.num_machines > 1
    config_path = Path(cfg.output_dir) / "train_config.json"
    launch_kw = {k: getattr(args, k) for k in ("num_processes", "zero", "num_machines", "machine_rank", "main_process_ip", "main_process_port")}
    if args.dry_run:
        _print_plan(cfg, kwargs, args.num_processes, generation_batch(cfg, args.num_processes), config_path, distributed, launch_kw)
        return 1 if errors(problems) else 0
    if errors(problems):
        fail(f"{len(errors(problems))} pre-flight problem(s); nothing was launched")
    cfg.to_json(config_path)
    from olmocr_rl.train.worker import run as run_worker
    from olmocr_rl.train.worker import write_final_outputs

    try:
        if not distributed:
            outputs = run_worker(cfg).get("outputs")
        else:
            try:
                from olmocr_rl.train.launch import launch  # the accelerate launcher

                code = launch(config_path, **launch_kw)
            except (ImportError, ValueError) as e:  # no launcher; flag combinations it refuses
                fail(str(e))
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


def _print_plan(cfg, kwargs: dict, world: int, gen_batch: int, config_path: Path, distributed: bool, launch_kw: dict) -> None:  # noqa: ANN001
    echo("resolved config:")
    echo(json.dumps(cfg.to_dict(), indent=2))
    echo(f"world size: {world}")
    steps = cfg.steps_per_generation or cfg.gradient_accumulation_steps
    echo(f"generation batch: {cfg.per_device_train_batch_size} per device x {world} processes x {steps} steps = {gen_batch} "
         f"completions = {gen_batch / cfg.num_generations:g} pages x {cfg.num_generations} generations")
    echo("trl.GRPOConfig: " + json.dumps({k: v for k, v in kwargs.items() if k != "output_dir"}, default=str))
    if distributed:
        try:
            from olmocr_rl.train.launch import build_launch_argv, format_plan, launch_env

            argv = build_launch_argv(config_path, **launch_kw)
        except (ImportError, ValueError) as e:
            fail(str(e))
        echo("command: " + format_plan(argv, launch_env(world // launch_kw["num_machines"])))
    else:
        echo(f"command: python -m olmocr_rl.train.worker {config_path}  (in this process)")
