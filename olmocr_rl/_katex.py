"""Where math checks find KaTeX 0.16.21's `katex.min.js` (never part of this repository).

Order: the `OLMOCR_RL_KATEX_JS` environment variable; else the file shipped inside the installed
`olmocr` PyPI package (`pip install --no-deps olmocr==0.4.27`), found without importing it
(its `bench.katex` package imports Playwright). The Rust core checks the version when it loads
the file; if none is found, math checks return an error verdict that says how to install it.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

OLMOCR_PIN = "0.4.27"


def find_katex_js() -> Path | None:
    env = os.environ.get("OLMOCR_RL_KATEX_JS")
    if env:
        return Path(env)
    try:
        spec = importlib.util.find_spec("olmocr")
    except (ImportError, ValueError):
        return None
    for root in (spec.submodule_search_locations or []) if spec else []:
        path = Path(root) / "bench" / "katex" / "katex.min.js"
        if path.is_file():
            return path
    return None


def configure() -> None:
    """Points the Rust core at the KaTeX file (call again after installing olmocr)."""
    from olmocr_rl import _core

    path = find_katex_js()
    _core.set_katex_path(str(path) if path else None)
