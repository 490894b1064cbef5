"""The medoid reward of one GRPO step: 8 pages x 28 sampled completions of 3-8k characters
(each a copy of its page with the edits sampling makes: a few dozen character substitutions,
insertions and deletions, and now and then a dropped or repeated paragraph).

    python benchmarks/bench_medoid.py [--threads N] [--repeats 5] [--seed 0] [--olmocr-tree /tmp/ref/tree]

Prints the median wall time of `_core.medoid_rewards` for the step (per page group, every
pairwise Levenshtein distance in Rust, pairs in parallel), and with --olmocr-tree the time of
upstream's own `medoid_reward` (read from that checkout's olmocr/train/grpo_train.py at run time,
never stored here; it needs rapidfuzz) on the same page groups, one after another, with the
ratio; and checks that both give the same rewards.
"""

from __future__ import annotations

import argparse
import ast
import logging
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_text_checks import make_page


def sample(rng: random.Random, page: str) -> str:
    paras = page.split("\n\n")
    if rng.random() < 0.25:
        del paras[rng.randrange(len(paras))]  # a skipped paragraph
    if rng.random() < 0.15:
        i = rng.randrange(len(paras))
        paras.insert(i, paras[i])  # a repeated one
    chars = list("\n\n".join(paras))
    for _ in range(rng.randint(0, 60)):
        i = rng.randrange(len(chars))
        op = rng.random()
        if op < 0.5:
            chars[i] = rng.choice("xyzq ,.")
        elif op < 0.75:
            del chars[i]
        else:
            chars.insert(i, rng.choice("xyzq ,."))
    return "".join(chars)


def workload(seed: int = 0) -> tuple[list[str], list[int]]:
    rng = random.Random(seed)
    texts, groups = [], []
    for p in range(8):
        page = make_page(rng)
        while len(page) < 3000:
            page += "\n\n" + make_page(rng)
        page = page[:8000]
        for _ in range(28):
            texts.append(sample(rng, page))
            groups.append(p)
    return texts, groups


def upstream_medoid(tree: str):
    """`medoid_reward` from the upstream checkout, executed from its source text."""
    source = (Path(tree) / "olmocr" / "train" / "grpo_train.py").read_text()
    node = next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == "medoid_reward")
    from rapidfuzz import distance

    namespace = {"distance": distance, "logger": logging.getLogger("upstream"), "Optional": None}
    exec(compile(ast.Module(body=[node], type_ignores=[]), "grpo_train.py", "exec"), namespace)
    return namespace["medoid_reward"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--olmocr-tree")
    ap.add_argument("--seed", type=int, default=0, help="another draw of the same kind of workload")
    args = ap.parse_args()

    from olmocr_rl import _core

    texts, groups = workload(args.seed)
    lengths = sorted(map(len, texts))
    print(f"workload: {len(set(groups))} pages x 28 completions, {lengths[0]}-{lengths[-1]} characters, "
          f"{len(set(groups)) * 28 * 27 // 2} pairs")  # fmt: skip
    times = []
    for _ in range(args.repeats):
        t = time.perf_counter()
        ours = _core.medoid_rewards(texts, groups, args.threads)
        times.append(time.perf_counter() - t)
    ours_s = statistics.median(times)
    print(f"olmocr-rl  medoid rewards of the step: {ours_s * 1000:8.1f} ms (median of {args.repeats})")
    if not args.olmocr_tree:
        return
    reference = upstream_medoid(args.olmocr_tree)
    t = time.perf_counter()
    theirs = []
    for g in sorted(set(groups)):
        theirs += reference(None, [x for x, y in zip(texts, groups) if y == g])
    ref_s = time.perf_counter() - t
    ours_by_group = [r for g in sorted(set(groups)) for r, y in zip(ours, groups) if y == g]
    same = ours_by_group == theirs
    print(f"upstream   medoid_reward per page group: {ref_s * 1000:8.1f} ms (one run)")
    print(f"ratio      {ref_s / ours_s:.0f}x   rewards identical: {same}")
    if not same:
        raise SystemExit("rewards differ")


if __name__ == "__main__":
    main()
