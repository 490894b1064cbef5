"""The loop stop in training (olmocr_rl/loops.py; wired by olmocr_rl/train/trainer.py, the worker and the
server command): its config keys; every engine told (the colocated vLLM engine its logits processor
and each request its switch, the server its `--logits-processors` and each request its switch,
trl's transformers generation its stopping criterion); every engine's completions cut where they
fell into a loop, so that neither the forced end token nor transformers' padding is trained; stopped
completions scored as the loop continued to the length limit (and against the real full-length run);
online filtering judging those rewards; the metrics in logs/metrics.jsonl, the console, the run
report and train_summary.json.

Cheap on purpose: the tiny recipe's 16-token completions never meet the default rule, so the runs
here use small rules; the stock tiny model decoded greedily (`trl.top_k=1`) falls into a loop of
period 5 on two fixture pages and never leaves it within 64 tokens, and on the third it leaves a short
loop for another, so one rule stops the first and lets the second run to the limit (a batch with a
stopped and an unstopped page). The real vLLM CPU engine's
side is in tests/test_vllm_real.py.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from conftest import need

need("trl")
torch = need("torch")

from training import cfg_for

# The stock tiny model, greedy, 64 tokens: one fixture page loops with period 5 from its second token to
# the limit (stopped at 1 + 40 = 41); another repeats a period of 4 for 26 tokens, leaves it, then repeats
# one token from its 32nd (no loop under this rule within 64 tokens: it runs to the limit).
RULE = ["loop_max_period=8", "loop_min_span=40", "loop_min_repeats=2"]
GREEDY = ["trl.top_k=1", "per_device_train_batch_size=8", "max_completion_length=64", "max_steps=1", "save_steps=0",
          "eval_split=none", "final_outputs=none", "report_to=[none]", "rewards={'test_loop_train:recorded': 1.0}"]  # fmt: skip
PAD, EOS = 256, 258  # the tiny tokenizer's
SEEN: list[list[tuple[str, list[int]]]] = []


def recorded(completions, completion_ids, **kwargs) -> list[float]:
    """A reward of the tests (`rewards.test_loop_train:recorded`): the length, in tokens, of what it is
    given to score; what it was given is recorded in SEEN."""
    SEEN.append([(c if isinstance(c, str) else c[-1]["content"], list(ids)) for c, ids in zip(completions, completion_ids)])
    return [float(len(ids)) for ids in completion_ids]


def trained(prepared, model, out: Path, *extra: str) -> tuple[object, list[dict], list[list[int]]]:
    """One GRPO run of the worker's trainer, its config and summary written as `olmocr-rl train` writes
    them: (the trainer, the batches the loss saw: completion ids, mask and vLLM's sampling logprobs per
    row, the criteria given to and the rows returned by each of transformers' generate calls)."""
    from olmocr_rl.train import worker
    from olmocr_rl.train.preflight import run_inputs

    cfg = cfg_for(prepared, model, out, *GREEDY, *extra)
    built = worker._build(cfg, run_inputs(cfg), False)
    trainer = built.trainer
    batches: list[dict] = []
    generated: list[list[int]] = []
    loss, generate = trainer.compute_loss, trainer.model.generate

    def recording_loss(model, inputs, *args, **kwargs):
        batches.append({k: inputs[k].tolist() for k in ("completion_ids", "completion_mask", "sampling_per_token_logps") if k in inputs})
        return loss(model, inputs, *args, **kwargs)

    def recording_generate(*args, **kwargs):
        out = generate(*args, **kwargs)
        criteria = [type(c).__name__ for c in kwargs.get("stopping_criteria") or []]
        generated.extend([criteria, *out[:, kwargs["input_ids"].shape[1] :].tolist()])
        return out

    trainer.compute_loss = recording_loss
    trainer.model.generate = recording_generate  # trl's transformers path calls the unwrapped model's generate
    SEEN.clear()
    result = trainer.train()
    cfg.to_json(out / "train_config.json")
    (out / "train_summary.json").write_text(json.dumps(worker._summary(cfg, built, result), default=str))
    return trainer, batches, generated


def rows(batches: list[dict]) -> list[tuple[list[int], int, list[float] | None]]:
    """(trained completion ids, tokens in the loss, sampling logprobs of those) of every row."""
    out = []
    for b in batches:
        for i, (ids, mask) in enumerate(zip(b["completion_ids"], b["completion_mask"])):
            n = sum(mask)
            assert mask == [1] * n + [0] * (len(mask) - n)
            logps = b["sampling_per_token_logps"][i][:n] if "sampling_per_token_logps" in b else None
            out.append((ids[:n], n, logps))
    return out


def metrics(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "logs" / "metrics.jsonl").read_text().splitlines()]


# ---------------------------------------------------------------------------------------------
# the keys
# ---------------------------------------------------------------------------------------------


