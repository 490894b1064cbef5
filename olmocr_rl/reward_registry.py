"""The built-in rewards, one table (`REWARDS`): a name, what builds its function, how it averages a
page's tests (the bench rewards), whether it is scored against the page's reference output, and
one line saying what it pays. Training (`rewards: {NAME: WEIGHT}`) and its pre-flight, `curate`
(which measures difficulty on the bench rewards), `olmocr-rl train --options` and the table in
docs/training.md all read it: a new built-in reward is its function plus one entry here
(docs/development.md shows the diff).

`build_rewards(weights, context)` turns a config's `rewards:` mapping into trl reward functions,
in order: a built-in by name, or a function of the user's own (`package.module:function`,
`load_user_reward`). The context carries what the factories need (the tests, the tokenizer, the
rank's collectives); training passes its own (olmocr_rl/train/rewards.py: the bench rewards also
log per-type pass rates and record failing tests).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from olmocr_rl.errors import ConfigError
from olmocr_rl.rewards import (
    BenchReward,
    EditDistanceReward,
    ElementCountReward,
    EosReward,
    FrontMatterReward,
    MedoidReward,
    RectTablesReward,
    single_process,
)
from olmocr_rl.suite import TRAINING_GUARD, BenchSuite, Guard


@dataclass
class RewardContext:
    """What the reward factories are built with: the prepared folder's tests (loaded once, shared
    by every bench reward), the scoring threads and guard, the processor and model (the eos
    reward's token), and how a rank sees the others (the medoid reward's page groups)."""

    tests: str | os.PathLike[str] | BenchSuite
    threads: int | None = None
    guard: Guard = TRAINING_GUARD
    processor: Any = None
    model: Any = None
    gather: Callable[[list], list[list]] = single_process
    rank: int = 0
    _suite: BenchSuite | None = field(default=None, repr=False)

    def suite(self) -> BenchSuite:
        if self._suite is None:
            self._suite = self.tests if isinstance(self.tests, BenchSuite) else BenchSuite.load(self.tests)
        return self._suite

    def bench(self, average: str) -> Callable:
        """A bench reward averaging each page's tests as `average` says."""
        return BenchReward(self.suite(), average, threads=self.threads, guard=self.guard)  # type: ignore[arg-type]

    def eos_token_ids(self) -> list[int]:
        """The end token the eos reward looks for: the tokenizer's `eos_token_id`, as upstream's reward
        (grpo_train.py: `processor.tokenizer.eos_token_id`; for Qwen2.5-VL <|im_end|>, not the
        <|endoftext|> that generation also stops at). The generation config's end tokens only when
        the tokenizer names none."""
        tok = getattr(getattr(self.processor, "tokenizer", self.processor), "eos_token_id", None)
        source = tok if tok is not None else getattr(getattr(self.model, "generation_config", None), "eos_token_id", None)
        ids = [source] if isinstance(source, int) else [int(x) for x in source or ()]
        if not ids:
            raise ConfigError("the eos reward needs an end-of-sequence token, but neither the tokenizer nor the generation config has one")
        return sorted(set(ids))


@dataclass(frozen=True)
class Reward:
    build: Callable[[RewardContext], Callable]  # the reward function trl calls
    about: str  # what it pays, in one line
    average: str | None = None  # a bench reward: how a page's tests are averaged (BenchReward's `average`)
    needs_reference: bool = False  # scored against the page's reference output (the `claude_original` column)
    without_reference: str = ""  # what it pays when no page has a reference (pre-flight's warning)

    @property
    def bench(self) -> bool:
        """Scored on the page's olmOCR-bench tests."""
        return self.average is not None


REWARDS: dict[str, Reward] = {
    "bench": Reward(lambda c: c.bench("micro"), "olmOCR-bench pass rate: passed / total of the page's tests (olmOCR's reward)",
                    average="micro"),
    "bench-macro": Reward(lambda c: c.bench("macro"), "the mean of the page's per-type pass rates (each test type counts equally)",
                          average="macro"),
    "bench-graded": Reward(lambda c: c.bench("graded"), "mean per-test credit: 1 per pass, a failed present/format test its "
                           "similarity / threshold (a denser signal; not a benchmark number)", average="graded"),
    "eos": Reward(lambda c: EosReward(c.eos_token_ids()), "1 when the completion ended with the end-of-sequence token"),
    "front-matter": Reward(lambda c: FrontMatterReward(), "olmOCR's YAML front matter: 0 unparsable, 0.5 valid, +0.1 per field "
                           "equal to the reference's", needs_reference=True, without_reference="scores only the format (0 or 0.5)"),
    "medoid": Reward(lambda c: MedoidReward("page", threads=c.threads, gather=c.gather, rank=c.rank),
                     "1 - Levenshtein distance to the medoid of the page's completions (gathered from every rank) / the largest "
                     "pairwise distance"),
    "medoid-batch": Reward(lambda c: MedoidReward("batch", threads=c.threads),
                           "as medoid, over whatever list trl hands one rank (pages mixed: upstream's mode)"),
    "edit-distance": Reward(lambda c: EditDistanceReward(threads=c.threads), "RapidFuzz fuzz.ratio to the page's reference / 100",
                            needs_reference=True, without_reference="is 0 for every completion"),
    "element-count": Reward(lambda c: ElementCountReward(threads=c.threads), "0.5 for each of the HTML table and math span counts "
                            "equal to the reference's", needs_reference=True, without_reference="is 0 for every completion"),
    "rect-tables": Reward(lambda c: RectTablesReward(threads=c.threads), "the share of the completion's HTML tables that are "
                          "rectangular (1 without tables; 0 where upstream's table parser raises)"),
}  # fmt: skip


