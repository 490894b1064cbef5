"""What a run will cost before it starts: the disk its checkpoints take, and the tokens its
evaluations generate next to its training. `train --dry-run` prints both; pre-flight warns when the
checkpoints will not fit on the output folder's disk (an error with `--strict`).

Checkpoint bytes per parameter, as transformers and DeepSpeed write them: without DeepSpeed the
float32 weights (4) and AdamW's two moments (8); with DeepSpeed the 16-bit model (2), its float32
master weights and two moments (12), and the 16-bit model again beside the checkpoint (2); LoRA:
the adapter and its moments only. Parameter counts come from the model folder's safetensors
headers (read, not loaded); a hub id that is not a local folder has none to read.
"""

from __future__ import annotations

import json
import math
import shutil
import struct
from dataclasses import dataclass
from pathlib import Path

from olmocr_rl.train.config import TrainConfig


def parameter_count(model: str) -> int | None:
    """Parameters of a local model folder, from its safetensors headers; None when it has none."""
    folder = Path(model)
    files = sorted(folder.glob("*.safetensors")) if folder.is_dir() else []
    if not files:
        return None
    total = 0
    for f in files:
        try:
            with open(f, "rb") as fh:
                (size,) = struct.unpack("<Q", fh.read(8))
                header = json.loads(fh.read(size))
        except (OSError, ValueError, struct.error):
            return None
        total += sum(math.prod(v["shape"]) for k, v in header.items() if k != "__metadata__")
    return total


def lora_parameters(cfg: TrainConfig, model: str) -> int | None:
    """An upper bound on the adapter's parameters: r x (in + out) for every target module, read
    off the folder's weight shapes."""
    folder = Path(model)
    files = sorted(folder.glob("*.safetensors")) if folder.is_dir() else []
    if not files:
        return None
    total = 0
    for f in files:
        with open(f, "rb") as fh:
            (size,) = struct.unpack("<Q", fh.read(8))
            header = json.loads(fh.read(size))
        for name, v in header.items():
            parts = name.split(".")
            if name.endswith(".weight") and len(v.get("shape", ())) == 2 and len(parts) > 1 and parts[-2] in cfg.lora_target_modules:
                total += cfg.lora_r * (v["shape"][0] + v["shape"][1])
    return total


def checkpoint_bytes(cfg: TrainConfig, params: int, *, deepspeed: bool) -> int:
    if cfg.lora:
        return params * 12  # float32 adapter + two moments (params: the adapter's)
    return params * (16 if deepspeed else 12)


def checkpoints_kept(cfg: TrainConfig, steps: int | None) -> int | None:
    if cfg.save_steps <= 0:
        return 0
    written = None if steps is None else steps // cfg.save_steps
    if cfg.save_total_limit is None:
        return written
    return cfg.save_total_limit if written is None else min(cfg.save_total_limit, written)


def training_steps(cfg: TrainConfig, train_pages: int, world_size: int) -> int | None:
    """Optimizer steps of the run (max_steps, or epochs x pages / pages per step)."""
    if cfg.max_steps > 0:
        return cfg.max_steps
    steps = cfg.steps_per_generation or cfg.gradient_accumulation_steps
    completions = cfg.per_device_train_batch_size * world_size * steps
    pages_per_step = completions / cfg.num_generations
    if train_pages <= 0 or pages_per_step <= 0:
        return None
    return math.ceil(cfg.num_train_epochs * train_pages / pages_per_step)


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
    steps: int | None
    checkpoint_gb: float | None  # one checkpoint
    kept: int | None  # how many stay on disk
    free_gb: float | None
    train_tokens: int | None  # completion tokens generated for training, at most
    eval_pages: int
    eval_samples: int  # per page
    completion_tokens: int  # max_completion_length
    evaluations: int | None

    @property
    def eval_tokens(self) -> int:
        """Completion tokens one evaluation generates, at most."""
        return self.eval_pages * self.eval_samples * self.completion_tokens

    @property
    def disk_gb(self) -> float | None:
        return None if self.checkpoint_gb is None or self.kept is None else self.checkpoint_gb * self.kept

    def lines(self) -> list[str]:
        out = []
        if self.checkpoint_gb is None:
            out.append("checkpoints: size unknown (the model is not a local folder with safetensors files)")
        else:
            kept = "all" if self.kept is None else str(self.kept)
            total = "" if self.disk_gb is None else f" = {self.disk_gb:,.0f} GB"
            free = "" if self.free_gb is None else f"; {self.free_gb:,.0f} GB free on the output folder's disk"
            out.append(f"checkpoints: ~{self.checkpoint_gb:,.1f} GB each x {kept} kept (save_total_limit){total}{free}")
        evals = "?" if self.evaluations is None else str(self.evaluations)
        share = ""
        if self.train_tokens and self.evaluations is not None:
            total_eval = self.eval_tokens * self.evaluations
            share = f"; {100 * total_eval / (total_eval + self.train_tokens):.1f} % of all generation"
        out.append(
            f"evaluation: {self.eval_pages} pages (max_eval_pages) x {self.eval_samples} samples x up to "
            f"{self.completion_tokens:,} tokens = {self.eval_tokens:,} tokens each, {evals} evaluations{share}"
        )
        if self.train_tokens is not None and self.steps is not None:
            out.append(f"training: {self.steps} steps, up to {self.train_tokens:,} completion tokens")
        return out


def estimate(cfg: TrainConfig, world_size: int, train_pages: int, eval_pages: int, *, deepspeed: bool) -> Budget:
    steps = training_steps(cfg, train_pages, world_size)
    params = lora_parameters(cfg, cfg.model) if cfg.lora else parameter_count(cfg.model)
    ckpt = None if params is None else checkpoint_bytes(cfg, params, deepspeed=deepspeed) / 1e9
    free = free_bytes(cfg.output_dir)
    per_step = cfg.per_device_train_batch_size * world_size * (cfg.steps_per_generation or cfg.gradient_accumulation_steps)
    train_tokens = None if steps is None else steps * per_step * cfg.max_completion_length
    evaluations = None
    if not eval_pages or cfg.eval_steps <= 0:
        evaluations = 1 if eval_pages else 0
    elif steps is not None:
        evaluations = steps // cfg.eval_steps + (0 if steps % cfg.eval_steps == 0 else 1) + int(cfg.eval_on_start)
    return Budget(steps, ckpt, checkpoints_kept(cfg, steps), None if free is None else free / 1e9, train_tokens, eval_pages,
                  cfg.num_generations_eval or cfg.num_generations, cfg.max_completion_length, evaluations)  # fmt: skip
