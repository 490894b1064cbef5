"""Rendering speed of `olmocr-rl prepare`: pages per second per core at 1288 px.

    python benchmarks/bench_prepare.py [--copies 50] [--workers 1 2] [--longest-side 1288]

Builds a bench folder in a temporary directory from bench_fixtures' PDFs (copied --copies
times, a baseline test on every page), plus a second one of dense text pages (55 lines of
small text each, closer to a real paper page), and times the whole `prepare()` call (test
validation, rendering, PNG writing, manifests) from an empty output folder, then once more on
the finished folder (the resume check). "per core" divides by the worker count for wall time;
the CPU column is pages per CPU-second of all processes (robust on a shared machine).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "bench_fixtures"


def _make_pdf():
    spec = importlib.util.spec_from_file_location("make_pdfs", FIXTURES / "make_pdfs.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.make_pdf


def fixture_bench(dst: Path, copies: int) -> int:
    from pypdfium2 import PdfDocument

    records = []
    (dst / "pdfs").mkdir(parents=True)
    for src in sorted((FIXTURES / "pdfs").rglob("*.pdf")):
        n = len(PdfDocument(str(src)))
        for c in range(copies):
            key = f"c{c:03d}/{src.relative_to(FIXTURES / 'pdfs').as_posix()}"
            (dst / "pdfs" / key).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(src, dst / "pdfs" / key)
            records += [{"pdf": key, "page": p, "id": f"{key}_{p}", "type": "baseline"} for p in range(1, n + 1)]
    (dst / "tests.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return len(records)


def dense_bench(dst: Path, pages: int) -> int:
    make_pdf = _make_pdf()
    words = "the model reads scanned pages with tables equations footnotes and dense columns of text".split()
    (dst / "pdfs").mkdir(parents=True)
    records = []
    per_pdf = 4
    for i in range(0, pages, per_pdf):
        body = [[" ".join(words[(p * 7 + line + k) % len(words)] for k in range(14)) for line in range(55)] for p in range(per_pdf)]
        pdf = make_pdf(body).replace(b"/F1 12 Tf", b"/F1 9 Tf ").replace(b"14 TL", b"12 TL")
        key = f"dense{i // per_pdf:04d}.pdf"
        (dst / "pdfs" / key).write_bytes(pdf)
        records += [{"pdf": key, "page": p, "id": f"{key}_{p}", "type": "baseline"} for p in range(1, per_pdf + 1)]
    (dst / "tests.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return len(records)


def cpu_seconds() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def run_prepare(bench: Path, out: Path, workers: int, longest: int) -> tuple[float, float, int]:
    from olmocr_rl.prepare import PrepareOptions, prepare

    t0, c0 = time.perf_counter(), cpu_seconds()
    result = prepare(bench, out, PrepareOptions(workers=workers, longest_side=longest))
    return time.perf_counter() - t0, cpu_seconds() - c0, result.rendered


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--copies", type=int, default=50, help="copies of each fixture PDF")
    ap.add_argument("--dense-pages", type=int, default=200)
    ap.add_argument("--workers", type=int, nargs="+", default=[1])
    ap.add_argument("--longest-side", type=int, default=1288)
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        benches = {
            "fixture PDFs": (tmp / "fixture", fixture_bench(tmp / "fixture", args.copies)),
            "dense text pages": (tmp / "dense", dense_bench(tmp / "dense", args.dense_pages)),
        }
        print(
            f"{'bench':<18} {'pages':>6} {'workers':>7} {'wall s':>7} {'pages/s':>8} {'pages/s/core':>12} {'pages/CPU-s':>11} {'resume s':>8}"
        )
        for name, (bench, pages) in benches.items():
            for w in args.workers:
                out = tmp / f"out-{bench.name}-{w}"
                wall, cpu, rendered = run_prepare(bench, out, w, args.longest_side)
                assert rendered == pages, (rendered, pages)
                again, _, rendered = run_prepare(bench, out, w, args.longest_side)
                assert rendered == 0
                print(
                    f"{name:<18} {pages:>6} {w:>7} {wall:>7.2f} {pages / wall:>8.1f} {pages / wall / w:>12.1f} "
                    f"{pages / cpu:>11.1f} {again:>8.2f}"
                )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
