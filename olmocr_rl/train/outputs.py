"""After training: the model's output for each page as bench-style candidate files, and the
output folder made a bench folder, so `olmocr-rl bench OUTPUT_DIR --candidate outputs` scores
them exactly as olmOCR-bench would.

    OUTPUT_DIR/outputs/<pdf path without .pdf>_pg<N>_repeat<M>.md   the candidate
    OUTPUT_DIR/pdfs/<pdf path>                                       the PDFs of those pages
    OUTPUT_DIR/<tests>.jsonl                                         the prepared tests on those pages
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from olmocr_rl.train.data import conversation, read_manifest, read_split, tests_dir

CANDIDATE = "outputs"


def select_rows(
    prepared_dir: str | os.PathLike[str], which: str, train_split: str = "train", eval_split: str = "eval",
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


def page_file(pdf: str, page: int, repeat: int) -> str:
    stem = pdf[:-4] if pdf.lower().endswith(".pdf") else pdf
    return f"{stem}_pg{page}_repeat{repeat}.md"


def generate_batch(model: Any, processor: Any, images: list, prompts: list[str], *, max_new_tokens: int, temperature: float) -> list[str]:
    """One generation per (image, prompt), batched with left padding."""
    import torch

    texts = [processor.apply_chat_template(conversation(p), add_generation_prompt=True, tokenize=False) for p in prompts]
    tok = getattr(processor, "tokenizer", processor)
    side = tok.padding_side
    tok.padding_side = "left"  # generation continues from the right end of every row
    try:
        inputs = processor(text=texts, images=images, padding=True, return_tensors="pt")
    finally:
        tok.padding_side = side
    device = next(model.parameters()).device
    inputs = {k: v.to(device) if hasattr(v, "to") else v for k, v in inputs.items()}
    gen: dict[str, Any] = {"max_new_tokens": max_new_tokens, "do_sample": temperature > 0}
    if temperature > 0:
        gen["temperature"] = temperature
    if tok.pad_token_id is not None:
        gen["pad_token_id"] = tok.pad_token_id
    config = getattr(model, "config", None)
    placeholders = [i for i in (getattr(config, "image_token_id", None), getattr(config, "video_token_id", None)) if isinstance(i, int)]
    if placeholders:
        gen["suppress_tokens"] = placeholders
    with torch.no_grad():
        out = model.generate(**inputs, **gen)
    new = out[:, inputs["input_ids"].shape[1]:]
    return processor.batch_decode(new, skip_special_tokens=True)


def write_outputs(
    model: Any,
    processor: Any,
    prepared_dir: str | os.PathLike[str],
    output_dir: str | os.PathLike[str],
    rows: list[dict],
    *,
    repeats: int = 1,
    max_new_tokens: int = 512,
    temperature: float = 0.0,
    batch_size: int = 8,
    progress: Any = None,
) -> dict:
    """Generates `repeats` outputs per row (greedy when temperature is 0: one generation,
    copied) and lays out the bench folder. Returns a summary."""
    from PIL import Image

    prepared = Path(prepared_dir)
    out = Path(output_dir)
    cand = out / CANDIDATE
    if cand.exists():
        shutil.rmtree(cand)
    was_training = getattr(model, "training", False)
    model.eval()
    files = 0
    try:
        for start in range(0, len(rows), batch_size):
            chunk = rows[start:start + batch_size]
            images = []
            for r in chunk:
                with Image.open(prepared / r["image"]) as im:
                    images.append(im.convert("RGB"))
            prompts = [str(r["prompt"]) for r in chunk]
            runs = 1 if temperature <= 0 else repeats
            texts = [generate_batch(model, processor, images, prompts, max_new_tokens=max_new_tokens, temperature=temperature)
                     for _ in range(runs)]
            for i, r in enumerate(chunk):
                for m in range(1, repeats + 1):
                    path = cand / page_file(r["pdf"], int(r["page"]), m)
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_text(texts[min(m, runs) - 1][i], encoding="utf-8")
                    files += 1
            if progress is not None:
                progress(start + len(chunk), len(rows))
    finally:
        if was_training:
            model.train()
    layout = make_bench_folder(prepared, out, rows)
    return {"candidate": str(cand), "files": files, **layout}


def make_bench_folder(prepared_dir: Path, output_dir: Path, rows: list[dict]) -> dict:
    """Copies the PDFs of `rows` (from the manifest's bench_dir) under output_dir/pdfs and
    writes the prepared tests on those pages as top-level JSONL files."""
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
            shutil.copyfile(src, dst)
    n_tests = 0
    written = []
    for f in sorted(tests_dir(prepared_dir).glob("*.jsonl")):
        keep = []
        for line in f.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            t = json.loads(line)
            if (t.get("pdf"), t.get("page")) in pages:
                keep.append(line)
        target = output_dir / f.name
        if keep:
            target.write_text("\n".join(keep) + "\n", encoding="utf-8")
            written.append(target.name)
            n_tests += len(keep)
        elif target.exists():
            target.unlink()
    return {"pdfs": len({p for p, _ in pages}), "tests": n_tests, "test_files": written,
            "bench_command": f"olmocr-rl bench {output_dir} --candidate {CANDIDATE}"}
