"""What the training tests share: the bench fixtures prepared as `olmocr-rl prepare` would, the tiny
random VLM, the demo's recipe, and `olmocr-rl train` as a subprocess. Importing this module needs
no training stack; the `prepared` and `tiny_model` session fixtures (conftest.py) build on it."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "bench_fixtures"
# Tiny GRPO: one page x 4 generations per step, 16-token completions; the demo's recipe
# (docs/training.md).
RECIPE = FIXTURES / "tiny_grpo.yaml"
QUIET = ["progress=false"]
CLI = str(Path(sys.executable).parent / "olmocr-rl")


def make_prepared(out: Path) -> Path:
    """The bench fixtures prepared by `olmocr-rl prepare` (one PDF of three held out for eval)."""
    from olmocr_rl.prepare import PrepareOptions, prepare

    result = prepare(FIXTURES, out, PrepareOptions(longest_side=140, eval_fraction=0.34, workers=1, seed=0), progress=False)
    assert len(result.train) == 3 and len(result.eval) == 1
    return out


def build_model(out: Path, family: str = "qwen2_5_vl", **kwargs) -> Path:
    """bench_fixtures/tiny_vlm.py's tiny random model of `family`."""
    sys.path.insert(0, str(FIXTURES))
    try:
        from tiny_vlm import build_tiny_vlm
    finally:
        sys.path.remove(str(FIXTURES))
    return build_tiny_vlm(out, family, **kwargs)


def cfg_for(prepared: Path, model: Path | str, out: Path, *extra: str):
    from olmocr_rl.train.config import load_config

    return load_config(RECIPE, [*QUIET, *extra], prepared_dir=str(prepared), model=str(model), output_dir=str(out))


def tree_digest(folder: Path) -> str:
    """sha256 over every file's relative path and bytes: to tell whether a shared folder changed."""
    h = hashlib.sha256()
    for p in sorted(q for q in Path(folder).rglob("*") if q.is_file()):
        h.update(p.relative_to(folder).as_posix().encode() + b"\0" + p.read_bytes())
    return h.hexdigest()
