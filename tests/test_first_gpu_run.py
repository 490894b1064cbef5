"""What the first GPU run needs settled before it starts (issue 25), checked on CPU: the plan
`--dry-run` prints for upstream's launch (7 training GPUs, vLLM on the 8th), the trl floor, and
the cost estimates (checkpoint disk, evaluation tokens) with the pre-flight warning they feed."""

from __future__ import annotations

import importlib
import json
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import need

need("trl")
from clirun import invoke

from olmocr_rl.train.budget import checkpoint_bytes, estimate
from olmocr_rl.train.config import TrainConfig, load_config
from olmocr_rl.train.shape import read_shape

EIGHT_GPUS = {"CUDA_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7"}


def test_upstreams_launch_dry_run_prints_what_the_run_will_do(prepared, tiny_model, tmp_path, monkeypatch):
    """`train PREP --config olmocr2 --num-processes 7 --zero 2 --vllm-gpus 1 --dry-run` on an 8-GPU
    node: the olmOCR v4 prompt's source, eval size and cost, checkpoint disk, both ports, the server
    with the run's seed and the processor bounds."""
    preflight = importlib.import_module("olmocr_rl.train.preflight")
    monkeypatch.setattr(preflight, "vllm_problems", lambda cuda, mode="colocate": [])  # a GPU machine with vLLM
    res = invoke(["train", str(prepared), "--config", "olmocr2", "--model", str(tiny_model), "-o", str(tmp_path / "run"),
                  "--num-processes", "7", "--zero", "2", "--vllm-gpus", "1", "--dry-run"], env=EIGHT_GPUS)  # fmt: skip
    # The fixtures' 3 pages fill no generation batch of 7 pages: trl would train 0 steps (issue 34, row 5).
    assert res.exit_code == 1 and "error: train_split: no optimizer step would run: 3 page(s)" in res.stderr, res.output
    out = res.stdout
    line = {w.split(":")[0]: w for w in out.splitlines() if w.split(":")[0] in ("prompt", "evaluation", "checkpoints", "ports", "server")}
    assert "olmocr-v4: olmOCR's build_no_anchoring_v4_yaml_prompt(), read from" in line["prompt"] and "before the image" in line["prompt"]
    # The fixtures hold 1 eval page (max_eval_pages caps at 10): 1 x 4 samples x 8,000 tokens.
    assert "evaluation: 1 pages (max_eval_pages) x 4 samples x up to 8,000 tokens = 32,000 tokens each" in line["evaluation"]
    shape = read_shape(str(tiny_model))
    assert f"~{(shape.params * 16 + shape.other_file_bytes) / 1e9:,.1f} GB each" in line["checkpoints"] and "GB free" in line["checkpoints"]
    assert line["ports"] == "ports: server 8000 (vllm_server_port), weight sync 51216 (trl.vllm_group_port)"
    server = line["server"]
    assert "CUDA_VISIBLE_DEVICES=7 " in server and "--seed 1" in server  # the recipe's seed
    assert '--mm-processor-kwargs \'{"min_pixels": 3136, "max_pixels": 12544}\'' in server  # the trainer processor's bounds
    command = next(w for w in out.splitlines() if w.startswith("command: "))
    assert "CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6 " in command and "--num_processes 7" in command and "ds_zero2.json" in command
    assert "--mixed_precision bf16" in command  # the recipe's bf16, though no config file exists yet
    assert "world size: 7" in out and "7 pages x 28 generations" in out


def test_the_trl_floor_is_a_one_line_error(prepared, tiny_model, tmp_path, monkeypatch):
    preflight = importlib.import_module("olmocr_rl.train.preflight")
    real = preflight._dist_version
    monkeypatch.setattr(preflight, "_dist_version", lambda name: "1.10.0" if name == "trl" else real(name))
    res = invoke(["train", str(prepared), "--model", str(tiny_model), "-o", str(tmp_path / "run"), "--dry-run"])
    assert res.exit_code == 1
    assert res.stderr.strip() == (
        "error: trl 1.10.0 is installed; olmocr-rl's trainer was read against trl 1.11 to 1.16 "
        "(olmocr_rl/train/trainer.py); pip install 'trl>=1.11.0,<1.17'"
    )
    monkeypatch.setattr(preflight, "_dist_version", lambda name: None if name == "trl" else real(name))
    assert (
        "error: trl is not installed; pip install 'olmocr-rl[train]' (trl>=1.11.0,<1.17)"
        in invoke(["train", str(prepared), "--model", str(tiny_model), "-o", str(tmp_path / "run"), "--dry-run"]).stderr
    )


