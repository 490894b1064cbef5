"""olmocr-rl: olmOCR-bench unit tests as a GRPO reward, checked by a Rust core.

Public API:
    BenchSuite, CheckResult, PageScore, SuiteError -- load olmOCR-bench test JSONL, run checks
    BenchReward -- the pass rate as a trl GRPOTrainer reward function
    normalize_text, ratio, partial_ratio, find_near_matches -- the reference's primitives
"""

from olmocr_rl._core import (
    __version__,
    find_near_matches,
    normalize_text,
    partial_ratio,
    ratio,
)
from olmocr_rl.rewards import BenchReward, EosReward, FrontMatterReward
from olmocr_rl.suite import BenchSuite, CheckResult, EnvironmentProblem, PageScore, SuiteError, TestInfo, TestResult

__all__ = [
    "BenchReward",
    "BenchSuite",
    "EosReward",
    "FrontMatterReward",
    "CheckResult",
    "EnvironmentProblem",
    "PageScore",
    "SuiteError",
    "TestInfo",
    "TestResult",
    "__version__",
    "find_near_matches",
    "normalize_text",
    "partial_ratio",
    "ratio",
]
