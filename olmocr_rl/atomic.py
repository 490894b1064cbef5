"""Every file a command writes goes through here.

* `atomic_write(path)`: a file object on a temporary file in the target's folder, renamed over
  the target when the block ends without error (removed when it fails): a killed or failed run
  leaves the previous file whole, and two runs writing the same file never mix their lines (the
  last one to finish wins). `write_text` / `write_bytes` for a whole file at once;
  `atomic_path` for a writer that takes a file name; `staged_folder` does the same for a folder
  (a report's assets).
* `check_output(path, option)`: before any work, refuses a target that is a folder, or whose
  folder does not exist or cannot be written, naming the option and the path.
* `refuse_inputs(outputs, inputs)`: refuses a target that is one of the run's inputs (a test
  file, a PDF, a page file), naming both.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from olmocr_rl.errors import UserError
from olmocr_rl.paths import shown


class OutputError(UserError, ValueError):
    """An output path the command will not write (names the option and the path)."""


def _mode(bits: int) -> int:
    """`bits` less the process umask (mkstemp/mkdtemp create private files; ours are not)."""
    mask = os.umask(0)
    os.umask(mask)
    return bits & ~mask


@contextlib.contextmanager
def atomic_write(
    path: str | os.PathLike[str], mode: str = "w", *, durable: bool = False, tmp_dir: str | os.PathLike[str] | None = None
) -> Iterator[IO[Any]]:
    """A file open for writing (`mode` "w": UTF-8 text, "wb": bytes) that becomes `path` when the
    block ends without error. `durable`: fsync before the rename. `tmp_dir`: where the temporary
    file lives (on the same file system; default: `path`'s folder)."""
    with atomic_path(path, tmp_dir=tmp_dir) as tmp, open(tmp, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as f:
        yield f
        if durable:
            f.flush()
            os.fsync(f.fileno())


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str], *, tmp_dir: str | os.PathLike[str] | None = None) -> Iterator[Path]:
    """The path of a temporary file that becomes `path` when the block ends without error (renamed
    over it), removed when it fails: for a writer that takes a file name (safetensors' `save_file`,
    `shutil.copyfile`), and under `atomic_write`. `tmp_dir`: where it lives (default: `path`'s folder)."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=tmp_dir or path.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, _mode(0o666))
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_text(path: str | os.PathLike[str], text: str, *, durable: bool = False) -> None:
    with atomic_write(path, "w", durable=durable) as f:
        f.write(text)


def write_bytes(path: str | os.PathLike[str], data: bytes, *, durable: bool = False) -> None:
    with atomic_write(path, "wb", durable=durable) as f:
        f.write(data)


@contextlib.contextmanager
def staged_folder(final: Path) -> Iterator[Path]:
    """A temporary folder beside `final`, filled by the caller; on success it replaces `final`
    (the old one removed only once the new one is in place); on failure it is removed."""
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent))
    os.chmod(tmp, _mode(0o777))
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    old = None
    if final.exists() or final.is_symlink():
        if not final.is_dir() or final.is_symlink():
            shutil.rmtree(tmp, ignore_errors=True)
            raise FileExistsError(f"{final} exists and is not a folder: remove it or choose another report name")
        old = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".old", dir=final.parent))
        os.rename(final, old / "x")
    os.rename(tmp, final)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def check_output(path: str | os.PathLike[str], option: str, *, make_folders: bool = False) -> Path:
    """`path` if a file can be written there: it is not a folder, and its folder exists and is
    writable (`make_folders`: or can be made, in a writable folder); else OutputError naming
    `option` and the path."""
    p = Path(path)
    where = f"{option} {shown(p)}" if option else shown(p)
    if p.is_dir():
        raise OutputError(f"{where}: is a folder (give a file name)")
    parent = p.parent
    if make_folders:
        while not parent.exists() and parent != parent.parent:
            parent = parent.parent
    if not parent.is_dir():
        raise OutputError(f"{where}: no folder {shown(parent)}" + (" (it is a file)" if parent.exists() else ""))
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputError(f"{where}: cannot write in the folder {shown(parent)}")
    return p


def refuse_inputs(outputs: Mapping[str, str | os.PathLike[str] | None], inputs: Iterable[str | os.PathLike[str]]) -> None:
    """OutputError when an existing output (option -> path) is one of `inputs` (the same file, by
    device and inode: links and other spellings of the path included)."""
    targets = {}
    for option, p in outputs.items():
        if p is not None:
            with contextlib.suppress(OSError):
                st = os.stat(p)
                targets[(st.st_dev, st.st_ino)] = (option, p)
    if not targets:
        return
    for f in inputs:
        try:
            st = os.stat(f)
        except OSError:
            continue
        hit = targets.get((st.st_dev, st.st_ino))
        if hit:
            option, p = hit
            raise OutputError(f"{option} {shown(p)}: is {shown(f)}, an input of this run; choose another path")
