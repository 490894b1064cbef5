"""Each pre-flight check on its own (olmocr_rl/train/preflight.py CHECKS): what it flags, with its
key and fix, and that it is quiet on a good config. The checks run together in `preflight` (the
CLI's tests cover that path)."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from olmocr_rl.train.config import TrainConfig

pf = importlib.import_module("olmocr_rl.train.preflight")  # the package also exports a function of that name


def context(cfg: TrainConfig, world: int = 1, deepspeed: bool = False, cuda: bool | None = None) -> pf.Context:
    """The checks' context over the prepared folder read as a run reads it (once, before them)."""
    return pf.Context(cfg, world, pf.run_inputs(cfg), deepspeed, cuda)


def ctx(prepared: Path, world: int = 1, deepspeed: bool = False, **cfg) -> pf.Context:
    cfg = {"prepared_dir": str(prepared), "model": "m", "output_dir": str(prepared / "out"), **cfg}
    return context(TrainConfig(**cfg), world, deepspeed, cuda=False)


def keys(problems) -> list[str]:
    return [p.key for p in problems]


def test_every_check_is_named_and_run():
    assert {c.__name__ for c in pf.CHECKS} == {n for n in dir(pf) if n.startswith("check_")}


def test_the_checks_read_what_was_read_once(prepared, monkeypatch):
    """Pre-flight reads the prepared folder once, before the checks: none of them reads a file of it."""
    c = ctx(prepared)
    prepared_module = importlib.import_module("olmocr_rl.prepared")
    suite_module = importlib.import_module("olmocr_rl.suite")

    def no_reading(*args, **kwargs):
        raise AssertionError("a check read the prepared folder again")

    data_module = importlib.import_module("olmocr_rl.train.data")
    for name in ("read_manifest", "read_split", "numbered_rows"):
        monkeypatch.setattr(prepared_module, name, no_reading)
    for name in ("read_manifest", "read_split", "load_inputs"):
        monkeypatch.setattr(data_module, name, no_reading)
    monkeypatch.setattr(pf, "load_inputs", no_reading)
    monkeypatch.setattr(suite_module.BenchSuite, "load", no_reading)
    assert pf.errors([p for check in pf.CHECKS for p in check(c)]) == []


def test_check_model(prepared, tmp_path):
    (tmp_path / "model").mkdir()
    (tmp_path / "file").write_text("x")
    for model, said in [("/no/such/folder", "/no/such/folder: no such model folder (nothing named no in /)"), (tmp_path / "model", "not a model folder"),
                        (tmp_path / "file", "not a folder"), ("runs/grpo/checkpoint-5", "no such model folder")]:  # fmt: skip
        (p,) = pf.check_model(ctx(prepared, model=str(model)))
        assert p.key == "model" and said in p.message, p
    (tmp_path / "model" / "config.json").write_text("{}")
    for model in (tmp_path / "model", "allenai/olmOCR-2-7B-1025", "m"):
        assert pf.check_model(ctx(prepared, model=str(model))) == []


def test_check_precision(prepared):
    assert keys(pf.check_precision(ctx(prepared, dtype="bfloat16"))) == ["dtype"]
    assert pf.check_precision(ctx(prepared, dtype="bfloat16", deepspeed=True)) == []
    assert pf.check_precision(ctx(prepared)) == []


def test_check_batch(prepared):
    (p,) = pf.check_batch(ctx(prepared, world=3, num_generations=28, gradient_accumulation_steps=4))
    assert p.key == "num_generations" and "= 12 is not divisible by num_generations (28)" in p.message and "num_generations=" in p.fix
    assert keys(pf.check_batch(ctx(prepared, num_generations=1))) == ["num_generations"]
    assert pf.check_batch(ctx(prepared, world=7)) == []  # 7 x 1 x 28


def test_check_inputs(prepared, tmp_path):
    c = context(TrainConfig(prepared_dir=str(tmp_path), model="m", output_dir="o"))
    (p,) = pf.check_inputs(c)
    assert p.key == "prepared_dir" and "olmocr-rl prepare" in p.fix
    good = context(TrainConfig(prepared_dir=str(prepared), model="m", output_dir="o"))
    assert pf.check_inputs(good) == [] and len(good.train_rows) == 3 and len(good.eval_rows) == 1
    assert keys(pf.check_inputs(context(TrainConfig(prepared_dir=str(prepared), train_split="nope")))) == ["train_split"]


