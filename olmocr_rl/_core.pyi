"""Type stubs for the Rust extension `olmocr_rl._core` (checked against it by mypy stubtest)."""

import os
from typing import final

__all__ = [
    "Record",
    "RecordError",
    "ScoredPage",
    "TestVerdict",
    "Verdict",
    "__version__",
    "UNICODE_VERSION",
    "normalize_text",
    "ratio",
    "partial_ratio",
    "find_near_matches",
    "levenshtein",
    "medoid_rewards",
    "edit_similarities",
    "element_counts",
    "element_count_rewards",
    "rect_table_shares",
    "_py_compat",
    "_fmt_float",
    "_parse_tables",
    "pdf_page_counts",
    "set_katex_path",
    "katex_problem",
    "Suite",
    "Loop",
    "LoopDetector",
    "LOOP_MAX_PERIOD_BOUND",
    "find_loop",
    "find_loop_text",
    "longest_runs",
    "longest_runs_text",
]

from typing import Any

__version__: str
UNICODE_VERSION: str

def normalize_text(s: str) -> str:
    """olmOCR-bench's `normalize_text` (whitespace, quotes, dashes, markdown emphasis, NFC), exact;
    lone surrogates are kept as one character each."""

def ratio(a: str, b: str) -> float:
    """RapidFuzz `fuzz.ratio(a, b)` (0-100), bit for bit."""

def partial_ratio(a: str, b: str) -> float:
    """RapidFuzz `fuzz.partial_ratio(a, b)` (0-100), bit for bit; the shorter string is aligned
    inside the longer one."""

def find_near_matches(sub: str, seq: str, max_l_dist: int) -> list[tuple[int, int, int]]:
    """fuzzysearch `find_near_matches(sub, seq, max_l_dist=...)` as (start, end, distance) triples."""

def levenshtein(a: str, b: str) -> int:
    """RapidFuzz `distance.Levenshtein.distance(a, b)`: unit-cost edits over code points."""

def medoid_rewards(texts: list[str], groups: list[int] | None = None, threads: int | None = None) -> list[float]:
    """olmOCR's medoid reward of each text within its group (`groups[i]`, any labels; None: one
    group): the values of every pairwise distance, computing only the distances they depend on,
    in parallel with the GIL released."""

def edit_similarities(texts: list[str], references: list[str | None], threads: int | None = None) -> list[float]:
    """`fuzz.ratio(text, reference) / 100` per pair, 0.0 where the reference is None."""

def element_counts(text: str) -> tuple[int, int]:
    """(HTML tables, math spans) of `text` as olmOCR's element-count reward counts them."""

def element_count_rewards(texts: list[str], references: list[str | None], threads: int | None = None) -> list[float]:
    """olmOCR's element-count reward per pair: 0.5 per matching count, 0.0 without a reference."""

def rect_table_shares(texts: list[str], threads: int | None = None) -> list[float | None]:
    """The share of each text's HTML tables that are rectangular (1.0 without tables); None
    where the reference's table parser would raise."""

def _py_compat(s: str) -> tuple[str, list[bool], list[bool], list[bool], str]:
    """Test hook: (str.lower, isalnum, isspace and isprintable per code point, NFC) of `s`."""

def _fmt_float(x: float) -> tuple[str, str, str]:
    """Test hook: Python's `repr(x)`, `f"{x:.3f}"` and `f"{x:.2f}"`, as the explanations print them."""

def _parse_tables(text: str, markdown: bool) -> list[dict[str, Any]]:
    """Test hook: the markdown (or HTML) tables of `text` as the reference's parser builds them."""

def pdf_page_counts(paths: list[str | os.PathLike[str]], threads: int | None = None) -> list[int | None]:
    """pypdf's page count of each PDF, or None where the core's reader declines (pypdf then counts)."""

def set_katex_path(path: str | None) -> None:
    """Where math checks read KaTeX 0.16.21's katex.min.js (None: `OLMOCR_RL_KATEX_JS`)."""

def katex_problem() -> str | None:
    """Why math checks cannot run here (KaTeX missing or another version), naming the fix; None
    when they can."""

LOOP_MAX_PERIOD_BOUND: int

def find_loop(tokens: list[int], max_period: int, min_repeats: int, min_span: int) -> Loop | None:
    """The loop of a token sequence: the first length at which its suffix repeats a period of 1 to
    `max_period` tokens over at least `min_span` tokens and `min_repeats` periods (the smallest such
    period); None if it never does. ValueError for a rule that is none (olmocr_rl/loops.py)."""