def bench_names() -> list[str]:
    """The rewards scored on the page's tests."""
    return [name for name, r in REWARDS.items() if r.bench]


def is_user_reward(name: str) -> bool:
    """`package.module:attribute`: a reward function (or class) of the user's own."""
    module, _, attr = name.partition(":")
    return bool(module and attr) and all(part.isidentifier() for part in module.split(".")) and attr.isidentifier()


def uses_tests(names: list[str] | dict[str, Any]) -> bool:
    """Whether any of these rewards scores the page's tests (so the tests must be checkable here)."""
    return any(n in REWARDS and REWARDS[n].bench for n in names)


def unknown_reward(name: str) -> ConfigError | None:
    """The error for a reward name that is neither built in nor a user's `package.module:function`."""
    if name in REWARDS or is_user_reward(name):
        return None
    import difflib

    close = difflib.get_close_matches(name, list(REWARDS), n=3, cutoff=0.6)
    hint = f" (did you mean {', '.join(repr(c) for c in close)}?)" if close else ""
    return ConfigError(
        f"unknown reward {name!r}{hint}; choose from {', '.join(REWARDS)}, or name a function of your own as 'package.module:function'"
    )


def load_user_reward(name: str) -> Callable:
    """`package.module:attribute` imported: a function, or a class instantiated without
    arguments. ConfigError naming it when it does not import, is not callable, or cannot take
    trl's keyword arguments (`prompts`, `completions` and the dataset columns)."""
    import importlib
    import inspect

    module_name, _, attr = name.partition(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as e:  # noqa: BLE001 - any import failure is the user's to fix
        raise ConfigError(f"reward {name!r}: cannot import {module_name} ({type(e).__name__}: {e})") from None
    try:
        obj = getattr(module, attr)
    except AttributeError:
        raise ConfigError(f"reward {name!r}: {module_name} has no attribute {attr!r}") from None
    if inspect.isclass(obj):
        try:
            obj = obj()
        except Exception as e:  # noqa: BLE001
            raise ConfigError(
                f"reward {name!r}: {attr}() failed ({type(e).__name__}: {e}); a reward class must take no arguments"
            ) from None
    if not callable(obj):
        raise ConfigError(f"reward {name!r}: {type(obj).__name__} is not callable")
    try:
        params = inspect.signature(obj).parameters.values()
    except (TypeError, ValueError):
        return obj
    kinds = {p.kind for p in params}
    named = {p.name for p in params}
    if inspect.Parameter.VAR_KEYWORD not in kinds or not ({"completions"} <= named or inspect.Parameter.VAR_POSITIONAL in kinds):
        raise ConfigError(
            f"reward {name!r}: its signature {inspect.signature(obj)} cannot take trl's call; "
            "write it as def reward(prompts, completions, **kwargs) -> list[float]"
        )
    return obj


def build_rewards(weights: dict[str, float], context: RewardContext) -> tuple[list[Callable], list[float]]:
    """The reward functions of `weights` (name -> weight) and their weights, in the order given."""
    funcs: list[Callable] = []
    for name in weights:
        if name in REWARDS:
            funcs.append(REWARDS[name].build(context))
        elif is_user_reward(name):
            funcs.append(load_user_reward(name))
        else:
            raise unknown_reward(name) or AssertionError(name)
    return funcs, [float(w) for w in weights.values()]


def markdown_table() -> str:
    """The table as docs/training.md shows it (tests/test_reward_registry.py holds the two equal)."""
    rows = ["| reward | what it pays | scored on the page's tests | needs the page's reference output |", "|---|---|---|---|"]
    for name, r in REWARDS.items():
        rows.append(f"| `{name}` | {r.about} | {r.average + ' average' if r.average else 'no'} | {'yes' if r.needs_reference else 'no'} |")
    return "\n".join(rows)
