"""How gameable a test set is: built-in degenerate candidates scored on every tested page, with
and without the short-output guard, no model involved (`olmocr-rl probe`, docs/bench.md).

Candidates, built per page from the page's own tests:

* `empty`: "" -- passes what rewards saying nothing (absent tests, blank-page baselines);
* `newline`: "\\n" -- normalizes to one space, which the published `present` check matches
  inside any text with a space (docs/checks.md §3.1.1);
* `own-texts`: the texts of the page's `present` tests and the `before`/`after` of its `order`
  tests, one per line, as the records hold them, in load order except that texts cut to the
  page's start (`first_n`) come first and those cut to its end (`last_n` alone) last -- what a
  model that had learned the tests would write: a bound on what leaking them earns (not a strict
  one: two `first_n` texts may not both fit), not a degenerate output, so never flagged;
* `loop`: the first line of `own-texts` repeated LOOP_REPEATS times, one per line -- a generation
  stuck in a repetition loop;
* `common-words`: the same page of common English words everywhere (COMMON_WORDS).

Every candidate is scored on every page's tests as a training reward scores a completion: each
test once, passed or not, the page's reward its pass rate.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from olmocr_rl.suite import GUARDS, BenchSuite

LOOP_REPEATS = 50

# Frequent English words, arranged in lines of twelve: no test text, no page content.
_WORDS = (
    "the of and to in is that for it as was with be by on not he this are or his from at which but have an "
    "they you were their one all we can her has there been if more when will would who so no about than "
    "out them up into some could other time these two may then do first any like my now over such our man "
    "me even most made after also did many before must through back years where much your way well down "
    "should because each just those people how too little state good very make world still own see men work"
).split()
COMMON_WORDS = "\n".join(" ".join(_WORDS[i : i + 12]) for i in range(0, len(_WORDS), 12)) + "\n"

CANDIDATES: tuple[str, ...] = ("empty", "newline", "own-texts", "loop", "common-words")
DEGENERATE: tuple[str, ...] = ("empty", "newline", "loop", "common-words")  # flagged when they earn
DESCRIPTIONS = {
    "empty": "the empty string",
    "newline": "one newline",
    "own-texts": "the page's present/order texts, one per line (upper bound of a leaking model; not flagged)",
    "loop": f"the first line of own-texts, {LOOP_REPEATS} times",
    "common-words": f"{len(_WORDS)} common English words, the same on every page",
}


# Why some flags are expected, printed under them: these types pass on outputs lacking something.
BY_DESIGN = {
    "absent": "absent tests pass on any output without their text, degenerate ones included; they reward "
    "nonsense on pages with few other tests (see the pages column)",
    "baseline": "baseline tests pass on any text with a letter or digit, no disallowed script and no repeat of "
    "a 1-5 character period at its end (docs/checks.md §6): a loop of a longer line passes",
}


@dataclass
class ProbePage:
    pdf: str
    page: object
    ids: list[str]
    texts: list[str] = field(default_factory=list)  # present texts and order before/after (see `own-texts`)
    placed: list[tuple[int, str]] = field(default_factory=list)

    def candidate(self, name: str) -> str:
        own = "\n".join(self.texts)
        if name == "empty":
            return ""
        if name == "newline":
            return "\n"
        if name == "own-texts":
            return own
        if name == "loop":
            first = own.split("\n", 1)[0]
            return "\n".join([first] * LOOP_REPEATS) if first else ""
        if name == "common-words":
            return COMMON_WORDS
        raise ValueError(f"no candidate {name!r}; choose from {', '.join(CANDIDATES)}")


@dataclass
class Counts:
    passed: int = 0
    total: int = 0

    def add(self, passed: bool) -> None:
        self.passed += passed
        self.total += 1

    @property
    def rate(self) -> float:
        return self.passed / self.total if self.total else 0.0

    def as_dict(self) -> dict:
        return {"passed": self.passed, "total": self.total, "rate": self.rate}


@dataclass
class Earned:
    """What one candidate earns under one guard."""

    candidate: str
    guard: str
    reward: float = 0.0  # the mean page reward (a page's pass rate), what GRPO would pay on average
    all: Counts = field(default_factory=Counts)
    by_type: dict[str, Counts] = field(default_factory=dict)
    by_jsonl: dict[str, Counts] = field(default_factory=dict)
    pages_over_share: int = 0  # pages whose reward is above the flag share
    passed_ids: list[str] = field(default_factory=list)


@dataclass
class Flag:
    candidate: str
    guard: str
    type: str
    counts: Counts


@dataclass
class ProbeResult:
    source: str
    suite: BenchSuite
    pages: list[ProbePage]
    flag_share: float
    earned: list[Earned]  # candidate-major, then guard, in CANDIDATES x GUARDS order
    flags: list[Flag]

    @property
    def types(self) -> list[str]:
        return sorted({t for e in self.earned for t in e.by_type})

    @property
    def jsonl_files(self) -> list[str]:
        return sorted({j for e in self.earned for j in e.by_jsonl})


def tests_path(path: str | os.PathLike[str]) -> Path:
    """The tests of a bench folder, a .jsonl file, or a prepared folder (its tests/)."""
    p = Path(path)
    if p.is_dir() and not any(f.is_file() for f in p.glob("*.jsonl")) and (p / "tests").is_dir():
        return p / "tests"
    return p


def probe_pages(suite: BenchSuite) -> list[ProbePage]:
    """The suite's tested pages, (pdf, page) in first-appearance order, with their tests."""
    pages: dict[tuple[str, str], ProbePage] = {}
    for test_id in suite.ids:
        info = suite.info(test_id)
        key = (info.pdf, json.dumps(info.page, sort_keys=True))
        page = pages.setdefault(key, ProbePage(info.pdf, info.page, []))
        page.ids.append(test_id)
        if info.type in ("present", "order"):
            record = suite.record(test_id)
            fields = ("text",) if info.type == "present" else ("before", "after")
            place = 1
            if info.type == "present" and _cut(record.get("first_n")):
                place = 0
            elif info.type == "present" and _cut(record.get("last_n")):
                place = 2
            page.placed += [(place, record[f]) for f in fields if isinstance(record.get(f), str)]
    for page in pages.values():
        page.texts = [text for _, text in sorted(page.placed, key=lambda p: p[0])]  # stable: load order within a place
    return list(pages.values())


