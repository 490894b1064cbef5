"""The guards: allenai/olmocr PR #462's short-output rule (docs/checks.md §3.1.1) and PR #476's
footnote rule (§3.7.1).

Golden verdicts: `tests/golden/guard_cases.jsonl`, cases written by
`tests/golden/gen_guard_cases.py`, each judged by PR #462's head (the guarded checks) and by
f7cfe4c (the published ones); `guard_text_overlay.jsonl`: PR #462's verdicts on the
present/absent cases of `text_cases.jsonl`, where they differ from the published ones. Our
verdicts and explanations must equal both, each under its own rule set.

PR #476's code is not public, so its rule has no golden verdicts: it is held to hand-made cases
(the PR's two examples among them) and to `footnote_model`, §3.7 and §3.7.1 written out here in
Python (RapidFuzz, our normalize_text), on the golden footnote cases and on random pages.
"""

import json
import pickle
import re

import pytest
from conftest import GOLDEN, golden_failures, read_jsonl
from hypothesis import given, settings
from hypothesis import strategies as st

from olmocr_rl import BenchReward, BenchSuite, normalize_text
from olmocr_rl.suite import GUARD_RULES, GUARDS, TRAINING_GUARD, guard_rules

FOOTNOTE = "short-output+footnote"


@pytest.fixture(scope="module")
def guard_cases() -> list[dict]:
    return read_jsonl(GOLDEN / "guard_cases.jsonl")


GROUPS = ["edge", "degenerate", "cut", "norm", "diffs", "message", "far", "random"]


@pytest.mark.parametrize("guard", ["short-output", FOOTNOTE])
@pytest.mark.parametrize("group", GROUPS)
def test_guarded_verdicts_equal_pr462(guard_cases, group, guard):
    """PR #462's verdicts under either guard that holds its rule (the footnote rule leaves
    present/absent alone)."""
    cases = [c for c in guard_cases if c["case"].startswith(group + "-")]
    assert cases, f"no golden cases in group {group}"
    bad = golden_failures(cases, guard=guard)
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
    with pytest.raises(ValueError, match="guard must be one of 'none', 'short-output', 'short-output\\+footnote', not 'on'"):
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
    with pytest.raises(ValueError, match="guard must be one of 'none', 'short-output', 'short-output\\+footnote', not \"sometimes\""):
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
    assert reward.guard == TRAINING_GUARD == FOOTNOTE and reward(completions=["\n"], test_ids=ids) == [0.0]
    with pytest.raises(ValueError, match="guard must be"):
        BenchReward(suite, guard="yes")  # type: ignore[arg-type]


def test_training_config_turns_the_guard_on(tmp_path):
    from olmocr_rl.errors import ConfigError
    from olmocr_rl.reward_registry import build_rewards
    from olmocr_rl.train.config import TrainConfig, apply_overrides
    from olmocr_rl.train.rewards import TrainBenchReward, TrainRewardContext

    cfg = TrainConfig()
    assert cfg.bench_guard == TRAINING_GUARD and cfg.to_dict()["bench_guard"] == TRAINING_GUARD
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
    text = invoke(["bench", root, "--skip-baseline", "--guard", "short-output"], env={"COLUMNS": "400"})
    assert (
        text.exit_code == 0
        and "scored with: guard short-output, NOT the published checks: short-output: allenai/olmocr PR #462" in text.stdout
    )
    assert (
        "scored with: guard none (the published olmOCR-bench checks)"
        in invoke(["bench", root, "--skip-baseline"], env={"COLUMNS": "400"}).stdout
    )
    bad = invoke(["bench", root, "--guard", "on"])
    assert bad.exit_code == 2 and "'on' is not one of 'none', 'short-output', 'short-output+footnote'" in bad.stderr

    page = root / "model" / "a_pg1_repeat1.md"
    plain = invoke(["check", root, page, "-t", "p", "-t", "n"])
    assert plain.exit_code == 0 and plain.stdout.splitlines()[0] == "PASS  p" and plain.stdout.endswith("1/2 passed\n")
    guarded = invoke(["check", root, page, "-t", "p", "-t", "n", "--guard", "short-output", "--json"])
    rows = [json.loads(line) for line in guarded.stdout.splitlines()]
    assert [(r["id"], r["passed"], r["explanation"]) for r in rows] == [("p", False, TOO_SHORT), ("n", True, "")]


