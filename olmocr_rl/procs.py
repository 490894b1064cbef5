"""Every process a command starts dies with it.

A command that starts processes (the vLLM server, `accelerate launch` and its ranks, DataLoader and
engine workers below them) owns all of them:

* **Signals.** SIGINT, SIGTERM and SIGHUP (a dropped ssh session) end the command the same way:
  `Interrupted` is raised in the main thread, and the caller tears everything down. It is a
  BaseException, as KeyboardInterrupt is, so a library's `except Exception` where the signal
  lands does not take it for its own error; and the signal is remembered (`interrupted()`), so a
  loop that must not miss it (training: a callback at each step's end) asks again.
* **Orphans come home.** The command makes itself a child subreaper (Linux `PR_SET_CHILD_SUBREAPER`):
  a process whose parent exits is re-parented to the command instead of init, so the teardown
  finds every descendant, including the ranks torchrun starts in sessions of their own (a process
  group signal never reaches them) and their DataLoader workers.
* **Teardown.** `ProcessTree.stop`: SIGTERM (or the signal given) to each child's process group,
  then to every other descendant, SIGKILL to whatever is left after the grace period.
* **kill -9 of the command** cannot be caught: each child is started with a parent-death signal
  (`PR_SET_PDEATHSIG` = SIGTERM), so the launcher and the server are told to stop and stop their
  own workers (torchrun terminates its ranks on SIGTERM; vLLM its engine cores).

Written by hand: the standard library has these pieces but not their combination, and psutil
(which has `children(recursive=True)` but neither prctl call) would be a dependency for 60 lines.
Outside Linux the prctl calls are skipped and the teardown walks `ps` instead of /proc.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Interrupted(BaseException):
    """SIGINT, SIGTERM or SIGHUP reached the command (a BaseException: see the module docstring)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _load_prctl() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


# Looked up once here: the parent-death call runs in the forked child, where loading a library
# could wait on a lock another thread of the parent held at fork time.
_PRCTL = _load_prctl()


def _prctl(option: int, value: int) -> bool:
    return _PRCTL is not None and _PRCTL(option, value, 0, 0, 0) == 0


def become_subreaper() -> bool:
    """Orphaned descendants of this process are re-parented to it (see the module docstring)."""
    return _prctl(PR_SET_CHILD_SUBREAPER, 1)


def _die_with_parent() -> None:  # runs in the child between fork and exec
    _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def pool_worker_dies_with(parent: int) -> None:
    """A process pool's initializer (`initializer=pool_worker_dies_with, initargs=(os.getpid(),)`):
    the worker is killed when the process that started it dies, kill -9 included. Without it a
    killed command's pool workers wait on their task queue forever (each holds the queue's write
    end, so it never closes), and so does multiprocessing's resource tracker. A parent that died
    before this ran is caught by the parent pid check."""
    if _prctl(PR_SET_PDEATHSIG, signal.SIGKILL) and os.getppid() != parent:
        os._exit(1)


def dies_with_parent(sig: int = signal.SIGTERM) -> None:
    """This process gets `sig` when its parent dies (a page job's worker and its launcher,
    olmocr_rl/launch/worker.py); a parent already gone (re-parented to init or a subreaper): exit now."""
    parent = os.getppid()
    if _prctl(PR_SET_PDEATHSIG, sig) and os.getppid() != parent:
        os._exit(1)


def spawn(argv: Sequence[str], env: dict[str, str] | None = None, **kwargs: Any) -> subprocess.Popen:
    """A child in its own session (so its group can be signalled as one) that is sent SIGTERM
    when this process dies, however it dies."""
    return subprocess.Popen(list(argv), env=env, start_new_session=True, preexec_fn=_die_with_parent, **kwargs)


def _parents() -> dict[int, int]:
    """pid -> parent pid of every process (live or zombie) on the machine."""
    out: dict[int, int] = {}
    if os.path.isdir("/proc"):
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open(f"/proc/{entry}/stat", "rb") as f:
                        fields = f.read().rsplit(b")", 1)[1].split()
                except OSError:
                    continue
                out[int(entry)] = int(fields[1])
        return out
    ps = subprocess.run(["ps", "-A", "-o", "pid=,ppid="], capture_output=True, text=True)
    for line in ps.stdout.splitlines():
        pid, ppid = line.split()
        out[int(pid)] = int(ppid)
    return out


