"""One rank of a launcher's job: the program every launcher starts on every rank,

    python -m olmocr_rl.train PREPARED --config OUTPUT_DIR/train_config.json [--zero N]

(olmocr_rl/train/__main__.py = `olmocr-rl train`, which sees that a launcher started it:
`launched_rank`), and what such a process does (`rank_main`): pre-flight once over the prepared
folder read once, training, and, when no `olmocr-rl train` parent launched it (a user's own
`deepspeed -m` / `torchrun -m`), the final outputs on rank 0. With a parent, the parent writes them
(exactly one writer: olmocr_rl/train/plan.py `execute`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

from olmocr_rl.launch.launchers import PARENT_ENV
from olmocr_rl.train.config import TrainConfig

ENTRY_MODULE = "olmocr_rl.train"  # what every rank runs (olmocr_rl/train/__main__.py)
CONFIG_FILE = "train_config.json"


def config_file(cfg: TrainConfig) -> Path:
    """Where the resolved config is written for the ranks (and read by `--resume`, `report`)."""
    return Path(cfg.output_dir) / CONFIG_FILE


def rank_program(prepared_dir: str | Path, config_path: str | Path, zero: int | None = None) -> list[str]:
    """What every rank runs after `python`: the entry module, the prepared folder, the resolved config."""
    program = ["-m", ENTRY_MODULE, str(Path(prepared_dir).resolve()), "--config", str(Path(config_path).resolve())]
    return program + (["--zero", str(zero)] if zero is not None else [])


def launched_rank(local_rank: int | None) -> bool:
    """True in a process a launcher started as one rank: the `deepspeed` launcher passes
    --local_rank (or, with --no_local_rank, sets LOCAL_SIZE/CROSS_RANK), torchrun (under accelerate
    too) sets TORCHELASTIC_RUN_ID; a LOCAL_RANK left in the environment alone is not enough."""
    env = os.environ
    return local_rank is not None or (
        "LOCAL_RANK" in env and "WORLD_SIZE" in env and any(k in env for k in ("TORCHELASTIC_RUN_ID", "LOCAL_SIZE", "CROSS_RANK"))
    )


def has_parent() -> bool:
    """An `olmocr-rl train` launched this rank (and writes the final outputs itself)."""
    return os.environ.get(PARENT_ENV) == "1"


def _print(message: str = "", *, err: bool = False) -> None:
    import sys

    print(message, file=sys.stderr if err else sys.stdout, flush=err)


def rank_main(cfg: TrainConfig, zero: int | None, *, dry_run: bool = False, echo: Callable[..., None] = _print) -> int:
    """This process is one rank of a launcher's job (see the module docstring). `zero`: the ZeRO
    stage the `deepspeed` launcher's ranks are told (accelerate's know it). Returns the exit status."""
    from olmocr_rl.launch.gpus import cuda_available
    from olmocr_rl.launch.launchers import launch_env, shutdown_process_group, use_deepspeed_preset
    from olmocr_rl.train.config import resolve
    from olmocr_rl.train.preflight import errors, preflight, run_inputs
    from olmocr_rl.train.worker import run as run_worker
    from olmocr_rl.train.worker import write_final_outputs

    rank, world = int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
    cuda = cuda_available()
    cfg = resolve(cfg, cuda)  # the parent's resolved config has bf16 decided already; a user's launcher's may not
    inputs = run_inputs(cfg)
    problems = preflight(cfg, world, inputs, cuda=cuda, deepspeed=True if zero is not None else None)
    if rank == 0:
        # A parent printed the warnings before it launched; a rank prints what stops it.
        for p in errors(problems) if has_parent() else problems:
            echo(str(p), err=True)
        if dry_run:  # one rank of a launcher's job: the config it would train with
            echo(json.dumps(cfg.to_dict(), indent=2))
    if dry_run or errors(problems):
        return 1 if errors(problems) else 0
    # What `olmocr-rl train` gives the ranks it launches: ninja on PATH, the stable op cache.
    env = launch_env(base=dict(os.environ))
    os.environ["PATH"], os.environ["TORCH_EXTENSIONS_DIR"] = env["PATH"], env["TORCH_EXTENSIONS_DIR"]
    if rank == 0:
        cfg.to_json(config_file(cfg))
    if zero is not None:
        use_deepspeed_preset(zero, "bf16" if cfg.bf16 else "no")
    run_worker(cfg, inputs, cuda=cuda, final_outputs=False)
    shutdown_process_group()
    if rank == 0 and cfg.final_outputs != "none" and not has_parent():
        outputs = write_final_outputs(cfg)
        echo(f"outputs: {outputs['candidate']}  (score them: {outputs['bench_command']})")
    return 0
