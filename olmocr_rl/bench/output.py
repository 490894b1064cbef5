"""What a run shows: the JSON summary, the rich tables, the tests every candidate failed and their
records (the reference's `--output_failed`)."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

from olmocr_rl.bench.compare import Comparison
from olmocr_rl.bench.results import BenchSummary
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


def test_records(tests: Sequence[TestInfo]) -> list[str]:
    """Each test's JSON record as its file holds it (the auto-added baseline tests, which no file
    holds, written as the record they stand for)."""
    lines: dict[str, list[str]] = {}
    out = []
    for t in tests:
        if t.source and os.path.isfile(t.source):
            if t.source not in lines:
                with open(t.source, encoding="utf-8") as f:
                    lines[t.source] = f.read().splitlines()
            out.append(lines[t.source][t.line - 1])
        else:
            out.append(json.dumps({"pdf": t.pdf, "page": t.page, "id": t.id, "type": t.type}))
    return out


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
                "ci": list(c.ci),
                "ci_half_width": (c.ci[1] - c.ci[0]) / 2,
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
        "warnings": b.warnings,
        **({"notes": b.notes} if b.notes else {}),
        "ci": {"level": summary.confidence_level, "samples": summary.bootstrap_samples, "seed": summary.seed},
        "candidates": cands,
        **({"comparisons": [c.to_dict() for c in comparisons]} if comparisons else {}),
    }


def print_summary(summary: BenchSummary, console: Any = None, *, show_failures: bool = False) -> None:
    """Human-readable report (rich tables), like the reference's final summary."""
    from rich.console import Console
    from rich.table import Table

    console = console or Console()
    b = summary.bench
    for w in b.warnings:
        console.print(f"[yellow]warning:[/] {for_rich(w)}", highlight=False)
    for note in b.notes:
        console.print(f"note: {for_rich(note)}", style="dim", highlight=False)
    pct = f"{summary.confidence_level * 100:g}%"
    table = Table(title=f"olmOCR-bench: {for_rich(b.root)}", title_justify="left")
    for col, justify in (("candidate", "left"), ("score", "right"), (f"± ({pct} CI)", "right"), ("tests", "right")):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for c in summary.candidates:
        half = f"{(c.ci[1] - c.ci[0]) / 2 * 100:0.1f}%"
        if c.failed:
            score = f"[red]FAILED (errors)[/] [dim]{c.score_ignoring_errors * 100:0.1f}% ignoring errors[/]"
        else:
            score = c.status
        table.add_row(for_rich(c.name), score, "" if c.failed else half, str(len(c.outcomes)))
    console.print(table)
    if b.suite.guard != "none":
        console.print(
            f"guard: {b.suite.guard} (allenai/olmocr PR #462: a page too short for a present/absent text fails present, "
            "passes absent); not the published benchmark's semantics",
            style="yellow",
            highlight=False,
        )

    breakdown = Table(title="pass rate by JSONL file (tests passed) and by test type (mean over repeats)", title_justify="left")
    breakdown.add_column("")
    for c in summary.candidates:
        breakdown.add_column(for_rich(c.name), justify="right")
    for g in sorted({g for c in summary.candidates for g in c.by_jsonl}):
        cells = []
        for c in summary.candidates:
            p, t = c.by_jsonl.get(g, (0, 0))
            cells.append(f"{p / t * 100:0.1f}% ({p}/{t})" if t else "")
        breakdown.add_row(for_rich(g), *cells)
    breakdown.add_section()
    for kind in sorted({t for c in summary.candidates for t in c.by_type}):
        cells = []
        for c in summary.candidates:
            s, n = c.by_type.get(kind, (0.0, 0))
            cells.append(f"{s * 100:0.1f}% (n={n})" if n else "")
        breakdown.add_row(f"[dim]type[/] {for_rich(kind)}", *cells)
    console.print(breakdown)
    legend = "score: the mean of the per-JSONL pass rates (a test passes when most of its repeats pass)."
    if any(c.failed for c in summary.candidates):
        legend += " FAILED (errors): the candidate has errors (listed below) and the reference scores it 0."
    console.print(legend, style="dim", highlight=False)
    for c in summary.candidates:
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