def test_the_config_keys_come_from_the_loop_table_and_are_checked(tmp_path):
    import dataclasses

    from olmocr_rl.errors import ConfigError
    from olmocr_rl.loops import LOOP_OPTIONS, LoopRule, rule_from
    from olmocr_rl.train.config import TrainConfig, engine_settings, load_config
    from olmocr_rl.train.keys import check_keys
    from olmocr_rl.train.options import options_table

    assert [f.name for f in dataclasses.fields(TrainConfig) if f.name.startswith("loop_")] == [o.name for o in LOOP_OPTIONS]
    listed = {key: (default, meaning) for key, _, default, meaning in options_table()}
    for o in LOOP_OPTIONS:
        assert listed[o.name] == (json.dumps(o.default), o.help)
    cfg = load_config(None, ["loop_max_period=8", "loop_min_span=100", "loop_min_repeats=3"], prepared_dir="p", model="m", output_dir="o")
    assert rule_from(cfg) == LoopRule(max_period=8, min_span=100, min_repeats=3) == engine_settings(cfg).loop_rule
    assert engine_settings(cfg, stop_loops=False).loop_rule is None  # the final outputs: an evaluation
    assert rule_from(load_config(None, ["loop_stop=false"], prepared_dir="p", model="m", output_dir="o")) is None
    assert TrainConfig().loop_stop is True and rule_from(TrainConfig()) == LoopRule()  # on by default in training
    for bad, says in (("loop_max_period=0", "loop_max_period must be between 1 and 4096"), ("loop_min_repeats=1", "loop_min_repeats must"),
                      ("loop_min_span=1", "loop_min_span must be at least 2")):  # fmt: skip
        with pytest.raises(ConfigError, match=says):
            load_config(None, ["loop_stop=false", bad], prepared_dir="p", model="m", output_dir="o")  # checked, stop on or off
    assert check_keys(None, ["loop_min_span=8", "loop_stop=false"]) is None
    with pytest.raises(ConfigError, match="unknown key 'loop_min_spam'.*loop_min_span"):
        check_keys(None, ["loop_min_spam=8"])


def test_the_plan_states_the_stop_rule():
    from olmocr_rl.loops import LoopRule, stop_line

    line = stop_line(LoopRule(max_period=8, min_span=100, min_repeats=20), 8000)
    assert line.startswith(
        "loop stop: on: a completion ends once it has " + LoopRule(max_period=8, min_span=100, min_repeats=20).describe()
    )
    assert "at most 160 tokens after the loop's start" in line and "max_completion_length (8,000)" in line  # max(100, 20 x 8)
    assert "never within max_completion_length 16" in stop_line(LoopRule(), 16)
    assert stop_line(None, 8000).startswith("loop stop: off (loop_stop=false)")


# ---------------------------------------------------------------------------------------------
# trl's transformers path
# ---------------------------------------------------------------------------------------------


