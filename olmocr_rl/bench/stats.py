"""The bootstrap confidence interval of a candidate's score (seeded) and numpy's linear percentile."""

from __future__ import annotations

import bisect
import math
import random
from collections.abc import Sequence
from typing import Optional


def percentile(values: Sequence[float], q: float) -> float:
    """numpy.percentile(values, q) with the default linear method."""
    xs = sorted(values)
    if not xs:
        raise ValueError("percentile of no values")
    pos = (len(xs) - 1) * (q / 100.0)
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    t = pos - lo
    a, b = xs[lo], xs[hi]
    diff = b - a
    # numpy's _lerp: a + diff*t, computed from the upper end when t >= 0.5
    return b - diff * (1 - t) if t >= 0.5 else a + diff * t


def _binomial_cdf(n: int, k: int) -> list[float]:
    """Cumulative Binomial(n, k/n) probabilities of 0..n successes."""
    p = k / n
    logs = [
        math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * math.log(p) + (n - i) * math.log1p(-p) for i in range(n + 1)
    ]
    top = max(logs)
    acc, cdf = 0.0, []
    for v in logs:
        acc += math.exp(v - top)
        cdf.append(acc)
    return [c / acc for c in cdf]


# What every output says instead of an interval when none was computed (`--bootstrap-samples 0`).
NO_INTERVAL = "no interval (--bootstrap-samples 0)"


def bootstrap_ci(
    groups: Sequence[Sequence[float]], *, samples: int = 1000, level: float = 0.95, seed: int = 0
) -> tuple[float, float] | None:
    """Bootstrap CI of the mean of group means over 0/1 scores, resampling within each group
    (the reference's `calculate_bootstrap_ci` with splits), seeded. Each resampled group's pass
    count is drawn from Binomial(n, passed/n), the law of a with-replacement resample's sum.
    None with no resamples (`samples` 0): no interval, rather than a made-up (0, 0)."""
    if samples <= 0:
        return None
    groups = [g for g in groups if len(g)]
    if not groups:
        return (0.0, 0.0)
    rng = random.Random(seed)
    # Per group: its size and the cumulative Binomial(n, passed/n) law (None: constant group).
    laws: list[tuple[int, float, Optional[list[float]]]] = []
    for g in groups:
        n, k = len(g), int(sum(g))
        laws.append((n, k / n, None if k in (0, n) else _binomial_cdf(n, k)))

    # Group by group (each group's draws in one comprehension): the resample means are the
    # per-resample sums of the groups' resampled rates.
    totals = [0.0] * samples
    for n, rate, cdf in laws:
        if cdf is None:
            draws = [rate] * samples
        else:
            r, cut = rng.random, bisect.bisect_right
            draws = [min(cut(cdf, r()), n) / n for _ in range(samples)]
        totals = [a + b for a, b in zip(totals, draws)]
    means = [t / len(laws) for t in totals]
    alpha = (1 - level) / 2
    return (percentile(means, alpha * 100), percentile(means, (1 - alpha) * 100))
