#!/usr/bin/env python3
"""Golden cases for olmOCR-bench `table` tests (TableTest, docs/checks.md §3.3 and §4).

The cases are written here, deterministically (every random choice comes from
random.Random(SEED)); their verdicts come from the reference implementation
(allenai/olmocr @ f7cfe4c) through /work/shared/tools/reference_verdicts.py.

Run it with the reference's Python, which has beautifulsoup4 4.15 (dev machines only, not CI):

  /work/ref/venv/bin/python tests/golden/gen_table_cases.py generate > cases.jsonl
  /work/ref/venv/bin/python tests/golden/gen_table_cases.py build      # -> tests/golden/table_cases.jsonl

`generate` imports the reference's `table_parsing` only to look at the tables a page really
parses into, so that the cell and relation strings it asks for are often right (passes), nearly
right (max_diffs boundaries), tied between several neighbours (set-order explanations) or wrong.
`build` = generate + reference verdicts + the expectations written below (docs/checks.md §10) +
a summary on stderr.
"""

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
from collections import Counter, OrderedDict

SEED = 20260602
HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_TREE = "/work/ref/olmocr"
DEFAULT_TOOL = "/work/shared/tools/reference_verdicts.py"

tp = None  # olmocr.bench.table_parsing, imported in main()

RELATIONS = ["up", "down", "left", "right", "top_heading", "left_heading"]

LETTERS = list("abcdefghijklmnopqrstuvwxyz")
WORDS = [
    "Name",
    "Value",
    "Total",
    "Year",
    "Mean",
    "SD",
    "n",
    "p",
    "Group",
    "Control",
    "Treatment",
    "Revenue",
    "Cost",
    "2019",
    "2020",
    "2021",
    "12.5",
    "3.14",
    "1,234",
    "-0.5",
    "N/A",
    "—",
    "",
    "Age (years)",
    "BMI",
    "Height",
    "Weight",
    "Country",
    "Région",
    "東京",
    "Ελλάδα",
    "Zürich",
    "**Bold**",
    "*it*",
    "a_b_c",
    "x²",
    "µm",
    "“quoted”",
    "it’s",
    "A–B",
    "50%",
    "$5",
    "α",
    "β",
    "Sub total",
    "Grand total",
    "Q1",
    "Q2",
    "Q3",
    "Q4",
    "Model",
    "Acc.",
    "F1",
    "Params",
]
MARKUP_WRAPS = [
    ("<b>", "</b>"),
    ("<i>", "</i>"),
    ("<strong>", "</strong>"),
    ("<em>", "</em>"),
    ("<span class='x'>", "</span>"),
    ("<sup>", "</sup>"),
    ("<p>", "</p>"),
    ("<B>", "</B>"),
]
SPAN_JUNK = [
    "2x",
    "",
    "0",
    " 3 ",
    "1_0",
    "２",
    "-1",
    "+2",
    "02",
    "3.0",
    "two",
    "&#50;",
    "1e1",
    "\u00a02",
    "\x1c0",
    " 0 ",
    "00",
    "-0",
    "0x2",
    "1__0",
    "٣",
    "12",
]


def cell_text(rng, pool="mixed"):
    if pool == "letters" or (pool == "mixed" and rng.random() < 0.35):
        return rng.choice(LETTERS) + (rng.choice(LETTERS) if rng.random() < 0.3 else "")
    if pool == "numbers" or (pool == "mixed" and rng.random() < 0.3):
        return rng.choice(["%d" % rng.randint(0, 999), "%.1f" % rng.uniform(-50, 500), "%d%%" % rng.randint(0, 100)])
    return rng.choice(WORDS)


def mutate(rng, s, k):
    s = list(s)
    for _ in range(k):
        op = rng.choice(["sub", "ins", "del"]) if s else "ins"
        p = rng.randrange(len(s) + (op == "ins")) if s or op == "ins" else 0
        if op == "sub":
            s[p] = rng.choice(LETTERS)
        elif op == "ins":
            s.insert(p, rng.choice(LETTERS))
        else:
            del s[p]
    return "".join(s)


