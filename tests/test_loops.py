"""The loop detector (rust/loops.rs through olmocr_rl/loops.py): its binding, its defaults on hard
legitimate pages (no false positive) and on loops, bounded time on hostile input, the honest reward
rule (a stopped completion scored as the full-length loop: equal, so never higher), and the
transformers stopping criterion (olmocr_rl/loop_stop.py)."""

from __future__ import annotations

import pickle
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import olmocr_rl._core as _core
from olmocr_rl.loops import (
    LOOP_OPTIONS,
    Loop,
    LoopRule,
    LoopTally,
    project,
    projected_completions,
    rule_from,
    rule_from_extra_args,
    rule_with,
    vllm_extra_args,
)

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench_fixtures"))
from loop_cases import LEGITIMATE, LOOPS

SMALL = LoopRule(max_period=64, min_span=48, min_repeats=3)


def test_the_binding_finds_the_same_loop_however_it_is_fed():
    ids = [9, 8, 7] + [1, 2, 3] * 40
    whole = SMALL.find(ids)
    assert whole == Loop(3, 3, 51) and (whole.start, whole.period, whole.cut) == (3, 3, 51)
    d = SMALL.detector()
    for i in range(0, len(ids), 5):
        d.extend(ids[i : i + 5])
    assert d.found == whole and len(d) == len(ids)
    assert SMALL.find_text("xyz" + "abc" * 40) == whole  # one code point, one token
    assert SMALL.find_text("xyz" + "abc" * 40, encode=lambda t: [ord(c) for c in t]) == whole
    assert pickle.loads(pickle.dumps(whole)) == whole
    assert SMALL.find(ids[:50]) is None


def test_bad_rules_and_bad_ids_are_clear_errors():
    with pytest.raises(ValueError, match="max_period must be between 1 and 4096"):
        LoopRule(max_period=0)
    with pytest.raises(ValueError, match="min_repeats must be at least 2"):
        LoopRule(min_repeats=1)
    with pytest.raises(ValueError, match="whole number"):
        LoopRule(min_span=10.5)  # type: ignore[arg-type]
    with pytest.raises(OverflowError):
        SMALL.find([-1])
    with pytest.raises(ValueError, match="min_span"):
        rule_with(LoopRule(), ["min_span=1"])
    with pytest.raises(ValueError, match="KEY one of"):
        rule_with(LoopRule(), ["span=9"])
    assert rule_with(LoopRule(), ["loop_min_span=100", "max_period=8"]) == LoopRule(max_period=8, min_span=100)


def test_one_table_of_keys_and_what_a_config_states():
    assert [o.name for o in LOOP_OPTIONS] == ["loop_stop", "loop_max_period", "loop_min_span", "loop_min_repeats"]
    assert all(o.help for o in LOOP_OPTIONS) and LOOP_OPTIONS[0].default is True
    assert [o.default for o in LOOP_OPTIONS[1:]] == [256, 4096, 4]
    assert rule_from({}) == LoopRule() and rule_from({"loop_stop": False}) is None
    assert rule_from({"loop_stop": False}, stop=True) == LoopRule()
    assert rule_from({"loop_min_span": 999, "loop_max_period": 7}) == LoopRule(max_period=7, min_span=999)
    extra = vllm_extra_args(SMALL, 258)
    assert rule_from_extra_args(extra) == (SMALL, 258) and rule_from_extra_args({}) is None and rule_from_extra_args(None) is None
    assert extra == {"olmocr_rl_loop_max_period": 64, "olmocr_rl_loop_min_span": 48, "olmocr_rl_loop_min_repeats": 3,
                     "olmocr_rl_loop_end": 258}  # fmt: skip
    assert rule_from_extra_args({"seed": 3, "olmocr_rl_loop_end": 7}) == (LoopRule(), 7)
    with pytest.raises(ValueError, match="token id"):
        rule_from_extra_args({k: v for k, v in extra.items() if not k.endswith("end")})
    with pytest.raises(ValueError, match="unknown key"):
        rule_from_extra_args({**extra, "olmocr_rl_loop_span": 3})
    assert SMALL.describe() == "a suffix repeating a period of 1-64 tokens exactly, over at least 48 tokens and 3 periods"


