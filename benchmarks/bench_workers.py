"""Throughput of `olmocr-rl generate` and `olmocr-rl curate` on 1 and on N workers (`--num-processes`),
pages per second, on this machine's CPU cores with the tiny random model (bench_fixtures/tiny_vlm.py)
and the transformers engine.

    python benchmarks/bench_workers.py [--copies 8] [--workers 1 2] [--max-new-tokens 32] [--samples 4]

Builds a bench folder of bench_fixtures' PDFs copied --copies times (a baseline test on every page),
renders its pages once (the `.render` folder generate keeps, copied into each candidate folder, and a
prepared folder for curate), then times each command end to end as a user runs it: the launcher and
the workers' start-up (each loads torch and the model) are in the time, the rendering is not. Each
worker gets cores / workers threads (OMP_NUM_THREADS, as `olmocr-rl` sets it). Not a test: the
figures depend on the machine and on what else runs on it; the outputs of every run are checked
equal to the one-worker run's, so a figure is never for a different result.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench_fixtures"))
sys.path.insert(0, str(ROOT / "benchmarks"))

OLMOCR_RL = [sys.executable, "-c", "import sys; from olmocr_rl.cli import main; sys.exit(main())"]


def run(args: list[str]) -> float:
    t0 = time.perf_counter()
    res = subprocess.run([*OLMOCR_RL, *args], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if res.returncode not in (0, 1) or "error:" in res.stderr and "no train page kept" not in res.stderr:
        raise SystemExit(f"olmocr-rl {' '.join(args)} failed:\n{res.stdout[-2000:]}{res.stderr[-2000:]}")
    return wall


def page_files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.glob("**/*.md") if ".render" not in p.parts}


def records(path: Path) -> dict:
    out = {}
    for line in path.read_text().splitlines():
        r = json.loads(line)
        r.pop("score_seconds")
        out[(r["split"], r["pdf"], r["page"])] = r
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--copies", type=int, default=8, help="copies of the fixture PDFs (4 tested pages each)")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--max-new-tokens", type=int, default=32)
    ap.add_argument("--samples", type=int, default=4, help="curate's samples per page")
    args = ap.parse_args()
    from bench_prepare import fixture_bench
    from tiny_vlm import build_tiny_vlm

    from olmocr_rl.prepare import PrepareOptions, prepare

    tmp = Path(tempfile.mkdtemp(prefix="bench_workers."))
    try:
        model = build_tiny_vlm(tmp / "model")
        bench = tmp / "bench"
        pages = fixture_bench(bench, args.copies)
        options = PrepareOptions(longest_side=224, eval_fraction=0.0, seed=0)
        prepare(bench, tmp / "render", options, progress=False)  # what generate renders into CANDIDATE/.render
        prepare(bench, tmp / "prepared", options, progress=False)
        print(f"{pages} pages, tiny model, {args.max_new_tokens}-token completions; {os.cpu_count()} cores; "
              f"generate: 1 per page (greedy); curate: {args.samples} samples a page")  # fmt: skip
        print(f"{'command':<9} {'workers':>7} {'seconds':>8} {'pages/s':>8}  same output as 1 worker")
        first: dict[str, object] = {}
        for n in args.workers:
            cand = bench / f"w{n}"
            shutil.copytree(tmp / "render", cand / ".render")
            wall = run(["generate", str(model), str(bench), "-c", cand.name, "--max-new-tokens", str(args.max_new_tokens),
                        "--longest-side", "224", "-q", "--num-processes", str(n)])  # fmt: skip
            files = page_files(cand)
            first.setdefault("generate", files)
            print(f"{'generate':<9} {n:>7} {wall:>8.1f} {pages / wall:>8.2f}  {files == first['generate']}")
        for n in args.workers:
            prep = tmp / f"prepared{n}"
            shutil.copytree(tmp / "prepared", prep)
            wall = run(["curate", str(prep), "--model", str(model), "--samples", str(args.samples), "--set",
                        f"max_completion_length={args.max_new_tokens}", "-q", "--num-processes", str(n)])  # fmt: skip
            recs = records(prep / "difficulty.jsonl")
            first.setdefault("curate", recs)
            print(f"{'curate':<9} {n:>7} {wall:>8.1f} {pages / wall:>8.2f}  {recs == first['curate']}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
