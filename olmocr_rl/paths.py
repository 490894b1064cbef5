"""Names and paths that come from outside (a folder's listing, a field of a data file), made safe
to show and to follow:

* `shown(path)`: the path as text that can always be printed or written as JSON; bytes that are
  not UTF-8 (a Latin-1 `caf\\xe9.pdf`, which Python holds as a lone surrogate) are written `\\xe9`;
* `is_utf8(path)` / `require_utf8(path, what)`: whether the name is UTF-8 text; the second raises
  `NameNotUtf8`, naming the file, for a command that cannot go on without it;
* `inside(root, rel)`: `rel` (a path read from a data file) resolved within `root`, or None when it
  leads elsewhere (`../../secret`, an absolute path, a link out of the folder).
"""

from __future__ import annotations

import os
from pathlib import Path

from olmocr_rl.errors import UserError


class NameNotUtf8(UserError, ValueError):
    """A file or folder name that is not UTF-8: named (its odd bytes as \\xNN), never used."""


def shown(path: str | os.PathLike[str]) -> str:
    """`path` as printable UTF-8 text: undecodable bytes (surrogate escapes) as `\\xNN`, any other
    lone surrogate as `\\udNNN`."""
    text = os.fspath(path)
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def is_utf8(path: str | os.PathLike[str]) -> bool:
    try:
        os.fspath(path).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def require_utf8(path: str | os.PathLike[str], what: str = "file") -> None:
    """Raises NameNotUtf8 unless `path` is UTF-8 text."""
    if not is_utf8(path):
        raise NameNotUtf8(f"{shown(path)}: the {what}'s name is not UTF-8 text; rename it")


def inside(root: str | os.PathLike[str], rel: object) -> Path | None:
    """`root / rel` with links and `..` resolved, when `rel` is a relative path (a string) that
    stays within `root`; else None."""
    if not isinstance(rel, str) or not rel or "\0" in rel or os.path.isabs(rel):
        return None
    base = Path(root).resolve()
    target = (base / rel).resolve()
    return target if target == base or base in target.parents else None


def for_rich(text: object) -> str:
    """`text` (a name, id or message from outside) to put in rich markup: printable
    (`shown`) and with rich's markup escaped, so a folder named `[bold red]x` prints as named."""
    from rich.markup import escape

    return escape(shown(str(text)))
