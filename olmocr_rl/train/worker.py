"""GRPO training in the current process (`run`): the whole run in one process, or one rank of a
launcher's job (trl and accelerate read the rank from the environment; olmocr_rl/train/plan.py and
olmocr_rl/train/rank.py call this, with the prepared folder they read and checked); and the
bench-style outputs of a trained model (`write_final_outputs`).
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from olmocr_rl.engines import rank_seed
from olmocr_rl.errors import ConfigError
from olmocr_rl.train.config import TrainConfig, engine_settings, trl_options_set
from olmocr_rl.train.data import Inputs


def world_size() -> int:
    return int(os.environ.get("WORLD_SIZE", "1"))


def rank() -> int:
    return int(os.environ.get("RANK", "0"))


def refused(cfg: TrainConfig, error: BaseException) -> ConfigError:
    """trl / transformers / accelerate refusing the configuration while the trainer is built, as
    one ConfigError naming the keys to change: the trl options you set that the message names,
    else all the trl options you set (the usual cause), else the message alone."""
    import re

    message = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    named = set(re.findall(r"\b[a-z][a-z0-9_]+\b", str(error)))
    chosen = trl_options_set(cfg)
    keys = [f"trl.{k}" for k in chosen if k in named] or [f"trl.{k}" for k in chosen]
    fix = f"; check {', '.join(keys)}" if keys else ""
    return ConfigError(f"trl refused the configuration while building the trainer: {message}{fix}")


def run_prompt(cfg: TrainConfig) -> Any:
    """The run's instruction when the config names one (else each prepared row's own)."""
    if cfg.prompt is None:
        return None
    from olmocr_rl.prompts import PromptError, resolve_prompt

    try:
        return resolve_prompt(cfg.prompt)
    except PromptError as e:
        raise ConfigError(f"prompt: {e}") from None


def resolve_resume(cfg: TrainConfig) -> str | None:
    if cfg.resume is None:
        return None
    if cfg.resume == "auto":
        from transformers.trainer_utils import get_last_checkpoint

        return get_last_checkpoint(cfg.output_dir) if Path(cfg.output_dir).is_dir() else None
    return cfg.resume


def filter_settings(cfg: TrainConfig) -> Any:
    """What online filtering applies (olmocr_rl/train/filtering.py Settings; None: off)."""
    if not cfg.filter_groups:
        return None
    from olmocr_rl.keep_rule import KeepRule
    from olmocr_rl.train.filtering import Settings

    reward = list(cfg.rewards).index(cfg.filter_reward) if cfg.filter_reward is not None else None
    return Settings(KeepRule(cfg.filter_min_std, cfg.filter_min_mean, cfg.filter_max_mean), reward, cfg.filter_extra_rounds)


def resume_schedule_check(checkpoint: str) -> Any:
    """A callback for a resumed run: when the checkpoint was saved by a run planned for another number
    of steps (e.g. `--resume auto max_steps=4` after a 2-step run), it says at the start what the
    learning rate will do. The Trainer restores the checkpoint's optimizer and scheduler, so the first
    step keeps the learning rate where the checkpoint's schedule left it (0 at the end of a linear
    decay), and the new schedule takes over from the next step only."""
    from transformers import TrainerCallback

    class ResumeSchedule(TrainerCallback):
        message: str | None = None

        def on_train_begin(self, args, state, control, optimizer=None, lr_scheduler=None, **kwargs):
            saved = json.loads((Path(checkpoint) / "trainer_state.json").read_text(encoding="utf-8")).get("max_steps")
            if not saved or saved == state.max_steps or optimizer is None:
                return
            step, now = state.global_step + 1, optimizer.param_groups[0]["lr"]
            text = (f"resuming {checkpoint}, saved by a run of {saved} steps, for {state.max_steps} steps: the learning rate at "
                    f"step {step} is {now:g}, where the {saved}-step schedule left it")  # fmt: skip
            lambdas, bases = getattr(lr_scheduler, "lr_lambdas", None), getattr(lr_scheduler, "base_lrs", None)
            if lambdas and bases:

                def at(k: int) -> float:  # the learning rate step k + 1 gets on the new schedule
                    return lambdas[0](k) * bases[0]

                text += f", then {at(step):g} at step {step + 1} on the {state.max_steps}-step schedule"
                text += f" (a run planned for {state.max_steps} steps uses {at(step - 1):g} at step {step})"
            self.message = text + f". For a fresh schedule, start a new run from the weights: --model {checkpoint}"
            if state.is_world_process_zero:
                print(f"warning: {self.message}", file=sys.stderr, flush=True)

    return ResumeSchedule()


def run(cfg: TrainConfig, inputs: Inputs | None = None, *, cuda: bool | None = None, final_outputs: bool | None = None) -> dict:
    """Trains on `inputs` (what the caller read of the prepared folder and checked; None: read and
    checked here), saves the final model + processor to output_dir, evaluates, and (one process)
    writes the bench-style outputs. Returns a summary (also written to train_summary.json)."""
    from olmocr_rl.atomic import write_text
    from olmocr_rl.launch.gpus import cuda_available
    from olmocr_rl.train.console import quiet_libraries

    # trl 1.16 still calls the name transformers 5 deprecated, once per step.
    warnings.filterwarnings("ignore", message=r"`is_gradient_checkpointing` is deprecated", category=FutureWarning)
    cuda = cuda_available() if cuda is None else cuda
    if inputs is None:
        inputs = _checked_inputs(cfg, cuda)
    quiet_libraries(cuda)
    run_ = _build(cfg, inputs, cuda)
    trainer, processor, resume = run_.trainer, run_.processor, run_.resume
    result = trainer.train(resume_from_checkpoint=resume)
    trainer.save_model(cfg.output_dir)
    if trainer.is_world_process_zero():
        processor.save_pretrained(cfg.output_dir)
    summary = _summary(cfg, run_, result)
    if final_outputs is None:
        final_outputs = world_size() == 1
    if final_outputs and cfg.final_outputs != "none":
        summary["outputs"] = write_final_outputs(cfg, trainer.model, processor)
    if trainer.is_world_process_zero():
        write_text(Path(cfg.output_dir) / "train_summary.json", json.dumps(summary, indent=2, default=str) + "\n")
    return summary


def _checked_inputs(cfg: TrainConfig, cuda: bool) -> Inputs:
    """The prepared folder read and checked here (a caller that did neither: a test, a script)."""
    from olmocr_rl.train.preflight import errors, preflight, run_inputs

    inputs = run_inputs(cfg)
    problems = errors(preflight(cfg, world_size(), inputs, cuda=cuda))
    if problems:
        raise ConfigError("\n".join(str(p) for p in problems))
    return inputs


@dataclass
class _Built:
    """What `_build` made: the trainer (olmocr_rl/train/trainer.py: its step timer, its online
    filter) and what the summary reads."""

    trainer: Any
    processor: Any
    resume: str | None
    partitioned: bool | None  # under ZeRO-3: the model loaded partitioned
    moved: Any  # the WeightsMoved callback
    schedule: Any  # the resume-schedule callback, or None
    train_rows: list  # the pages trained on (the memory estimate's longest sequence)


def _build(cfg: TrainConfig, inputs: Inputs, cuda: bool) -> _Built:
    """The OlmocrGRPOTrainer of this run: config, model, rewards, datasets, callbacks, seeds."""
    from accelerate.utils import set_seed

    from olmocr_rl.launch.launchers import deepspeed_active
    from olmocr_rl.reward_registry import build_rewards
    from olmocr_rl.train.data import build_dataset
    from olmocr_rl.train.grpo import build_grpo_config
    from olmocr_rl.train.model import load_model, lora_config, zero3_partitioned
    from olmocr_rl.train.preflight import trl_problem
    from olmocr_rl.train.rewards import CompletionRecorder, TrainRewardContext

    if (problem := trl_problem()) is not None:  # before the model loads (the command line checked it already)
        raise ConfigError(f"{problem.message}; {problem.fix}")
    from olmocr_rl.train.trainer import OlmocrGRPOTrainer

    train_rows, eval_rows = inputs.train_rows[: cfg.max_train_pages], inputs.eval_rows[: cfg.max_eval_pages]
    prompt = run_prompt(cfg)
    settings = engine_settings(cfg, eager=cfg.vllm_enforce_eager)
    processor = settings.processor()  # the engines' processor: the run's image budget
    resume = resolve_resume(cfg)
    # Resuming a full model: load its weights with from_pretrained, which maps the checkpoint's key
    # names; the Trainer (transformers 4.57 and 5.23 alike) loads them raw and, for Qwen-VL, matches
    # none, with only a warning (transformers#43701). It still restores optimizer, scheduler, RNG, step.
    full_ckpt = resume if resume and not cfg.lora and (Path(resume) / "config.json").is_file() else None
    # The trainer's config first: under ZeRO-3 it switches on partitioned loading (DeepSpeed's
    # zero.Init), so that no rank holds the whole model in host memory. Built once, as the plan
    # printed it (olmocr_rl/train/grpo.py: the placeholder suppression and the loop stop's switch
    # included), and not changed after.
    args = build_grpo_config(cfg, cuda=cuda, has_eval=bool(eval_rows), strict=True)
    model = load_model(cfg, bf16=bool(args.bf16), deepspeed=deepspeed_active(), path=full_ckpt)
    partitioned = zero3_partitioned(model)
    world = world_size()
    recorder = (
        CompletionRecorder(cfg.output_dir, rank=rank(), world_size=world, every=cfg.logging_steps)
        if cfg.write_failing_completions
        else None
    )
    context = TrainRewardContext(inputs.suite if inputs.suite is not None else inputs.prepared / "tests", threads=cfg.reward_threads,
                                 guard=cfg.bench_guard, processor=processor, model=model, recorder=recorder)  # fmt: skip
    funcs, weights = build_rewards(cfg.rewards, context)
    if list(args.reward_weights) != weights:  # both come from cfg.rewards, in order
        raise RuntimeError(f"reward weights {args.reward_weights} do not match the reward functions' {weights}")
    callbacks, moved, schedule = _callbacks(cfg, resume)
    # A LoRA adapter is initialised randomly when the trainer wraps the model: seed first, or two runs
    # with one seed start from different adapters (trl seeds there itself only from 1.15 on).
    set_seed(cfg.seed)
    try:
        trainer = OlmocrGRPOTrainer(
            model=model,
            reward_funcs=funcs,
            args=args,
            train_dataset=build_dataset(cfg.prepared_dir, train_rows, prompt),
            eval_dataset=build_dataset(cfg.prepared_dir, eval_rows, prompt) if eval_rows and args.eval_strategy != "no" else None,
            processing_class=processor,
            callbacks=callbacks,
            peft_config=lora_config(cfg),
            engine=settings,
            online_filter=filter_settings(cfg),
            resume=resume,
            # Weights are loaded above; the Trainer's own raw load would only warn about every key.
            weights_loaded=full_ckpt is not None,
        )
    except ConfigError:
        raise  # the trainer's own refusals (online filtering's), which name the key already
    except (ValueError, TypeError, NotImplementedError) as e:
        raise refused(cfg, e) from e
    # After trl's own set_seed(seed + rank); a resumed run restores each rank's RNG instead.
    set_seed(rank_seed(cfg.seed, trainer.accelerator.process_index))
    if cfg.progress:
        from transformers.trainer_callback import PrinterCallback

        trainer.remove_callback(PrinterCallback)  # it would print every log dict under our display
    if recorder is not None:
        recorder.trainer = trainer
    return _Built(trainer, processor, resume, partitioned, moved, schedule, train_rows)


def _callbacks(cfg: TrainConfig, resume: str | None) -> tuple[list[Any], Any, Any]:
    """The trainer's callbacks (after its own step timer): the stop on a signal, the metrics file,
    the weights-moved check, the resume warning, the display."""
    from olmocr_rl.train.callbacks import MetricsJsonlCallback, RichProgressCallback, StopOnSignal, WeightsMoved

    moved = WeightsMoved()
    callbacks: list[Any] = [StopOnSignal(), MetricsJsonlCallback(cfg.output_dir), moved]
    schedule = resume_schedule_check(resume) if resume else None
    if schedule is not None:
        callbacks.append(schedule)
    if cfg.progress:
        callbacks.append(RichProgressCallback())
    return callbacks, moved, schedule


def _summary(cfg: TrainConfig, run_: _Built, result: Any) -> dict[str, Any]:
    """train_summary.json: steps, metrics (the last evaluation), checkpoints, what was checked."""
    trainer = run_.trainer
    eval_metrics: dict = {}
    if trainer.eval_dataset is not None:
        step = trainer.state.global_step
        last = [h for h in trainer.state.log_history if h.get("step") == step and any(k.startswith("eval_") for k in h)]
        eval_metrics = last[-1] if last else trainer.evaluate()  # the final step may just have been evaluated
    summary: dict[str, Any] = {
        "global_step": trainer.state.global_step,
        "resumed_from": run_.resume,
        "train_metrics": result.metrics,
        "eval_metrics": eval_metrics,
        "checkpoints": sorted(p.name for p in Path(cfg.output_dir).glob("checkpoint-*")),
    }
    if run_.partitioned is not None:
        summary["zero3_partitioned_load"] = run_.partitioned
    from olmocr_rl.train.memory import run_record

    if (memory := run_record(cfg, trainer, run_.train_rows, trainer.step_timer.run_peak)) is not None:
        summary["memory"] = memory  # the plan's estimate next to the peak this CUDA run allocated
    moved = run_.moved
    warned: list[str] = []  # the console's warnings about the run, kept for `olmocr-rl report`
    if moved.result is not None:
        summary["weights_moved"] = moved.result
        if moved.result["share"] < 0.1 and trainer.state.global_step > 0:
            warned.append(f"training barely moved the weights: {100 * moved.result['share']:.1f} % of a sample of them changed "
                          "(every reward in each group equal, so no advantage? half-precision weights? nothing trainable?)")  # fmt: skip
            if trainer.is_world_process_zero():
                print(f"warning: {warned[-1]}", file=sys.stderr)
    if trainer.online is not None:
        summary["online_filter"] = {**trainer.online.state(), "passes": round(trainer.online.stream.passes, 4)}
    # The loop stop: its rule (None: off) and what it did over the run's training completions (every rank's).
    rule = trainer.loop_rule
    summary["loop_stop"] = {"rule": rule.as_dict(), **trainer.loops_run.as_dict()} if rule is not None else {"rule": None}
    if run_.schedule is not None and run_.schedule.message:
        summary["resume_warning"] = run_.schedule.message
        warned.append(run_.schedule.message)
    summary["warnings"] = warned
    return summary


def write_final_outputs(cfg: TrainConfig, model: Any = None, processor: Any = None) -> dict:
    """The model's output on the configured pages (`final_outputs`) as output_dir/outputs/*.md,
    with output_dir laid out as a bench folder: the trained `model` (with its processor), or the
    saved one loaded by the engine builder as `olmocr-rl generate` loads a model (olmocr_rl/engines.py),
    with the run's engine settings."""
    from olmocr_rl.engines import build_engine, transformers_engine
    from olmocr_rl.train.outputs import select_rows, write_outputs

    prompt = run_prompt(cfg)
    settings = engine_settings(cfg, model=cfg.output_dir, stop_loops=False)  # an evaluation: loops run to the limit
    eval_split = cfg.eval_split if cfg.eval_enabled else ""
    limits = {cfg.train_split: cfg.max_train_pages, eval_split: cfg.max_eval_pages}
    rows = select_rows(cfg.prepared_dir, cfg.final_outputs, cfg.train_split, eval_split, limits)
    if prompt is not None:
        rows = [{**r, "prompt": prompt.text, "prompt_layout": prompt.layout} for r in rows]
    options = {
        "repeats": cfg.final_output_repeats,
        "temperature": cfg.final_temperature,
        "batch_size": cfg.final_batch_size,
        "seed": settings.seed,
    }
    if model is None:
        return write_outputs(build_engine("transformers", settings, rows), cfg.prepared_dir, cfg.output_dir, rows, **options)
    was_training = getattr(model, "training", False)
    model.eval()
    try:
        engine = transformers_engine(model, processor, max_new_tokens=settings.max_new_tokens)
        return write_outputs(engine, cfg.prepared_dir, cfg.output_dir, rows, **options)
    finally:
        if was_training:
            model.train()