def _cut(value: object) -> bool:
    """Whether a first_n/last_n value cuts the page (a non-zero int, as Python's truth test)."""
    return isinstance(value, int) and bool(value)


def probe(
    suite: BenchSuite,
    *,
    flag_share: float = 0.5,
    candidates: Sequence[str] = CANDIDATES,
    threads: int | None = None,
    source: str = "",
) -> ProbeResult:
    """Scores every candidate on every page, under each guard (GUARDS), and flags every test type
    on which a degenerate candidate passes more than `flag_share` of the tests."""
    if not 0.0 <= flag_share <= 1.0:
        raise ValueError(f"flag_share must be between 0 and 1, not {flag_share}")
    pages = probe_pages(suite)
    jsonl = {i: os.path.basename(suite.info(i).source) for i in suite.ids}
    earned: list[Earned] = []
    texts = [p.candidate(c) for c in candidates for p in pages]
    ids = [p.ids for _ in candidates for p in pages]
    for_guard = {g: suite.score(texts, ids, details=True, threads=threads, guard=g) for g in GUARDS}
    for ci, name in enumerate(candidates):
        for guard in GUARDS:
            e = Earned(name, guard)
            scores = for_guard[guard][ci * len(pages) : (ci + 1) * len(pages)]
            for s in scores:
                e.reward += (s.reward or 0.0) / len(pages)
                e.pages_over_share += (s.reward or 0.0) > flag_share
                for r in s.results:
                    e.all.add(r.passed)
                    e.by_type.setdefault(r.type, Counts()).add(r.passed)
                    e.by_jsonl.setdefault(jsonl[r.id], Counts()).add(r.passed)
                    if r.passed:
                        e.passed_ids.append(r.id)
            earned.append(e)
    flags = [
        Flag(e.candidate, e.guard, t, c)
        for e in earned
        if e.candidate in DEGENERATE
        for t, c in sorted(e.by_type.items())
        if c.rate > flag_share
    ]
    return ProbeResult(source, suite, pages, flag_share, earned, flags)


