"""`olmocr-rl train`: GRPO on prepared olmOCR-bench pages with trl.

    config.py     TrainConfig (ours + the trl options the run states; olmOCR 2 recipe defaults),
                  YAML/TOML + key=value overrides, validation, the run's read-only resolved copy
                  (`resolve`), the engines' settings
    schema.py     trl's options read from trl.GRPOConfig; a value checked against a field's type
    grpo.py       build_grpo_config (THE TrainConfig -> trl.GRPOConfig builder)
    options.py    the `--options` tables: config keys, rewards
    preflight.py  checks before launch (batch divisibility, eval batch, rewards, token budget, vLLM TP)
    data.py       the prepared folder read once per process; a split as a lazy-image datasets.Dataset
    model.py      the policy: training dtype, LoRA, the ZeRO-3 loading check
    rewards.py    what training adds to the rewards (olmocr_rl/reward_registry.py): rank-wide
                  metrics, the failing-test recorder
    callbacks.py  metrics.jsonl, rich progress on rank 0
    console.py    the compact completions table, library noise
    outputs.py    bench-style candidate files after training
    card.py       the model card (output_dir/README.md) the trainer writes in place of trl's
    plan.py       the training plan (LaunchOptions -> a frozen Plan: the resolved config, world
                  size, steps, GPU split, commands, environment, pre-flight problems), its --dry-run
                  text, and `execute`
    rank.py       one rank of a launcher's job: the entry argv, the rank's run
    worker.py     one process's training (the whole run, or one rank), final outputs
    trainer.py    OlmocrGRPOTrainer: trl's GRPOTrainer subclassed, every seam with trl (the one
                  module that names trl's internals); filtering.py: online filtering without trl
    vllm_server.py  `--vllm-gpus K`: the server command trl builds, its ports
    budget.py     checkpoint disk and generation estimates
    __main__.py   the rank entry point: `python -m olmocr_rl.train ...` = `olmocr-rl train ...`

Launching, supervision and the GPU split are every command's (olmocr_rl/launch/), as are the
rewards (olmocr_rl/reward_registry.py) and the engines (olmocr_rl/engines.py). Nothing here imports
torch/trl at module level except callbacks.py and what worker's run() loads.
"""

from olmocr_rl.errors import ConfigError
from olmocr_rl.train.config import TrainConfig, load_config
from olmocr_rl.train.grpo import build_grpo_config
from olmocr_rl.train.preflight import Problem, preflight

__all__ = ["ConfigError", "Problem", "TrainConfig", "build_grpo_config", "load_config", "preflight"]
