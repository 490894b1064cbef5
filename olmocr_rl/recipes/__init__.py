"""Packaged training recipes (`train --config NAME` reads NAME.yaml here), and where the olmOCR 2
recipe departs on purpose from upstream's final runs (allenai/olmocr f7cfe4c, trained with the trl
commit its launch script installs, 2a81076): DEPARTURES, one table that `train --dry-run` prints for
a config it applies to and that docs/training.md shows (tests/test_recipes.py holds the two equal).
Everything else of `--config olmocr2` is upstream's objective, down to the end token the eos reward
counts and trl's KL estimator (`use_bias_correction_kl: false`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Departure:
    what: str
    ours: str
    upstream: str
    why: str
    applies: Callable[[Any], bool]  # TrainConfig -> whether this config departs so


DEPARTURES = (
    Departure("bench reward", "PR #462's short-output and PR #476's footnote guards (bench_guard: short-output+footnote)", "no guard",
              "a near-empty page passes every absent test and some present ones, a stray marker footnote tests; the guard makes "
              "them fail (docs/checks.md §3.1.1, §3.7.1)", lambda c: c.bench_guard != "none" and any(n.startswith("bench") for n in c.rewards)),
    Departure("evaluation", "every eval_steps on max_eval_pages pages x num_generations_eval samples", "never (no eval strategy set)",
              "the eval curve is the only sign of overfitting a run gives", lambda c: c.eval_enabled and c.eval_steps > 0),
    Departure("save_total_limit", "as set (the recipe: 3)", "30", "30 DeepSpeed checkpoints of a 7-8 B model take ~4 TB",
              lambda c: c.save_total_limit != 30),
    Departure("prompt length", "checked before launch (max_prompt_tokens: a page over it is an error)",
              "trl's max_prompt_length=3000 cut longer prompts", "a cut prompt loses image tokens silently", lambda c: True),
    Departure("vision placeholder tokens", "never sampled (suppress_tokens; vLLM logit bias -100)", "can be sampled",
              "a sampled image placeholder token ends the step: image tokens no longer match the image features", lambda c: True),
    Departure("sampling seeds", "each rank's engine rank_seed(seed, rank); the server --seed seed", "seed + rank; the engine "
              "seeded with the rank index; no server seed", "runs of different seeds (a soup's) sample independently",
              lambda c: True),
    Departure("front-matter reward", "scores the front matter's form only when a page has no reference",
              "scored against claude_original references", "a prepared folder without claude_original/ has no reference "
              "(pre-flight warns)", lambda c: "front-matter" in c.rewards),
    Departure("repetition loops", "stopped once they span loop_min_span tokens (loop_stop); trained as truncated, scored as the "
              "loop continued to the limit", "run on to max_completion_length", "one looping completion makes its whole "
              "generation round run to the limit; the stop changes nothing but length (docs/training.md, repetition loops)",
              lambda c: bool(getattr(c, "loop_stop", False))),
)  # fmt: skip


def departures(cfg: Any) -> list[Departure]:
    """The DEPARTURES this config makes."""
    return [d for d in DEPARTURES if d.applies(cfg)]


def departures_table() -> list[str]:
    """DEPARTURES as the Markdown table docs/training.md holds."""
    rows = ["| setting | olmocr-rl | upstream (f7cfe4c) | why |", "|---|---|---|---|"]
    return rows + [f"| {d.what} | {d.ours} | {d.upstream} | {d.why} |" for d in DEPARTURES]


def recipe_path(name: str) -> Path | None:
    """A packaged recipe (olmocr_rl/recipes/NAME.yaml) by name, e.g. `--config olmocr2`."""
    if not name or any(c in name for c in "/\\."):
        return None
    p = Path(str(resources.files(__name__).joinpath(f"{name}.yaml")))
    return p if p.is_file() else None


def recipe_names() -> list[str]:
    return sorted(Path(str(f)).stem for f in resources.files(__name__).iterdir() if str(f).endswith(".yaml"))
