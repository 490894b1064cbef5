"""The short-output guard (allenai/olmocr PR #462; docs/checks.md §3.1.1).

Golden verdicts: `tests/golden/guard_cases.jsonl`, cases written by
`tests/golden/gen_guard_cases.py`, each judged by PR #462's head (the guarded checks) and by
f7cfe4c (the published ones); `guard_text_overlay.jsonl`: PR #462's verdicts on the
present/absent cases of `text_cases.jsonl`, where they differ from the published ones. Our
verdicts and explanations must equal both, each under its own rule set.
"""

import json
import pickle
import re

import pytest
from conftest import GOLDEN, golden_failures, read_jsonl

from olmocr_rl import BenchReward, BenchSuite


@pytest.fixture(scope="module")
def guard_cases() -> list[dict]:
    return read_jsonl(GOLDEN / "guard_cases.jsonl")


GROUPS = ["edge", "degenerate", "cut", "norm", "diffs", "message", "far", "random"]


@pytest.mark.parametrize("group", GROUPS)
def test_guarded_verdicts_equal_pr462(guard_cases, group):
    cases = [c for c in guard_cases if c["case"].startswith(group + "-")]
    assert cases, f"no golden cases in group {group}"
    bad = golden_failures(cases, guard="short-output")
    assert not bad, f"{len(bad)}/{len(cases)} disagree with PR #462:\n" + "\n".join(bad[:25])


@pytest.mark.parametrize("group", GROUPS)
def test_unguarded_verdicts_equal_published(guard_cases, group):
    """With the guard off, the same cases give f7cfe4c's verdicts."""
    cases = [{**c, **c["published"]} for c in guard_cases if c["case"].startswith(group + "-") and "published" in c]
    assert cases
    bad = golden_failures(cases, guard="none")
    assert not bad, f"{len(bad)}/{len(cases)} disagree with f7cfe4c:\n" + "\n".join(bad[:25])


def test_golden_cases_straddle_the_boundary(guard_cases):
    """The file exercises the guard from both sides: at len(text) - max_diffs - 1 the guard
    decides, at len(text) - max_diffs it does not; and it flips verdicts both ways."""
    decided = lambda c: c["explanation"].startswith("Candidate too short")
    below, at = [], []
    for c in guard_cases:
        # "len(text)=L max_diffs=K page=N (how)"; blank pages normalize to one space: not here.
        m = re.fullmatch(r"len\(text\)=(\d+) max_diffs=(\d+) page=(\d+) \((piece|other)\)", c.get("note", ""))
        if m:
            length, k, n = map(int, m.groups()[:3])
            assert len(c["text"]) == n
            {length - k - 1: below, length - k: at}.get(n, []).append(c)
    assert len(below) > 50 and len(at) > 50
    assert all(decided(c) for c in below if c["test"]["type"] == "present")
    assert not any(decided(c) for c in at)
    flips = [(c["published"]["passed"], c["passed"]) for c in guard_cases if "published" in c]
    assert sum(f == (True, False) for f in flips) > 100  # present passed on a short page
    assert sum(f == (False, True) for f in flips) > 100  # absent failed on a short page


def test_text_cases_under_the_guard(text_cases):
    """The present/absent cases of text_cases.jsonl, guarded: PR #462's verdict where the
    overlay lists one, else the published verdict (the guard left them alone)."""
    overlay = {o["case"]: o for o in read_jsonl(GOLDEN / "guard_text_overlay.jsonl")}
    cases = [
        {**c, **overlay.get(c["case"], {})}
        for c in text_cases
        if isinstance(c["test"], dict) and c["test"].get("type") in ("present", "absent") and "load_error" not in c and "raw_test" not in c
    ]
    assert len(cases) > 2000 and len(overlay) > 50
    assert overlay.keys() <= {c["case"] for c in cases}
    bad = golden_failures(cases, guard="short-output")
    assert not bad, f"{len(bad)}/{len(cases)} disagree with PR #462:\n" + "\n".join(bad[:25])


