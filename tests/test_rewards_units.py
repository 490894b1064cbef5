"""olmocr_rl/rewards.py in process, one behaviour at a time: how a completion's text is read (and
the error for one that cannot be), BenchReward's names, checks, averages and logged counts,
the front-matter and end-token rewards at their edges, the references' checks, and the
page-group medoid as one rank of two sees it (a gather that returns every rank's list in rank
order, as `torch.distributed.all_gather_object` does). The oracles are the arithmetic written
out here and the one-process call; test_more_rewards.py holds the properties against the Python
libraries and the real two-rank run."""

from __future__ import annotations

import json

import pytest

import olmocr_rl._core as core
from olmocr_rl import (
    BenchReward,
    BenchSuite,
    EditDistanceReward,
    ElementCountReward,
    EosReward,
    FrontMatterReward,
    MedoidReward,
    RectTablesReward,
)
from olmocr_rl.rewards import _references, _short, completion_text, completion_texts, page_keys, rates, single_process
from olmocr_rl.suite import TRAINING_GUARD


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    d = tmp_path_factory.mktemp("bench")
    one = [
        {"id": "p1", "type": "present", "text": "alpha"},
        {"id": "p2", "type": "present", "text": "gamma"},
        {"id": "sp", "type": "present", "text": "two words"},
    ]
    two = [{"id": "a1", "type": "absent", "text": "delta"}, {"id": "o1", "type": "order", "before": "alpha", "after": "beta"}]
    (d / "one_tests.jsonl").write_text("".join(json.dumps({"pdf": "d.pdf", "page": 1, **r}) + "\n" for r in one))
    (d / "two_tests.jsonl").write_text("".join(json.dumps({"pdf": "e.pdf", "page": 1, **r}) + "\n" for r in two))
    return BenchSuite.load(d)


# ---------------------------------------------------------------------------------------------
# a completion's text
# ---------------------------------------------------------------------------------------------


def test_a_completions_text_in_each_form_trl_passes():
    assert completion_text("plain") == "plain"
    assert completion_text([]) == ""
    assert completion_text([{"role": "assistant", "content": "first"}, {"content": "second"}]) == "first"
    parts = [
        {"type": "text", "text": "a"},
        {"type": "image", "text": "not this"},
        {"text": "nor this"},
        {"type": "text", "text": 5},
        {"type": "text", "text": "b"},
    ]
    assert completion_text([{"content": parts}]) == "ab"
    assert completion_text([{"content": []}]) == ""


@pytest.mark.parametrize(
    "bad", [5, None, ["a string message"], [{"content": 5}], [{"no": "content"}], [{"content": [{"type": "text", "text": "a"}, "b"]}]]
)
def test_what_cannot_be_read_is_named_with_its_place(bad):
    with pytest.raises(TypeError) as e:
        completion_text(bad, 3)
    assert str(e.value).startswith(f"completion 3 is a {type(bad).__name__} ({_short(bad)}); expected a string or trl's")
    assert str(e.value).endswith(
        "form, a list of message dicts whose first 'content' is a string or a list of {'type': 'text', 'text': ...} parts"
    )
    with pytest.raises(TypeError, match=r"^a completion is a "):
        completion_text(bad)
    with pytest.raises(TypeError, match=r"^completion 1 is a "):
        completion_texts(["fine", bad])


def test_a_long_value_is_cut_to_sixty_characters():
    assert _short("x" * 58) == repr("x" * 58)  # 60 characters with its quotes: kept
    assert _short("x" * 59) == repr("x" * 59)[:57] + "..."  # 61: cut to 60
    assert len(_short("x" * 59)) == 60
    assert _short(12) == "12"


def test_completions_must_be_a_list_of_them():
    assert completion_texts(("a", [{"content": "b"}])) == ["a", "b"]
    assert completion_texts([]) == []
    for one in ("abc", b"abc"):
        with pytest.raises(TypeError) as e:
            completion_texts(one)
        assert str(e.value) == (
            f"completions must be a list with one completion per row, not a {type(one).__name__} (wrap a single completion in a list)"
        )
    with pytest.raises(TypeError) as e:
        completion_texts(iter(["a"]))
    assert str(e.value) == "completions must be a list with one completion per row, not a list_iterator"


# ---------------------------------------------------------------------------------------------
# BenchReward
# ---------------------------------------------------------------------------------------------


