"""Fast unit tests of olmocr_rl/train/filtering.py's helpers that otherwise only the training runs
reach: the page order against trl's RepeatSampler, the checkpoint state, rows per rank as trl lays
out a generation batch, the bound, what a batch records, and the distributed stand-ins."""

from __future__ import annotations

import json
import math

import pytest
import torch

from olmocr_rl.keep_rule import KeepRule
from olmocr_rl.train import filtering as F
from olmocr_rl.train.filtering import STATE_FILE, Group, OnlineFilter, PageStream, Round, Settings, Step


def _trl_order(pages: int, per_round: int, seed, shuffle: bool, passes: int) -> list[list[int]]:
    """The rounds trl's RepeatSampler yields over `passes` iterations of one sampler (one generator)."""
    from trl.trainer.utils import RepeatSampler

    sampler = RepeatSampler(list(range(pages)), mini_repeat_count=1, batch_size=per_round, shuffle=shuffle, seed=seed)
    out = []
    for _ in range(passes):
        xs = list(sampler)
        out += [xs[i : i + per_round] for i in range(0, len(xs), per_round)]
    return out


@pytest.mark.parametrize(("pages", "per_round", "seed", "shuffle"), [(7, 3, 5, True), (10, 5, 0, True), (7, 2, 1, False)])
def test_page_stream_draws_trls_rounds_and_counts_passes(pages, per_round, seed, shuffle):
    """pages that do not divide: the incomplete last round dropped, pass k the k-th randperm, as trl."""
    expected = _trl_order(pages, per_round, seed, shuffle, passes=3)
    stream = PageStream(pages, per_round, seed, shuffle)
    assert stream.rounds_per_pass == pages // per_round
    got = [stream.draw() for _ in expected]
    assert got == expected
    assert stream.position == len(expected)
    assert stream.passes == pytest.approx(3.0)
    # going back (a restore) draws the same order again
    assert [stream.pages_at(i) for i in range(len(expected))] == expected


def test_page_stream_unseeded_and_bounds():
    """seed None still shuffles a permutation; per_round < 1 or more than the pages is refused."""
    s = PageStream(5, 5, None, True)
    assert sorted(s.draw()) == [0, 1, 2, 3, 4]
    assert PageStream(4, 4, 0, True).rounds_per_pass == 1  # pages == per_round is fine
    for pages, per_round in [(3, 4), (3, 0)]:
        with pytest.raises(Exception, match="online filtering"):
            PageStream(pages, per_round, 0, True)


def test_totals_nan_handling():
    """weighted sum, NaN functions left out, NaN where all are NaN (trl's nansum)."""
    nan = float("nan")
    r = torch.tensor([[1.0, 2.0], [nan, 3.0], [nan, nan]])
    t = F.totals(r, torch.tensor([2.0, 0.5]))
    assert t[0].item() == 3.0 and t[1].item() == 1.5 and math.isnan(t[2].item())


def _filter(rank=0, rows_per_rank=4, generations=2, per_round=4, extra=2, pages=8, seed=3, shuffle=True):
    s = Settings(KeepRule(), None, extra)
    return OnlineFilter(s, pages=pages, generations=generations, per_round=per_round, rows_per_rank=rows_per_rank,
                        rank=rank, seed=seed, shuffle=shuffle)  # fmt: skip


def test_state_and_restore_round_trip(tmp_path):
    """the state names every field; restore continues at its position and bound hits, warns on a mismatch."""
    f = _filter()
    f.stream.position, f.bound_hits = 5, 2
    state = f.state()
    assert state == {"rounds_drawn": 5, "pages_per_round": 4, "train_pages": 8, "seed": 3, "shuffle": True, "bound_hits": 2}
    (tmp_path / STATE_FILE).write_text(json.dumps(state), encoding="utf-8")
    g = _filter()
    assert g.in_sync
    assert g.restore(tmp_path, 99, accumulation=1, micro_steps_per_generation=1) is None
    assert (g.stream.position, g.bound_hits, g.in_sync) == (5, 2, False)
    for key, value in [("seed", 4), ("shuffle", False), ("train_pages", 9), ("pages_per_round", 2)]:
        (tmp_path / STATE_FILE).write_text(json.dumps({**state, key: value}), encoding="utf-8")
        warning = _filter().restore(tmp_path, 0, accumulation=1, micro_steps_per_generation=1)
        assert warning and "continues at its position" in warning
    (tmp_path / STATE_FILE).write_text(json.dumps({"rounds_drawn": 1}), encoding="utf-8")
    h = _filter()
    h.bound_hits = 7
    h.restore(tmp_path, 0, accumulation=1, micro_steps_per_generation=1)
    assert h.bound_hits == 0


