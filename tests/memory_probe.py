"""Runs the training worker (sampling replaced by tests/fixed_rollouts.py's schedule) and records,
on each rank, the bytes of the real tensors that hold the model states while the first optimizer
step after a backward runs: the model's weights, their gradients, DeepSpeed's float32 master partitions and its
gradient buffers, AdamW's moments, the reference model, and DDP's gradient buckets. The memory
estimate's model-state components (olmocr_rl/train/memory.py) are held against these.

    python tests/memory_probe.py RESOLVED_CONFIG.json        # one process
    accelerate launch ... tests/memory_probe.py RESOLVED_CONFIG.json

Writes OUTPUT_DIR/memory_rank<R>.json: {category: bytes}. A storage is counted once, in the first
category that reaches it, so views into DeepSpeed's flat buffers are not counted twice. Also
"loss: fp32 gradients": DeepSpeed's float32 gradient partitions as a backward ends (the loss
phase), which the step builds only later.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import torch
import trl

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fixed_rollouts
from precision_probe import emulate_a_bf16_gpu

# DeepSpeed optimizer attributes that hold tensors (ZeRO-1/2: stage_1_and_2.py; ZeRO-3: stage3.py).
DS_MASTER = ("single_partition_of_fp32_groups", "fp32_partitioned_groups_flat")
DS_WEIGHTS = ("bit16_groups_flat", "fp16_partitioned_groups_flat")
DS_GRADS = (
    "grads_in_partition",
    "ipg_buffer",
    "averaged_gradients",
    "grad_partitions_flat_buffer",
    "_DeepSpeedZeroOptimizer_Stage3__ipg_bucket_flat_buffer",
)


def tensors_in(obj) -> list[torch.Tensor]:
    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, dict):
        return [t for v in obj.values() for t in tensors_in(v)]
    if isinstance(obj, (list, tuple)):
        return [t for v in obj for t in tensors_in(v)]
    return []


class Ledger:
    def __init__(self):
        self.seen: set[int] = set()
        self.bytes: dict[str, int] = {}

    def add(self, category: str, tensors) -> None:
        for t in tensors:
            if t is None or not isinstance(t, torch.Tensor) or t.numel() == 0:
                continue
            storage = t.untyped_storage()
            if storage.data_ptr() in self.seen or storage.nbytes() == 0:
                continue
            self.seen.add(storage.data_ptr())
            self.bytes[category] = self.bytes.get(category, 0) + storage.nbytes()


def snapshot(trainer, torch_optimizer) -> dict[str, int]:
    ledger = Ledger()
    model = trainer.model_wrapped if hasattr(trainer, "model_wrapped") else trainer.model
    module = getattr(model, "module", model)
    ds = getattr(trainer, "deepspeed", None)
    zero_opt = getattr(ds, "optimizer", None) if ds is not None else None
    params = list(module.parameters())
    # ZeRO-3: a parameter's own data is released; its partition lives in ds_tensor.
    ledger.add("weights", [getattr(p, "ds_tensor", None) for p in params])
    if zero_opt is not None:
        for name in DS_WEIGHTS:
            ledger.add("weights", tensors_in(getattr(zero_opt, name, None)))
    ledger.add("weights", [p.data for p in params])
    if zero_opt is not None:
        for name in DS_MASTER:
            ledger.add("master weights", tensors_in(getattr(zero_opt, name, None)))
    ledger.add("optimizer", [t for state in torch_optimizer.state.values() for t in tensors_in(state) if t.dim() > 0])
    ledger.add("gradients", [p.grad for group in torch_optimizer.param_groups for p in group["params"]])
    ledger.add("gradients", [p.grad for p in params])
    if zero_opt is not None:
        for name in DS_GRADS:
            ledger.add("ZeRO buffers", tensors_in(getattr(zero_opt, name, None)))
        buckets = getattr(zero_opt, "ipg_buckets", None) or {}  # ZeRO-1/2's reduce buckets (IPGBucket.buffer)
        ledger.add("ZeRO buffers", [t for b in buckets.values() for t in tensors_in(getattr(b, "buffer", None))])
    ref = getattr(trainer, "ref_model", None)
    if ref is not None:
        ref_module = getattr(ref, "module", ref)
        ledger.add("reference model", [getattr(p, "ds_tensor", None) for p in ref_module.parameters()])
        ledger.add("reference model", [p.data for p in ref_module.parameters()])
    logging = getattr(model, "_get_ddp_logging_data", None)
    if callable(logging):
        ledger.bytes["DDP buckets"] = int(sum(int(s) for s in str(logging().get("bucket_sizes", "")).split(", ") if s.strip()))
    return ledger.bytes


def fp32_gradient_bytes(trainer) -> int:
    """Bytes of DeepSpeed's float32 gradient partitions (the `.grad` of its master partitions) now."""
    ds = getattr(trainer, "deepspeed", None)
    zero_opt = getattr(ds, "optimizer", None) if ds is not None else None
    if zero_opt is None:
        return 0
    masters = [t for name in DS_MASTER for t in tensors_in(getattr(zero_opt, name, None))]
    return sum(t.grad.untyped_storage().nbytes() for t in masters if t.grad is not None)


