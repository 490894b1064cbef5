"""The Rust text primitives against CPython itself: exhaustive over code points where the
predicate is per character, hypothesis for context-dependent ones and for normalize_text."""

import re
import sys
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from olmocr_rl import _core, normalize_text

py311 = pytest.mark.skipif(
    unicodedata.unidata_version != "14.0.0",
    reason="tables are generated from CPython 3.11 (Unicode 14.0)",
)

ALL = [chr(cp) for cp in range(sys.maxunicode + 1) if not 0xD800 <= cp <= 0xDFFF]


def ref_normalize(s: str) -> str:
    """The reference's normalize_text, step by step (docs/checks.md §2)."""
    s = re.sub(r"<br/?>", " ", s)
    s = re.sub(r"\*\*(.*?)\*\*", r"\1", s)
    s = re.sub(r"__(.*?)__", r"\1", s)
    s = re.sub(r"</?b>", "", s)
    s = re.sub(r"</?i>", "", s)
    s = re.sub(r"(\*\*|__)(.*?)\1", r"\2", s)
    s = re.sub(r"(\*|_)(.*?)\1", r"\2", s)
    s = re.sub(r"\s+", " ", s)
    s = unicodedata.normalize("NFC", s)
    table = {
        "‘": "'",
        "’": "'",
        "‚": "'",
        "“": '"',
        "”": '"',
        "„": '"',
        "＿": "_",
        "–": "-",
        "—": "-",
        "‑": "-",
        "‒": "-",
        "−": "-",
        "\u00b5": "\u03bc",
    }
    for a, b in table.items():
        s = s.replace(a, b)
    return s


@py311
def test_per_character_predicates_exhaustive():
    for start in range(0, len(ALL), 65536):
        chunk = "".join(ALL[start : start + 65536])
        lower, alnum, space, printable, _ = _core._py_compat(chunk)
        assert alnum == [c.isalnum() for c in chunk]
        assert space == [c.isspace() for c in chunk]
        assert printable == [c.isprintable() for c in chunk]


@py311
def test_lower_exhaustive():
    # One character at a time (no Final_Sigma context), joined with a neutral separator.
    for start in range(0, len(ALL), 65536):
        chunk = ALL[start : start + 65536]
        joined = "\x00".join(chunk)
        assert _core._py_compat(joined)[0] == joined.lower()


@py311
def test_nfc_exhaustive_singletons():
    for start in range(0, len(ALL), 65536):
        joined = "\x00".join(ALL[start : start + 65536])
        assert _core._py_compat(joined)[4] == unicodedata.normalize("NFC", joined)


MARKUP = st.sampled_from(
    [
        "*",
        "**",
        "_",
        "__",
        "<br>",
        "<br/>",
        "<br />",
        "<b>",
        "</b>",
        "<i>",
        "</i>",
        "\n",
        " ",
        "\t",
        "\x1c",
        "\u00a0",
        "\u3000",
        "\u200b",
        "e\u0301",
        "\u0301",
        "Σ",
        "ς",
        "İ",
        "ﬁ",
        "“",
        "—",
        "−",
        "µ",
        "＿",
        "a",
        "B",
        "1",
    ]
)
MIXED = st.lists(st.one_of(MARKUP, st.text(max_size=4)), max_size=40).map("".join)


@settings(max_examples=4000, deadline=None)
@given(MIXED)
def test_normalize_text_matches_reference(s):
    assert normalize_text(s) == ref_normalize(s)


@settings(max_examples=2000, deadline=None)
@given(st.text())
def test_normalize_text_random_unicode(s):
    assert normalize_text(s) == ref_normalize(s)


@py311
@settings(max_examples=3000, deadline=None)
@given(st.one_of(MIXED, st.text()))
def test_lower_and_nfc_with_context(s):
    lower, *_, nfc = _core._py_compat(s)
    assert lower == s.lower()
    assert nfc == unicodedata.normalize("NFC", s)


@settings(max_examples=2000, deadline=None)
@given(st.floats(allow_nan=False) | st.floats(min_value=-2, max_value=2))
def test_float_formatting_like_python(x):
    # Threshold reprs and ratios in explanations are printed through these.
    assert _core._fmt_float(x) == (repr(x), f"{x:.3f}", f"{x:.2f}")
