"""Which groups of sampled rewards teach GRPO something, as a pure function of their rewards.

GRPO's advantage of a completion is its reward minus its group's mean (divided by the group's std
under `scale_rewards=group`), so a page whose completions all earn the same reward teaches nothing
and costs a full group of generations. `KeepRule.keeps(rewards)` says whether a group is worth its
generations: its (Bessel-corrected, as trl's per-group) std above `min_std` (default 0: any
disagreement), its mean strictly between `min_mean` and `max_mean` when they are given. `olmocr-rl
curate` applies it to each page's samples before training (olmocr_rl/curate/selection.py); the
same rule can judge a group during training, where trl computes the same statistics.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


def statistics(rewards: Sequence[float]) -> dict[str, float]:
    """mean, std (Bessel-corrected, as trl's per-group std), min, max."""
    n = len(rewards)
    mean = math.fsum(rewards) / n
    var = math.fsum((r - mean) ** 2 for r in rewards) / (n - 1) if n > 1 else 0.0
    return {"mean": mean, "std": math.sqrt(var), "min": min(rewards), "max": max(rewards)}


@dataclass(frozen=True)
class KeepRule:
    min_std: float = 0.0
    min_mean: float | None = None
    max_mean: float | None = None

    def keeps_stats(self, stats: dict[str, float]) -> bool:
        """For a group's `statistics`: std above min_std, mean strictly inside the bounds given."""
        return (
            stats["std"] > self.min_std
            and (self.min_mean is None or stats["mean"] > self.min_mean)
            and (self.max_mean is None or stats["mean"] < self.max_mean)
        )

    def keeps(self, rewards: Sequence[float]) -> bool:
        """For a group's rewards."""
        return self.keeps_stats(statistics(rewards))

    def describe(self) -> str:
        """The rule as the command line says it: `reward std > 0, mean > 0.6`."""
        text = f"reward std > {self.min_std:g}"
        text += f", mean > {self.min_mean:g}" if self.min_mean is not None else ""
        return text + (f", mean < {self.max_mean:g}" if self.max_mean is not None else "")
