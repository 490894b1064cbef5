"""Throughput of the math check: olmocr-rl (KaTeX in QuickJS, no browser) vs the reference
(KaTeX in headless Chromium), both with a cold equation cache, on the same pairs.

    python benchmarks/bench_math.py [--pairs 200] [--seed 0]
        [--olmocr-tree DIR --reference-python /path/to/ref/venv/bin/python]

The (math test, completion) pairs come from `make_pairs` in benchmarks/bench_math_reference.py
(distinct formulas, so no cache helps; 1-5 equations per completion). A check here is what the
reference times too: load the test record (which renders its formula there) and run it on the
completion. Ours runs on one thread in a fresh process (empty render memo); the first KaTeX
load of the thread (~30 ms) is reported separately. With --olmocr-tree the reference benchmark
runs in a subprocess (its own venv: playwright, chromium) and the ratio is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("OLMOCR_RL_THREADS", "1")  # per-core figures
HERE = Path(__file__).resolve().parent


def pairs(seed: int, n: int) -> list[tuple[dict, str]]:
    sys.path.insert(0, str(HERE))
    try:
        from bench_math_reference import make_pairs
    except ImportError:
        raise SystemExit("bench_math: benchmarks/bench_math_reference.py (the shared pair generator) is missing") from None

    return make_pairs(seed, n)


def ours(pairs_: list[tuple[dict, str]]) -> tuple[float, float, float, int]:
    from olmocr_rl import BenchSuite, _core

    problem = _core.katex_problem()  # loads KaTeX into this thread's engine
    if problem:
        raise SystemExit(problem)
    t0 = time.perf_counter()
    BenchSuite.from_jsonl(json.dumps(pairs_[0][0])).check(pairs_[0][0]["id"], "$w$")
    init = time.perf_counter() - t0
    passed = 0
    t0, c0 = time.perf_counter(), time.process_time()
    for rec, text in pairs_:
        suite = BenchSuite.from_jsonl(json.dumps(rec))
        passed += suite.check(rec["id"], text).passed
    return time.perf_counter() - t0, time.process_time() - c0, init, passed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--olmocr-tree", help="upstream olmocr checkout: also time the reference")
    ap.add_argument("--reference-python", default=sys.executable, help="python of the reference's venv")
    args = ap.parse_args()
    ps = pairs(args.seed, args.pairs)
    wall, cpu, init, passed = ours(ps)
    n = len(ps)
    print(
        f"olmocr-rl math check, cold memo, 1 thread: {n} checks ({passed} pass) in {wall:.3f} s "
        f"(+{1000 * init:.0f} ms first KaTeX load), load average {os.getloadavg()[0]:.1f}"
    )
    print(f"  {n / wall:.0f} checks/s, {1000 * wall / n:.2f} ms/check wall, {1000 * cpu / n:.2f} ms CPU/check")
    if not args.olmocr_tree:
        return
    out = subprocess.run(
        [
            args.reference_python,
            str(HERE / "bench_math_reference.py"),
            "--olmocr-tree",
            args.olmocr_tree,
            "--pairs",
            str(args.pairs),
            "--seed",
            str(args.seed),
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    print("\n".join(line for line in out.splitlines() if line.startswith(("reference", "  "))))
    m = re.search(r"([0-9.]+) checks/s", out)
    c = re.search(r"checks \((\d+) pass\)", out)
    u = re.search(r"(\d+) ms CPU/check", out)
    if m:
        print(f"speed-up, wall (ours on one thread vs the reference): {n / wall / float(m.group(1)):.0f}x")
    if u:
        print(f"speed-up, CPU per check (ours vs reference Python + Chromium): {float(u.group(1)) * n / 1000 / cpu:.0f}x")
    if c and int(c.group(1)) != passed:
        print(f"note: verdicts differ in count: reference {c.group(1)} pass, ours {passed}")


if __name__ == "__main__":
    main()
