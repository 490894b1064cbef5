"""Reading a JSONL file of test records, the one way every command does (`BenchSuite.load`,
`prepare`, `bench`, `validate`): its lines split as Python's text mode splits them (universal
newlines: `\\r\\n`, `\\r` and `\\n`, as the reference's `open()` reads them and as the Rust core numbers
them), each line decoded as UTF-8 on its own, so that one undecodable line is reported by its
file:line and the others still load (the reference cannot read such a file at all). A byte-order
mark is left in place: the core refuses that line with its own message, as the reference's
json.loads does. The lines split here are the lines every reader sees: a raw U+2028, U+2029 or
U+0085 inside a JSON string is no line end (`str.splitlines()` would cut there).

`json_line` writes one line of the JSONL files the commands write (`bench --details`, `probe
--details`), those three characters escaped so that any reader finds one record per line.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from olmocr_rl.paths import require_utf8

_NEWLINE = re.compile(r"\r\n|\r|\n")


def split_lines(text: str) -> list[str]:
    """`text`'s lines as Python's text mode (and the Rust core) split them."""
    return _NEWLINE.split(text)


@dataclass
class JsonlText:
    path: Path
    lines: list[str]  # every line, an undecodable one blanked (so the others keep their numbers)
    errors: list[tuple[int, str]] = field(default_factory=list)  # (1-based line, what is wrong)
    decoded: str | None = None  # the whole file's text, when every line decoded

    @property
    def text(self) -> str:
        """The text to parse: the file's own (its line ends kept) or, with undecodable lines
        blanked, the lines joined."""
        return self.decoded if self.decoded is not None else "\n".join(self.lines)

    def messages(self) -> list[str]:
        return [f"{self.path}:{n}: {why}" for n, why in self.errors]


def read_jsonl(path: str | os.PathLike[str]) -> JsonlText:
    """The file's lines and its undecodable lines; OSError when it cannot be read at all,
    NameNotUtf8 when its name is not UTF-8 (no message or source name could hold it)."""
    p = Path(path)
    require_utf8(p)
    data = p.read_bytes()
    try:
        text = data.decode("utf-8")
        return JsonlText(p, split_lines(text), decoded=text)
    except UnicodeDecodeError:
        pass
    lines = _NEWLINE.split(data.decode("utf-8", errors="surrogateescape"))
    errors = []
    for n, line in enumerate(lines, 1):
        bad = next((i for i, ch in enumerate(line) if "\udc80" <= ch <= "\udcff"), None)
        if bad is not None:
            errors.append((n, f"not UTF-8 text (byte 0x{ord(line[bad]) - 0xDC00:02x} at character {bad + 1})"))
            lines[n - 1] = ""
    return JsonlText(p, lines, errors)


# JSON allows these raw inside strings, and Python's `str.splitlines()` (and other readers) take
# them for line ends: written escaped, a line stays one line for every reader.
_LINE_ENDS_IN_STRINGS = str.maketrans({"\u2028": "\\u2028", "\u2029": "\\u2029", "\x85": "\\u0085"})


def json_line(value: object) -> str:
    """`value` as one JSONL line (with its "\\n"): UTF-8 text kept as is, except U+2028, U+2029 and
    U+0085, escaped (JSON strings may hold them raw, but `str.splitlines()` splits on them)."""
    import json

    return json.dumps(value, ensure_ascii=False).translate(_LINE_ENDS_IN_STRINGS) + "\n"