def install(out: Path) -> None:
    """Records the first AdamW step of the trainer (whatever wraps the optimizer: accelerate,
    DeepSpeed's ZeRO optimizer, the learning-rate scheduler), and DeepSpeed's float32 gradient
    partitions as each backward (the loss) ends, before the step builds them."""
    import accelerate

    original_train = trl.GRPOTrainer.train
    original_step = torch.optim.AdamW.step
    original_backward = accelerate.Accelerator.backward
    rank = os.environ.get("RANK", "0")
    trainer = []
    during_loss = {"loss: fp32 gradients": 0, "backward calls": 0}

    def backward(self, loss, **kwargs):
        # Counted first: under DeepSpeed, accelerate's backward also takes the optimizer step.
        during_loss["backward calls"] += 1
        return original_backward(self, loss, **kwargs)

    def after_loss() -> None:
        if trainer:
            during_loss["loss: fp32 gradients"] = max(during_loss["loss: fp32 gradients"], fp32_gradient_bytes(trainer[0]))

    try:
        from deepspeed.runtime.engine import DeepSpeedEngine
    except ImportError:
        DeepSpeedEngine = None
    if DeepSpeedEngine is not None:
        original_engine_backward = DeepSpeedEngine.backward

        def engine_backward(self, *args, **kwargs):
            result = original_engine_backward(self, *args, **kwargs)
            after_loss()  # the gradients reduced into their partitions, the step not yet taken
            return result

        DeepSpeedEngine.backward = engine_backward

    def train(self, *args, **kwargs):
        trainer.append(self)
        return original_train(self, *args, **kwargs)

    def step(self, *args, **kwargs):
        before = snapshot(trainer[0], self) if trainer else {}
        if trainer:
            during_loss["step: fp32 gradients"] = max(during_loss.get("step: fp32 gradients", 0), fp32_gradient_bytes(trainer[0]))
        result = original_step(self, *args, **kwargs)
        path = out / f"memory_rank{rank}.json"
        # The first step after a backward: DeepSpeed also steps its optimizer once when it builds it,
        # with zero gradients, to create AdamW's moments.
        if trainer and during_loss["backward calls"] and not path.exists():
            after = snapshot(trainer[0], self)
            path.write_text(json.dumps({**{k: max(before.get(k, 0), after.get(k, 0)) for k in {*before, *after}}, **during_loss}))
        return result

    trl.GRPOTrainer.train = train
    torch.optim.AdamW.step = step
    accelerate.Accelerator.backward = backward


def main() -> int:
    config = sys.argv[1]
    emulate_a_bf16_gpu()
    out = Path(json.loads(Path(config).read_text())["output_dir"])
    fixed_rollouts.install(str(out))
    install(out)
    from olmocr_rl.cli import main as cli_main

    return cli_main(["train", json.loads(Path(config).read_text())["prepared_dir"], "--config", config])


if __name__ == "__main__":
    raise SystemExit(main())
