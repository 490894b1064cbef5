"""Prompts for page transcription: the instruction, and where it sits beside the page image.

* `olmocr-rl` (`DEFAULT_PROMPT`): this project's own wording of an olmOCR-style task (YAML front
  matter with the fields `olmocr_rl.front_matter` parses, then the page as plain text with LaTeX
  equations and HTML tables), after the image.
* `olmocr-v4`: the instruction olmOCR 2 was trained and is run with (upstream's
  `build_no_anchoring_v4_yaml_prompt`), before the image, as upstream's `grpo_train.py` and
  pipeline put it. Its text is read at run time from the olmocr 0.4.27 wheel's
  `olmocr/prompts/prompts.py`, which `olmocr-rl install-katex` stores (checked by sha256) beside
  KaTeX; it is not copied into this repository. The function's return expression is read with
  `ast.literal_eval` (a string literal), never executed.

GRPO starts from the policy's own behaviour: a checkpoint must be given the instruction it was
trained with (`--prompt olmocr-v4` for olmOCR 2 checkpoints, `--prompt-file` for another text).
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass
from pathlib import Path

from olmocr_rl.errors import UserError

DEFAULT_PROMPT = (
    "Transcribe the attached image of one document page.\n"
    "Start your answer with YAML front matter between two lines of three dashes (---) that "
    "sets these fields: primary_language (a language code, or null if the page has no text), "
    "is_rotation_valid (true or false), rotation_correction (0, 90, 180 or 270), "
    "is_table (true or false) and is_diagram (true or false).\n"
    "After the front matter, write everything that can be read on the page, in the order a "
    "person would read it, as plain text with light Markdown for headings, bold and italics. "
    "Typeset every equation in LaTeX, with \\( \\) around inline math and \\[ \\] around display "
    "math. Write every table as an HTML <table>. Skip the contents of images and figures but keep "
    "their captions; keep footnotes with their markers."
)


def read_prompt_file(path: str | Path) -> str:
    """The instruction stored in `path` (UTF-8), with trailing newlines removed so that a file
    saved by an editor gives the same prompt as the string typed without them. Raises
    ValueError naming the file when it is unreadable, not UTF-8, or empty."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise PromptError(f"{p}: prompt file is not UTF-8 text ({e.reason} at byte {e.start})") from None
    except OSError as e:
        raise PromptError(f"{p}: cannot read the prompt file ({e.strerror or e})") from None
    text = text.rstrip("\r\n")
    if not text.strip():
        raise PromptError(f"{p}: prompt file is empty")
    return text


IMAGE_FIRST, TEXT_FIRST = "image-text", "text-image"
PROMPT_NAMES = ("olmocr-rl", "olmocr-v4")
OLMOCR_V4_FUNCTION = "build_no_anchoring_v4_yaml_prompt"


class PromptError(UserError, ValueError):
    """A prompt that cannot be had (unknown name, olmOCR's prompts not installed); names the fix."""


@dataclass(frozen=True)
class Prompt:
    name: str  # a PROMPT_NAMES entry, or "file"
    text: str
    layout: str = IMAGE_FIRST  # IMAGE_FIRST or TEXT_FIRST
    source: str = ""  # where the text comes from, for the record and --dry-run


def olmocr_prompts_file() -> Path | None:
    """olmOCR's prompts.py: $OLMOCR_RL_OLMOCR_PROMPTS, else the copy install-katex stored in the user
    cache, else an installed `olmocr` package's (found without importing it)."""
    import olmocr_rl._katex as _katex

    env = os.environ.get("OLMOCR_RL_OLMOCR_PROMPTS")
    if env:
        return Path(env)
    cached = _katex.olmocr_cache_dir() / "prompts.py"
    if cached.is_file():
        return cached
    import importlib.util

    try:
        spec = importlib.util.find_spec("olmocr")
    except (ImportError, ValueError):
        return None
    for root in (spec.submodule_search_locations or []) if spec else []:
        path = Path(root) / "prompts" / "prompts.py"
        if path.is_file():
            return path
    return None


def olmocr_v4() -> Prompt:
    """olmOCR 2's instruction (see the module docstring)."""
    path = olmocr_prompts_file()
    if path is None:
        raise PromptError("olmOCR's prompts are not installed: run `olmocr-rl install-katex` (it stores them beside KaTeX)")
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == OLMOCR_V4_FUNCTION)
        ret = next(n for n in fn.body if isinstance(n, ast.Return))
        text = ast.literal_eval(ret.value)  # type: ignore[arg-type]
    except (OSError, SyntaxError, StopIteration, ValueError) as e:
        raise PromptError(
            f"{path}: no string {OLMOCR_V4_FUNCTION}() to read ({type(e).__name__}); run `olmocr-rl install-katex` again"
        ) from None
    if not isinstance(text, str) or not text.strip():
        raise PromptError(f"{path}: {OLMOCR_V4_FUNCTION}() does not return a string literal")
    return Prompt("olmocr-v4", text, TEXT_FIRST, f"olmOCR's {OLMOCR_V4_FUNCTION}(), read from {path}")


def resolve_prompt(name: str | None = None, prompt_file: str | Path | None = None) -> Prompt:
    """The prompt by name (default `olmocr-rl`), or a file's text (after the image, as ours)."""
    if prompt_file is not None:
        return Prompt("file", read_prompt_file(prompt_file), IMAGE_FIRST, str(prompt_file))
    name = name or "olmocr-rl"
    if name == "olmocr-rl":
        return Prompt("olmocr-rl", DEFAULT_PROMPT, IMAGE_FIRST, "olmocr-rl's own instruction (olmocr_rl/prompts.py)")
    if name == "olmocr-v4":
        return olmocr_v4()
    raise PromptError(f"unknown prompt {name!r}; choose from {', '.join(PROMPT_NAMES)}, or give a file (--prompt-file)")


def conversation(text: str, layout: str = IMAGE_FIRST) -> list[dict]:
    """The one user turn trl and the chat template take: the page image and the instruction, in
    the prompt's order."""
    image, instruction = {"type": "image"}, {"type": "text", "text": text}
    return [{"role": "user", "content": [instruction, image] if layout == TEXT_FIRST else [image, instruction]}]


def row_conversation(row: dict) -> list[dict]:
    """A prepared row's conversation: its instruction (`prompt`) and its page image in the row's
    layout (`prompt_layout`, image first when absent). Every engine builds its prompt from this."""
    return conversation(str(row["prompt"]), str(row.get("prompt_layout", IMAGE_FIRST)))
