"""The whole benchmark run: load the folder, score each candidate, attach its confidence interval."""

from __future__ import annotations

import contextlib
import os
import random
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from olmocr_rl.atomic import atomic_write, refuse_inputs
from olmocr_rl.bench.checking import Progress, evaluate_candidate
from olmocr_rl.bench.folder import Bench, _page_files, find_candidates, load_bench
from olmocr_rl.bench.results import BenchSummary, semantics
from olmocr_rl.bench.stats import bootstrap_ci
from olmocr_rl.jsonl import json_line
from olmocr_rl.suite import Guard, check_guard, check_threads


def run_bench(
    path: str | os.PathLike[str],
    candidates: Sequence[str] | None = None,
    *,
    skip_baseline: bool = False,
    force: bool = False,
    details: str | os.PathLike[str] | None = None,
    threads: int | None = None,
    bootstrap_samples: int = 1000,
    confidence_level: float = 0.95,
    seed: int = 0,
    progress: Progress | None = None,
    sample: int | None = None,
    keep_details: bool = False,
    guard: Guard = "none",
    outputs: Mapping[str, str | os.PathLike[str] | None] | None = None,
) -> BenchSummary:
    """Runs the benchmark on a bench folder; see the module docstring. `sample`: score only that
    many tests, drawn with `random.Random(seed)` (the reference's `--sample`, unseeded there), kept
    in file order. `keep_details`: keep each candidate's details rows on its result. `guard`:
    "none" (default), the published benchmark's checks, or "short-output" (docs/checks.md
    §3.1.1). `details` is written under a temporary name and renamed at the end; it and the other
    `outputs` (option -> path, written by the caller) must not be files the run reads."""
    threads = check_threads(threads)
    bench = load_bench(path, skip_baseline=skip_baseline, force=force, guard=check_guard(guard))
    options = {"tests_available": len(bench.tests), "sample": None, "skip_baseline": skip_baseline, "force": force}
    if sample is not None and 0 < sample < len(bench.tests):
        options["sample"] = sample
        chosen = set(random.Random(seed).sample(range(len(bench.tests)), sample))
        bench.tests = [t for i, t in enumerate(bench.tests) if i in chosen]
    folders = find_candidates(bench, candidates)
    refuse_inputs({"--details": details, **(outputs or {})}, _inputs(bench, folders))
    out = []
    sem = semantics(bench.suite.guard, options, seed)  # named in every details row
    with atomic_write(details) if details else contextlib.nullcontext() as sink:
        for folder in folders:
            result, rows = evaluate_candidate(bench, folder, progress=progress, details=sink is not None or keep_details, threads=threads)
            if keep_details:
                result.details = rows
            groups: dict[str, list[float]] = {}
            for o in result.outcomes:
                groups.setdefault(o.group, []).append(1.0 if o.passed else 0.0)
            result.ci = bootstrap_ci(list(groups.values()), samples=bootstrap_samples, level=confidence_level, seed=seed)
            out.append(result)
            if sink:
                sink.writelines(json_line({**row, "semantics": sem}) for row in rows)
    return BenchSummary(bench, out, bootstrap_samples, confidence_level, seed, options)


def _inputs(bench: Bench, folders: Sequence[Path]) -> Iterator[Path]:
    """Every file the run reads (test files, PDFs, the candidates' page files) and the folders
    that hold them."""
    yield from (bench.root, bench.root / "pdfs", *folders)
    yield from bench.jsonl_files
    yield from (bench.root / "pdfs" / k for k in bench.pdf_keys)
    for folder in folders:
        yield from (folder / f for files in _page_files(folder, bench.pdf_keys).values() for f in files)
