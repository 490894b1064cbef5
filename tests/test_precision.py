"""Every launcher path trains float32 weights (issue 25, row 1). At olmOCR 2's learning rate of
2e-6, AdamW moves a weight by about 2e-6 a step; a bfloat16 weight of magnitude 0.01-0.1 cannot
move that little, so a model loaded in bf16 and updated directly barely trains, silently (a CPU
probe: 3.8 % of bf16 weights changed in 10 steps). A GPU run uses bf16; here the same code path
runs on CPU with `bf16=true` (CPU autocast) and the dtype the CUDA path picks: one GRPO step at
lr 2e-6, and the weights the optimizer owns (DeepSpeed: its float32 master partitions) must have
moved as a float32 update does: most of them, each by about the learning rate."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import need

need("trl")
torch = need("torch")

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_learning import make_bench, prepare

from olmocr_rl.train.config import TrainConfig, load_config
from olmocr_rl.train.model import training_dtype
from olmocr_rl.train.preflight import precision_problem

HERE = Path(__file__).resolve().parent
PROBE = [str(HERE / "precision_probe.py")]
STEP = [
    "num_generations=4", "gradient_accumulation_steps=1", "max_completion_length=8", "max_steps=1", "learning_rate=2.0e-6",
    "warmup_steps=0", "weight_decay=0.0", "dataloader_num_workers=0", "gradient_checkpointing=false", "final_outputs=none",
    "save_steps=0", "eval_split=none", "progress=false", "report_to=[none]", "log_completions=false",
    "write_failing_completions=false", "rewards={bench: 1.0}", "seed=0", "bf16=true",
]  # fmt: skip


def test_the_dtype_each_path_loads():
    """The plan: float32 wherever the optimizer updates the loaded weights itself."""
    import torch

    full, lora = TrainConfig(), TrainConfig(lora=True)
    assert training_dtype(full, bf16=True, deepspeed=False) == torch.float32  # one process, DDP: autocast
    assert training_dtype(full, bf16=True, deepspeed=True) == torch.bfloat16  # DeepSpeed keeps float32 masters
    assert training_dtype(lora, bf16=True, deepspeed=False) == torch.bfloat16  # frozen base; adapters float32
    assert training_dtype(full, bf16=False, deepspeed=True) == torch.float32
    half = TrainConfig(dtype="bfloat16")
    assert precision_problem(half, deepspeed=False).key == "dtype"
    assert precision_problem(half, deepspeed=True) is None and precision_problem(TrainConfig(dtype="bfloat16", lora=True), False) is None
    assert precision_problem(TrainConfig(), deepspeed=False) is None


@pytest.fixture(scope="module")
def two_pages(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("precision")
    pages = {("letter.pdf", 1): ["e"], ("sample_paper.pdf", 1): ["e", "a", "t"]}
    return prepare(make_bench(root / "bench", pages), root / "prep")


def probe(prepared: Path, model: Path, out: Path, world: int, zero: int | None, *extra: str) -> list[dict]:
    from olmocr_rl.launch.launchers import LaunchOptions, accelerate_argv, launch_env

    cfg = load_config(None, [*STEP, f"per_device_train_batch_size={8 // world}", *extra], prepared_dir=str(prepared), model=str(model),
                      output_dir=str(out))  # fmt: skip
    config = cfg.to_json(out / "train_config.json")
    if world == 1 and zero is None:
        cmd = [sys.executable, *PROBE, str(config)]
    else:
        cmd = accelerate_argv([*PROBE, str(config)], LaunchOptions(num_processes=world, zero=zero), mixed_precision="bf16")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=launch_env(world))
    assert proc.returncode == 0, f"{' '.join(cmd)}\n--- stderr\n{proc.stderr[-6000:]}"
    return [json.loads((out / f"precision_rank{r}.json").read_text()) for r in range(world)]


def assert_float32_update(records: list[dict], dtype: str = "float32") -> None:
    for r in records:
        # A float32 step moves nearly every weight that has a gradient (the tiny model's unused
        # token embeddings have none); a bf16 one about 4 %.
        assert r["moved"] > 0.6, r
        assert 0.5 < r["median_step_over_lr"] < 1.5, r
        assert r["dtype"] == dtype


def test_one_process_bf16_trains_float32_weights(two_pages, tiny_model, tmp_path):
    assert_float32_update(probe(two_pages, tiny_model, tmp_path / "one", 1, None))


def test_lora_trains_float32_adapters_over_a_bf16_base(two_pages, tiny_model, tmp_path):
    (record,) = probe(two_pages, tiny_model, tmp_path / "lora", 1, None, "lora=true", "lora_dropout=0.0")
    assert record["dtype"] == "float32" and 0.5 < record["median_step_over_lr"] < 1.5, record
    # LoRA's B starts at zero, so A gets no gradient in the first step: about half of it moves.
    assert record["moved"] > 0.3, record


@pytest.mark.distributed
@pytest.mark.parametrize("zero", [None, 2], ids=["ddp", "zero2"])
def test_two_ranks_bf16_train_float32_weights(zero, two_pages, tiny_model, tmp_path):
    if zero:
        need("deepspeed")
    assert_float32_update(probe(two_pages, tiny_model, tmp_path / "two", 2, zero))
