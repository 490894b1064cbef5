"""Running the processes a command starts, and nothing left behind: a launcher (`accelerate launch`
or `deepspeed`, and the ranks it starts: `olmocr-rl train`'s; the workers of `generate` and
`curate`, olmocr_rl/launch/pages.py), with a vLLM server before it when
there is one (`train --vllm-gpus`). SIGINT, SIGTERM and SIGHUP stop them all; so does the end of training, a failure, or a
server that dies mid-run (olmocr_rl/procs.py says how every descendant is found, the ranks torchrun
puts in sessions of their own included).
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable

from olmocr_rl.launch.server import STOP_GRACE_S, ServerError, VLLMServer
from olmocr_rl.procs import Interrupted, ProcessTree, interrupts


def supervise(
    train_argv: list[str],
    train_env: dict[str, str],
    *,
    server: VLLMServer | None = None,
    timeout: float = 900.0,
    grace: float = STOP_GRACE_S,
    poll: float = 0.5,
    echo: Callable[[str], None] = print,
    tick: Callable[[], None] | None = None,
) -> int:
    """Start `server` (if any) and wait until it is healthy (`timeout` seconds at most), run the
    training command, and stop every process on the way out (SIGTERM, SIGKILL after `grace`).
    `tick()` is called every `poll` seconds while it runs (a progress line). Returns the training
    exit code; raises ServerError when the server fails (before or during training) and Interrupted
    on SIGINT, SIGTERM or SIGHUP."""
    tree = ProcessTree()
    first = signal.SIGTERM
    try:
        with interrupts():
            if server is not None:
                server.start(tree)
                echo(f"vLLM server starting (log: {server.log_path}) ...")
                waited = server.wait_healthy(timeout)
                echo(f"vLLM server healthy at {server.url} after {waited:.0f} s")
            trainer = tree.spawn(train_argv, train_env)
            while True:
                code = trainer.poll()
                if code is not None:
                    return code
                if server is not None and server.proc is not None and server.proc.poll() is not None:
                    raise server.failure(
                        f"the vLLM server exited with status {server.proc.returncode} during training; training was stopped"
                    )
                if tick is not None:
                    tick()
                time.sleep(poll)
    except Interrupted as e:
        first = signal.SIGINT if e.signum == signal.SIGINT else signal.SIGTERM
        raise
    finally:
        # A second signal must not cut the teardown short.
        previous = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
        try:
            tree.stop(first, grace)
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)


__all__ = ["Interrupted", "ServerError", "supervise"]