def test_transformers_path_stops_cuts_and_scores_the_loop_continued(prepared, tiny_model, tmp_path, capsys):
    """Greedy, two pages of four completions: one page's loop is stopped by the stopping criterion at its
    cut (transformers pads the row after it), the trained batch ends exactly there (no pad, nothing
    after the cut in the loss), and the reward scores the loop continued to the limit: the very ids
    the run without the stop generated. The other page's completions (no loop under the rule) are the
    run without the stop's, token for token. The metrics reach logs/metrics.jsonl, the console, the run
    report and train_summary.json."""
    from olmocr_rl.loops import LoopRule
    from olmocr_rl.report.run import run_report

    rule = LoopRule(max_period=8, min_span=40, min_repeats=2)
    trainer, on, generated_on = trained(prepared, tiny_model, tmp_path / "on", *RULE, "progress=true")
    seen_on = list(SEEN[0])
    _, off, generated_off = trained(prepared, tiny_model, tmp_path / "off", "loop_stop=false")
    seen_off = list(SEEN[0])
    assert generated_on[0] == ["LoopStoppingCriteria"] and generated_off[0] == []  # the criterion reached generate
    full = generated_off[1:]
    loops = [rule.find(ids) for ids in full]
    assert sum(loop is not None for loop in loops) == 4 and all(len(ids) == 64 for ids in full)
    for ids, loop, raw in zip(full, loops, generated_on[1:]):
        if loop is not None:  # stopped in the engine: transformers padded the row after the cut
            assert loop.cut == 41 and raw == ids[: loop.cut] + [PAD] * (64 - loop.cut)
        else:
            assert raw == ids
    rows_on, rows_off = rows(on), rows(off)
    cuts = sorted(loop.cut if loop else 64 for loop in loops)
    assert sorted(n for _, n, _ in rows_on) == cuts and [n for _, n, _ in rows_off] == [64] * 8
    for ids, n, _ in rows_on:
        assert PAD not in ids and EOS not in ids and any(ids == f[:n] for f in full)  # only the policy's own tokens
    assert sorted(ids for ids, n, _ in rows_on if n == 64) == sorted(ids for ids, loop in zip(full, loops) if loop is None)
    # The rewards: each stopped completion as its loop continued to the limit, which is the real run's.
    assert sorted(seen_on) == sorted(seen_off) and all(len(ids) == 64 for _, ids in seen_on)

    (m_on,), (m_off,) = ([r for r in metrics(tmp_path / d) if "reward" in r] for d in ("on", "off"))
    stopped_tokens = 4 * 41
    assert (m_on["loops/stopped"], m_on["loops/stopped_ratio"], m_on["loops/decode_tokens_saved_max"]) == (4, 0.5, 4 * (64 - 41))
    assert m_on["loops/loop_token_share"] == pytest.approx(4 * 40 / (stopped_tokens + 4 * 64))
    assert m_on["completions/clipped_ratio"] == 1.0  # a cut completion has no end token: truncated, as at the limit
    assert m_on["reward"] == m_off["reward"] == 64.0
    assert not any(k.startswith("loops/") for k in m_off)
    assert "  loops 4  " in capsys.readouterr().err  # the console's step line (STEP_METRICS: loops/stopped)
    assert trainer.loops_run.as_dict() == {"completions": 8, "stopped": 4, "tokens": stopped_tokens + 4 * 64,
                                           "loop_tokens": 4 * 40, "saved": 4 * 23}  # fmt: skip

    summary = {d: json.loads((tmp_path / d / "train_summary.json").read_text())["loop_stop"] for d in ("on", "off")}
    assert summary["on"] == {"rule": rule.as_dict(), **trainer.loops_run.as_dict()} and summary["off"] == {"rule": None}
    html = run_report(tmp_path / "on").read_text()
    for key in ("loops/stopped", "loops/decode_tokens_saved_max", "loops/loop_token_share"):
        assert f'data-metric="{key}"' in html, key
    assert "on: " + rule.describe() in html and "loops: 4 of 8 completions stopped in a repetition loop; 92 decode tokens" in html
    off_html = run_report(tmp_path / "off").read_text()
    assert "off (loop_stop=false)" in off_html and 'data-metric="loops/stopped"' not in off_html


# ---------------------------------------------------------------------------------------------
# online filtering: its rounds generate and score through the same points
# ---------------------------------------------------------------------------------------------

LOOP = [5, 6] + [10, 11, 12] * 20  # a prefix, then a loop of period 3: cut at 2 + 12 = 14 by the rule below
PLAIN = [20, 21, 22, EOS]


def test_online_filtering_judges_the_projected_rewards(prepared, tiny_model, tmp_path, monkeypatch):
    """Sampling replaced (trl's `_generate_single_turn`, what every engine returns): in each group of
    four, two completions loop (returned as vLLM returns a stopped one: the cut, then the forced end
    token) and two end plainly. The reward (the tokens it is given) sees the loops continued to the
    limit (32), so every group has spread and is kept, and filtering's reward over everything generated
    is (32 + 32 + 4 + 4) / 4; the trained rows are cut (no forced token), and with
    `mask_truncated_completions` the stopped ones are masked as a completion at the limit would be."""
    from trl import GRPOTrainer

    from olmocr_rl.loops import LoopRule

    rule = LoopRule(max_period=4, min_span=12, min_repeats=2)
    loop = rule.find(LOOP)
    assert loop is not None and loop.cut == 14

    def sampled(self, prompt_ids, *args, **kwargs):
        return [LOOP[: loop.cut] + [EOS] if k % 4 < 2 else list(PLAIN) for k in range(len(prompt_ids))], None

    monkeypatch.setattr(GRPOTrainer, "_generate_single_turn", sampled)
    out = tmp_path / "run"
    _, batches, _ = trained(prepared, tiny_model, out, "loop_max_period=4", "loop_min_span=12", "loop_min_repeats=2",
                            "max_completion_length=32", "filter_groups=true", "mask_truncated_completions=true")  # fmt: skip
    (m,) = [r for r in metrics(out) if "filter/rounds" in r]
    assert (m["filter/rounds"], m["filter/groups_kept"]) == (1, 2) and m["filter/reward"] == (32 + 32 + 4 + 4) / 4
    assert (m["loops/stopped"], m["loops/decode_tokens_saved_max"]) == (4, 4 * (32 - 14))
    assert sorted(len(ids) for _, ids in SEEN[0]) == [4] * 4 + [32] * 4
    ids = [row for b in batches for row in b["completion_ids"]]
    masks = [sum(row) for b in batches for row in b["completion_mask"]]
    assert sorted(zip(masks, [tuple(r[: loop.cut]) if r[0] == 5 else tuple(r[:4]) for r in ids])) == sorted(
        [(0, tuple(LOOP[: loop.cut]))] * 4 + [(4, tuple(PLAIN))] * 4
    )  # the stopped rows cut at 14 (padded after by trl) and masked as truncated; the plain ones trained whole
    assert all(EOS not in r[: loop.cut] for r in ids if r[0] == 5)


