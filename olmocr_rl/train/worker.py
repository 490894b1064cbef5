"""GRPO training in the current process (`run`): the whole run in one process, or one rank of a
launcher's job (trl and accelerate read the rank from the environment; olmocr_rl.train.plan calls
this either way); and the bench-style outputs of a trained model (`write_final_outputs`).
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from pathlib import Path
from typing import Any

from olmocr_rl.engines import rank_seed
from olmocr_rl.train.config import ConfigError, TrainConfig, build_grpo_config, cuda_available, deepspeed_active
from olmocr_rl.train.preflight import errors, preflight


def world_size() -> int:
    return int(os.environ.get("WORLD_SIZE", "1"))


def rank() -> int:
    return int(os.environ.get("RANK", "0"))


def refused(cfg: TrainConfig, error: BaseException) -> ConfigError:
    """trl / transformers / accelerate refusing the configuration while the trainer is built, as
    one ConfigError naming the keys to change: the `trl:` keys you set that the message names,
    else all the `trl:` keys you set (the usual cause), else the message alone."""
    import re

    message = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    named = set(re.findall(r"\b[a-z][a-z0-9_]+\b", str(error)))
    keys = [f"trl.{k}" for k in cfg.trl if k in named] or [f"trl.{k}" for k in cfg.trl]
    fix = f"; check {', '.join(keys)}" if keys else ""
    return ConfigError(f"trl refused the configuration while building the trainer: {message}{fix}")


def engine_settings(cfg: TrainConfig):
    """What trl's colocated vLLM engine gets besides trl's own arguments (olmocr_rl/engines.py)."""
    import contextlib

    if not (cfg.use_vllm and cfg.vllm_mode == "colocate"):
        return contextlib.nullcontext()
    from olmocr_rl.engines import colocated_engine, pixel_bounds

    return colocated_engine(
        seed=cfg.seed,
        tensor_parallel_size=cfg.vllm_tensor_parallel_size,
        mm_processor_kwargs=pixel_bounds(cfg.max_pixels, cfg.model),
        enforce_eager=cfg.vllm_enforce_eager,
    )


def zero3_partitioned(model: Any) -> bool | None:
    """Under ZeRO-3: whether the model was loaded partitioned (its parameters carry DeepSpeed's
    ids); a whole model per rank is warned about. None when ZeRO-3 is off."""
    from transformers.integrations import is_deepspeed_zero3_enabled

    if not is_deepspeed_zero3_enabled():
        return None
    partitioned = all(hasattr(p, "ds_id") for p in model.parameters())
    if not partitioned:
        warnings.warn("ZeRO-3: the model was loaded whole on this rank, not partitioned", stacklevel=2)
    # transformers 5's ZeRO-3 loading path keeps every checkpoint-key conversion it tried, where the
    # regular path keeps those that matched; save_pretrained reverses them all and writes keys such
    # as `model.model.embed_tokens.weight` for Qwen2.5-VL, which transformers 4.x and vLLM cannot
    # load. Keep the used ones, as the regular path does (the saved keys are tested equal to the base
    # model's: tests/test_train_distributed.py).
    conversions = getattr(model, "_weight_conversions", None)
    if conversions:
        model._weight_conversions = [c for c in conversions if not hasattr(c, "was_used") or c.was_used()]
    return partitioned


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


def _rows(cfg: TrainConfig) -> tuple[list[dict], list[dict]]:
    from olmocr_rl.train.data import read_split

    train = read_split(cfg.prepared_dir, cfg.train_split)[: cfg.max_train_pages]
    ev = read_split(cfg.prepared_dir, cfg.eval_split)[: cfg.max_eval_pages] if cfg.eval_enabled else []
    return train, ev


def run(cfg: TrainConfig, *, final_outputs: bool | None = None) -> dict:
    """Trains, saves the final model + processor to output_dir, evaluates, and (one process)
    writes the bench-style outputs. Returns a summary (also written to train_summary.json)."""
    from trl import GRPOTrainer

    from olmocr_rl.engines import transformers_suppression, vllm_suppression
    from olmocr_rl.modeling import load_model, load_processor, lora_config
    from olmocr_rl.train.callbacks import MetricsJsonlCallback, RichProgressCallback, StepTimer, WeightsMoved
    from olmocr_rl.train.console import quiet_libraries, use_compact_table
    from olmocr_rl.train.data import build_dataset, tests_dir
    from olmocr_rl.train.rewards import CompletionRecorder, build_rewards

    # trl 1.16 still calls the name transformers 5 deprecated, once per step.
    warnings.filterwarnings("ignore", message=r"`is_gradient_checkpointing` is deprecated", category=FutureWarning)
    world = world_size()
    problems = preflight(cfg, world, cfg.prepared_dir)
    if errors(problems):
        raise ConfigError("\n".join(str(p) for p in errors(problems)))
    cuda = cuda_available()
    quiet_libraries(cuda)
    use_compact_table()
    train_rows, eval_rows = _rows(cfg)
    prompt = run_prompt(cfg)
    processor = load_processor(cfg.model, trust_remote_code=cfg.trust_remote_code, max_pixels=cfg.max_pixels)
    resume = resolve_resume(cfg)
    # Resuming a full model: load its weights with from_pretrained, which maps the checkpoint's key
    # names; the Trainer (transformers 4.57 and 5.23 alike) loads them raw and, for Qwen-VL, matches
    # none, with only a warning (transformers#43701). It still restores optimizer, scheduler, RNG, step.
    full_ckpt = resume if resume and not cfg.lora and (Path(resume) / "config.json").is_file() else None
    # The trainer's config first: under ZeRO-3 it switches on partitioned loading (DeepSpeed's
    # zero.Init), so that no rank holds the whole model in host memory.
    args = build_grpo_config(cfg, cuda=cuda, has_eval=bool(eval_rows))
    model = load_model(cfg, bf16=bool(args.bf16), deepspeed=deepspeed_active(), path=full_ckpt)
    partitioned = zero3_partitioned(model)
    # Placeholder tokens are never sampled, whichever engine generates (olmocr_rl/engines.py).
    suppression = vllm_suppression(model.config) if cfg.use_vllm else transformers_suppression(model.config)
    args.generation_kwargs = {**suppression, **(args.generation_kwargs or {})}
    if cfg.progress:
        args.disable_tqdm = True  # our rich display replaces the tqdm bar

    recorder = (
        CompletionRecorder(cfg.output_dir, rank=rank(), world_size=world, every=cfg.logging_steps)
        if cfg.write_failing_completions
        else None
    )
    funcs, weights = build_rewards(
        cfg.rewards,
        tests_dir(cfg.prepared_dir),
        processor=processor,
        model=model,
        recorder=recorder,
        threads=cfg.reward_threads,
        guard=cfg.bench_guard,
    )
    if list(args.reward_weights) != weights:  # both come from cfg.rewards, in order
        raise RuntimeError(f"reward weights {args.reward_weights} do not match the reward functions' {weights}")
    # The timer first: it adds its figures to a log before the metrics file writes it.
    timer, moved = StepTimer(), WeightsMoved()
    callbacks: list[Any] = [timer, MetricsJsonlCallback(cfg.output_dir), moved]
    schedule = resume_schedule_check(resume) if resume else None
    if schedule is not None:
        callbacks.append(schedule)
    if cfg.progress:
        callbacks.append(RichProgressCallback())
    # A LoRA adapter is initialised randomly when the trainer wraps the model: seed first, or two runs
    # with one seed start from different adapters (trl seeds there itself only from 1.15 on).
    from accelerate.utils import set_seed

    set_seed(cfg.seed)
    try:
        with engine_settings(cfg):
            trainer = GRPOTrainer(
                model=model,
                reward_funcs=funcs,
                args=args,
                train_dataset=build_dataset(cfg.prepared_dir, train_rows, prompt),
                eval_dataset=build_dataset(cfg.prepared_dir, eval_rows, prompt) if eval_rows and args.eval_strategy != "no" else None,
                processing_class=processor,
                callbacks=callbacks,
                peft_config=lora_config(cfg),
            )
    except (ValueError, TypeError, NotImplementedError) as e:
        raise refused(cfg, e) from e
    # After trl's own set_seed(seed + rank); a resumed run restores each rank's RNG instead.
    set_seed(rank_seed(cfg.seed, trainer.accelerator.process_index))
    if full_ckpt is not None:
        # Weights are loaded above; the Trainer's own raw load would only warn about every key.
        trainer._load_from_checkpoint = lambda *args, **kwargs: None
    if cfg.progress:
        from transformers.trainer_callback import PrinterCallback

        trainer.remove_callback(PrinterCallback)  # it would print every log dict under our display
    timer.install(trainer)
    if recorder is not None:
        recorder.trainer = trainer
    result = trainer.train(resume_from_checkpoint=resume)
    trainer.save_model(cfg.output_dir)
    if trainer.is_world_process_zero():
        processor.save_pretrained(cfg.output_dir)

    eval_metrics: dict = {}
    if trainer.eval_dataset is not None:
        step = trainer.state.global_step
        last = [h for h in trainer.state.log_history if h.get("step") == step and any(k.startswith("eval_") for k in h)]
        eval_metrics = last[-1] if last else trainer.evaluate()  # the final step may just have been evaluated

    summary: dict[str, Any] = {
        "global_step": trainer.state.global_step,
        "resumed_from": resume,
        "train_metrics": result.metrics,
        "eval_metrics": eval_metrics,
        "checkpoints": sorted(p.name for p in Path(cfg.output_dir).glob("checkpoint-*")),
    }
    if partitioned is not None:
        summary["zero3_partitioned_load"] = partitioned
    from olmocr_rl.train.memory import run_record

    if (memory := run_record(cfg, trainer, train_rows, timer.run_peak)) is not None:
        summary["memory"] = memory
    if moved.result is not None:
        summary["weights_moved"] = moved.result
        if moved.result["share"] < 0.1 and trainer.state.global_step > 0 and trainer.is_world_process_zero():
            print(f"warning: training barely moved the weights: {100 * moved.result['share']:.1f} % of a sample of them changed "
                  "(every reward in each group equal, so no advantage? half-precision weights? nothing trainable?)",
                  file=sys.stderr)  # fmt: skip
    if schedule is not None and schedule.message:
        summary["resume_warning"] = schedule.message
    if final_outputs is None:
        final_outputs = world == 1
    if final_outputs and cfg.final_outputs != "none":
        summary["outputs"] = write_final_outputs(cfg, trainer.model, processor)
    if trainer.is_world_process_zero():
        (Path(cfg.output_dir) / "train_summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
    return summary


def write_final_outputs(cfg: TrainConfig, model: Any = None, processor: Any = None) -> dict:
    """The model's output on the configured pages (`final_outputs`) as output_dir/outputs/*.md,
    with output_dir laid out as a bench folder. Loads the saved model when none is given."""
    from olmocr_rl.modeling import inference_dtype, load_processor, load_trained
    from olmocr_rl.train.outputs import select_rows, write_outputs

    if model is None:
        cuda = cuda_available()
        model = load_trained(cfg.output_dir, dtype=inference_dtype(cuda), trust_remote_code=cfg.trust_remote_code)
        if cuda:
            model = model.to("cuda")
    if processor is None:
        processor = load_processor(cfg.output_dir, trust_remote_code=cfg.trust_remote_code, max_pixels=cfg.max_pixels)
    eval_split = cfg.eval_split if cfg.eval_enabled else ""
    limits = {cfg.train_split: cfg.max_train_pages, eval_split: cfg.max_eval_pages}
    rows = select_rows(cfg.prepared_dir, cfg.final_outputs, cfg.train_split, eval_split, limits)
    if (prompt := run_prompt(cfg)) is not None:
        rows = [{**r, "prompt": prompt.text, "prompt_layout": prompt.layout} for r in rows]
    return write_outputs(
        model,
        processor,
        cfg.prepared_dir,
        cfg.output_dir,
        rows,
        repeats=cfg.final_output_repeats,
        max_new_tokens=cfg.max_completion_length,
        temperature=cfg.final_temperature,
        batch_size=cfg.final_batch_size,
    )
