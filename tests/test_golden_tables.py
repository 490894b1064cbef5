"""Golden verdicts for `table` tests: cases we wrote, judged by the upstream reference
(tests/golden/README.md, "Table cases"; generator tests/golden/gen_table_cases.py).

Every case must agree with the reference: load-time acceptance, verdict, error-ness and (when
the reference does not raise) the exact explanation.
"""

import json
from collections import Counter
from pathlib import Path

import pytest
from conftest import golden_failures

CASES = Path(__file__).parent / "golden" / "table_cases.jsonl"


@pytest.fixture(scope="module")
def table_cases() -> list[dict]:
    with CASES.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


GROUPS = ["spec", "rule", "load", "md", "html", "junk", "walk", "long"]


@pytest.mark.filterwarnings("ignore:skipped 1 invalid test record")
@pytest.mark.parametrize("group", GROUPS)
def test_golden_table_agreement(table_cases, group):
    cases = [c for c in table_cases if c["case"].split("-")[0] == group]
    assert cases, f"no golden table cases in group {group}"
    bad = golden_failures(cases)
    assert not bad, f"{len(bad)}/{len(cases)} disagree:\n" + "\n".join(bad[:25])


def test_golden_table_volume(table_cases):
    assert len(table_cases) >= 2000
    outcomes = Counter(
        "load_error" if "load_error" in c else "error" if c["explanation"].startswith("error:") else c["passed"] for c in table_cases
    )
    assert outcomes[True] > 0.25 * len(table_cases)
    assert outcomes[False] > 0.25 * len(table_cases)
    assert outcomes["error"] >= 10 and outcomes["load_error"] >= 5
