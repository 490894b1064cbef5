"""After training: the model's output for each page as bench-style candidate files, and the
output folder made a bench folder, so `olmocr-rl bench OUTPUT_DIR --candidate outputs` scores
them exactly as olmOCR-bench would.

    OUTPUT_DIR/outputs/<pdf path without .pdf>_pg<N>_repeat<M>.md   the candidate
    OUTPUT_DIR/pdfs/<pdf path>                                       the PDFs of those pages
    OUTPUT_DIR/<tests>.jsonl                                         the prepared tests on those pages
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from olmocr_rl.atomic import atomic_write, write_text
from olmocr_rl.engines import Engine
from olmocr_rl.prepared import read_manifest, read_split, tests_dir

CANDIDATE = "outputs"


def select_rows(
    prepared_dir: str | os.PathLike[str],
    which: str,
    train_split: str = "train",
    eval_split: str = "eval",
    limits: dict[str, int | None] | None = None,
) -> list[dict]:
    """The pages of `which` ("train", "eval", "all", "none"), each split cut to `limits[split]`
    pages (as training cut them); "eval" without eval pages falls back to "train"."""
    if which == "none":
        return []
    splits = {"train": [train_split], "eval": [eval_split], "all": [train_split, eval_split]}[which]
    rows: list[dict] = []
    seen = set()
    for s in splits:
        for r in read_split(prepared_dir, s)[: (limits or {}).get(s)]:
            key = (r["pdf"], int(r["page"]))
            if key not in seen:
                seen.add(key)
                rows.append({**r, "_split": s})
    if not rows and which == "eval":  # no held-out split: fall back to the train pages
        return select_rows(prepared_dir, "train", train_split, eval_split, limits)
    return rows


def write_outputs(
    engine: Engine,
    prepared_dir: str | os.PathLike[str],
    output_dir: str | os.PathLike[str],
    rows: list[dict],
    *,
    repeats: int = 1,
    temperature: float = 0.0,
    batch_size: int = 8,
    seed: int = 0,
    progress: Any = None,
) -> dict:
    """Transcribes the rows with `engine` (olmocr_rl/engines.py) through `olmocr-rl generate`'s
    code (greedy when temperature is 0: one generation, copied; each page's samples seeded by `seed`
    and the page; the page text with the front matter parsed off) and lays out the bench folder.
    Returns a summary."""
    from olmocr_rl.generate import transcribe

    prepared = Path(prepared_dir)
    out = Path(output_dir)
    cand = out / CANDIDATE
    if cand.exists():
        shutil.rmtree(cand)  # the outputs of this model only
    summary = transcribe(engine, prepared, rows, cand, repeats=repeats, temperature=temperature, batch_size=batch_size, seed=seed,
                         progress=progress)  # fmt: skip
    if summary["errors"]:
        first = summary["errors"][0]
        raise RuntimeError(
            f"generating the outputs failed on {len(summary['errors'])} page(s), first {first['pdf']} page {first['page']}: {first['error']}"
        )
    layout = make_bench_folder(prepared, out, rows)
    return {"candidate": str(cand), "files": summary["written"], **layout}


def make_bench_folder(prepared_dir: Path, output_dir: Path, rows: list[dict]) -> dict:
    """Copies the PDFs of `rows` (from the manifest's bench_dir) under output_dir/pdfs and writes
    the prepared tests on those pages as top-level JSONL files, each line as the prepared file holds
    it. The tests are read as every command reads them (olmocr_rl/suite.py: which page a record
    tests, by the suite's own rules; its lines split by olmocr_rl/jsonl.py), every file written
    through olmocr_rl/atomic.py."""
    from olmocr_rl.jsonl import read_jsonl
    from olmocr_rl.suite import BenchSuite

    manifest = read_manifest(prepared_dir)

    def folder(value: str) -> Path:
        p = Path(value)
        return p if p.is_absolute() else (prepared_dir / p).resolve()

    bench_dir = folder(manifest["bench_dir"])
    eval_dir = (manifest.get("options") or {}).get("eval_dir")  # prepare --eval-dir: eval pages come from there
    pages = {(r["pdf"], int(r["page"])) for r in rows}
    pdf_dir = output_dir / "pdfs"
    for r in rows:
        src_root = folder(eval_dir) if eval_dir and r.get("_split") == "eval" else bench_dir
        src, dst = src_root / "pdfs" / r["pdf"], pdf_dir / r["pdf"]
        if not dst.exists():
            if not src.is_file():
                raise FileNotFoundError(f"{src}: the PDF of {r['pdf']} page {r['page']} is gone; bench needs it next to the outputs")
            dst.parent.mkdir(parents=True, exist_ok=True)
            with src.open("rb") as f, atomic_write(dst, "wb") as g:
                shutil.copyfileobj(f, g)
    files = sorted(tests_dir(prepared_dir).glob("*.jsonl"))
    suite = BenchSuite.load(files, strict=False) if files else None
    wanted = {(i.source, i.line) for i in map(suite.info, suite.ids) if (i.pdf, i.page) in pages} if suite is not None else set()
    from olmocr_rl.bench.plan import command_line

    n_tests = 0
    written = []
    for f in files:
        lines = read_jsonl(f).lines
        keep = [lines[n - 1] for n in range(1, len(lines) + 1) if (str(f), n) in wanted]
        target = output_dir / f.name
        if keep:
            write_text(target, "\n".join(keep) + "\n")
            written.append(target.name)
            n_tests += len(keep)
        elif target.exists():
            target.unlink()
    return {
        "pdfs": len({p for p, _ in pages}),
        "tests": n_tests,
        "test_files": written,
        "bench_command": command_line(output_dir, CANDIDATE),  # with --force when a PDF has pages the split left out
    }