# ---------------------------------------------------------------------------------------------
# trl's vLLM paths at their boundary (tests/test_vllm_boundary.py's stand-ins)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["colocate", "server"])
def test_vllm_engines_get_the_processor_and_every_request_the_switch(prepared, tiny_model, tmp_path, monkeypatch, mode):
    """The colocated engine is built with the logits processor (by name); every request carries the rule
    and the end token in `extra_args`, beside the placeholder suppression (colocated: SamplingParams;
    server: the request's generation_kwargs). Completions come back as vLLM returns them: a stopped one
    is the cut and the forced end token, whose processed logprob is 0.0. In the trained batch it ends at
    the cut, its sampling logprobs the engine's for the policy's tokens only; a plain one is whole."""
    import trl.generation.vllm_generation as vllm_generation
    from test_vllm_boundary import RecordingClient, RecordingLLM, _Obj, stand_in_vllm

    from olmocr_rl.loops import VLLM_PROCESSOR, LoopRule, rule_from_extra_args
    from olmocr_rl.modeling import load_processor

    rule = LoopRule(max_period=4, min_span=12, min_repeats=2)
    cut = rule.find(LOOP).cut
    outputs = [(LOOP[:cut] + [EOS], [-0.5] * cut + [0.0]), (PLAIN, [-0.25] * len(PLAIN))]

    class LoopingLLM(RecordingLLM):
        def generate(self, prompts, sampling_params=None, use_tqdm=False):
            self.calls.append(("generate", {"prompts": prompts, "sampling": sampling_params.kwargs}))
            made = [outputs[i % 2] for i in range(len(prompts))]
            return [_Obj(prompt_token_ids=p["prompt_token_ids"], outputs=[_Obj(token_ids=ids, logprobs=[{t: _Obj(rank=1, logprob=lp)}
                    for t, lp in zip(ids, lps)])]) for p, (ids, lps) in zip(prompts, made)]  # fmt: skip

    class LoopingClient(RecordingClient):
        def generate(self, prompts, features=None, n=1, **sampling):
            self.calls.append(("generate", {"prompts": prompts, "features": features, "n": n, **sampling}))
            made = [outputs[i % 2] for i in range(len(prompts) * n)]
            return {"prompt_ids": prompts, "completion_ids": [ids for ids, _ in made], "logprobs": [[[lp] for lp in lps] for _, lps in made],
                    "logprob_token_ids": [[[t] for t in ids] for ids, _ in made]}  # fmt: skip

    stand_in_vllm(monkeypatch, load_processor(str(tiny_model)).tokenizer)
    monkeypatch.setattr(vllm_generation, "LLM", LoopingLLM, raising=False)
    monkeypatch.setattr(vllm_generation, "VLLMClient", LoopingClient)
    out = tmp_path / "run"
    _, batches, _ = trained(prepared, tiny_model, out, "use_vllm=true", f"vllm_mode={mode}", "max_completion_length=32",
                            "loop_max_period=4", "loop_min_span=12", "loop_min_repeats=2", "per_device_train_batch_size=4")  # fmt: skip
    if mode == "colocate":
        init = next(c for name, c in LoopingLLM.calls if name == "init")
        assert init["logits_processors"] == [VLLM_PROCESSOR]
        sent = [c["sampling"] for name, c in LoopingLLM.calls if name == "generate"]
    else:
        sent = [c["generation_kwargs"] for name, c in LoopingClient.calls if name == "generate"]
    assert sent and all(rule_from_extra_args(s["extra_args"]) == (rule, EOS) and s["logit_bias"] for s in sent)
    trained_rows = rows(batches)
    assert sorted((tuple(ids), n, tuple(lp)) for ids, n, lp in trained_rows) == sorted(
        [(tuple(LOOP[:cut]), cut, (-0.5,) * cut)] * 2 + [(tuple(PLAIN), len(PLAIN), (-0.25,) * len(PLAIN))] * 2
    )  # the forced end token and its 0.0 logprob never reach the loss or the importance sampling correction
    (m,) = [r for r in metrics(out) if "reward" in r]
    assert m["loops/stopped"] == 2 and m["loops/decode_tokens_saved_max"] == 2 * (32 - cut)
    assert all(math.isfinite(m[f"sampling/importance_sampling_ratio/{k}"]) for k in ("min", "mean", "max"))
