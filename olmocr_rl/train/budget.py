"""What a run will cost before it starts: the optimizer steps trl will run, the disk its checkpoints
take at their peak, and the tokens its evaluations generate next to its training. `train --dry-run`
prints them; pre-flight refuses a plan that trains no step and warns when the checkpoints will not
fit on the output folder's disk (an error with `--strict`). GPU memory: olmocr_rl/train/memory.py.

Steps, as trl and transformers count them: trl's RepeatSampler (trl/trainer/utils.py) drops the last
partial group of pages (`pages // pages_per_generation` groups), each group is used for
steps_per_generation x num_iterations micro-steps per rank, and the Trainer makes an optimizer step
every gradient_accumulation_steps of them (`set_initial_training_values`, rounding up); max_steps,
when set (0 or more: only a negative one counts epochs), is what runs (if any micro-step exists at
all), but at least one step: the Trainer checks `global_step >= max_steps` only after an optimizer
step (`DefaultFlowCallback.on_step_end`), so max_steps=0 runs one.

Checkpoints, as transformers and DeepSpeed write them: the weights in the dtype they train in
(float32 without DeepSpeed, 16-bit under it with bf16: transformers' model.safetensors, whole under ZeRO-3 too,
where our preset gathers it: `stage3_gather_16bit_weights_on_model_save`), the optimizer (AdamW's two
float32 moments, plus DeepSpeed's float32 master weights, in `*_optim_states.pt`), DeepSpeed's
module state (`*model_states.pt`: under ZeRO-1/2 its own 16-bit copy of the model, under ZeRO-3 the
partitioned parameters' empty placeholders, engine.py `_save_checkpoint` / `module_state_dict`: 16
bytes a parameter under ZeRO-1/2 with bf16, 14 under ZeRO-3; 20 and 16 on a float32 run), and the
model folder's other files (tokenizer,
processor, configs); LoRA: the float32 adapter and its moments. The Trainer
saves every save_steps and always at the last step, and writes a new checkpoint before it deletes
the oldest (trainer.py `_save_checkpoint`, then `_rotate_checkpoints`), so save_total_limit + 1 are on
disk at once; the final model is saved beside them.
"""

from __future__ import annotations

import math
import shutil
from dataclasses import dataclass
from pathlib import Path

from olmocr_rl.train.config import TrainConfig
from olmocr_rl.train.filtering import Cost
from olmocr_rl.train.shape import ModelShape, ShapeUnknown, read_shape