# ------------------------------------------------------------------------------------------
# Page builders


def md_table(rng, rows, cols, *, pool="mixed", ragged=0.0, sep=True, pipes="both", align=False):
    grid = [[cell_text(rng, pool) for _ in range(cols)] for _ in range(rows)]
    lines = []
    for r, row in enumerate(grid):
        cells = row if rng.random() >= ragged else row[: rng.randint(1, cols)]
        body = " | ".join(cells)
        if pipes == "both":
            line = "| " + body + " |"
        elif pipes == "lead":
            line = "| " + body
        elif pipes == "none":
            line = body if cols > 1 else body + " |"
        else:
            line = body + " |"
        lines.append(line)
        if r == 0 and sep:
            marks = [rng.choice(["---", ":---", "---:", ":-:", "-"]) if align else "---" for _ in range(cols)]
            lines.append("|" + "|".join(marks) + "|")
    return "\n".join(lines)


def html_table(
    rng,
    rows,
    cols,
    *,
    pool="mixed",
    spans=0.15,
    junk=0.0,
    head="none",
    unclosed=0.0,
    markup=0.15,
    upper=0.0,
    ws=0.3,
    caption=False,
    tbody=False,
    nested=0.0,
    br=0.1,
    entities=0.1,
    comments=0.0,
    empty=0.05,
):
    def tag(name):
        return name.upper() if rng.random() < upper else name

    out = ["<%s>" % tag("table")]
    if caption:
        out.append("<caption>%s</caption>" % cell_text(rng, pool))
    nl = lambda: rng.choice(["\n", "  ", "\n  ", ""]) if rng.random() < ws else ""
    head_rows = 0
    if head == "thead":
        head_rows = rng.choice([1, 1, 2])
        out.append("<thead>")
    elif head == "th":
        head_rows = 1
    for r in range(rows):
        if head == "thead" and r == head_rows:
            out.append("</thead>")
            if tbody:
                out.append("<tbody>")
        elif r == 0 and tbody and head != "thead":
            out.append("<tbody>")
        out.append(nl() + "<%s>" % tag("tr"))
        c = 0
        while c < cols:
            name = (
                "th"
                if (r < head_rows and head in ("th", "thead") and rng.random() < 0.9) or (head == "th" and c == 0 and rng.random() < 0.3)
                else "td"
            )
            attrs = ""
            if rng.random() < spans:
                kind = rng.choice(["rowspan", "colspan"])
                value = str(rng.choice([2, 2, 3])) if rng.random() >= junk else rng.choice(SPAN_JUNK)
                q = rng.choice(["'", '"', '"', ""]) if value and " " not in value else rng.choice(["'", '"'])
                attrs = " %s=%s%s%s" % (tag(kind), q, value, q)
            text = "" if rng.random() < empty else cell_text(rng, pool)
            if text and rng.random() < markup:
                a, b = rng.choice(MARKUP_WRAPS)
                text = a + text + b
            if rng.random() < br:
                text = text + rng.choice(["<br>", "<br/>", "<br />"]) + cell_text(rng, pool)
            if rng.random() < entities:
                text = text + rng.choice([" &amp; ", "&nbsp;", "&lt;5", " &copy;", "&#8211;", "&#x41;", " &foo; ", "&mdash;"])
            if rng.random() < comments:
                text = text + "<!-- %s -->" % cell_text(rng, pool)
            if rng.random() < nested:
                text = text + html_table(rng, 2, 2, pool=pool, spans=0, markup=0, br=0, entities=0)
            close = "" if rng.random() < unclosed else "</%s>" % tag(name)
            out.append(nl() + "<%s%s>%s%s" % (tag(name), attrs, text, close))
            c += 1
        out.append(("" if rng.random() < unclosed else "</%s>" % tag("tr")) + nl())
    if head == "thead" and head_rows >= rows:
        out.append("</thead>")
    if tbody:
        out.append("</tbody>")
    out.append("</%s>" % tag("table"))
    return "".join(out)


