"""The files `olmocr-rl synth` takes from the olmocr 0.4.27 wheel at run time (never copied into this
repository): KaTeX's stylesheet, script and auto-render (what upstream's renderer adds to each page)
and the synthetic pipeline's module, `olmocr/bench/synth/mine_html_templates.py`, whose conversation
with the model `olmocr_rl.synth.endpoint` reads. `olmocr-rl install-katex` stores them (checked by
sha256, `olmocr_rl._katex.SYNTH_MEMBERS`) beside katex.min.js and olmOCR's prompts.py; an installed
`olmocr` package's copies are found too. Each file is checked by sha256 when it is used."""

from __future__ import annotations

import hashlib
from pathlib import Path

import olmocr_rl._katex as _katex
from olmocr_rl.errors import UserError

FIX = "run `olmocr-rl install-katex` (it stores them from the olmocr 0.4.27 wheel)"


class AssetError(UserError, RuntimeError):
    """A file synth needs is missing or not olmocr 0.4.27's."""


def _member(member: str) -> tuple[str, str]:
    where, digest = _katex.SYNTH_MEMBERS[member]
    return member.rsplit("/", 1)[1], digest


def _checked(path: Path, digest: str) -> Path:
    if hashlib.sha256(path.read_bytes()).hexdigest() != digest:
        raise AssetError(f"{path}: not olmocr {_katex.OLMOCR_PIN}'s file (sha256 mismatch); {FIX}")
    return path


def katex_files() -> tuple[Path, Path, Path]:
    """katex.min.css, katex.min.js and auto-render.min.js, from the folder of the katex.min.js the
    math checks use."""
    js = _katex.find_katex_js()
    if js is None or not js.is_file():
        raise AssetError(f"KaTeX is not installed; {FIX}")
    _checked(js, _katex.KATEX_SHA256)
    out = []
    for member in ("olmocr/bench/katex/katex.min.css", "olmocr/bench/katex/auto-render.min.js"):
        name, digest = _member(member)
        path = js.parent / name
        if not path.is_file():
            raise AssetError(f"{path}: KaTeX's {name} is missing beside {js.name}; {FIX}")
        out.append(_checked(path, digest))
    return out[0], js, out[1]


def pipeline_module() -> Path:
    """olmOCR's mine_html_templates.py (0.4.27's), found beside olmOCR's prompts.py."""
    from olmocr_rl.prompts import olmocr_prompts_file

    name, digest = _member("olmocr/bench/synth/mine_html_templates.py")
    prompts = olmocr_prompts_file()
    candidates = [prompts.parent / name] if prompts else []
    if prompts is not None and prompts.parent.name == "prompts":  # an installed olmocr package: olmocr/prompts/prompts.py
        candidates.append(prompts.parent.parent / "bench" / "synth" / name)
    for path in candidates:
        if path.is_file():
            return _checked(path, digest)
    raise AssetError(f"olmOCR's synthetic pipeline ({name}) is not installed; {FIX}")
