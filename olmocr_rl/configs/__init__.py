"""Package data: accelerate + DeepSpeed presets used by `olmocr-rl train` (see olmocr_rl.launch.launchers)."""
