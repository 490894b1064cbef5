"""`olmocr-rl bench`: an olmOCR-bench-compatible benchmark runner.

It reads a bench folder exactly as upstream `olmocr.bench.benchmark` does (docs/checks.md §1.1, §8):

* tests: every top-level `*.jsonl` (or one `.jsonl` given as the folder: then only the PDFs its
  tests name are considered); PDFs: `pdfs/**/*.pdf`, keyed by their path relative to `pdfs/`;
* a `baseline` test `<pdfkey>_baseline` (page 1, defaults) is added for every PDF that has no
  baseline test, filed under the pseudo-category "baseline"; `skip_baseline` drops all of them;
* every page 1..N of every PDF must have a test, unless `force` (N as pypdf counts it: the core
  reads plain PDFs itself, pypdf the rest; see `olmocr_rl.pdfs.page_counts`);
* candidates: every sub-directory except `pdfs`; a candidate's page files are the `*.md` whose
  path relative to the candidate folder fully matches `<pdf key without .pdf>_pg<N>_repeat<M>.md`;
  a test on page P uses those whose basename contains `_pg<P>_`, each one a repeat; files are
  read as UTF-8 with universal newlines;
* a test passes when more than half of its repeats pass (`test_avg > 0.5`); the per-type figures
  are means of `test_avg`; each JSONL file (and "baseline") gets a pass rate and the score is the
  unweighted mean of those rates;
* any candidate error (a missing page file, an unreadable file, a test that raises) makes the
  candidate "FAILED (errors)" with score 0.

Where we differ, on purpose:

* Every (test, md file) pair of a candidate is checked in one batch in Rust, in parallel.
* A failed candidate still gets every figure computed (`score_ignoring_errors`, per type, per
  JSONL, with errors counted as failed repeats) next to the reference-compatible status and
  `score` 0. The reference stops at a PDF without any page file; we list every missing file.
* The bootstrap CI is deterministic: `random.Random(seed)` (default seed 0). Per group and per
  resample we draw the group's pass count from Binomial(n, passed/n), which is the distribution
  of the reference's `np.random.choice(scores, n, replace=True).sum()` over 0/1 scores, and take
  numpy's default (linear) percentiles. The reference's CI is unseeded and varies run to run.
* Math checks need KaTeX 0.16.21 (installed by `make setup`); without it a bench with math tests
  stops before checking, naming the fix (it would otherwise score every math test as an error).
* Test ids must be unique across files (the reference only checks within a file); every invalid
  record of every file is listed at once (the reference stops at the first).
* `--compare` (not in the reference): each candidate against the first, B − A per JSONL file, per
  type and overall with a paired bootstrap interval over tests, and the tests gained and lost
  (`olmocr_rl.bench.compare`). Candidates named with `-c` keep the order given (the reference
  sorts them), in every table, `--json` and the report, so B − A is the pair as named.
* `--bootstrap-samples 0` computes no interval and says so (`ci` None); the reference's
  interval then has no resamples to take percentiles of.
* Page files are taken in sorted order (the reference uses the file system's order), so the
  first failure explanation of a test is deterministic.
* A corrupt PDF is an error naming the file (the reference crashes); a PDF that is not readable
  is skipped by the page-coverage check when `force` is given.
* A test's page must be a JSON integer >= 1 or a string of its digits (the reference pastes any
  value into the regex `_pg{page}_`); PDF and test file names must be UTF-8; without names given,
  a sub-folder with no page file of the bench's PDFs is not a candidate (the reference fails it).
  docs/bench.md, "Bad input, kills and a second copy".
"""

from olmocr_rl.bench.checking import Progress, evaluate_candidate
from olmocr_rl.bench.compare import Comparison, Difference, compare, compare_summary, print_comparisons
from olmocr_rl.bench.folder import BASELINE_GROUP, Bench, BenchError, find_candidates, load_bench
from olmocr_rl.bench.output import failed_everywhere, print_summary, summary_dict, test_records
from olmocr_rl.bench.results import BenchSummary, CandidateResult, TestOutcome
from olmocr_rl.bench.run import run_bench
from olmocr_rl.bench.stats import bootstrap_ci, percentile

__all__ = [
    "BASELINE_GROUP",
    "Bench",
    "BenchError",
    "BenchSummary",
    "CandidateResult",
    "Comparison",
    "Difference",
    "Progress",
    "TestOutcome",
    "bootstrap_ci",
    "compare",
    "compare_summary",
    "evaluate_candidate",
    "failed_everywhere",
    "find_candidates",
    "load_bench",
    "percentile",
    "print_comparisons",
    "print_summary",
    "run_bench",
    "summary_dict",
    "test_records",
]