def test_restore_without_state_rounds_up_to_trls_generation_batch(tmp_path):
    """no state: position ceil(global_step * accumulation / micro_steps_per_generation)."""
    f = _filter()
    w = f.restore(tmp_path, 5, accumulation=3, micro_steps_per_generation=2)
    assert f.stream.position == 8 and "generation batch 8" in w and not f.in_sync


def test_rows_of_is_trls_layout_on_two_ranks():
    """each page repeated G times, rank r holds rows r*n .. r*n+n-1 (trl's process slice)."""
    pages = [10, 11, 12, 13]
    every = [p for p in pages for _ in range(2)]
    assert _filter(rank=0).rows_of(pages) == every[:4]
    assert _filter(rank=1).rows_of(pages) == every[4:]


def _groups(round_, kept):
    return [Group(round_, i, kept=k, spread=k, zero_total=not k) for i, k in enumerate(kept)]


def test_enough_at_a_non_default_bound():
    """P kept, or more rounds than filter_extra_rounds."""
    f = _filter(extra=1, per_round=4)
    r0 = Round([0, 1, 2, 3], None, [], _groups(0, [True, True, True, False]))
    assert not f.enough([r0])
    assert f.enough([r0, Round([4, 5, 6, 7], None, [], _groups(1, [False] * 4))])
    assert f.enough([Round([0, 1, 2, 3], None, [], _groups(0, [True] * 4))])


def test_batch_trained_rows_and_records_on_one_rank():
    """the first P kept groups; in_sync lost once a round is added; rows and rewards in slot order."""
    f = _filter(rank=0, rows_per_rank=4, generations=2, per_round=2, pages=4, extra=3)
    rw0 = torch.arange(4, dtype=torch.float32).unsqueeze(1)
    rw1 = 10 + rw0
    rounds = [Round([0, 1], rw0, [{"r": 0, "i": i} for i in range(4)], _groups(0, [False, True])),
              Round([2, 3], rw1, [{"r": 1, "i": i} for i in range(4)], _groups(1, [True, False]))]  # fmt: skip
    assert f.in_sync
    f.batch(rounds[:1])
    assert f.in_sync
    slots, filled = f.batch(rounds)
    assert not f.in_sync and filled == 0
    assert [(g.round, g.index) for g in slots] == [(0, 1), (1, 0)]
    pages, rewards = f.trained_rows(rounds, slots)
    assert pages == [1, 1, 2, 2]
    assert rewards.squeeze(1).tolist() == [2.0, 3.0, 10.0, 11.0]
    assert f.move_records(rounds, slots) == [{"r": 0, "i": 2}, {"r": 0, "i": 3}, {"r": 1, "i": 0}, {"r": 1, "i": 1}]


