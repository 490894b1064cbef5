"""rust/fuzz.rs (`_core.ratio`, `_core.partial_ratio`) against RapidFuzz 3.14.6 itself:
the results must be the same doubles, bit for bit, on random Unicode text.

Strings are drawn from several alphabets: tiny ones (many repeats, many near-ties), ASCII
prose, mixed BMP / astral code points, and hypothesis' default text (any code point except
lone surrogates, which a Rust `char` cannot hold). Some pairs plant a mutated copy of the
shorter string inside the longer one, so near matches and exact occurrences are frequent;
equal lengths (both partial_ratio directions) and needles around the 64-character machine
word boundaries are generated on purpose.
"""

import struct

from hypothesis import given, settings
from hypothesis import strategies as st
from rapidfuzz import fuzz

from olmocr_rl import _core

EXAMPLES = settings(max_examples=3000, deadline=None)


def bits(x: float) -> int:
    """The IEEE-754 bit pattern, so 0.0 / -0.0 or a one-ulp difference cannot slip through."""
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def same(got: float, want: float) -> bool:
    return type(got) is float and bits(got) == bits(want)


ALPHABETS = [
    "ab",
    "abc",
    "ab ",
    "abcdefgh",
    "the quick brown fox jumps over a lazy dog",
    "0123456789.,-+ ",
    "aé€𝄞",  # 1-, 2-, 3- and 4-byte UTF-8, astral plane
    "αβγδ日本語の",
    "a\u0301e\u0308o\u200b",  # combining marks and a zero-width space: code points count
]

small_text = st.sampled_from(ALPHABETS).flatmap(lambda alpha: st.text(alphabet=alpha, max_size=80))
any_text = st.text(max_size=80)  # every code point but surrogates
texts = st.one_of(small_text, small_text, any_text)


@st.composite
def planted(draw):
    """(needle, haystack) with an edited copy of the needle somewhere in the haystack."""
    alpha = draw(st.sampled_from(ALPHABETS))
    needle = draw(st.text(alphabet=alpha, min_size=1, max_size=draw(st.sampled_from([8, 40, 70, 140]))))
    piece = list(needle)
    for _ in range(draw(st.integers(0, 4))):
        if not piece:
            break
        i = draw(st.integers(0, len(piece) - 1))
        op = draw(st.sampled_from(["sub", "del", "ins"]))
        c = draw(st.sampled_from(alpha))
        if op == "sub":
            piece[i] = c
        elif op == "del":
            del piece[i]
        else:
            piece.insert(i, c)
    piece = "".join(piece)
    left = draw(st.text(alphabet=alpha, max_size=120))
    right = draw(st.text(alphabet=alpha, max_size=120))
    hay = left + piece + right
    if draw(st.booleans()):
        # Cut the haystack so the match may hang off one end.
        cut = draw(st.integers(0, len(hay)))
        hay = hay[cut:] if draw(st.booleans()) else hay[:cut]
    return needle, hay


@st.composite
def equal_lengths(draw):
    alpha = draw(st.sampled_from(ALPHABETS))
    n = draw(st.integers(0, 90))
    a = draw(st.text(alphabet=alpha, min_size=n, max_size=n))
    b = draw(st.text(alphabet=alpha, min_size=n, max_size=n))
    return a, b


@st.composite
def word_boundary(draw):
    """Needles of 63..65, 127..129, 191..193 characters (one to four machine words)."""
    alpha = draw(st.sampled_from(ALPHABETS[:5]))
    m = draw(st.sampled_from([1, 63, 64, 65, 127, 128, 129, 191, 192, 193, 256, 257]))
    needle = draw(st.text(alphabet=alpha, min_size=m, max_size=m))
    hay = draw(st.text(alphabet=alpha, max_size=2 * m + 20))
    if draw(st.booleans()) and len(hay) >= 1:
        at = draw(st.integers(0, len(hay)))
        hay = hay[:at] + needle[: draw(st.integers(0, m))] + hay[at:]
    return needle, hay


def check_pair(a: str, b: str) -> None:
    want_r = fuzz.ratio(a, b)
    got_r = _core.ratio(a, b)
    assert same(got_r, want_r), (a, b, got_r, want_r)
    want_p = fuzz.partial_ratio(a, b)
    got_p = _core.partial_ratio(a, b)
    assert same(got_p, want_p), (a, b, got_p, want_p)
    # Both functions are symmetric, in RapidFuzz and here.
    assert same(_core.ratio(b, a), fuzz.ratio(b, a)), (b, a)
    assert same(_core.partial_ratio(b, a), fuzz.partial_ratio(b, a)), (b, a)


@EXAMPLES
@given(texts, texts)
def test_random_pairs(a, b):
    check_pair(a, b)


@EXAMPLES
@given(planted())
def test_planted_near_matches(pair):
    check_pair(*pair)


@EXAMPLES
@given(equal_lengths())
def test_equal_lengths(pair):
    check_pair(*pair)


@settings(max_examples=500, deadline=None)
@given(word_boundary())
def test_needles_around_word_boundaries(pair):
    check_pair(*pair)


def test_spec_examples():
    assert _core.ratio("abc", "") == 0.0
    assert _core.ratio("", "") == 100.0
    assert _core.partial_ratio("", "") == 100.0
    assert _core.partial_ratio("a", "") == 0.0
    assert _core.partial_ratio("Hello world", "world") == 100.0
    assert same(_core.partial_ratio("aaaabaa", "bcaaaca"), fuzz.partial_ratio("aaaabaa", "bcaaaca"))
    assert abs(_core.partial_ratio("aaaabaa", "bcaaaca") - 72.72727272727273) < 1e-12
    # docs/checks.md §3.0.3: a 12-character query with one substitution scores 91.66666666666666, and
    # 91.66666666666666 / 100 < 1 - 1/12.
    r = _core.partial_ratio("abcdefghijkl", "xxxx abcdefXhijkl yyyy")
    assert same(r, 91.66666666666666)
    assert r / 100.0 < 1.0 - 1 / 12