PROSE = [
    "Table 1 shows the results.",
    "The values below are means.",
    "See the appendix for details.",
    "Results were significant (p < 0.05).",
    "where $x<y$ holds for all x.",
    "Note: $p<0.05$.",
    "We compare a < b and c > d.",
    "Costs rose 5% & revenue fell.",
    "# Results",
    "## Methods",
    "Source: annual report.",
    "<!-- page break -->",
    "x<sup>2</sup> is shown.",
    "$|x| + |y|$",
    "A <b>bold</b> claim.",
    "Line one.\nLine two.",
    "",
    "* item one\n* item two",
]


def prose(rng):
    return rng.choice(PROSE)


# ------------------------------------------------------------------------------------------
# Choosing tests from the tables the reference sees


def ref_tables(text, ignore_md=False):
    tables = []
    if not ignore_md:
        tables += tp.parse_markdown_tables(text)
    tables += tp.parse_html_tables(text)
    return tables


def related(table, key, rel):
    if rel in ("top_heading", "left_heading"):
        fn = table.top_heading_relations if rel == "top_heading" else table.left_heading_relations
        return sorted(fn(*key))
    return sorted(getattr(table, rel + "_relations")[key])


def choose_test(rng, text, ignore_md=False):
    """A table test record (without pdf/page/id) for `text`, built from its parsed tables."""
    rec = OrderedDict(type="table")
    try:
        tables = ref_tables(text, ignore_md)
    except Exception:
        tables = []
    cells = [(t, k) for t in tables for k in t.cell_text]
    if not cells or rng.random() < 0.05:
        rec["cell"] = cell_text(rng)
        if rng.random() < 0.3:
            rec[rng.choice(RELATIONS)] = cell_text(rng)
        return rec
    table, key = rng.choice(cells)
    target = table.cell_text[key]
    mode = rng.random()
    if mode < 0.7 or not target:
        rec["cell"] = target
    elif mode < 0.9:
        k = rng.randint(1, 3)
        rec["cell"] = mutate(rng, target, k)
        rec["max_diffs"] = rng.choice([k - 1, k, k, k + 1, max(0, k - 1)])
    else:
        rec["cell"] = cell_text(rng)
    n_rel = rng.choice([0, 0, 1, 1, 1, 2, 2, 3])
    for rel in rng.sample(RELATIONS, n_rel):
        rel_cells = related(table, key, rel)
        choice = rng.random()
        if rel_cells and choice < 0.75:
            expected = table.cell_text[rng.choice(rel_cells)]
            if not expected:
                expected = cell_text(rng)
        elif rel_cells and choice < 0.83:
            texts = [table.cell_text[c] for c in rel_cells if table.cell_text[c]]
            if len(texts) >= 2:
                # Often ties between two neighbours: the explanation names the first in set order.
                a, b = rng.sample(texts, 2)
                expected = a[:1] + b[:1] + rng.choice(["", "z"])
            else:
                expected = mutate(rng, texts[0] if texts else "q", 2)
        elif rel_cells and choice < 0.9:
            base = table.cell_text[rng.choice(rel_cells)] or "q"
            k = rng.randint(1, 2)
            expected = mutate(rng, base, k)
            rec.setdefault("max_diffs", rng.choice([0, k, k + 1]))
        else:
            expected = table.cell_text[rng.choice(list(table.cell_text))] or cell_text(rng)
        rec[rel] = expected
    if rng.random() < 0.05:
        rec["max_diffs"] = rng.choice([True, False, 10, 100])
    return rec


# ------------------------------------------------------------------------------------------
# Cases