def test_check_disk(prepared, tiny_model, monkeypatch):
    budget = importlib.import_module("olmocr_rl.train.budget")
    monkeypatch.setattr(budget, "free_bytes", lambda path: 10)
    c = ctx(prepared, max_steps=4, save_steps=1, save_total_limit=2)
    c.cfg.model = str(Path(__file__).parent)  # no weights there: size unknown, nothing to warn about
    assert pf.check_disk(c) == []
    c.cfg.model = str(tiny_model)
    (p,) = pf.check_disk(c)
    assert p.key == "save_total_limit" and p.severity == "warning" and "3 checkpoints of" in p.message and "the final model" in p.message


def test_check_batch_reads_trls_generation_batch_size(prepared):
    """trl.generation_batch_size sets the generation batch (trl's GRPOConfig requires it divisible by
    num_generations): 24 with 8 generations passes where per-device x accumulation (2 x 2 = 4) would
    not divide; 20 is refused naming that key, not gradient_accumulation_steps."""
    base = {"num_generations": 8, "per_device_train_batch_size": 2, "gradient_accumulation_steps": 2}
    assert pf.check_batch(ctx(prepared, **base, trl={"generation_batch_size": 24})) == []
    (p,) = pf.check_batch(ctx(prepared, **base, trl={"generation_batch_size": 20}))
    assert p.key == "num_generations" and "trl.generation_batch_size (20)" in p.message and "multiple of 8" in p.fix
    assert keys(pf.check_batch(ctx(prepared, **base))) == ["num_generations"]  # 4 completions, 8 generations


def test_check_eval_batch(prepared):
    (p,) = pf.check_eval_batch(ctx(prepared, world=2, per_device_eval_batch_size=3, num_generations_eval=4))
    assert p.key == "per_device_eval_batch_size" and "multiple of 2" in p.fix
    assert pf.check_eval_batch(ctx(prepared, per_device_eval_batch_size=4, num_generations_eval=4)) == []


def test_check_rewards(prepared):
    assert keys(pf.check_rewards(ctx(prepared, rewards={"bench": 0.0}))) == ["rewards"]
    (p,) = pf.check_rewards(ctx(prepared, rewards={"eos": 1.0}))
    assert p.severity == "warning" and "no bench reward" in p.message
    assert keys(pf.check_rewards(ctx(prepared, rewards={"bench": 1.0, "edit-distance": 1.0}))) == ["rewards.edit-distance"]
    assert keys(pf.check_rewards(ctx(prepared, rewards={"bench": 1.0, "no_such_module:fn": 1.0}))) == ["rewards.no_such_module:fn"]
    assert pf.check_rewards(ctx(prepared)) == []


def test_check_prompt(prepared, monkeypatch):
    (p,) = pf.check_prompt(ctx(prepared, max_prompt_tokens=30))
    assert p.key == "max_prompt_tokens" and "page(s) need more than max_prompt_tokens=30" in p.message
    monkeypatch.setenv("OLMOCR_RL_OLMOCR_PROMPTS", str(Path(prepared) / "missing.py"))
    assert keys(pf.check_prompt(ctx(prepared, prompt="olmocr-v4"))) == ["prompt"]
    assert pf.check_prompt(ctx(prepared)) == []


def test_check_prompt_counts_the_models_own_image_tokens(prepared, tiny_family):
    """A Qwen3-VL's pages are its processor's 32-pixel tokens (counted here by the real processor),
    not the 28-pixel ones prepare once baked in; a run's max_pixels lowers them; a model whose
    processor config cannot be read is estimated with Qwen2.5-VL's, and the problem says so."""
    from PIL import Image

    from olmocr_rl.image_tokens import QWEN2_5_VL
    from olmocr_rl.modeling import load_processor
    from olmocr_rl.prepared import read_split
    from olmocr_rl.train.memory import estimate_prompt_tokens

    qwen3 = str(tiny_family("qwen3_vl"))
    rows = read_split(prepared, "train") + read_split(prepared, "eval")

    def worst(max_pixels=None, tokens=None) -> int:
        processor = load_processor(qwen3, max_pixels=max_pixels)
        count = tokens or (
            lambda r: (
                int((processor.image_processor(images=[Image.new("RGB", (r["width"], r["height"]))])["image_grid_thw"][0]).prod()) // 4
            )
        )
        return max(estimate_prompt_tokens(r["prompt"], count(r)) for r in rows)

    own, small, qwen25 = worst(), worst(max_pixels=64 * 64), worst(tokens=lambda r: QWEN2_5_VL.tokens(r["width"], r["height"]))
    assert small < own < qwen25
    assert pf.check_prompt(ctx(prepared, model=qwen3, max_prompt_tokens=own)) == []
    (p,) = pf.check_prompt(ctx(prepared, model=qwen3, max_prompt_tokens=own - 1))
    assert f"about {own} = image + instruction; image tokens at 32 px a token" in p.message
    assert pf.check_prompt(ctx(prepared, model=qwen3, max_prompt_tokens=own - 1, max_pixels=64 * 64)) == []
    (p,) = pf.check_prompt(ctx(prepared, model="m", max_prompt_tokens=own))
    assert f"about {qwen25} =" in p.message and "estimated with Qwen2.5-VL's processor: m: no image processor config" in p.message


