"""The one clock of the benchmarks that time calls in-process: wall time (`time.perf_counter`),
the same clock as the reference runs they are compared with, so every ratio in the README's
speed table divides like by like."""

from __future__ import annotations

import time
from collections.abc import Callable


def per_call(fn: Callable[[], object], min_time: float = 1.0) -> float:
    """Seconds per call of `fn`: calls it until `min_time` seconds have passed (at least once)."""
    n, t0 = 0, time.perf_counter()
    while True:
        fn()
        n += 1
        dt = time.perf_counter() - t0
        if dt >= min_time:
            return dt / n
