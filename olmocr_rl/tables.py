"""Tables that read the same on a terminal, in a pipe and in a log file, one style for every
command (bench, compare, probe, prepare, synth; rich, imported by the callers' command bodies only).

* No box: a rule under the header and two spaces between columns, so narrow terminals keep room
  for the figures; a row's label names what it is in words (styles vanish in a pipe).
* Three kinds of column: names (files, candidates, test types, labels) and figures are never split
  or cut (`headers_footers.jsonl` stays one word); text (a reason, a value in words) wraps at spaces.
* `show` prints a table at the console's width when it fits there. When it does not, it prints
  each row as a short block instead, the name on its line and `header value` pairs wrapped at
  spaces below it: at 60 columns a comparison is still read row by row, and no cell is wrapped
  letter by letter or cut ("headers_f…", "0.2…"). A console that is not a terminal is `COLUMNS`
  wide (80 unless set), so this holds in a pipe too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

NAME, FIGURE, TEXT = "name", "figure", "text"


@dataclass
class Column:
    header: str
    kind: str
    options: dict = field(default_factory=dict)


class Table:
    """A table's columns and rows (cells are rich markup), drawn by `show`."""

    def __init__(self, *, header: bool = True) -> None:
        self.header = header
        self.columns: list[Column] = []
        self.rows: list[tuple[list[str], bool]] = []  # (cells, end_section)

    def add_row(self, *cells: str, end_section: bool = False) -> None:
        self.rows.append(([str(c) for c in cells], end_section))

    def width(self) -> int:
        """The narrowest the table can be drawn with no name or figure split: each such column as
        wide as its widest cell or header line, a text column its longest word, two spaces between."""
        from rich.cells import cell_len
        from rich.text import Text

        widths = []
        for i, c in enumerate(self.columns):
            texts = [Text.from_markup(cells[i]).plain for cells, _ in self.rows if i < len(cells)]
            texts += c.header.splitlines() if self.header else []
            if c.kind == TEXT:
                widths.append(max((cell_len(w) for text in texts for w in text.split()), default=0))
            else:
                widths.append(max((cell_len(line) for text in texts for line in text.splitlines() or [""]), default=0))
        return sum(widths) + 2 * max(0, len(widths) - 1)

    def rich(self) -> Any:
        from rich import box
        from rich.table import Table as RichTable

        t = RichTable(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1, 0, 0), show_header=self.header)
        for c in self.columns:
            if c.kind == TEXT:
                t.add_column(c.header, overflow="fold", **c.options)
            else:
                t.add_column(c.header, no_wrap=True, **c.options)
        for cells, end in self.rows:
            t.add_row(*cells, end_section=end)
        return t


def table() -> Table:
    """An empty table (`show` prints its title, wrapped at the console's width, not the table's)."""
    return Table()


def facts(rows: list[tuple[str, object]]) -> Table:
    """A two-column table of labelled facts (a command's summary), no header: the label a name,
    the value text (plain, not markup)."""
    from olmocr_rl.paths import for_rich

    t = Table(header=False)
    name_column(t, "", style="bold")
    text_column(t, "")
    for label, value in rows:
        t.add_row(for_rich(label), for_rich(value))
    return t


def name_column(t: Table, header: str = "", **kw: Any) -> None:
    """A column of names: never wrapped or cut (the table is shown row by row when it does not fit)."""
    t.columns.append(Column(header, NAME, kw))


def figure_column(t: Table, header: str, **kw: Any) -> None:
    """A column of figures: right-aligned, never wrapped or cut."""
    kw.setdefault("justify", "right")
    t.columns.append(Column(header, FIGURE, kw))


def text_column(t: Table, header: str, **kw: Any) -> None:
    """A column of words (a reason, a message): wrapped at spaces, a longer word folded."""
    t.columns.append(Column(header, TEXT, kw))


def show(console: Any, t: Table, title: str = "") -> None:
    """Prints `title` (rich markup; a blank line before it) and the table: drawn when it fits the
    console's width, else row by row (see the module docstring)."""
    if title:
        console.print()
        console.print(title, style="bold", highlight=False)
    if t.width() <= console.width:
        console.print(t.rich())
        return
    _rows(console, t)


def _rows(console: Any, t: Table) -> None:
    """Each row as a block: its first cell, then the others as `header value` pairs, as many to a
    line as fit, indented (a table without headers: `label: value`, the value wrapped at spaces)."""
    from rich.cells import cell_len
    from rich.text import Text

    for cells, _ in t.rows:
        if not t.header:
            console.print(Text.from_markup(f"{cells[0]}: ", style="bold") + Text.from_markup(" ".join(c for c in cells[1:] if c)),
                          highlight=False)  # fmt: skip
            continue
        console.print(Text.from_markup(cells[0] or "-"), style="bold", highlight=False)
        pairs = [f"{c.header.replace(chr(10), ' ')} {cell.strip()}" if c.header else cell.strip()
                 for c, cell in zip(t.columns[1:], cells[1:]) if cell.strip()]  # fmt: skip
        lines: list[str] = []
        for pair in pairs:  # whole pairs to a line: markup never spans two
            joined = f"{lines[-1]} · {pair}" if lines else pair
            if lines and cell_len(Text.from_markup(joined).plain) + 2 <= console.width:
                lines[-1] = joined
            else:
                lines.append(pair)
        for line in lines:
            console.print(Text("  ") + Text.from_markup(line), highlight=False)
