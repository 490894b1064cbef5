#!/usr/bin/env python3
"""Golden table structures: what the reference's own parser (allenai/olmocr @ f7cfe4c,
`olmocr/bench/table_parsing.py`, beautifulsoup4 4.15.0's html.parser) makes of random HTML-ish tag
soup and markdown, for tests/test_table_props.py. Every table's cells, headings, rectangularity,
up/down/left/right relations and top/left heading walks; or the exception the parser raises.

The cases are written here, deterministically (random.Random(SEED)), from the alphabet the property
tests used when they compared with the reference directly (tags, span values, entities, comments,
CDATA, markdown rows); the reference's verdicts come from running it. Dev machines only, not CI:
no PyPI release carries f7cfe4c's table_parsing.py (olmocr 0.4.27's wheel has the older parser in
olmocr/bench/tests.py).

    git -C <allenai/olmocr clone> archive f7cfe4c olmocr | tar -x -C /tmp/ref
    python3 -m venv /tmp/refvenv && /tmp/refvenv/bin/pip install beautifulsoup4==4.15.0
    /tmp/refvenv/bin/python tests/golden/gen_table_parse_cases.py --ref-tree /tmp/ref   # -> table_parse_cases.jsonl
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

SEED = 20261204
HERE = Path(__file__).resolve().parent

SPAN_VALUES = ["2", "3", "0", " 2 ", "2x", "", "-1", "1_0", "２", "&#50;", "1", "02"]
TAGS = ["table", "tr", "td", "th", "thead", "tbody", "tfoot", "b", "br", "p", "span", "caption", "TD", "Tr", "script", "style",
        "pre", "template", "rt", "img"]  # fmt: skip
TEXT = ["a", "b c", "12", " ", "\n", "x<y", "p < q", "&amp;", "&#65;", "&#x42;", "&foo;", "&copy", "&nbsp;", "<!-- c -->", "<!--",
        "<![CDATA[q]]>", "<!doctype html>", "<?pi?>", "&", "<", ">", "'", '"', "</>", "</ td>", "&#", "&#12a;", "=", "/", "$x<0.5$",
        "| a | b |", "-->"]  # fmt: skip
# Table-shaped pieces, so that most soups hold tables with spans and headings.
SHAPES = ["<table>", "<tr>", "<td>", "<th>", "</td>", "</th>", "</tr>", "</table>", "<td rowspan=2>", "<td colspan=2>",
          "<th colspan='3'>", "<td rowspan=\"2\" colspan=2>"]  # fmt: skip
MD_ROWS = ["| a | b |", "|---|---|", "| c |", "d | e", "x", "", " | ", "|-|:-:|\r", "| f | g | h |", "|:--|--:|", "| 1 | 2 |"]
SPEC_EXAMPLES = [
    "<table><tr><td>A</td><td rowspan='3'>B</td></tr><tr><td colspan='2'>C</td></tr></table>",
    "<table><tr><td>a<td>b</tr><tr><td>c</td><td>d</td></tr></table>",
    "<table><tr><td>a</td><td><table><tr><td>in1</td><td>in2</td></tr></table></td></tr></table>",
    "where $x<y$ holds.\n\n<table><tr><td>1</td></tr></table>",
    "<table><thead><tr><th colspan=2>H</th></tr><tr><th>a</th><th>b</th></tr></thead><tr><td>1</td><td>2</td></tr></table>",
]


def start_tag(rng: random.Random) -> str:
    name = rng.choice(TAGS)
    attrs = ""
    for attr in rng.sample(["rowspan", "colspan", "ROWSPAN", "class"], rng.randint(0, 2)):
        value = rng.choice(SPAN_VALUES)
        quote = rng.choice(["'", '"', ""])
        attrs += f" {attr}={quote}{value}{quote}" if quote or (value and " " not in value) else f" {attr}"
    return f"<{name}{attrs}{rng.choice(['>', '>', '>', '/>', ' >'])}"


def soup(rng: random.Random) -> str:
    pieces = []
    for _ in range(rng.randint(0, 40)):
        kind = rng.random()
        if kind < 0.3:
            pieces.append(start_tag(rng))
        elif kind < 0.45:
            pieces.append(f"</{rng.choice(TAGS)}>")
        elif kind < 0.7:
            pieces.append(rng.choice(SHAPES))
        else:
            pieces.append(rng.choice(TEXT))
    return "".join(pieces)


def table_soup(rng: random.Random) -> str:
    """Soup inside a table's frame: rows of cells with spans, headings and stray markup."""
    rows = []
    for _ in range(rng.randint(1, 5)):
        cells = []
        for _ in range(rng.randint(0, 4)):
            tag = rng.choice(["td", "th", "TD", "td", "td"])
            attrs = "".join(
                f" {a}={rng.choice(SPAN_VALUES[:3] + ['1', '4'])}" for a in rng.sample(["rowspan", "colspan"], rng.randint(0, 2))
            )
            body = "".join(rng.choice(TEXT + SHAPES[:3] + ["<b>bold</b>", "<br>", "x"]) if rng.random() < 0.3 else rng.choice("abcxyz")
                           for _ in range(rng.randint(0, 3)))  # fmt: skip
            cells.append(f"<{tag}{attrs}>{body}" + (f"</{tag}>" if rng.random() < 0.8 else ""))
        rows.append(rng.choice(["<tr>", "<tr>", "<tr class=r>", ""]) + "".join(cells) + ("</tr>" if rng.random() < 0.8 else ""))
    head = rng.choice(["", "<thead>", "<caption>c</caption>", soup(rng)[:20]])
    return rng.choice(["", "text ", "<p>"]) + "<table>" + head + "".join(rows) + rng.choice(["</table>", "</table>", "", "</table> tail"])


