"""`olmocr-rl train`: GRPO on prepared olmOCR-bench pages with trl.

    config.py     TrainConfig (olmOCR 2 recipe defaults), YAML/TOML + key=value overrides,
                  build_grpo_config (THE TrainConfig -> trl.GRPOConfig builder)
    preflight.py  checks before launch (batch divisibility, eval batch, rewards, token budget, vLLM TP)
    data.py       the prepared folder -> a lazy-image datasets.Dataset
    rewards.py    reward functions by name with weights; failing-test recorder
    modeling.py   model + processor loading (multimodal check), LoRA
    callbacks.py  metrics.jsonl, rich progress on rank 0
    outputs.py    bench-style candidate files after training
    worker.py     `python -m olmocr_rl.train.worker CONFIG.json` (in-process or under accelerate)
    launch.py     the accelerate / deepspeed launch commands, one rank's entry point
    vllm_server.py  `--vllm-gpus K`: GPU split, the vLLM server's life, health wait, teardown
    __main__.py   `deepspeed -m olmocr_rl.train ...` = `olmocr-rl train ...` on each rank

Nothing here imports torch/trl at module level except callbacks.py and worker's run().
"""

from olmocr_rl.train.config import ConfigError, TrainConfig, build_grpo_config, load_config
from olmocr_rl.train.preflight import Problem, preflight

__all__ = ["ConfigError", "Problem", "TrainConfig", "build_grpo_config", "load_config", "preflight"]
