"""olmocr-rl: olmOCR-bench unit tests as a GRPO reward, checked by a Rust core.

Public API:
    BenchSuite, CheckResult, SuiteError  -- load olmOCR-bench test JSONL and run checks
    normalize_text, ratio, partial_ratio, find_near_matches -- the reference's primitives
"""

from olmocr_rl._core import (
    __version__,
    find_near_matches,
    normalize_text,
    partial_ratio,
    ratio,
)
from olmocr_rl.suite import BenchSuite, CheckResult, SuiteError, TestInfo

__all__ = [
    "BenchSuite",
    "CheckResult",
    "SuiteError",
    "TestInfo",
    "__version__",
    "find_near_matches",
    "normalize_text",
    "partial_ratio",
    "ratio",
]
