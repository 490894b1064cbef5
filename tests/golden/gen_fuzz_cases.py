#!/usr/bin/env python3
"""Generate tests/golden/fuzz_cases.jsonl: differential cases for rust/fuzz.rs.

Run with the reference environment (RapidFuzz 3.14.6), not in CI:

    /work/ref/venv/bin/python tests/golden/gen_fuzz_cases.py [--n 3000] [--seed 20240601] [--out PATH]

Each line is a JSON object {"a", "b", "ratio", "partial_ratio", "ratio_bits",
"partial_ratio_bits"}: the two strings, the RapidFuzz results (Python's float repr is exact),
and the same results as the 16-hex-digit IEEE-754 bit pattern (so the Rust test does not
depend on the JSON float parser being correctly rounded).

`--stress` writes long English-like near-match cases instead (haystacks up to 8000
characters, needles up to 250), for a one-off local run of the Rust test with
`FUZZ_GOLDEN=path cargo test --release golden`.
"""

from __future__ import annotations

import argparse
import json
import random
import struct
import sys
from pathlib import Path

import rapidfuzz
from rapidfuzz import fuzz

WORDS = (
    "the of and to in is that for it as was with be by on not he this are or his from at "
    "which but have an they you were her she there been one all we their has would when if "
    "so no what up out more into some could them other than then now only its about over "
    "also time two may after first new very any these our like well most where just those "
    "made years way how Table Figure 1.5 x^2 = (a+b) \\frac{1}{2} — – “quoted” naïve café"
).split()

ALPHABETS = [
    "ab",
    "abc",
    "abcd",
    "abcdefgh",
    "ab ",
    "aé€𝄞",  # 1-, 2-, 3- and 4-byte UTF-8; astral plane
    "αβγδεζηθ",
    "日本語の文字列テスト",
    "a\u0301e\u0308o",  # combining marks (no normalisation: code points count)
    "0123456789.,-+ ",
    "".join(chr(c) for c in range(0x20, 0x7F)),
    "😀😃😄👍🏽\u200d♂️",
]


def bits(x: float) -> str:
    return "%016x" % struct.unpack("<Q", struct.pack("<d", x))[0]