class Cases:
    def __init__(self):
        self.items = []
        self.counts = Counter()

    def add(self, group, test, text, *, expect=None, spec=None, note=None, full=False):
        self.counts[group] += 1
        cid = "%s-%04d" % (group, self.counts[group])
        if full:
            rec = test
        else:
            rec = OrderedDict(pdf="golden/%s.pdf" % group, page=1, id=cid)
            rec.update(test)
        case = OrderedDict(case=cid, test=rec, text=text)
        if expect is not None:
            case["expect"] = expect
        if spec:
            case["spec"] = spec
        if note:
            case["note"] = note
        self.items.append(case)


def spec_cases(cs):
    md = "| Name | Val |\n|---|---|\n| A | 1 |\n| B | 2 |"
    cs.add("spec", {"type": "table", "cell": "B", "top_heading": "A"}, md, expect=True, spec="10.8")
    cs.add("spec", {"type": "table", "cell": "2", "top_heading": "1"}, md, expect=False, spec="10.8")
    cs.add("spec", {"type": "table", "cell": "Val", "left_heading": "Name"}, md, expect=True, spec="10.8")
    grid = "<table><tr><td>h1</td><td>h2</td></tr><tr><td>a</td><td>b</td></tr><tr><td>c</td><td>d</td></tr></table>"
    cs.add("spec", {"type": "table", "cell": "d", "top_heading": "h2"}, grid, expect=True, spec="10.9")
    cs.add("spec", {"type": "table", "cell": "d", "top_heading": "b"}, grid, expect=False, spec="10.9")
    cs.add("spec", {"type": "table", "cell": "abcd", "max_diffs": 3}, "<table><tr><td>ab</td></tr></table>", expect=True, spec="10.10")
    cs.add("spec", {"type": "table", "cell": "abcd", "max_diffs": 3}, "<table><tr><td>a</td></tr></table>", expect=False, spec="10.10")
    crash = "<table><tr><td>A</td><td rowspan='3'>B</td></tr><tr><td colspan='2'>C</td></tr></table>"
    cs.add("spec", {"type": "table", "cell": "C", "up": "A"}, crash, expect="error", spec="10.11")
    cs.add("spec", {"type": "table", "cell": "1"}, "where $x<y$ holds.\n\n<table><tr><td>1</td></tr></table>", expect=False, spec="10.12")
    cs.add("spec", {"type": "table", "cell": "1"}, "where $p<0.05$ holds.\n\n<table><tr><td>1</td></tr></table>", expect=True, spec="10.12")
    unclosed = "<table><tr><td>a<td>b</tr><tr><td>c</td><td>d</td></tr></table>"
    cs.add("spec", {"type": "table", "cell": "b"}, unclosed, expect=False, spec="10.13")
    cs.add("spec", {"type": "table", "cell": "ab", "down": "c"}, unclosed, expect=True, spec="10.13")
    nested = "<table><tr><td>a</td><td><table><tr><td>in1</td><td>in2</td></tr></table></td></tr></table>"
    cs.add("spec", {"type": "table", "cell": "in1", "up": "a"}, nested, expect=True, spec="10.14")
    cs.add("spec", {"type": "table", "cell": "in1in2", "left": "a"}, nested, expect=True, spec="10.14")