def markdown(rng: random.Random) -> str:
    return "\n".join(rng.choice(MD_ROWS) for _ in range(rng.randint(0, 10)))


def describe(tp, text: str, markdown: bool) -> list[dict]:
    """Every table as the test compares it (tests/test_table_props.py `_ours`)."""
    tables = tp.parse_markdown_tables(text) if markdown else tp.parse_html_tables(text)
    out = []
    for t in tables:
        keys = list(t.cell_text)

        def rel(sets):
            return [[list(x) for x in sets[k]] for k in keys]

        out.append(
            {
                "cells": [[r, c, t.cell_text[(r, c)]] for r, c in keys],
                "headings": sorted([list(k) for k in t.heading_cells]),
                "rectangular": t.is_rectangular,
                "up": rel(t.up_relations),
                "down": rel(t.down_relations),
                "left": rel(t.left_relations),
                "right": rel(t.right_relations),
                "top_heading": [[list(x) for x in t.top_heading_relations(*k)] for k in keys],
                "left_heading": [[list(x) for x in t.left_heading_relations(*k)] for k in keys],
            }
        )
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ref-tree", required=True, help="an extracted allenai/olmocr tree at f7cfe4c")
    ap.add_argument("--html", type=int, default=3000)
    ap.add_argument("--markdown", type=int, default=1000)
    ap.add_argument("--out", default=str(HERE / "table_parse_cases.jsonl"))
    args = ap.parse_args()
    sys.path.insert(0, args.ref_tree)
    import bs4
    from olmocr.bench import table_parsing as tp

    assert bs4.__version__ == "4.15.0", bs4.__version__
    rng = random.Random(SEED)
    inputs = [(t, False, "spec") for t in SPEC_EXAMPLES]
    inputs += [(soup(rng), False, "soup") for _ in range(args.html // 2)]
    inputs += [(table_soup(rng), False, "table") for _ in range(args.html - args.html // 2)]
    inputs += [(markdown(rng), True, "markdown") for _ in range(args.markdown)]
    seen, lines, counts = set(), [], {"tables": 0, "raises": 0}
    for text, is_md, group in inputs:
        if (text, is_md) in seen:
            continue
        seen.add((text, is_md))
        case = {"case": f"{group}-{len(lines):05d}", "markdown": is_md, "text": text}
        try:
            case["tables"] = describe(tp, text, is_md)
            counts["tables"] += len(case["tables"])
        except Exception as e:  # the reference raises: ours must too
            case["raises"] = type(e).__name__
            counts["raises"] += 1
        lines.append(json.dumps(case, ensure_ascii=False))
    Path(args.out).write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{len(lines)} cases, {counts['tables']} tables, {counts['raises']} raise -> {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
