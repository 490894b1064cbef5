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
from dataclasses import replace
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


# ---------------------------------------------------------------------------------------------
# the estimates' arithmetic against the libraries' own (issue 50): inputs that do not divide,
# thresholds away from their defaults, every figure a Budget promises
# ---------------------------------------------------------------------------------------------


def trl_steps(pages, *, per_device, world, accumulation, generations, iterations=1, epochs=1.0, max_steps=-1, spg=None, gbs=None):
    """The optimizer steps of a run as trl and transformers count them, from their own code: trl's
    GRPOConfig rule for steps_per_generation (grpo_config.py `__post_init__`), trl's RepeatSampler and
    train dataloader batch (grpo_trainer.py `_get_train_sampler`, `get_train_dataloader`: per_device x
    steps_per_generation), accelerate's sharding over the ranks, transformers'
    `set_initial_training_values`; 0 where the dataloader is empty (the epoch loop runs nothing)."""
    from types import SimpleNamespace

    from accelerate.data_loader import BatchSamplerShard
    from torch.utils.data import BatchSampler
    from transformers import Trainer
    from trl.trainer.utils import RepeatSampler

    if spg is None:
        spg = gbs // (per_device * world) if gbs else accumulation
    generation_batch = per_device * world * spg
    assert generation_batch % generations == 0  # trl refuses anything else
    sampler = RepeatSampler(list(range(pages)), mini_repeat_count=generations, batch_size=generation_batch // generations,
                            repeat_count=iterations * spg)  # fmt: skip
    batches = list(BatchSamplerShard(BatchSampler(sampler, per_device * spg, drop_last=False), num_processes=world, process_index=0))
    if not batches:
        return 0
    args = SimpleNamespace(max_steps=max_steps, gradient_accumulation_steps=accumulation, num_train_epochs=epochs)
    trainer = SimpleNamespace(get_total_train_batch_size=lambda a: 0, get_sp_size=lambda: 1, num_examples=lambda d: len(d))
    return Trainer.set_initial_training_values(trainer, args, batches)[-1]


STEP_CASES = {  # pages, per_device, world, accumulation, generations, and the rest
    "accumulation-rounds-up": dict(pages=7, per_device=2, world=1, accumulation=2, generations=3, spg=3),
    "pages-left-over": dict(pages=23, per_device=2, world=3, accumulation=3, generations=6, iterations=1),
    "iterations-and-fractional-epochs": dict(pages=11, per_device=3, world=2, accumulation=4, generations=6, iterations=3, epochs=1.3),
    "generation-batch-size": dict(pages=10, per_device=2, world=2, accumulation=5, generations=8, gbs=24, epochs=1.3),
    "max-steps": dict(pages=9, per_device=1, world=2, accumulation=3, generations=2, max_steps=7),
    "max-steps-one": dict(pages=9, per_device=1, world=2, accumulation=3, generations=2, max_steps=1),
    "one-page-a-generation-batch": dict(pages=3, per_device=1, world=2, accumulation=1, generations=2),
    "generation-batch-of-one-step": dict(pages=10, per_device=2, world=2, accumulation=3, generations=4, gbs=4),
    "max-steps-but-no-batch": dict(pages=2, per_device=1, world=2, accumulation=3, generations=2, max_steps=7),
    "fewer-pages-than-a-batch": dict(pages=5, per_device=4, world=2, accumulation=3, generations=4),
}


