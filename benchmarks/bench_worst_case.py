#!/usr/bin/env python3
"""Worst cases per check type: the slowest inputs we know of, on one thread, one check at a time.

    python benchmarks/bench_worst_case.py [--size 65536] [--repeat 3]

Each case is a (test record, completion) pair built to be expensive for its check: periodic
text against long or nearly matching needles (present/absent/format/order), long repeated
endings (baseline), footnote markers everywhere, tables of many repeated rows and columns,
pages of thousands of equations, macro-expansion bombs and deep nesting (math). Completions are
about `--size` characters (64 kB ≈ 16k tokens, the longest completion GRPO produces here) unless
the case says otherwise. Prints each case's best time over `--repeat` runs (caches are emptied
between cases by giving each case its own test id set; math renders may still be cached
across repeats: the first run is the cold one and is printed too) and the verdict kind.
"""

from __future__ import annotations

import argparse
import json
import random
import time

from olmocr_rl import BenchSuite


def periodic(n: int, unit: str = "ab") -> str:
    return (unit * (n // len(unit) + 1))[:n]


def words(n: int, seed: int = 0) -> str:
    rng = random.Random(seed)
    vocab = "the of model page table order document sparse layout token equation figure results".split()
    out, size = [], 0
    while size < n:
        w = rng.choice(vocab)
        out.append(w)
        size += len(w) + 1
    return " ".join(out)[:n]


def bomb(levels: int, body_len: int) -> str:
    eq = "\\def\\za{" + "x+" * (body_len // 2) + "y}"
    names = ["za"]
    for i in range(1, levels):
        name = "z" + chr(ord("a") + i)
        eq += "\\def\\" + name + "{" + ("\\" + names[-1]) * 4 + "}"
        names.append(name)
    return eq + "\\" + names[-1]


def indels(text: str, share: float, seed: int = 0) -> str:
    """`text` with `share` of its length in random substitutions, insertions and deletions."""
    rng = random.Random(seed)
    chars = list(text)
    for _ in range(int(len(text) * share)):
        i = rng.randrange(len(chars))
        op = rng.randrange(3)
        if op == 0:
            chars[i] = "#"
        elif op == 1:
            del chars[i]
        else:
            chars.insert(i, "#")
    return "".join(chars)


def cases(size: int) -> list[tuple[str, dict, str]]:
    near = periodic(1000) + "c"
    long_words = words(size)
    mid = len(long_words) // 2
    copy = indels(long_words[mid : mid + 5000], 0.125)
    row = "| A | B |\n"
    table_rows = "| A | H |\n|---|---|\n" + row * (size // len(row))
    n_cols = int((size / 4) ** 0.5)
    grid = "\n".join(
        ["| " + " | ".join(f"h{j}" for j in range(n_cols)) + " |", "|" + "---|" * n_cols]
        + ["| " + " | ".join(f"x{(i * j) % 10}" for j in range(n_cols)) + " |" for i in range(n_cols)]
    )
    html = "<table>" + "<tr><td rowspan=2>a</td><td>b</td></tr>" * (size // 40) + "</table>"
    equations = " text ".join(f"$x_{{{i}}}^{{{i % 7}}}$" for i in range(size // 16))
    bombs = " and ".join(f"${bomb(4 + i % 2, 400 + 10 * i)}$" for i in range(size // 2000))
    return [
        ("present: periodic page, near-miss needle", {"type": "present", "text": near}, periodic(size)),
        ("present: words, 1,000-char needle", {"type": "present", "text": words(1000, 1)}, long_words),
        ("present: words, 5,000-char needle", {"type": "present", "text": words(5000, 1)}, long_words),
        ("present: 5,000-char copy with 12% indels", {"type": "present", "text": copy, "max_diffs": 300}, long_words),
        ("absent: periodic page, near-miss needle", {"type": "absent", "text": near}, periodic(size)),
        ("format: bold, periodic page", {"type": "format", "text": near, "format": "bold"}, "**" + periodic(size) + "**"),
        ("order: periodic before/after", {"type": "order", "before": periodic(500), "after": periodic(500, "ba")}, periodic(size)),
        ("order: words", {"type": "order", "before": words(300, 2), "after": words(300, 3)}, long_words),
        ("baseline: one repeated 2-gram", {"type": "baseline"}, periodic(size)),
        ("baseline: repeated 500-char block", {"type": "baseline"}, (words(500, 4) * (size // 500 + 1))[:size]),
        ("footnote: markers everywhere", {"type": "footnote", "marker": "1"}, "[^1] " * (size // 5)),
        ("table: repeated rows, top_heading", {"type": "table", "cell": "B", "top_heading": "A"}, table_rows),
        ("table: square grid, both headings", {"type": "table", "cell": "x5", "top_heading": "h3", "left_heading": "x0"}, grid),
        ("table: HTML rowspans", {"type": "table", "cell": "b", "top_heading": "a", "up": "b"}, html),
        ("math: thousands of equations", {"type": "math", "math": "\\alpha+\\beta=\\gamma"}, equations),
        ("math: macro bombs", {"type": "math", "math": "x+y=z"}, bombs),
        ("math: 400-deep braces", {"type": "math", "math": "x"}, "$" + "{" * 400 + "x" + "}" * 400 + "$"),
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=65536)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(f"{'case':45} {'chars':>7} {'cold':>9} {'best':>9}  verdict")
    for i, (name, record, text) in enumerate(cases(args.size)):
        suite = BenchSuite.from_jsonl(json.dumps({"pdf": "w.pdf", "page": 1, "id": f"w{i}", **record}))
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            r = suite.score([text], [[f"w{i}"]], threads=1, details=True)[0]
            times.append(time.perf_counter() - start)
        res = r.results[0]
        kind = "error" if res.error else ("pass" if res.passed else "fail")
        print(f"{name:45} {len(text):7d} {times[0] * 1000:7.1f}ms {min(times) * 1000:7.1f}ms  {kind}: {res.explanation[:60]!r}")


if __name__ == "__main__":
    main()
