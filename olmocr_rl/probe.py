"""How gameable a test set is: built-in degenerate candidates scored on every tested page, with
the published checks and with the training guard (PROBE_GUARDS), no model involved
(`olmocr-rl probe`, docs/bench.md).

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
* `common-words`: the same page of common English words everywhere (COMMON_WORDS);
* `stray-marker`: for each footnote test of the page, its marker as `[^m]` between one letter of
  its before text and one of its after text (`a[^1]a`), the tests' blocks 200 newlines apart so
  no marker sees another's letters -- allenai/olmocr PR #476's exploit: one character next to a
  marker matches any text holding it under the published checks (docs/checks.md §3.7.1).

Every candidate is scored on every page's tests as a training reward scores a completion: each
test once, passed or not, the page's reward its pass rate. Each candidate is also read by the loop
stop's detector (olmocr_rl/loops.py, its rule, one character a token): the pages on which it is a
repetition loop the stop would end (`ProbeResult.loops`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from olmocr_rl.loops import LoopRule
from olmocr_rl.suite import TRAINING_GUARD, BenchSuite

PROBE_GUARDS: tuple[str, ...] = ("none", TRAINING_GUARD)  # the published checks, and what training rewards use

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

CANDIDATES: tuple[str, ...] = ("empty", "newline", "own-texts", "loop", "common-words", "stray-marker")
DEGENERATE: tuple[str, ...] = ("empty", "newline", "loop", "common-words", "stray-marker")  # flagged when they earn
DESCRIPTIONS = {
    "empty": "the empty string",
    "newline": "one newline",
    "own-texts": "the page's present/order texts, one per line (upper bound of a leaking model; not flagged)",
    "loop": f"the first line of own-texts, {LOOP_REPEATS} times",
    "common-words": f"{len(_WORDS)} common English words, the same on every page",
    "stray-marker": "each footnote test's marker between one letter of its before and after texts (a[^1]a)",
}
MARKER_GAP = "\n" * 200  # between stray-marker's blocks: a footnote check looks 200 characters either side


# Types whose tests pass on output that lacks something, by design: a flag on them is an expected
# floor, printed apart from the exploits (a flag on any other type).
BY_DESIGN = {
    "absent": "absent tests pass on any output without their text, degenerate ones included; they reward "
    "nonsense on pages with few other tests (see the pages row)",
    "baseline": "baseline tests with max_length (blank pages) pass on any output with at most that many letters "
    "or digits, the empty one included; the others on any text with a letter or digit, no disallowed script and "
    "no repeat of a 1-5 character period at its end (docs/checks.md §3.4, §6): a loop of a longer line passes",
}


@dataclass
class ProbePage:
    pdf: str
    page: object
    ids: list[str]
    texts: list[str] = field(default_factory=list)  # present texts and order before/after (see `own-texts`)
    placed: list[tuple[int, str]] = field(default_factory=list)
    markers: list[str] = field(default_factory=list)  # stray-marker's blocks, one per footnote test

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
        if name == "stray-marker":
            return MARKER_GAP.join(self.markers)
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

    @property
    def expected(self) -> bool:
        """An expected floor (a type that passes on output lacking something, BY_DESIGN), not an
        exploit."""
        return self.type in BY_DESIGN


@dataclass
class ProbeResult:
    source: str
    suite: BenchSuite
    pages: list[ProbePage]
    flag_share: float
    earned: list[Earned]  # candidate-major, then guard, in CANDIDATES x GUARDS order
    flags: list[Flag]
    loops: dict[str, int] = field(default_factory=dict)  # candidate -> pages on which the loop detector finds a loop
    loop_rule: LoopRule = field(default_factory=LoopRule)

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
        elif info.type == "footnote":
            record = suite.record(test_id)
            if isinstance(record.get("marker"), str):
                before, after = (_first_letter(record.get(f)) for f in ("appears_before_marker", "appears_after_marker"))
                page.markers.append(f"{before}[^{record['marker']}]{after}")
    for page in pages.values():
        page.texts = [text for _, text in sorted(page.placed, key=lambda p: p[0])]  # stable: load order within a place
    return list(pages.values())


def _first_letter(text: object) -> str:
    """The first letter or digit of a footnote's neighbour text, lowercased ("a" when it has none)."""
    return next((c for c in text if c.isalnum()), "a").lower() if isinstance(text, str) else "a"


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
    loop_rule: LoopRule | None = None,
) -> ProbeResult:
    """Scores every candidate on every page, under each of PROBE_GUARDS, and flags every test type
    on which a degenerate candidate passes more than `flag_share` of the tests; counts the pages on
    which each candidate is a loop under `loop_rule` (default: the stop's, olmocr_rl/loops.py)."""
    if not 0.0 <= flag_share <= 1.0:
        raise ValueError(f"flag_share must be between 0 and 1, not {flag_share}")
    pages = probe_pages(suite)
    jsonl = {i: os.path.basename(suite.info(i).source) for i in suite.ids}
    earned: list[Earned] = []
    texts = [p.candidate(c) for c in candidates for p in pages]
    ids = [p.ids for _ in candidates for p in pages]
    for_guard = {g: suite.score(texts, ids, details=True, threads=threads, guard=g) for g in PROBE_GUARDS}  # type: ignore[arg-type]
    for ci, name in enumerate(candidates):
        for guard in PROBE_GUARDS:
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
    rule = loop_rule or LoopRule()
    loops = {name: sum(rule.find_text(t) is not None for t in texts[ci * len(pages) : (ci + 1) * len(pages)])
             for ci, name in enumerate(candidates)}  # fmt: skip
    return ProbeResult(source, suite, pages, flag_share, earned, flags, loops, rule)


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


