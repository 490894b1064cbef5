"""Package data: accelerate + DeepSpeed presets used by `olmocr-rl train` (see olmocr_rl.train.launch)."""