def test_the_bench_rewards_names_and_settings(suite):
    assert [BenchReward(suite, a).__name__ for a in ("micro", "macro", "graded")] == [
        "olmocr_bench",
        "olmocr_bench_macro",
        "olmocr_bench_graded",
    ]
    assert BenchReward(suite, "macro", name="mine").__name__ == "mine"
    assert BenchReward(suite).guard == TRAINING_GUARD == "short-output+footnote"
    assert BenchReward(suite, guard="none").guard == "none"
    assert BenchReward(suite, threads=3).threads == 3
    with pytest.raises(ValueError) as e:
        BenchReward(suite, "median")
    assert str(e.value) == "average must be 'micro', 'macro' or 'graded', not 'median'"


def test_the_guard_a_bench_reward_scores_with(suite):
    # One newline "holds" every present test whose text has a space in the published checks;
    # the training guard fails it.
    assert BenchReward(suite)(completions=["\n"], test_ids=[["sp"]]) == [0.0]
    assert BenchReward(suite, guard="none")(completions=["\n"], test_ids=[["sp"]]) == [1.0]


def test_the_inputs_are_checked_to_pair_up(suite):
    reward = BenchReward(suite, name="r")
    assert reward.checked_inputs([[{"content": "a"}], "b"], [["p1"], None]) == (["a", "b"], [["p1"], None])
    with pytest.raises(TypeError) as e:
        reward.checked_inputs(["a"], None)
    assert str(e.value) == "r: the dataset needs a 'test_ids' column (one list of test ids per row)"
    with pytest.raises(ValueError) as e:
        reward.checked_inputs(["a", "b"], [["p1"]])
    assert str(e.value) == "r: 2 completions but 1 test_ids"


def test_rows_without_tests_are_none_in_their_places(suite):
    reward = BenchReward(suite)
    got = reward.score_texts(["x", "alpha", "y", "gamma"], [None, ["p1"], [], ["p1", "p2"]])
    assert got[0] is None and got[2] is None
    assert (got[1].passed, got[1].total, got[3].passed, got[3].total) == (1, 1, 1, 2)
    assert [s and s.total for s in reward.score([[{"content": "alpha"}], "x"], [["p1"], None])] == [1, None]
    assert reward.score_texts(["a"], [["p1"]], details=True)[0].results[0].id == "p1"
    assert reward.score_texts(["a"], [["p1"]])[0].results == []


def test_each_average_reads_its_own_figure(suite):
    texts, ids = ["alpha beta", "beta alpha"], [["p1", "p2", "o1"], ["p1", "a1", "p2"]]
    scores = BenchReward(suite).score_texts(texts, ids)
    for average, key in (("micro", "reward"), ("macro", "macro"), ("graded", "graded")):
        assert BenchReward(suite, average).rewards_of(scores + [None]) == [getattr(s, key) for s in scores] + [None]
    assert len({scores[1].reward, scores[1].macro, scores[1].graded}) == 3  # the three differ here


def test_the_logged_counts_by_type_and_by_source_add_up(suite):
    reward = BenchReward(suite)
    texts = ["alpha beta", "beta alpha delta", "nothing", "alpha beta"]
    ids = [["p1", "p2", "a1"], ["a1", "o1"], None, ["o1", "p1"]]
    scores = reward.score_texts(texts, ids)
    counts = reward.metric_counts(scores, ids)
    assert counts == {
        "bench/present/pass_rate": (2, 3),  # row 0: p1 yes, p2 no; row 3: p1 yes
        "bench/absent/pass_rate": (1, 2),  # row 0 passes, row 1 fails
        "bench/order/pass_rate": (1, 2),  # row 1: alpha after beta fails; row 3 passes
        # by the source of a row's first id: row 0's is one's; rows 1 and 3 (o1 first) two's
        "bench/jsonl/one_tests.jsonl/pass_rate": (2, 3),
        "bench/jsonl/two_tests.jsonl/pass_rate": (0 + 2, 2 + 2),
    }
    assert all(type(v) is tuple and all(type(x) is int for x in v) for v in counts.values())
    assert reward.metrics(scores, ids) == {k: p / n for k, (p, n) in counts.items()}
    logged: dict[str, float] = {}
    out = reward(completions=texts, test_ids=ids, log_metric=logged.__setitem__)
    assert logged == reward.metrics(scores, ids) and out == reward.rewards_of(scores)
    assert reward(completions=texts, test_ids=ids) == out  # without log_metric
    assert rates({"none": (0, 0), "half": (1, 2), "all": (3, 3)}) == {"half": 0.5, "all": 1.0}


