"""Throughput of the text checks: olmocr-rl's Rust core vs the olmOCR-bench reference.

    python benchmarks/bench_text_checks.py [--olmocr-tree DIR] [--pages 40] [--seed 0] [--guard none]

Builds OCR-like pages of 2-8k characters with present/absent/order/baseline/format/footnote
tests on each (exact, perturbed and missing queries), then times, per check on one core:
  * ours, one `suite.check(id, text)` call per (test, page) -- normalizes the page every call;
  * ours, `suite.check_batch` one page at a time -- the reward path (page normalized once);
  * the reference `test.run(text)` from an upstream checkout (if --olmocr-tree is given and its
    dependencies are importable: rapidfuzz, fuzzysearch, tqdm, playwright),
and prints the ratios. Verdicts of both are compared on every pair as a sanity check.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys

from timing import per_call

os.environ.setdefault("RAYON_NUM_THREADS", "1")  # per-core figures

WORDS = (
    "the of model page table reading order document attention sparse layout token equation "
    "figure results method baseline dense accuracy scanned column footnote section transformer "
    "analysis data training evaluation benchmark précis naïve Ölçek résumé"
).split()


def paragraph(rng: random.Random, n_words: int) -> str:
    words = [rng.choice(WORDS) for _ in range(n_words)]
    for i in range(0, len(words), rng.randint(7, 15)):
        words[i] = words[i].capitalize()
    if rng.random() < 0.3:
        i = rng.randrange(len(words))
        words[i] = f"**{words[i]}**"
    if rng.random() < 0.3:
        i = rng.randrange(len(words))
        words[i] = f"*{words[i]}*"
    return " ".join(words) + "."


def make_page(rng: random.Random) -> str:
    target = rng.randint(2000, 8000)
    parts = [f"# {paragraph(rng, 5)}"]
    while sum(map(len, parts)) < target:
        if rng.random() < 0.15:
            parts.append(f"## {rng.randint(1, 9)} {paragraph(rng, 3)}")
        parts.append(paragraph(rng, rng.randint(30, 90)) + ("[^1]" if rng.random() < 0.1 else ""))
    return "\n\n".join(parts)


def perturb(rng: random.Random, s: str, k: int) -> str:
    chars = list(s)
    for _ in range(k):
        i = rng.randrange(len(chars))
        chars[i] = rng.choice("xyzq")
    return "".join(chars)


def make_tests(rng: random.Random, page: str, pid: int) -> list[dict]:
    flat = " ".join(page.replace("*", "").replace("#", "").split())
    tests = []

    def snippet(n: int) -> str:
        i = rng.randrange(0, max(1, len(flat) - n))
        return flat[i : i + n].strip() or "the"

    for j in range(8):
        q = snippet(rng.randint(20, 80))
        kind = rng.choice(["exact", "perturbed", "missing"])
        if kind == "perturbed":
            q = perturb(rng, q, 2)
        elif kind == "missing":
            q = perturb(rng, q, len(q) // 3)
        t = {"type": "present" if j % 3 else "absent", "text": q, "max_diffs": rng.choice([0, 1, 3])}
        tests.append(t)
    for _ in range(4):
        a, b = snippet(30), snippet(30)
        tests.append({"type": "order", "before": a, "after": b, "max_diffs": rng.choice([0, 2, 5])})
    tests.append({"type": "baseline"})
    tests.append({"type": "format", "text": snippet(15), "format": rng.choice(["heading", "bold", "italic"])})
    tests.append({"type": "footnote", "marker": "1", "appears_before_marker": snippet(12)})
    for j, t in enumerate(tests):
        t.update(pdf=f"p{pid}.pdf", page=1, id=f"p{pid}-{j}")
    return tests


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--olmocr-tree", help="extracted upstream allenai/olmocr checkout")
    ap.add_argument("--pages", type=int, default=40)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--guard", default="none", help="the checks' rule set: none (published) or short-output (PR #462)")
    args = ap.parse_args()

    from olmocr_rl import BenchSuite

    rng = random.Random(args.seed)
    pages = [make_page(rng) for _ in range(args.pages)]
    tests = [make_tests(rng, p, i) for i, p in enumerate(pages)]
    records = [t for ts in tests for t in ts]
    suite = BenchSuite.from_jsonl("\n".join(json.dumps(t) for t in records), guard=args.guard)
    pairs = [(t, pages[i]) for i, ts in enumerate(tests) for t in ts]
    by_type: dict[str, list] = {}
    for t, p in pairs:
        by_type.setdefault(t["type"], []).append((t, p))

    ref = None
    if args.olmocr_tree:
        sys.path.insert(0, args.olmocr_tree)
        try:
            from olmocr.bench.tests import load_single_test

            ref = {t["id"]: load_single_test(dict(t)) for t in records}
        except ImportError as e:
            print(f"reference not importable ({e}); timing ours only")

    print(f"{len(pages)} pages of {min(map(len, pages))}-{max(map(len, pages))} chars, {len(pairs)} (test, page) pairs")
    print(f"{'type':10} {'pairs':>5} {'ours check()':>14} {'ours batch':>12} {'reference':>12} {'ratio':>8} {'ratio batch':>12}")
    mismatches = 0
    for kind, items in sorted(by_type.items()):
        ours = per_call(lambda: [suite.check(t["id"], p) for t, p in items]) / len(items)
        groups: dict[str, list[str]] = {}
        for t, p in items:
            groups.setdefault(p, []).append(t["id"])
        batch_pages = list(groups.items())
        ours_batch = per_call(lambda: [suite.check_batch([bp]) for bp in batch_pages]) / len(items)
        line = f"{kind:10} {len(items):5} {ours * 1e6:11.1f} µs {ours_batch * 1e6:9.1f} µs"
        if ref is not None:
            theirs = per_call(lambda: [ref[t["id"]].run(p) for t, p in items]) / len(items)
            for t, p in items:
                mismatches += suite.check(t["id"], p).passed != ref[t["id"]].run(p)[0]
            line += f" {theirs * 1e6:9.1f} µs {theirs / ours:7.0f}x {theirs / ours_batch:11.0f}x"
        print(line)
    # The reward path: every test of a page in one call (the page is normalized once).
    page_calls = [(pages[i], [t["id"] for t in ts]) for i, ts in enumerate(tests)]
    ours_page = per_call(lambda: [suite.check_batch([pc]) for pc in page_calls]) / len(pairs)
    line = f"{'all/page':10} {len(pairs):5} {'':>14} {ours_page * 1e6:9.1f} µs"
    if ref is not None:
        theirs = per_call(lambda: [ref[t["id"]].run(p) for t, p in pairs]) / len(pairs)
        line += f" {theirs * 1e6:9.1f} µs {'':>8} {theirs / ours_page:11.0f}x"
        print(line)
        print(f"verdict mismatches vs reference: {mismatches}")
    else:
        print(line)


if __name__ == "__main__":
    main()
