#!/usr/bin/env bash
# One prepared command for a GPU machine: a few GRPO steps of a randomly initialised
# Qwen2.5-VL-3B-shaped model on one GPU (plain bf16, DeepSpeed ZeRO-2, LoRA) with the real
# olmOCR-bench reward; writes one JSON file (step time split into generation, forward/backward and
# reward, tokens/s, peak memory, versions) to $OUT/gpu_check.json ($OUT set) or the --out folder,
# and prints a summary. Offline (no hub access, no package index).
#
#   scripts/gpu_check.sh --kit target/gpu-kit   # GPU machine without our packages: install the kit
#                                               # (`make gpu-kit`) into a temporary folder first
#   scripts/gpu_check.sh                        # GPU machine with `make setup && make build` done
#   scripts/gpu_check.sh --tiny                 # CPU-sized variant (tiny fixture model)
#   scripts/gpu_check.sh --steps 4 --completion-length 1024 --variants plain,lora
#
# --kit DIR: pip installs DIR/*.whl (no index, no dependencies) into a temporary folder put on
# PYTHONPATH, points OLMOCR_RL_KATEX_JS at DIR/katex.min.js and runs with python3 ($PYTHON
# overrides). Without --kit: .venv/bin/python when present, else $PYTHON or python3.
set -euo pipefail
cd "$(dirname "$0")/.."
KIT=""
ARGS=()
while [ $# -gt 0 ]; do
    case "$1" in
        --kit) KIT="${2:?--kit needs a folder}"; shift 2 ;;
        --kit=*) KIT="${1#--kit=}"; shift ;;
        *) ARGS+=("$1"); shift ;;
    esac
done
PY="${PYTHON:-}"
if [ -n "$KIT" ]; then
    KIT="$(cd "$KIT" && pwd)"
    PY="${PY:-python3}"
    ls "$KIT"/*.whl >/dev/null 2>&1 || { echo "gpu_check: no wheels in $KIT (build the kit with 'make gpu-kit')" >&2; exit 2; }
    SITE="$(mktemp -d /tmp/olmocr-rl-kit-site.XXXXXX)"
    t0=$(date +%s)
    "$PY" -m pip install -q --disable-pip-version-check --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target "$SITE" "$KIT"/*.whl
    echo "gpu_check: installed $(ls "$KIT"/*.whl | wc -l) kit wheels into $SITE in $(( $(date +%s) - t0 )) s"
    export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
    export PATH="$SITE/bin:$PATH"
    export GPU_CHECK_KIT="$KIT" GPU_CHECK_KIT_SITE="$SITE"
    [ -f "$KIT/katex.min.js" ] && export OLMOCR_RL_KATEX_JS="$KIT/katex.min.js"
    ARGS+=(--kit "$KIT")
elif [ -z "$PY" ]; then
    if [ -x .venv/bin/python ]; then PY=.venv/bin/python; else PY=python3; fi
fi
case "$PY" in /*) ;; */*) PY="$PWD/$PY" ;; esac  # absolute: the import check below runs from /
# From / so that the source tree (whose extension is not built on a machine that only received
# the working tree) does not shadow an installed olmocr_rl.
if ! (cd / && "$PY" -c "import olmocr_rl._core") 2>/dev/null; then
    if [ -n "$KIT" ]; then
        echo "gpu_check: olmocr_rl from the kit does not import with $PY:" >&2
        (cd / && "$PY" -c "import olmocr_rl._core") >&2 || true
    else
        echo "gpu_check: olmocr_rl is not built for $PY; run 'make build' (or set PYTHON=..., or use --kit)" >&2
    fi
    exit 2
fi
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
exec "$PY" scripts/gpu_check.py ${ARGS[@]+"${ARGS[@]}"}