# ---------------------------------------------------------------------------------------------
# the front matter, the end token, the references
# ---------------------------------------------------------------------------------------------

PAGE = "---\nprimary_language: en\nis_rotation_valid: true\nrotation_correction: 0\nis_table: false\nis_diagram: false\n---\nText\n"


def test_front_matter_against_references_present_short_missing_or_broken():
    other = PAGE.replace("is_table: false", "is_table: true").replace("primary_language: en", "primary_language: de")
    reward = FrontMatterReward()
    assert reward(completions=[PAGE, PAGE, "no front matter"], claude_original=[PAGE, other, PAGE]) == [1.0, 0.8, 0.0]
    assert reward(completions=[PAGE, PAGE, PAGE], claude_original=[PAGE]) == [1.0, 0.5, 0.5]  # fewer references
    assert reward(completions=[PAGE, PAGE], claude_original=["not a page", ""]) == [0.5, 0.5]
    assert reward(completions=["broken", PAGE], claude_original=[PAGE, PAGE]) == [0.0, 1.0]  # and the next is scored
    assert reward(completions=[PAGE]) == [0.5]
    assert FrontMatterReward("ref")(completions=[PAGE], ref=[PAGE], claude_original=[other]) == [1.0]
    assert FrontMatterReward().__name__ == "front_matter"


def test_the_end_token_reward():
    assert EosReward(2)(completion_ids=[[2], [2, 5], [], [0, 2]]) == [1.0, 0.0, 0.0, 1.0]
    assert EosReward(0)(completion_ids=[[0], [1]]) == [1.0, 0.0]  # token id 0 is an id
    assert EosReward([3, 4])(completion_ids=[[4], [3], [2]]) == [1.0, 1.0, 0.0]
    assert EosReward((9,))(completion_ids=[[9]]) == [1.0]
    with pytest.raises(TypeError) as e:
        EosReward(2)(completions=["a"])
    assert str(e.value) == "EosReward needs completion_ids (trl passes them to reward functions)"


def test_the_references_column():
    assert _references({}, "ref", 2) == [None, None]
    assert _references({"ref": ["a", 5, None]}, "ref", 3) == ["a", None, None]
    with pytest.raises(ValueError) as e:
        _references({"ref": ["a"]}, "ref", 2)
    assert str(e.value) == "2 completions but 1 'ref' references"
    assert EditDistanceReward("ref")(completions=["abcd", "abcd"], ref=["abcd", None], claude_original=["x", "x"]) == [1.0, 0.0]
    assert ElementCountReward("ref")(completions=["$$x$$", "a"], ref=["$$y$$", "$$y$$"]) == [1.0, 0.5]
    with pytest.raises(ValueError, match="2 completions but 1 'claude_original' references"):
        ElementCountReward()(completions=["a", "b"], claude_original=["a"])
    assert (EditDistanceReward(threads=2).threads, ElementCountReward(threads=2).threads, RectTablesReward(threads=2).threads) == (2, 2, 2)


def test_a_table_upstreams_parser_fails_on_earns_nothing():
    crash = "<table><tr><td>A</td><td rowspan='3'>B</td></tr><tr><td colspan='2'>C</td></tr></table>"
    assert core.rect_table_shares([crash], 1) == [None]
    assert RectTablesReward()(completions=[crash, "text", [{"content": crash}]]) == [0.0, 1.0, 0.0]


# ---------------------------------------------------------------------------------------------
# the medoid by page, as one rank of two sees it
# ---------------------------------------------------------------------------------------------


def test_page_keys_from_the_columns_or_the_prompts():
    assert page_keys(2, None, {"pdf": ["a.pdf", 7], "page": ["3", 1]}) == [("a.pdf", 3), ("7", 1)]
    assert page_keys(2, ["p", ["q"]], {"pdf": ["a", "b"]}) == ["'p'", "['q']"]  # pdf alone is not a key
    assert page_keys(1, ["p"], {"page": [1]}) == ["'p'"]
    with pytest.raises(TypeError) as e:
        page_keys(2, ["only one prompt"], {})
    assert str(e.value) == "the medoid reward groups completions by page: give the dataset 'pdf' and 'page' columns (or the prompts)"
    assert single_process([1, 2]) == [[1, 2]]