def test_checkpoint_and_eval_estimates(tiny_model, tmp_path):
    shape = read_shape(str(tiny_model))
    from safetensors.torch import load_file

    assert shape.params == sum(t.numel() for t in load_file(tiny_model / "model.safetensors").values())
    cfg = TrainConfig(model=str(tiny_model), output_dir=str(tmp_path), max_steps=306, save_steps=25, save_total_limit=3,
                      eval_steps=50, max_completion_length=8000, num_generations_eval=4)  # fmt: skip
    # A 7.6 B model: 16 B a parameter under ZeRO (16-bit model, float32 master + moments, DeepSpeed's
    # 16-bit module copy), 12 without (float32 weights + moments), plus the processor's files.
    big = replace(shape, params=7_600_000_000)
    assert (checkpoint_bytes(cfg, big, deepspeed=True) - big.other_file_bytes) / 1e9 == pytest.approx(121.6)
    assert (checkpoint_bytes(cfg, big, deepspeed=False) - big.other_file_bytes) / 1e9 == pytest.approx(91.2)
    b = estimate(cfg, 7, train_pages=1000, eval_pages=10, deepspeed=True)
    assert (b.steps, b.written, b.on_disk, b.evaluations) == (306, 13, 4, 7)  # saves 25 .. 300 and 306; evals 50 .. 300, 306
    assert b.eval_tokens == 10 * 4 * 8000 and b.train_tokens == 306 * 196 * 8000
    cfg.save_total_limit = None
    assert estimate(cfg, 7, 1000, 10, deepspeed=True).on_disk == 13  # every checkpoint stays
    cfg.max_steps = -1
    assert estimate(cfg, 7, train_pages=700, eval_pages=10, deepspeed=True).steps == 100  # 700 pages / 7 a step
    assert estimate(cfg, 7, train_pages=706, eval_pages=10, deepspeed=True).steps == 100  # trl drops the 6 left over


def test_checkpoints_that_do_not_fit_warn_and_strict_stops(prepared, tiny_model, tmp_path, monkeypatch):
    budget = importlib.import_module("olmocr_rl.train.budget")
    monkeypatch.setattr(budget, "free_bytes", lambda path: 1_000)  # a nearly full disk
    args = ["train", str(prepared), "--model", str(tiny_model), "-o", str(tmp_path / "run"), "--dry-run", "save_total_limit=2",
            "max_steps=4", "save_steps=1"]  # fmt: skip
    res = invoke(args)
    assert (
        res.exit_code == 0 and "warning: save_total_limit: 3 checkpoints of" in res.stderr and "fix: set save_total_limit=N" in res.stderr
    )
    res = invoke([*args, "--strict"])
    assert res.exit_code == 1 and "error: save_total_limit: 3 checkpoints of" in res.stderr  # the limit + 1 while the newest is written


def test_the_recipe_bounds_eval_and_disk():
    cfg = load_config("olmocr2", prepared_dir="p", model="m", output_dir="o")
    assert (cfg.max_eval_pages, cfg.save_total_limit, cfg.final_outputs, cfg.prompt) == (10, 3, "none", "olmocr-v4")
    assert TrainConfig().max_eval_pages == 10  # upstream's --max_eval_samples default


def test_a_run_logs_where_its_step_time_goes_and_whether_the_weights_moved(prepared, tiny_model, tmp_path):
    """What the GPU check reads off a real `olmocr-rl train` run (and a user off any run): the step
    time split into generation, reward, forward/backward and the rest, peak memory, and whether the
    optimizer's weights moved (a run whose weights do not move is warned about)."""
    from training import RECIPE

    def run(out: Path, *extra: str):
        return invoke(["train", str(prepared), "--model", str(tiny_model), "-o", str(out), "--config", str(RECIPE), "progress=false",
                       "final_outputs=none", "eval_split=none", "save_steps=0", "report_to=[none]", *extra])  # fmt: skip

    res = run(tmp_path / "a", "rewards.medoid=1.0")  # medoid rewards differ within a group: non-zero advantages
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in (tmp_path / "a" / "logs" / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in rows if "time/step_s" in r]
    assert [r["step"] for r in steps] == [1, 2]
    for r in steps:
        parts = r["time/generation_s"] + r["time/reward_s"] + r["time/forward_backward_s"] + r["time/other_s"]
        assert r["time/generation_s"] > 0 and r["time/reward_s"] > 0 and r["time/forward_backward_s"] > 0
        assert parts == pytest.approx(r["time/step_s"], abs=0.01) and r["memory/peak_gib"] > 0
    moved = json.loads((tmp_path / "a" / "train_summary.json").read_text())["weights_moved"]
    assert moved["share"] > 0.5 and moved["elements_sampled"] > 10_000, moved
    res = run(tmp_path / "b", "learning_rate=0.0")  # nothing can move
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "b" / "train_summary.json").read_text())["weights_moved"]["share"] == 0.0
    assert "warning: training barely moved the weights: 0.0 %" in res.stderr