def steps_per_generation(cfg: TrainConfig, world_size: int) -> int:
    if cfg.steps_per_generation:
        return int(cfg.steps_per_generation)
    if cfg.trl.get("generation_batch_size"):
        return max(1, int(cfg.trl["generation_batch_size"]) // (cfg.per_device_train_batch_size * world_size))
    return int(cfg.gradient_accumulation_steps)


def pages_per_generation(cfg: TrainConfig, world_size: int) -> int:
    """Distinct pages in one generation batch (each sampled num_generations times)."""
    return cfg.per_device_train_batch_size * world_size * steps_per_generation(cfg, world_size) // max(1, cfg.num_generations)


def training_steps(cfg: TrainConfig, train_pages: int, world_size: int) -> int:
    """The optimizer steps trl runs (module docstring); 0 when the pages fill no generation batch."""
    per_generation = pages_per_generation(cfg, world_size)
    if per_generation <= 0:
        return 0
    micro = (train_pages // per_generation) * steps_per_generation(cfg, world_size) * max(1, int(cfg.num_iterations))
    if micro == 0:
        return 0
    if cfg.max_steps >= 0:  # only a negative max_steps counts epochs; the loop stops after the first step that reaches it
        return max(1, int(cfg.max_steps))
    per_epoch = math.ceil(micro / cfg.gradient_accumulation_steps)
    return math.ceil(cfg.num_train_epochs * per_epoch)


def saved_weight_bytes(cfg: TrainConfig, *, deepspeed: bool) -> int:
    """Bytes a weight takes in a saved model: float32 without DeepSpeed (the weights train in float32),
    DeepSpeed's dtype under it: 16-bit with bf16 (unresolved: planned for a GPU, where it is on),
    float32 on a float32 run."""
    return 2 if deepspeed and cfg.bf16 is not False else 4


def filter_cost(cfg: TrainConfig, world_size: int) -> Cost | None:
    """With online filtering (`filter_groups`): the most generation one generation batch can cost
    (1 + filter_extra_rounds rounds of trl's generation batch, trl.generation_batch_size where set); None when off."""
    if not cfg.filter_groups:
        return None
    batch = cfg.per_device_train_batch_size * world_size * steps_per_generation(cfg, world_size)
    return Cost(1 + cfg.filter_extra_rounds, batch, batch // max(1, cfg.num_generations or 1))


def model_bytes(cfg: TrainConfig, shape: ModelShape, *, deepspeed: bool) -> int:
    """The trained model as `save_model` writes it: float32 without DeepSpeed, DeepSpeed's dtype
    under it (what each checkpoint holds, and the final model); a LoRA adapter in float32."""
    if cfg.lora:
        return 4 * shape.lora_params(list(cfg.lora_target_modules), cfg.lora_r)
    return shape.params * saved_weight_bytes(cfg, deepspeed=deepspeed)


def checkpoint_bytes(cfg: TrainConfig, shape: ModelShape, *, deepspeed: bool, zero: int | None = None) -> int:
    """One checkpoint-N folder: the model, the optimizer state, the processor and config files
    (`zero`: the ZeRO stage, None for 1 or 2 when `deepspeed`)."""
    if cfg.lora:
        trained = shape.lora_params(list(cfg.lora_target_modules), cfg.lora_r)
        optimizer = 8 * trained
    elif deepspeed:
        # float32 master weights + moments (12, `*_optim_states.pt`) and, under ZeRO-1/2, DeepSpeed's
        # own copy of the module in its dtype (`mp_rank_00_model_states.pt`; ZeRO-3's holds placeholders).
        trained = shape.params
        optimizer = trained * (12 + (0 if zero == 3 else saved_weight_bytes(cfg, deepspeed=True)))
    else:
        optimizer = 8 * shape.params
    return model_bytes(cfg, shape, deepspeed=deepspeed) + optimizer + shape.other_file_bytes


def checkpoints_written(cfg: TrainConfig, steps: int) -> int:
    """checkpoint-N folders the Trainer writes: every save_steps, and at the last step."""
    if cfg.save_steps <= 0 or steps <= 0:
        return 0
    return steps // cfg.save_steps + (1 if steps % cfg.save_steps else 0)


def checkpoints_on_disk(cfg: TrainConfig, steps: int) -> int:
    """The most checkpoint folders on disk at once: save_total_limit + 1 while the newest is written."""
    written = checkpoints_written(cfg, steps)
    return written if cfg.save_total_limit is None else min(written, cfg.save_total_limit + 1)


def free_bytes(path: str) -> int | None:
    p = Path(path).resolve()
    while not p.exists() and p != p.parent:
        p = p.parent
    try:
        return shutil.disk_usage(p).free
    except OSError:
        return None


@dataclass
class Budget:
    steps: int
    checkpoint_gb: float | None  # one checkpoint
    written: int  # checkpoint folders the Trainer writes
    on_disk: int  # at most on disk at once
    final_gb: float | None  # the final model in output_dir
    unknown: str | None  # why the sizes are unknown
    free_gb: float | None
    train_tokens: int  # completion tokens generated for training, at most
    eval_pages: int
    eval_samples: int  # per page
    completion_tokens: int  # max_completion_length
    evaluations: int

    @property
    def eval_tokens(self) -> int:
        """Completion tokens one evaluation generates, at most."""
        return self.eval_pages * self.eval_samples * self.completion_tokens

    @property
    def disk_gb(self) -> float | None:
        """The peak the run puts on disk: the checkpoints at once plus the final model."""
        if self.checkpoint_gb is None or self.final_gb is None:
            return None
        return self.checkpoint_gb * self.on_disk + self.final_gb

    def lines(self) -> list[str]:
        out = []
        if self.checkpoint_gb is None or self.final_gb is None:
            out.append(f"checkpoints: size unknown ({self.unknown})")
        else:
            free = "" if self.free_gb is None else f"; {self.free_gb:,.0f} GB free on the output folder's disk"
            out.append(f"checkpoints: {self.written} written, ~{self.checkpoint_gb:,.1f} GB each, at most {self.on_disk} on disk at once "
                       f"(save_total_limit + 1 while the newest is written) + the final model {self.final_gb:,.1f} GB = "
                       f"peak {self.disk_gb:,.0f} GB{free}")  # fmt: skip
        share = ""
        if self.train_tokens:
            total_eval = self.eval_tokens * self.evaluations
            share = f"; {100 * total_eval / (total_eval + self.train_tokens):.1f} % of all generation"
        out.append(
            f"evaluation: {self.eval_pages} pages (max_eval_pages) x {self.eval_samples} samples x up to "
            f"{self.completion_tokens:,} tokens = {self.eval_tokens:,} tokens each, {self.evaluations} evaluations{share}"
        )
        out.append(f"training: {self.steps} optimizer steps (as trl counts them), up to {self.train_tokens:,} completion tokens")
        return out


def estimate(
    cfg: TrainConfig, world_size: int, train_pages: int, eval_pages: int, *, deepspeed: bool, shape: ModelShape | None = None,
    zero: int | None = None, fetch: bool = True,
) -> Budget:  # fmt: skip
    """The run's steps, checkpoints and evaluations (`fetch`: a hub id's files may be read from the
    hub, olmocr_rl/train/shape.py; a training rank reads the cache only)."""
    steps = training_steps(cfg, train_pages, world_size)
    unknown = None
    if shape is None:
        try:
            shape = read_shape(cfg.model, fetch=fetch)
        except ShapeUnknown as e:
            unknown = str(e)
    ckpt = final = None
    if shape is not None:
        ckpt = checkpoint_bytes(cfg, shape, deepspeed=deepspeed, zero=zero) / 1e9
        final = (model_bytes(cfg, shape, deepspeed=deepspeed) + shape.other_file_bytes) / 1e9
    free = free_bytes(cfg.output_dir)
    # trl generates a generation batch every steps_per_generation x num_iterations micro-steps (`_prepare_inputs`),
    # an optimizer step takes gradient_accumulation_steps of them: the generations started, at most.
    per_generation = steps_per_generation(cfg, world_size)
    generations = math.ceil(steps * cfg.gradient_accumulation_steps / (per_generation * max(1, int(cfg.num_iterations))))
    completions = generations * cfg.per_device_train_batch_size * world_size * per_generation
    train_tokens = completions * cfg.max_completion_length
    if not eval_pages:
        evaluations = 0
    elif cfg.eval_steps <= 0:
        evaluations = 1
    else:
        evaluations = steps // cfg.eval_steps + (0 if steps % cfg.eval_steps == 0 else 1) + int(cfg.eval_on_start)
    return Budget(steps, ckpt, checkpoints_written(cfg, steps), checkpoints_on_disk(cfg, steps), final, unknown,
                  None if free is None else free / 1e9, train_tokens, eval_pages, cfg.num_generations_eval or cfg.num_generations,
                  cfg.max_completion_length, evaluations)  # fmt: skip