def test_move_records_across_two_ranks(monkeypatch):
    """A group generated on rank 1 trained on rank 0 and the other way round: each rank's records
    come through the all-gather. The two ranks run at once in threads and the stand-in gathers as
    `all_gather_object` does (every rank's object, in rank order, to every rank)."""
    import threading

    import olmocr_rl.train.rewards as R

    G, n = 2, 2
    recs = {r: [{"rank": r, "row": j} for j in range(n)] for r in (0, 1)}
    slots = [Group(0, 1, True, True, False), Group(0, 0, True, True, False)]  # swapped: both move
    filters = {r: _filter(rank=r, rows_per_rank=n, generations=G, per_round=2, pages=2) for r in (0, 1)}
    sent: dict[int, object] = {}
    barrier = threading.Barrier(2)
    rank_of = threading.local()

    def all_gather(obj):
        sent[rank_of.r] = obj
        barrier.wait(timeout=10)
        return [sent[0], sent[1]]

    monkeypatch.setattr(R, "gather_over_ranks", all_gather)
    got: dict[int, list] = {}

    def run(r):
        rank_of.r = r
        got[r] = filters[r].move_records([Round([0, 1], None, recs[r], [])], slots)

    threads = [threading.Thread(target=run, args=(r,)) for r in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=20)
    assert got == {0: recs[1], 1: recs[0]}


def test_record_warning_and_metrics():
    """every filter/* field; the warning and bound hit only when filled."""
    f = _filter(per_round=2, extra=1, pages=8)
    f.stream.position = 2  # 8 pages, 2 a round: 4 rounds a pass, so half a pass
    groups = [Group(0, 0, True, True, False), Group(0, 1, False, False, True), Group(1, 0, False, True, False)]
    warning, m = f.record(Step(groups, rounds=2, filled=1, seconds=1.5, reward=0.25), global_step=4)
    assert warning == ("online filtering, step 5: 1 of 2 groups kept after 2 generation rounds (filter_extra_rounds=1); "
                       "filled with 1 dropped groups")  # fmt: skip
    assert m == {"filter/groups_generated": 3.0, "filter/groups_kept": 1.0, "filter/groups_filled": 1.0,
                 "filter/rounds": 2.0, "filter/frac_reward_zero_std": 1 / 3, "filter/reward": 0.25,
                 "filter/rounds_s": 1.5, "filter/epoch": 0.5}  # fmt: skip
    assert (f.bound_hits, f.rounds_total) == (1, 2)
    warning, _ = f.record(Step(groups[:1] * 3, rounds=1, filled=0, seconds=0.0, reward=0.0), global_step=5)
    assert warning is None and (f.bound_hits, f.rounds_total) == (1, 3)


def test_same_pages_and_prompt_keys():
    """pages compared by pdf, page and test ids in order; images digested by type, size and pixels."""
    a = {"pdf": "x.pdf", "page": 1, "test_ids": ["t1"], "other": 1}
    assert F.same_pages([a], [{"pdf": "x.pdf", "page": 1, "test_ids": ("t1",)}])
    assert not F.same_pages([a], [{**a, "page": 2}])
    assert not F.same_pages([a], [{**a, "test_ids": []}])
    assert F.same_pages([{"pdf": "p"}], [{"pdf": "p", "test_ids": None}])

    class Img:
        size = (2, 3)

        def __init__(self, b):
            self.b = b

        def tobytes(self):
            return self.b

    img = Img(b"abc")
    import hashlib

    digest = f"Img(2, 3):{hashlib.sha1(b'abc').hexdigest()[:16]}"
    keys = F.prompt_keys([{"role": [img, ("t", 1, None, True, 1.5)]}, img, Img(b"abd")])
    assert keys[0] == {"role": [digest, ["t", 1, None, True, 1.5]]}
    assert keys[1] == digest and keys[2] != digest


def test_rank0s_broadcasts_only_when_distributed(monkeypatch):
    """world size > 1: rank 0's object (broadcast_object_list fills the list in place); else as is."""
    import torch.distributed as dist

    monkeypatch.setattr(dist, "is_available", lambda: True)
    monkeypatch.setattr(dist, "is_initialized", lambda: True)
    calls = []

    def broadcast(box, src):
        calls.append(src)
        box[0] = "rank0"

    monkeypatch.setattr(dist, "broadcast_object_list", broadcast)
    monkeypatch.setattr(dist, "get_world_size", lambda: 2)
    assert F.rank0s("mine") == "rank0" and calls == [0]
    monkeypatch.setattr(dist, "get_world_size", lambda: 1)
    assert F.rank0s("mine") == "mine"
    monkeypatch.setattr(dist, "is_initialized", lambda: False)
    monkeypatch.setattr(dist, "get_world_size", lambda: 2)
    assert F.rank0s("mine") == "mine"
    monkeypatch.setattr(dist, "is_initialized", lambda: True)
    monkeypatch.setattr(dist, "is_available", lambda: False)
    assert F.rank0s("mine") == "mine" and calls == [0]


