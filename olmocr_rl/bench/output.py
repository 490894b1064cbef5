"""What a run shows: the JSON summary, the rich tables, the tests every candidate failed and their
records (the reference's `--output_failed`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from olmocr_rl.bench.compare import Comparison
from olmocr_rl.bench.folder import Bench
from olmocr_rl.bench.results import BenchSummary, describe_semantics
from olmocr_rl.bench.stats import NO_INTERVAL
from olmocr_rl.paths import for_rich
from olmocr_rl.suite import TestInfo


def failed_everywhere(summary: BenchSummary) -> list[TestInfo]:
    """The tests that no candidate without errors passed (the reference's `--output_failed`)."""
    valid = [c for c in summary.candidates if not c.failed]
    if not valid:
        return []
    passed = {o.id for c in valid for o in c.outcomes if o.passed}
    scored = {o.id for c in valid for o in c.outcomes}
    return [t for t in summary.bench.tests if t.id in scored and t.id not in passed]


def test_records(bench: Bench, tests: Sequence[TestInfo]) -> list[str]:
    """Each test's JSON record as its file holds it, from the lines the suite loaded (no file is
    read again: a raw U+2028 inside a string stays inside its line); an auto-added baseline test,
    which no file holds, as the record the suite loaded for it."""
    return [bench.suite.line(t.id) for t in tests]


def summary_dict(summary: BenchSummary, comparisons: Sequence[Comparison] = ()) -> dict:
    """The summary as plain JSON data (what `--json` prints); with `comparisons` (`--compare`),
    those too."""
    b = summary.bench
    counts: dict[str, int] = {}
    for t in b.tests:
        counts[t.type] = counts.get(t.type, 0) + 1
    cands = []
    for c in summary.candidates:
        cands.append(
            {
                "name": c.name,
                "status": "failed" if c.failed else "ok",
                "reference_status": c.status,
                "score": c.score,
                "score_ignoring_errors": c.score_ignoring_errors,
                "ci": None if c.ci is None else list(c.ci),  # None: no interval (--bootstrap-samples 0)
                "ci_half_width": None if c.ci is None else (c.ci[1] - c.ci[0]) / 2,
                "tests": len(c.outcomes),
                "by_type": {k: {"score": s, "tests": n} for k, (s, n) in c.by_type.items()},
                "by_jsonl": {k: {"passed": p, "total": t, "rate": p / t} for k, (p, t) in sorted(c.by_jsonl.items())},
                "missing": c.missing,
                "errors": c.errors,
                "failed_tests": [
                    {
                        "id": o.id,
                        "pdf": o.pdf,
                        "page": o.page,
                        "passes": o.passes,
                        "repeats": o.repeats,
                        "passed": o.passed,
                        "explanation": o.explanations[0] if o.explanations else None,
                    }
                    for o in c.outcomes
                    if o.avg < 1.0
                ],
            }
        )
    return {
        "bench": str(b.root),
        "jsonl_files": [f.name for f in b.jsonl_files],
        "pdfs": len(b.pdf_keys),
        "tests": len(b.tests),
        "tests_by_type": dict(sorted(counts.items())),
        "guard": b.suite.guard,
        "semantics": {**summary.semantics, "described": describe_semantics(summary.semantics)},
        "warnings": b.warnings,
        **({"notes": b.notes} if b.notes else {}),
        "ci": {"level": summary.confidence_level, "samples": summary.bootstrap_samples, "seed": summary.seed},
        "candidates": cands,
        **({"comparisons": [c.to_dict() for c in comparisons]} if comparisons else {}),
    }


def interval_text(ci: tuple[float, float] | None) -> str:
    """A score's interval as the tables show it ("88.1 – 95.0%"), or NO_INTERVAL."""
    return NO_INTERVAL if ci is None else f"{ci[0] * 100:.1f} – {ci[1] * 100:.1f}%"


def score_line(c: Any, level: float) -> str:
    """A candidate's score in one line: the score with its interval and tests, or FAILED with why
    and its score ignoring errors. The console and the report print it."""
    if c.failed:
        return (f"{c.name}: FAILED ({len(c.errors)} error(s): the reference scores it 0); {c.score_ignoring_errors * 100:.1f}% "
                f"ignoring errors, {len(c.outcomes)} tests")  # fmt: skip
    if c.ci is None:
        return f"{c.name}: {c.status}, {len(c.outcomes)} tests; {NO_INTERVAL}"
    return f"{c.name}: {c.status} ({level * 100:g}% interval {interval_text(c.ci)}), {len(c.outcomes)} tests"


def print_summary(
    summary: BenchSummary, console: Any = None, *, show_failures: bool = False, comparisons: Sequence[Comparison] = ()
) -> None:
    """Human-readable report: first the verdict of each comparison and the semantics of the run,
    then the scores, the pass rates per JSONL file and per test type, the comparison tables,
    errors and (`show_failures`) every failing test. Tables as `olmocr_rl.tables` draws them."""
    from rich.console import Console

    import olmocr_rl.tables as tables
    from olmocr_rl.bench.compare import print_comparisons, significance, verdict

    console = console or Console()
    b = summary.bench
    console.print(f"olmOCR-bench: {for_rich(b.root)}", style="bold", highlight=False)
    for c in comparisons:
        style = {1: "bold green", -1: "bold red", 0: "bold"}[significance(c.overall)]
        console.print(for_rich(verdict(c)), style=style, highlight=False)
    if not comparisons:  # the answer first: each candidate's score (one, usually)
        for c in summary.candidates:
            console.print(for_rich(score_line(c, summary.confidence_level)), style="bold red" if c.failed else "bold", highlight=False)
    sem = summary.semantics
    console.print("scored with: " + "; ".join(describe_semantics(sem)), style="yellow" if sem["guard"] != "none" else "dim",
                  highlight=False, markup=False)  # fmt: skip
    for w in b.warnings:
        console.print(f"[yellow]warning:[/] {for_rich(w)}", highlight=False)
    for note in b.notes:
        console.print(f"note: {for_rich(note)}", style="dim", highlight=False)
    pct = f"{summary.confidence_level * 100:g}%"
    scores = tables.table()
    tables.name_column(scores, "candidate")
    intervals = summary.bootstrap_samples > 0  # without resamples, no interval columns (NO_INTERVAL in the title)
    for col in ("score", *((f"± ({pct} CI)", f"{pct} interval") if intervals else ()), "tests"):
        tables.figure_column(scores, col)
    for c in summary.candidates:
        if c.failed:
            ignoring = f"[dim]{c.score_ignoring_errors * 100:0.1f}% ignoring errors[/]"
            cells = ["[red]FAILED (errors)[/]", "", ignoring] if intervals else [f"[red]FAILED (errors)[/] {ignoring}"]
        else:
            cells = [c.status, *((f"{(c.ci[1] - c.ci[0]) / 2 * 100:0.1f}%", interval_text(c.ci)) if c.ci is not None else ())]
        scores.add_row(for_rich(c.name), *cells, str(len(c.outcomes)))
    tables.show(console, scores, "score: the mean of the per-JSONL pass rates" + ("" if intervals else f"; {NO_INTERVAL}"))

    cands = summary.candidates
    by_file, by_type = tables.table(), tables.table()
    for t, label in ((by_file, "JSONL file"), (by_type, "test type")):
        tables.name_column(t, label)
        tables.figure_column(t, "tests")
        for c in cands:
            tables.figure_column(t, for_rich(c.name))
    for g in sorted({g for c in cands for g in c.by_jsonl}):
        n = max(c.by_jsonl.get(g, (0, 0))[1] for c in cands)
        cells = [f"{p / t * 100:0.1f}% ({p})" if t else "" for p, t in (c.by_jsonl.get(g, (0, 0)) for c in cands)]
        by_file.add_row(for_rich(g), str(n), *cells)
    for kind in sorted({t for c in cands for t in c.by_type}):
        n = max(c.by_type.get(kind, (0.0, 0))[1] for c in cands)
        by_type.add_row(
            for_rich(kind), str(n), *(f"{s * 100:0.1f}%" if m else "" for s, m in (c.by_type.get(kind, (0.0, 0)) for c in cands))
        )
    tables.show(console, by_file, "pass rate by JSONL file (tests passed): a test passes when more than half of its repeats pass")
    tables.show(console, by_type, "pass rate by test type: the mean over its tests of the share of repeats passed")
    if any(c.failed for c in cands):
        console.print(
            "FAILED (errors): the candidate has errors (listed below) and the reference scores it 0.", style="dim", highlight=False
        )
    if comparisons:
        print_comparisons(list(comparisons), console)
    for c in cands:
        if c.errors:
            console.print(f"[red]{for_rich(c.name)}: {len(c.errors)} error(s)[/]", highlight=False)
            for e in c.errors[:20]:
                console.print(f"  {e}", highlight=False, markup=False)
            if len(c.errors) > 20:
                console.print(f"  ... and {len(c.errors) - 20} more (see --json)", highlight=False)
        if show_failures:
            for o in c.outcomes:
                if o.avg < 1.0:
                    ex = o.explanations[0] if o.explanations else ""
                    console.print(
                        f"  [FAIL] {c.name}: {o.id} ({o.pdf} page {o.page}) {o.passes}/{o.repeats} repeats passed. {ex}",
                        highlight=False,
                        markup=False,
                    )
