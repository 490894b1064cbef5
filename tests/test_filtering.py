"""Online group filtering (olmocr_rl/train/filtering.py and its rounds in olmocr_rl/train/trainer.py,
`filter_groups`).

The mechanism's pieces against trl's own code (the page order against trl's RepeatSampler, the
zero-spread test against trl's `nanstd` + `isclose`; the seams' signatures: tests/test_trainer.py),
then GRPO runs of the tiny model with sampling replaced by completions that name their page, round
and member, scored by a reward designed per group (tests/filter_rollouts.py): what reaches the
loss is checked row by row against what was generated (every group whole and with reward spread,
or the documented fill at the bound; each completion with its own page's pixels and its own
reward's advantage), at one process and two ranks (DDP, ZeRO-2; the two-rank runs must make the
one-process run's updates), with generation buffering and several iterations, LoRA, a resume, and
trl's vLLM paths at their boundary. The effect on learning is measured by
benchmarks/bench_filtering.py, not here.
"""

from __future__ import annotations

import itertools
import json
import math
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest
from conftest import need

need("trl")
torch = need("torch")

from filter_rollouts import kind, parse, value
from test_learning import write_config

from olmocr_rl.errors import ConfigError
from olmocr_rl.keep_rule import KeepRule
from olmocr_rl.train.budget import filter_cost
from olmocr_rl.train.filtering import Group, PageStream, Settings, judge, place, select
from olmocr_rl.train.worker import filter_settings

HERE = Path(__file__).resolve().parent
G = 4
BASE = [
    f"num_generations={G}", "gradient_accumulation_steps=1", "max_completion_length=16", "logging_steps=1",
    "learning_rate=3.0e-3", "lr_scheduler_type=constant", "warmup_steps=0", "dataloader_num_workers=0",
    "gradient_checkpointing=false", "final_outputs=none", "save_steps=0", "eval_split=none", "progress=false",
    "report_to=[none]", "log_completions=false", "write_failing_completions=false",
    "rewards={'filter_rollouts:designed': 1.0}", "seed=0",
]  # fmt: skip
# Kept: groups with spread and a mean below 0.8 ("mid"); "high" has spread but too high a mean,
# "flat" none.
FILTER = ["filter_groups=true", "filter_max_mean=0.8", "filter_extra_rounds=2"]
EXTRA = 2
WARNING = re.compile(r"warning: online filtering, step (\d+): (\d+) of (\d+) groups kept after (\d+) generation rounds")


# ---------------------------------------------------------------------------------------------
# the pieces, against trl's own code
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("pages,per_round,seed,shuffle", [(3, 2, 0, True), (10, 3, 7, True), (9, 3, 1, False), (5, 5, 42, True)])
def test_page_stream_is_trls_order_continued(pages, per_round, seed, shuffle):
    """The stream's rounds are the generation batches trl's RepeatSampler yields, pass after pass
    (one sampler iteration per epoch), and a restore to an earlier position gives them again."""
    from trl.trainer.utils import RepeatSampler

    sampler = RepeatSampler(list(range(pages)), mini_repeat_count=G, batch_size=per_round, repeat_count=3, shuffle=shuffle, seed=seed)
    trl_rounds = []
    for _ in range(4):  # four epochs
        order = list(sampler)
        block = per_round * G * 3
        trl_rounds += [order[i : i + block : G][:per_round] for i in range(0, len(order), block)]
    stream = PageStream(pages, per_round, seed, shuffle)
    ours = [stream.draw() for _ in range(len(trl_rounds))]
    assert ours == trl_rounds
    assert stream.passes == 4
    stream.position = 1
    assert [stream.draw() for _ in range(len(trl_rounds) - 1)] == trl_rounds[1:]


