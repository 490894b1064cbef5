#!/usr/bin/env bash
# One prepared command for a GPU machine: a few GRPO steps of a randomly initialised
# Qwen2.5-VL-3B-shaped model with DeepSpeed ZeRO-2 and the real olmOCR-bench reward; prints step
# time, tokens/s, peak memory and the reward's share of the step. Offline (no hub access).
#
#   scripts/gpu_check.sh                 # all visible GPUs, one process each; ~5-10 min incl. imports
#   scripts/gpu_check.sh --tiny          # CPU-sized variant (tiny fixture model, 2 ranks)
#   scripts/gpu_check.sh --steps 6 --completion-length 1024 --text-layers 36
#
# Needs the training dependencies (`make setup`, i.e. pip install -e '.[dev]') and the Rust
# extension built (`make build`). Uses .venv/bin/python when present, else $PYTHON or python3.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-}"
if [ -z "$PY" ]; then
    if [ -x .venv/bin/python ]; then PY=.venv/bin/python; else PY=python3; fi
fi
if ! "$PY" -c "import olmocr_rl._core" 2>/dev/null; then
    echo "gpu_check: olmocr_rl is not built for $PY; run 'make build' (or set PYTHON=...)" >&2
    exit 2
fi
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
exec "$PY" scripts/gpu_check.py "$@"