# The judgement against the tests' own text: what the best degenerate output earns as a share of what
# the page's own texts (`own-texts`, a model that learned the tests) earn.
GAMEABLE_AT = 0.5  # at half or more: gameable, a policy gains little by reading the page
WEAK_AT = 0.25  # a quarter to a half: weak; below: sound
RULE = f"gameable from {GAMEABLE_AT:.0%} of what the page's own texts earn, weak from {WEAK_AT:.0%}, else sound"


def judgement(reward: float | None, own: float | None) -> str | None:
    """`RULE` applied (None when the own texts earn nothing to compare with)."""
    if reward is None:
        return "sound"
    if not own:
        return None
    share = reward / own
    return "gameable" if share >= GAMEABLE_AT else "weak" if share >= WEAK_AT else "sound"


def verdict(result: ProbeResult) -> dict[str, dict]:
    """Per guard: the degenerate candidate that earns the most (its mean page reward; the first
    in CANDIDATES on a tie), what the page's own texts earn (the bound of a model that learned
    the tests), the first as a share of the second and the judgement (`RULE`)."""
    out = {}
    for guard in dict.fromkeys(e.guard for e in result.earned):
        mine = [e for e in result.earned if e.guard == guard]
        degenerate = [e for e in mine if e.candidate in DEGENERATE]
        best = max(degenerate, key=lambda e: e.reward) if degenerate else None
        own = next((e.reward for e in mine if e.candidate == "own-texts"), None)
        reward = best.reward if best else None
        out[guard] = {"best_degenerate": best.candidate if best else None, "reward": reward, "own_texts": own,
                      "share_of_own_texts": reward / own if reward is not None and own else None,
                      "judgement": judgement(reward, own)}  # fmt: skip
    return out


def verdict_line(result: ProbeResult) -> str:
    """The verdict: per guard, what the best degenerate output earns against the page's own texts,
    judged (`RULE`, stated at the end)."""
    parts = []
    for guard, v in verdict(result).items():
        part = f"{v['reward']:.3f} ({v['best_degenerate']})" if v["best_degenerate"] else "nothing (no degenerate candidate)"
        own = f" against {v['own_texts']:.3f} for the page's own texts" if v["own_texts"] is not None else ""
        share = f"{v['share_of_own_texts']:.0%}: " if v["share_of_own_texts"] is not None else ""
        judged = (v["judgement"] or "not judged, the own texts earn nothing").upper()
        parts.append(f"{part}{own} with guard {guard} ({share}{judged})")
    return f"verdict: the best degenerate output earns {'; '.join(parts)}; rule: {RULE}"


def result_dict(result: ProbeResult) -> dict:
    """The probe as plain JSON data (what `--json` prints)."""
    return {
        "tests": result.source,
        "pages": len(result.pages),
        "test_count": len(result.suite),
        "tests_by_type": dict(sorted(result.suite.type_counts().items())),
        "flag_share": result.flag_share,
        "candidates": {name: DESCRIPTIONS[name] for name in dict.fromkeys(e.candidate for e in result.earned)},
        "verdict": verdict(result),
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
        "flags": [
            {"candidate": f.candidate, "guard": f.guard, "type": f.type, "expected": f.expected, **f.counts.as_dict()} for f in result.flags
        ],
        "loops": {"rule": result.loop_rule.as_dict(), "token": "character", "pages": dict(result.loops)},
    }


