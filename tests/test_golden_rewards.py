"""EditDistanceReward, ElementCountReward, RectTablesReward and MedoidReward(group="batch")
against the values of upstream's own reward functions (tests/golden/reward_cases.jsonl, made by
tests/golden/gen_reward_cases.py on allenai/olmocr @ f7cfe4c with RapidFuzz 3.14.6 and
beautifulsoup4 4.15.0): every value equal, as floats, bit for bit."""

import json
from collections import Counter
from pathlib import Path

import pytest

from olmocr_rl import EditDistanceReward, ElementCountReward, MedoidReward, RectTablesReward

CASES = [json.loads(line) for line in (Path(__file__).parent / "golden" / "reward_cases.jsonl").open(encoding="utf-8")]
REWARDS = {
    "edit_distance": EditDistanceReward(),
    "element_count": ElementCountReward(),
    "rect_tables": RectTablesReward(),
    "medoid": MedoidReward(group="batch"),
}


def test_the_golden_file_covers_what_it_should():
    kinds = Counter(c["reward"] for c in CASES)
    assert len(CASES) >= 1000
    assert all(kinds[k] >= 150 for k in REWARDS), kinds
    # the hard corners are there: missing references, empty texts, conversational completions,
    # groups of 28 long completions, and the reference's own crashes
    assert any(None in c.get("claude_original", []) for c in CASES)
    assert any("" in c["completions"] for c in CASES)
    assert any(isinstance(x, list) for c in CASES for x in c["completions"])
    assert any(c["reward"] == "medoid" and len(c["completions"]) == 28 for c in CASES)
    assert any("error" in c for c in CASES)


@pytest.mark.parametrize("reward", sorted(REWARDS))
def test_rewards_equal_upstreams_values(reward):
    wrong = []
    for case in (c for c in CASES if c["reward"] == reward):
        kwargs = {"claude_original": case["claude_original"]} if "claude_original" in case else {}
        got = REWARDS[reward](None, case["completions"], **kwargs)
        if "error" in case:
            # upstream's table parser raised (the whole batch, and the training step, with it);
            # ours gives those completions 0.0 and the others upstream's value alone
            want = [0.0 if v is None else v for v in case["each"]]
        else:
            want = case["expected"]
        if [float(x).hex() for x in got] != [float(x).hex() for x in want]:
            wrong.append((case["case"], got, want))
    assert not wrong, f"{len(wrong)} cases differ, first: {wrong[:3]}"
