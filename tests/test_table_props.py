"""Table parsing: random HTML-ish tag soup, compared with the reference's own parser.

The comparison needs upstream olmOCR (`olmocr.bench.table_parsing`, which needs bs4): set
OLMOCR_TREE to an extracted upstream tree (see tests/golden/README.md) in an environment with
beautifulsoup4 4.15; otherwise those tests are skipped. The bounded-time test always runs.
"""

import os
import sys
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from olmocr_rl import _core


def _reference():
    tree = os.environ.get("OLMOCR_TREE")
    if not tree:
        return None
    if tree not in sys.path:
        sys.path.insert(0, tree)
    try:
        from olmocr.bench import table_parsing
    except Exception:
        return None
    return table_parsing


tp = _reference()
needs_reference = pytest.mark.skipif(tp is None, reason="set OLMOCR_TREE to an upstream olmocr tree (with bs4)")


def _ref_describe(text: str, markdown: bool):
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


def _ours(text: str, markdown: bool):
    tables = _core._parse_tables(text, markdown)
    for t in tables:
        t.pop("spans")
        t["headings"] = sorted(t["headings"])
    return tables


def _compare(text: str, markdown: bool):
    try:
        expected = _ref_describe(text, markdown)
    except Exception as e:  # the reference raises: so must we
        with pytest.raises(ValueError):
            _core._parse_tables(text, markdown)
        return type(e).__name__
    assert _ours(text, markdown) == expected, repr(text)
    return None


SPAN_VALUES = ["2", "3", "0", " 2 ", "2x", "", "-1", "1_0", "２", "&#50;", "1", "02"]
TAGS = [
    "table",
    "tr",
    "td",
    "th",
    "thead",
    "tbody",
    "tfoot",
    "b",
    "br",
    "p",
    "span",
    "caption",
    "TD",
    "Tr",
    "script",
    "style",
    "pre",
    "template",
    "rt",
    "img",
]


@st.composite
def start_tag(draw):
    name = draw(st.sampled_from(TAGS))
    attrs = ""
    for attr in draw(st.lists(st.sampled_from(["rowspan", "colspan", "ROWSPAN", "class"]), max_size=2)):
        value = draw(st.sampled_from(SPAN_VALUES))
        quote = draw(st.sampled_from(["'", '"', ""]))
        attrs += f" {attr}={quote}{value}{quote}" if quote or (value and " " not in value) else f" {attr}"
    close = draw(st.sampled_from([">", ">", ">", "/>", " >"]))
    return f"<{name}{attrs}{close}"


TEXT = st.sampled_from(
    [
        "a",
        "b c",
        "12",
        " ",
        "\n",
        "x<y",
        "p < q",
        "&amp;",
        "&#65;",
        "&#x42;",
        "&foo;",
        "&copy",
        "&nbsp;",
        "<!-- c -->",
        "<!--",
        "<![CDATA[q]]>",
        "<!doctype html>",
        "<?pi?>",
        "&",
        "<",
        ">",
        "'",
        '"',
        "</>",
        "</ td>",
        "&#",
        "&#12a;",
        "=",
        "/",
        "$x<0.5$",
        "| a | b |",
        "-->",
    ]
)
END_TAG = st.sampled_from(TAGS).map(lambda t: f"</{t}>")
SOUP = st.lists(st.one_of(start_tag(), END_TAG, TEXT), max_size=40).map("".join)


@needs_reference
@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SOUP)
def test_html_soup_matches_reference(text):
    _compare(text, markdown=False)


@needs_reference
@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(["| a | b |", "|---|---|", "| c |", "d | e", "x", "", " | ", "|-|:-:|\r", "| f | g | h |"]), max_size=10).map(
        "\n".join
    )
)
def test_markdown_matches_reference(text):
    _compare(text, markdown=True)


@needs_reference
@pytest.mark.parametrize(
    "text",
    [
        "<table><tr><td>A</td><td rowspan='3'>B</td></tr><tr><td colspan='2'>C</td></tr></table>",
        "<table><tr><td>a<td>b</tr><tr><td>c</td><td>d</td></tr></table>",
        "<table><tr><td>a</td><td><table><tr><td>in1</td><td>in2</td></tr></table></td></tr></table>",
        "where $x<y$ holds.\n\n<table><tr><td>1</td></tr></table>",
        "<table><thead><tr><th colspan=2>H</th></tr><tr><th>a</th><th>b</th></tr></thead><tr><td>1</td><td>2</td></tr></table>",
    ],
)
def test_spec_examples_match_reference(text):
    _compare(text, markdown=False)


@pytest.mark.parametrize(
    "unit",
    ["<td>", "<table><tr><td>", "<div><b>", "<td>x", "<tr><td rowspan=2>", "<a b='", "<!--", "&#1"],
)
def test_ten_megabytes_of_nesting_is_bounded(unit):
    """No panic and a verdict in bounded time (a bound, not a speed test)."""
    from olmocr_rl import BenchSuite

    suite = BenchSuite.from_jsonl('{"pdf": "a.pdf", "page": 1, "id": "t", "type": "table", "cell": "x"}')
    text = unit * (10_000_000 // len(unit))
    start = time.monotonic()
    result = suite.check("t", text)
    assert time.monotonic() - start < 60
    assert not result.passed or result.explanation == ""
