"""Type stubs for the Rust extension `olmocr_rl._core` (checked against it by mypy stubtest)."""

import os
from typing import final

__all__ = [
    "__version__",
    "UNICODE_VERSION",
    "normalize_text",
    "ratio",
    "partial_ratio",
    "find_near_matches",
    "_py_compat",
    "_fmt_float",
    "_parse_tables",
    "pdf_page_counts",
    "set_katex_path",
    "katex_problem",
    "Suite",
]

from typing import Any

__version__: str
UNICODE_VERSION: str

def normalize_text(s: str) -> str: ...
def ratio(a: str, b: str) -> float: ...
def partial_ratio(a: str, b: str) -> float: ...
def find_near_matches(sub: str, seq: str, max_l_dist: int) -> list[tuple[int, int, int]]: ...

def _py_compat(s: str) -> tuple[str, list[bool], list[bool], list[bool], str]: ...

def _fmt_float(x: float) -> tuple[str, str, str]: ...

def _parse_tables(text: str, markdown: bool) -> list[dict[str, Any]]: ...

def pdf_page_counts(paths: list[str | os.PathLike[str]], threads: int | None = None) -> list[int | None]: ...
def set_katex_path(path: str | None) -> None: ...
def katex_problem() -> str | None: ...

@final
class Suite:
    @staticmethod
    def from_sources(sources: list[tuple[str, str]]) -> Suite: ...
    def __len__(self) -> int: ...
    @property
    def errors(self) -> list[tuple[str, int, str | None, str]]: ...
    def records(self) -> list[tuple[str, str, str, str, str, int]]: ...
    def check(self, test_id: str, text: str) -> tuple[bool, str, bool]: ...
    def check_batch(
        self, pages: list[tuple[str, list[str]]], threads: int | None = None
    ) -> list[list[tuple[bool, str, bool]]]: ...
    def check_files(
        self, items: list[tuple[str | os.PathLike[str], list[str]]], threads: int | None = None
    ) -> list[list[tuple[bool, str, bool]] | None]: ...
    def score(
        self, pages: list[tuple[str, list[str]]], threads: int | None = None, details: bool = False
    ) -> list[
        tuple[
            int,
            int,
            list[tuple[str, int, int]],
            float | None,
            float | None,
            float | None,
            list[tuple[str, str, bool, str, bool]],
        ]
    ]: ...
