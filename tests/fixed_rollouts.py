"""Runs the training worker with sampling replaced by a fixed schedule of completions, so that a
one-process run and a multi-process run (plain DDP or DeepSpeed) see exactly the same
completions and must make exactly the same updates.

    python tests/fixed_rollouts.py RESOLVED_CONFIG.json            # one process
    accelerate launch ... tests/fixed_rollouts.py RESOLVED_CONFIG.json

The completion of the k-th row of the generation batch (counted over all ranks, as trl lays the
batch out: rank r holds rows r*n .. r*n+n-1) at step t is a fixed string of ASCII letters in
which 'e', 'a' and 't' come and go with k and t, so the bench rewards differ within each page's
group and the advantages are not zero. After every optimizer step each rank appends the sum of
its parameters (float64) to OUTPUT_DIR/fixed_rollouts_rank<R>.json.

Only the sampling is replaced (`GRPOTrainer._generate_single_turn`, trl 1.x); tokenisation,
rewards, advantages, loss, gradient reduction and the optimizer are trl's and ours.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import trl
from transformers import TrainerCallback

FILLER = "xyzqjkvbnm"


def completion(k: int, step: int) -> str:
    """The fixed completion text of global row k at step `step` (8 characters)."""
    text = [FILLER[(k * 3 + step + i) % len(FILLER)] for i in range(8)]
    bits = (k * 5 + step * 3) % 8
    for pos, (bit, ch) in enumerate(((1, "e"), (2, "a"), (4, "t"))):
        if bits & bit:
            text[2 + pos * 2] = ch
    return "".join(text)


class ParamSums(TrainerCallback):
    def __init__(self, path: Path):
        self.path = path
        self.sums: list[float] = []

    def on_step_end(self, args, state, control, model=None, **kwargs):
        self.sums.append(sum(p.detach().double().sum().item() for p in model.parameters()))
        self.path.write_text(json.dumps(self.sums))


def _fixed_generation(self, prompt_ids, images, multimodal_fields, num_generations=None, has_tool_images=False):
    # trl 1.11 passes no num_generations (added in a later 1.x); this stand-in does not need it.
    tok = self.processing_class.tokenizer
    n = len(prompt_ids)
    first = self.accelerator.process_index * n
    step = self.state.global_step
    return [tok.convert_tokens_to_ids(list(completion(k, step))) for k in range(first, first + n)], None


def install(output_dir: str) -> None:
    rank = int(os.environ.get("RANK", "0"))
    callback = ParamSums(Path(output_dir) / f"fixed_rollouts_rank{rank}.json")
    original_init = trl.GRPOTrainer.__init__

    def init(self, *args, **kwargs):
        kwargs["callbacks"] = [*(kwargs.get("callbacks") or []), callback]
        original_init(self, *args, **kwargs)

    trl.GRPOTrainer.__init__ = init
    trl.GRPOTrainer._generate_single_turn = _fixed_generation


def main() -> int:
    config = sys.argv[1]
    install(json.loads(Path(config).read_text())["output_dir"])
    from olmocr_rl.cli import main as cli_main

    # The train command as its rank entry point runs it: alone (it trains in this process) or as
    # one rank of `accelerate launch` (it sees the launcher and runs one rank).
    return cli_main(["train", json.loads(Path(config).read_text())["prepared_dir"], "--config", config])


if __name__ == "__main__":
    raise SystemExit(main())