def test_page_stream_one_page_a_round_and_each_pass_drawn_once(monkeypatch):
    """per_round 1 is a stream; each pass's permutation is drawn once, not again for each of its
    rounds (with or without a seed: an unseeded torch.Generator starts from torch's fixed default)."""
    s = PageStream(3, 1, 0, True)
    assert sorted(p for _ in range(3) for p in s.draw()) == [0, 1, 2]
    drawn = []
    real = torch.randperm
    monkeypatch.setattr(torch, "randperm", lambda *a, **k: drawn.append(a) or real(*a, **k))
    for seed in (None, 4):
        drawn.clear()
        s = PageStream(20, 4, seed, True)
        passes = [[p for _ in range(5) for p in s.draw()] for _ in range(3)]
        assert all(sorted(p) == list(range(20)) for p in passes) and len(drawn) == 3


def test_totals_in_the_rewards_dtype():
    """float64 weights (a config's floats) on float32 rewards: summed in float32, as trl does."""
    r = torch.tensor([[0.1, 0.7], [0.3, float("nan")]], dtype=torch.float32)
    w = torch.tensor([0.3, 0.9], dtype=torch.float64)
    t = F.totals(r, w)
    assert t.dtype == torch.float32
    expected = (r * w.float().unsqueeze(0)).nansum(dim=1)
    assert torch.equal(t, expected)
    assert not torch.equal(t.double(), (r.double() * w.unsqueeze(0)).nansum(dim=1))  # float64 would differ here
    # and on the rewards' device (CUDA in a run; "meta" here: a CPU tensor is refused beside it)
    assert F.totals(torch.zeros(2, 2, device="meta"), w).device.type == "meta"


def test_judge_names_each_groups_round_and_place_and_skips_an_unscored_group():
    """Group g of round k is (k, g); a group whose judged rewards are all NaN is neither kept nor
    spread (nothing to judge), and counted as zero spread when its totals are too."""
    nan = float("nan")
    rewards = torch.tensor([[0.0, 1.0], [1.0, 1.0], [nan, 0.0], [nan, 1.0], [nan, nan], [nan, nan]])
    weights = torch.tensor([1.0, 1.0])
    groups = F.judge(rewards, weights, 2, Settings(KeepRule(), 0, 1), 7)
    assert [(g.round, g.index, g.kept, g.spread, g.zero_total) for g in groups] == [
        (7, 0, True, True, False),
        (7, 1, False, False, False),  # reward 0 judged: none scored; the totals 0 and 1 disagree
        (7, 2, False, False, True),
    ]


def _lettered(*indices):
    return [Group(0, i, True, True, False) for i in indices]


def test_place_takes_a_free_slot_on_the_home_rank_else_fills_in_order():
    """Two ranks of two slots (rows_per_rank 2 G): groups 0-1 of a round live on rank 0, 2-3 on rank 1."""
    G = 2
    x2, y0, z3, w1 = _lettered(2, 0, 3, 1)
    assert F.place([x2, y0, z3, w1], G, 2 * G) == [y0, w1, x2, z3]  # each home; not generation order
    a0, b1, d2 = _lettered(0, 1, 2)
    c0 = Group(1, 0, True, True, False)  # round 1's group 0: rank 0, which a0 and b1 fill
    assert F.place([a0, b1, c0, d2], G, 2 * G) == [a0, b1, d2, c0]  # c0 takes what is left, on rank 1
    # fewer groups than slots (not a batch trl trains, but the function's bound): no slot past the end
    g2, g0 = _lettered(2, 0)
    assert F.place([g2, g0], G, G) == [g0, g2]
    assert F.place([x2, y0, z3, w1], G, 3) == [x2, y0, z3, w1]  # groups straddle ranks: generation order