def rule_cases(cs):
    """Hand-written cases for the section 4 rules and the quirks around them."""
    add = lambda test, text, **kw: cs.add("rule", dict(type="table", **test), text, **kw)
    # 4.1 markdown scanner
    add({"cell": "c", "up": "a"}, "| a | b |\n| c | d |", expect=True, note="no separator needed")
    add({"cell": "c"}, "| a | b |\n\n| c | d |", expect=False, note="blank line splits: single rows")
    add({"cell": "y", "up": "x"}, "$|x|$\nand |y| too", note="math pipes form a table")
    add({"cell": "---", "up": "a"}, "| a | b |\n|---|---|\n|---|---|\r\n| c | d |", note="second separator with \\r")
    add({"cell": "c", "up": "a"}, "| a | b |\n|---|---|\n|---|---|\n| c | d |", note="second separator dropped")
    add({"cell": "c", "up": "a"}, "| a | b |\r| c | d |", expect=False, note="lone \\r is not a line break")
    add({"cell": "c", "up": "a"}, "| a | b |\r\n| c | d |", note="\\r\\n")
    add({"cell": "b", "left_heading": "a"}, "a | b\nc | d", note="no outer pipes")
    add({"cell": "", "up": "a"}, "| a | b |\n|  | d |", note="empty cell text")
    add({"cell": "d", "up": "b"}, "| a | b | c |\n| d |\n| e | f | g |", note="ragged")
    add({"cell": "f", "up": "b"}, "| a | b | c |\n| d |\n| e | f | g |", note="gap skipped")
    add({"cell": "x\\|y"}, "| x\\|y | z |\n| 1 | 2 |", note="escaped pipe splits")
    # ignore_markdown_tables
    mixed = "| m | n |\n| o | p |\n\n<table><tr><td>h</td></tr><tr><td>i</td></tr></table>"
    add({"cell": "o", "up": "m"}, mixed, expect=True)
    add({"cell": "o", "up": "m", "ignore_markdown_tables": True}, mixed, expect=False)
    add({"cell": "i", "up": "h", "ignore_markdown_tables": True}, mixed, expect=True)
    add({"cell": "i", "ignore_markdown_tables": "no"}, mixed, note="truthy string")
    # 4.2 HTML
    add({"cell": "A & B"}, "<table><tr><td>A &amp; B</td></tr></table>", expect=True)
    add({"cell": "x y"}, "<table><tr><td>x&nbsp;y</td></tr></table>", expect=True)
    add({"cell": "&foo"}, "<table><tr><td>&foo;</td></tr></table>", expect=True, note="unknown entity loses ;")
    add({"cell": "a b"}, "<table><tr><td>a<br>b</td></tr></table>", expect=True)
    add({"cell": "ab"}, "<table><tr><td>a<!-- x -->b</td></tr></table>", expect=True)
    add({"cell": "ad"}, "<table><tr><td>a<script>b</td>c</script>d</td></tr></table>", expect=True)
    add({"cell": "a c"}, "<table><tr><td>a<![CDATA[]]>c</td></tr></table>", note="empty CDATA is a space")
    add({"cell": "a"}, "<table><tr><td>a<rt>b</rt><template>c</template></td></tr></table>", expect=True)
    add({"cell": "x", "right": "y"}, "<table><tr><td/><td>x</td><td>y</td></tr></table>", expect=True)
    add({"cell": "x"}, "<!-- <table><tr><td>x</td></tr></table> -->", expect=False)
    add({"cell": "x"}, "<TABLE><TR><TD>x</TD></TR></TABLE>", expect=True)
    add({"cell": "x"}, "<table><caption>x</caption><tr><td>y</td></tr></table>", expect=False)
    add({"cell": "x"}, "<![foo[x]]><table><tr><td>x</td></tr></table>", expect="error", note="ParserRejectedMarkup")
    add({"cell": "x"}, "<![ x]><table><tr><td>x</td></tr></table>", expect="error")
    add({"cell": "x"}, "<![if !x]>y<![endif]><table><tr><td>x</td></tr></table>", expect=True)
    add({"cell": "x"}, "&#%s;<table><tr><td>x</td></tr></table>" % ("1" * 4301), expect="error", note="int() digit limit")
    add({"cell": "x"}, "&#%s;<table><tr><td>x</td></tr></table>" % ("1" * 4300), expect=True)
    add({"cell": "x"}, "<table><tr><td title='&#%s;'>x</td></tr></table>" % ("9" * 4301), expect="error", note="unescape digit limit")
    add({"cell": "x"}, "&#12a; <table><tr><td>x</td></tr></table>", note="bare &# stops the first pass")
    add({"cell": "x"}, "&#12a; &#34b; <table><tr><td>x</td></tr></table>", note="second stop: rest is text")
    add({"cell": "x"}, "&#xyz <table><tr><td>x</td></tr></table>", note="&# without ;")
    add({"cell": "x"}, "<a b='c> <table><tr><td>x</td></tr></table>", note="unclosed quote")
    add({"cell": "x"}, "<a b== 'c> <table><tr><td>x</td></tr></table>", note="backtracking ==")
    add({"cell": "x"}, "<a b= 'c> <table><tr><td>x</td></tr></table>", note="backtracking ws")
    add({"cell": "x"}, "<script>x</script><table><tr><td>x</td></tr></table>", expect=True)
    add({"cell": "x"}, "<script><table><tr><td>x</td></tr></table>", expect=False, note="unclosed script")
    add({"cell": "x"}, "<table><tr><td>x</td></tr></table>&a", expect=True)
    # spans
    for value in SPAN_JUNK:
        add(
            {"cell": "B", "left": "A", "down": "D"},
            "<table><tr><td>A</td><td rowspan='%s'>B</td></tr><tr><td>C</td><td>D</td></tr></table>" % value,
            note="rowspan %r" % value,
        )
        add(
            {"cell": "B", "left": "A", "down": "C"},
            '<table><tr><td>A</td><td colspan="%s">B</td><td>E</td></tr><tr><td>C</td><td>D</td><td>F</td></tr></table>' % value,
            note="colspan %r" % value,
        )
    add(
        {"cell": "C", "up": "A"},
        "<table><tr><td>A</td><td rowspan='2'>B</td></tr><tr><td colspan='2'>C</td></tr></table>",
        note="colspan cancels rowspan, no crash",
    )
    add(
        {"cell": "B", "left": "C"},
        "<table><tr><td>A</td><td rowspan='2'>B</td></tr><tr><td colspan='2'>C</td></tr></table>",
        note="relations over rows B lost",
    )
    add(
        {"cell": "X", "down": "Y"},
        "<table><tr><td colspan=2 rowspan=5>X</td></tr><tr></tr><tr><td>Y</td></tr></table>",
        note="full-width span past the end",
    )
    add({"cell": "Z"}, "<table><tr><td>Z</td><td rowspan=9>Q</td></tr><tr><td colspan=3>W</td></tr></table>", expect="error")
    add({"cell": "y"}, "<table><tr><td>y</td><td rowspan=%s>big</td></tr></table>" % ("9" * 4301), note="4301-digit span")