def find_loop_text(text: str, max_period: int, min_repeats: int, min_span: int) -> Loop | None:
    """`find_loop` on a text's code points (one token per character)."""

def longest_runs(tokens: list[int], max_period: int) -> list[int]:
    """The longest stretch of each period 1..max_period anywhere in `tokens` ([p - 1]; 0: none)."""

def longest_runs_text(text: str, max_period: int) -> list[int]:
    """`longest_runs` on a text's code points."""

@final
class Loop:
    """A loop found: the periodic suffix starts at `start`, repeats `period` tokens, and the rule
    first held at length `cut`."""

    def __new__(cls, start: int, period: int, cut: int) -> Loop: ...
    @property
    def start(self) -> int: ...
    @property
    def period(self) -> int: ...
    @property
    def cut(self) -> int: ...
    def __getnewargs__(self) -> tuple[int, int, int]: ...

@final
class LoopDetector:
    """The incremental loop detector of one growing sequence: O(max_period) per token fed; the
    loop once found is latched."""

    def __new__(cls, max_period: int, min_repeats: int, min_span: int) -> LoopDetector: ...
    def extend(self, tokens: list[int]) -> Loop | None:
        """Feeds tokens; the loop once found."""
    @property
    def found(self) -> Loop | None: ...
    def __len__(self) -> int: ...

@final
class RecordError:
    """A rejected test record: where it is and why."""

    @property
    def source(self) -> str: ...
    @property
    def line(self) -> int: ...
    @property
    def id(self) -> str | None: ...
    @property
    def message(self) -> str: ...

@final
class Record:
    """A loaded test: id, type, PDF, page (the JSON value as Python's `json` reads it) and where
    it was loaded from."""

    @property
    def id(self) -> str: ...
    @property
    def type(self) -> str: ...
    @property
    def pdf(self) -> str: ...
    @property
    def page(self) -> object: ...
    @property
    def source(self) -> str: ...
    @property
    def line(self) -> int: ...

@final
class Verdict:
    """One test's verdict on one page; `error`: the reference would have raised."""

    @property
    def passed(self) -> bool: ...
    @property
    def explanation(self) -> str: ...
    @property
    def error(self) -> bool: ...

@final
class TestVerdict:
    """A verdict in a scored page's details, with its test's id and type."""

    @property
    def id(self) -> str: ...
    @property
    def type(self) -> str: ...
    @property
    def passed(self) -> bool: ...
    @property
    def explanation(self) -> str: ...
    @property
    def error(self) -> bool: ...

@final
class ScoredPage:
    """One scored page: counts, (type, passed, total) in first-appearance order, the micro, macro
    and graded rewards (None without tests), and the verdicts when details were asked for."""

    @property
    def passed(self) -> int: ...
    @property
    def total(self) -> int: ...
    @property
    def by_type(self) -> list[tuple[str, int, int]]: ...
    @property
    def reward(self) -> float | None: ...
    @property
    def macro_reward(self) -> float | None: ...
    @property
    def graded(self) -> float | None: ...
    @property
    def results(self) -> list[TestVerdict]: ...

@final
class Suite:
    """Compiled olmOCR-bench tests; the checks run in Rust with the GIL released."""

    @staticmethod
    def from_sources(sources: list[tuple[str, str]]) -> Suite:
        """Loads (source name, JSONL text) pairs; invalid records go to `errors`."""
    def __len__(self) -> int: ...
    @property
    def errors(self) -> list[RecordError]:
        """The rejected records, in file order."""
    def records(self) -> list[Record]:
        """Every loaded test, in load order."""
    def check(self, test_id: str, text: str, guard: str = "none") -> Verdict:
        """One test on one page; `guard`: "none" (the published checks), "short-output" (PR
        #462's guard on present/absent) or "short-output+footnote" (also PR #476's rule on
        footnote tests); anything else raises ValueError."""
    def check_batch(self, pages: list[tuple[str, list[str]]], threads: int | None = None, guard: str = "none") -> list[list[Verdict]]:
        """Each (text, test ids) page's verdicts; pages in parallel on `threads` threads."""
    def check_files(
        self, items: list[tuple[str | os.PathLike[str], list[str]]], threads: int | None = None, guard: str = "none"
    ) -> list[list[Verdict] | None]:
        """`check_batch` on page files read as the reference reads them; None for a file that
        cannot be read or is not UTF-8."""
    def score(
        self, pages: list[tuple[str, list[str]]], threads: int | None = None, details: bool = False, guard: str = "none"
    ) -> list[ScoredPage]:
        """Each page's distinct tests in load order; the verdicts are kept when `details`."""
