"""`OlmocrGRPOTrainer._cut_loops` in this process, on a stand-in trainer: the cut of ids and
logprobs where the rule finds a loop, the limit it counts savings against, and the tallies it
merges from every rank. The stand-in's `accelerator.gather` is what accelerate's does with a
1-D tensor: every rank's, concatenated in rank order. tests/test_loop_train.py runs the same
method inside trl's real generation on the tiny model."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from olmocr_rl.loops import LoopRule, LoopTally

RULE = LoopRule(max_period=4, min_span=8, min_repeats=2)
OTHER_RANK = {"completions": 3, "stopped": 1, "tokens": 40, "loop_tokens": 9, "saved": 60}
KEYS = ["completions", "stopped", "tokens", "loop_tokens", "saved"]  # LoopTally.as_dict's order


def stand_in(training: bool, limit: int = 100):
    gathered = []

    def gather(t):
        gathered.append(t)
        return torch.cat([t, torch.tensor([OTHER_RANK[k] for k in KEYS], dtype=t.dtype)])

    return SimpleNamespace(
        model=SimpleNamespace(training=training),
        loop_rule=RULE,
        args=SimpleNamespace(max_completion_length=limit),
        accelerator=SimpleNamespace(device=torch.device("cpu"), gather=gather),
        loop_tallies={"train": LoopTally(), "eval": LoopTally()},
        loops_run=LoopTally(),
        gathered=gathered,
    )


def cut_loops(trainer, ids, logprobs):
    from olmocr_rl.train.trainer import OlmocrGRPOTrainer

    return OlmocrGRPOTrainer._cut_loops(trainer, ids, logprobs)


LOOPING = [9, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 5]  # period 2 from index 1
CLEAN = [1, 2, 3, 4, 5, 6, 7]


def test_a_looping_completion_and_its_logprobs_end_at_the_cut_and_a_clean_one_is_kept():
    loop = RULE.find(LOOPING)
    assert loop is not None and loop.cut < len(LOOPING) and RULE.find(CLEAN) is None
    logprobs = [[float(-i) for i in range(len(LOOPING))], [-0.5] * len(CLEAN)]
    trainer = stand_in(training=True)
    ids, lps = cut_loops(trainer, [LOOPING, CLEAN], logprobs)
    assert ids == [LOOPING[: loop.cut], CLEAN] and lps == [logprobs[0][: loop.cut], logprobs[1]]
    assert all(type(x) is list for x in ids + lps)
    ids, lps = cut_loops(stand_in(training=True), [tuple(LOOPING)], None)
    assert ids == [LOOPING[: loop.cut]] and lps is None


def test_the_tally_is_made_on_the_ranks_device(monkeypatch):
    """NCCL gathers only tensors on the rank's own GPU: the tally is made there (CPU here, so the
    device handed to torch.tensor is what is checked)."""
    made = []
    real = torch.tensor
    trainer = stand_in(training=True)
    trainer.accelerator.device = device = torch.device("cpu")
    monkeypatch.setattr(torch, "tensor", lambda data, **kw: made.append((data, kw.get("device"))) or real(data, **kw))
    cut_loops(trainer, [CLEAN], None)
    tally = [(data, where) for data, where in made if data == [1, 0, len(CLEAN), 0, 0]]
    assert len(tally) == 1 and tally[0][1] is device


@pytest.mark.parametrize("training", [True, False])
def test_every_ranks_tallies_go_to_the_modes_and_the_runs_only_in_training(training):
    loop = RULE.find(LOOPING)
    trainer = stand_in(training=training, limit=50)
    cut_loops(trainer, [LOOPING, CLEAN], None)
    (sent,) = trainer.gathered
    assert sent.dtype == torch.long and sent.device.type == "cpu"
    mine = {"completions": 2, "stopped": 1, "tokens": loop.cut + len(CLEAN), "loop_tokens": loop.cut - loop.start, "saved": 50 - loop.cut}
    assert sent.tolist() == [mine[k] for k in KEYS]
    every = {k: mine[k] + OTHER_RANK[k] for k in KEYS}
    mode, other = ("train", "eval") if training else ("eval", "train")
    assert trainer.loop_tallies[mode].as_dict() == every
    assert trainer.loop_tallies[other].as_dict() == LoopTally().as_dict()
    assert trainer.loops_run.as_dict() == (every if training else LoopTally().as_dict())
    cut_loops(trainer, [CLEAN], None)  # a second call adds to both
    again = {k: every[k] + OTHER_RANK[k] + (1 if k == "completions" else len(CLEAN) if k == "tokens" else 0) for k in KEYS}
    assert trainer.loop_tallies[mode].as_dict() == again


def test_the_savings_count_against_max_completion_length():
    loop = RULE.find(LOOPING)
    for limit in (loop.cut + 7, loop.cut - 1):
        trainer = stand_in(training=True, limit=limit)
        cut_loops(trainer, [LOOPING], None)
        assert trainer.gathered[0].tolist()[KEYS.index("saved")] == max(0, limit - loop.cut)
