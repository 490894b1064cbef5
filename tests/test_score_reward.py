"""suite.score aggregates and BenchReward called the way trl 1.x calls reward functions."""

import json
import pickle
from concurrent.futures import ThreadPoolExecutor

import pytest

from olmocr_rl import BenchReward, BenchSuite

RECORDS = [
    {"id": "p1", "type": "present", "text": "alpha"},
    {"id": "b1", "type": "baseline"},
    {"id": "p2", "type": "present", "text": "gamma"},
    {"id": "a1", "type": "absent", "text": "delta"},
    {"id": "o1", "type": "order", "before": "alpha", "after": "beta"},
]


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    d = tmp_path_factory.mktemp("bench")
    lines = [json.dumps({"pdf": "doc.pdf", "page": 1, **r}) for r in RECORDS]
    (d / "doc_tests.jsonl").write_text("\n".join(lines[:3]) + "\n")
    (d / "more_tests.jsonl").write_text("\n".join(lines[3:]) + "\n")
    return BenchSuite.load(d)


def test_score_aggregates_by_hand(suite):
    (s1, s2, s3) = suite.score(
        ["alpha beta", "beta alpha delta", "x"],
        [["p1", "b1", "p2", "a1", "o1"], ["a1", "p1", "p1"], []],
        details=True,
    )
    # page 1: p1 pass, b1 pass, p2 fail, a1 pass, o1 pass -> 4/5
    assert (s1.passed, s1.total, s1.reward) == (4, 5, 0.8)
    assert s1.by_type == {"present": (1, 2), "baseline": (1, 1), "absent": (1, 1), "order": (1, 1)}
    assert s1.macro == (0.5 + 1.0 + 1.0 + 1.0) / 4
    assert [r.id for r in s1.results] == ["p1", "b1", "p2", "a1", "o1"]  # load order
    assert not s1.results[2].passed and "gamma" in s1.results[2].explanation
    # page 2: duplicate id counted once; a1 fails (delta present), p1 passes
    assert (s2.passed, s2.total, s2.reward, s2.macro) == (1, 2, 0.5, 0.5)
    assert (s3.reward, s3.macro, s3.total) == (None, None, 0)


def test_repeated_completions_are_scored_once_and_returned_separately(suite, monkeypatch):
    texts = ["alpha beta", "beta alpha delta", "alpha beta", "alpha beta"]
    ids = [["p1", "a1"], ["p1", "a1"], ["p1", "a1"], ["p1"]]
    calls = []
    core_score = suite._core.score
    monkeypatch.setattr(suite, "_core", type("Spy", (), {"score": lambda self, pages, *a: calls.append(pages) or core_score(pages, *a)})())
    got = suite.score(texts, ids, details=True)
    assert [p[0] for p in calls[0]] == ["alpha beta", "beta alpha delta", "alpha beta"]  # (text, ids) pairs, once each
    assert [(s.passed, s.total) for s in got] == [(2, 2), (1, 2), (2, 2), (1, 1)]
    assert got[2] == got[0] and got[2].results is not got[0].results and got[2].by_type is not got[0].by_type


def test_score_unknown_id_and_length_mismatch(suite):
    with pytest.raises(KeyError, match="nope"):
        suite.score(["x"], [["p1", "nope"]])
    with pytest.raises(ValueError):
        suite.score(["x", "y"], [["p1"]])


def test_bench_reward_called_like_trl(suite):
    reward = BenchReward(suite)
    logged = {}
    out = reward(
        prompts=[[{"role": "user", "content": "ocr"}]] * 4,
        completions=[
            [{"role": "assistant", "content": "alpha beta"}],
            "gamma",
            [{"role": "assistant", "content": [{"type": "text", "text": "alpha "}, {"type": "text", "text": "gamma"}]}],
            "no tests",
        ],
        completion_ids=[[1, 2]] * 4,
        test_ids=[["p1", "p2"], ["p1", "p2"], ["p1", "p2"], []],
        image=[None] * 4,
        trainer_state=None,
        log_metric=lambda k, v: logged.__setitem__(k, v),
        log_extra=lambda *a: None,
    )
    assert out == [0.5, 0.5, 1.0, None]
    assert logged["bench/present/pass_rate"] == 4 / 6
    assert logged["bench/jsonl/doc_tests.jsonl/pass_rate"] == 4 / 6
    assert reward.__name__ == "olmocr_bench"


def test_bench_reward_macro_and_errors(suite):
    macro = BenchReward(suite, average="macro")
    assert macro(completions=["alpha beta"], test_ids=[["p1", "p2", "b1"]]) == [(0.5 + 1.0) / 2]
    with pytest.raises(KeyError):
        macro(completions=["x"], test_ids=[["missing-id"]])
    with pytest.raises(TypeError, match="test_ids"):
        macro(completions=["x"])
    with pytest.raises(ValueError):
        BenchReward(suite, average="median")


def test_bench_reward_pickles_and_is_thread_safe(suite):
    reward = pickle.loads(pickle.dumps(BenchReward(suite)))
    comps = ["alpha beta gamma", "beta", "alpha"] * 50
    ids = [["p1", "p2", "a1", "o1"]] * len(comps)
    expected = reward(completions=comps, test_ids=ids)
    with ThreadPoolExecutor(8) as ex:
        results = list(ex.map(lambda _: reward(completions=comps, test_ids=ids), range(16)))
    assert all(r == expected for r in results)


def test_bench_reward_from_path(suite, tmp_path):
    f = tmp_path / "t.jsonl"
    f.write_text(json.dumps({"pdf": "d.pdf", "page": 1, "id": "x", "type": "present", "text": "hi"}) + "\n")
    assert BenchReward(f)(completions=["hi there"], test_ids=[["x"]]) == [1.0]


def test_graded_reward_gives_partial_credit(suite):
    from rapidfuzz import fuzz

    graded = BenchReward(suite, average="graded")
    (g,) = graded(completions=["alpha beta"], test_ids=[["p1", "p2"]])
    assert g == (1.0 + fuzz.partial_ratio("gamma", "alpha beta") / 100.0) / 2
    assert 0.5 < g < 1.0
    # Binary checks earn nothing when they fail.
    (s,) = suite.score(["beta alpha delta"], [["a1"]])
    assert (s.reward, s.graded) == (0.0, 0.0)
    assert graded.__name__ == "olmocr_bench_graded"


def test_scoring_works_in_a_forked_child(suite):
    # A fork inherits no pool threads; the pool is rebuilt in the child (DataLoader workers,
    # multiprocessing with the fork start method).
    import os

    comps, ids = ["alpha beta"] * 8, [["p1", "p2"]] * 8
    expected = [s.reward for s in suite.score(comps, ids, threads=2)]
    pid = os.fork()
    if pid == 0:
        ok = [s.reward for s in suite.score(comps, ids, threads=2)] == expected
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
