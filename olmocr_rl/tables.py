"""Tables that read the same on a terminal, in a pipe and in a log file (rich, imported by the
callers' command bodies only).

* No box: a rule under the header and two spaces between columns, so narrow terminals keep room
  for the figures; a row's label names what it is in words (styles vanish in a pipe).
* Names (files, candidates, types) wrap inside their column; figures never wrap.
* `show` prints a table at the console's width when it fits there, else at its own narrowest
  width: a line longer than the terminal rather than a cut cell ("headers_f…", "0.2…").
  A console that is not a terminal is `COLUMNS` wide (80 unless set), so this holds in a pipe too.
"""

from __future__ import annotations

from typing import Any


def table() -> Any:
    """An empty table (`show` prints its title, wrapped at the console's width, not the table's)."""
    from rich import box
    from rich.table import Table

    return Table(box=box.SIMPLE_HEAD, show_edge=False, padding=(0, 1, 0, 0))


def name_column(t: Any, header: str = "", **kw: Any) -> None:
    """A column of names: wrapped (at spaces, else anywhere) when the table needs the room."""
    t.add_column(header, overflow="fold", **kw)


def figure_column(t: Any, header: str, **kw: Any) -> None:
    """A column of figures: right-aligned, never wrapped or cut (its header may wrap)."""
    kw.setdefault("justify", "right")
    t.add_column(header, no_wrap=True, **kw)


def show(console: Any, renderable: Any, title: str = "") -> None:
    """Prints `title` (rich markup; a blank line before it) and `renderable` (a table), never
    narrower than the table can be drawn without cutting."""
    from rich.measure import Measurement

    if title:
        console.print()
        console.print(title, style="bold", highlight=False)
    need = Measurement.get(console, console.options.update(max_width=100_000), renderable).minimum
    if need <= console.width:
        console.print(renderable)
        return
    width = console.width
    console.width = need
    try:
        console.print(renderable)
    finally:
        console.width = width
