"""`olmocr-rl train --vllm-gpus K`: a vLLM generation server on the last K GPUs of this node, the
training ranks on the others, and nothing left running afterwards.

The server command is the one the installed trl builds (`trl.scripts.vllm_serve.build_command`:
stock `vllm serve` plus the weight-transfer, logprobs and scale-out flags trl's client needs, with
`VLLM_SERVER_DEV_MODE=1`), so it follows trl as trl follows vLLM (huggingface/trl#6765). Its output
goes to OUTPUT_DIR/logs/vllm.log. `olmocr_rl.train.supervise` waits for its /health endpoint (the
process dying or the timeout ends the wait, with the log's last lines), then runs the training
launcher with `vllm_mode=server` and the server's address in the resolved config, and watches
both: a server that dies mid-run stops the training, and every process is stopped when training
ends, fails or is interrupted (olmocr_rl/procs.py).

Several nodes: the server runs on machine rank 0 and listens on every interface; every node's
config names the rank-0 address (--main-process-ip), which is where trl's client (global rank 0,
on machine 0) and its NCCL weight-update group connect. Each node trains on its first N - K GPUs.
"""

from __future__ import annotations

import os
import shlex
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from olmocr_rl.errors import UserError
from olmocr_rl.procs import ProcessTree
from olmocr_rl.train.config import ConfigError, TrainConfig, max_model_length

STOP_GRACE_S = 30.0  # SIGTERM -> SIGKILL
LOG_TAIL_LINES = 40


class ServerError(UserError, RuntimeError):
    """The generation server did not start, or stopped during training (message ends with its log tail)."""


@dataclass(frozen=True)
class GpuSplit:
    train: tuple[str, ...]  # CUDA device ids of the training ranks (first N - K)
    server: tuple[str, ...]  # of the vLLM server (last K)
    tensor_parallel: int
    data_parallel: int

    def describe(self) -> str:
        return (f"GPUs: training on {','.join(self.train)} ({len(self.train)} ranks per node); vLLM server on "
                f"{','.join(self.server)} (tensor parallel {self.tensor_parallel} x data parallel {self.data_parallel})")  # fmt: skip


def visible_gpus(env: dict[str, str] | None = None) -> list[str]:
    """This node's GPUs: CUDA_VISIBLE_DEVICES when set, else torch's device count."""
    env = os.environ if env is None else env
    visible = env.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return [d.strip() for d in visible.split(",") if d.strip() and d.strip() != "-1"]
    import torch

    return [str(i) for i in range(torch.cuda.device_count())]


