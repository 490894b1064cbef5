"""`olmocr-rl install-katex`: KaTeX 0.16.21 for math checks, into the user cache."""

from pathlib import Path
from typing import Annotated, Optional

import typer

from olmocr_rl.cli import app, echo, example, fail

ABOUT = """Install KaTeX 0.16.21's katex.min.js, which math checks need (the file the reference renders
with), and olmOCR's prompts.py (`--prompt olmocr-v4` reads olmOCR 2's instruction from it), with what
`olmocr-rl synth` takes from the same wheel (KaTeX's CSS and auto-render, olmOCR's synthetic pipeline
module, whose model conversation it reads): taken from the olmocr 0.4.27 wheel on the package index (pip, without dependencies) or from --from-wheel,
checked by sha256, and stored in the user cache, where every olmocr-rl entry point finds them.
OLMOCR_RL_KATEX_JS / OLMOCR_RL_OLMOCR_PROMPTS, when set, still take precedence."""


@app.command(
    "install-katex",
    epilog=example("olmocr-rl install-katex"),
    help=ABOUT,
    short_help="Install KaTeX 0.16.21 for math checks (into the user cache).",
)
def install_katex_command(
    from_wheel: Annotated[
        Optional[Path], typer.Option("--from-wheel", help="Use this olmocr 0.4.27 wheel file instead of downloading it.")
    ] = None,
    dir: Annotated[Optional[Path], typer.Option("--dir", help="Store katex.min.js here instead of the user cache.")] = None,
) -> int:
    import olmocr_rl._katex as _katex

    try:
        path = _katex.install(from_wheel, dir)
    except OSError as e:  # (a refusal, KatexInstallError, is a UserError: main prints it)
        fail(str(e))
    echo(f"installed KaTeX {_katex.KATEX_VERSION}: {path}")
    if dir is not None and _katex.find_katex_js() != path:
        echo(f"olmocr-rl looks in {_katex.cache_dir()}; for this folder set OLMOCR_RL_KATEX_JS={path} "
             f"and OLMOCR_RL_OLMOCR_PROMPTS={path.parent / 'prompts.py'}")  # fmt: skip
    return 0
