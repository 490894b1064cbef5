"""Time the reference olmOCR-bench `math` check (KaTeX 0.16.21 in headless Chromium) with a cold
equation cache, on a realistic set of (math test, completion) pairs.

    /work/ref/venv/bin/python benchmarks/bench_math_reference.py --olmocr-tree /work/ref/olmocr \
        [--pairs 200] [--seed 0] [--tool-dir /work/shared/tools]
    python benchmarks/bench_math_reference.py --dump pairs.jsonl    # the same pairs, for other tools

Each pair is one math test record (a formula from arXiv-like templates, distinct across tests so
the cache cannot help) and one completion: a short markdown page with 1-5 delimited equations,
where the test's formula appears verbatim, rewritten (spacing, braces, \\over, \\left), changed, or
not at all. A check is `load_single_test(record)` (renders the reference formula) plus
`test.run(completion)`, as the GRPO reward does for a fresh test. The reference's SQLite cache is
pointed at a new empty directory first, so every render is cold. Checks run one after another
from one Python thread (the reference renders in its own executor thread with one browser).

Prints checks/s, ms/check (wall), and the CPU seconds the run cost (this process plus Chromium).
Use `make_pairs` from this file for the project's own benchmark so both time the same work.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time

SYMS = ["x", "y", "z", "t", "a", "b", "u", "v", r"\alpha", r"\beta", r"\theta", r"\lambda", r"\mu", r"\sigma"]
TEMPLATES = [
    r"{s}_{{{i}}}^{{{k}}} + {t}_{{{j}}}",
    r"\frac{{{s} + {k}}}{{{t} - {j}}}",
    r"\sum_{{i={i}}}^{{{k}}} {s}_i {t}^{{{j}}}",
    r"\int_{{{i}}}^{{{k}}} {s}({t})\,d{t}",
    r"\left( {s} + {t} \right)^{{{k}}} = {j}",
    r"\sqrt{{{s}^{{{k}}} + {t}^{{{j}}}}}",
    r"{s} \leq \frac{{{i}}}{{{k}}} {t}",
    r"\begin{{pmatrix}} {s} & {i} \\ {j} & {t} \end{{pmatrix}}",
    r"\mathbb{{E}}[{s}_{{{i}}}] = {k} {t}",
    r"f_{{{i}}}({s}) = \begin{{cases}} {k} & {s} > {j} \\ {t} & \text{{otherwise}} \end{{cases}}",
    r"\lim_{{{s} \to {i}}} \frac{{{t}^{{{k}}}}}{{{s}}} = {j}",
    r"\hat{{{s}}}_{{{i}}} = \operatorname{{argmax}}_{{{t}}} L_{{{k}}}",
]
OTHER = [
    r"y = mx + b",
    r"n \geq 1",
    r"p < 0.05",
    r"\Delta t",
    r"\sigma^2",
    r"\mathcal{O}(n \log n)",
    r"t \in [0, T]",
    r"V = IR",
    r"\pi r^2",
    r"e^{-x}",
]


def formula(rng: random.Random, n: int) -> str:
    s, t = rng.sample(SYMS, 2)
    return rng.choice(TEMPLATES).format(s=s, t=t, i=n % 10, j=n // 10 % 10, k=n + 2)


def rewrite(rng: random.Random, f: str) -> str:
    """An equivalent-looking rewrite, as a model might produce."""
    f = f.replace(" ", "") if rng.random() < 0.5 else f.replace("+", " + ")
    if rng.random() < 0.4:
        f = f.replace(r"\left(", "(").replace(r"\right)", ")")
    if rng.random() < 0.3:
        f = "{" + f + "}"
    return f


def change(rng: random.Random, f: str) -> str:
    """A near miss: one symbol or digit changed."""
    for a, b in [("+", "-"), ("x", "y"), ("2", "3"), (r"\leq", "<"), ("_", "^")]:
        if a in f and rng.random() < 0.6:
            return f.replace(a, b, 1)
    return f + " + 1"


def completion(rng: random.Random, ref: str) -> str:
    """A short page holding `ref` verbatim, rewritten, changed or not at all, among 0-5 other
    delimited equations."""
    roll = rng.random()
    target = ref if roll < 0.3 else rewrite(rng, ref) if roll < 0.65 else change(rng, ref) if roll < 0.9 else None
    eqs = rng.sample(OTHER, rng.randint(0, 4) if target else rng.randint(1, 5))
    if target:
        eqs.insert(rng.randrange(len(eqs) + 1), target)
    parts = []
    for e in eqs:
        d = rng.choice(["$%s$", "$$%s$$", "\\(%s\\)", "\\[%s\\]", "$$\n%s\n$$"])
        parts.append("Some prose about the model, then %s and more words." % (d % e))
    return "\n\n".join(parts)


def make_pairs(seed: int = 0, n: int = 200) -> list[tuple[dict, str]]:
    rng = random.Random(seed)
    pairs = []
    for i in range(n):
        ref = formula(rng, 1000 * seed + i)
        text = completion(rng, ref)
        record = {"pdf": "bench/math.pdf", "page": 1, "id": "m%04d" % i, "type": "math", "math": ref}
        pairs.append((record, text))
    return pairs


def cpu_seconds_of_tree(root: int) -> float:
    """user+system CPU of a process and all its live descendants, including the children they
    have reaped (Chromium's exited renderers), from Linux /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    parent, cpu = {}, {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                fields = open(f"/proc/{d}/stat").read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parent[int(d)] = int(fields[1])
            cpu[int(d)] = sum(int(x) for x in fields[11:15]) / tick  # utime stime cutime cstime

    def under(p):
        while p > 1:
            if p == root:
                return True
            p = parent.get(p, 0)
        return False

    return sum(c for p, c in cpu.items() if under(p))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--olmocr-tree", help="extracted upstream allenai/olmocr checkout")
    ap.add_argument("--tool-dir", default="/work/shared/tools", help="folder of sitecustomize.py (Debian chromium)")
    ap.add_argument("--pairs", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dump", help="write the pairs as JSONL ({test, text}) and exit")
    args = ap.parse_args()
    pairs = make_pairs(args.seed, args.pairs)
    if args.dump:
        with open(args.dump, "w", encoding="utf-8") as f:
            for rec, text in pairs:
                f.write(json.dumps({"test": rec, "text": text}, ensure_ascii=False) + "\n")
        return
    if not args.olmocr_tree:
        ap.error("--olmocr-tree is required to time the reference")

    home = tempfile.mkdtemp(prefix="bench-math-home-")  # cold cache: ~/.cache/olmocr/bench/equations
    os.environ["HOME"] = home
    sys.path.insert(0, args.tool_dir)
    sys.path.insert(0, args.olmocr_tree)
    import sitecustomize  # noqa: F401  (points playwright at the system chromium)
    from olmocr.bench.katex import render
    from olmocr.bench.tests import load_single_test

    assert render.equation_cache.db_path.startswith(home)
    render.render_equation("w")  # start the browser outside the timed loop
    render.equation_cache.clear()

    cpu0, t0 = cpu_seconds_of_tree(os.getpid()), time.perf_counter()
    passed = 0
    for rec, text in pairs:
        ok, _ = load_single_test(dict(rec)).run(text)
        passed += ok
    wall = time.perf_counter() - t0
    cpu = cpu_seconds_of_tree(os.getpid()) - cpu0
    n = len(pairs)
    print(f"reference math check, cold cache: {n} checks ({passed} pass) in {wall:.1f} s")
    print(
        f"  {n / wall:.2f} checks/s, {1000 * wall / n:.0f} ms/check wall, "
        f"{1000 * cpu / n:.0f} ms CPU/check (Python + Chromium), {os.cpu_count()} cores"
    )
    sys.stdout.flush()
    os._exit(0)  # the reference's browser thread does not always let the interpreter exit


if __name__ == "__main__":
    main()
