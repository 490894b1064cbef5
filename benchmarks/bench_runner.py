#!/usr/bin/env python3
"""Whole-process speed of `olmocr-rl bench` against the upstream olmOCR-bench runner.

    python benchmarks/bench_runner.py --olmocr-tree DIR [--reference-python PY] [--tests 2000]
                                      [--candidates 2] [--repeats 4] [--runs 3] [--keep DIR]

Generates (seeded) a bench folder in a temporary directory: one-page PDFs, about `--tests`
present/absent/order/format/footnote/baseline tests (no table or math tests) spread over four
JSONL files, and `--candidates` candidate folders with `--repeats` perturbed outputs of every
page, so each test runs on candidates x repeats md files. Then times, as separate processes
(start-up, imports, PDF page counts, reading files, checking, reporting: everything):

  * ours:      olmocr-rl bench DIR --json, and olmocr-rl bench DIR (rich tables, to a pipe)
  * reference: python tests/golden/run_reference_bench.py OLMOCR_TREE -- --dir DIR

and prints the best of `--runs` wall times and the ratio, after checking that both report the
same status per candidate. The reference needs its bench dependencies in --reference-python.

With `--math N` the folder holds N math tests instead (one page each, formulas and completions
from bench_math_reference.py's generator: the formula verbatim, rewritten, changed or absent,
among 0-4 other equations), and the reference runs with a fresh HOME each time, so its
equation cache starts cold (`--tool-dir` holds a sitecustomize.py pointing playwright at the
system Chromium).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench_fixtures"))
sys.path.insert(0, str(REPO / "tests" / "golden"))
from gen_bench_summary import parse  # noqa: E402
from make_pdfs import make_pdf  # noqa: E402

sys.path.insert(0, str(REPO / "benchmarks"))
from bench_math_reference import completion, formula  # noqa: E402

WORDS = (
    "the of model page table reading order document attention sparse layout token equation figure results "
    "method baseline dense accuracy scanned column footnote section transformer analysis data training "
    "evaluation benchmark précis naïve résumé quarterly revenue margin growth forecast committee proposal"
).split()


def sentence(rng: random.Random, n: int) -> str:
    words = [rng.choice(WORDS) for _ in range(n)]
    words[0] = words[0].capitalize()
    return " ".join(words) + "."


def make_page(rng: random.Random) -> tuple[str, list[str], list[str]]:
    """A page of markdown, its heading texts and its paragraphs."""
    headings, paras, parts = [], [], []
    for s in range(rng.randint(2, 4)):
        h = f"{s + 1} {sentence(rng, 3)[:-1]}"
        headings.append(h)
        parts.append(f"## {h}")
        for _ in range(rng.randint(2, 4)):
            p = " ".join(sentence(rng, rng.randint(8, 20)) for _ in range(rng.randint(2, 5)))
            paras.append(p)
            parts.append(p)
    return "\n\n".join(parts), headings, paras


def phrase(rng: random.Random, para: str, n: int = 6) -> str:
    words = para.split()
    i = rng.randrange(max(1, len(words) - n))
    return " ".join(words[i : i + n])


def perturb(rng: random.Random, text: str) -> str:
    """A plausible OCR repeat: typos, a dropped or moved paragraph, bold/italic markup, a
    footnote marker."""
    paras = text.split("\n\n")
    if rng.random() < 0.3 and len(paras) > 3:
        del paras[rng.randrange(1, len(paras))]
    if rng.random() < 0.2 and len(paras) > 3:
        i, j = rng.sample(range(1, len(paras)), 2)
        paras[i], paras[j] = paras[j], paras[i]
    out = []
    for p in paras:
        chars = list(p)
        for _ in range(rng.randint(0, 3)):
            k = rng.randrange(len(chars))
            chars[k] = rng.choice("aeioulnrst ")
        p = "".join(chars)
        if not p.startswith("#") and rng.random() < 0.3:
            w = p.split()
            k = rng.randrange(len(w))
            w[k] = f"**{w[k]}**" if rng.random() < 0.5 else f"*{w[k]}*"
            p = " ".join(w)
        out.append(p)
    text = "\n\n".join(out)
    if rng.random() < 0.5:
        text += "<sup>1</sup>"
    return text


def generate(root: Path, n_tests: int, n_candidates: int, n_repeats: int, seed: int = 0) -> int:
    rng = random.Random(seed)
    (root / "pdfs").mkdir(parents=True)
    files = [[] for _ in range(4)]
    count = 0
    pages = []
    i = 0
    while count < n_tests:
        key = f"doc{i:04d}"
        text, headings, paras = make_page(rng)
        (root / "pdfs" / f"{key}.pdf").write_bytes(make_pdf([[headings[0]]]))
        tests = []

        def add(kind: str, **kw):
            tests.append({"pdf": f"{key}.pdf", "page": 1, "id": f"{key}_{len(tests)}", "type": kind, **kw})

        add("present", text=phrase(rng, rng.choice(paras)))
        add("present", text=phrase(rng, rng.choice(paras), 10), max_diffs=2)
        add("present", text=sentence(rng, 6), case_sensitive=False)
        add("absent", text=sentence(rng, 5))
        a, b = sorted(rng.sample(range(len(paras)), 2))
        add("order", before=phrase(rng, paras[a], 5), after=phrase(rng, paras[b], 5), max_diffs=rng.choice([0, 1]))
        add("format", text=rng.choice(headings), format="heading")
        add("footnote", marker="1")
        if rng.random() < 0.5:
            add("baseline", max_repeats=30)
        for t in tests:
            files[rng.randrange(4)].append(t)
        count += len(tests) + (0 if tests[-1]["type"] == "baseline" else 1)  # + the auto baseline
        pages.append((key, text))
        i += 1
    for k, lines in enumerate(files):
        (root / f"tests_{k}.jsonl").write_text("".join(json.dumps(t) + "\n" for t in lines))
    for c in range(n_candidates):
        for key, text in pages:
            for r in range(n_repeats):
                (root / f"model_{c}").mkdir(exist_ok=True)
                (root / f"model_{c}" / f"{key}_pg1_repeat{r + 1}.md").write_text(perturb(rng, text))
    return count


def generate_math(root: Path, n_tests: int, n_candidates: int, n_repeats: int, seed: int = 0) -> int:
    rng = random.Random(seed)
    (root / "pdfs").mkdir(parents=True)
    lines = []
    for i in range(n_tests):
        key = f"eq{i:04d}"
        ref = formula(rng, i)
        (root / "pdfs" / f"{key}.pdf").write_bytes(make_pdf([["Equation"]]))
        lines.append(json.dumps({"pdf": f"{key}.pdf", "page": 1, "id": f"{key}_math", "type": "math", "math": ref}))
        for c in range(n_candidates):
            (root / f"model_{c}").mkdir(exist_ok=True)
            for r in range(n_repeats):
                (root / f"model_{c}" / f"{key}_pg1_repeat{r + 1}.md").write_text(completion(rng, ref))
    (root / "math_tests.jsonl").write_text("".join(line + "\n" for line in lines))
    return 2 * n_tests  # + the auto baselines


def run_command(cmd: list[str], runs: int, env: dict | None = None, fresh_home: bool = False) -> tuple[list[float], str]:
    times, out = [], ""
    for _ in range(runs):
        home = tempfile.mkdtemp(prefix="bench-home-") if fresh_home else None
        if home:  # the reference caches rendered equations under ~/.cache: start cold
            env = {**(env or os.environ), "HOME": home}
        t = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True, env=env)
        times.append(time.perf_counter() - t)
        if p.returncode:
            sys.exit(f"{' '.join(cmd[:3])} ... failed ({p.returncode}):\n{p.stderr[-2000:]}")
        out = p.stdout
        if home:
            shutil.rmtree(home, ignore_errors=True)
    return times, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--olmocr-tree", required=True, help="an upstream allenai/olmocr checkout (commit f7cfe4c)")
    ap.add_argument("--reference-python", default=sys.executable, help="a Python with the reference's bench deps")
    ap.add_argument("--ours", default=str(Path(sys.executable).with_name("olmocr-rl")), help="the olmocr-rl script")
    ap.add_argument("--tests", type=int, default=2000)
    ap.add_argument("--candidates", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=4)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--keep", type=Path, help="generate the folder here and keep it")
    ap.add_argument("--math", type=int, metavar="N", help="N math tests instead of the text tests (cold reference cache)")
    ap.add_argument("--tool-dir", default="/work/shared/tools", help="folder of sitecustomize.py (system Chromium), for --math")
    args = ap.parse_args()

    tmp = None
    if args.keep:
        root = args.keep
        if root.exists():
            shutil.rmtree(root)
    else:
        tmp = tempfile.mkdtemp(prefix="olmocr-rl-bench-")
        root = Path(tmp) / "bench"
    try:
        if args.math:
            n = generate_math(root, args.math, args.candidates, args.repeats)
        else:
            n = generate(root, args.tests, args.candidates, args.repeats)
        n_md = args.candidates * args.repeats
        print(
            f"bench folder: {n} tests (auto baselines included) x {n_md} md files "
            f"({args.candidates} candidates x {args.repeats} repeats), {len(list((root / 'pdfs').iterdir()))} PDFs"
        )
        print(f"machine: {os.cpu_count()} CPUs")
        ours_t, ours_out = run_command([args.ours, "bench", str(root), "--json"], args.runs)
        tables_t, _ = run_command([args.ours, "bench", str(root)], args.runs)  # the rich tables, to a pipe
        ref_cmd = [
            args.reference_python,
            str(REPO / "tests" / "golden" / "run_reference_bench.py"),
            args.olmocr_tree,
            "--",
            "--dir",
            str(root),
        ]
        env = None
        if args.math:
            env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [args.tool_dir, os.environ.get("PYTHONPATH")]))}
        ref_t, ref_out = run_command(ref_cmd, args.runs, env=env, fresh_home=bool(args.math))
        ours = {c["name"]: c["reference_status"] for c in json.loads(ours_out)["candidates"]}
        ref = {name: c.get("status") for name, c in parse(ref_out).items()}
        agree = "yes" if ours == ref else f"NO: ours {ours} vs reference {ref}"
        print(f"same scores as the reference: {agree}")
        for name, t in (("olmocr-rl bench --json", ours_t), ("olmocr-rl bench (tables)", tables_t), ("reference benchmark.py", ref_t)):
            print(f"{name:24s} best {min(t):7.2f} s   median {statistics.median(t):7.2f} s   ({args.runs} runs)")
        print(f"speed-up (best/best): {min(ref_t) / min(ours_t):.1f}x with --json, {min(ref_t) / min(tables_t):.1f}x printing tables")
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