def random_md_cases(cs, rng, n):
    for _ in range(n):
        rows, cols = rng.randint(2, 8), rng.randint(1, 6)
        pool = rng.choice(["mixed", "letters", "numbers", "mixed"])
        table = md_table(
            rng,
            rows,
            cols,
            pool=pool,
            ragged=rng.choice([0, 0, 0.2]),
            sep=rng.random() < 0.85,
            pipes=rng.choice(["both", "both", "both", "lead", "trail", "none"]),
            align=rng.random() < 0.3,
        )
        parts = [table]
        if rng.random() < 0.5:
            parts.insert(0, prose(rng))
        if rng.random() < 0.4:
            parts.append(prose(rng))
        if rng.random() < 0.15:
            parts.append(md_table(rng, rng.randint(2, 4), rng.randint(2, 4), pool=pool))
        if rng.random() < 0.1:
            parts.append(html_table(rng, 2, 2, pool=pool))
        text = rng.choice(["\n\n", "\n"]).join(parts)
        if rng.random() < 0.05:
            text = text.replace("\n", "\r\n")
        ignore = rng.random() < 0.08
        rec = choose_test(rng, text, ignore)
        if ignore:
            rec["ignore_markdown_tables"] = True
        cs.add("md", rec, text)


def random_html_cases(cs, rng, n, group="html", **over):
    for _ in range(n):
        rows, cols = rng.randint(1, 7), rng.randint(1, 6)
        kw = dict(
            pool=rng.choice(["mixed", "letters", "numbers", "mixed"]),
            spans=rng.choice([0, 0.1, 0.25, 0.4]),
            junk=rng.choice([0, 0, 0.3]),
            head=rng.choice(["none", "th", "thead", "none"]),
            unclosed=rng.choice([0, 0, 0, 0.2, 0.5]),
            markup=rng.choice([0, 0.2]),
            upper=rng.choice([0, 0, 0.5]),
            caption=rng.random() < 0.1,
            tbody=rng.random() < 0.3,
            nested=rng.choice([0, 0, 0, 0.15]),
            br=rng.choice([0, 0.1]),
            entities=rng.choice([0, 0.1]),
            comments=rng.choice([0, 0.1]),
        )
        kw.update(over)
        parts = [html_table(rng, rows, cols, **kw)]
        if rng.random() < 0.4:
            parts.insert(0, prose(rng))
        if rng.random() < 0.3:
            parts.append(prose(rng))
        if rng.random() < 0.1:
            parts.append(html_table(rng, rng.randint(1, 3), rng.randint(1, 3), pool=kw["pool"]))
        if rng.random() < 0.08:
            parts.insert(rng.randrange(len(parts) + 1), md_table(rng, 3, 2, pool=kw["pool"]))
        text = rng.choice(["\n\n", "\n", ""]).join(parts)
        rec = choose_test(rng, text, ignore_md=rng.random() < 0.05)
        cs.add(group, rec, text)