def test_guard_names_list_their_rules():
    """A guard's name is its rules' names joined by "+", each rule described once (GUARD_RULES);
    the core and the command line accept exactly these names."""
    import typing

    from olmocr_rl.cli import GuardChoice
    from olmocr_rl.train.config import TrainConfig

    assert [g.value for g in GuardChoice] == list(GUARDS)
    assert set(typing.get_args(typing.get_type_hints(TrainConfig)["bench_guard"])) == set(GUARDS)
    assert guard_rules("none") == []
    for guard in GUARDS[1:]:
        names = guard.split("+")
        assert set(names) <= GUARD_RULES.keys() and [r.split(":")[0] for r in guard_rules(guard)] == names
    assert "PR #462" in guard_rules("short-output")[0] and "PR #476" in guard_rules(FOOTNOTE)[1]
    suite = BenchSuite.from_jsonl(JSONL)
    for guard in GUARDS:
        suite._core.check("p", "x", guard)  # every name reaches the core


# --- PR #476's footnote rule (docs/checks.md §3.7.1) ------------------------------------------

WILL = "an expression of good will from you"


def footnote_record(**fields) -> dict:
    return {"pdf": "a.pdf", "page": 1, "id": "f", "type": "footnote", "marker": "1", **fields}


def footnote_model(record: dict, page: str, guard: str) -> bool:
    """The footnote check as docs/checks.md §3.7 and §3.7.1 state it, with PR #476's rule when
    `guard` holds it: the oracle for the rule no reference implements."""
    from rapidfuzz import fuzz

    marker = record["marker"]
    spans = [m.span() for m in re.finditer(r"\[\^" + re.escape(marker) + r"\](?!:)", page)]
    spans += [m.span() for m in re.finditer(r"<sup[^>]*>" + re.escape(marker) + "</sup>", page, re.IGNORECASE)]
    if marker.isascii() and marker.isdigit():
        sup = marker.translate(str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹"))
        spans += [m.span() for m in re.finditer(re.escape(sup), page)]
    if not spans:
        return False
    clean = lambda text: "".join(c for c in normalize_text(text) if c.isalnum()).lower()
    max_diffs = record.get("max_diffs", 0)
    for field, before in (("appears_before_marker", True), ("appears_after_marker", False)):
        want = record.get(field)
        if not want:
            continue
        want = normalize_text(want)
        target = clean(want)
        threshold = 1 - max_diffs / (len(want) or 1)
        need = len(clean(want[-200:] if before else want[:200])) - max_diffs
        found = False
        for start, end in spans:
            near = clean(page[max(0, start - 200) : start] if before else page[end : end + 200])
            if not near:
                continue
            n = min(len(near), 2 * len(target))
            part = near if not n else near[len(near) - n :] if before else near[:n]  # n == 0: the whole window
            if "footnote" in guard.split("+") and len(part) < need:
                continue
            if fuzz.partial_ratio(target, part) / 100 >= threshold:
                found = True
                break
        if not found:
            return False
    return True


def footnote_verdicts(record: dict, page: str) -> list[bool]:
    suite = BenchSuite.from_jsonl(json.dumps(record, ensure_ascii=False))
    return [suite.check("f", page, guard=g).passed for g in GUARDS]


@pytest.mark.parametrize(
    ("fields", "page", "expected"),
    [
        # PR #476's two examples: one stray character next to the marker.
        ({"appears_before_marker": WILL}, "a[^1] rest of page", [True, True, False]),
        ({"appears_after_marker": WILL}, "Thanks.[^1]a", [True, True, False]),
        # The test's own text next to its marker passes every rule set, at the page's start too.
        ({"appears_before_marker": WILL}, f"{WILL}[^1] rest of page", [True, True, True]),
        ({"appears_before_marker": WILL}, f"We welcome {WILL}<sup>1</sup>.", [True, True, True]),
        ({"appears_after_marker": WILL}, f"[^1] {WILL.upper()}.", [True, True, True]),
        # Cleaned characters count: "abc-def" less 2 needs 4 of them next to the marker.
        ({"appears_before_marker": "abc-def", "max_diffs": 2}, "c d e f¹", [True, True, True]),
        ({"appears_before_marker": "abc-def", "max_diffs": 2}, ". d, e, f!¹", [True, True, False]),
        ({"appears_before_marker": "abc", "max_diffs": 3}, "z[^1]", [True, True, True]),
        # One good occurrence suffices; a stray one does not hide it.
        ({"appears_before_marker": "fraction of the cost"}, "a[^1]" + "\n" * 210 + "at a fraction of the cost[^1]", [True] * 3),
        # No neighbour text asked: the marker alone, under every rule set.
        ({}, "x[^1]", [True, True, True]),
        # Both sides: the rule applies to each.
        ({"appears_before_marker": "alpha beta", "appears_after_marker": "gamma delta"}, "alpha beta[^1]g", [True, True, False]),
    ],
)
def test_footnote_rule_hand_made_cases(fields, page, expected):
    record = footnote_record(**fields)
    assert footnote_verdicts(record, page) == expected
    assert [footnote_model(record, page, g) for g in GUARDS] == expected


def test_footnote_rule_on_the_golden_footnote_cases(text_cases):
    """Under the footnote rule, every golden footnote case gives the model's verdict: the
    published one, except where a marker's checked text is too short (the rule only removes
    matches, never adds one)."""
    cases = [c for c in text_cases if isinstance(c["test"], dict) and c["test"].get("type") == "footnote"]
    cases = [c for c in cases if "load_error" not in c and "raw_test" not in c and isinstance(c["test"].get("marker"), str)]
    flips = []
    for c in cases:
        suite = BenchSuite.from_jsonl(json.dumps(c["test"], ensure_ascii=False), strict=False)
        if not len(suite):
            continue
        (test_id,) = suite.ids
        published, guarded = (suite.check(test_id, c["text"], guard=g).passed for g in ("none", FOOTNOTE))
        assert guarded == footnote_model(c["test"], c["text"], FOOTNOTE), c["case"]
        assert not (guarded and not published), c["case"]
        flips += [c["case"]] if published != guarded else []
    assert len(cases) > 1000 and 10 < len(flips) < 100, len(flips)


_PIECES = ["a", "e", "[^1]", "<sup>1</sup>", "¹", "[^1]:", " ", "\n", "...", "-" * 30, "fraction", "of the", "cost", "x" * 5, "\n" * 120]


@settings(max_examples=300, deadline=None)
@given(
    pieces=st.lists(st.sampled_from(_PIECES), max_size=12),
    target=st.sampled_from(["fraction of the cost", "a", "cost", "the cost of it all"]),
    side=st.sampled_from(["appears_before_marker", "appears_after_marker"]),
    max_diffs=st.integers(0, 4),
)
def test_footnote_rule_equals_the_model_on_random_pages(pieces, target, side, max_diffs):
    record = footnote_record(**{side: target, "max_diffs": max_diffs})
    page = "".join(pieces)
    assert footnote_verdicts(record, page) == [footnote_model(record, page, g) for g in GUARDS], page


def test_training_reward_refuses_the_footnote_exploit(tmp_path):
    """The issue's proof: `a[^1] rest of page` fails the footnote test with the training guard
    and passes it without; `bench` keeps the published semantics unless --guard names the rule."""
    from clirun import invoke

    record = footnote_record(appears_before_marker=WILL)
    suite = BenchSuite.from_jsonl(json.dumps(record))
    assert BenchReward(suite)(completions=["a[^1] rest of page"], test_ids=[["f"]]) == [0.0]
    assert BenchReward(suite, guard="none")(completions=["a[^1] rest of page"], test_ids=[["f"]]) == [1.0]
    assert BenchReward(suite)(completions=[f"{WILL}[^1] rest of page"], test_ids=[["f"]]) == [1.0]

    root = _newline_bench(tmp_path / "bench")
    (root / "tests.jsonl").write_text(json.dumps({**record, "id": "f"}) + "\n", encoding="utf-8")
    (root / "model" / "a_pg1_repeat1.md").write_text("a[^1] rest of page", encoding="utf-8")
    scores = {}
    for flags in ([], ["--guard", "short-output"], ["--guard", FOOTNOTE]):
        res = invoke(["bench", root, "--skip-baseline", "--json", *flags])
        assert res.exit_code == 0, res.output
        out = json.loads(res.stdout)
        scores[flags[-1] if flags else "default"] = (out["semantics"]["guard"], out["candidates"][0]["score"])
    assert scores == {"default": ("none", 1.0), "short-output": ("short-output", 1.0), FOOTNOTE: (FOOTNOTE, 0.0)}
