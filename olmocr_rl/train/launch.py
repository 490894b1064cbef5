"""Multi-process launching for `olmocr-rl train`: builds an `accelerate launch` command around the
packaged DeepSpeed presets (olmocr_rl/configs/zero{1,2,3}.yaml, ddp.yaml) and runs the training
worker (`olmocr_rl.train.worker`) once per rank through this module's `rank_main`, which also shuts
the process group down cleanly: left to interpreter exit, gloo's threads can abort a finished
rank ("terminate called without an active exception", exit -6) and fail the whole run.

Users never edit an accelerate YAML: process counts, machine rank/address and mixed precision are
command-line flags; batch size, gradient accumulation and clipping are "auto" in the presets and
filled by the trainer from the training config. On machines without CUDA the worker's GRPOConfig
uses `ddp_backend="gloo"` (set by the config builder), without which accelerate 1.x reports one
process under DeepSpeed. DeepSpeed's just-in-time compiled ops are cached in a stable folder
(`TORCH_EXTENSIONS_DIR`, default ~/.cache/olmocr-rl/torch_extensions) so only the first run builds.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
from importlib import resources
from pathlib import Path

WORKER_MODULE = "olmocr_rl.train.launch"  # what each rank runs: rank_main() below
ZERO_STAGES = (1, 2, 3)


def config_file(zero: int | None) -> Path:
    """The packaged accelerate config for a ZeRO stage (None: plain data parallelism)."""
    if zero is not None and zero not in ZERO_STAGES:
        raise ValueError(f"--zero must be 1, 2 or 3, got {zero}")
    name = "ddp.yaml" if zero is None else f"zero{zero}.yaml"
    return Path(str(resources.files("olmocr_rl.configs").joinpath(name)))


def torch_extensions_dir() -> Path:
    """Where DeepSpeed caches its JIT-compiled ops: $TORCH_EXTENSIONS_DIR if set, else
    $XDG_CACHE_HOME (or ~/.cache)/olmocr-rl/torch_extensions/py<XY>_torch<version>, one folder per
    Python and torch version so an upgrade never loads an op built for another ABI."""
    if os.environ.get("TORCH_EXTENSIONS_DIR"):
        return Path(os.environ["TORCH_EXTENSIONS_DIR"])
    from importlib.metadata import PackageNotFoundError, version

    try:
        torch_version = version("torch")
    except PackageNotFoundError:
        torch_version = "none"
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    tag = f"py{sys.version_info.major}{sys.version_info.minor}_torch{torch_version}".replace("+", "_")
    return cache / "olmocr-rl" / "torch_extensions" / tag


def _mixed_precision(config_path: Path) -> str:
    """"bf16"/"fp16"/"no" from the resolved training config (a JSON object, possibly nested one
    level, e.g. {"grpo": {"bf16": true}}); "no" when it says nothing."""
    try:
        data = json.loads(Path(config_path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "no"
    scopes = [data] + [v for v in data.values() if isinstance(v, dict)] if isinstance(data, dict) else []
    for key in ("bf16", "fp16"):
        if any(scope.get(key) is True for scope in scopes):
            return key
    return "no"


def build_launch_argv(
    config_path: str | Path,
    *,
    num_processes: int,
    zero: int | None,
    num_machines: int = 1,
    machine_rank: int = 0,
    main_process_ip: str | None = None,
    main_process_port: int | None = None,
    mixed_precision: str | None = None,
    program: list[str] | None = None,
) -> list[str]:
    """The `accelerate launch` command (as an argv list, starting with this Python) that runs the
    training worker on `num_processes` ranks in total across `num_machines` machines.
    `program` replaces `-m olmocr_rl.train.launch CONFIG` (e.g. `[script.py, args...]`)."""
    if num_processes < 1:
        raise ValueError(f"--num-processes must be at least 1, got {num_processes}")
    if num_machines < 1:
        raise ValueError(f"--num-machines must be at least 1, got {num_machines}")
    if num_processes % num_machines:
        raise ValueError(
            f"--num-processes ({num_processes}) is the total over all machines and must be divisible by "
            f"--num-machines ({num_machines})"
        )
    if not 0 <= machine_rank < num_machines:
        raise ValueError(f"--machine-rank must be in [0, {num_machines}), got {machine_rank}")
    if num_machines > 1 and not main_process_ip:
        raise ValueError("multi-node training needs --main-process-ip (the address of the rank-0 machine)")
    if mixed_precision is None:
        mixed_precision = _mixed_precision(Path(config_path))
    argv = [
        sys.executable, "-m", "accelerate.commands.launch",
        "--config_file", str(config_file(zero)),
        "--num_processes", str(num_processes),
        "--num_machines", str(num_machines),
        "--machine_rank", str(machine_rank),
        "--mixed_precision", mixed_precision,
    ]  # fmt: skip
    if main_process_ip:
        argv += ["--main_process_ip", main_process_ip]
    if main_process_port is None:
        # One node: any free port (0 = accelerate picks one), so concurrent runs do not collide on
        # 29500. Several nodes must agree on a port: torch's default.
        main_process_port = 0 if num_machines == 1 else 29500
    argv += ["--main_process_port", str(main_process_port)]
    argv += program if program is not None else ["-m", WORKER_MODULE, str(Path(config_path).resolve())]
    return argv


def launch_env(local_ranks: int = 1, base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for the launched ranks: the current one, a stable DeepSpeed op cache and
    (unless the user set it) OMP_NUM_THREADS = cores / local ranks (torchrun would force 1), and
    this Python's bin/ on PATH."""
    env = dict(os.environ if base is None else base)
    env.setdefault("TORCH_EXTENSIONS_DIR", str(torch_extensions_dir()))
    env.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // max(1, local_ranks))))
    # DeepSpeed's JIT build calls `ninja` from PATH; a venv's bin/ is not on it unless activated.
    bindir = str(Path(sys.executable).parent)
    if bindir not in env.get("PATH", "").split(os.pathsep):
        env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    return env


def format_plan(argv: list[str], env: dict[str, str] | None = None) -> str:
    """The launch as one copy-pasteable shell line (for --dry-run)."""
    prefix = ""
    if env is not None:
        prefix = f"TORCH_EXTENSIONS_DIR={shlex.quote(env['TORCH_EXTENSIONS_DIR'])} "
    return prefix + shlex.join(argv)


def launch(
    config_path: str | Path,
    *,
    num_processes: int,
    zero: int | None,
    num_machines: int = 1,
    machine_rank: int = 0,
    main_process_ip: str | None = None,
    main_process_port: int | None = None,
) -> int:
    """Run the training worker under `accelerate launch` and return its exit code."""
    argv = build_launch_argv(
        config_path,
        num_processes=num_processes,
        zero=zero,
        num_machines=num_machines,
        machine_rank=machine_rank,
        main_process_ip=main_process_ip,
        main_process_port=main_process_port,
    )
    env = launch_env(num_processes // num_machines)
    Path(env["TORCH_EXTENSIONS_DIR"]).mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(argv, env=env)
    try:
        return proc.wait()
    except KeyboardInterrupt:
        proc.send_signal(signal.SIGINT)
        try:
            return proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            return proc.wait()


def shutdown_process_group() -> None:
    """Barrier, then destroy the default process group, if one exists (call on success only)."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()


def rank_main(argv: list[str] | None = None) -> int:
    """One launched rank: `olmocr_rl.train.worker`'s main, then a clean process-group shutdown."""
    from olmocr_rl.train.worker import main as worker_main

    code = worker_main(argv)
    if code == 0:
        shutdown_process_group()
    return code


if __name__ == "__main__":
    raise SystemExit(rank_main())