def long_cases(cs, rng):
    for k in range(3):
        rows, cols = 200, 20
        text = html_table(rng, rows, cols, pool="mixed", spans=0.02, head="thead" if k else "th", markup=0.05, ws=0.5)
        for _ in range(4):
            cs.add("long", choose_test(rng, text), text)
        text = md_table(rng, rows, cols, pool=rng.choice(["mixed", "letters"]))
        for _ in range(4):
            cs.add("long", choose_test(rng, text), text)


def heading_set_cases(cs, rng, n):
    """Tables whose heading walks return many cells (markdown column 0, stacked theads):
    failing expectations tie between several headings, so the set order shows."""
    for _ in range(n):
        if rng.random() < 0.5:
            rows = rng.randint(5, 14)
            text = md_table(rng, rows, rng.randint(2, 4), pool="letters")
        else:
            heads = rng.randint(2, 5)
            cols = rng.randint(2, 5)
            out = ["<table><thead>"]
            for r in range(heads):
                out.append(
                    "<tr>"
                    + "".join("<th%s>%s</th>" % (" colspan=2" if rng.random() < 0.3 else "", rng.choice(LETTERS)) for _ in range(cols))
                    + "</tr>"
                )
            out.append("</thead>")
            for r in range(rng.randint(1, 4)):
                out.append("<tr>" + "".join("<td>%s</td>" % rng.choice(LETTERS) for _ in range(cols)) + "</tr>")
            out.append("</table>")
            text = "".join(out)
        tables = ref_tables(text)
        if not tables:
            continue
        t = tables[0]
        key = rng.choice(list(t.cell_text))
        rel = rng.choice(["top_heading", "left_heading", "top_heading"])
        heads_ = [t.cell_text[c] for c in related(t, key, rel)]
        if len(heads_) >= 2:
            a, b = rng.sample(heads_, 2)
            expected = a[:1] + b[:1]
        else:
            expected = rng.choice(LETTERS) * 2
        cs.add("walk", {"type": "table", "cell": t.cell_text[key], rel: expected}, text)


