"""The model card (README.md) `train` writes into its output folder in place of trl's, which names
a local base model "[None]" and shows a text-generation chat: this one names the base model (a hub
id linked, a folder by its path), says what the reward was, and shows the OCR the model was
trained for, a page image and the run's own instruction in the run's order, as code that runs as
written (tests/test_train.py runs it), then the same through `olmocr-rl generate` and `bench`.
Nothing here imports trl; OlmocrGRPOTrainer.create_model_card (trainer.py) gathers the facts."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from olmocr_rl.prompts import TEXT_FIRST

TAGS = ("olmocr-rl", "trl", "grpo", "ocr", "image-text-to-text")


@dataclass(frozen=True)
class CardFacts:
    """What the card says: `name` (the output folder's or the hub repo's), `base_model` (the
    model the run started from, as the user named it), `model_id` (where the trained model is:
    the output folder or hub_model_id), the run's `instruction` and its `layout`, the training
    pages' `longest_side` in pixels, `max_new_tokens` (the run's completion length), the number of
    training `pages`, and library `versions`."""

    name: str
    base_model: str
    model_id: str
    instruction: str
    layout: str
    longest_side: int | None = None
    max_new_tokens: int = 8000
    pages: int | None = None
    prompt_option: str = ""  # the `olmocr-rl generate` option that gives the instruction ("" for the default)
    versions: dict[str, str] = field(default_factory=dict)


def is_hub_id(model: str) -> bool:
    """A hub id (`org/name`), not a folder here: what the hub's `base_model` metadata may name."""
    return not os.path.isdir(model) and not Path(model).is_absolute() and model.count("/") == 1 and not model.startswith(".")


def model_card(f: CardFacts) -> str:
    """The card's markdown: YAML metadata, then the text (see the module docstring)."""
    from huggingface_hub import ModelCardData

    hub = is_hub_id(f.base_model)
    data = ModelCardData(base_model=f.base_model if hub else None, library_name="transformers", pipeline_tag="image-text-to-text",
                         model_name=f.name, tags=list(TAGS))  # fmt: skip
    base = f"[{f.base_model}](https://huggingface.co/{f.base_model})" if hub else f"the model in `{f.base_model}` (a local folder)"
    pages = f" on {f.pages} page{'s' if f.pages != 1 else ''}" if f.pages is not None else ""
    image, text = '{"type": "image"}', '{"type": "text", "text": instruction}'
    content = f"[{text}, {image}]" if f.layout == TEXT_FIRST else f"[{image}, {text}]"
    size = f"its longest side {f.longest_side} px, as the training pages were rendered" if f.longest_side else "as the training pages"
    versions = ", ".join(f"{k} {v}" for k, v in f.versions.items())
    return f"""---
{data.to_yaml()}
---

# {f.name}

This model is a fine-tuned version of {base}, trained{pages} with GRPO (TRL's `GRPOTrainer`, run by olmocr-rl) to transcribe document pages: the reward of a transcription was the pass rate of [olmOCR-bench](https://huggingface.co/datasets/allenai/olmOCR-bench) unit tests on its page.

## Quick start: one page

```python
from PIL import Image
from transformers import AutoModelForImageTextToText, AutoProcessor

model_id = {f.model_id!r}
processor = AutoProcessor.from_pretrained(model_id)
model = AutoModelForImageTextToText.from_pretrained(model_id, dtype="auto", device_map="auto")

page = Image.open("page.png").convert("RGB")  # one page image, {size}
instruction = {f.instruction!r}
messages = [{{"role": "user", "content": {content}}}]
prompt = processor.apply_chat_template(messages, add_generation_prompt=True)
inputs = processor(text=[prompt], images=[page], return_tensors="pt").to(model.device)
ids = model.generate(**inputs, max_new_tokens={f.max_new_tokens}, do_sample=False)
print(processor.decode(ids[0, inputs["input_ids"].shape[1] :], skip_special_tokens=True))
```

## Every tested page of an olmOCR-bench folder

```bash
olmocr-rl generate {f.model_id} BENCH_DIR --candidate NAME{f.prompt_option}   # BENCH_DIR/NAME/*.md
olmocr-rl bench BENCH_DIR -c NAME
```

## Training procedure

Trained with {versions}; the resolved configuration is `train_config.json` beside the weights.
"""