# ---------------------------------------------------------------------------------------------
# the defaults: no false positive on hard legitimate pages, the loops found
# ---------------------------------------------------------------------------------------------


def fixture_transcriptions() -> dict[str, str]:
    return {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8") for p in sorted((ROOT / "bench_fixtures").rglob("*.md"))}


@pytest.mark.parametrize("name", sorted(LEGITIMATE))
def test_no_hard_legitimate_page_is_a_loop(name):
    """Each page repeats exactly (identical rows, dots, leaders, separators) or nearly (numbered
    rows); read as characters, which span at least as much as any tokenizer's tokens, none is a loop
    under the default rule, with a margin: the longest exact repetition is under min_span."""
    text = LEGITIMATE[name]
    rule = LoopRule()
    assert rule.find_text(text) is None
    # ... nor with any period up to the core's bound (as the defaults were measured): every repetition of at
    # least min_repeats periods spans less than min_span.
    assert longest_repetition(text, rule.min_repeats) < rule.min_span


def longest_repetition(text: str, repeats: int) -> int:
    """The longest stretch of `text` (in characters) repeating a period of 1-4096 characters at least `repeats` times."""
    return max((span for p, span in enumerate(_core.longest_runs_text(text, 4096), 1) if span >= repeats * p), default=0)


def test_the_fixtures_transcriptions_are_no_loop():
    texts = fixture_transcriptions()
    assert len(texts) >= 10
    for name, text in texts.items():
        assert LoopRule().find_text(text) is None, name


@pytest.mark.parametrize("name", sorted(LOOPS))
def test_loops_as_a_model_writes_them_are_found_at_min_span(name):
    text = LOOPS[name]
    found = LoopRule().find_text(text)
    assert found is not None
    assert found.cut - found.start == max(LoopRule().min_span, LoopRule().min_repeats * found.period)
    assert text[found.start : found.start + found.period] * 3 == text[found.start : found.start + 3 * found.period]


def test_hostile_sequences_are_bounded_in_time():
    one = [7] * 100_000
    alternating = [i % 2 for i in range(100_000)]
    table = "".join(f"| {i} | 0 | 0 |\n" for i in range(8_000))
    big = LoopRule(max_period=4096, min_span=1_000_000, min_repeats=2)
    started = time.monotonic()
    assert big.find(one) is None and big.find(alternating) is None and big.find_text(table) is None
    assert LoopRule().find(one) == Loop(0, 1, 4096)
    assert LoopRule().find(alternating) == Loop(0, 2, 4096)
    assert time.monotonic() - started < 10, "100k-token sequences at the largest period bound"


# ---------------------------------------------------------------------------------------------
# the honest reward rule: a stopped completion is scored as the loop continued to the limit
# ---------------------------------------------------------------------------------------------


def test_project_continues_the_period_to_the_limit():
    ids = [5, 6, 1, 2, 3, 1, 2, 3, 1, 2]
    loop = Loop(2, 3, 10)
    assert project(ids, loop, 14) == [5, 6, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3]
    assert project(ids, loop, 4) == ids  # never shorter than what was generated to the cut
    with pytest.raises(ValueError, match="does not fit"):
        project(ids[:4], loop, 14)
    out_ids, texts = projected_completions([ids, [1, 2]], [loop, None], 12, decode=lambda i: ",".join(map(str, i)))
    assert out_ids == [[5, 6, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1], [1, 2]] and texts == ["5,6,1,2,3,1,2,3,1,2,3,1", None]


@pytest.fixture(scope="module")
def tokenizer():
    from tiny_vlm import _tokenizer

    return _tokenizer()  # byte-level BPE: a token is a byte, every byte string a token sequence


@pytest.fixture(scope="module")
def scorers():
    """Every built-in reward that reads the text (the bench ones on the fixture tests, the reference
    ones against a page's transcription), as training builds them."""
    from olmocr_rl.reward_registry import REWARDS, RewardContext, build_rewards
    from olmocr_rl.suite import BenchSuite

    suite = BenchSuite.load(ROOT / "bench_fixtures")
    names = [n for n in REWARDS if n not in ("eos", "medoid")]
    funcs, _ = build_rewards(dict.fromkeys(names, 1.0), RewardContext(suite))
    page = next(i for i in suite.ids if suite.info(i).pdf == "letter.pdf")
    ids = [i for i in suite.ids if suite.info(i).pdf == suite.info(page).pdf]
    reference = (ROOT / "bench_fixtures" / "demo_model" / "letter_pg1_repeat1.md").read_text(encoding="utf-8")
    return funcs, ids, reference


REAL = (ROOT / "bench_fixtures" / "other_model" / "letter_pg1_repeat2.md").read_text(encoding="utf-8") + (
    ROOT / "bench_fixtures" / "demo_model" / "sample_paper_pg1_repeat1.md"
).read_text(encoding="utf-8")


@settings(max_examples=40, deadline=None)
@given(
    period_at=st.integers(0, 400),
    period_len=st.integers(1, 40),
    prefix_len=st.integers(0, 120),
    limit=st.integers(200, 700),
)
def test_a_stopped_loop_earns_exactly_the_full_length_loop(tokenizer, scorers, period_at, period_len, prefix_len, limit):
    """Loop shapes: a period of 1-40 tokens of real text, with or without a prefix of real text, run
    on to the length limit: the full-length loop built and scored by every text reward (bench, bench
    macro and graded on the letter's tests; edit distance, element counts, front matter against its
    reference; rect tables) and by eos, against the completion stopped where the rule holds and
    projected: the same ids, the same rewards (never higher)."""
    funcs, test_ids, reference = scorers
    real = tokenizer(REAL, add_special_tokens=False)["input_ids"]
    period = real[period_at : period_at + period_len]
    prefix = real[:prefix_len]
    full = (prefix + period * (limit // len(period) + 1))[:limit]
    loop = SMALL.find(full)
    if loop is None:  # too few periods before the limit: nothing to stop
        assert limit - prefix_len < max(SMALL.min_span, SMALL.min_repeats * len(period))
        return
    stopped = full[: loop.cut]
    projected = project(stopped, loop, limit)
    assert projected == full
    texts = [tokenizer.decode(full), tokenizer.decode(projected)]
    kwargs = {"test_ids": [test_ids] * 2, "claude_original": [reference] * 2, "completion_ids": [full, projected]}
    for f in funcs:
        a, b = f(completions=texts, **kwargs)
        assert b == a, f.__name__
    from olmocr_rl.rewards import EosReward

    assert EosReward(258)(completions=texts, completion_ids=[full, projected]) == [0.0, 0.0]


def test_what_degenerate_outputs_earn_with_the_stop(tokenizer, scorers):
    """Empty, one newline and the tests' own texts are no loop (they earn what they earn without the
    stop); a loop of the tests' first text is stopped and earns what the loop run on to the limit
    earns, which is at most what the tests' own texts earn (the bench reward, letter page)."""
    from olmocr_rl.probe import probe_pages
    from olmocr_rl.suite import BenchSuite

    funcs, test_ids, _ = scorers
    bench = funcs[0]
    page = next(p for p in probe_pages(BenchSuite.load(ROOT / "bench_fixtures")) if p.pdf == "letter.pdf")
    own = "\n".join(page.texts)
    limit = 600
    looped = tokenizer((page.texts[0] + "\n") * 200, add_special_tokens=False)["input_ids"][:limit]
    for text in ("", "\n", own):
        assert SMALL.find(tokenizer(text, add_special_tokens=False)["input_ids"]) is None
    loop = SMALL.find(looped)
    assert loop is not None and loop.start == 0 and loop.period == len(page.texts[0]) + 1
    earned = bench(completions=[tokenizer.decode(project(looped[: loop.cut], loop, limit)), tokenizer.decode(looped), own],
                   test_ids=[test_ids] * 3)  # fmt: skip
    assert earned[0] == earned[1] <= earned[2]


def test_the_tally_counts_stops_and_the_saved_upper_bound():
    t = LoopTally()
    t.add([100, 40], [Loop(10, 4, 60), None], 500)
    t.add([500], [None], 500)
    assert t.as_dict() == {"completions": 3, "stopped": 1, "tokens": 600, "loop_tokens": 50, "saved": 440}
    assert t.last == [(None, 0)]
    t.merge({"completions": 1, "stopped": 1, "tokens": 7, "loop_tokens": 3, "saved": 9})
    assert t.stopped == 2 and t.saved == 449
    assert "2 of 4 completions stopped" in t.line() and "upper bound" in t.line()
    from olmocr_rl.loops import METRICS

    m = t.metrics()
    assert set(m) == set(METRICS) and m == {"loops/stopped": 2.0, "loops/stopped_ratio": 0.5, "loops/decode_tokens_saved_max": 449.0,
                                            "loops/loop_token_share": 53 / 607}  # fmt: skip


def test_the_rule_s_readers_and_writers_at_their_edges():
    """An object config with keys missing, the plan line at min_span equal to the limit (every word
    read), KEY=VALUE and extra_args errors word for word, token id 0, a period that ends at the cut,
    a period of 0, ids and loops of different lengths (mutation survivors of olmocr_rl/loops.py)."""
    from types import SimpleNamespace

    from olmocr_rl.loops import stop_line

    assert rule_from(SimpleNamespace(loop_stop=True, loop_min_span=100)) == LoopRule(min_span=100)
    assert rule_from(SimpleNamespace(loop_stop=False)) is None and rule_from(SimpleNamespace()) == LoopRule()
    rule = LoopRule(max_period=256, min_span=100, min_repeats=4)
    assert stop_line(rule, 100) == (
        "loop stop: on: a completion ends once it has a suffix repeating a period of 1-256 tokens exactly, over at least 100 "
        "tokens and 4 periods: at most 1,024 tokens after the loop's start, instead of running on to max_completion_length "
        "(100); trained as truncated, scored as the loop continued to the limit (docs/training.md, repetition loops)"
    )
    assert stop_line(rule, 99).startswith("loop stop: on (never within max_completion_length 99: a loop must span 100): ")
    with pytest.raises(ValueError) as e:
        rule_with(rule, ["span=3"])
    assert str(e.value) == "'span=3': give KEY=VALUE with KEY one of max_period, min_span, min_repeats"
    with pytest.raises(ValueError) as e:
        rule_with(rule, ["min_span=1=2"])
    assert str(e.value) == "'min_span=1=2': '1=2' is not a whole number"
    extra = vllm_extra_args(rule, 0)
    assert rule_from_extra_args(extra) == (rule, 0)
    with pytest.raises(ValueError) as e:
        rule_from_extra_args({**extra, "olmocr_rl_loop_end": -1})
    assert str(e.value) == "extra_args['olmocr_rl_loop_end'] must be a token id, not -1"
    with pytest.raises(ValueError) as e:
        rule_from_extra_args({**extra, "olmocr_rl_loop_b": 1, "olmocr_rl_loop_a": 2})
    assert str(e.value) == "extra_args: unknown key(s) olmocr_rl_loop_a, olmocr_rl_loop_b"
    assert project(list(range(8)), Loop(4, 4, 8), 12) == [0, 1, 2, 3, 4, 5, 6, 7, 4, 5, 6, 7]
    with pytest.raises(ValueError, match="does not fit"):
        project(list(range(8)), Loop(0, 0, 5), 12)
    with pytest.raises(ValueError):
        projected_completions([[1, 1, 1]], [None, None], 8, str)


def test_the_tally_of_each_kind_of_completion_and_of_nothing():
    """A stopped completion after one that was not, two stopped that add up, one cut exactly at the
    limit (0 saved), a partial merge, every figure and the whole line read; an empty tally is zeros
    (mutation survivors of olmocr_rl/loops.py, tools/mutants.toml)."""
    empty = LoopTally()
    assert empty.metrics() == dict.fromkeys(["loops/stopped", "loops/stopped_ratio", "loops/decode_tokens_saved_max",
                                             "loops/loop_token_share"], 0.0)  # fmt: skip
    assert empty.line() == ("loops: 0 of 0 completions stopped in a repetition loop; 0 decode tokens saved at most (the limit "
                            "minus each stopped length: an upper bound); 0% of the 0 tokens generated were inside loops")  # fmt: skip
    with pytest.raises(ValueError):
        empty.add([1, 2], [None], 10)
    t = LoopTally()
    at_limit = Loop(0, 1, 5000)
    t.add([30, 100, 5000], [None, Loop(10, 4, 60), at_limit], 5000)
    assert t.as_dict() == {"completions": 3, "stopped": 2, "tokens": 5090, "loop_tokens": 5050, "saved": 4940}
    assert t.last == [(None, 0), (Loop(10, 4, 60), 4940), (at_limit, 0)]
    assert t.line() == ("loops: 2 of 3 completions stopped in a repetition loop; 4,940 decode tokens saved at most (the limit "
                        "minus each stopped length: an upper bound); 99.2% of the 5,090 tokens generated were inside loops")  # fmt: skip
    t.merge({"stopped": 1})
    assert t.as_dict() == {"completions": 3, "stopped": 3, "tokens": 5090, "loop_tokens": 5050, "saved": 4940}


# ---------------------------------------------------------------------------------------------
# the transformers stopping criterion
# ---------------------------------------------------------------------------------------------


def test_the_stopping_criterion_stops_looping_rows_only():
    """Three rows after a 2-token prompt: one falls into a loop, one ends with the end token and is
    padded with the pad token (a run that must never read as a loop), one writes on."""
    torch = pytest.importorskip("torch")
    from olmocr_rl.loop_stop import LoopStoppingCriteria

    END, PAD = 258, 256
    rule = LoopRule(max_period=8, min_span=12, min_repeats=3)
    ticks: list[int] = []
    crit = LoopStoppingCriteria(rule, prompt_length=2, end_token_ids=[END], on_tokens=ticks.append, tick=4)
    looping = [7, 1, 2, 3] + [4, 5] * 30
    ending = [9, 8, END] + [PAD] * 100
    writing = list(range(10, 200))
    stops = []
    for step in range(1, 40):
        ids = torch.tensor([[0, 0] + row[:step] for row in (looping, ending, writing)])
        stops.append(crit(ids, None).tolist())
    first = next(i for i, s in enumerate(stops) if s[0]) + 1  # the step at which row 0 was stopped
    assert first == 16 and crit.loops[0] == Loop(4, 2, 16)
    assert not any(s[1] or s[2] for s in stops) and crit.loops[1:] == [None, None]
    assert crit.lengths[:2] == [16, 3] and crit.lengths[2] == 39
    assert ticks and ticks[0] == 4 + 3 + 4  # step 4: the tokens of the three rows so far
    off = LoopStoppingCriteria(None, prompt_length=2, end_token_ids=[END])
    assert not off(torch.tensor([[0, 0] + looping[:30]]), None).any() and off.loops == [None]


def test_the_stopping_criterion_counts_and_cuts_at_every_pace():
    """Before any call: no rows. Several tokens in one call (assisted generation's pace): a loop is
    cut where it was found, not at the call's end. Stop off: the tokens still counted, an end token
    counted as one and nothing after it, every row read. `on_tokens` every 16 steps by default,
    every step at tick 1 (and 0)."""
    torch = pytest.importorskip("torch")
    from olmocr_rl.loop_stop import LoopStoppingCriteria

    END = 258
    rule = LoopRule(max_period=8, min_span=12, min_repeats=3)
    fresh = LoopStoppingCriteria(rule, prompt_length=1)
    assert fresh.loops == [] and fresh.lengths == [] and LoopStoppingCriteria(None, prompt_length=1).loops == []
    looping = [7, 1, 2, 3] + [4, 5] * 30
    crit = LoopStoppingCriteria(rule, prompt_length=1)
    assert crit(torch.tensor([[0] + looping[:30]]), None).tolist() == [True]
    assert crit.loops == [Loop(4, 2, 16)] and crit.lengths == [16]
    ticks: list[int] = []
    off = LoopStoppingCriteria(None, prompt_length=1, end_token_ids=[END], on_tokens=ticks.append)
    rows = [[1, 2, 3, END, 0, 0] + [0] * 30, list(range(10, 46))]
    for step in (2, 5, 20, 36):
        assert off(torch.tensor([[0] + r[:step] for r in rows]), None).tolist() == [False, False]
    assert off.lengths == [4, 36] and off.loops == [None, None] and ticks == []  # steps 2, 5, 20, 36: none a multiple of 16
    off(torch.tensor([[0] + r[:36] + [0] * 12 for r in rows]), None)  # step 48
    assert ticks == [4 + 48]
    for tick, want in ((1, [1, 2, 3]), (0, [1, 2, 3])):
        seen: list[int] = []
        each = LoopStoppingCriteria(None, prompt_length=1, on_tokens=seen.append, tick=tick)
        for step in (1, 2, 3):
            each(torch.tensor([[0] + rows[1][:step]]), None)
        assert seen == want, tick


# ---------------------------------------------------------------------------------------------
# the vLLM logits processor at its boundary (the real engine: tests/test_vllm_real.py)
# ---------------------------------------------------------------------------------------------


def test_the_vllm_processor_forces_the_end_token_on_looping_requests_only(monkeypatch):
    """Requests added, moved, swapped and removed as vLLM's persistent batch does; tokens read at
    `apply` (async scheduling's -1 placeholders skipped); a request without the switch untouched; a
    looping one gets only its end token, from the step after the cut until it is removed."""
    torch = pytest.importorskip("torch")
    import types

    import vllm_interface
    from vllm_interface import BatchUpdate
    from vllm_interface import MoveDirectionality as Move

    vllm_interface.install(monkeypatch)
    from olmocr_rl.loop_stop_vllm import LoopStopProcessor

    rule = LoopRule(max_period=4, min_span=6, min_repeats=2)
    on = types.SimpleNamespace(extra_args=vllm_extra_args(rule, 3))
    off = types.SimpleNamespace(extra_args=None)
    LoopStopProcessor.validate_params(on)
    with pytest.raises(ValueError, match="token id"):
        LoopStopProcessor.validate_params(types.SimpleNamespace(extra_args={"olmocr_rl_loop_min_span": 6}))
    proc = LoopStopProcessor(None, torch.device("cpu"), False)
    assert proc.is_argmax_invariant() is False
    a, b, c = [5], [5], [1]  # vLLM's live output lists
    proc.update_state(BatchUpdate(3, [], [(0, on, [0], a), (1, off, [0], b), (2, on, None, c)], []))
    forced = []
    for step in range(8):
        a.append(9)  # request 0 loops on one token
        b.append(9)  # so does request 1, which did not ask for the stop
        c.append(step + 10)
        if step == 4:
            c.append(-1)  # a placeholder: not read
        out = proc.apply(torch.zeros(3, 5))
        forced.append([bool(torch.isinf(out[i]).any()) for i in range(3)])
        if step == 4:
            c.pop()
    # request 0: [5, 9 x k] holds the rule once six 9s are in (step 5); requests 1 and 2 never forced
    assert [f[0] for f in forced] == [False] * 5 + [True] * 3 and not any(f[1] or f[2] for f in forced)
    out = proc.apply(torch.zeros(3, 5))
    assert out[0].tolist() == [float("-inf")] * 3 + [0.0, float("-inf")]
    # swap 0 and 2, then remove 2 and move 1 to 2: the state follows its request
    proc.update_state(BatchUpdate(3, [], [], [(0, 2, Move.SWAP)]))
    out = proc.apply(torch.zeros(3, 5))
    assert torch.isinf(out[2]).any() and not torch.isinf(out[0]).any()
    proc.update_state(BatchUpdate(2, [2], [], [(1, 2, Move.UNIDIRECTIONAL)]))
    assert sorted(proc.requests) == [0] and not torch.isinf(proc.apply(torch.zeros(3, 5))).any()
    proc.update_state(BatchUpdate(1, [0], [], []))
    assert proc.requests == {}


def test_the_docs_table_of_keys_is_the_code_s():
    docs = (ROOT / "docs" / "training.md").read_text(encoding="utf-8")
    for o in LOOP_OPTIONS[1:]:
        assert f"| `{o.name}` | {o.default} |" in docs, o.name
    assert "| `loop_stop` | `true` in `train`" in docs


def test_the_vllm_processor_forgets_a_request_whose_slot_a_new_one_takes(monkeypatch):
    """vLLM's persistent batch reuses a freed slot in the same step (`InputBatch.add_request` takes
    `BatchUpdateBuilder.pop_removed()`), and the reused index is then not in `BatchUpdate.removed`:
    the new request, with or without the switch, starts afresh and the old one's loop is not its."""
    torch = pytest.importorskip("torch")
    import types

    import vllm_interface
    from vllm_interface import BatchUpdate

    vllm_interface.install(monkeypatch)
    from olmocr_rl.loop_stop_vllm import LoopStopProcessor

    rule = LoopRule(max_period=4, min_span=6, min_repeats=2)
    on = types.SimpleNamespace(extra_args=vllm_extra_args(rule, 3))
    off = types.SimpleNamespace(extra_args=None)
    proc = LoopStopProcessor(None, torch.device("cpu"), False)
    looping = [9] * 8
    proc.update_state(BatchUpdate(1, [], [(0, on, [0], looping)], []))
    assert torch.isinf(proc.apply(torch.zeros(1, 5))[0]).any()
    # the looping request finished; a request without the switch takes slot 0, removed not listed
    proc.update_state(BatchUpdate(1, [], [(0, off, [0], [9] * 8)], []))
    assert proc.requests == {} and not torch.isinf(proc.apply(torch.zeros(1, 5))).any()
    proc.update_state(BatchUpdate(1, [], [(0, on, [0], looping)], []))
    assert torch.isinf(proc.apply(torch.zeros(1, 5))[0]).any()
    # a switched-on request takes the slot: its own detector, its own tokens, nothing forced
    fresh = [1, 2]
    proc.update_state(BatchUpdate(1, [], [(0, on, [0], fresh)], []))
    assert not torch.isinf(proc.apply(torch.zeros(1, 5))).any() and proc.requests[0].fed == 2


def test_the_vllm_processor_at_each_request_s_edges(monkeypatch):
    """Every request read each step (a looping one after a quiet one is forced too); a loop held by
    the output tokens the request arrived with counts from its first token; a slot past the
    logits' rows is left alone; a removed slot that held no switched-on request, and params without
    `extra_args`, are no error; a one-way move drops what the target slot held (vLLM moves into a
    freed slot only)."""
    torch = pytest.importorskip("torch")
    import types

    import vllm_interface
    from vllm_interface import BatchUpdate
    from vllm_interface import MoveDirectionality as Move

    vllm_interface.install(monkeypatch)
    from olmocr_rl.loop_stop_vllm import LoopStopProcessor

    rule = LoopRule(max_period=4, min_span=6, min_repeats=2)
    on = types.SimpleNamespace(extra_args=vllm_extra_args(rule, 3))
    bare = types.SimpleNamespace()  # no extra_args at all
    LoopStopProcessor.validate_params(bare)
    proc = LoopStopProcessor(None, torch.device("cpu"), False)
    quiet, loop = [1, 2], [9] * 5
    proc.update_state(BatchUpdate(3, [], [(0, on, [0], quiet), (1, bare, [0], [9] * 9), (2, on, [0], loop)], []))
    assert sorted(proc.requests) == [0, 2]
    assert not torch.isinf(proc.apply(torch.zeros(3, 5))).any()  # five 9s: one short of the span
    loop.append(9)
    quiet.append(4)
    out = proc.apply(torch.zeros(3, 5))
    assert torch.isinf(out[2]).any() and not torch.isinf(out[:2]).any()
    assert not torch.isinf(proc.apply(torch.zeros(2, 5))).any()  # slot 2 is past these rows: untouched
    proc.update_state(BatchUpdate(3, [1], [], []))  # slot 1 held a request without the switch
    assert sorted(proc.requests) == [0, 2]
    proc.update_state(BatchUpdate(3, [], [], [(0, 2, Move.UNIDIRECTIONAL)]))
    assert sorted(proc.requests) == [2] and proc.requests[2].tokens is quiet
    assert not torch.isinf(proc.apply(torch.zeros(3, 5))).any()
