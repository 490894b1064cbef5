"""Names and paths that come from outside (a folder's listing, a field of a data file), made safe
to show and to follow:

* `shown(path)`: the path as text that can always be printed or written as JSON; bytes that are
  not UTF-8 (a Latin-1 `caf\\xe9.pdf`, which Python holds as a lone surrogate) are written `\\xe9`;
* `is_utf8(path)` / `require_utf8(path, what)`: whether the name is UTF-8 text; the second raises
  `NameNotUtf8`, naming the file, for a command that cannot go on without it;
* `inside(root, rel)`: `rel` (a path read from a data file) resolved within `root`, or None when it
  leads elsewhere (`../../secret`, an absolute path, a link out of the folder).

And the names of a bench page's files, olmOCR-bench's layout, in one place for every command that
writes or looks for them (`synth` both modes, `prepare`, `bench`, `generate`, training's outputs and,
through `prepare`, the rewards that compare with a reference). For a PDF `pdfs/<key>` (`key` its
path under pdfs/, ending .pdf):

* `candidate_file(key, N, M)`: `<key without .pdf>_pg<N>_repeat<M>.md`, a system's output for page N,
  repeat M, in its candidate folder (`PAGE_FILE` matches one; bench finds a page's files by
  `page_marker(N)` in the name, as the reference's regex `_pg{N}_`);
* `reference_file(key, N)`: `claude_original/<key's folder>/<name>_page<P>_pg1_repeat1.md`, the page's
  reference output where olmOCR's GRPO trainer looks for it (`name` and `P` from a `_page<P>` in the
  PDF's name, else the name and N: upstream's parse), or None where that parse fails;
* `synthetic_key(id, N)`: `<id>_page<N>`, how olmOCR's synthetic pipeline names page N of document
  `id` (mine_html_templates.py: `f"{pdf_id}_page{page_num}.pdf"`), so that its reference file is
  the one the trainer looks for: `reference_file(f"{folder}/{id}_page{N}.pdf", 1)` is
  `claude_original/<folder>/<id>_page<N>_pg1_repeat1.md`, which is also
  `candidate_file(f"{folder}/{id}_page{N}.pdf", 1, 1)` in the `claude_original` candidate folder.
"""

from __future__ import annotations

import os
import re
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


# --- a bench page's files (see the module docstring) ------------------------------------------------

REFERENCE_DIR = "claude_original"
# A page file's path relative to its candidate folder. The suffix is anchored, so the base is unique
# and matching it equals the reference's per-PDF `^{re.escape(base)}_pg\d+_repeat\d+\.md$`.
PAGE_FILE = re.compile(r"^(.*)_pg\d+_repeat\d+\.md$", re.DOTALL)


def page_stem(key: str) -> str:
    """A PDF's key without its extension: the base of its page files."""
    return os.path.splitext(key)[0]


def candidate_file(key: str, page: int | str, repeat: int) -> str:
    """`<key without .pdf>_pg<page>_repeat<repeat>.md`: what bench reads for that page and repeat."""
    return f"{page_stem(key)}_pg{page}_repeat{repeat}.md"


def page_marker(page: int | str) -> str:
    """What a page file's name holds for page `page` (the reference searches it as a regex; a page
    is digits, so the plain text is the same search)."""
    return f"_pg{page}_"


def synthetic_key(doc_id: str, page: int) -> str:
    """Upstream's name of page `page` of a synthetic document (its PDF is `<key>.pdf`)."""
    return f"{doc_id}_page{page}"


def reference_file(key: str, page: int) -> str | None:
    """The page's reference output, relative to the bench folder, where olmOCR's GRPO trainer looks
    for it; None where upstream's parse of the name fails."""
    base = Path(key).name.replace(".pdf", "")  # as upstream: every ".pdf", and split on "_page"
    parts = base.split("_page")
    name, number = parts[0], page
    if len(parts) > 1 and parts[1].isdigit():
        try:
            number = int(parts[1])
        except ValueError:  # digits int() does not read (superscripts): upstream would fail here
            return None
    return (Path(REFERENCE_DIR) / Path(key).parent / f"{name}_page{number}_pg1_repeat1.md").as_posix()
