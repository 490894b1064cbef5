"""FrontMatterReward against the reference's reward_front_matter (golden), and EosReward."""

import json
from pathlib import Path

import pytest

from olmocr_rl import EosReward, FrontMatterReward
from olmocr_rl.front_matter import FrontMatterError, parse_page_response

CASES = [json.loads(line) for line in (Path(__file__).parent / "golden" / "front_matter_cases.jsonl").open(encoding="utf-8")]


def test_front_matter_reward_matches_reference():
    reward = FrontMatterReward()
    got = reward(completions=[c["completion"] for c in CASES], claude_original=[c["claude_original"] for c in CASES])
    bad = [(c["completion"], c["claude_original"], c["reward"], g) for c, g in zip(CASES, got) if g != c["reward"]]
    assert not bad, f"{len(bad)}/{len(CASES)} differ, e.g. {bad[:3]}"
    assert len({c["reward"] for c in CASES}) >= 5


def test_page_response_quirks():
    ok = "---\nprimary_language: no\nis_rotation_valid: 'TRUE'\nrotation_correction: '90'\nis_table: false\nis_diagram: false\n---\n  Text \n"
    r = parse_page_response(ok)
    assert (r.primary_language, r.is_rotation_valid, r.rotation_correction, r.natural_text) == (None, True, 90, "Text")
    for bad in ["\n" + ok, ok.replace("---\n", "---\r\n", 1), ok.replace("is_table: false\n", ""), "plain text"]:
        with pytest.raises(FrontMatterError):
            parse_page_response(bad)


def test_eos_reward():
    eos = EosReward(2)
    assert eos(completions=["a", "b", ""], completion_ids=[[5, 2], [5, 3], []]) == [1.0, 0.0, 0.0]
    assert EosReward([2, 7])(completion_ids=[[7]]) == [1.0]
    with pytest.raises(TypeError):
        eos(completions=["a"])
