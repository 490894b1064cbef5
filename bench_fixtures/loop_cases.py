"""Texts for the loop detector (olmocr_rl/loops.py): hard legitimate pages, which repeat exactly but are
no loop, each at the scale of a whole page, and loops as an OCR model writes them. The tests
(tests/test_loops.py) show no legitimate page is a loop under the default rule; benchmarks/bench_loops.py
measures how close they come (the longest exact repetition of each), which chose the rule's `min_span`.

    from loop_cases import LEGITIMATE, LOOPS   (with bench_fixtures/ on sys.path)
"""

from __future__ import annotations

_TEXT = (
    "The committee reviewed the proposal in detail and found the budget, the schedule and the staffing plan "
    "consistent with the programme's aims. Two members asked for a revised timeline.\n\n"
)


def _zero_table_md(rows: int = 40) -> str:
    head = "| a | b | c | d |\n|---|---|---|---|\n"
    return "Table 3: counts by region\n\n" + head + "| 0 | 0 | 0 | 0 |\n" * rows + "\nSource: survey.\n"


def _zero_table_html(rows: int = 40) -> str:
    row = "<tr><td>0</td><td>0</td><td>0</td><td>0</td></tr>\n"
    return "<table>\n<tr><th>a</th><th>b</th><th>c</th><th>d</th></tr>\n" + row * rows + "</table>\n"


def _blank_form_html(rows: int = 40, cols: int = 6) -> str:
    """A sign-in sheet: a header row, then empty rows."""
    head = "<tr>" + "".join(f"<th>{h}</th>" for h in ("Name", "Date", "In", "Out", "Room", "Signature")[:cols]) + "</tr>\n"
    return "<table>\n" + head + ("<tr>" + "<td></td>" * cols + "</tr>\n") * rows + "</table>\n"


def _numbered_rows(rows: int = 300) -> str:
    return "| # | a | b |\n|---|---|---|\n" + "".join(f"| {i} | 0 | 0 |\n" for i in range(1, rows + 1))


def _numbers(n: int = 1000) -> str:
    return "".join(f"{i}\n" for i in range(1, n + 1))


def _toc(entries: int = 60) -> str:
    lines = []
    for i in range(1, entries + 1):
        title = f"Chapter {i}: Section title"
        lines.append(f"{title} {'.' * (70 - len(title))} {i * 7}")
    return "Contents\n\n" + "\n".join(lines) + "\n"


def _dotted_page(lines: int = 40, width: int = 80) -> str:
    """A lined form for handwriting, each line written as dots."""
    return "Notes\n\n" + ("." * width + "\n") * lines


def _signature_lines(lines: int = 30) -> str:
    return "".join(f"Signature {i}: {'_' * 40}\n" for i in range(1, lines + 1))


def _wide_separator(cols: int = 40) -> str:
    head = "|" + "|".join(f" c{i} " for i in range(cols)) + "|\n"
    return head + "|" + "---|" * cols + "\n" + "|" + " 1 |" * cols + "\n"


def _repeated_headers(sections: int = 12) -> str:
    return "".join(f"ANNUAL REPORT 2023 - CONFIDENTIAL\n\n## Section {i}\n\n{_TEXT}" for i in range(1, sections + 1))


LEGITIMATE: dict[str, str] = {
    "zero-table-markdown": _zero_table_md(),
    "zero-table-html": _zero_table_html(),
    "blank-form-html": _blank_form_html(),
    "numbered-rows": _numbered_rows(),
    "numbers": _numbers(),
    "toc-leaders": _toc(),
    "dotted-page": _dotted_page(),
    "signature-lines": _signature_lines(),
    "wide-separator": _wide_separator(),
    "repeated-headers": _repeated_headers(),
}


def _loop(prefix: str, period: str, chars: int) -> str:
    return prefix + (period * (chars // len(period) + 1))[:chars]


# Loops as an OCR model writes them, run on to 24,000 characters (about 8,000 tokens): a row, a line,
# one character, a sentence.
LOOPS: dict[str, str] = {
    "row": _loop("<table>\n<tr><td>Region</td><td>2022</td></tr>\n", "<tr><td>North</td><td>1.2</td></tr>\n", 24_000),
    "line": _loop(_TEXT, "The committee reviewed the proposal.\n", 24_000),
    "character": _loop("Total: ", "0", 24_000),
    "sentence": _loop("", _TEXT, 24_000),
}