RECORDS = [
    {"pdf": "a.pdf", "page": 1, "id": "p", "type": "present", "text": "Dear Committee Members"},
    {"pdf": "a.pdf", "page": 1, "id": "q", "type": "present", "text": "with thanks"},
    {"pdf": "a.pdf", "page": 1, "id": "n", "type": "absent", "text": "Dear Sir or Madam", "max_diffs": 2},
    {"pdf": "a.pdf", "page": 1, "id": "o", "type": "order", "before": "Dear", "after": "thanks"},
]
JSONL = "\n".join(json.dumps(r) for r in RECORDS)
TOO_SHORT = "Candidate too short (1 chars) to plausibly contain 'Dear Committee Members...' (need >= 22 chars)"


def test_suite_guard_default_and_per_call():
    plain = BenchSuite.from_jsonl(JSONL)
    guarded = BenchSuite.from_jsonl(JSONL, guard="short-output")
    assert (plain.guard, guarded.guard) == ("none", "short-output")
    assert plain.check("p", "\n").passed  # published: " " matches a space of the text
    assert guarded.check("p", "\n") == (False, TOO_SHORT, False)
    assert plain.check("p", "\n", guard="short-output") == (False, TOO_SHORT, False)
    assert guarded.check("p", "\n", guard="none").passed
    # The guard survives pickling (BenchReward and multiprocessing pickle suites).
    assert pickle.loads(pickle.dumps(guarded)).check("p", "\n") == (False, TOO_SHORT, False)
    with pytest.raises(ValueError, match="guard must be one of 'none', 'short-output', not 'on'"):
        plain.check("p", "\n", guard="on")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="guard must be"):
        BenchSuite.from_jsonl(JSONL, guard="short")  # type: ignore[arg-type]


def test_every_entry_point_applies_the_guard(tmp_path):
    suite = BenchSuite.from_jsonl(JSONL)
    page = tmp_path / "page.md"
    page.write_text("\n", encoding="utf-8")
    ids = ["p", "q", "n", "o"]
    for guard, expected in (("none", [True, True, False, False]), ("short-output", [False, False, True, False])):
        single = [suite.check(i, "\n", guard=guard).passed for i in ids]
        batch = [r.passed for r in suite.check_batch([("\n", ids)], guard=guard)[0]]
        (files,) = suite.check_files([(page, ids)], guard=guard)
        (scored,) = suite.score(["\n"], [ids], guard=guard, details=True)
        assert single == batch == [r.passed for r in files or []] == [r.passed for r in scored.results] == expected, guard
        assert scored.reward == sum(expected) / 4
    # The raw core refuses unknown names too.
    with pytest.raises(ValueError, match="guard must be 'none' or 'short-output'"):
        suite._core.check("p", "\n", "sometimes")


def test_training_reward_for_a_newline_is_zero_by_default():
    """The issue's proof: a trl-style call scoring "\\n" on a page with only present tests gets 0
    from BenchReward by default, and the published 1.0 only when asked for."""
    suite = BenchSuite.from_jsonl(JSONL)
    ids = [["p", "q"]]
    prompts = [[{"role": "user", "content": "transcribe"}]]
    assert BenchReward(suite)(prompts=prompts, completions=["\n"], test_ids=ids) == [0.0]
    assert BenchReward(suite, average="macro")(prompts=prompts, completions=["\n"], test_ids=ids) == [0.0]
    assert BenchReward(suite, average="graded")(prompts=prompts, completions=["\n"], test_ids=ids) == [0.0]
    conversational = [[{"role": "assistant", "content": "\n"}]]
    assert BenchReward(suite)(prompts=prompts, completions=conversational, test_ids=ids) == [0.0]
    assert BenchReward(suite, guard="none")(prompts=prompts, completions=["\n"], test_ids=ids) == [1.0]
    # A real transcription is untouched by the guard.
    page = "Dear Committee Members,\n\nwith thanks"
    assert (
        BenchReward(suite)(completions=[page], test_ids=ids) == BenchReward(suite, guard="none")(completions=[page], test_ids=ids) == [1.0]
    )
    reward = pickle.loads(pickle.dumps(BenchReward(suite)))
    assert reward.guard == "short-output" and reward(completions=["\n"], test_ids=ids) == [0.0]
    with pytest.raises(ValueError, match="guard must be"):
        BenchReward(suite, guard="yes")  # type: ignore[arg-type]