def print_result(result: ProbeResult, console: Any = None) -> None:
    """The probe: the verdict first, then the exploits (flags on types that should not pass on
    degenerate output), the expected floors apart, then per guard a table by test type and one by
    JSONL file (a candidate per column; flagged cells marked `!`)."""
    from rich.console import Console

    import olmocr_rl.tables as tables
    from olmocr_rl.paths import for_rich

    console = console or Console()
    flagged = {(f.candidate, f.guard, f.type) for f in result.flags}
    share = f"{result.flag_share * 100:g}%"
    counts = ", ".join(f"{k} {v}" for k, v in sorted(result.suite.type_counts().items()))
    pages, tests = len(result.pages), len(result.suite)
    console.print(f"probe: {for_rich(result.source)}: {pages} page{'' if pages == 1 else 's'}, {tests} test{'' if tests == 1 else 's'} ({counts})",
                  highlight=False)  # fmt: skip
    console.print(verdict_line(result), style="bold", highlight=False, markup=False)
    exploits = [f for f in result.flags if not f.expected]
    for f in exploits:
        console.print(
            f"[red]exploit:[/] {f.candidate} passes {f.counts.rate * 100:0.1f}% ({f.counts.passed}/{f.counts.total}) "
            f"of the {for_rich(f.type)} tests with guard {f.guard}",
            highlight=False,
        )
    floors = sorted({f.type for f in result.flags if f.expected})
    if not exploits:  # "but by design:" only when expected floors follow
        console.print(
            f"no exploit: no degenerate candidate passes more than {share} of a test type's tests{', but by design:' if floors else '.'}",
            highlight=False,
        )
    guards = list(dict.fromkeys(e.guard for e in result.earned))
    for kind in floors:
        who = []
        for name in dict.fromkeys(f.candidate for f in result.flags if f.type == kind):
            under = [g for g in guards if (name, g, kind) in flagged]
            who.append(name + ("" if len(under) == len(guards) else f" (guard {', '.join(under)})"))
        console.print(f"expected floor, {kind}: {', '.join(who)}. {BY_DESIGN[kind]}", style="dim", highlight=False, markup=False)
    for title, columns, get in (
        ("by test type", result.types, lambda e, k: e.by_type.get(k)),
        ("by JSONL file", result.jsonl_files, lambda e, k: e.by_jsonl.get(k)),
    ):
        for guard in dict.fromkeys(e.guard for e in result.earned):
            mine = [e for e in result.earned if e.guard == guard]
            t = tables.table()
            tables.name_column(t, "test type" if title == "by test type" else "JSONL file")
            tables.figure_column(t, "tests")
            for e in mine:
                tables.figure_column(t, e.candidate.replace("-", "-\n"))  # a name wraps at its hyphen
            t.add_row("reward", "", *(f"{e.reward:.3f}" for e in mine))
            t.add_row(f"pages > {share}", str(len(result.pages)), *(f"{e.pages_over_share}" for e in mine), end_section=True)
            for k in columns:
                total = next((c.total for e in mine if (c := get(e, k)) is not None), 0)
                cells = []
                for e in mine:
                    c = get(e, k)
                    mark = title == "by test type" and (e.candidate, guard, k) in flagged
                    text = f"{c.rate * 100:0.1f}%" if c is not None and c.total else ""
                    cells.append(f"[bold red]{text}![/]" if mark else f"{text} ")
                t.add_row(for_rich(k), str(total), *cells)
            tables.show(console, t, f"guard {guard}: what each candidate passes, {title}")
    console.print(
        "reward: the mean over pages of the page's pass rate (what a policy writing this on every page earns); "
        f"pages > {share}: pages where it earns more than the flag share; cells: the share of the tests passed, "
        f"! where a degenerate candidate passes more than {share}. Guard none: the published checks; "
        f"{TRAINING_GUARD}: the training default (docs/checks.md §3.1.1, §3.7.1).",
        style="dim",
        highlight=False,
    )
    console.print(loops_line(result), style="dim", highlight=False, markup=False)


def loops_line(result: ProbeResult) -> str:
    """Which candidates the loop stop's detector calls loops, on how many pages."""
    counts = ", ".join(f"{name} {n} of {len(result.pages)} pages" for name, n in result.loops.items())
    return (f"repetition loops (the loop stop's rule, one character a token: {result.loop_rule.describe()}): {counts}; "
            "a completion the stop ends earns what its loop earns run on to the length limit (docs/training.md)")  # fmt: skip