def test_check_generation(prepared, monkeypatch):
    monkeypatch.setattr(pf, "vllm_problems", lambda cuda, mode="colocate": [])
    assert keys(pf.check_generation(ctx(prepared, world=4, use_vllm=True, vllm_tensor_parallel_size=3))) == ["vllm_tensor_parallel_size"]
    (p,) = pf.check_generation(ctx(prepared, use_vllm=True, vllm_mode="server"))
    assert p.key == "vllm_server_host" and p.severity == "warning"
    assert pf.check_generation(ctx(prepared)) == []  # no vLLM, nothing to check


def test_check_packages(prepared, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name in ("peft", "wandb") else real(name, *a))
    assert keys(pf.check_packages(ctx(prepared, lora=True, report_to=["wandb"]))) == ["lora", "report_to"]
    assert keys(pf.check_packages(ctx(prepared, lora=True, lora_target_modules=[]))) == ["lora", "lora_target_modules"]


def test_check_resume(prepared, tmp_path):
    (p,) = pf.check_resume(ctx(prepared, resume="auto", output_dir=str(tmp_path)))
    assert p.key == "resume" and p.severity == "warning"
    (tmp_path / "checkpoint-2").mkdir()
    assert pf.check_resume(ctx(prepared, resume="auto", output_dir=str(tmp_path))) == []


def test_check_steps(prepared):
    """3 training pages: 7 ranks x 1 x 28 completions / 28 generations = 7 pages a generation batch,
    which trl drops unfilled (0 steps); one rank needs 1 page a batch."""
    (p,) = pf.check_steps(ctx(prepared, world=7, num_generations=28, gradient_accumulation_steps=28, per_device_train_batch_size=1))
    assert p.key == "train_split" and "no optimizer step would run: 3 page(s)" in p.message and "takes 7" in p.message
    assert pf.check_steps(ctx(prepared, world=1, num_generations=28, gradient_accumulation_steps=28, per_device_train_batch_size=1)) == []
    # max_train_pages counts: 1 page of a 2-page batch trains nothing.
    assert keys(pf.check_steps(ctx(prepared, num_generations=4, per_device_train_batch_size=8, max_train_pages=1))) == ["train_split"]


def test_check_memory(prepared, tiny_model, monkeypatch):
    """Only a GPU plan is checked: an estimate over the card is an error naming single changes that
    fit, one over 90 % of it a warning, a model whose weights cannot be read a warning. (The
    estimate itself: tests/test_memory.py; here one that ZeRO shrinks to 10 GiB.)"""
    from olmocr_rl.train import memory

    gib = 2**30

    def check(card: float | None, peak: float, model=tiny_model):
        fake = lambda cfg, shape, layout, tokens: memory.Memory(
            [memory.Part("weights", int((peak if layout.zero is None else 10) * gib), "")], layout.gpu_bytes
        )
        monkeypatch.setattr(memory, "estimate_memory", fake)
        c = ctx(prepared, model=str(model))
        c.target = memory.Target(8, None if card is None else int(card * gib), described=True)
        return pf.check_memory(c)

    assert pf.check_memory(ctx(prepared, model=str(tiny_model))) == []  # no target: a CPU plan
    assert check(None, 500) == [] and check(80, 50) == []
    (p,) = check(80, 75)  # over 90 % of the 79 GiB left beside the CUDA context
    assert (p.key, p.severity) == ("memory", "warning") and "near the card's limit: 75.0 GiB of 80.0 GiB" in p.message
    (p,) = check(80, 100)
    assert (p.key, p.severity) == ("memory", "error") and "the plan cannot fit: 100.0 GiB of 80.0 GiB per GPU" in p.message
    assert p.fix.startswith("one change that fits: --zero 1 (10.0 GiB); or --zero 2 (10.0 GiB); or --zero 3 (10.0 GiB)"), p.fix
    (p,) = check(80, 100, model="no/such-model")
    assert (p.key, p.severity) == ("model", "warning") and "GPU memory not estimated" in p.message


@pytest.mark.parametrize("check", [c.__name__ for c in pf.CHECKS])
def test_each_check_has_its_own_test(check):
    assert f"def test_{check}(" in Path(__file__).read_text()
