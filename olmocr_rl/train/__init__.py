"""`olmocr-rl train`: GRPO on prepared olmOCR-bench pages with trl.

    config.py     TrainConfig (olmOCR 2 recipe defaults), YAML/TOML + key=value overrides,
                  build_grpo_config (THE TrainConfig -> trl.GRPOConfig builder)
    preflight.py  checks before launch (batch divisibility, eval batch, rewards, token budget, vLLM TP)
    data.py       the prepared folder -> a lazy-image datasets.Dataset
    rewards.py    reward functions by name with weights; failing-test recorder
    callbacks.py  metrics.jsonl, rich progress on rank 0
    outputs.py    bench-style candidate files after training
    plan.py       the training plan (LaunchOptions -> Plan: world size, GPU split, commands,
                  environment, pre-flight problems), its --dry-run text, and `execute`/`run_rank`
    worker.py     one process's training (the whole run, or one rank), final outputs
    launch.py     the accelerate / deepspeed commands, both starting the one rank entry point
    supervise.py  the launcher (and the vLLM server) run and stopped together
    vllm_server.py  `--vllm-gpus K`: GPU split, the server's command, health wait
    budget.py     checkpoint disk and generation estimates
    __main__.py   the rank entry point: `python -m olmocr_rl.train ...` = `olmocr-rl train ...`

Nothing here imports torch/trl at module level except callbacks.py and worker's run().
"""

from olmocr_rl.train.config import ConfigError, TrainConfig, build_grpo_config, load_config
from olmocr_rl.train.preflight import Problem, preflight

__all__ = ["ConfigError", "Problem", "TrainConfig", "build_grpo_config", "load_config", "preflight"]
