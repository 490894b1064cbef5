"""The launchers that start a program on several processes (and machines), one table (`LAUNCHERS`:
name -> its argv builder) behind one flat dispatcher (`launcher_argv`), all reading one record of
the launch options (`LaunchOptions`): `accelerate launch` and the `deepspeed` launcher, each
starting the same program on every rank (`olmocr-rl train` gives them its rank entry point,
`-m olmocr_rl.train PREPARED --config OUTPUT_DIR/train_config.json`), one environment for the
ranks (`launch_env`), and both using one set of DeepSpeed presets,
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
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from olmocr_rl.errors import ConfigError

ZERO_STAGES = (1, 2, 3)
# Set in the environment of the ranks a command launches (`launch_env`): a rank that sees it was
# started by an olmocr-rl command, which does what is done once per run (the final outputs of
# `train`); a rank a user's own `deepspeed -m` / `torchrun -m` started has no such parent.
PARENT_ENV = "OLMOCR_RL_PARENT"


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


class LaunchUsageError(ConfigError):
    """Launch options that contradict each other (a usage error: exit status 2)."""

    code = 2


@dataclass(frozen=True)
class LaunchOptions:
    """How the ranks (or a page job's workers) are started: the launch options of `olmocr-rl train`,
    `curate` and `generate`, one record that the argv builders, the training plan
    (olmocr_rl/train/plan.py, which resolves `num_processes`) and the page workers
    (olmocr_rl/launch/pages.py) read."""

    num_processes: int | None = None  # total over all machines; None: 1, or (train) every training GPU of the node(s) planned for
    zero: int | None = None  # DeepSpeed ZeRO stage
    launcher: str = "accelerate"  # a name of LAUNCHERS
    vllm_gpus: int | None = None  # train: serve generation on this node's last K GPUs
    num_machines: int = 1
    machine_rank: int = 0
    main_process_ip: str | None = None
    main_process_port: int | None = None
    hostfile: str | None = None
    gpus: int | None = None  # train: GPUs per node of the machine planned for (None: this machine's)
    gpu_memory: float | None = None  # train: GiB per GPU, as torch reports it (None: this machine's)

    def __post_init__(self) -> None:
        if self.launcher not in LAUNCHERS:
            raise ConfigError(f"--launcher {self.launcher!r}: choose {' or '.join(LAUNCHERS)}")
        if not 0 <= self.machine_rank < self.num_machines:  # the one check, for every command with these options
            raise LaunchUsageError(f"--machine-rank must be in [0, {self.num_machines}) with --num-machines {self.num_machines} "
                                   f"(machines are ranked 0 to {self.num_machines - 1}), got {self.machine_rank}")  # fmt: skip

    @property
    def processes(self) -> int:
        """Processes in all: `num_processes`, 1 when not given."""
        return 1 if self.num_processes is None else self.num_processes


def accelerate_argv(
    program: list[str], launch: LaunchOptions, *, mixed_precision: str = "no", devices: list[str] | None = None
) -> list[str]:
    """The `accelerate launch` command (as an argv list, starting with this Python) that runs
    `program` (what follows `python`: `[-m, module, args...]` or `[script.py, args...]`) on
    `launch.processes` ranks in total across `launch.num_machines` machines. accelerate sees the
    devices through CUDA_VISIBLE_DEVICES (`devices` is the caller's to put there); it takes no hostfile."""
    o, num_processes = launch, launch.processes
    if o.hostfile:
        raise ConfigError("--hostfile is for --launcher deepspeed (accelerate: --num-machines, --machine-rank, --main-process-ip)")
    if num_processes < 1:
        raise ConfigError(f"--num-processes must be at least 1, got {num_processes}")
    if o.num_machines < 1:
        raise ConfigError(f"--num-machines must be at least 1, got {o.num_machines}")
    if num_processes % o.num_machines:
        raise ConfigError(
            f"--num-processes ({num_processes}) is the total over all machines and must be divisible by --num-machines ({o.num_machines})"
        )
    if o.num_machines > 1 and not o.main_process_ip:
        raise ConfigError(f"--num-machines {o.num_machines} needs --main-process-ip (the address of the rank-0 machine)")
    preset = ["--config_file", str(ddp_config_file())]
    if o.zero is not None:
        preset = ["--use_deepspeed", "--deepspeed_config_file", str(deepspeed_config_file(o.zero))]
        if o.zero == 3:
            preset += ["--zero3_init_flag", "true"]  # each rank loads only its partition of the weights
    argv = [
        sys.executable, "-m", "accelerate.commands.launch", *preset,
        "--num_processes", str(num_processes),
        "--num_machines", str(o.num_machines),
        "--machine_rank", str(o.machine_rank),
        "--mixed_precision", mixed_precision,
    ]  # fmt: skip
    if o.main_process_ip:
        argv += ["--main_process_ip", o.main_process_ip]
    port = o.main_process_port
    if port is None:
        # One node: any free port (0 = accelerate picks one), so concurrent runs do not collide on
        # 29500. Several nodes must agree on a port: torch's default.
        port = 0 if o.num_machines == 1 else 29500
    argv += ["--main_process_port", str(port)]
    return argv + list(program)


def deepspeed_argv(
    program: list[str], launch: LaunchOptions, *, mixed_precision: str = "no", devices: list[str] | None = None
) -> list[str]:
    """The `deepspeed` launcher command (as an argv list, starting with this Python) that runs
    `program` on `launch.processes` ranks. One node: `--num_gpus` (or `--include localhost:IDS`
    when `devices` picks the GPUs); several: a DeepSpeed hostfile, from which the launcher starts
    every node itself (pdsh/ssh), `processes / num_machines` ranks on each (so `machine_rank` is
    not its to take). Each rank reads the mixed precision from what it runs (`use_deepspeed_preset`),
    not `mixed_precision`."""
    o, num_processes = launch, launch.processes
    if o.zero is None:
        raise ConfigError("--launcher deepspeed runs DeepSpeed: give --zero 1, 2 or 3 (plain data parallelism: --launcher accelerate)")
    deepspeed_config_file(o.zero)  # validates the stage
    if num_processes < 1:
        raise ConfigError(f"--num-processes must be at least 1, got {num_processes}")
    if num_processes % o.num_machines:
        raise ConfigError(
            f"--num-processes ({num_processes}) is the total over all machines and must be divisible by --num-machines ({o.num_machines})"
        )
    argv = [sys.executable, "-m", "deepspeed.launcher.runner"]
    per_node = num_processes // o.num_machines
    if o.num_machines > 1:
        if not o.hostfile:
            raise ConfigError("--launcher deepspeed on several machines needs --hostfile (one `host slots=N` line per machine)")
        argv += ["--hostfile", str(o.hostfile), "--num_nodes", str(o.num_machines), "--num_gpus", str(per_node)]
        if o.main_process_ip:
            argv += ["--master_addr", o.main_process_ip]
    elif devices is not None:
        if len(devices) < per_node:
            raise ConfigError(f"--num-processes {per_node} needs {per_node} GPUs for training, only {len(devices)} are left")
        argv += ["--include", "localhost:" + ",".join(devices[:per_node])]
    else:
        if o.hostfile:
            argv += ["--hostfile", str(o.hostfile)]
        argv += ["--num_gpus", str(per_node)]
    port = o.main_process_port if o.main_process_port is not None else (29500 if o.num_machines > 1 else free_port())
    argv += ["--master_port", str(port)]
    return argv + (["--module", *program[1:]] if program[:1] == ["-m"] else list(program))


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


LAUNCHERS = {"accelerate": accelerate_argv, "deepspeed": deepspeed_argv}


def launcher_argv(program: list[str], launch: LaunchOptions, *, mixed_precision: str = "no", devices: list[str] | None = None) -> list[str]:
    """The command that starts `program` on every rank with `launch.launcher` (a name of LAUNCHERS);
    `mixed_precision`: the config's precision; `devices`: the GPUs to name (a --vllm-gpus split)."""
    return LAUNCHERS[launch.launcher](program, launch, mixed_precision=mixed_precision, devices=devices)


def deepspeed_active(env: dict[str, str] | None = None) -> bool:
    """This process is a rank of a DeepSpeed job (`accelerate launch` with a DeepSpeed config, or
    the `deepspeed` launcher's ranks, which export the same variable: `use_deepspeed_preset`)."""
    env = os.environ if env is None else env  # type: ignore[assignment]
    return env.get("ACCELERATE_USE_DEEPSPEED", "").lower() == "true"


def launch(argv: list[str], env: dict[str, str], tick: Any = None) -> int:
    """Run a launcher command and return its exit code; every process it starts is stopped with it
    (olmocr_rl/launch/supervise.py); `tick()` every half second while it runs. Raises Interrupted
    on SIGINT, SIGTERM or SIGHUP."""
    from olmocr_rl.launch.supervise import supervise

    Path(env["TORCH_EXTENSIONS_DIR"]).mkdir(parents=True, exist_ok=True)
    return supervise(argv, env, tick=tick)


def shutdown_process_group() -> None:
    """Barrier, then destroy the default process group, if one exists (call on success only)."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()
