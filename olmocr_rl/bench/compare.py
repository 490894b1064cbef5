"""Two candidates compared on the same tests: per JSONL file, per test type and overall, the
difference B − A with a paired bootstrap interval, and the tests gained and lost.

What is compared is what the reference reports (`olmocr/bench/benchmark.py`):

* overall: the score, the unweighted mean of the per-JSONL pass rates, where a test passes when
  most of its repeats pass; per JSONL file: that file's pass rate;
* per type: the mean over the type's tests of `test_avg`, the share of a test's repeats that
  passed (a test with one failing repeat of three counts 2/3);
* gained / lost: tests that pass (by the majority rule) in B and not in A / in A and not in B.

The interval: tests pair by id (both candidates ran on the same bench folder, so every test has
both verdicts). Each resample draws, within each JSONL file, as many tests as the file holds, with
replacement (the strata of the reference's own interval, `calculate_bootstrap_ci(splits=...)`), and
takes the same tests for both candidates; the differences of that resample follow from the
per-test differences. Per type, the resample's mean over the type's drawn tests (a resample that
draws none of a type's tests is left out of that type's percentiles). Percentiles are numpy's
linear ones, as for the score's interval. With two identical candidates every per-test
difference is 0, so is every resample, and the interval is exactly (0, 0). With no resamples
(`--bootstrap-samples 0`) there is no interval (`ci` None) and no verdict on the difference.

A candidate with errors (FAILED, score 0 in the reference) is compared on its figures ignoring
errors (an error counts as a failed repeat), and the verdict says so first.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from olmocr_rl.bench.results import BenchSummary, CandidateResult
from olmocr_rl.bench.stats import NO_INTERVAL
from olmocr_rl.paths import for_rich


@dataclass
class Difference:
    """One row of a comparison: A's figure, B's, B − A with its interval, and flips."""

    name: str
    tests: int
    a: float
    b: float
    diff: float
    ci: tuple[float, float] | None  # None: no resamples, no interval
    gained: int
    lost: int


@dataclass
class Comparison:
    a: str
    b: str
    tests: int
    overall: Difference
    by_jsonl: list[Difference]
    by_type: list[Difference]
    gained: list[str]  # test ids passing in B only, in the bench's order
    lost: list[str]  # test ids passing in A only
    samples: int
    level: float
    seed: int
    notes: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)  # of a and b, those with errors (FAILED, score 0 in the reference)

    def to_dict(self) -> dict:
        out = asdict(self)
        for row, d in zip([out["overall"], *out["by_jsonl"], *out["by_type"]], [self.overall, *self.by_jsonl, *self.by_type]):
            row["ci"] = None if d.ci is None else list(d.ci)
            row["interval_excludes_zero"] = None if d.ci is None else significance(d) != 0
        out["verdict"] = verdict(self)
        return out


# Tests drawn per block of resamples (bounds the index matrix to ~32 MB of int64).
_BLOCK = 4_000_000


def compare(a: CandidateResult, b: CandidateResult, *, samples: int = 1000, level: float = 0.95, seed: int = 0) -> Comparison:
    """B − A on the tests both scored, with a paired bootstrap interval (see the module
    docstring). Raises ValueError when the two did not score the same tests."""
    import numpy as np

    ids_b = {o.id: o for o in b.outcomes}
    if len(ids_b) != len(b.outcomes) or len(a.outcomes) != len(b.outcomes) or any(o.id not in ids_b for o in a.outcomes):
        raise ValueError(f"{a.name} and {b.name} did not score the same tests: they cannot be compared test by test")
    outs_a = a.outcomes
    outs_b = [ids_b[o.id] for o in outs_a]
    n = len(outs_a)
    pass_a = np.array([o.passed for o in outs_a], dtype=np.int8)
    pass_b = np.array([o.passed for o in outs_b], dtype=np.int8)
    avg_a = np.array([o.avg for o in outs_a], dtype=np.float64)
    avg_b = np.array([o.avg for o in outs_b], dtype=np.float64)
    d_pass = (pass_b - pass_a).astype(np.float64)
    d_avg = avg_b - avg_a
    groups = sorted({o.group for o in outs_a})
    types = sorted({o.type for o in outs_a})
    group_of = np.array([groups.index(o.group) for o in outs_a]) if n else np.zeros(0, dtype=np.int64)
    type_of = np.array([types.index(o.type) for o in outs_a]) if n else np.zeros(0, dtype=np.int64)

    rng = np.random.default_rng(seed)
    boot_jsonl: dict[str, np.ndarray] = {}
    type_sum = np.zeros((len(types), samples))
    type_count = np.zeros((len(types), samples))
    for g, name in enumerate(groups):
        members = np.flatnonzero(group_of == g)
        m = len(members)
        means = np.empty(samples)
        rows = max(1, _BLOCK // m)
        for start in range(0, samples, rows):
            stop = min(samples, start + rows)
            drawn = members[rng.integers(0, m, size=(stop - start, m))]
            means[start:stop] = d_pass[drawn].mean(axis=1)
            kinds = type_of[drawn]
            for t in np.unique(type_of[members]):
                hit = kinds == t
                type_sum[t, start:stop] += np.where(hit, d_avg[drawn], 0.0).sum(axis=1)
                type_count[t, start:stop] += hit.sum(axis=1)
        boot_jsonl[name] = means
    alpha = (1 - level) / 2 * 100

    def interval(values: np.ndarray) -> tuple[float, float] | None:
        if samples <= 0:
            return None
        values = values[~np.isnan(values)]
        if not len(values):
            return (0.0, 0.0)
        lo, hi = np.percentile(values, [alpha, 100 - alpha])
        return (float(lo), float(hi))

    def flips(mask: np.ndarray) -> tuple[int, int]:
        return int(((pass_b == 1) & (pass_a == 0) & mask).sum()), int(((pass_a == 1) & (pass_b == 0) & mask).sum())

    by_jsonl = []
    for g, name in enumerate(groups):
        mask = group_of == g
        rate_a, rate_b = float(pass_a[mask].mean()), float(pass_b[mask].mean())
        by_jsonl.append(
            Difference(name, int(mask.sum()), rate_a, rate_b, float(d_pass[mask].mean()), interval(boot_jsonl[name]), *flips(mask))
        )
    by_type = []
    with np.errstate(invalid="ignore", divide="ignore"):
        boot_type = type_sum / type_count
    for t, name in enumerate(types):
        mask = type_of == t
        by_type.append(
            Difference(
                name, int(mask.sum()), float(avg_a[mask].mean()), float(avg_b[mask].mean()), float(d_avg[mask].mean()),
                interval(boot_type[t]), *flips(mask),
            )
        )  # fmt: skip
    overall_boot = sum(boot_jsonl.values()) / len(groups) if groups else np.zeros(samples)
    overall = Difference(
        "overall", n, a.score_ignoring_errors, b.score_ignoring_errors,
        float(np.mean([d.diff for d in by_jsonl])) if by_jsonl else 0.0, interval(np.asarray(overall_boot)),
        *flips(np.ones(n, dtype=bool)),
    )  # fmt: skip
    notes = [
        f"{c.name} has errors: the reference scores it 0 (FAILED); compared here on its figures ignoring errors" for c in (a, b) if c.failed
    ]
    return Comparison(
        a.name, b.name, n, overall, by_jsonl, by_type,
        gained=[o.id for o, pa, pb in zip(outs_a, pass_a, pass_b) if pb and not pa],
        lost=[o.id for o, pa, pb in zip(outs_a, pass_a, pass_b) if pa and not pb],
        samples=samples, level=level, seed=seed, notes=notes, failed=[c.name for c in (a, b) if c.failed],
    )  # fmt: skip


def compare_summary(summary: BenchSummary, baseline: str | None = None, *, all_pairs: bool = False) -> list[Comparison]:
    """Every other candidate against `baseline` (default: the first candidate), or with
    `all_pairs` every pair (i < j in the summary's order, as candidates[j] − candidates[i])."""
    cands = summary.candidates
    kw = {"samples": summary.bootstrap_samples, "level": summary.confidence_level, "seed": summary.seed}
    if all_pairs:
        return [compare(cands[i], cands[j], **kw) for i in range(len(cands)) for j in range(i + 1, len(cands))]
    names = [c.name for c in cands]
    if baseline is not None and baseline not in names:
        raise ValueError(f"no candidate {baseline!r} to compare against (candidates: {', '.join(names)})")
    base = cands[names.index(baseline)] if baseline is not None else cands[0]
    return [compare(base, c, **kw) for c in cands if c is not base]


def _points(x: float) -> str:
    return f"{x * 100:+.1f}"


def significance(d: Difference) -> int:
    """+1 when B − A's interval lies above 0, -1 when below, 0 when it holds 0 (no clear
    difference, whatever the sign of B − A) or there is no interval."""
    if d.ci is None:
        return 0
    return 1 if d.ci[0] > 0 else -1 if d.ci[1] < 0 else 0


def interval_text(d: Difference) -> str:
    """B − A's interval in points, as every table shows it (NO_INTERVAL without resamples)."""
    return NO_INTERVAL if d.ci is None else f"{_points(d.ci[0])} … {_points(d.ci[1])}"


def verdict(c: Comparison) -> str:
    """The answer to "does B beat A?" in one line: B − A on the score with its interval, the
    tests gained and lost, and whether the interval excludes 0; first, a candidate that is FAILED
    (it has errors: the reference scores it 0), since its difference is on figures ignoring them."""
    o = c.overall
    pct = f"{c.level * 100:g}%"
    sig = significance(o)
    if o.ci is None:
        what = f"{NO_INTERVAL}, so no verdict on the difference"
    elif sig:
        what = f"{c.b} is {'higher' if sig > 0 else 'lower'} (the {pct} interval excludes 0)"
    else:
        what = f"no clear difference (the {pct} interval includes 0)"
    gained = f"{o.gained} test{'' if o.gained == 1 else 's'} gained"
    interval = "" if o.ci is None else f" ({pct} interval {interval_text(o)})"
    line = f"{c.b} − {c.a} = {_points(o.diff)} points{interval}, {gained}, {o.lost} lost: {what}"
    if not c.failed:
        return line
    who = " and ".join(c.failed)
    return f"{who} {'is' if len(c.failed) == 1 else 'are'} FAILED (errors: the reference scores {'it' if len(c.failed) == 1 else 'them'} 0); ignoring errors, {line}"


SIGNIFICANT = "*"  # marks a B − A whose interval excludes 0, in every table (colour is lost in a pipe)
FILE_RULE = "pass rates, a test passing when more than half of its repeats pass"
TYPE_RULE = "A, B and B − A: the mean share of a test's repeats passed; gained / lost: by the majority rule"


def print_comparisons(comparisons: list[Comparison], console: Any = None) -> None:
    """Each comparison as two tables, each row naming what it is and the rule its figures follow:
    per JSONL file with the score (the mean of the files), and per test type; A, B, B − A in
    percentage points with its interval (`*`: the interval excludes 0), the tests gained and lost.
    The verdict lines (`verdict`) are printed before, by the caller."""
    from rich.console import Console

    import olmocr_rl.tables as tables

    console = console or Console()
    for c in comparisons:
        pct = f"{c.level * 100:g}%"
        head = f"B − A with B = {for_rich(c.b)}, A = {for_rich(c.a)}, paired over {c.tests} tests, in points"
        for title, label, rows in (
            (f"{head}, by JSONL file and the score (the mean of the files): {FILE_RULE}", "JSONL file", [*c.by_jsonl, c.overall]),
            (f"by test type: {TYPE_RULE}", "test type", c.by_type),
        ):
            t = tables.table()
            tables.name_column(t, label)
            for col in ("tests", "A %", "B %", "B − A", *([f"{pct} interval"] if c.samples > 0 else []), "gained", "lost"):
                tables.figure_column(t, col)
            for d in rows:
                sig = significance(d)
                style = "green" if sig > 0 else "red" if sig < 0 else ""
                diff = f"[{style}]{_points(d.diff)}{SIGNIFICANT}[/]" if sig else f"{_points(d.diff)} "
                name = "score" if d is c.overall else for_rich(d.name)
                ci = [interval_text(d)] if c.samples > 0 else []
                t.add_row(name, str(d.tests), f"{d.a * 100:.1f}", f"{d.b * 100:.1f}", diff, *ci, str(d.gained), str(d.lost),
                          end_section=d is c.by_jsonl[-1] if c.by_jsonl else False)  # fmt: skip
            tables.show(console, t, title)
        interval = (f"{pct} interval: {c.samples} bootstrap resamples of tests within each JSONL file, the same tests for A and B "
                    f"(seed {c.seed}); {SIGNIFICANT}: the interval excludes 0" if c.samples > 0 else NO_INTERVAL)  # fmt: skip
        console.print(
            f"{interval}; gained / lost: tests passing in B only / in A only.",
            style="dim",
            highlight=False,
        )
        for note in c.notes:
            console.print(f"[yellow]note:[/] {for_rich(note)}", highlight=False)
