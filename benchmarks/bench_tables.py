"""Throughput of the table check: olmocr-rl's Rust core vs the olmOCR-bench reference.

    python benchmarks/bench_tables.py [--olmocr-tree DIR] [--pages 40] [--seed 0]

Builds OCR-like pages of 2-8k characters holding one to three tables (HTML with spans and
headers, or markdown; 4-30 rows of 2-8 columns) among paragraphs, with eight table tests per
page (exact, perturbed and missing cells; up/down/left/right/top_heading/left_heading
relations, right and wrong), then times (wall time, `benchmarks/timing.py`), per test on one thread (RAYON_NUM_THREADS=1):
  * ours, one `suite.check(id, text)` call per (test, page): parses the page's tables every call;
  * ours, `suite.check_batch` one page at a time, and all pages in one call (the reward path);
  * the reference `TableTest.run(text)` from an upstream checkout (if --olmocr-tree is given and
    its dependencies are importable: beautifulsoup4, rapidfuzz, fuzzysearch, tqdm, playwright),
and prints the ratios. Verdicts and explanations are compared on every pair as a sanity check.
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
    "the of model page table reading order document results method baseline accuracy scanned "
    "column section analysis data training evaluation benchmark précis naïve résumé"
).split()
HEADS = ["Model", "Params", "Accuracy", "F1", "Year", "Country", "Revenue", "Cost", "Mean", "SD", "n", "p-value"]


def cell(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.4:
        return f"{rng.uniform(0, 1000):.{rng.randint(0, 2)}f}"
    if r < 0.8:
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 3)))
    return rng.choice(HEADS)


def html_table(rng: random.Random, rows: int, cols: int) -> str:
    out = ["<table>", "<thead><tr>" + "".join(f"<th>{rng.choice(HEADS)}</th>" for _ in range(cols)) + "</tr></thead>"]
    for _ in range(rows):
        tds, c = [], 0
        while c < cols:
            span = ""
            if rng.random() < 0.05 and c + 1 < cols:
                span, c = ' colspan="2"', c + 1
            elif rng.random() < 0.03:
                span = ' rowspan="2"'
            text = cell(rng)
            if rng.random() < 0.1:
                text = f"<b>{text}</b>"
            tds.append(f"<td{span}>{text}</td>")
            c += 1
        out.append("<tr>" + "".join(tds) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


def md_table(rng: random.Random, rows: int, cols: int) -> str:
    lines = ["| " + " | ".join(rng.choice(HEADS) for _ in range(cols)) + " |", "|" + "---|" * cols]
    lines += ["| " + " | ".join(cell(rng) for _ in range(cols)) + " |" for _ in range(rows)]
    return "\n".join(lines)


def make_page(rng: random.Random) -> str:
    parts = [f"# {' '.join(rng.choice(WORDS) for _ in range(4))}"]
    target = rng.randint(2000, 8000)
    for _ in range(rng.randint(1, 3)):
        rows, cols = rng.randint(4, 30), rng.randint(2, 8)
        parts.append(html_table(rng, rows, cols) if rng.random() < 0.6 else md_table(rng, rows, cols))
        parts.append(" ".join(rng.choice(WORDS) for _ in range(rng.randint(20, 80))) + ".")
    while sum(map(len, parts)) < target:
        parts.append(" ".join(rng.choice(WORDS) for _ in range(rng.randint(30, 90))) + ".")
    return "\n\n".join(parts)


def make_tests(rng: random.Random, page: str, pid: int, tp) -> list[dict]:
    tables = tp.parse_markdown_tables(page) + tp.parse_html_tables(page) if tp else []
    tests = []
    for j in range(8):
        t: dict = {"type": "table"}
        if tables:
            table = rng.choice(tables)
            key = rng.choice(list(table.cell_text))
            kind = rng.random()
            text = table.cell_text[key] or "x"
            t["cell"] = text if kind < 0.6 else (text[:-1] + "q" if kind < 0.8 else "missing cell")
            for rel in rng.sample(["up", "down", "left", "right", "top_heading", "left_heading"], rng.randint(0, 2)):
                if rel.endswith("heading"):
                    fn = table.top_heading_relations if rel == "top_heading" else table.left_heading_relations
                    near = sorted(fn(*key))
                else:
                    near = sorted(getattr(table, rel + "_relations")[key])
                t[rel] = table.cell_text[rng.choice(near)] if near and rng.random() < 0.7 else cell(rng)
        else:
            t["cell"] = cell(rng)
        t["max_diffs"] = rng.choice([0, 0, 1, 2])
        t.update(pdf=f"p{pid}.pdf", page=1, id=f"p{pid}-{j}")
        tests.append(t)
    return tests


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--olmocr-tree", help="extracted upstream allenai/olmocr checkout")
    ap.add_argument("--pages", type=int, default=40)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    from olmocr_rl import BenchSuite

    tp = load_single_test = None
    if args.olmocr_tree:
        sys.path.insert(0, args.olmocr_tree)
        try:
            from olmocr.bench import table_parsing as tp
            from olmocr.bench.tests import load_single_test
        except ImportError as e:
            print(f"reference not importable ({e}); timing ours only")
            tp = load_single_test = None

    rng = random.Random(args.seed)
    pages = [make_page(rng) for _ in range(args.pages)]
    tests = [make_tests(rng, p, i, tp) for i, p in enumerate(pages)]
    records = [t for ts in tests for t in ts]
    suite = BenchSuite.from_jsonl("\n".join(json.dumps(t) for t in records))
    pairs = [(t, pages[i]) for i, ts in enumerate(tests) for t in ts]
    print(f"{len(pages)} pages of {min(map(len, pages))}-{max(map(len, pages))} chars, {len(pairs)} (test, page) pairs")

    ours = per_call(lambda: [suite.check(t["id"], p) for t, p in pairs]) / len(pairs)
    batch_pages = [(p, [t["id"] for t in ts]) for p, ts in zip(pages, tests)]
    ours_batch = per_call(lambda: [suite.check_batch([bp]) for bp in batch_pages]) / len(pairs)
    print(f"ours   suite.check():      {ours * 1e6:9.1f} µs per test")
    ours_all = per_call(lambda: suite.check_batch(batch_pages)) / len(pairs)
    print(f"ours   suite.check_batch(): {ours_batch * 1e6:8.1f} µs per test (one page per call)")
    print(f"ours   suite.check_batch(): {ours_all * 1e6:8.1f} µs per test (all pages in one call)")
    if load_single_test is None:
        return
    ref = {t["id"]: load_single_test(dict(t)) for t in records}
    theirs = per_call(lambda: [ref[t["id"]].run(p) for t, p in pairs]) / len(pairs)
    print(f"reference TableTest.run(): {theirs * 1e6:8.1f} µs per test")
    print(
        f"ratio: {theirs / ours:.0f}x (check), {theirs / ours_batch:.0f}x (check_batch per page), "
        f"{theirs / ours_all:.0f}x (check_batch of all pages), per core"
    )
    passed = sum(ref[t["id"]].run(p)[0] for t, p in pairs)
    mismatches = sum((suite.check(t["id"], p).passed, suite.check(t["id"], p).explanation) != tuple(ref[t["id"]].run(p)) for t, p in pairs)
    print(f"reference passes {passed}/{len(pairs)}; verdict or explanation mismatches: {mismatches}")


if __name__ == "__main__":
    main()
