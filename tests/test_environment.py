"""No silently wrong reward: when the tests to be scored include math tests and KaTeX 0.16.21 is
missing (or another version), every entry point stops before scoring instead of turning each
math test into an error verdict: `BenchReward` raises at construction, `olmocr-rl bench` exits
non-zero before checking, `olmocr-rl prepare` lists it as a problem, and `olmocr-rl train`'s
pre-flight fails before anything is launched."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from clirun import invoke
from conftest import need

from olmocr_rl import BenchReward, BenchSuite, EnvironmentProblem, _core, _katex

FIXTURES = Path(__file__).resolve().parent.parent / "bench_fixtures"
MATH = {"pdf": "letter.pdf", "page": 1, "id": "m1", "type": "math", "math": "a^2 + b^2 = c^2"}
TEXT = {"pdf": "letter.pdf", "page": 1, "id": "t1", "type": "present", "text": "Dear"}


@pytest.fixture
def no_katex(monkeypatch, tmp_path):
    """KaTeX pointed at a file that does not exist (as after a plain `pip install`), restored after."""
    monkeypatch.setenv("OLMOCR_RL_KATEX_JS", str(tmp_path / "missing" / "katex.min.js"))
    _katex.configure()
    assert _core.katex_problem()
    yield
    monkeypatch.undo()
    _katex.configure()


@pytest.fixture
def wrong_katex(monkeypatch, tmp_path):
    fake = tmp_path / "katex.min.js"
    fake.write_text('var katex = {version: "0.16.0"};')
    monkeypatch.setenv("OLMOCR_RL_KATEX_JS", str(fake))
    _katex.configure()
    yield
    monkeypatch.undo()
    _katex.configure()


def bench_folder(root: Path, records: list[dict]) -> Path:
    (root / "pdfs").mkdir(parents=True)
    shutil.copyfile(FIXTURES / "pdfs" / "letter.pdf", root / "pdfs" / "letter.pdf")
    (root / "tests.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    (root / "model").mkdir()
    (root / "model" / "letter_pg1_repeat1.md").write_text("Dear Committee Members, $a^2 + b^2 = c^2$")
    return root


@pytest.mark.parametrize("env", ["no_katex", "wrong_katex"])
def test_bench_reward_refuses_math_tests_it_cannot_check(env, request):
    request.getfixturevalue(env)
    suite = BenchSuite.from_jsonl("\n".join(json.dumps(r) for r in (MATH, TEXT)), "t.jsonl")
    with pytest.raises(EnvironmentProblem, match=r"1 math test\(s\) cannot be checked: .*olmocr-rl install-katex"):
        BenchReward(suite)
    # Without math tests nothing depends on KaTeX: the reward is built and scores.
    text_only = BenchSuite.from_jsonl(json.dumps(TEXT), "t.jsonl")
    assert BenchReward(text_only)(completions=["Dear Sir"], test_ids=[["t1"]]) == [1.0]


def test_with_katex_the_math_suite_builds():
    if _core.katex_problem():
        pytest.skip(f"KaTeX not installed here: {_core.katex_problem()}")
    suite = BenchSuite.from_jsonl(json.dumps(MATH), "t.jsonl")
    assert BenchReward(suite)(completions=["$a^2 + b^2 = c^2$"], test_ids=[["m1"]]) == [1.0]


def test_bench_stops_before_checking(no_katex, tmp_path):
    root = bench_folder(tmp_path / "bench", [MATH, TEXT])
    details = tmp_path / "details.jsonl"
    r = invoke(["bench", root, "--details", details, "--json"])
    assert r.exit_code != 0
    assert "math test(s) cannot be checked" in r.stderr and "olmocr-rl install-katex" in r.stderr
    assert r.stdout == "" and not details.exists()


def test_prepare_lists_it_as_a_problem(no_katex, tmp_path):
    root = bench_folder(tmp_path / "bench", [MATH, TEXT])
    r = invoke(["prepare", root, tmp_path / "prep", "--longest-side", "112", "--eval-fraction", "0"])
    assert r.exit_code == 0, r.output
    assert "cannot be checked" in r.output
    report = json.loads((tmp_path / "prep" / "report.json").read_text())
    assert [e["reason"].split(":")[0] for e in report["environment"]] == ["1 math test(s) cannot be checked"]
    assert report["problems"] >= 1
    strict = invoke(["prepare", root, tmp_path / "prep2", "--longest-side", "112", "--eval-fraction", "0", "--strict"])
    assert strict.exit_code == 1, strict.output


def test_train_preflight_fails_before_launching(no_katex, tmp_path, tiny_model):
    need("trl")
    root = bench_folder(tmp_path / "bench", [MATH, TEXT])
    assert invoke(["prepare", root, tmp_path / "prep", "--longest-side", "112", "--eval-fraction", "0"]).exit_code == 0
    out = tmp_path / "run"
    r = invoke(["train", tmp_path / "prep", "--model", tiny_model, "-o", out, "--config",
                FIXTURES / "tiny_grpo.yaml", "eval_split=none", "--dry-run"])  # fmt: skip
    assert r.exit_code == 1
    assert "math test(s) cannot be checked" in r.stderr and "olmocr-rl install-katex" in r.stderr
    real = invoke(["train", tmp_path / "prep", "--model", tiny_model, "-o", out, "--config",
                   FIXTURES / "tiny_grpo.yaml", "eval_split=none"])  # fmt: skip
    assert real.exit_code == 1 and "nothing was launched" in real.stderr
    assert not (out / "train_config.json").exists()
