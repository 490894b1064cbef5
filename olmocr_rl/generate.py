"""Transcribing pages with a model into bench candidate files: `olmocr-rl generate`, and the
outputs `olmocr-rl train` writes after training (one code path for both).

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

SUMMARY = "_generate.json"

# (images, one conversation per image (olmocr_rl.prompts.conversation), temperature) -> one completion per image
GenerateFn = Callable[[list, list[list[dict]], float], list[str]]


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

    from olmocr_rl.prompts import IMAGE_FIRST, conversation

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
        messages = [conversation(str(r["prompt"]), str(r.get("prompt_layout", IMAGE_FIRST))) for r in chunk]
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


def transformers_generate(model: Any, processor: Any, *, max_new_tokens: int) -> GenerateFn:
    """Batched `model.generate` (left padding), image placeholder tokens suppressed."""

    from olmocr_rl.engines import transformers_suppression

    def generate(images: list, messages: list[list[dict]], temperature: float) -> list[str]:
        import torch

        texts = [processor.apply_chat_template(m, add_generation_prompt=True, tokenize=False) for m in messages]
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
        gen.update(transformers_suppression(model.config))  # placeholders are never sampled
        with torch.no_grad():
            out = model.generate(**inputs, **gen)
        return processor.batch_decode(out[:, inputs["input_ids"].shape[1] :], skip_special_tokens=True)

    return generate


def model_context_length(config: Any) -> int | None:
    """The longest sequence a model config allows (its text model's position embeddings)."""
    for scope in (getattr(config, "text_config", None), config):
        value = getattr(scope, "max_position_embeddings", None) if scope is not None else None
        if isinstance(value, int) and value > 0:
            return value
    return None


def longest_prompt(processor: Any, rows: Sequence[dict]) -> int:
    """The longest prompt, in tokens, of `rows` as our processor builds it (chat template, image
    expanded into its tokens): the count depends on the image's size only, so one blank image per
    distinct (size, prompt) is enough."""
    from PIL import Image

    from olmocr_rl.prompts import IMAGE_FIRST, conversation

    longest = 0
    kinds = {(int(r["width"]), int(r["height"]), str(r["prompt"]), str(r.get("prompt_layout", IMAGE_FIRST))) for r in rows}
    for width, height, prompt, layout in kinds:
        text = processor.apply_chat_template(conversation(prompt, layout), add_generation_prompt=True, tokenize=False)
        ids = processor(text=[text], images=[Image.new("RGB", (width, height))])["input_ids"][0]
        longest = max(longest, len(ids))
    return longest


def vllm_context(limit: int | None, longest_prompt: int, max_new_tokens: int) -> tuple[int, int]:
    """(vLLM's max_model_len, max tokens per completion): the longest prompt plus `max_new_tokens`,
    within the model's `limit` (vLLM refuses a context above it); completions are shortened to fit.
    ValueError when not even one completion token fits."""
    need = longest_prompt + max_new_tokens
    if limit is None or need <= limit:
        return need, max_new_tokens
    if limit - longest_prompt < 1:
        raise ValueError(f"the longest prompt needs about {longest_prompt} tokens, the model's whole context is {limit}")
    return limit, limit - longest_prompt


def vllm_generate(
    model: str,
    processor: Any,
    config: Any,
    *,
    max_new_tokens: int,
    max_model_len: int,
    seed: int = 0,
    enforce_eager: bool = False,
    trust_remote_code: bool = False,
    mm_processor_kwargs: dict | None = None,
) -> GenerateFn:
    """vLLM's offline engine (`vllm.LLM`), one image per prompt, the prompt text from our
    processor's chat template, the placeholders suppressed (olmocr_rl/engines.py);
    `mm_processor_kwargs` (engines.pixel_bounds) cut images as a trainer's processor does."""
    try:
        from vllm import LLM, SamplingParams
    except ImportError as e:
        raise RuntimeError(f"--engine vllm needs vLLM ({e}); pip install 'olmocr-rl[vllm]', or use --engine transformers") from None
    from olmocr_rl.engines import vllm_suppression

    extra = {"mm_processor_kwargs": mm_processor_kwargs} if mm_processor_kwargs else {}
    llm = LLM(model=model, max_model_len=max_model_len, limit_mm_per_prompt={"image": 1}, seed=seed,
              enforce_eager=enforce_eager, trust_remote_code=trust_remote_code, **extra)  # fmt: skip
    suppression = vllm_suppression(config)

    def generate(images: list, messages: list[list[dict]], temperature: float) -> list[str]:
        params = SamplingParams(temperature=temperature, max_tokens=max_new_tokens, **suppression)
        requests = [
            {"prompt": processor.apply_chat_template(m, add_generation_prompt=True, tokenize=False), "multi_modal_data": {"image": im}}
            for im, m in zip(images, messages)
        ]
        return [o.outputs[0].text for o in llm.generate(requests, params, use_tqdm=False)]

    return generate


def write_summary(out_dir: str | os.PathLike[str], summary: dict[str, Any], options: dict[str, Any]) -> Path:
    """`_generate.json`: this run's options, counts and errors (every page without all its files
    is tried again in each run, so this run's errors are all the pages still missing)."""
    path = Path(out_dir) / SUMMARY
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text(path, json.dumps({"options": options, **summary}, indent=2) + "\n")
    return path
