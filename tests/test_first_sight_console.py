"""What `train` prints (issue 49, "a start a user can read"), without training: the step lines
within their width, cut at exactly that width, their metrics abbreviated; the generation engine
named for each way a run generates. The real run's start block and step lines are checked in
tests/test_train.py (the `trained` fixture) and --quiet there too (test_resume_continues_from_the_checkpoint)."""

from __future__ import annotations

from types import SimpleNamespace

from rich.cells import cell_len

from olmocr_rl.train.console import engine_line, fit, step_lines

TYPES = ("absent", "baseline", "footnote", "format", "math", "order", "present", "table")


def test_step_lines_fit_their_width_exactly():
    logs = {"loss": -0.41912, "reward": 0.15911, "rewards/olmocr_bench/mean": 0.15911, "frac_reward_zero_std": 0.0,
            "completions/mean_length": 12.5, "learning_rate": 0.001, "time/step_s": 3.71, "bench/jsonl/a.jsonl/pass_rate": 0.5,
            **{f"bench/{t}/pass_rate": 1 / 3 for t in TYPES}}  # fmt: skip
    head, rates = step_lines(logs, 7, 200)
    assert head == "step 7/200  loss -0.4191  reward 0.1591  zero-std 0.00  len 12.5  lr 1.00e-03  s/step 3.7"
    assert rates.startswith("  pass rates: absent 0.33  baseline 0.33") and "jsonl" not in rates
    assert len(rates) == 100 and rates.endswith("…")  # 8 types: cut at the default width, 100
    for width in (len(head), len(head) - 1, 60):  # exactly fitting: whole; one less: cut
        lines = step_lines(logs, 7, 200, width=width)
        assert all(cell_len(line) <= width for line in lines)
        assert lines[0] == (head if width >= len(head) else head[: width - 1] + "…")
    assert fit("x" * 10, 10) == "x" * 10 and fit("x" * 11, 10) == "x" * 9 + "…"


def test_eval_logs_and_a_log_without_metrics():
    lines = step_lines({"eval_reward": 0.1429, "eval_bench/absent/pass_rate": 1, "eval_loss": 0.5, "bench/absent/pass_rate": 0}, 2, 2)
    assert lines == ["eval step 2/2  reward 0.1429", "  pass rates: absent 1.00"]
    assert step_lines({"train_runtime": 12.0, "epoch": 1.0}, 2, 2) == []  # the end-of-training summary: nothing
    assert step_lines({"loss": float("nan")}, 1, 2) == ["step 1/2  loss nan"]


def test_the_engine_is_named_for_each_way_of_generating():
    def plan(**cfg):
        base = {"use_vllm": False, "vllm_mode": "colocate", "vllm_server_host": "10.0.0.1", "vllm_server_port": 8000,
                "vllm_gpu_memory_utilization": 0.3}  # fmt: skip
        return SimpleNamespace(cfg=SimpleNamespace(**{**base, **cfg}), split=SimpleNamespace(server=["6", "7"]))

    assert engine_line(plan()) == "transformers' generate, in each training process"
    assert engine_line(plan(use_vllm=True)) == "vLLM colocated in each training process (0.3 of its GPU)"
    assert engine_line(plan(use_vllm=True, vllm_mode="server")) == "a vLLM server on GPU 6,7 at 10.0.0.1:8000"
