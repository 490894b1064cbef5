"""`olmocr-rl train`: options into a TrainConfig and LaunchOptions; olmocr_rl.train.plan builds
the plan (printed by --dry-run) and carries it out. Also the rank entry point: a process a launcher
started runs one rank (`python -m olmocr_rl.train PREPARED --config RESOLVED.json`:
olmocr_rl.train.rank)."""

import os
from pathlib import Path
from typing import Annotated, Optional

import typer

from olmocr_rl.cli import (
    MachineRankOption,
    MainProcessIpOption,
    MainProcessPortOption,
    NumMachinesOption,
    QuietOption,
    app,
    echo,
    example,
    fail,
)

ABOUT = "Train a VLM with GRPO, the olmOCR-bench pass rate as the reward (olmOCR 2 recipe defaults)."


def _options(value: bool) -> None:
    if value:
        from olmocr_rl.train.options import print_options

        print_options()
        raise typer.Exit(0)


@app.command("train", epilog=example("olmocr-rl train prepared --model M -o run --config olmocr2 --dry-run"), help=ABOUT, short_help=ABOUT)
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
        Optional[str], typer.Option("--config", help="A recipe: a YAML/TOML file, or a packaged one by name (olmocr2).")
    ] = None,
    set_: Annotated[Optional[list[str]], typer.Option("--set", metavar="KEY=VALUE", help="Config override (repeatable).")] = None,
    resume: Annotated[
        Optional[str],
        typer.Option(
            "--resume",
            help="'auto' (latest checkpoint in --output-dir) or a checkpoint folder: continue the run there (its logged rows "
            "after that checkpoint are dropped, and logged again).",
        ),
    ] = None,
    overwrite: Annotated[
        bool,
        typer.Option(
            "--overwrite",
            help="When --output-dir holds a run (a checkpoint-N folder, logs/metrics.jsonl, runs/, train_summary.json, "
            "outputs/, completions/ or report.html): delete everything in it and train from scratch. Without it (or --resume) such a folder "
            "is refused; a folder with none of these is trained into beside what it holds.",
        ),
    ] = False,
    num_processes: Annotated[
        Optional[int],
        typer.Option(
            "--num-processes",
            min=1,
            help="Training processes in total (all machines). Default: one per GPU of the node(s) planned for "
            "(--gpus, else this machine's; less --vllm-gpus), 1 without GPUs.",
            show_default=False,
        ),
    ] = None,
    zero: Annotated[Optional[int], typer.Option("--zero", min=1, max=3, help="DeepSpeed ZeRO stage (1, 2 or 3).")] = None,
    launcher: Annotated[str, typer.Option("--launcher", help="What starts the ranks: accelerate or deepspeed.")] = "accelerate",
    vllm_gpus: Annotated[
        Optional[int],
        typer.Option("--vllm-gpus", min=1, help="Serve generation with vLLM on this node's last K GPUs; train on the others."),
    ] = None,
    num_machines: NumMachinesOption = 1,
    machine_rank: MachineRankOption = 0,
    main_process_ip: MainProcessIpOption = None,
    main_process_port: MainProcessPortOption = None,
    hostfile: Annotated[
        Optional[Path], typer.Option("--hostfile", help="DeepSpeed hostfile (--launcher deepspeed on several machines).")
    ] = None,
    gpus: Annotated[
        Optional[int],
        typer.Option(
            "--gpus", min=0, help="GPUs per node of the machine to plan for (default: this machine's; 0: a CPU plan).", show_default=False
        ),
    ] = None,
    gpu_memory: Annotated[
        Optional[float],
        typer.Option(
            "--gpu-memory",
            min=1.0,
            metavar="GIB",
            help="Memory of one GPU in GiB, as torch reports it (default: this machine's).",
            show_default=False,
        ),
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Print the plan and exit: the verdict in a line, batch arithmetic, disk, memory per GPU, the GPU split and "
            "commands, then the verdict in full (does it start, fit each GPU and the disk; steps; generation at most).",
        ),
    ] = False,
    show_config: Annotated[
        bool,
        typer.Option(
            "--show-config",
            help="With --dry-run: print the resolved config and trl.GRPOConfig's arguments too (else only the file it is written to).",
        ),
    ] = False,
    debug: Annotated[bool, typer.Option("--debug", help="Show the traceback when the training stack refuses the configuration.")] = False,
    quiet: QuietOption = False,  # no bar, step lines or completions tables (every rank: olmocr_rl/engines.py QUIET_ENV); the metrics go on
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
        os.environ["OLMOCR_RL_DEBUG"] = "1"  # also for the launched ranks; main() restores it afterwards
    from olmocr_rl.launch.launchers import LaunchOptions
    from olmocr_rl.model_ref import resolve_model
    from olmocr_rl.prepared import read_manifest
    from olmocr_rl.train.config_file import read_config
    from olmocr_rl.train.keys import early_values
    from olmocr_rl.train.preflight import trl_problem
    from olmocr_rl.train.rank import launched_rank
    from olmocr_rl.train.run_folder import reuse_problem

    rank = launched_rank(local_rank)
    # Answered in a second, before trl is imported: options that contradict each other, the launch
    # options, a trl the trainer was not read against (or no training extra), a key no config has or a
    # value of the wrong type, a required value not given, a folder that is not prepared, an output
    # folder that holds a run, a model that is nowhere.
    if show_config and not dry_run:
        fail("--show-config needs --dry-run (it prints the plan's config; without --dry-run the run would train)", 2)
    if overwrite and resume is not None:
        fail("--overwrite deletes the run that --resume continues: give one of them", 2)
    options_ = LaunchOptions(num_processes=num_processes, zero=zero, launcher=launcher, vllm_gpus=vllm_gpus, num_machines=num_machines,
                             machine_rank=machine_rank, main_process_ip=main_process_ip, main_process_port=main_process_port,
                             hostfile=str(hostfile) if hostfile else None, gpus=gpus, gpu_memory=gpu_memory)  # fmt: skip
    if (problem := trl_problem()) is not None:
        fail(f"{problem.message}; {problem.fix}")
    recipe = read_config(config)  # read once: the early check and the config read the same mapping
    early = early_values(recipe, [*(set_ or []), *(overrides or [])])
    reuse = None
    if not rank:
        configured, out = model or early.get("model"), output_dir or early.get("output_dir")
        if not configured:
            fail("--model is required (a model folder or hub id; or model: in the config)")
        if not out:
            fail("--output-dir (-o) is required (the run's folder; or output_dir: in the config)")
        if not dry_run:  # a prepared folder, before anything heavy (a dry run plans without one, naming the problem)
            read_manifest(prepared_dir)
        if machine_rank == 0:  # another machine's copy of the command finds machine 0's run starting there (shared storage)
            reuse = reuse_problem(out, resume=resume or early.get("resume"), overwrite=overwrite)
            if reuse is not None and not dry_run:
                fail(": ".join(reuse))
        resolve_model(configured, "--model" if model else "model", trains=True)
    from olmocr_rl.train.config import load_config
    from olmocr_rl.train.plan import build_plan, execute
    from olmocr_rl.train.preflight import errors
    from olmocr_rl.train.rank import rank_main

    cfg = load_config(
        recipe,
        [*(set_ or []), *(overrides or [])],
        prepared_dir=str(prepared_dir),
        model=model or None,
        output_dir=str(output_dir) if output_dir else None,
        resume=resume,
    )
    if rank:
        return rank_main(cfg, zero, dry_run=dry_run, echo=echo)
    from olmocr_rl.recipes import recipe_path

    packaged = config if config and not Path(config).is_file() and recipe_path(config) else None
    plan = build_plan(cfg, options_, strict=strict, recipe=packaged)
    if dry_run and machine_rank == 0:  # the run folder, as a problem: reused, "will NOT start"; to be deleted, a warning
        from dataclasses import replace

        from olmocr_rl.train.preflight import Problem
        from olmocr_rl.train.run_folder import run_marks

        if reuse is not None:
            plan = replace(plan, problems=(Problem("output_dir", *reuse), *plan.problems))
        elif overwrite and (marks := run_marks(cfg.output_dir)):
            deleted = Problem("output_dir", f"{cfg.output_dir} holds a run ({', '.join(marks)}): --overwrite deletes everything in it "
                              "when training starts", "drop --overwrite to keep it (and --resume auto to continue it)", "warning")  # fmt: skip
            plan = replace(plan, problems=(deleted, *plan.problems))
    if dry_run:  # the verdict in a line, the problems, the plan, the verdict in full
        from olmocr_rl.train.plan import write_config

        summary, _, rest = plan.describe(show_config=show_config, config_file=write_config(plan)).partition("\n")
        echo(summary)
        for p in plan.problems:
            echo(str(p), err=True)
        echo(rest)
        return 1 if errors(plan.problems) else 0
    for p in plan.problems:
        echo(str(p), err=True)
    if not errors(plan.problems):
        _prepare_output_dir(plan.cfg, overwrite=overwrite, machine_rank=machine_rank)
    outputs = execute(plan, echo)
    if outputs:
        echo(f"outputs: {outputs['candidate']}  (score them: {outputs['bench_command']})")
    return 0


def _prepare_output_dir(cfg, *, overwrite: bool, machine_rank: int) -> None:
    """Before the run writes: with --overwrite, the run in the output folder deleted (the folder's
    lock held: not under a run that is writing it); with --resume, its logged rows after the
    checkpoint resumed from dropped (olmocr_rl/train/run_folder.py). Machine 0's to do."""
    from olmocr_rl.folder_lock import LOCK_NAME, folder_lock
    from olmocr_rl.train.run_folder import clear_run, trim_metrics

    if machine_rank != 0:
        return
    if overwrite:
        with folder_lock(cfg.output_dir, "train"):
            if clear_run(cfg.output_dir, keep=(LOCK_NAME,)):
                echo(f"--overwrite: deleted the run in {cfg.output_dir}", err=True)
    elif cfg.resume is not None:
        from olmocr_rl.train.worker import resolve_resume

        if (checkpoint := resolve_resume(cfg)) is not None and Path(checkpoint).parent.resolve() == Path(cfg.output_dir).resolve():
            trim_metrics(cfg.output_dir, checkpoint)
