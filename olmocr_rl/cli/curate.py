"""`olmocr-rl curate`: sample every train page N times, score the samples with the training
reward, and keep for training the pages whose samples disagree (olmocr_rl/curate/)."""

from pathlib import Path
from typing import Annotated, Optional

import typer

from olmocr_rl.cli import (
    EagerOption,
    LoopRuleOption,
    MachineRankOption,
    MainProcessIpOption,
    MainProcessPortOption,
    NumMachinesOption,
    PagesDryRunOption,
    QuietOption,
    StopLoopsOption,
    TensorParallelOption,
    WorkersOption,
    app,
    echo,
    example,
    fail,
    loop_rule_option,
    page_progress,
)

ABOUT = """Sample N completions of every train page with the model, score them with the training
reward (the config's bench rewards and guard), write PREPARED/difficulty.jsonl (resumable), and
write the pages whose samples disagree as a split that `train` reads (train_split=NAME)."""


@app.command(
    "curate",
    epilog=example("olmocr-rl curate prepared --model M --config olmocr2"),
    help=ABOUT,
    short_help="Choose training pages by difficulty: keep those whose sampled rewards disagree.",
)
def curate_command(
    prepared_dir: Annotated[Path, typer.Argument(help="A folder made by `olmocr-rl prepare`.", show_default=False)],
    overrides: Annotated[
        Optional[list[str]],
        typer.Argument(metavar="[KEY=VALUE]...", help="Training config overrides (temperature=1.0, bench_guard=none).", show_default=False),
    ] = None,
    model: Annotated[str, typer.Option("--model", help="Model path or hub id (default: the model of an existing difficulty file).")] = "",
    samples: Annotated[int, typer.Option("--samples", "-n", min=2, help="Completions sampled per page.")] = 8,
    engine: Annotated[str, typer.Option("--engine", help="transformers, or vllm (its offline engine), as `generate`.")] = "transformers",
    config: Annotated[
        Optional[str],
        typer.Option("--config", help="The training recipe (YAML/TOML or a packaged name): rewards, guard, temperature, length."),
    ] = None,
    set_: Annotated[Optional[list[str]], typer.Option("--set", metavar="KEY=VALUE", help="Config override (repeatable).")] = None,
    include_eval: Annotated[bool, typer.Option("--eval", help="Score the eval pages too (recorded, never selected).")] = False,
    batch_size: Annotated[int, typer.Option("--batch-size", min=1, help="Completions per generate call.")] = 16,
    output: Annotated[
        Optional[Path], typer.Option("--output", "-o", help="The difficulty file (default: PREPARED/difficulty.jsonl).")
    ] = None,
    name: Annotated[str, typer.Option("--name", help="The selection's split: PREPARED/NAME.jsonl, trained with train_split=NAME.")] = (
        "curated"
    ),
    min_std: Annotated[float, typer.Option("--min-std", min=0.0, help="Keep pages whose reward std is above this.")] = 0.0,
    min_mean: Annotated[
        Optional[float], typer.Option("--min-mean", help="Keep only pages whose mean reward is above this (default: no bound).")
    ] = None,
    max_mean: Annotated[
        Optional[float], typer.Option("--max-mean", help="Keep only pages whose mean reward is below this (default: no bound).")
    ] = None,
    stop_loops: StopLoopsOption = False,
    loop_rule: LoopRuleOption = None,
    eager: EagerOption = None,
    quiet: QuietOption = False,
    num_processes: WorkersOption = 1,
    tensor_parallel: TensorParallelOption = 1,
    num_machines: NumMachinesOption = 1,
    machine_rank: MachineRankOption = 0,
    main_process_ip: MainProcessIpOption = None,
    main_process_port: MainProcessPortOption = None,
    dry_run: PagesDryRunOption = False,
) -> int:
    from dataclasses import replace

    from olmocr_rl.curate import CurateJob, KeepRule, file_model, run_job
    from olmocr_rl.engines import engine_kind
    from olmocr_rl.errors import need_extra
    from olmocr_rl.launch.launchers import LaunchOptions
    from olmocr_rl.launch.pages import Workers, vllm_port_problem
    from olmocr_rl.model_ref import resolve_model
    from olmocr_rl.prepared import read_manifest
    from olmocr_rl.prompts import resolve_prompt
    from olmocr_rl.train.config import engine_settings, load_config
    from olmocr_rl.train.config_file import read_config
    from olmocr_rl.train.keys import check_keys

    engine_kind(engine, tensor_parallel)  # a name the table knows, and an engine that spans GPUs if asked to, before anything is read
    launch = LaunchOptions(num_processes=num_processes, num_machines=num_machines, machine_rank=machine_rank,
                           main_process_ip=main_process_ip, main_process_port=main_process_port)  # fmt: skip
    workers = Workers(launch, tensor_parallel=tensor_parallel)
    if port := vllm_port_problem(workers, engine):
        fail(port)
    path = output or prepared_dir / "difficulty.jsonl"
    try:
        read_manifest(prepared_dir)  # a prepared folder, before anything else is read or written
        need_extra("train", "curate")  # its engines and the training config (trl's keys): not "a bug" in a scoring-only install
        model = model or file_model(path)
        if not model:
            fail("--model is required (there is no difficulty file to take it from)")
        # Answered in a second, before trl is imported: a key no config has, a model that is nowhere.
        recipe = read_config(config)  # read once: the early check and the config read the same mapping
        check_keys(recipe, [*(set_ or []), *(overrides or [])])
        resolve_model(model)
        local = Path(model)
        model = str(local.resolve()) if local.exists() else model  # the same folder, whatever the working directory
        # The training config, for the rewards, guard, temperature, length, prompt and the engine's
        # settings (output_dir is the trainer's, unused here).
        cfg = load_config(recipe, [*(set_ or []), *(overrides or [])], prepared_dir=str(prepared_dir), model=model,
                          output_dir=str(prepared_dir))  # fmt: skip
        from olmocr_rl.loops import rule_from

        # The rule: the training config's loop keys (their defaults where it has none), changed by --loop-rule.
        rule = loop_rule_option(stop_loops, loop_rule, rule_from(cfg, stop=True))
        settings = replace(engine_settings(cfg, eager=eager), tensor_parallel=tensor_parallel, loop_rule=rule)
        job = CurateJob(prepared_dir, path, engine, settings, samples, cfg.temperature, dict(cfg.rewards),
                        cfg.bench_guard, cfg.reward_threads, resolve_prompt(cfg.prompt) if cfg.prompt else None, cfg.top_p,
                        include_eval, batch_size, KeepRule(min_std, min_mean, max_mean), name, cfg.num_generations, config, workers,
                        tuple([*(set_ or []), *(overrides or [])]))  # fmt: skip
        if workers.launched:
            from olmocr_rl.curate.parallel import job_folder

            workers.launcher_argv(job_folder(path).job_file)  # the launch options checked (train's checks)
        if dry_run:
            from olmocr_rl.curate.parallel import dry_run_lines

            echo("\n".join(dry_run_lines(job)))
            return 0
        update, close = page_progress("sampling pages" + (f" ({num_processes} workers)" if workers.launched else ""), quiet)
        run_job(job, echo, update, close)
    except (KeyError, OSError) as e:
        fail(str(e).strip("'\""))
    return 0