def load_cases(cs):
    base = {"pdf": "golden/load.pdf", "page": 1, "type": "table"}
    table = "| a | b |\n| c | d |"
    for k, extra in enumerate(
        [
            {"cell": 5},
            {"cell": ["a"]},
            {"cell": None},
            {},
            {"cell": "a", "up": 3},
            {"cell": "a", "up": None},
            {"cell": "a", "top_heading": True},
            {"cell": "a", "max_diffs": -1},
            {"cell": "a", "max_diffs": 1.0},
            {"cell": "a", "max_diffs": True},
            {"cell": "a", "notes": "x"},
            {"cell": "a", "text": "a"},
            {"cell": "", "up": "x"},
            {"cell": "**", "down": "c"},
            {"cell": "a", "ignore_markdown_tables": None},
            {"cell": "a", "ignore_markdown_tables": 0},
            {"cell": "a", "left_heading": ""},
            {"cell": "a", "checked": "verified", "url": "u"},
            {"cell": "a", "down": "__c__"},
            {"cell": "c", "up": "<b>a</b>"},
        ]
    ):
        rec = OrderedDict(base, id="load-%04d" % (k + 1))
        rec.update(extra)
        cs.add("load", rec, table, full=True)
    cs.add("load", OrderedDict(pdf="", page=1, id="load-x1", type="table", cell="a"), table, full=True)
    cs.add("load", OrderedDict(pdf="p.pdf", page=1, id="", type="table", cell="a"), table, full=True)


def generate(out):
    rng = random.Random(SEED)
    cs = Cases()
    spec_cases(cs)
    rule_cases(cs)
    load_cases(cs)
    random_md_cases(cs, rng, 900)
    random_html_cases(cs, rng, 1300)
    random_html_cases(cs, rng, 250, group="junk", spans=0.5, junk=0.6, unclosed=0.3)
    heading_set_cases(cs, rng, 300)
    long_cases(cs, rng)
    for case in cs.items:
        out.write(json.dumps(case, ensure_ascii=False) + "\n")
    return cs


def build(args):
    with tempfile.TemporaryDirectory() as tmp:
        cases = os.path.join(tmp, "cases.jsonl")
        with open(cases, "w", encoding="utf-8") as f:
            generate(f)
        env = dict(os.environ, PYTHONHASHSEED="0")
        res = subprocess.run([sys.executable, args.tool, args.ref_tree, cases], env=env, capture_output=True, text=True, check=True)
    lines = [json.loads(l) for l in res.stdout.splitlines() if l.strip()]
    bad = 0
    stats = Counter()
    with open(args.out, "w", encoding="utf-8") as f:
        for case in lines:
            expect = case.pop("expect", None)
            if "load_error" in case:
                outcome = "load_error"
            elif case["explanation"].startswith("error:"):
                outcome = "error"
            else:
                outcome = case["passed"]
            if expect is not None and expect != outcome:
                bad += 1
                print(
                    "expectation failed: %s expected %r got %r (%s)"
                    % (case["case"], expect, outcome, case.get("explanation", case.get("load_error"))),
                    file=sys.stderr,
                )
            group = case["case"].split("-")[0]
            stats[(group, {True: "pass", False: "fail"}.get(outcome, outcome))] += 1
            f.write(json.dumps(case, ensure_ascii=False) + "\n")
    groups = sorted({g for g, _ in stats})
    print("%-6s %6s %6s %6s %10s %6s" % ("group", "pass", "fail", "error", "load_error", "total"), file=sys.stderr)
    for g in groups:
        row = [stats[(g, k)] for k in ("pass", "fail", "error", "load_error")]
        print("%-6s %6d %6d %6d %10d %6d" % (g, *row, sum(row)), file=sys.stderr)
    print("cases: %d, expectation mismatches: %d, size: %d bytes" % (len(lines), bad, os.path.getsize(args.out)), file=sys.stderr)
    return 1 if bad else 0


def main():
    global tp
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=["generate", "build"])
    ap.add_argument("--ref-tree", default=DEFAULT_TREE)
    ap.add_argument("--tool", default=DEFAULT_TOOL)
    ap.add_argument("--out", default=os.path.join(HERE, "table_cases.jsonl"))
    args = ap.parse_args()
    sys.path.insert(0, args.ref_tree)
    from olmocr.bench import table_parsing

    tp = table_parsing
    if args.command == "generate":
        generate(sys.stdout)
        return 0
    return build(args)


if __name__ == "__main__":
    sys.exit(main())
