"""olmocr-rl: olmOCR-bench unit tests as a GRPO reward, checked by a Rust core.

Public API:
    BenchSuite, CheckResult, PageScore, SuiteError -- load olmOCR-bench test JSONL, run checks
    BenchReward -- the pass rate as a trl GRPOTrainer reward function
    EosReward, FrontMatterReward, MedoidReward, EditDistanceReward, ElementCountReward,
    RectTablesReward -- olmOCR's other GRPO rewards
    normalize_text, ratio, partial_ratio, find_near_matches -- the reference's primitives
"""

from olmocr_rl._core import (
    __version__,
    find_near_matches,
    normalize_text,
    partial_ratio,
    ratio,
)
from olmocr_rl.rewards import (
    BenchReward,
    EditDistanceReward,
    ElementCountReward,
    EosReward,
    FrontMatterReward,
    MedoidReward,
    RectTablesReward,
)
from olmocr_rl.suite import BenchSuite, CheckResult, EnvironmentProblem, PageScore, SuiteError, TestInfo, TestResult

__all__ = [
    "BenchReward",
    "BenchSuite",
    "EditDistanceReward",
    "ElementCountReward",
    "EosReward",
    "MedoidReward",
    "RectTablesReward",
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
