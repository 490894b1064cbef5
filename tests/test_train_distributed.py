"""`olmocr-rl train --num-processes 2 --zero 2|3` on CPU: the CLI hands the resolved config to
`accelerate launch` with the packaged DeepSpeed preset (or plain data parallelism without --zero);
two gloo ranks run GRPO steps with the tiny model and the bench reward, and save checkpoints
(ZeRO-2 also resumes).

The first DeepSpeed run on a machine JIT-builds its `deepspeed_shm_comm` op (~1-2 min on 2 cores);
it is cached in ~/.cache/olmocr-rl/torch_extensions (or $TORCH_EXTENSIONS_DIR) for later runs.
Deselect with `-m "not distributed"`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import need

need("trl")
need("deepspeed")
torch = need("torch")

from training import RECIPE

pytestmark = pytest.mark.distributed
CLI = str(Path(sys.executable).parent / "olmocr-rl")


def train(prepared: Path, model: Path, out: Path, *args: str) -> subprocess.CompletedProcess:
    cmd = [CLI, "train", str(prepared), "--model", str(model), "--output-dir", str(out), "--config", str(RECIPE),
           "--num-processes", "2", "progress=false", "final_outputs=none", *args]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"{' '.join(cmd)}\n--- stdout\n{proc.stdout[-4000:]}\n--- stderr\n{proc.stderr[-8000:]}"
    return proc


def ds_state(ckpt: Path) -> dict:
    step = (ckpt / "latest").read_text().strip()
    files = sorted(p.name for p in (ckpt / step).iterdir())
    model_states = next(p for p in (ckpt / step).iterdir() if p.name.endswith("model_states.pt"))
    state = torch.load(model_states, map_location="cpu", weights_only=False)
    return {"step": step, "files": files, "world": state["dp_world_size"],
            "stage": state["ds_config"]["zero_optimization"]["stage"]}  # fmt: skip


def bench_metrics(ckpt: Path) -> list[str]:
    history = json.loads((ckpt / "trainer_state.json").read_text())["log_history"]
    return sorted({k for h in history for k in h if k.startswith("bench/") and k.endswith("/pass_rate")})


def test_zero2_two_ranks_train_save_and_resume(prepared, tiny_model, tmp_path):
    out = tmp_path / "z2"
    train(prepared, tiny_model, out, "--zero", "2")
    ckpt = out / "checkpoint-2"
    state = ds_state(ckpt)
    assert state["step"] == "global_step2"
    assert (state["world"], state["stage"]) == (2, 2)
    # ZeRO-2 partitions the optimizer state: one shard per rank.
    assert [f for f in state["files"] if "optim_states" in f] == [
        "zero_pp_rank_0_mp_rank_00_optim_states.pt", "zero_pp_rank_1_mp_rank_00_optim_states.pt"]  # fmt: skip
    assert (ckpt / "rng_state_0.pth").is_file() and (ckpt / "rng_state_1.pth").is_file()
    assert (ckpt / "model.safetensors").is_file() and (out / "model.safetensors").is_file()
    assert "bench/present/pass_rate" in bench_metrics(ckpt)
    assert_checkpoint_as_estimated(ckpt, tiny_model, prepared, out, zero=2)

    train(prepared, tiny_model, out, "--zero", "2", "--resume", "auto", "max_steps=3", "save_steps=1")
    assert ds_state(out / "checkpoint-3")["step"] == "global_step3"
    history = json.loads((out / "checkpoint-3" / "trainer_state.json").read_text())["log_history"]
    assert [h["step"] for h in history if "loss" in h] == [1, 2, 3]  # steps 1-2 from the first run


def test_deepspeed_launcher_zero2_trains_saves_and_resumes(prepared, tiny_model, tmp_path):
    """`--launcher deepspeed`: the `deepspeed` launcher starts the ranks (each gets --local_rank)
    and the ZeRO-2 JSON preset configures the engine; then a user's own `deepspeed -m
    olmocr_rl.train ...` resumes the run, and its rank 0 writes the outputs."""
    from olmocr_rl.launch.launchers import deepspeed_config_file

    out = tmp_path / "ds"
    train(prepared, tiny_model, out, "--zero", "2", "--launcher", "deepspeed")
    state = ds_state(out / "checkpoint-2")
    assert (state["step"], state["world"], state["stage"]) == ("global_step2", 2, 2)
    saved = torch.load(next((out / "checkpoint-2" / "global_step2").glob("*model_states.pt")), map_location="cpu", weights_only=False)
    preset = json.loads(deepspeed_config_file(2).read_text())
    assert saved["ds_config"]["zero_optimization"] == preset["zero_optimization"]  # the JSON, not accelerate's defaults
    assert "bench/present/pass_rate" in bench_metrics(out / "checkpoint-2")

    cmd = [sys.executable, "-m", "deepspeed.launcher.runner", "--num_gpus", "2", "--master_port", str(_free_port()), "--module",
           "olmocr_rl.train", str(prepared), "--model", str(tiny_model), "-o", str(out), "--config", str(RECIPE), "--zero", "2",
           "--resume", "auto", "max_steps=3", "save_steps=1", "progress=false", "final_outputs=eval"]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"{proc.stdout[-4000:]}\n{proc.stderr[-8000:]}"
    assert ds_state(out / "checkpoint-3")["step"] == "global_step3"
    history = json.loads((out / "checkpoint-3" / "trainer_state.json").read_text())["log_history"]
    assert [h["step"] for h in history if "loss" in h] == [1, 2, 3]
    assert f"outputs: {out / 'outputs'}" in proc.stdout and any((out / "outputs").glob("*_repeat1.md"))


def _free_port() -> int:
    from olmocr_rl.launch.launchers import free_port

    return free_port()


def test_zero3_two_ranks_train_and_save(prepared, tiny_model, tmp_path):
    out = tmp_path / "z3"
    train(prepared, tiny_model, out, "--zero", "3")
    ckpt = out / "checkpoint-2"
    state = ds_state(ckpt)
    assert (state["world"], state["stage"]) == (2, 3)
    # ZeRO-3 partitions the parameters too.
    assert {"zero_pp_rank_0_mp_rank_00_model_states.pt", "zero_pp_rank_1_mp_rank_00_model_states.pt"} <= set(state["files"])
    # zero3_save_16bit_model: the saved model is whole (every tensor at full shape), not shards.
    from safetensors.torch import load_file

    saved, initial = load_file(out / "model.safetensors"), load_file(tiny_model / "model.safetensors")
    assert {k: v.shape for k, v in saved.items()} == {k: v.shape for k, v in initial.items()}
    assert any(not torch.equal(saved[k], initial[k]) for k in saved)  # and it trained
    assert "bench/present/pass_rate" in bench_metrics(ckpt)
    # Each rank loaded only its partition (the trainer's config, hence DeepSpeed's zero.Init, came
    # before from_pretrained): no rank held the whole model in host memory.
    assert json.loads((out / "train_summary.json").read_text())["zero3_partitioned_load"] is True
    # The checkpoint as the disk estimate counts it (olmocr_rl/train/budget.py): DeepSpeed's module
    # state holds only the partitioned parameters' placeholders under ZeRO-3.
    assert_checkpoint_as_estimated(ckpt, tiny_model, prepared, out, zero=3)


def assert_checkpoint_as_estimated(ckpt: Path, model: Path, prepared: Path, out: Path, zero: int) -> None:
    """The tensors a DeepSpeed checkpoint holds, as the disk estimate counts them (olmocr_rl/train/budget.py):
    AdamW's moments and the float32 master weights (12 bytes a parameter), transformers' model and,
    under ZeRO-1/2, DeepSpeed's copy of the module, both in the run's dtype (float32 on these CPU
    ranks: 20 bytes a parameter under ZeRO-2, 16 under ZeRO-3; with bf16 16 and 14)."""
    from olmocr_rl.train.budget import checkpoint_bytes
    from olmocr_rl.train.config import load_config
    from olmocr_rl.train.shape import read_shape

    shape = read_shape(str(model))
    held = checkpoint_tensor_bytes(ckpt)
    cfg = load_config(RECIPE, ["bf16=false"], prepared_dir=str(prepared), model=str(model), output_dir=str(out))
    estimate = checkpoint_bytes(cfg, shape, deepspeed=True, zero=zero) - shape.other_file_bytes
    assert held["module states"] == (0 if zero == 3 else 4 * shape.params), held
    assert held["model.safetensors"] == 4 * shape.params, held
    assert 12 * shape.params <= held["optimizer"] <= 12 * shape.params + 3 * 4 * 64, held  # DeepSpeed pads each rank's partition
    assert 0 <= sum(held.values()) - estimate <= 3 * 4 * 64, (held, estimate)


def checkpoint_tensor_bytes(ckpt: Path) -> dict[str, int]:
    """Bytes of the tensors a checkpoint holds (each storage of a file once): DeepSpeed's module
    states and optimizer files, transformers' model.safetensors."""
    from safetensors import safe_open

    def walk(obj, seen: dict[int, int]) -> dict[int, int]:
        if isinstance(obj, torch.Tensor):
            seen[obj.untyped_storage().data_ptr()] = obj.untyped_storage().nbytes()
        elif isinstance(obj, dict):
            for v in obj.values():
                walk(v, seen)
        elif isinstance(obj, (list, tuple)):
            for v in obj:
                walk(v, seen)
        return seen

    out = {"module states": 0, "optimizer": 0}
    for f in sorted((ckpt / (ckpt / "latest").read_text().strip()).glob("*.pt")):
        out["optimizer" if "optim_states" in f.name else "module states"] += sum(
            walk(torch.load(f, map_location="cpu", weights_only=False), {}).values()
        )
    with safe_open(ckpt / "model.safetensors", "pt") as f:
        out["model.safetensors"] = sum(f.get_tensor(k).numel() * f.get_tensor(k).element_size() for k in f.keys())
    return out
