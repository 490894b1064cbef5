"""Prompts for page-transcription training.

`DEFAULT_PROMPT` is this project's own wording of an olmOCR-style task: YAML front matter with
the page metadata fields that `olmocr_rl.front_matter` parses, then the page as plain text with
LaTeX equations and HTML tables. A checkpoint trained with a different instruction should be
given that exact text instead (`olmocr-rl prepare --prompt-file`): GRPO starts from the policy's
own behaviour, and a prompt it has never seen changes that behaviour.
"""

from __future__ import annotations

from pathlib import Path

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
        raise ValueError(f"{p}: prompt file is not UTF-8 text ({e.reason} at byte {e.start})") from None
    except OSError as e:
        raise ValueError(f"{p}: cannot read the prompt file ({e.strerror or e})") from None
    text = text.rstrip("\r\n")
    if not text.strip():
        raise ValueError(f"{p}: prompt file is empty")
    return text