def test_training_config_turns_the_guard_on(tmp_path):
    from olmocr_rl.errors import ConfigError
    from olmocr_rl.reward_registry import build_rewards
    from olmocr_rl.train.config import TrainConfig, apply_overrides
    from olmocr_rl.train.rewards import TrainBenchReward, TrainRewardContext

    cfg = TrainConfig()
    assert cfg.bench_guard == "short-output" and cfg.to_dict()["bench_guard"] == "short-output"
    apply_overrides(cfg, ["bench_guard=none"])
    assert cfg.bench_guard == "none"
    with pytest.raises(ConfigError, match="bench_guard"):
        apply_overrides(cfg, ["bench_guard=maybe"])

    tests = tmp_path / "t.jsonl"
    tests.write_text(JSONL + "\n", encoding="utf-8")
    ids = [["p", "q"]]
    (default,), _ = build_rewards({"bench": 1.0}, TrainRewardContext(tests))
    (off,), _ = build_rewards({"bench": 1.0}, TrainRewardContext(tests, guard="none"))
    assert isinstance(default, TrainBenchReward)
    assert default(completions=["\n"], test_ids=ids) == [0.0]
    assert off(completions=["\n"], test_ids=ids) == [1.0]


def _newline_bench(root):
    """A bench folder whose one page has two present tests, one absent and one order test, and a
    candidate that wrote one newline for it."""
    import sys

    sys.path.insert(0, str(GOLDEN.parent.parent / "bench_fixtures"))
    from make_pdfs import make_pdf

    sys.path.pop(0)
    (root / "pdfs").mkdir(parents=True)
    (root / "pdfs" / "a.pdf").write_bytes(make_pdf([["Dear Committee Members, with thanks"]]))
    (root / "tests.jsonl").write_text(JSONL + "\n", encoding="utf-8")
    (root / "model").mkdir()
    (root / "model" / "a_pg1_repeat1.md").write_text("\n", encoding="utf-8")
    return root


def test_bench_and_check_keep_the_published_semantics_unless_asked(tmp_path):
    from clirun import invoke

    root = _newline_bench(tmp_path / "bench")
    figures = {}
    for flags in ([], ["--guard", "none"], ["--guard", "short-output"]):
        res = invoke(["bench", root, "--skip-baseline", "--json", *flags])
        assert res.exit_code == 0, res.output
        out = json.loads(res.stdout)
        (cand,) = out["candidates"]
        figures[tuple(flags)] = (out["guard"], cand["by_type"]["present"]["score"], cand["by_type"]["absent"]["score"], cand["score"])
    # Published: "\n" passes both present tests, fails the absent one and the order test (2/4).
    assert figures[()] == figures[("--guard", "none")] == ("none", 1.0, 0.0, 0.5)
    assert figures[("--guard", "short-output")] == ("short-output", 0.0, 1.0, 0.25)
    text = invoke(["bench", root, "--skip-baseline", "--guard", "short-output"], env={"COLUMNS": "200"})
    assert text.exit_code == 0 and "guard: short-output" in text.stdout
    assert "guard:" not in invoke(["bench", root, "--skip-baseline"], env={"COLUMNS": "200"}).stdout
    bad = invoke(["bench", root, "--guard", "on"])
    assert bad.exit_code == 2 and "'on' is not one of 'none', 'short-output'" in bad.stderr

    page = root / "model" / "a_pg1_repeat1.md"
    plain = invoke(["check", root, page, "-t", "p", "-t", "n"])
    assert plain.exit_code == 0 and plain.stdout.splitlines()[0] == "PASS  p" and plain.stdout.endswith("1/2 passed\n")
    guarded = invoke(["check", root, page, "-t", "p", "-t", "n", "--guard", "short-output", "--json"])
    rows = [json.loads(line) for line in guarded.stdout.splitlines()]
    assert [(r["id"], r["passed"], r["explanation"]) for r in rows] == [("p", False, TOO_SHORT), ("n", True, "")]