def test_zero_spread_is_trls_test():
    """A group counts as without spread exactly when trl counts it in frac_reward_zero_std: trl's
    own nanstd over the weighted total (NaN where every reward function is NaN), isclose to 0."""
    from trl.trainer.utils import nanstd

    gen = torch.Generator().manual_seed(0)
    rows = 8 * G
    rewards = torch.randint(0, 3, (rows, 2), generator=gen).float() / 2
    rewards[: 3 * G] = rewards[: 3 * G : G].repeat_interleave(G, dim=0)  # three groups all equal
    rewards[3 * G : 3 * G + 1, 0] = torch.nan  # one function unscorable on one row
    rewards[4 * G : 4 * G + 2] = torch.nan  # two rows unscorable
    rewards[5 * G : 6 * G] = torch.tensor([1e-3, 1e-3 + 3e-10] * (G // 2)).unsqueeze(1)  # unequal floats, equal within trl's tolerance
    assert len(set(rewards[5 * G : 6 * G, 0].tolist())) == 2
    weights = torch.tensor([1.0, 0.5])
    total = (rewards * weights).nansum(dim=1)
    total[torch.isnan(rewards).all(dim=1)] = torch.nan
    trl_zero = torch.isclose(nanstd(total.view(-1, G), dim=1), torch.zeros(rows // G)).tolist()
    groups = judge(rewards, weights, G, Settings(KeepRule(), None, 0), 0)
    assert [g.zero_total for g in groups] == trl_zero
    assert sum(trl_zero) >= 4 and not all(trl_zero)
    assert [g.kept for g in groups] == [not z for z in trl_zero]  # the default rule keeps what has spread


def test_keep_rule_at_its_thresholds():
    """Each bound is strict, tested exactly at a non-default value; the statistics are Bessel's
    (n - 1) over rewards whose mean does not divide, one reward has no spread; describe names each
    bound given, 0 included (mutation survivors of olmocr_rl/keep_rule.py, tools/mutants.toml)."""
    from olmocr_rl.keep_rule import ZERO_STD, has_spread, statistics

    assert not has_spread({"std": ZERO_STD}) and has_spread({"std": 2 * ZERO_STD})
    stats = statistics([0.0, 1.0, 2.0, 4.0])  # mean 1.75; squared deviations sum to 8.75
    assert stats == {"mean": 1.75, "std": pytest.approx(math.sqrt(8.75 / 3)), "min": 0.0, "max": 4.0}
    assert statistics([0.7]) == {"mean": 0.7, "std": 0.0, "min": 0.7, "max": 0.7}
    rule = KeepRule(min_std=0.25, min_mean=0.0, max_mean=0.8)
    assert rule.keeps_stats({"mean": 0.5, "std": 0.26}) and not rule.keeps_stats({"mean": 0.5, "std": 0.25})
    assert not rule.keeps_stats({"mean": 0.0, "std": 0.5}) and rule.keeps_stats({"mean": 1e-9, "std": 0.5})
    assert not rule.keeps_stats({"mean": 0.8, "std": 0.5}) and rule.keeps_stats({"mean": 0.79, "std": 0.5})
    assert rule.keeps([0.0, 0.5, 1.0]) and not rule.keeps([0.0, 0.0, 0.2]) and not KeepRule().keeps([0.3, 0.3])
    assert rule.describe() == "reward std > 0.25, mean > 0, mean < 0.8"
    assert KeepRule(max_mean=0.5).describe() == "reward std > 0, mean < 0.5" and KeepRule().describe() == "reward std > 0"


def test_judge_band_and_named_reward():
    rows = [[0.0, 1.0], [1.0, 1.0], [0.0, 1.0], [1.0, 1.0]] * 3  # function 0 varies, function 1 does not
    rows[G : 2 * G] = [[1.0, 0.0], [1.0, 1.0], [1.0, 0.0], [1.0, 1.0]]  # group 1: the other way round
    rewards, weights = torch.tensor(rows), torch.tensor([1.0, 1.0])
    by_total = judge(rewards, weights, G, Settings(KeepRule(), None, 0), 0)
    by_first = judge(rewards, weights, G, Settings(KeepRule(), 0, 0), 0)
    assert [g.kept for g in by_total] == [True, True, True]
    assert [g.kept for g in by_first] == [True, False, True] and not by_first[1].spread
    banded = judge(rewards, weights, G, Settings(KeepRule(0.0, None, 1.4), None, 0), 0)  # totals' mean 1.5
    assert [g.kept for g in banded] == [False] * 3 and all(g.spread for g in banded)


def _g(round_: int, index: int, kept: bool, spread: bool = True) -> Group:
    return Group(round_, index, kept, spread, not spread)


def test_select_fills_at_the_bound_with_spread_first():
    groups = [_g(0, 0, False, False), _g(0, 1, True), _g(1, 0, False, True), _g(1, 1, True), _g(2, 0, True)]
    assert select(groups, 2) == ([groups[1], groups[3]], 0)  # the first kept ones, in generation order
    groups = [_g(0, 0, False, False), _g(0, 1, True), _g(1, 0, False, False), _g(1, 1, False, True)]
    assert select(groups, 3) == ([groups[1], groups[3], groups[0]], 2)


def test_place_keeps_a_group_on_its_rank_where_it_can():
    chosen = [_g(0, 1, True), _g(1, 1, True), _g(1, 0, True), _g(2, 1, True)]
    # Two ranks of two groups each (rows_per_rank = 2 G): groups 0-1 of a round on rank 0, 2-3 on rank 1.
    slots = place(chosen, G, 2 * G)
    assert sorted(slots, key=id) == sorted(chosen, key=id)
    assert slots[:2] == [chosen[0], chosen[1]] and set(map(id, slots[2:])) == {id(chosen[2]), id(chosen[3])}
    # Groups straddling ranks: generation order.
    assert place(chosen, G, 6) == chosen


def test_worst_case_and_the_plan_line():
    from olmocr_rl.train.config import load_config

    cfg = load_config("olmocr2", [], prepared_dir="p", model="m", output_dir="o")
    assert filter_cost(cfg, 7) is None and filter_settings(cfg) is None  # off in the recipe
    cfg = load_config("olmocr2", ["filter_groups=true"], prepared_dir="p", model="m", output_dir="o")
    cost = filter_cost(cfg, 7)
    assert (cost.rounds, cost.completions, cost.pages, cost.completions_max) == (4, 196, 7, 784)
    assert "at most 784 completions from 28 pages where trl generates 196 from 7" in cost.line()


def test_config_keys_are_checked():
    from olmocr_rl.train.config import load_config

    def cfg(*overrides):
        return load_config(None, list(overrides), prepared_dir="p", model="m", output_dir="o")

    assert cfg().filter_groups is False
    with pytest.raises(ConfigError, match="filter_reward: 'eos' is not one of the run's rewards"):
        cfg("filter_reward=eos")
    with pytest.raises(ConfigError, match="filter_min_mean .* must be below filter_max_mean"):
        cfg("filter_min_mean=0.5", "filter_max_mean=0.5")
    with pytest.raises(ConfigError, match="filter_extra_rounds must be >= 0"):
        cfg("filter_extra_rounds=-1")
    with pytest.raises(ConfigError, match="filter_min_std must be >= 0"):
        cfg("filter_min_std=-0.1")
    with pytest.raises(ConfigError, match="normalize_then_sum"):
        cfg("filter_groups=true", "trl.multi_objective_aggregation=normalize_then_sum")
    assert filter_settings(cfg("rewards={bench: 1.0, eos: 0.5}", "filter_reward=eos", "filter_groups=true")).reward == 1


def test_restore_from_a_checkpoint_without_filter_state(tmp_path):
    """A checkpoint saved without filtering: the order continues where trl's would (generation
    batches so far = steps x accumulation / (steps_per_generation x num_iterations), rounded up),
    with a warning; a state saved for other pages says so."""
    from olmocr_rl.train.filtering import STATE_FILE, OnlineFilter

    # 4 rows a rank x steps_per_generation 2 = 8 completions, 2 pages a round; num_iterations 2.
    online = OnlineFilter(Settings(KeepRule(), None, 2), pages=5, generations=G, per_round=2, rows_per_rank=8, rank=0, seed=0,
                          shuffle=True)  # fmt: skip
    steps = {"accumulation": 1, "micro_steps_per_generation": 2 * 2}
    warning = online.restore(tmp_path, global_step=5, **steps)
    assert online.stream.position == 2 and "has no online_filter.json" in warning and not online.in_sync
    (tmp_path / STATE_FILE).write_text(json.dumps({**online.state(), "rounds_drawn": 7}))
    assert online.restore(tmp_path, global_step=5, **steps) is None and online.stream.position == 7
    (tmp_path / STATE_FILE).write_text(json.dumps({**online.state(), "train_pages": 9}))
    assert "of 9 train pages" in online.restore(tmp_path, global_step=5, **steps)


def test_rows_the_bound_and_what_a_batch_records():
    """OnlineFilter's bookkeeping as its docstrings define it: rank r holds rows r*n .. r*n+n-1 of
    the pages repeated G times; a batch is enough at P kept groups or after 1 + filter_extra_rounds
    rounds; a filled batch warns (step counted from 1) and counts a bound hit; the filter/* metrics
    are the counts of the step, frac_reward_zero_std its share of zero-total groups."""
    from olmocr_rl.train.filtering import OnlineFilter, Round, Step

    online = OnlineFilter(Settings(KeepRule(), None, 2), pages=8, generations=2, per_round=2, rows_per_rank=2, rank=1, seed=0,
                          shuffle=False)  # fmt: skip
    assert online.rows_of([5, 7]) == [7, 7]  # rows 0..3 are 5,5,7,7; rank 1 holds rows 2..3
    kept, dropped = Group(0, 0, True, True, False), Group(0, 1, False, False, True)
    one = Round([5, 7], None, [], [kept, dropped])
    assert not online.enough([one]) and online.enough([one, one])  # 1 kept, then 2 kept over two rounds
    assert online.enough([Round([5, 7], None, [], [kept, kept])])  # P = 2 kept in one round
    assert not online.enough([Round([], None, [], [kept])] + [Round([], None, [], [dropped])])  # 1 kept, 2 rounds <= 1 + 2
    assert online.enough([Round([], None, [], [kept])] + [Round([], None, [], [dropped])] * 2)  # 3 rounds: the bound
    warning, metrics = online.record(Step([kept, dropped, dropped, dropped], rounds=3, filled=1, seconds=1.5, reward=0.25), 4)
    assert warning == ("online filtering, step 5: 1 of 2 groups kept after 3 generation rounds (filter_extra_rounds=2); "
                       "filled with 1 dropped groups")  # fmt: skip
    assert metrics == {"filter/groups_generated": 4.0, "filter/groups_kept": 1.0, "filter/groups_filled": 1.0,
                       "filter/rounds": 3.0, "filter/frac_reward_zero_std": 0.75, "filter/reward": 0.25,
                       "filter/rounds_s": 1.5, "filter/epoch": 0.0}  # fmt: skip
    assert online.bound_hits == 1 and online.rounds_total == 3
    warning, _ = online.record(Step([kept, kept], rounds=1, filled=0, seconds=0.5, reward=1.0), 5)
    assert warning is None and online.bound_hits == 1 and online.rounds_total == 4
    assert online.state() == {"rounds_drawn": 0, "pages_per_round": 2, "train_pages": 8, "seed": 0, "shuffle": False,
                              "bound_hits": 1}  # fmt: skip


# ---------------------------------------------------------------------------------------------
# training runs with designed rewards
# ---------------------------------------------------------------------------------------------


def train(prepared, model, out: Path, overrides: list[str], *, world: int = 1, zero: int | None = None, design: str = "mixed",
          resume: str | None = None) -> str:  # fmt: skip
    """tests/filter_rollouts.py on `prepared` with BASE + `overrides`; returns its stderr."""
    from olmocr_rl.launch.launchers import LaunchOptions, accelerate_argv, launch_env

    extra = [f"resume={resume}"] if resume else []
    config = write_config(prepared, model, out, [*BASE, *overrides, *extra])
    program = [str(HERE / "filter_rollouts.py"), "--design", design, str(config)]
    cmd = [sys.executable, *program] if world == 1 else accelerate_argv(program, LaunchOptions(num_processes=world, zero=zero))
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=launch_env(world))
    assert proc.returncode == 0, f"{' '.join(cmd)}\n--- stderr\n{proc.stderr[-6000:]}"
    assert "trl's page order is not the one" not in proc.stderr  # the stream reproduced trl's batches while in sync
    return proc.stderr


def _jsonl(out: Path, stem: str) -> list[dict]:
    rows = []
    for path in sorted(out.glob(f"{stem}_rank*.jsonl")):
        rank = int(path.stem.rsplit("rank", 1)[1])
        rows += [{**json.loads(line), "rank": rank} for line in path.read_text().splitlines()]
    return rows


def filter_metrics(out: Path) -> dict[int, dict]:
    rows = [json.loads(line) for line in (out / "logs" / "metrics.jsonl").read_text().splitlines()]
    return {r["step"]: r for r in rows if "filter/rounds" in r}


def std(values: list[float]) -> float:
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


def expected_step(generated: list[dict], per_round: int, extra: int, band: float | None, design: str) -> dict:
    """From what one generation batch generated (the rows of its rounds), what the spec says
    reaches the loss: the first `per_round` kept groups, else all kept and dropped ones with
    spread first (written here from the spec, not with the module's code)."""
    groups: dict[tuple[int, int], int] = {}  # (round, group) -> page
    for r in generated:
        page, round_, member, step = parse(r["text"])
        groups[(round_, r["k"] // G)] = page
        assert member == r["k"] % G
    rounds = 1 + max(rd for rd, _ in groups)
    info = []
    for (rd, g), page in sorted(groups.items()):
        values = [value(kind(page, rd, step, design), m, G) for m in range(G)]
        spread = std(values) > 0
        info.append(((page, rd), spread, spread and (band is None or sum(values) / G < band), values))
    kept = [key for key, _, keep, _ in info if keep]
    fill = [key for key, spread, keep, _ in sorted(info, key=lambda i: not i[1]) if not keep][: max(0, per_round - len(kept))]
    kept_by_round = [sum(keep for (_, rd), _, keep, _ in info if rd < n) for n in range(1, rounds + 1)]
    assert all(k < per_round for k in kept_by_round[:-1]) and (kept_by_round[-1] >= per_round or rounds == 1 + extra), "rounds"
    return {"groups": set(kept[:per_round] + fill), "rounds": rounds, "kept": len(kept), "filled": len(fill),
            "zero": sum(not spread for _, spread, _, _ in info), "values": {key: v for key, _, _, v in info}}  # fmt: skip


def check_run(out: Path, per_round: int, *, extra: int = EXTRA, band: float | None = 0.8, generate_every: int = 1,
              trained_per_step: int | None = None, design: str = "mixed", scale: str = "group") -> dict[int, dict]:  # fmt: skip
    """Everything that reached the loss against what was generated; returns the expectation per
    generation step."""
    generated, trained = _jsonl(out, "gen"), _jsonl(out, "trained")
    by_gen_step: dict[int, list[dict]] = defaultdict(list)
    for r in generated:
        by_gen_step[r["step"]].append(r)
    expected = {s: expected_step(rows, per_round, extra, band, design) for s, rows in by_gen_step.items()}
    pixels: dict[int, set[str]] = defaultdict(set)
    by_step: dict[int, list[dict]] = defaultdict(list)
    for r in trained:
        by_step[r["step"]].append(r)
    for step, rows in by_step.items():
        gen_step = step - step % generate_every
        exp = expected[gen_step]
        texts = [parse(r["text"]) for r in rows]
        assert {s for *_, s in texts} == {gen_step}, f"step {step} trained completions of another generation"
        assert len(rows) == (trained_per_step or per_round * G)
        # scale_rewards=batch: the std of the rewards of the batch that is trained (its groups'
        # design values), not of everything generated.
        batch_std = std([v for g in exp["groups"] for v in exp["values"][g]])
        for r, (page, rd, member, _) in zip(rows, texts):
            values = exp["values"][(page, rd)]
            mean, spread = sum(values) / G, std(values) if scale == "group" else batch_std
            assert r["advantage"] == pytest.approx((values[member] - mean) / (spread + 1e-4), abs=1e-5), (step, r["text"])
            assert r["items"] == per_round * G * 9  # every completion's 9 tokens, of the trained batch only
            pixels[page].add(r["pixels"])
    for gen_step, exp in expected.items():
        rows = [parse(r["text"]) for s, rs in by_step.items() if s - s % generate_every == gen_step for r in rs]
        seen: dict[tuple[int, int], list[int]] = defaultdict(list)
        for page, rd, member, _ in rows:
            seen[(page, rd)].append(member)
        assert set(seen) == exp["groups"], f"generation at step {gen_step}: trained {sorted(seen)}, expected {sorted(exp['groups'])}"
        repeats = len(rows) // (per_round * G)
        assert all(sorted(m) == sorted(list(range(G)) * repeats) for m in seen.values()), "a group not whole"
    # trl's completions table: every row's reward-logged column (log_extra) is its own.
    table = _jsonl(out, "table")
    assert table and all(r["completion"] == r["made"] for r in table)
    if generate_every == 1:  # the table logged after step t holds the batch trained at step t
        for t in {r["step"] for r in table}:
            assert sorted(r["completion"] for r in table if r["step"] == t) == sorted(r["text"] for r in by_step[t - 1])
    # Each page's rows carry that page's pixel values, and no other page's.
    assert all(len(d) == 1 for d in pixels.values()) and len({next(iter(d)) for d in pixels.values()}) == len(pixels)
    metrics = filter_metrics(out)
    for gen_step, exp in expected.items():
        m = metrics[gen_step + 1]
        assert m["filter/rounds"] == exp["rounds"] and m["filter/groups_generated"] == exp["rounds"] * per_round
        assert (m["filter/groups_kept"], m["filter/groups_filled"]) == (exp["kept"], exp["filled"])
        assert m["filter/frac_reward_zero_std"] == pytest.approx(exp["zero"] / (exp["rounds"] * per_round))
        assert m["frac_reward_zero_std"] == pytest.approx(sum(1 for g in exp["groups"] if std(exp["values"][g]) == 0) / per_round)
    return expected


def assert_warnings(stderr: str, expected: dict[int, dict], per_round: int) -> None:
    said = {int(m.group(1)) - 1: m.groups()[1:] for m in WARNING.finditer(stderr)}
    wanted = {s: (str(min(e["kept"], per_round)), str(per_round), str(e["rounds"])) for s, e in expected.items() if e["filled"]}
    assert said == wanted


def param_sums(out: Path, rank: int = 0) -> list[float]:
    return json.loads((out / f"fixed_rollouts_rank{rank}.json").read_text())


@pytest.fixture(scope="module")
def one_process(prepared, tiny_model, tmp_path_factory) -> tuple[Path, str]:
    """Two pages a round (8 completions), six steps, a checkpoint at step 3."""
    out = tmp_path_factory.mktemp("filter") / "w1"
    stderr = train(prepared, tiny_model, out, [*FILTER, "per_device_train_batch_size=8", "max_steps=6", "save_steps=3"])
    return out, stderr


def test_one_process_trains_the_kept_groups(one_process):
    out, stderr = one_process
    expected = check_run(out, 2)
    cases = [(e["rounds"], e["filled"] > 0, e["kept"] > 2) for e in expected.values()]
    # The design meets every case: no round added, rounds added, the bound with a fill, more groups
    # kept than the batch takes (the first ones in generation order are).
    assert (1, False, False) in cases and any(r > 1 and not f for r, f, _ in cases) and any(f for _, f, _ in cases)
    assert any(surplus for *_, surplus in cases)
    assert_warnings(stderr, expected, 2)
    state = json.loads((out / "checkpoint-3" / "online_filter.json").read_text())
    assert state["rounds_drawn"] == sum(expected[s]["rounds"] for s in range(3))
    summary = json.loads((out / "train_summary.json").read_text())["online_filter"]
    assert summary["rounds_drawn"] == sum(e["rounds"] for e in expected.values())
    assert summary["bound_hits"] == sum(e["filled"] > 0 for e in expected.values())


def test_resume_continues_the_page_order(one_process, prepared, tiny_model, tmp_path):
    """Stopped after step 3 and resumed: steps 4-6 generate for the pages the uninterrupted run
    generated for (the order continues past several passes over the pages) and make its updates."""
    whole, _ = one_process
    out = tmp_path / "run"
    steps = [*FILTER, "per_device_train_batch_size=8", "save_steps=3"]
    train(prepared, tiny_model, out, [*steps, "max_steps=3"])
    train(prepared, tiny_model, out, [*steps, "max_steps=6"], resume="auto")
    later = [r for r in _jsonl(whole, "gen") if r["step"] >= 3]
    assert [r["text"] for r in _jsonl(out, "gen") if r["step"] >= 3] == [r["text"] for r in later]
    # The resumed process wrote its own steps, 4-6.
    assert param_sums(out) == pytest.approx(param_sums(whole)[3:], rel=1e-9)


def test_a_filter_that_keeps_every_group_trains_as_trl(prepared, tiny_model, tmp_path):
    """Every group has spread: no round is added, and the run is trl's without filtering, update
    for update (the replay gives trl's own pixel values, log-probabilities and advantages)."""
    plain, filtered = tmp_path / "plain", tmp_path / "filtered"
    steps = ["per_device_train_batch_size=8", "max_steps=4"]
    train(prepared, tiny_model, plain, steps, design="mid")
    stderr = train(prepared, tiny_model, filtered, [*FILTER, *steps], design="mid")
    assert param_sums(filtered) == param_sums(plain)
    assert all(m["filter/rounds"] == 1 and m["filter/epoch"] == s for s, m in filter_metrics(filtered).items())
    assert "warning: online filtering" not in stderr


def test_a_reward_that_never_varies_stops_at_the_bound(prepared, tiny_model, tmp_path):
    out = tmp_path / "flat"
    stderr = train(prepared, tiny_model, out, [*FILTER[:-1], "filter_extra_rounds=1", "per_device_train_batch_size=8",
                                               "max_steps=2"], design="flat")  # fmt: skip
    expected = check_run(out, 2, extra=1, design="flat")
    assert all(e["rounds"] == 2 and e["filled"] == 2 and e["groups"] == {k for k in e["values"] if k[1] == 0} for e in expected.values())
    assert_warnings(stderr, expected, 2)
    assert len(WARNING.findall(stderr)) == 2


def test_steps_per_generation_and_iterations(prepared, tiny_model, tmp_path):
    """One generation feeds 4 optimizer steps (steps_per_generation 2 x num_iterations 2): each
    half of the filtered batch is trained twice, with trl's old log-probabilities."""
    out = tmp_path / "spg"
    train(prepared, tiny_model, out, [*FILTER, "per_device_train_batch_size=4", "steps_per_generation=2", "num_iterations=2",
                                      "max_steps=8"])  # fmt: skip
    expected = check_run(out, 2, generate_every=4, trained_per_step=4)
    assert sorted(expected) == [0, 4]
    trained = _jsonl(out, "trained")
    for first in (0, 4):
        halves = [sorted(r["text"] for r in trained if r["step"] == s) for s in range(first, first + 4)]
        assert halves[0] == halves[2] and halves[1] == halves[3] and not set(halves[0]) & set(halves[1])


def test_batch_scaled_advantages_and_dapo_over_the_trained_batch(prepared, tiny_model, tmp_path):
    """scale_rewards=batch divides by the trained batch's reward std, dapo's loss by its tokens
    (`num_items_in_batch`): trl computes both on the filtered batch."""
    out = tmp_path / "batch"
    train(prepared, tiny_model, out, [*FILTER, "per_device_train_batch_size=8", "max_steps=3", "scale_rewards=batch", "loss_type=dapo"])
    check_run(out, 2, scale="batch")


def test_lora(prepared, tiny_model, tmp_path):
    out = tmp_path / "lora"
    train(prepared, tiny_model, out, [*FILTER, "lora=true", "learning_rate=1e-2", "per_device_train_batch_size=8", "max_steps=3"])
    check_run(out, 2)
    sums = param_sums(out)
    assert len(set(sums)) == 3  # the adapters moved


# ---------------------------------------------------------------------------------------------
# two ranks: the decision is global, and the updates are the one process's
# ---------------------------------------------------------------------------------------------


def _moved(out: Path) -> int:
    """Rows trained on another rank than the one that generated them."""
    made = {(r["step"], r["text"]): r["rank"] for r in _jsonl(out, "gen")}
    return sum(made[(r["step"], r["text"])] != r["rank"] for r in _jsonl(out, "trained"))


@pytest.mark.distributed
def test_two_ddp_ranks_train_what_one_process_trains(one_process, prepared, tiny_model, tmp_path):
    """Two pages a round, a page's group on one rank: groups kept on one rank fill the other's
    slots (their completions move); the updates are the one process's."""
    whole, _ = one_process
    out = tmp_path / "ddp"
    stderr = train(prepared, tiny_model, out, [*FILTER, "per_device_train_batch_size=4", "max_steps=6"], world=2)
    expected = check_run(out, 2)
    assert expected == check_run(whole, 2)
    assert _moved(out) > 0
    assert param_sums(out, 0) == param_sums(out, 1)
    assert param_sums(out) == pytest.approx(param_sums(whole), rel=1e-6)
    assert_warnings(stderr, expected, 2)


@pytest.mark.distributed
def test_two_zero2_ranks_with_groups_across_ranks(prepared, tiny_model, tmp_path):
    """Three pages a round, 6 rows a rank: a group straddles the ranks; ZeRO-2 makes the one
    process's updates."""
    need("deepspeed")
    one, two = tmp_path / "one", tmp_path / "zero2"
    steps = [*FILTER, "max_steps=4"]
    train(prepared, tiny_model, one, [*steps, "per_device_train_batch_size=12"])
    train(prepared, tiny_model, two, [*steps, "per_device_train_batch_size=6"], world=2, zero=2)
    expected = check_run(two, 3)
    assert expected == check_run(one, 3)
    assert any(e["filled"] for e in expected.values()) and any(e["rounds"] == 1 for e in expected.values())
    assert any(e["kept"] > 3 for e in expected.values())
    assert param_sums(two, 0) == param_sums(two, 1)
    # Float32 reduction order only: measured 1.4e-6 relative (6e-4 on a sum a step moves by ~6;
    # one element's Adam step is lr = 3e-3), where a group trained wrongly moves it by whole units.
    assert param_sums(two) == pytest.approx(param_sums(one), rel=1e-5)


# ---------------------------------------------------------------------------------------------
# trl's vLLM paths at their boundary, the plan, the report
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["server", "colocate"])
def test_vllm_paths_generate_every_round_and_sync_weights_once_a_step(prepared, tiny_model, tmp_path, monkeypatch, mode):
    """trl's vLLM generation (stand-ins for the server client and the colocated engine, as
    tests/test_vllm_boundary.py): every round is one generate call of trl's, weights are pushed
    once per step, and vLLM's sampling log-probabilities reach the loss (the importance sampling
    metrics). The stand-ins return one completion for everything: no group has spread, every step
    ends at the bound."""
    import importlib

    import trl.generation.vllm_generation as vllm_generation
    from test_vllm_boundary import RecordingClient, RecordingLLM, RecordingSamplingParams

    from olmocr_rl.modeling import load_processor
    from olmocr_rl.train.config import load_config
    from olmocr_rl.train.worker import run

    preflight = importlib.import_module("olmocr_rl.train.preflight")
    monkeypatch.setattr(preflight, "vllm_problems", lambda cuda, mode="colocate": [])
    monkeypatch.setattr(vllm_generation, "is_vllm_available", lambda *a, **k: True)
    monkeypatch.setattr(vllm_generation, "VLLMClient", RecordingClient)
    monkeypatch.setattr(vllm_generation, "LLM", RecordingLLM, raising=False)
    monkeypatch.setattr(vllm_generation, "SamplingParams", RecordingSamplingParams, raising=False)
    for var in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.setenv(var, "0")
        monkeypatch.delenv(var)
    tok = load_processor(str(tiny_model)).tokenizer
    RecordingClient.calls, RecordingClient.tokenizer = [], tok
    RecordingLLM.calls, RecordingLLM.tokenizer = [], tok
    out = tmp_path / "run"
    cfg = load_config(None, [*BASE[:-2], "rewards={bench: 1.0}", "per_device_train_batch_size=8", "max_steps=2", "use_vllm=true",
                             f"vllm_mode={mode}", *FILTER[:-1], "filter_extra_rounds=1", "max_pixels=6272"],
                      prepared_dir=str(prepared), model=str(tiny_model), output_dir=str(out))  # fmt: skip
    cfg.bf16 = False
    run(cfg, final_outputs=False)
    calls = RecordingClient.calls if mode == "server" else RecordingLLM.calls
    pushes = "update_named_params" if mode == "server" else "load_weights"
    # Per step: the weights pushed (once, one call per tensor in colocate mode), then one
    # generate call per round (1 + filter_extra_rounds).
    runs = [(name, len(list(same))) for name, same in itertools.groupby(n for n, _ in calls if n in (pushes, "generate"))]
    assert [name for name, _ in runs] == [pushes, "generate"] * 2 and runs[0][1] == runs[2][1]
    assert runs[1][1] == runs[3][1] == 2
    metrics = filter_metrics(out)
    assert [(m["filter/rounds"], m["filter/groups_filled"]) for m in metrics.values()] == [(2, 2), (2, 2)]
    assert all(math.isfinite(m["sampling/importance_sampling_ratio/mean"]) for m in metrics.values())


def test_dry_run_states_the_worst_case(prepared, tiny_model, tmp_path):
    from clirun import invoke
    from training import RECIPE

    args = ["train", str(prepared), "--model", str(tiny_model), "-o", str(tmp_path / "o"), "--config", str(RECIPE), "--dry-run"]
    assert "online filtering" not in invoke(args).output
    said = invoke([*args, "filter_groups=true"]).output
    assert "online filtering: up to 4 generation rounds per generation batch (1 + filter_extra_rounds): at most 16 completions" in said


def test_report_shows_the_filtering_curves(one_process, tmp_path):
    import shutil

    from olmocr_rl.report.run import run_report

    out, _ = one_process
    copy = tmp_path / "run"
    shutil.copytree(out / "logs", copy / "logs")
    shutil.copy(out / "train_config.json", copy / "train_config.json")
    html = run_report(copy).read_text()
    for metric in ("filter/groups_generated", "filter/rounds", "filter/frac_reward_zero_std", "filter/reward", "filter/rounds_s"):
        assert f'data-metric="{metric}"' in html, metric
