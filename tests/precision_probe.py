"""Runs the training worker (sampling replaced by tests/fixed_rollouts.py's schedule, so the
rewards differ within a group and the gradients are not zero) and records what the first optimizer
step did to the weights the optimizer owns: for plain PyTorch training the trainable parameters, for
DeepSpeed its float32 master partitions (the model's own bf16 copy would hide a 2e-6 step).

    python tests/precision_probe.py RESOLVED_CONFIG.json        # one process
    accelerate launch ... tests/precision_probe.py RESOLVED_CONFIG.json

Writes OUTPUT_DIR/precision_rank<R>.json: {"dtype": the dtype those weights are held in,
"elements": how many, "moved": the share that changed, "median_step_over_lr": the median |change|
of those that changed, divided by the learning rate (AdamW's first step moves a weight by about
the learning rate)}.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import torch
import trl
from transformers import TrainerCallback

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fixed_rollouts


def master_weights(model, optimizer) -> list[torch.Tensor]:
    inner = getattr(optimizer, "optimizer", optimizer)  # accelerate wraps DeepSpeed's optimizer
    fp32 = getattr(inner, "single_partition_of_fp32_groups", None)  # ZeRO-1/2
    if fp32 is None:
        fp32 = getattr(inner, "fp32_partitioned_groups_flat", None)  # ZeRO-3
    if fp32 is not None:
        return [t.detach().clone() for t in fp32]
    return [p.detach().clone() for p in model.parameters() if p.requires_grad]


class UpdateProbe(TrainerCallback):
    def __init__(self, path: Path):
        self.path, self.before = path, None

    def on_step_begin(self, args, state, control, model=None, optimizer=None, **kwargs):
        if state.global_step == 0:
            self.before = master_weights(model, optimizer)

    def on_step_end(self, args, state, control, model=None, optimizer=None, **kwargs):
        if state.global_step != 1:
            return
        after = master_weights(model, optimizer)
        delta = torch.cat([(a.double() - b.double()).abs().flatten() for a, b in zip(after, self.before)])
        moved = delta[delta > 0]
        self.path.write_text(
            json.dumps(
                {
                    "dtype": str(after[0].dtype).removeprefix("torch."),
                    "elements": int(delta.numel()),
                    "moved": float(moved.numel() / max(1, delta.numel())),
                    "median_step_over_lr": float(moved.median() / args.learning_rate) if moved.numel() else 0.0,
                }
            )
        )


def emulate_a_bf16_gpu() -> None:
    """Under DeepSpeed the ranks cannot set `use_cpu` (accelerate would skip DeepSpeed), and
    transformers then refuses bf16 without a bf16 GPU; answering its capability check yes lets
    DeepSpeed's CPU accelerator run the bf16 path a GPU run takes."""
    import transformers.training_args

    transformers.training_args.is_torch_bf16_gpu_available = lambda: True


def main() -> int:
    config = sys.argv[1]
    emulate_a_bf16_gpu()
    out = Path(json.loads(Path(config).read_text())["output_dir"])
    fixed_rollouts.install(str(out))
    probe = UpdateProbe(out / f"precision_rank{os.environ.get('RANK', '0')}.json")
    original_init = trl.GRPOTrainer.__init__

    def init(self, *args, **kwargs):
        kwargs["callbacks"] = [*(kwargs.get("callbacks") or []), probe]
        original_init(self, *args, **kwargs)

    trl.GRPOTrainer.__init__ = init
    from olmocr_rl.cli import main as cli_main

    # The train command as its rank entry point runs it: alone (it trains in this process) or as
    # one rank of `accelerate launch` (it sees the launcher and runs one rank).
    return cli_main(["train", json.loads(Path(config).read_text())["prepared_dir"], "--config", config])


if __name__ == "__main__":
    raise SystemExit(main())
