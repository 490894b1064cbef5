"""Transcribing pages with an engine (olmocr_rl/engines.py) into bench candidate files: `olmocr-rl
generate`, and the outputs `olmocr-rl train` writes after training (one code path for both).

    BENCH_DIR/NAME/<pdf key without .pdf>_pg<N>_repeat<M>.md   what `olmocr-rl bench` reads
    BENCH_DIR/NAME/_generate.json                              options, counts, per-page errors
    BENCH_DIR/NAME/.render/                                    the pages rendered as `prepare` does

The text written is the page's text as the olmOCR format means it: the completion's YAML front
matter parsed off (olmOCR's pipeline writes the `natural_text` of a parsed response); a completion
that does not parse is written whole. `raw=True` writes every completion whole. Files are written
atomically, so a run stopped half-way resumes where it stopped (pages whose files all exist are
skipped); a page whose generation fails is recorded in `_generate.json` and the rest goes on.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from olmocr_rl.atomic import write_text
from olmocr_rl.engines import GenerateFn
from olmocr_rl.prompts import row_conversation

SUMMARY = "_generate.json"


def page_file(pdf: str, page: int, repeat: int) -> str:
    stem = pdf[:-4] if pdf.lower().endswith(".pdf") else pdf
    return f"{stem}_pg{page}_repeat{repeat}.md"


def page_text(completion: str, raw: bool = False) -> tuple[str, bool]:
    """(text to write, whether the completion parsed as an olmOCR page response)."""
    if raw:
        return completion, False
    from olmocr_rl.front_matter import FrontMatterError, parse_page_response

    try:
        return parse_page_response(completion).natural_text or "", True
    except FrontMatterError:
        return completion, False


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text(path, text)


def transcribe(
    generate: GenerateFn,
    image_root: str | os.PathLike[str],
    rows: Sequence[dict],
    out_dir: str | os.PathLike[str],
    *,
    repeats: int = 1,
    temperature: float = 0.0,
    batch_size: int = 8,
    raw: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Writes `repeats` files per row (greedy when temperature is 0: one generation, copied).
    Rows are prepared rows (pdf, page, image relative to `image_root`, prompt). Returns counts
    and the per-page errors."""
    from PIL import Image

    root, out = Path(image_root), Path(out_dir)
    todo = [r for r in rows if not all((out / page_file(r["pdf"], int(r["page"]), m)).is_file() for m in range(1, repeats + 1))]
    counts = {"pages": len(rows), "skipped": len(rows) - len(todo), "written": 0, "parsed": 0, "unparsed": 0}
    errors: list[dict[str, Any]] = []
    runs = 1 if temperature <= 0 else repeats

    def run(chunk: list[dict]) -> list[list[str]]:
        images = []
        for r in chunk:
            with Image.open(root / r["image"]) as im:
                images.append(im.convert("RGB"))
        messages = [row_conversation(r) for r in chunk]
        return [generate(images, messages, temperature) for _ in range(runs)]

    done = 0
    for start in range(0, len(todo), batch_size):
        chunk = list(todo[start : start + batch_size])
        try:
            outputs = run(chunk)  # once per chunk: [run][page]
            results = [(r, [texts[i] for texts in outputs]) for i, r in enumerate(chunk)]
        except Exception:  # noqa: BLE001 - find the page at fault: one at a time
            results = []
            for r in chunk:
                try:
                    results.append((r, [texts[0] for texts in run([r])]))
                except Exception as e:  # noqa: BLE001 - recorded, the run goes on
                    errors.append({"pdf": r["pdf"], "page": int(r["page"]), "error": f"{type(e).__name__}: {e}"})
        for r, texts in results:
            for m in range(1, repeats + 1):
                text, parsed = page_text(texts[min(m, runs) - 1], raw)
                counts["parsed" if parsed else "unparsed"] += 1
                _write(out / page_file(r["pdf"], int(r["page"]), m), text)
                counts["written"] += 1
        done += len(chunk)
        if progress is not None:
            progress(done, len(todo))
    return {**counts, "errors": errors}


def write_summary(out_dir: str | os.PathLike[str], summary: dict[str, Any], options: dict[str, Any]) -> Path:
    """`_generate.json`: this run's options, counts and errors (every page without all its files
    is tried again in each run, so this run's errors are all the pages still missing)."""
    path = Path(out_dir) / SUMMARY
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text(path, json.dumps({"options": options, **summary}, indent=2) + "\n")
    return path
