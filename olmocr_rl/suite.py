"""`BenchSuite`: olmOCR-bench test JSONL, validated and compiled once, checked in Rust."""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Literal, NamedTuple, Union

import olmocr_rl._core as _core
import olmocr_rl._katex as _katex
from olmocr_rl.errors import UsageError, UserError
from olmocr_rl.jsonl import read_jsonl, split_lines

_katex.configure()

PathLike = Union[str, "os.PathLike[str]"]

# Rules on top of the published checks (docs/checks.md §3.1.1, §3.7.1), each named once here: a
# guard's name is the names of the rules it turns on, joined by "+" ("none": the published
# benchmark, allenai/olmocr @ f7cfe4c), so a report naming the guard names its rules.
GUARD_RULES: dict[str, str] = {
    "short-output": "allenai/olmocr PR #462: a page shorter than a present/absent test's text (less max_diffs) fails "
    "present and passes absent",
    "footnote": "allenai/olmocr PR #476: next to a footnote marker, text shorter than the test's before/after text "
    "(less max_diffs) is no match there",
}
Guard = Literal["none", "short-output", "short-output+footnote"]
GUARDS: tuple[Guard, ...] = ("none", "short-output", "short-output+footnote")
TRAINING_GUARD: Guard = "short-output+footnote"  # what training rewards (BenchReward, train, curate) score with


def guard_rules(guard: str) -> list[str]:
    """The rules `guard` turns on, each as GUARD_RULES words it ("name: what it does")."""
    return [f"{name}: {GUARD_RULES[name]}" for name in check_guard(guard).split("+") if name != "none"]


class SuiteError(UserError, ValueError):
    """Test records the reference would reject; `.errors` lists every one of them."""

    def __init__(self, errors: list[str]):
        self.errors = errors
        shown = "\n  ".join(errors[:20])
        more = f"\n  ... and {len(errors) - 20} more" if len(errors) > 20 else ""
        super().__init__(errors[0] if len(errors) == 1 else f"{len(errors)} invalid test record(s):\n  {shown}{more}")


def math_environment_problem(math_tests: int) -> str | None:
    """Why `math_tests` math tests cannot be checked here (no usable KaTeX 0.16.21), or None."""
    problem = _core.katex_problem() if math_tests else None
    return f"{math_tests} math test(s) cannot be checked: {problem}" if problem else None


class EnvironmentProblem(UserError, RuntimeError):
    """This environment cannot check some of the suite's tests as the reference does (math
    tests without KaTeX 0.16.21): every such check would be an error verdict, so a reward built
    on them would be silently wrong. Raised before anything is scored."""


class CheckResult(NamedTuple):
    """One test's verdict on one page: the reference's `(passed, explanation)`, plus `error`
    for inputs on which the reference raises (they count as failures there too)."""

    passed: bool
    explanation: str
    error: bool = False


class TestResult(NamedTuple):
    id: str
    type: str
    passed: bool
    explanation: str
    error: bool


class PageScore(NamedTuple):
    """One completion's score: `reward` is the micro pass rate (passed / total), `macro` the mean
    of per-type pass rates, `graded` the mean partial credit (1 per passed test; a failed fuzzy
    present/format test earns its best similarity as a fraction of its threshold); all None when
    the completion has no tests. `results` is filled when `score(..., details=True)`."""

    reward: float | None
    macro: float | None
    graded: float | None
    passed: int
    total: int
    by_type: dict[str, tuple[int, int]]
    results: list[TestResult]


class TestInfo(NamedTuple):
    id: str
    type: str
    pdf: str
    page: object
    source: str
    line: int


