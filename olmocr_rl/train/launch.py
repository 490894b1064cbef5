"""Launch commands for `olmocr-rl train` on several processes: `accelerate launch` or the
`deepspeed` launcher, both starting the one rank entry point with one argv form,

    python -m olmocr_rl.train PREPARED --config OUTPUT_DIR/train_config.json [--zero N]

(`olmocr_rl/train/__main__.py` = `olmocr-rl train`, which sees that a launcher started it and runs
one rank: `olmocr_rl.train.plan.run_rank`), and both using one set of DeepSpeed presets,
olmocr_rl/configs/ds_zero{1,2,3}.json (accelerate takes it with `--deepspeed_config_file`; a rank of
the `deepspeed` launcher exports what accelerate would, ACCELERATE_USE_DEEPSPEED and
ACCELERATE_DEEPSPEED_CONFIG_FILE, before the trainer exists), so both build the same engine.
Plain data parallelism is accelerate's own (olmocr_rl/configs/ddp.yaml).

Users never edit an accelerate YAML: process counts, machine rank/address and mixed precision are
command-line flags; batch size, gradient accumulation and clipping are "auto" in the presets and
filled by the trainer from the training config. On machines without CUDA the GRPOConfig uses
`ddp_backend="gloo"` (set by the config builder), without which accelerate 1.x reports one process
under DeepSpeed. DeepSpeed's just-in-time compiled ops are cached in a stable folder
(`TORCH_EXTENSIONS_DIR`, default ~/.cache/olmocr-rl/torch_extensions) so only the first run builds.
A finished rank shuts its process group down (`shutdown_process_group`): left to interpreter exit,
gloo's threads can abort it ("terminate called without an active exception") and fail the run.
"""

from __future__ import annotations

import os
import shlex
import sys
from importlib import resources
from pathlib import Path

from olmocr_rl.train.config import ConfigError

ENTRY_MODULE = "olmocr_rl.train"  # what every rank runs (olmocr_rl/train/__main__.py)
ZERO_STAGES = (1, 2, 3)


def ddp_config_file() -> Path:
    """accelerate's config for plain data parallelism (its DeepSpeed runs take the JSON presets)."""
    return Path(str(resources.files("olmocr_rl.configs").joinpath("ddp.yaml")))


def deepspeed_config_file(zero: int) -> Path:
    """The packaged DeepSpeed JSON for a ZeRO stage (the `deepspeed` launcher's preset)."""
    if zero not in ZERO_STAGES:
        raise ConfigError(f"--zero must be 1, 2 or 3, got {zero}")
    return Path(str(resources.files("olmocr_rl.configs").joinpath(f"ds_zero{zero}.json")))


def free_port() -> int:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


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


def rank_program(prepared_dir: str | Path, config_path: str | Path, zero: int | None = None) -> list[str]:
    """What every rank runs (after `-m`): the entry module, the prepared folder, the resolved config."""
    program = [ENTRY_MODULE, str(Path(prepared_dir).resolve()), "--config", str(Path(config_path).resolve())]
    return program + (["--zero", str(zero)] if zero is not None else [])


