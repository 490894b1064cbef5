"""What scoring a candidate yields: per-test outcomes over repeats, the candidate's figures as the
reference computes them, and the whole run's summary."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from olmocr_rl.bench.folder import Bench


@dataclass
class TestOutcome:
    id: str
    type: str
    group: str
    pdf: str
    page: Any
    md_files: list[str]  # relative to the candidate folder, sorted
    passes: int = 0
    explanations: list[str] = field(default_factory=list)  # of the failed repeats, in file order
    errors: list[str] = field(default_factory=list)

    @property
    def repeats(self) -> int:
        return len(self.md_files)

    @property
    def avg(self) -> float:
        return self.passes / self.repeats if self.repeats else 0.0

    @property
    def passed(self) -> bool:
        return self.avg > 0.5  # majority of repeats, strictly


@dataclass
class CandidateResult:
    name: str
    outcomes: list[TestOutcome]
    errors: list[str]
    missing: list[str]
    ci: tuple[float, float] | None  # None: no interval computed (--bootstrap-samples 0)
    details: list[dict] = field(default_factory=list)  # the details rows, when run_bench keeps them

    @property
    def failed(self) -> bool:
        return bool(self.errors)

    @cached_property
    def by_jsonl(self) -> dict[str, tuple[int, int]]:
        out: dict[str, list[int]] = {}
        for o in self.outcomes:
            g = out.setdefault(o.group, [0, 0])
            g[0] += o.passed
            g[1] += 1
        return {k: (p, t) for k, (p, t) in out.items()}

    @cached_property
    def by_type(self) -> dict[str, tuple[float, int]]:
        sums: dict[str, list[float]] = {}
        for o in self.outcomes:
            s = sums.setdefault(o.type, [0.0, 0])
            s[0] += o.avg
            s[1] += 1
        return {k: (s / n, int(n)) for k, (s, n) in sorted(sums.items())}

    @property
    def score_ignoring_errors(self) -> float:
        rates = [p / t for p, t in self.by_jsonl.values() if t]
        return sum(rates) / len(rates) if rates else 0.0

    @property
    def score(self) -> float:
        """The reference's headline: 0 for a candidate with any error."""
        return 0.0 if self.failed else self.score_ignoring_errors

    @property
    def status(self) -> str:
        """As the reference prints it."""
        return "FAILED (errors)" if self.failed else f"{self.score * 100:0.1f}%"


PASS_RULE = "majority"  # a test passes when more than half of its repeats pass (the reference's rule)


def semantics(guard: str, options: dict[str, Any], seed: int) -> dict[str, Any]:
    """Every choice that changes a score, named: `guard` (the checks' rules), `sample` (None, or
    the tests scored of those available and the seed that drew them), `skip_baseline`, and
    `pass_rule` (always the majority rule). What `--json` holds, and each `--details` record."""
    sample = options.get("sample")
    return {
        "guard": guard,
        "sample": {"tests": sample, "of": options.get("tests_available"), "seed": seed} if sample else None,
        "skip_baseline": bool(options.get("skip_baseline")),
        "pass_rule": PASS_RULE,
    }


def describe_semantics(sem: dict[str, Any]) -> list[str]:
    """`semantics` in words, one line per choice (the console and the report print them)."""
    from olmocr_rl.suite import guard_rules

    guard = sem["guard"]
    rules = guard_rules(guard)
    lines = [
        f"guard {guard}" + (" (the published olmOCR-bench checks)" if not rules else ", NOT the published checks: " + "; ".join(rules)),
    ]
    sample = sem.get("sample")
    if sample:
        lines.append(f"--sample {sample['tests']}: {sample['tests']} of {sample['of']} tests scored, drawn with seed {sample['seed']}")
    else:
        lines.append("every test scored (no --sample)")
    lines.append(
        "baseline tests dropped (--skip-baseline)" if sem["skip_baseline"] else "baseline tests kept (one added for each PDF without one)"
    )
    lines.append("a test passes when more than half of its repeats pass (the majority rule)")
    return lines


@dataclass
class BenchSummary:
    bench: Bench
    candidates: list[CandidateResult]
    bootstrap_samples: int
    confidence_level: float
    seed: int
    # How the run was made, for reports: tests_available (before --sample), sample (None when
    # every test was scored), skip_baseline, force.
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def semantics(self) -> dict[str, Any]:
        return semantics(self.bench.suite.guard, self.options, self.seed)
