"""Golden verdicts for `math` tests: cases we wrote, judged by the upstream reference running
KaTeX 0.16.21 in headless Chromium (tests/golden/README.md, "Math cases").

* Cases the reference decided by the exact-string shortcut or by MathML containment
  (`stage` "exact"/"mathml"), and every load-time case, must agree with the reference: these
  verdicts do not depend on fonts or layout.
* Overall agreement must be at least 99.5%. Every disagreement must be listed in
  KNOWN_DISAGREEMENTS with its reason, and every listed case must really disagree.
* Cases marked nondeterministic (their reference result differed between two cold-cache runs)
  only need to load and run.
"""

import pytest
from conftest import GOLDEN, golden_disagreement, read_jsonl

pytestmark = pytest.mark.filterwarnings("ignore:skipped 1 invalid:UserWarning")

# case id -> why our verdict differs from the reference's (layout-dependent cases only).
KNOWN_DISAGREEMENTS: dict[str, str] = {}

MIN_AGREEMENT = 0.995


@pytest.fixture(scope="module")
def math_cases() -> list[dict]:
    return read_jsonl(GOLDEN / "math_cases.jsonl")


@pytest.fixture(scope="module")
def disagreements(math_cases) -> dict[str, str]:
    """case id -> how we differ from the reference, for every disagreeing case."""
    out = {}
    for case in math_cases:
        try:
            why = golden_disagreement(case)
        except NotImplementedError as e:
            why = f"math check not implemented: {e}"
        if why:
            out[case["case"]] = why
    return out


def _strict(case: dict) -> bool:
    """Verdicts that must match exactly: load-time, exact shortcut, MathML containment."""
    return "load_error" in case or case.get("stage") in ("exact", "mathml")


def test_golden_math_volume(math_cases):
    assert len(math_cases) >= 1500
    ids = [c["case"] for c in math_cases]
    assert len(set(ids)) == len(ids), "duplicate case ids"
    stages = {c.get("stage", "load_error") for c in math_cases}
    assert {"exact", "mathml", "layout", "fail", "load_error"} <= stages, stages
    checked = [c for c in math_cases if "passed" in c]
    assert sum(c["passed"] for c in checked) > 0.25 * len(checked)
    assert sum(not c["passed"] for c in checked) > 0.25 * len(checked)
    for c in checked:  # internal consistency of the golden file
        assert c["passed"] == (c["stage"] in ("exact", "mathml", "layout")), c["case"]
        assert c["mathml_match"] == (c["stage"] in ("exact", "mathml")), c["case"]


def test_strict_cases_agree(math_cases, disagreements):
    strict = [c for c in math_cases if _strict(c)]
    assert len(strict) >= 300
    bad = [f"{c['case']}: {disagreements[c['case']]}" for c in strict if c["case"] in disagreements]
    assert not bad, f"{len(bad)}/{len(strict)} exact/MathML/load-time cases disagree:\n" + "\n".join(bad[:30])


def test_overall_agreement(math_cases, disagreements):
    rate = 1 - len(disagreements) / len(math_cases)
    unlisted = [f"{cid}: {why}" for cid, why in disagreements.items() if cid not in KNOWN_DISAGREEMENTS]
    assert not unlisted, f"{len(unlisted)} disagreements not in KNOWN_DISAGREEMENTS (agreement {rate:.2%}):\n" + "\n".join(unlisted[:30])
    assert rate >= MIN_AGREEMENT, f"agreement {rate:.2%} < {MIN_AGREEMENT:.1%}"


def test_known_disagreements_are_current(math_cases, disagreements):
    by_id = {c["case"]: c for c in math_cases}
    for cid, reason in KNOWN_DISAGREEMENTS.items():
        assert cid in by_id, f"KNOWN_DISAGREEMENTS lists unknown case {cid}"
        assert reason.strip(), f"KNOWN_DISAGREEMENTS[{cid!r}] needs a reason"
        assert not _strict(by_id[cid]), f"{cid} is an exact/MathML/load-time case: it must agree"
    stale = sorted(cid for cid in KNOWN_DISAGREEMENTS if cid not in disagreements)
    assert not stale, f"listed in KNOWN_DISAGREEMENTS but now agree with the reference: {stale}"