def test_prompt_keys_digest_each_image_once_and_what_has_no_bytes_or_size():
    """Two images, two digests, each image read once; an object without tobytes is digested by its repr, one without a
    size gets ()."""
    import hashlib

    from PIL import Image

    red, blue = Image.new("RGB", (2, 1), "red"), Image.new("RGB", (2, 1), "blue")
    read = []
    for img in (red, blue):
        real = img.tobytes
        img.tobytes = lambda real=real: read.append(1) or real()
    k = F.prompt_keys([[red, blue, red]])[0]
    assert len(read) == 2  # red once
    assert k[0] == f"Image(2, 1):{hashlib.sha1(Image.new('RGB', (2, 1), 'red').tobytes()).hexdigest()[:16]}" == k[2] and k[1] != k[0]
    assert k[0].startswith("Image(2, 1):") and k[1].startswith("Image(2, 1):")

    class Plain:
        def __init__(self, name):
            self.name = name

        def __repr__(self):
            return f"Plain({self.name})"

    one, two = F.prompt_keys([Plain("a"), Plain("b")])
    assert one == f"Plain():{hashlib.sha1(b'Plain(a)').hexdigest()[:16]}"
    assert two == f"Plain():{hashlib.sha1(b'Plain(b)').hexdigest()[:16]}"


def test_same_pages_compares_the_pdf():
    assert not F.same_pages([{"pdf": "a.pdf", "page": 1}], [{"pdf": "b.pdf", "page": 1}])


def test_the_restore_warning_names_what_was_saved(tmp_path):
    f = _filter()
    (tmp_path / STATE_FILE).write_text(json.dumps({**f.state(), "pages_per_round": 2, "train_pages": 9, "seed": 11}))
    warning = _filter().restore(tmp_path, 0, accumulation=1, micro_steps_per_generation=1)
    assert warning == (f"{tmp_path / STATE_FILE}: saved for 2 pages per generation batch of 9 train pages (seed 11); this run has "
                       "4 of 8 (seed 3): the order continues at its position, not its pages")  # fmt: skip


def test_a_batch_of_two_rounds_is_out_of_sync_and_rank_1s_rows():
    """in_sync is False (not just falsy) once a round is added; rank 1's trained rows are its own n."""
    f = _filter(rank=1, rows_per_rank=2, generations=2, per_round=2, pages=4, extra=3)
    rw = torch.arange(4, dtype=torch.float32).unsqueeze(1)
    rounds = [Round([0, 1], rw, [], _groups(0, [False, True])), Round([2, 3], rw + 10, [], _groups(1, [True, False]))]
    slots, _ = f.batch(rounds)
    assert f.in_sync is False
    pages, rewards = f.trained_rows(rounds, slots)
    assert [(g.round, g.index) for g in slots] == [(1, 0), (0, 1)]  # each group on its home rank
    assert pages == [1, 1]  # slot 1, round 0's group 1, is rank 1's
    assert rewards.squeeze(1).tolist() == [10.0, 11.0, 2.0, 3.0]  # every rank's rewards, in slot order


def test_records_that_stay_on_their_rank_need_no_gather(monkeypatch):
    """one all-gather only when a group changes rank."""
    import olmocr_rl.train.rewards as R

    calls = []
    monkeypatch.setattr(R, "gather_over_ranks", lambda obj: calls.append(obj) or [obj])
    f = _filter(rank=0, rows_per_rank=4, generations=2, per_round=2, pages=4)
    recs = [{"i": i} for i in range(4)]
    slots = [Group(0, 0, True, True, False), Group(0, 1, True, True, False)]
    assert f.move_records([Round([0, 1], None, recs, [])], slots) == recs
    assert calls == []


def test_bound_hits_add_up():
    f = _filter(per_round=2, extra=1, pages=8)
    step = Step([Group(0, 0, False, True, False)], rounds=2, filled=2, seconds=0.0, reward=0.0)
    f.record(step, 0)
    f.record(step, 1)
    assert f.bound_hits == 2