MAX_THREADS_PER_CORE = 4  # above this many threads per usable core, the pool only adds stacks and switches


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def check_threads(threads: object) -> int:
    """The Rust pool's size, resolved here once and passed to Rust: `threads` (an int >= 1), else
    `OLMOCR_RL_THREADS`, else the cores this process may use divided among the local ranks of a
    distributed launch (`LOCAL_WORLD_SIZE`: each rank computes its own rewards). Anything that is
    not a positive integer, or more than MAX_THREADS_PER_CORE per usable core (16 MiB of stack each,
    no speed), raises UsageError naming where it came from."""
    cores = usable_cores()
    where = "threads"
    if threads is None:
        env = os.environ.get("OLMOCR_RL_THREADS", "").strip()
        if not env:
            ranks = os.environ.get("LOCAL_WORLD_SIZE", "").strip()
            return max(1, cores // (int(ranks) if ranks.isdigit() and int(ranks) > 0 else 1))
        if not env.isdigit() or int(env) < 1:
            raise UsageError(f"OLMOCR_RL_THREADS={env!r}: expected a positive integer (or unset it)")
        threads, where = int(env), "OLMOCR_RL_THREADS"
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise UsageError(f"threads must be a positive integer or None, not {threads!r}")
    if threads > MAX_THREADS_PER_CORE * cores:
        raise UsageError(
            f"{where}={threads}: more than {MAX_THREADS_PER_CORE} threads for each of the {cores} cores this process may use "
            f"(at most {MAX_THREADS_PER_CORE * cores}; more only costs memory and time)"
        )
    return threads


def check_guard(guard: object) -> Guard:
    """`guard` if it names a rule set (GUARDS), else ValueError naming the choices."""
    if guard not in GUARDS:
        raise UsageError(f"guard must be one of {', '.join(map(repr, GUARDS))}, not {guard!r}")
    return guard  # type: ignore[return-value]


def _jsonl_files(path: PathLike | Sequence[PathLike]) -> list[Path]:
    if isinstance(path, (str, os.PathLike)):
        p = Path(path)
        if p.is_dir():
            files = sorted(f for f in p.glob("*.jsonl") if f.is_file())
            if not files:
                raise FileNotFoundError(f"{p}: no *.jsonl test files at the top level")
            return files
        if not p.exists():
            raise FileNotFoundError(f"{p}: no such file or directory")
        return [p]
    return [f for item in path for f in _jsonl_files(item)]


def _format_error(source: str, line: int, test_id: str | None, message: str) -> str:
    where = f"{source}:{line}: "
    return where + (f"test {test_id!r}: " if test_id is not None else "") + message


class BenchSuite:
    """olmOCR-bench tests, loaded and validated exactly as the reference loads them.

    `BenchSuite.load(path)` takes a bench folder (every top-level `*.jsonl`, sorted), one
    `.jsonl` file, or a list of them. Invalid records raise `SuiteError` naming file:line and
    test id for every bad record; `strict=False` warns instead and keeps the valid tests
    (`.errors` lists what was dropped).

    `guard` is the rule set the checks use unless a call names another (GUARDS): "none" (default),
    the published benchmark's checks; "short-output", with allenai/olmocr PR #462's guard (a page
    too short to hold a `present`/`absent` text fails `present` and passes `absent`;
    docs/checks.md §3.1.1); "short-output+footnote", also with PR #476's rule for footnote tests
    (§3.7.1). `BenchReward` uses TRAINING_GUARD by default.
    """

    __test__ = False  # not a pytest class

    def __init__(self, core: _core.Suite, sources: Sequence[tuple[str, str]] = (), *, guard: Guard = "none"):
        self.guard: Guard = check_guard(guard)
        self._core = core
        self._sources = list(sources)
        self._unreadable: list[str] = []
        self._lines: dict[str, list[str]] = {}  # source -> its lines, read by `record`
        self.errors: list[str] = [_format_error(e.source, e.line, e.id, e.message) for e in core.errors]
        self._info = {r.id: TestInfo(r.id, r.type, r.pdf, r.page, r.source, r.line) for r in core.records()}

    @classmethod
    def load(cls, path: PathLike | Sequence[PathLike], *, strict: bool = True, guard: Guard = "none") -> BenchSuite:
        files = _jsonl_files(path)
        sources, unreadable = [], []
        for f in files:
            read = read_jsonl(f)
            sources.append((str(f), read.text))
            unreadable += [_format_error(str(f), n, None, why) for n, why in read.errors]
        return cls.from_sources(sources, strict=strict, unreadable=unreadable, guard=guard)

    @classmethod
    def from_jsonl(cls, text: str, source: str = "<string>", *, strict: bool = True, guard: Guard = "none") -> BenchSuite:
        return cls.from_sources([(source, text)], strict=strict, guard=guard)

    @classmethod
    def from_sources(
        cls, sources: Sequence[tuple[str, str]], *, strict: bool = True, unreadable: Sequence[str] = (), guard: Guard = "none"
    ) -> BenchSuite:
        """`unreadable`: errors for lines dropped before parsing (not UTF-8), listed first."""
        guard = check_guard(guard)
        sources = [(str(name), text) for name, text in sources]
        suite = cls(_core.Suite.from_sources(sources), sources, guard=guard)
        suite._unreadable = list(unreadable)
        suite.errors = [*unreadable, *suite.errors]
        if suite.errors:
            if strict:
                raise SuiteError(suite.errors)
            warnings.warn(
                f"skipped {len(suite.errors)} invalid test record(s); first: {suite.errors[0]}",
                stacklevel=2,
            )
        return suite

    def __reduce__(self):
        # Picklable (e.g. for multiprocessing): rebuilt from the same JSONL texts.
        return (_rebuild, (self._sources, self._unreadable, self.guard))

    def __len__(self) -> int:
        return len(self._info)

    def __contains__(self, test_id: object) -> bool:
        return test_id in self._info

    @property
    def ids(self) -> list[str]:
        return list(self._info)

    def info(self, test_id: str) -> TestInfo:
        return self._info[test_id]

    def line(self, test_id: str) -> str:
        """The test's line as its file holds it (the text the suite loaded, split as the loader
        splits it: a raw U+2028 inside a JSON string is not a line end); KeyError for an id the
        suite does not hold."""
        info = self._info[test_id]
        lines = self._lines.get(info.source)
        if lines is None:
            text = next(t for name, t in self._sources if name == info.source)
            lines = self._lines[info.source] = split_lines(text)
        return lines[info.line - 1]

    def record(self, test_id: str) -> dict:
        """The test's JSON record as its file holds it (read as the loader reads it: a duplicate
        key keeps its last value); KeyError for an id the suite does not hold."""
        return json.loads(self.line(test_id))

    def type_counts(self) -> dict[str, int]:
        """How many tests of each type the suite holds."""
        counts: dict[str, int] = {}
        for t in self._info.values():
            counts[t.type] = counts.get(t.type, 0) + 1
        return counts

    def environment_problem(self) -> str | None:
        """Why this environment would turn some of these tests into error verdicts across the
        board (math tests without KaTeX 0.16.21), or None when it can check them all."""
        return math_environment_problem(self.type_counts().get("math", 0))

    def require_environment(self) -> None:
        """Raises EnvironmentProblem when `environment_problem()` finds one."""
        problem = self.environment_problem()
        if problem:
            raise EnvironmentProblem(problem)

    def _guard(self, guard: Guard | None) -> Guard:
        return self.guard if guard is None else check_guard(guard)

    def check(self, test_id: str, text: str, *, guard: Guard | None = None) -> CheckResult:
        """Runs one test on one page of model output (`text` is used as given); `guard`: the
        rule set (one of GUARDS; default: the suite's `guard`)."""
        v = self._core.check(test_id, text, self._guard(guard))
        return CheckResult(v.passed, v.explanation, v.error)

    def check_batch(
        self, pages: Sequence[tuple[str, Sequence[str]]], *, threads: int | None = None, guard: Guard | None = None
    ) -> list[list[CheckResult]]:
        """Runs each (text, test ids) page's tests; pages are checked in parallel in Rust
        (`threads` as in `score`, `guard` as in `check`)."""
        threads = check_threads(threads)
        rows = self._core.check_batch([(t, list(ids)) for t, ids in pages], threads, self._guard(guard))
        return [[CheckResult(v.passed, v.explanation, v.error) for v in page] for page in rows]

    def check_files(
        self, items: Sequence[tuple[PathLike, Sequence[str]]], *, threads: int | None = None, guard: Guard | None = None
    ) -> list[list[CheckResult] | None]:
        """`check_batch` on page files: each (path, test ids) item's file is read in Rust as the
        reference reads page files (UTF-8, universal newlines) and its tests run, items in
        parallel. None for a file that cannot be read or is not UTF-8 (read it yourself for the
        error). `guard` as in `check`."""
        threads = check_threads(threads)
        rows = self._core.check_files([(os.fspath(p), list(ids)) for p, ids in items], threads, self._guard(guard))
        return [None if page is None else [CheckResult(v.passed, v.explanation, v.error) for v in page] for page in rows]

    def score(
        self,
        completions: Sequence[str],
        test_ids: Sequence[Sequence[str]],
        *,
        details: bool = False,
        threads: int | None = None,
        guard: Guard | None = None,
    ) -> list[PageScore]:
        """Scores each completion on its tests; the whole batch crosses into Rust once and runs
        on a thread pool with the GIL released (`threads`, default: `OLMOCR_RL_THREADS` or the
        cores divided by `LOCAL_WORLD_SIZE`). Each test id counts once per completion; an
        unknown id raises KeyError. `guard` as in `check`."""
        threads = check_threads(threads)
        guard = self._guard(guard)
        if len(completions) != len(test_ids):
            raise UsageError(f"{len(completions)} completions but {len(test_ids)} test id lists")
        # GRPO groups often repeat a completion word for word: score each distinct one once.
        first: dict[tuple[str, tuple[str, ...]], int] = {}
        slot = [first.setdefault((c, tuple(ids)), len(first)) for c, ids in zip(completions, test_ids)]
        pages = [(c, list(ids)) for c, ids in first]
        scored = []
        for s in self._core.score(pages, threads, details, guard):
            scored.append(
                PageScore(
                    reward=s.reward,
                    macro=s.macro_reward,
                    graded=s.graded,
                    passed=s.passed,
                    total=s.total,
                    by_type={t: (p, n) for t, p, n in s.by_type},
                    results=[TestResult(r.id, r.type, r.passed, r.explanation, r.error) for r in s.results],
                )
            )
        seen: set[int] = set()
        out = []
        for k in slot:  # repeats get their own copies of the mutable fields
            s = scored[k]
            out.append(s._replace(by_type=dict(s.by_type), results=list(s.results)) if k in seen else s)
            seen.add(k)
        return out


def _rebuild(sources: list[tuple[str, str]], unreadable: Sequence[str] = (), guard: Guard = "none") -> BenchSuite:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # warned when first loaded
        return BenchSuite.from_sources(sources, strict=False, unreadable=unreadable, guard=guard)
