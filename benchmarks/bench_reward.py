"""Reward latency of one realistic GRPO step: 8 prompts x 28 completions of 3-8k characters,
~20 olmOCR-bench tests per page (present/absent/order/baseline/format/footnote/table).

    python benchmarks/bench_reward.py [--threads N] [--repeats 5]

Prints the median wall time of one `BenchReward(...)` call (the whole step's rewards) next to
the time the reference's Python checks take for the same (completion, test) pairs, run one
after another on one core (pass --olmocr-tree to measure it; the reference needs rapidfuzz,
fuzzysearch, bs4, tqdm and playwright importable).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_text_checks import make_page, make_tests, perturb


def table_html(rng: random.Random, rows: int, cols: int) -> tuple[str, list[list[str]]]:
    cells = [[f"{rng.choice(['a', 'b', 'x', 'val'])}{r}{c}" for c in range(cols)] for r in range(rows)]
    body = "".join("<tr>" + "".join(f"<td>{v}</td>" for v in row) + "</tr>" for row in cells)
    return f"<table>{body}</table>", cells


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument(
        "--guard", default=None, help="none, short-output or short-output+footnote (default: BenchReward's, the training guard)"
    )
    ap.add_argument("--olmocr-tree")
    args = ap.parse_args()

    from olmocr_rl import BenchReward, BenchSuite

    rng = random.Random(0)
    records, prompts = [], []
    for p in range(8):
        page = make_page(rng)
        html, cells = table_html(rng, 8, 5)
        page = page + "\n\n" + html
        tests = make_tests(rng, page, p)
        for j in range(4):
            r, c = rng.randrange(1, 8), rng.randrange(1, 5)
            tests.append(
                {
                    "type": "table",
                    "cell": cells[r][c],
                    "up": cells[r - 1][c],
                    "left": cells[r][c - 1],
                    "pdf": f"p{p}.pdf",
                    "page": 1,
                    "id": f"p{p}-t{j}",
                }
            )
        records += tests
        prompts.append((page, [t["id"] for t in tests]))
    suite = BenchSuite.from_jsonl("\n".join(json.dumps(t) for t in records))
    completions, test_ids = [], []
    for page, ids in prompts:
        for _ in range(28):  # sampled completions: the page with a few random edits
            completions.append(perturb(rng, page, rng.randint(0, 40)))
            test_ids.append(ids)
    reward = BenchReward(suite, threads=args.threads) if args.guard is None else BenchReward(suite, threads=args.threads, guard=args.guard)
    n_pairs = sum(map(len, test_ids))
    times = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        reward(prompts=[None] * len(completions), completions=completions, test_ids=test_ids)
        times.append(time.perf_counter() - t0)
    ours = statistics.median(times)
    print(
        f"{len(completions)} completions of {min(map(len, completions))}-{max(map(len, completions))} chars, "
        f"{n_pairs} (completion, test) pairs"
    )
    print(f"olmocr-rl BenchReward (guard {reward.guard}): {ours * 1e3:.1f} ms per step (median of {args.repeats})")
    if args.olmocr_tree:
        sys.path.insert(0, args.olmocr_tree)
        from olmocr.bench.tests import load_single_test

        ref = {t["id"]: load_single_test(dict(t)) for t in records}
        t0 = time.perf_counter()
        for c, ids in zip(completions, test_ids):
            for i in ids:
                try:
                    ref[i].run(c)
                except Exception:
                    pass
        theirs = time.perf_counter() - t0
        print(f"reference checks, one core: {theirs * 1e3:.0f} ms per step; ratio {theirs / ours:.0f}x")


if __name__ == "__main__":
    main()