@pytest.mark.parametrize("case", list(STEP_CASES))
def test_step_counts_that_do_not_divide_are_trls(case):
    """training_steps against trl's sampler and transformers' step rule where nothing divides: the
    last partial group of pages dropped, micro-steps not a multiple of the accumulation, fractional
    epochs, trl.generation_batch_size instead of steps_per_generation, max_steps with and without a
    batch to run."""
    c = dict(STEP_CASES[case])
    pages, world = c.pop("pages"), c["world"]
    cfg = TrainConfig(per_device_train_batch_size=c["per_device"], gradient_accumulation_steps=c["accumulation"],
                      num_generations=c["generations"], num_iterations=c.get("iterations", 1), num_train_epochs=c.get("epochs", 1.0),
                      max_steps=c.get("max_steps", -1), steps_per_generation=c.get("spg"),
                      trl={"generation_batch_size": c["gbs"]} if "gbs" in c else {})  # fmt: skip
    expected = trl_steps(pages, **c)
    assert training_steps(cfg, pages, world) == expected
    assert (expected > 0) == (case not in ("max-steps-but-no-batch", "fewer-pages-than-a-batch"))
    from olmocr_rl.train.budget import pages_per_generation, steps_per_generation

    spg = c.get("spg") or (c["gbs"] // (c["per_device"] * world) if "gbs" in c else c["accumulation"])
    assert steps_per_generation(cfg, world) == spg and type(steps_per_generation(cfg, world)) is int
    pages_per = pages_per_generation(cfg, world)  # the pre-flight error names it: an int ("takes 7", not 7.0)
    assert pages_per == c["per_device"] * world * spg // c["generations"] and type(pages_per) is int


def test_max_steps_zero_is_one_step_as_the_trainer_runs_it():
    """max_steps=0 is not "count the epochs" (only a negative max_steps is: `set_initial_training_values`'
    `epoch_based = max_steps < 0`) and not "no step" either: the Trainer checks `global_step >=
    max_steps` only after an optimizer step (`DefaultFlowCallback.on_step_end`), so it runs one.
    transformers' own Trainer on a dataloader of the same 8 micro-steps (accumulation 2: 4 steps by
    the epoch), against the plan's count; -1 counts the epoch."""
    import tempfile

    from torch import nn
    from transformers import Trainer, TrainingArguments

    class Line(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(2, 1)

        def forward(self, x, labels=None):
            return {"loss": ((self.lin(x).squeeze(-1) - labels) ** 2).mean()}

    # 4 pages of 2 generations, 1 completion a micro-step, 2 micro-steps a generation batch: 8 micro-steps.
    cfg = TrainConfig(per_device_train_batch_size=1, gradient_accumulation_steps=2, num_generations=2, max_steps=0)
    rows = [{"x": torch.zeros(2), "labels": torch.tensor(0.0)} for _ in range(8)]
    with tempfile.TemporaryDirectory() as out:
        args = TrainingArguments(out, max_steps=0, per_device_train_batch_size=1, gradient_accumulation_steps=2, num_train_epochs=1,
                                 report_to=[], save_strategy="no", use_cpu=True, disable_tqdm=True, logging_strategy="no")  # fmt: skip
        trainer = Trainer(Line(), args, train_dataset=rows)
        trainer.train()
    assert trainer.state.global_step == 1
    assert training_steps(cfg, 4, 1) == 1
    assert training_steps(replace(cfg, max_steps=-1), 4, 1) == 4 and training_steps(replace(cfg, max_steps=-3), 4, 1) == 4
    assert training_steps(replace(cfg, max_steps=0), 0, 1) == 0  # no page: the loop runs nothing


def test_a_generation_batch_smaller_than_a_group_trains_nothing():
    """1 completion a generation batch, 4 a page: no page fits (trl refuses the config; pre-flight
    says no optimizer step would run), 0 steps whatever max_steps says, and no division by zero."""
    cfg = TrainConfig(per_device_train_batch_size=1, gradient_accumulation_steps=1, num_generations=4)
    assert training_steps(cfg, 100, 1) == 0 and training_steps(replace(cfg, max_steps=5), 100, 1) == 0


@pytest.mark.parametrize(
    "accumulation, spg, gbs, iterations, steps, expected",
    [(2, 3, None, 3, 7, 2), (5, None, 18, 1, 4, 7)],
    ids=["iterations-3-of-3-steps", "generation-batch-size"],
)  # fmt: skip
def test_training_tokens_are_the_generations_trl_starts(accumulation, spg, gbs, iterations, steps, expected):
    """trl generates a generation batch when its micro-step counter is a multiple of
    steps_per_generation x num_iterations (grpo_trainer.py `_prepare_inputs`); an optimizer step is
    gradient_accumulation_steps micro-steps: counted here by walking the micro-steps, where
    nothing divides (num_iterations 3 and steps_per_generation 3 of an accumulation of 2; 3 steps a
    generation from trl.generation_batch_size 18 of 2 per device x 3 ranks, accumulation 5)."""
    cfg = TrainConfig(per_device_train_batch_size=2, gradient_accumulation_steps=accumulation, steps_per_generation=spg, num_generations=3,
                      num_iterations=iterations, max_steps=steps, max_completion_length=100, eval_steps=0,
                      trl={"generation_batch_size": gbs} if gbs else {})  # fmt: skip
    b = estimate(cfg, 3, train_pages=50, eval_pages=0, deepspeed=False, shape=_shape())
    per_generation = spg or gbs // (2 * 3)
    generations = sum(1 for step in range(steps * accumulation) if step % (per_generation * iterations) == 0)
    assert b.steps == steps and generations == expected
    assert b.train_tokens == generations * (2 * 3 * per_generation) * 100


def _shape(params=1000, other=7):
    from olmocr_rl.train.shape import ModelShape

    return ModelShape(folder=Path("."), params=params, vision_params=0, text=None, vision=None, vocab=0, merge=4, weight_file_bytes=0,
                      other_file_bytes=other, largest=0, linear_in_out={"q_proj": 30, "v_proj": 50, "o_proj": 999})  # fmt: skip


@pytest.mark.parametrize(
    "deepspeed, zero, bf16, per_param, weight",
    [
        (False, None, True, 4 + 8, 4),  # float32 weights, AdamW's two float32 moments
        (False, None, False, 4 + 8, 4),
        (True, None, True, 2 + 12 + 2, 2),  # 16-bit weights, master weights + moments, DeepSpeed's module copy
        (True, 2, None, 2 + 12 + 2, 2),  # bf16 unresolved: planned for a GPU, where it is on
        (True, 3, True, 2 + 12, 2),  # ZeRO-3's module state holds placeholders
        (True, 2, False, 4 + 12 + 4, 4),  # a float32 DeepSpeed run
        (True, 3, False, 4 + 12, 4),
    ],
)  # fmt: skip
def test_checkpoint_bytes_by_precision_and_zero_stage(deepspeed, zero, bf16, per_param, weight):
    """The bytes a parameter takes in a checkpoint folder and in the saved model, every precision
    and ZeRO stage (the module docstring's figures); the folder's other files once each."""
    from olmocr_rl.train.budget import model_bytes

    cfg, shape = TrainConfig(bf16=bf16), _shape()
    assert checkpoint_bytes(cfg, shape, deepspeed=deepspeed, zero=zero) == 1000 * per_param + 7
    assert model_bytes(cfg, shape, deepspeed=deepspeed) == 1000 * weight


@pytest.mark.parametrize("deepspeed, zero", [(False, None), (True, 2), (True, 3)])
def test_a_lora_checkpoint_is_the_adapter_and_its_moments(deepspeed, zero):
    """LoRA: r x (in + out) parameters on each targeted module (peft's A and B), float32, AdamW's two
    moments, whatever the precision or stage."""
    from olmocr_rl.train.budget import model_bytes

    cfg = TrainConfig(lora=True, lora_r=4, lora_target_modules=["q_proj", "v_proj"], bf16=True)
    adapter = 4 * (30 + 50)
    assert model_bytes(cfg, _shape(), deepspeed=deepspeed) == 4 * adapter
    assert checkpoint_bytes(cfg, _shape(), deepspeed=deepspeed, zero=zero) == 12 * adapter + 7


def _trainer_steps(steps: int, every: int) -> list[int]:
    """The steps transformers' DefaultFlowCallback saves (or evaluates) at with an interval: each
    multiple of `every`, and the last step."""
    return [s for s in range(1, steps + 1) if s % every == 0 or s == steps]


@pytest.mark.parametrize("steps, save_steps, limit", [(10, 4, 1), (8, 4, 1), (10, 4, None), (10, 3, 5), (1, 7, 2), (7, 7, 0)])
def test_checkpoints_written_and_on_disk_away_from_the_defaults(steps, save_steps, limit):
    """Every save_steps and the last step (a last step that is a multiple saves once); at most
    save_total_limit + 1 on disk at once; none without save_steps or steps."""
    cfg = TrainConfig(save_steps=save_steps, save_total_limit=limit)
    assert checkpoints_written(replace(cfg, save_steps=1), steps) == steps  # a checkpoint every step
    written = len(_trainer_steps(steps, save_steps))
    assert checkpoints_written(cfg, steps) == written
    assert checkpoints_on_disk(cfg, steps) == (written if limit is None else min(written, limit + 1))
    assert checkpoints_written(cfg, 0) == checkpoints_on_disk(cfg, 0) == 0
    assert checkpoints_written(TrainConfig(save_steps=0), steps) == 0


def test_every_figure_of_the_estimate(tmp_path, monkeypatch):
    """estimate's Budget, each field and line: 10 steps (trl's count), a checkpoint every 4 (3
    written, 2 on disk with save_total_limit 1), an evaluation every 4 and at the last step and at the
    start, the completion tokens of training (num_iterations reuses them) and of one evaluation."""
    cfg = TrainConfig(per_device_train_batch_size=3, gradient_accumulation_steps=2, num_generations=3, num_iterations=2, max_steps=10,
                      save_steps=4, save_total_limit=1, eval_steps=4, eval_on_start=True, num_generations_eval=5,
                      max_completion_length=1001, bf16=True, output_dir=str(tmp_path / "not" / "yet"))  # fmt: skip
    asked = []
    real_usage = shutil.disk_usage
    monkeypatch.setattr(shutil, "disk_usage", lambda p: asked.append(Path(p)) or real_usage(p)._replace(free=123_456_789_000))
    b = estimate(cfg, 2, train_pages=40, eval_pages=6, deepspeed=True, shape=_shape(params=10**9, other=3 * 10**8), zero=3)
    assert b.steps == 10 and (b.written, b.on_disk) == (3, 2) and b.unknown is None
    assert b.checkpoint_gb == 14.3 and b.final_gb == 2.3  # GB: 1e9 bytes
    assert b.disk_gb == 2 * 14.3 + 2.3
    assert b.free_gb == 123.456789 and asked == [tmp_path.resolve()]  # the nearest folder that exists
    assert b.train_tokens == 10 * 3 * 2 * 2 // 2 * 1001  # completions an optimizer step trains on, once per iteration
    assert (b.eval_pages, b.eval_samples, b.completion_tokens) == (6, 5, 1001) and b.eval_tokens == 6 * 5 * 1001
    assert b.evaluations == len(_trainer_steps(10, 4)) + 1 == 4
    checkpoints, evaluation, training = b.lines()
    assert checkpoints.startswith(f"checkpoints: 3 written, ~{b.checkpoint_gb:,.1f} GB each, at most 2 on disk at once ")
    assert f"the final model 2.3 GB = peak {b.disk_gb:,.0f} GB; {b.free_gb:,.0f} GB free on the output folder's disk" in checkpoints
    share = 100 * 4 * b.eval_tokens / (4 * b.eval_tokens + b.train_tokens)
    assert evaluation == (f"evaluation: 6 pages (max_eval_pages) x 5 samples x up to 1,001 tokens = {6 * 5 * 1001:,} tokens each, "
                          f"4 evaluations; {share:.1f} % of all generation")  # fmt: skip
    assert training == f"training: 10 optimizer steps (as trl counts them), up to {b.train_tokens:,} completion tokens"


def test_a_hub_ids_shape_is_fetched_unless_told_not_to(monkeypatch):
    """estimate reads the model's shape from the hub by default (the planning command); `fetch=False`
    (a training rank) reads the cache only."""
    from olmocr_rl.train import budget

    asked = []
    monkeypatch.setattr(budget, "read_shape", lambda model, **kw: asked.append((model, kw)) or _shape())
    cfg = TrainConfig(model="org/model", max_steps=2)
    estimate(cfg, 1, train_pages=100, eval_pages=0, deepspeed=False)
    estimate(cfg, 1, train_pages=100, eval_pages=0, deepspeed=False, fetch=False)
    assert asked == [("org/model", {"fetch": True}), ("org/model", {"fetch": False})]


def test_evaluations_without_eval_steps_or_pages_and_sizes_unknown(tmp_path, monkeypatch):
    """eval_steps 0: one evaluation, at the end (eval_on_start is dropped with the steps strategy,
    grpo.py); no eval pages: none; num_generations_eval unset: num_generations; a model that cannot be
    read: the sizes unknown and why; a disk that cannot be asked: free space unknown."""
    model = tmp_path / "model.bin"
    model.write_text("")
    cfg = TrainConfig(model=str(model), max_steps=5, eval_steps=0, eval_on_start=True, num_generations=4, num_generations_eval=None,
                      output_dir=str(tmp_path))  # fmt: skip
    monkeypatch.setattr(shutil, "disk_usage", lambda p: (_ for _ in ()).throw(OSError("no disk")))
    b = estimate(cfg, 1, train_pages=40, eval_pages=3, deepspeed=False)
    assert (b.evaluations, b.eval_samples, b.free_gb) == (1, 4, None)
    assert b.checkpoint_gb is None and b.final_gb is None and b.disk_gb is None and "is not a folder" in b.unknown
    assert b.lines()[0] == f"checkpoints: size unknown ({b.unknown})"
    known = estimate(cfg, 1, train_pages=40, eval_pages=3, deepspeed=False, shape=_shape())
    assert known.lines()[0].endswith(f"= peak {known.disk_gb:,.0f} GB") and known.free_gb is None
    half = replace(known, final_gb=None)  # either size unknown: no peak
    assert half.disk_gb is None and half.lines()[0] == "checkpoints: size unknown (None)"
    assert replace(known, checkpoint_gb=None).disk_gb is None
    assert estimate(cfg, 1, train_pages=40, eval_pages=0, deepspeed=False).evaluations == 0
    none = estimate(replace(cfg, max_steps=-1), 1, train_pages=1, eval_pages=3, deepspeed=False)
    assert none.steps == 0 and none.train_tokens == 0 and none.lines()[1].endswith(" 1 evaluations")  # no share of nothing


@pytest.mark.parametrize("extra, spg, gbs", [(0, None, None), (2, 3, None), (1, None, 24)])
def test_online_filterings_worst_case(extra, spg, gbs):
    """filter_groups: 1 + filter_extra_rounds rounds of trl's generation batch (per_device x world x
    steps_per_generation, or trl.generation_batch_size) and its pages; None when off."""
    from olmocr_rl.train.budget import filter_cost

    cfg = TrainConfig(per_device_train_batch_size=2, gradient_accumulation_steps=5, num_generations=4, filter_groups=True,
                      filter_extra_rounds=extra, steps_per_generation=spg, trl={"generation_batch_size": gbs} if gbs else {})  # fmt: skip
    batch = gbs or 2 * 3 * (spg or 5)
    cost = filter_cost(cfg, 3)
    assert (cost.rounds, cost.completions, cost.pages) == (1 + extra, batch, batch // 4)
    assert (
        f"at most {(1 + extra) * batch:,} completions from {(1 + extra) * (batch // 4)} pages where trl generates {batch:,} " in cost.line()
    )
    assert filter_cost(replace(cfg, filter_groups=False), 3) is None


@pytest.mark.parametrize("steps, eval_steps, on_start", [(8, 4, False), (9, 4, True), (10, 4, False), (5, 1, False), (3, 7, True)])
def test_evaluations_are_the_trainers(steps, eval_steps, on_start):
    """An evaluation at each multiple of eval_steps and at the last step (once where it is one;
    DefaultFlowCallback), one more with eval_on_start."""
    cfg = TrainConfig(max_steps=steps, eval_steps=eval_steps, eval_on_start=on_start, per_device_train_batch_size=1, num_generations=2,
                      gradient_accumulation_steps=2)  # fmt: skip
    b = estimate(cfg, 1, train_pages=100, eval_pages=2, deepspeed=False, shape=_shape())
    assert b.steps == steps and b.evaluations == len(_trainer_steps(steps, eval_steps)) + on_start
