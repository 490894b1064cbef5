"""A vLLM server process (`vllm serve`, or what replaces it) run beside a command's other processes:
started into the command's process tree with its output in a log file, waited for on its /health
endpoint (the process dying or the timeout ends the wait, with the log's last lines), stopped with
the tree. Which command it runs is the caller's (training's: olmocr_rl/train/vllm_server.py);
olmocr_rl/launch/supervise.py runs it with the launcher and watches both.
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
from pathlib import Path
from typing import Any

from olmocr_rl.errors import UserError
from olmocr_rl.launch.gpus import GpuSplit
from olmocr_rl.procs import ProcessTree

STOP_GRACE_S = 30.0  # SIGTERM -> SIGKILL
LOG_TAIL_LINES = 40


class ServerError(UserError, RuntimeError):
    """The generation server did not start, or stopped during training (message ends with its log tail)."""


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