def test_the_medoids_names_and_modes():
    assert (MedoidReward().__name__, MedoidReward("batch").__name__, MedoidReward.__name__) == ("medoid", "medoid_batch", "MedoidReward")
    assert (MedoidReward().group, MedoidReward().rank, MedoidReward(threads=2).threads) == ("page", 0, 2)
    with pytest.raises(ValueError) as e:
        MedoidReward("rank")
    assert str(e.value) == "group must be 'page' or 'batch', not 'rank'"
    texts = ["abc", "abd", "zzzz"]
    assert MedoidReward("batch")(completions=texts, pdf=["a", "b", "b"], page=[1, 1, 1]) == list(core.medoid_rewards(texts, None, 1))


RANK0 = [("a", "abc"), ("b", "zzzz"), ("a", "abd")]
RANK1 = [("b", "zzzy"), ("a", "xyz"), ("b", "zzzz"), ("c", "only here"), ("b", "q")]


def keyed(rows):
    """A rank's list as the medoid hands it to the gather: (its page key, its text) per row."""
    return [((p, 1), t) for p, t in rows]


def as_columns(rows):
    return {"completions": [t for _, t in rows], "pdf": [p for p, _ in rows], "page": [1] * len(rows)}


def test_a_ranks_medoids_are_those_of_the_whole_gathered_batch(monkeypatch):
    whole = MedoidReward()(**as_columns(RANK0 + RANK1))
    seen = []
    for rank, mine in ((0, RANK0), (1, RANK1)):

        def gather(local, rank=rank):
            seen.append(local)
            return [local, keyed(RANK1)] if rank == 0 else [keyed(RANK0), local]

        got = MedoidReward(gather=gather, rank=rank)(**as_columns(mine))
        assert got == (whole[: len(RANK0)] if rank == 0 else whole[len(RANK0) :]), rank
    assert seen == [keyed(RANK0), keyed(RANK1)]
    # Rank 0 has no member of page c: its text is not scored there.
    calls = []
    real = core.medoid_rewards
    monkeypatch.setattr(
        core, "medoid_rewards", lambda texts, groups, threads: calls.append((texts, groups)) or real(texts, groups, threads)
    )
    MedoidReward(gather=lambda local: [local, keyed(RANK1)], rank=0)(**as_columns(RANK0))
    assert calls == [(["abc", "zzzz", "abd", "zzzy", "xyz", "zzzz", "q"], [0, 1, 0, 1, 0, 1, 1])]


def test_each_reward_hands_its_thread_count_to_rust(suite, monkeypatch):
    """The pool size a reward was given (a rank's share of the cores) is the one its scoring runs
    on; 1 here, where this machine's default would be every core."""
    calls = []

    def spy(name):
        real = getattr(core, name)
        monkeypatch.setattr(core, name, lambda *a: calls.append((name, a[-1])) or real(*a))

    for name in ("edit_similarities", "element_count_rewards", "medoid_rewards", "rect_table_shares"):
        spy(name)
    texts = ["a", "b"]
    EditDistanceReward(threads=1)(completions=texts, claude_original=texts)
    ElementCountReward(threads=1)(completions=texts, claude_original=texts)
    MedoidReward("batch", threads=1)(completions=texts)
    MedoidReward(threads=1)(completions=texts, pdf=["x", "x"], page=[1, 1])
    RectTablesReward(threads=1)(completions=texts)
    assert calls == [
        ("edit_similarities", 1),
        ("element_count_rewards", 1),
        ("medoid_rewards", 1),
        ("medoid_rewards", 1),
        ("rect_table_shares", 1),
    ]
    assert [r(threads=1).threads for r in (EditDistanceReward, ElementCountReward, MedoidReward, RectTablesReward)] == [1] * 4
    reward = BenchReward(suite, threads=1)
    seen = []
    real_score = suite.score
    monkeypatch.setattr(suite, "score", lambda *a, **k: seen.append(k["threads"]) or real_score(*a, **k))
    reward(completions=["alpha"], test_ids=[["p1"]])
    assert seen == [1]
