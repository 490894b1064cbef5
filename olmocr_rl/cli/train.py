"""`olmocr-rl train`: GRPO on a prepared folder; one process in-process, several via accelerate."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, NoReturn, Optional

import typer

from olmocr_rl.cli import app


@app.command()
def train(
    prepared_dir: Annotated[Path, typer.Argument(help="A folder made by `olmocr-rl prepare`.")],
    overrides: Annotated[Optional[list[str]], typer.Argument(help="KEY=VALUE config overrides (rewards.eos=0.1, trl.top_k=50).", show_default=False)] = None,
    model: Annotated[str, typer.Option("--model", help="Model path or hub id (an image-text-to-text VLM).")] = "",
    output_dir: Annotated[Optional[Path], typer.Option("--output-dir", "-o", help="Checkpoints, logs, outputs.")] = None,
    config: Annotated[Optional[Path], typer.Option("--config", "-c", help="A recipe: YAML or TOML.")] = None,
    set_: Annotated[Optional[list[str]], typer.Option("--set", help="KEY=VALUE override (repeatable).")] = None,
    resume: Annotated[Optional[str], typer.Option("--resume", help="'auto' (latest checkpoint in --output-dir) or a checkpoint folder.")] = None,
    num_processes: Annotated[int, typer.Option("--num-processes", min=1, help="Training processes in total (all machines).")] = 1,
    zero: Annotated[Optional[int], typer.Option("--zero", min=1, max=3, help="DeepSpeed ZeRO stage.")] = None,
    num_machines: Annotated[int, typer.Option("--num-machines", min=1)] = 1,
    machine_rank: Annotated[int, typer.Option("--machine-rank", min=0)] = 0,
    main_process_ip: Annotated[Optional[str], typer.Option("--main-process-ip")] = None,
    main_process_port: Annotated[Optional[int], typer.Option("--main-process-port")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the plan (config, batch arithmetic, command) and exit.")] = False,
) -> None:
    """Train a VLM with GRPO, the olmOCR-bench pass rate as the reward (olmOCR 2 recipe defaults)."""
    from olmocr_rl.train.config import ConfigError, cuda_available, grpo_kwargs, load_config
    from olmocr_rl.train.preflight import errors, generation_batch, preflight

    try:
        cfg = load_config(config, [*(set_ or []), *(overrides or [])], prepared_dir=str(prepared_dir), model=model or None,
                          output_dir=str(output_dir) if output_dir else None, resume=resume)
        cuda = cuda_available()
        if cfg.bf16 is None:
            cfg.bf16 = cuda  # resolved here so every rank (and accelerate's mixed precision) agrees
        kwargs = grpo_kwargs(cfg, cuda=cuda, world_size=num_processes, deepspeed=zero is not None)
    except ConfigError as e:
        _fail(str(e))
    problems = preflight(cfg, num_processes, cfg.prepared_dir)
    for p in problems:
        typer.echo(str(p), err=True)
    distributed = num_processes > 1 or zero is not None or num_machines > 1
    config_path = Path(cfg.output_dir) / "train_config.json"
    launch_kw = dict(num_processes=num_processes, zero=zero, num_machines=num_machines, machine_rank=machine_rank,
                     main_process_ip=main_process_ip, main_process_port=main_process_port)
    if dry_run:
        _print_plan(cfg, kwargs, num_processes, generation_batch(cfg, num_processes), config_path, distributed, launch_kw)
        raise typer.Exit(1 if errors(problems) else 0)
    if errors(problems):
        _fail(f"{len(errors(problems))} pre-flight problem(s); nothing was launched")
    cfg.to_json(config_path)
    from olmocr_rl.train.worker import run, write_final_outputs

    try:
        if not distributed:
            outputs = run(cfg).get("outputs")
        else:
            try:
                from olmocr_rl.train.launch import launch  # the accelerate launcher

                code = launch(config_path, **launch_kw)
            except (ImportError, ValueError) as e:  # no launcher; flag combinations it refuses
                _fail(str(e))
            if code != 0:
                _fail(f"training exited with status {code}", code)
            # Ranks do not generate: one process writes the outputs from the saved model.
            outputs = write_final_outputs(cfg) if machine_rank == 0 and cfg.final_outputs != "none" else None
    except ConfigError as e:
        _fail(str(e))
    if outputs:
        typer.echo(f"outputs: {outputs['candidate']}  (score them: {outputs['bench_command']})")


def _fail(message: str, code: int = 1) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def _print_plan(cfg, kwargs: dict, world: int, gen_batch: int, config_path: Path, distributed: bool, launch_kw: dict) -> None:  # noqa: ANN001
    typer.echo("resolved config:")
    typer.echo(json.dumps(cfg.to_dict(), indent=2))
    typer.echo(f"world size: {world}")
    steps = cfg.steps_per_generation or cfg.gradient_accumulation_steps
    typer.echo(f"generation batch: {cfg.per_device_train_batch_size} per device x {world} processes x {steps} steps = {gen_batch} "
               f"completions = {gen_batch / cfg.num_generations:g} pages x {cfg.num_generations} generations")
    typer.echo("trl.GRPOConfig: " + json.dumps({k: v for k, v in kwargs.items() if k != "output_dir"}, default=str))
    if distributed:
        try:
            from olmocr_rl.train.launch import build_launch_argv, format_plan, launch_env

            argv = build_launch_argv(config_path, **launch_kw)
        except (ImportError, ValueError) as e:
            _fail(str(e))
        typer.echo("command: " + format_plan(argv, launch_env(world // launch_kw["num_machines"])))
    else:
        typer.echo(f"command: python -m olmocr_rl.train.worker {config_path}  (in this process)")