def build_launch_argv(
    prepared_dir: str | Path,
    config_path: str | Path,
    *,
    num_processes: int,
    zero: int | None,
    num_machines: int = 1,
    machine_rank: int = 0,
    main_process_ip: str | None = None,
    main_process_port: int | None = None,
    mixed_precision: str = "no",
    program: list[str] | None = None,
) -> list[str]:
    """The `accelerate launch` command (as an argv list, starting with this Python) that runs the
    rank entry point on `num_processes` ranks in total across `num_machines` machines.
    `program` replaces `-m olmocr_rl.train PREPARED --config CONFIG` (e.g. `[script.py, args...]`)."""
    if num_processes < 1:
        raise ConfigError(f"--num-processes must be at least 1, got {num_processes}")
    if num_machines < 1:
        raise ConfigError(f"--num-machines must be at least 1, got {num_machines}")
    if num_processes % num_machines:
        raise ConfigError(
            f"--num-processes ({num_processes}) is the total over all machines and must be divisible by --num-machines ({num_machines})"
        )
    if not 0 <= machine_rank < num_machines:
        raise ConfigError(f"--machine-rank must be in [0, {num_machines}), got {machine_rank}")
    if num_machines > 1 and not main_process_ip:
        raise ConfigError("multi-node training needs --main-process-ip (the address of the rank-0 machine)")
    preset = ["--config_file", str(ddp_config_file())]
    if zero is not None:
        preset = ["--use_deepspeed", "--deepspeed_config_file", str(deepspeed_config_file(zero))]
        if zero == 3:
            preset += ["--zero3_init_flag", "true"]  # each rank loads only its partition of the weights
    argv = [
        sys.executable, "-m", "accelerate.commands.launch", *preset,
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
    argv += program if program is not None else ["-m", *rank_program(prepared_dir, config_path)]
    return argv


def build_deepspeed_argv(
    prepared_dir: str | Path,
    config_path: str | Path,
    *,
    num_processes: int,
    zero: int | None,
    num_machines: int = 1,
    main_process_ip: str | None = None,
    main_process_port: int | None = None,
    hostfile: str | Path | None = None,
    gpus: list[str] | None = None,
    program: list[str] | None = None,
) -> list[str]:
    """The `deepspeed` launcher command (as an argv list, starting with this Python) that runs the
    rank entry point on `num_processes` ranks. One node: `--num_gpus` (or `--include localhost:IDS`
    when `gpus` picks the devices); several: a DeepSpeed hostfile, from which the launcher starts
    every node itself (pdsh/ssh), `num_processes / num_machines` ranks on each."""
    if zero is None:
        raise ConfigError("--launcher deepspeed runs DeepSpeed: give --zero 1, 2 or 3 (plain data parallelism: --launcher accelerate)")
    deepspeed_config_file(zero)  # validates the stage
    if num_processes < 1:
        raise ConfigError(f"--num-processes must be at least 1, got {num_processes}")
    if num_processes % num_machines:
        raise ConfigError(
            f"--num-processes ({num_processes}) is the total over all machines and must be divisible by --num-machines ({num_machines})"
        )
    argv = [sys.executable, "-m", "deepspeed.launcher.runner"]
    per_node = num_processes // num_machines
    if num_machines > 1:
        if not hostfile:
            raise ConfigError("--launcher deepspeed on several machines needs --hostfile (one `host slots=N` line per machine)")
        argv += ["--hostfile", str(hostfile), "--num_nodes", str(num_machines), "--num_gpus", str(per_node)]
        if main_process_ip:
            argv += ["--master_addr", main_process_ip]
    elif gpus is not None:
        if len(gpus) < per_node:
            raise ConfigError(f"--num-processes {per_node} needs {per_node} GPUs for training, only {len(gpus)} are left")
        argv += ["--include", "localhost:" + ",".join(gpus[:per_node])]
    else:
        if hostfile:
            argv += ["--hostfile", str(hostfile)]
        argv += ["--num_gpus", str(per_node)]
    port = main_process_port if main_process_port is not None else (29500 if num_machines > 1 else free_port())
    argv += ["--master_port", str(port)]
    argv += ["--module"] + (program if program is not None else rank_program(prepared_dir, config_path, zero))
    return argv


def use_deepspeed_preset(zero: int, mixed_precision: str = "no", env: dict[str, str] | None = None) -> dict[str, str]:
    """What `accelerate launch` exports for DeepSpeed, for a rank the `deepspeed` launcher started:
    the trainer then builds its DeepSpeedPlugin from the stage's JSON preset."""
    env = os.environ if env is None else env  # type: ignore[assignment]
    env["ACCELERATE_USE_DEEPSPEED"] = "true"
    env["ACCELERATE_DEEPSPEED_CONFIG_FILE"] = str(deepspeed_config_file(zero))
    env["ACCELERATE_MIXED_PRECISION"] = mixed_precision
    return env  # type: ignore[return-value]


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


def format_plan(argv: list[str], env: dict[str, str] | None = None, shown: dict[str, str] | None = None) -> str:
    """A command as one copy-pasteable shell line (for --dry-run), with the variables it needs."""
    words = []
    if env is not None and "TORCH_EXTENSIONS_DIR" in env:
        words.append(f"TORCH_EXTENSIONS_DIR={shlex.quote(env['TORCH_EXTENSIONS_DIR'])}")
    words += [f"{k}={shlex.quote(v)}" for k, v in (shown or {}).items()]
    return " ".join(words + [shlex.join(argv)])


def launcher_argv(prepared_dir: str | Path, config_path: str | Path, launcher: str = "accelerate", **kw) -> list[str]:
    """The launch command for `launcher` ("accelerate" or "deepspeed"); `kw` as `olmocr-rl train`'s
    flags (num_processes, zero, num_machines, machine_rank, main_process_ip, main_process_port,
    hostfile, gpus) and the config's mixed precision."""
    if launcher == "deepspeed":
        kw.pop("machine_rank", None)  # the launcher starts every node from the hostfile
        kw.pop("mixed_precision", None)  # each rank reads it from the resolved config
        return build_deepspeed_argv(prepared_dir, config_path, **kw)
    if launcher != "accelerate":
        raise ConfigError(f"--launcher must be accelerate or deepspeed, got {launcher!r}")
    if kw.pop("hostfile", None):
        raise ConfigError("--hostfile is for --launcher deepspeed (accelerate: --num-machines, --machine-rank, --main-process-ip)")
    kw.pop("gpus", None)  # accelerate sees the devices through CUDA_VISIBLE_DEVICES
    return build_launch_argv(prepared_dir, config_path, **kw)


def launch(argv: list[str], env: dict[str, str]) -> int:
    """Run a launcher command and return its exit code; every process it starts is stopped with it
    (olmocr_rl/train/supervise.py). Raises Interrupted on SIGINT, SIGTERM or SIGHUP."""
    from olmocr_rl.train.supervise import supervise

    Path(env["TORCH_EXTENSIONS_DIR"]).mkdir(parents=True, exist_ok=True)
    return supervise(argv, env)


def shutdown_process_group() -> None:
    """Barrier, then destroy the default process group, if one exists (call on success only)."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()