def split_gpus(gpus: list[str], vllm_gpus: int, data_parallel: int = 1) -> GpuSplit:
    """The last `vllm_gpus` GPUs serve (tensor parallel = vllm_gpus / data_parallel), the rest train."""
    if vllm_gpus < 1:
        raise ConfigError(f"--vllm-gpus must be at least 1, got {vllm_gpus}")
    if vllm_gpus >= len(gpus):
        raise ConfigError(
            f"--vllm-gpus {vllm_gpus} leaves no GPU for training: this node has {len(gpus)} "
            f"({'CUDA_VISIBLE_DEVICES=' + ','.join(gpus) if gpus else 'none visible'})"
        )
    if vllm_gpus % data_parallel:
        raise ConfigError(f"--vllm-gpus {vllm_gpus} is not a multiple of vllm_data_parallel_size={data_parallel}")
    split = len(gpus) - vllm_gpus
    return GpuSplit(tuple(gpus[:split]), tuple(gpus[split:]), vllm_gpus // data_parallel, data_parallel)


def server_argv(cfg: TrainConfig, split: GpuSplit, *, host: str, port: int, for_node: bool = False) -> list[str]:
    """The server command trl documents for the installed trl and vLLM (see the module docstring).
    `for_node`: the plan is for another machine (--gpus): where this one has no vLLM >= 0.30, trl
    leaves out `--enable-scale-out`, which the node's vLLM (trl's window reaches 0.31) needs for
    image requests; it is added as trl adds it there."""
    from trl.scripts.vllm_serve import ScriptArguments, build_command

    args = ScriptArguments(
        model=cfg.model, host=host, port=port, tensor_parallel_size=split.tensor_parallel,
        data_parallel_size=split.data_parallel, gpu_memory_utilization=cfg.vllm_server_gpu_memory_utilization,
        max_model_len=max_model_length(cfg), trust_remote_code=cfg.trust_remote_code,
        dtype="bfloat16" if cfg.bf16 else "auto", enforce_eager=cfg.vllm_enforce_eager or None,
    )  # fmt: skip
    argv = build_command(args, [*engine_args(cfg), *(str(a) for a in cfg.vllm_server_args)])
    if for_node and "--enable-scale-out" not in argv and "--weight-transfer-config" in argv:
        argv.insert(argv.index("--weight-transfer-config"), "--enable-scale-out")
    if cfg.vllm_server_command:
        argv = shlex.split(cfg.vllm_server_command) + argv[argv.index("serve") + 1 :]
    return argv


def engine_args(cfg: TrainConfig) -> list[str]:
    """`vllm serve` arguments that trl's command leaves out (olmocr_rl/engines.py): the run's seed,
    and the trainer's processor bounds. Placeholder suppression travels with each request."""
    import json

    from olmocr_rl.engines import pixel_bounds

    args = ["--seed", str(cfg.seed)]
    if bounds := pixel_bounds(cfg.max_pixels, cfg.model):
        args += ["--mm-processor-kwargs", json.dumps(bounds)]
    return args


def server_env(split: GpuSplit, base: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    env["CUDA_VISIBLE_DEVICES"] = ",".join(split.server)
    env["VLLM_SERVER_DEV_MODE"] = "1"  # trl's weight-transfer and cache endpoints live behind it
    return env


def port_free(port: int, host: str = "0.0.0.0") -> bool:
    """Nothing listens on `port`: a server could bind it now (SO_REUSEADDR, as uvicorn binds, so
    the TIME_WAIT connections a stopped server leaves behind do not count)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def weight_sync_port(cfg: TrainConfig) -> int:
    """The port of trl's weight-sync group between the trainer and the server (GRPOConfig's
    vllm_group_port, 51216 unless set under `trl:`)."""
    return int(cfg.trl.get("vllm_group_port", 51216))


def port_problems(cfg: TrainConfig) -> list:
    """The server's port and trl's weight-sync port must be free on this node: two runs on one node
    would otherwise meet on trl's fixed 51216 only when the first weights are pushed."""
    from olmocr_rl.train.preflight import Problem

    out = []
    for port, key, what in ((cfg.vllm_server_port, "vllm_server_port", "the vLLM server"),
                            (weight_sync_port(cfg), "trl.vllm_group_port", "trl's weight sync")):  # fmt: skip
        if not port_free(port):
            out.append(Problem(key, f"port {port} for {what} is in use on this node (another run?)", f"set {key} to a free port"))
    return out


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return "".join(deque(f, maxlen=lines)).rstrip()
    except OSError:
        return "(no log)"


def healthy(url: str, timeout: float = 2.0) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=timeout) as r:
            return r.status == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


class VLLMServer:
    """One server process (group); a context manager that always stops it."""

    def __init__(self, argv: list[str], env: dict[str, str], log_path: Path, url: str, *, grace: float = STOP_GRACE_S) -> None:
        self.argv, self.env, self.log_path, self.url, self.grace = argv, env, Path(log_path), url, grace
        self.proc: subprocess.Popen | None = None
        self.tree: ProcessTree | None = None

    def start(self, tree: ProcessTree | None = None) -> "VLLMServer":
        """Starts the server in `tree` (the command's processes; default: a tree of its own)."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.tree = tree if tree is not None else ProcessTree()
        with open(self.log_path, "ab") as log:
            log.write(f"$ {shlex.join(self.argv)}\n".encode())
            log.flush()
            self.proc = self.tree.spawn(self.argv, self.env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        return self

    def failure(self, what: str) -> ServerError:
        return ServerError(f"{what}; last lines of {self.log_path}:\n{log_tail(self.log_path)}")

    def wait_healthy(self, timeout: float, poll: float = 1.0) -> float:
        """Seconds until /health answered 200; ServerError if the process exits or time runs out."""
        assert self.proc is not None
        start = time.monotonic()
        while True:
            code = self.proc.poll()
            if code is not None:
                raise self.failure(f"the vLLM server exited with status {code} before it was ready")
            if healthy(self.url):
                return time.monotonic() - start
            if time.monotonic() - start > timeout:
                raise self.failure(f"the vLLM server at {self.url} was not healthy after {timeout:g} s (vllm_server_timeout)")
            time.sleep(poll)

    def stop(self) -> int | None:
        """Stops the server's tree (SIGTERM, then SIGKILL after `grace`); its exit status."""
        if self.proc is None or self.tree is None:
            return None
        self.tree.stop(grace=self.grace)
        return self.proc.returncode

    def __enter__(self) -> "VLLMServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def client_host(num_machines: int, main_process_ip: str | None) -> str:
    """Where the trainer reaches the server: this node, or the rank-0 node's address."""
    return main_process_ip if num_machines > 1 and main_process_ip else "127.0.0.1"
