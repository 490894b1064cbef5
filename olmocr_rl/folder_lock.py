"""One command at a time per output folder.

`prepare OUT_DIR`, `generate` (its candidate folder) and `train` (its output folder) hold an
exclusive lock on a file in the folder they write, `.olmocr-rl.lock`, for as long as they run. A
second command on the same folder fails at once, naming the process that holds it, instead of
both writing: two `prepare`s into one OUT_DIR lost pages (the first to finish deleted the other's
`.tmp/`) and both exited 0.

The lock is `flock(2)` on an open file: the kernel drops it when the holder exits, however it
exits (kill -9 included), so a stale lock cannot block the next run; the file itself stays (it
only names the last holder). Its descriptor is not inherited by the processes a command starts.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from olmocr_rl.errors import UserError

LOCK_NAME = ".olmocr-rl.lock"


class FolderBusy(UserError):
    """Another command is writing the folder."""


@contextlib.contextmanager
def folder_lock(folder: str | os.PathLike[str], command: str, *, name: str = LOCK_NAME, busy: str | None = None) -> Iterator[Path]:
    """Holds `folder`'s lock (creating the folder) for the block; FolderBusy if another process
    holds it. `command` names this one to a second run; `name`: another lock file of the folder
    (launch/pages.py's per-machine locks); `busy`: the refusal, instead of naming the holder."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise FolderBusy(busy or f"{folder} is in use by {_holder(fd)}: wait for it to finish, or stop it first") from None
        name = f"pid {os.getpid()} (olmocr-rl {command})\n".encode()
        os.pwrite(fd, name, 0)  # then cut: the file is never empty while a holder names itself
        os.ftruncate(fd, len(name))
        yield folder
    finally:
        os.close(fd)


def _holder(fd: int) -> str:
    """The holder's name from the lock file. A holder that has just taken the lock may not have
    written it yet (the file is created empty): asked again for up to half a second."""
    import time

    deadline = time.monotonic() + 0.5
    while not (holder := os.pread(fd, 200, 0).decode("utf-8", "replace").strip()) and time.monotonic() < deadline:
        time.sleep(0.01)
    return holder or "another process"