def details_rows(result: ProbeResult) -> list[dict]:
    """The tests behind each flag: one row per (flag, test the candidate passed)."""
    by_key = {(e.candidate, e.guard): e for e in result.earned}
    rows = []
    for f in result.flags:
        for test_id in by_key[(f.candidate, f.guard)].passed_ids:
            info = result.suite.info(test_id)
            if info.type == f.type:
                rows.append(
                    {
                        "candidate": f.candidate,
                        "guard": f.guard,
                        "id": test_id,
                        "type": info.type,
                        "jsonl": os.path.basename(info.source),
                        "pdf": info.pdf,
                        "page": info.page,
                    }
                )
    return rows


def result_dict(result: ProbeResult) -> dict:
    """The probe as plain JSON data (what `--json` prints)."""
    return {
        "tests": result.source,
        "pages": len(result.pages),
        "test_count": len(result.suite),
        "tests_by_type": dict(sorted(result.suite.type_counts().items())),
        "flag_share": result.flag_share,
        "candidates": {name: DESCRIPTIONS[name] for name in dict.fromkeys(e.candidate for e in result.earned)},
        "earned": [
            {
                "candidate": e.candidate,
                "guard": e.guard,
                "reward": e.reward,
                "pages_over_share": e.pages_over_share,
                "all": e.all.as_dict(),
                "by_type": {k: c.as_dict() for k, c in sorted(e.by_type.items())},
                "by_jsonl": {k: c.as_dict() for k, c in sorted(e.by_jsonl.items())},
            }
            for e in result.earned
        ],
        "flags": [{"candidate": f.candidate, "guard": f.guard, "type": f.type, **f.counts.as_dict()} for f in result.flags],
    }


def print_result(result: ProbeResult, console: Any = None) -> None:
    """The probe as tables: by test type, then by JSONL file; flagged cells marked `!`."""
    from rich.console import Console
    from rich.table import Table

    from olmocr_rl.paths import for_rich

    console = console or Console()
    flagged = {(f.candidate, f.guard, f.type) for f in result.flags}
    share = f"{result.flag_share * 100:g}%"

    def cell(c: Counts | None, mark: bool = False) -> str:
        if c is None or not c.total:
            return ""
        text = f"{c.rate * 100:0.1f}% ({c.passed}/{c.total})"
        return f"[bold red]{text} ![/]" if mark else text

    counts = ", ".join(f"{k} {v}" for k, v in sorted(result.suite.type_counts().items()))
    console.print(f"probe: {for_rich(result.source)}: {len(result.pages)} pages, {len(result.suite)} tests ({counts})", highlight=False)
    for title, columns, get in (
        ("by test type", result.types, lambda e, k: e.by_type.get(k)),
        ("by JSONL file", result.jsonl_files, lambda e, k: e.by_jsonl.get(k)),
    ):
        table = Table(title=f"what each candidate passes, {title}", title_justify="left")
        table.add_column("candidate")
        table.add_column("guard")
        table.add_column("reward", justify="right")
        table.add_column(f"pages > {share}", justify="right")
        for k in columns:
            table.add_column(for_rich(k), justify="right")
        for e in result.earned:
            marks = [title == "by test type" and (e.candidate, e.guard, k) in flagged for k in columns]
            table.add_row(
                e.candidate if e.guard == GUARDS[0] else "",
                e.guard,
                f"{e.reward:.3f}",
                f"{e.pages_over_share}/{len(result.pages)}",
                *(cell(get(e, k), m) for k, m in zip(columns, marks)),
            )
            if e.guard == GUARDS[-1]:
                table.add_section()
        console.print(table)
    console.print(
        "reward: the mean over pages of the page's pass rate (what a policy writing this on every page earns); "
        f"pages > {share}: pages where it earns more than the flag share; guard none: the published checks, "
        "short-output: with allenai/olmocr PR #462's guard (the training default).",
        style="dim",
        highlight=False,
    )
    if not result.flags:
        console.print(f"no test type where a degenerate candidate passes more than {share} of the tests", highlight=False)
    for f in result.flags:
        console.print(
            f"[red]flag:[/] {f.candidate} passes {f.counts.rate * 100:0.1f}% ({f.counts.passed}/{f.counts.total}) "
            f"of the {for_rich(f.type)} tests with guard {f.guard}",
            highlight=False,
        )
    for kind in sorted({f.type for f in result.flags} & BY_DESIGN.keys()):
        console.print(f"{kind}: {BY_DESIGN[kind]}", style="dim", highlight=False)