def descendants(pid: int | None = None) -> list[int]:
    """Every living descendant of `pid` (default: this process), children first."""
    root = os.getpid() if pid is None else pid
    children: dict[int, list[int]] = {}
    for child, parent in _parents().items():
        children.setdefault(parent, []).append(child)
    out, todo = [], list(children.get(root, []))
    while todo:
        p = todo.pop(0)
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def _signal(pids: Sequence[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


class ProcessTree:
    """The processes a command starts, and their descendants: `spawn` them, `stop` them all.
    Processes that were already children of this one when the tree was made are left alone
    (a test process may hold others)."""

    def __init__(self) -> None:
        become_subreaper()
        self.before = set(descendants())
        self.procs: list[subprocess.Popen] = []

    def spawn(self, argv: Sequence[str], env: dict[str, str] | None = None, **kwargs: Any) -> subprocess.Popen:
        proc = spawn(argv, env, **kwargs)
        self.procs.append(proc)
        return proc

    def alive(self) -> list[int]:
        """Descendants started since the tree was made (re-parented orphans included), not yet reaped."""
        managed = {p.pid for p in self.procs}
        for pid in descendants():  # collect exited orphans; Popen collects its own
            if pid not in managed and pid not in self.before:
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, os.WNOHANG)
        for proc in self.procs:
            proc.poll()
        return [pid for pid in descendants() if pid not in self.before and _running(pid)]

    def stop(self, first: int = signal.SIGTERM, grace: float = 30.0) -> None:
        """`first` to each spawned process group and to every other descendant started since,
        SIGKILL to whatever is left after `grace` seconds; everything reaped."""
        for proc in self.procs:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, first)
        _signal(self.alive(), first)
        deadline = time.monotonic() + grace
        while self.alive() and time.monotonic() < deadline:
            time.sleep(0.1)
        for proc in self.procs:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
        _signal(self.alive(), signal.SIGKILL)
        end = time.monotonic() + 10
        while self.alive() and time.monotonic() < end:
            time.sleep(0.05)


def _running(pid: int) -> bool:
    """Alive and not a zombie (Linux: the state in /proc; elsewhere: signal 0 reaches it)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        if os.path.isdir("/proc"):
            return False
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


_received: list[int] = []  # the stop signals that reached the innermost `interrupts()` block


@contextlib.contextmanager
def interrupts() -> Iterator[None]:
    """Within the block, SIGINT, SIGTERM and SIGHUP raise `Interrupted` (main thread only), and
    `interrupted()` says which came."""

    def on_signal(signum: int, frame: Any) -> None:
        _received.append(signum)
        raise Interrupted(signum)

    saved = list(_received)
    _received.clear()
    previous = {s: signal.signal(s, on_signal) for s in STOP_SIGNALS}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        _received[:] = saved


def interrupted() -> int | None:
    """The first stop signal that reached the `interrupts()` block running now, or None."""
    return _received[0] if _received else None


class SigtermAsInterrupt:
    """SIGTERM ends the command as Ctrl-C does (`error: interrupted`, status 130) instead of Python's
    instant death, which leaves vLLM's engine processes running: the interpreter then shuts down
    in order and vLLM stops them. While the engine generates, the signal interrupts it at once (a
    KeyboardInterrupt, as Ctrl-C); elsewhere (vLLM's start-up, which can hang when an exception is
    raised inside it; a page being written) it is remembered and the run stops before its next
    pages."""

    def __init__(self) -> None:
        self.came = threading.Event()
        self.generating = False
        self.previous: Any = None

    def install(self) -> None:
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGTERM, self._handle)

    def restore(self) -> None:
        if self.previous is not None:
            signal.signal(signal.SIGTERM, self.previous)
            self.previous = None

    def _handle(self, signum: int, frame: Any) -> None:
        self.came.set()
        if self.generating:
            raise KeyboardInterrupt

    def interruptible(self, generate: Callable[..., list[str]]) -> Callable[..., list[str]]:
        def run(*args: Any) -> list[str]:
            if self.came.is_set():
                raise KeyboardInterrupt
            self.generating = True
            try:
                return generate(*args)
            finally:
                self.generating = False

        return run


def stdout_gone() -> None:
    """stdout's reader went away (`| head -1`): points stdout at the null device, as the Python docs
    advise (signal module, "Note on SIGPIPE"), so that nothing written later, nor the flush at exit,
    fails again. Nothing to do when stdout is no file (a test captures it)."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)
