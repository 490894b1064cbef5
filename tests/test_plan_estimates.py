"""The plan tells the truth before a GPU is rented (issue 34): memory per GPU by component for a
node described on the command line (from this machine, which has no GPU), the refusal of a plan
that cannot fit naming one that does, the disk peak as the Trainer writes it, the step count as trl
runs it, a hub id read from the local Hugging Face cache (from the hub without its weights:
tests/test_hub_plan.py), what a GPU node's plan runs (bf16, NCCL,
the server trl builds there), and the olmOCR 2 recipe's departures from upstream."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import need

need("trl")
torch = need("torch")
from clirun import invoke

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_memory import seven_b_folder

from olmocr_rl.train.budget import checkpoint_bytes, checkpoints_on_disk, checkpoints_written, estimate, training_steps
from olmocr_rl.train.config import TrainConfig, load_config
from olmocr_rl.train.shape import read_shape

NODE = ["--gpus", "8", "--gpu-memory", "80"]


@pytest.fixture(scope="module")
def seven_b(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("m7") / "olmOCR-2-7B-shaped"
    seven_b_folder(folder)
    return folder


def dry_run(prepared, model, out, *args, env=None):
    return invoke(["train", str(prepared), "--model", str(model), "-o", str(out), "--dry-run", *args], env=env)


def memory_block(stdout: str) -> list[str]:
    lines = stdout.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("memory per training GPU"))
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("  peak:"))
    return lines[start : end + 1]


def test_one_process_on_80gb_cards_is_refused_naming_a_plan_that_fits(prepared, seven_b, tmp_path):
    """docs/training.md's first real-run example on 80 GB cards: float32 weights, gradients and AdamW
    moments alone are ~16 B a parameter (133 GB for 8.3 B): refused, with the changes that fit."""
    assert not torch.cuda.is_available()  # the node is described, not this machine
    res = dry_run(prepared, seven_b, tmp_path / "run", *NODE, "--num-processes", "1")
    assert res.exit_code == 1, res.output
    assert (
        "world size: 1 (--num-processes 1: 7 of the 8 GPUs would sit idle; leave --num-processes out to train on every one)" in res.stdout
    )
    err = next(ln for ln in res.stderr.splitlines() if ln.startswith("error: memory:"))
    assert "the plan cannot fit" in err and "of 80.0 GiB per GPU" in err
    fix = res.stderr.split(err, 1)[1].strip().splitlines()[0]
    assert "--num-processes 8 --zero 2" in fix or "--num-processes 8 --zero 3" in fix, fix
    block = "\n".join(memory_block(res.stdout))
    from olmocr_rl.train.memory import trl_has_fused_loss

    loss = "loss (fused LM head)" if trl_has_fused_loss() else "loss logits"  # trl >= 1.15 tiles the LM head
    for part in ("weights", "optimizer", "gradients", "activations", "autocast copies", loss, "KV cache"):
        assert f"    {part} " in block, (part, block)
    assert "8.29 B parameters, 1 ranks, no ZeRO, bf16" in block


def test_upstreams_node_fits_and_plans_what_the_node_runs(prepared, seven_b, tmp_path):
    """7 training ranks, ZeRO-2, the server on the 8th GPU of an 8 x 80 GB node, planned here: it
    fits; the plan is the GPU node's (bf16, no gloo or use_cpu, the server command with the flag
    trl adds where vLLM >= 0.30 is installed, its bf16 weights)."""
    res = dry_run(prepared, seven_b, tmp_path / "run", "--config", "olmocr2", "--zero", "2", "--vllm-gpus", "1", *NODE, "--show-config")
    assert "error: memory" not in res.stderr and "warning: memory" not in res.stderr, res.stderr
    block = memory_block(res.stdout)
    assert "7 ranks, ZeRO-2, bf16" in block[0] and any("reference model" in ln for ln in block)
    peak = next(ln for ln in block if ln.startswith("  peak:"))
    assert "of 80.0 GiB" in peak
    grpo = json.loads(next(ln for ln in res.stdout.splitlines() if ln.startswith("trl.GRPOConfig: "))[len("trl.GRPOConfig: ") :])
    assert grpo["bf16"] is True and "ddp_backend" not in grpo and "use_cpu" not in grpo
    assert grpo["use_bias_correction_kl"] is False  # upstream's KL estimator
    server = next(ln for ln in res.stdout.splitlines() if ln.startswith("server: "))
    assert "--enable-scale-out --weight-transfer-config" in server and "--dtype bfloat16" in server
    assert "--mixed_precision bf16" in next(ln for ln in res.stdout.splitlines() if ln.startswith("command: "))
    # No vLLM in the environment `train` runs from (its launcher and server start from it) stops the
    # run wherever the plan is for (issue 49); a build that does not match this machine's is said of it.
    from olmocr_rl.train.preflight import vllm_distribution

    if vllm_distribution() is None:
        assert "error: use_vllm: vLLM is not installed\n  fix: pip install 'olmocr-rl[vllm]'" in res.stderr
        assert "  starts:     no: 2 errors (train_split, use_vllm; printed above)" in res.stdout.splitlines()
    else:
        assert "error: use_vllm" not in res.stderr
    # The fixtures' 3 pages fill no 7-page generation batch: trl would train 0 steps, silently.
    assert "error: train_split: no optimizer step would run: 3 page(s), and one generation batch takes 7" in res.stderr
    # The departures from upstream's runs, listed.
    deps = res.stdout.split("departures from upstream's olmOCR 2 runs", 1)[1]
    for what in ("bench reward: PR #462's short-output and PR #476's footnote guards", "evaluation:", "save_total_limit:", "vision placeholder tokens:",
                 "sampling seeds:", "front-matter reward:"):  # fmt: skip
        assert f"\n  {what}" in deps, what


def test_a_cpu_plan_says_it_is_one(prepared, tiny_model, tmp_path):
    res = dry_run(prepared, tiny_model, tmp_path / "run")
    assert "node: no GPU (a CPU plan)" in res.stdout and "memory: not estimated for a CPU plan" in res.stdout


def test_a_hub_id_in_the_local_cache_gets_the_folders_estimate(prepared, seven_b, tmp_path):
    """HF_HUB_OFFLINE=1: `--model allenai/olmOCR-2-7B-1025` found in the Hugging Face cache (the
    layout huggingface_hub writes) gets the estimate of the same files as a folder; a hub id the
    cache lacks is an error naming what to do."""
    cache = tmp_path / "hub"
    snap = cache / "models--allenai--olmOCR-2-7B-1025" / "snapshots" / ("0" * 40)
    snap.mkdir(parents=True)
    for f in seven_b.iterdir():
        os.symlink(f, snap / f.name)
    (cache / "models--allenai--olmOCR-2-7B-1025" / "refs").mkdir()
    (cache / "models--allenai--olmOCR-2-7B-1025" / "refs" / "main").write_text("0" * 40)
    env = {**os.environ, "HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "1"}

    def run(model: str) -> subprocess.CompletedProcess:
        cmd = [sys.executable, "-m", "olmocr_rl.cli", "train", str(prepared), "--model", model, "-o", str(tmp_path / "r"), "--dry-run",
               "--zero", "3", "--num-processes", "8", *NODE]  # fmt: skip
        return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)

    hub, folder = run("allenai/olmOCR-2-7B-1025"), run(str(seven_b))
    assert memory_block(hub.stdout) == memory_block(folder.stdout), hub.stdout + hub.stderr
    checkpoints = [next(ln for ln in r.stdout.splitlines() if ln.startswith("checkpoints: ")) for r in (hub, folder)]
    assert checkpoints[0] == checkpoints[1] and "GB each" in checkpoints[0]
    missing = run("allenai/not-downloaded")  # a model that is nowhere is an error, not a size note (olmocr_rl/model_ref.py)
    assert missing.returncode == 1 and missing.stdout == "", missing.stdout
    assert "not in the Hugging Face cache, and the hub was not asked (HF_HUB_OFFLINE is set)" in missing.stderr
    assert "hf download allenai/not-downloaded" in missing.stderr
    assert "to plan a run only, its config and processor config: hf download allenai/not-downloaded --include config.json" in missing.stderr


def test_the_disk_peak_of_the_recipe(seven_b, tmp_path):
    """olmOCR 2's 306 steps, a checkpoint every 25 and the newest 3 kept: the Trainer writes 13
    (12 and the last step's), 4 are on disk while the newest is written, and the final model."""
    cfg = load_config("olmocr2", ["max_steps=306"], prepared_dir="p", model=str(seven_b), output_dir=str(tmp_path))
    assert (checkpoints_written(cfg, 306), checkpoints_on_disk(cfg, 306)) == (13, 4)
    b = estimate(cfg, 7, train_pages=3000, eval_pages=10, deepspeed=True)
    shape = read_shape(str(seven_b))
    assert b.checkpoint_gb == pytest.approx((shape.params * 16 + shape.other_file_bytes) / 1e9)
    assert b.disk_gb == pytest.approx(4 * b.checkpoint_gb + (2 * shape.params + shape.other_file_bytes) / 1e9)
    assert "13 written" in b.lines()[0] and "at most 4 on disk at once" in b.lines()[0] and f"peak {b.disk_gb:,.0f} GB" in b.lines()[0]


def _train(prepared: Path, model: Path, out: Path, *overrides: str) -> dict:
    from training import RECIPE

    res = invoke(["train", str(prepared), "--model", str(model), "-o", str(out), "--config", str(RECIPE), "progress=false",
                  "final_outputs=none", "eval_split=none", "report_to=[none]", *overrides])  # fmt: skip
    assert res.exit_code == 0, res.output
    return json.loads((out / "train_summary.json").read_text())


@pytest.mark.parametrize(
    "overrides",
    [
        ["max_steps=-1", "num_train_epochs=1", "gradient_accumulation_steps=2", "per_device_train_batch_size=4", "num_generations=4"],
        ["max_steps=-1", "num_train_epochs=1", "gradient_accumulation_steps=2", "per_device_train_batch_size=4", "num_generations=4",
         "num_iterations=2"],
        ["max_steps=-1", "num_train_epochs=2", "gradient_accumulation_steps=1", "per_device_train_batch_size=8", "num_generations=4"],
    ],
    ids=["partial-batch-dropped", "num-iterations", "epochs"],
)  # fmt: skip
def test_steps_are_the_ones_trl_runs(overrides, prepared, tiny_model, tmp_path):
    """3 pages, 2 pages a generation batch: trl drops the third page, so 1 optimizer step an epoch
    (the old estimate rounded up to 2); num_iterations reuses a batch; epochs multiply."""
    summary = _train(prepared, tiny_model, tmp_path / "run", "save_steps=0", *overrides)
    from training import RECIPE

    cfg = load_config(RECIPE, overrides, prepared_dir=str(prepared), model=str(tiny_model), output_dir="o")
    assert summary["global_step"] == training_steps(cfg, 3, 1) > 0


def test_checkpoints_on_disk_are_the_estimate(prepared, tiny_model, tmp_path):
    """The size of each checkpoint folder the Trainer writes and how many it writes (every
    save_steps and the last step), against the estimate; the final model too."""
    out = tmp_path / "run"
    _train(prepared, tiny_model, out, "max_steps=3", "save_steps=2")
    written = sorted(p.name for p in out.glob("checkpoint-*"))
    cfg = TrainConfig(max_steps=3, save_steps=2, save_total_limit=None)
    assert written == ["checkpoint-2", "checkpoint-3"] and checkpoints_written(cfg, 3) == 2
    shape = read_shape(str(tiny_model))
    for name in written:
        size = sum(f.stat().st_size for f in (out / name).rglob("*") if f.is_file())
        est = checkpoint_bytes(cfg, shape, deepspeed=False)
        # Beyond the tensors: the scheduler, RNG and trainer state files and pickle framing (tens of KB).
        assert est <= size <= est + 96_000, (name, size, est)
    final = sum(f.stat().st_size for f in out.glob("*") if f.is_file() and f.suffix in (".safetensors",))
    assert abs(final - 4 * shape.params) < 64_000


def test_the_recipe_departures_are_the_docs_table():
    from olmocr_rl.recipes import departures_table

    docs = (Path(__file__).resolve().parents[1] / "docs" / "training.md").read_text()
    table = "\n".join(departures_table())
    assert table in docs, "docs/training.md must hold the table olmocr_rl/recipes DEPARTURES renders:\n" + table


def test_the_eos_reward_counts_the_tokenizers_end_token_as_upstream():
    from types import SimpleNamespace

    from olmocr_rl.reward_registry import RewardContext

    def ids(tokenizer_eos):
        processor = SimpleNamespace(tokenizer=SimpleNamespace(eos_token_id=tokenizer_eos))
        model = SimpleNamespace(generation_config=SimpleNamespace(eos_token_id=[151643, 151645]))
        return RewardContext("tests", processor=processor, model=model).eos_token_ids()

    assert ids(151645) == [151645]  # <|im_end|>, not the <|endoftext|> generation also stops at
    assert ids(None) == [151643, 151645]  # a tokenizer without one: the generation config's


def test_no_cuda_context_in_the_planning_process(monkeypatch):
    """Reading this machine's GPU memory goes through nvidia-smi: a CUDA context in the process that
    launches the ranks would hold memory on GPU 0 for the whole run."""
    from olmocr_rl.train import memory

    calls = []
    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/nvidia-smi" if name == "nvidia-smi" else None)

    class Done:
        returncode, stdout = 0, "0, GPU-aaa, 81559\n1, GPU-bbb, 81559\n2, GPU-ccc, 40960\n"

    monkeypatch.setattr(subprocess, "run", lambda *a, **k: calls.append(a) or Done())
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    assert memory.gpu_memory_here() == 81559 * 2**20
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-ccc")
    assert memory.gpu_memory_here() == 40960 * 2**20


def test_the_servers_share_must_hold_the_weights(prepared, seven_b, tmp_path):
    """--vllm-gpus: half a 24 GiB card cannot hold 8.3 B 16-bit weights (15.4 GiB); tensor parallel
    over 2 server GPUs can."""
    args = ["--config", "olmocr2", "--zero", "3", "--vllm-gpus", "1", "--gpus", "8", "--gpu-memory", "24"]
    res = dry_run(prepared, seven_b, tmp_path / "run", *args)
    assert (
        "error: vllm_server_gpu_memory_utilization: the server's share of its GPU (12.0 GiB) cannot hold the 16-bit weights (15.4 GiB)"
        in res.stderr
    )
    assert "memory per server GPU: vLLM takes 12.0 GiB" in res.stdout
    res = dry_run(prepared, seven_b, tmp_path / "run", *args[:4], "--vllm-gpus", "2", "--gpus", "8", "--gpu-memory", "24")
    assert "vllm_server_gpu_memory_utilization" not in res.stderr and "16-bit weights 7.7 GiB" in res.stdout, res.stdout


def test_colocated_sleep_mode_states_its_weight_pushes(prepared, seven_b, tmp_path):
    """Colocated vLLM with sleep mode: the plan says a step pushes the 16-bit weights once per
    generation round (trl re-pushes after each sleep), 1 + filter_extra_rounds with online filtering;
    without sleep mode it says nothing (one push a step, as trl always does)."""
    colocated = ["--num-processes", "8", "--zero", "3", "use_vllm=true", "vllm_mode=colocate", "vllm_gpu_memory_utilization=0.3", *NODE]
    res = dry_run(
        prepared, seven_b, tmp_path / "a", *colocated, "vllm_enable_sleep_mode=true", "filter_groups=true", "filter_extra_rounds=2"
    )
    line = next(ln for ln in res.stdout.splitlines() if ln.startswith("vLLM sleep mode: "))
    assert "up to 3 weight push(es) per generation batch into each rank's engine, 15.4 GiB of 16-bit weights each" in line
    assert "ZeRO-3 gathers every parameter for each" in line
    res = dry_run(prepared, seven_b, tmp_path / "b", *colocated)
    assert "vLLM sleep mode" not in res.stdout