def rand_str(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def words_text(rng: random.Random, n: int) -> str:
    out: list[str] = []
    total = 0
    while total < n:
        w = rng.choice(WORDS)
        out.append(w)
        total += len(w) + 1
    return " ".join(out)[:n]


def mutate(rng: random.Random, s: str, alphabet: str, rate: float) -> str:
    out: list[str] = []
    for ch in s:
        r = rng.random()
        if r < rate / 3:
            continue  # deletion
        if r < 2 * rate / 3:
            out.append(rng.choice(alphabet))  # substitution
        elif r < rate:
            out.append(ch)
            out.append(rng.choice(alphabet))  # insertion
        else:
            out.append(ch)
    return "".join(out)


def plant(rng: random.Random, needle: str, hay: str, alphabet: str) -> str:
    rate = rng.choice([0.0, 0.03, 0.1, 0.25])
    piece = mutate(rng, needle, alphabet, rate)
    # Sometimes cut the piece so it hangs off either end of the haystack.
    if rng.random() < 0.2 and len(piece) > 1:
        cut = rng.randrange(1, len(piece))
        if rng.random() < 0.5:
            return piece[cut:] + hay
        return hay + piece[:cut]
    pos = rng.randrange(len(hay) + 1)
    return hay[:pos] + piece + hay[pos:]


def make_pair(rng: random.Random, i: int) -> tuple[str, str]:
    kind = i % 10
    alphabet = rng.choice(ALPHABETS)
    if kind == 0:  # tiny strings, exhaustive-ish corner cases
        return rand_str(rng, alphabet, rng.randrange(0, 5)), rand_str(rng, alphabet, rng.randrange(0, 8))
    if kind == 1:  # equal lengths
        n = rng.randrange(0, 60)
        return rand_str(rng, alphabet, n), rand_str(rng, alphabet, n)
    if kind == 2:  # equal lengths, one a mutation of the other
        a = rand_str(rng, alphabet, rng.randrange(1, 80))
        b = mutate(rng, a, alphabet, 0.2)
        b = (b + rand_str(rng, alphabet, len(a)))[: len(a)]
        return a, b
    if kind in (3, 4):  # random, lengths 0..300
        return rand_str(rng, alphabet, rng.randrange(0, 300)), rand_str(rng, alphabet, rng.randrange(0, 300))
    if kind in (5, 6):  # needle planted (mutated) in a haystack
        needle = rand_str(rng, alphabet, rng.randrange(1, 120))
        hay = plant(rng, needle, rand_str(rng, alphabet, rng.randrange(0, 300)), alphabet)
        return (needle, hay) if rng.random() < 0.5 else (hay, needle)
    if kind == 7:  # English-ish text
        hay = words_text(rng, rng.randrange(20, 400))
        if rng.random() < 0.5:
            needle = words_text(rng, rng.randrange(1, 80))
        else:
            start = rng.randrange(len(hay))
            needle = mutate(rng, hay[start : start + rng.randrange(1, 80)], "abcdefghij ", 0.1)
        return needle, hay
    if kind == 8:  # needles around the 64/128/192/256 word boundaries
        m = rng.choice([63, 64, 65, 127, 128, 129, 191, 192, 193, 255, 256, 257, 300])
        needle = rand_str(rng, alphabet, m)
        hay = rand_str(rng, alphabet, rng.randrange(0, 2 * m + 50))
        if rng.random() < 0.6:
            hay = plant(rng, needle, hay, alphabet)
        return needle, hay
    # kind == 9: occasionally long ones, otherwise mixed
    if rng.random() < 0.06:
        hay = words_text(rng, rng.randrange(1000, 3000))
        start = rng.randrange(len(hay))
        needle = mutate(rng, hay[start : start + rng.randrange(5, 250)], "abcdefghijklmnop ", 0.08)
        if rng.random() < 0.3:
            needle = words_text(rng, rng.randrange(5, 250))
        return needle, hay
    return rand_str(rng, alphabet, rng.randrange(0, 40)), rand_str(rng, alphabet, rng.randrange(0, 120))


FIXED = [
    ("", ""),
    ("a", ""),
    ("", "a"),
    ("Hello world", "world"),
    ("aaaabaa", "bcaaaca"),
    ("abcdefghijkl", "xxxx abcdefXhijkl yyyy"),
    ("this is a test", "this is a test!"),
    ("fuzzy wuzzy was a bear", "wuzzy fuzzy was a bear"),
]


def make_stress(rng: random.Random, i: int) -> tuple[str, str]:
    hay = words_text(rng, rng.randrange(200, 8000))
    m = rng.choice([rng.randrange(1, 20), rng.randrange(5, 70), rng.randrange(60, 260)])
    start = rng.randrange(max(1, len(hay) - m))
    piece = hay[start : start + m]
    r = rng.random()
    if r < 0.15:
        needle = words_text(rng, m)  # probably absent
    elif r < 0.3:
        needle = piece  # exact
    else:
        needle = mutate(rng, piece, "abcdefghijklmnopqrstuvwxyz .", rng.choice([0.01, 0.03, 0.08, 0.2]))
    if rng.random() < 0.1:
        # Let the match hang off either end of the haystack.
        hay = hay[start + m // 2 :] if rng.random() < 0.5 else hay[: start + m // 2]
    return (needle, hay) if rng.random() < 0.8 else (hay, needle)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=3000)
    ap.add_argument("--seed", type=int, default=20240601)
    ap.add_argument("--out", type=Path, default=Path(__file__).with_name("fuzz_cases.jsonl"))
    ap.add_argument("--stress", action="store_true", help="long English-like near-match cases")
    args = ap.parse_args()
    if rapidfuzz.__version__ != "3.14.6":
        print(f"warning: rapidfuzz {rapidfuzz.__version__}, golden values are for 3.14.6", file=sys.stderr)
    rng = random.Random(args.seed)
    if args.stress:
        pairs = [make_stress(rng, i) for i in range(args.n)]
    else:
        pairs = list(FIXED) + [make_pair(rng, i) for i in range(args.n - len(FIXED))]
    with open(args.out, "w", encoding="utf-8") as f:
        for a, b in pairs:
            r = fuzz.ratio(a, b)
            p = fuzz.partial_ratio(a, b)
            rec = {
                "a": a,
                "b": b,
                "ratio": r,
                "partial_ratio": p,
                "ratio_bits": bits(r),
                "partial_ratio_bits": bits(p),
            }
            f.write(json.dumps(rec, ensure_ascii=False) + "\n")
    print(f"wrote {len(pairs)} cases to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
