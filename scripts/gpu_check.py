"""A few GRPO steps of a randomly initialised, realistic-size VLM (Qwen2.5-VL-3B shapes) on one GPU,
in three variants, with the real olmOCR-bench reward; writes one JSON file with the time of each step
split into generation, forward/backward and reward, generated tokens/s, peak GPU memory, the reward's
share of the step, and the versions of everything that ran.

Variants, each in its own process with its own time budget (a failure or timeout is recorded in the
JSON and the next variant still runs):

* plain      one process, bf16, no DeepSpeed (`model.generate` for the rollouts, as trl does without vLLM)
* deepspeed  the same under accelerate + DeepSpeed ZeRO-2 (skipped, with the reason, when deepspeed
             does not import)
* lora       one process, a peft LoRA adapter on the language model's projections, base weights frozen

Everything is offline: the model config is written here (random weights, built on the GPU), the
tokenizer is a byte-level BPE padded to Qwen's 151,936-token vocabulary with Qwen's special-token
ids, and page images are synthetic 1288x1008 pages (1,656 image tokens, olmOCR's render size). The
reward scores each completion on the fixture tests of bench_fixtures/sample_paper.pdf (present,
absent, order, format, footnote, baseline) plus two math and two table tests defined below (math
needs KaTeX: OLMOCR_RL_KATEX_JS or the user cache).

    python scripts/gpu_check.py                # GPU machine (see scripts/gpu_check.sh, --kit there)
    python scripts/gpu_check.py --tiny         # CPU-sized: the tiny fixture model, 2 steps a variant,
                                               # DeepSpeed on 2 gloo ranks

The JSON goes to $OUT/gpu_check.json when $OUT is set, else to OUT_DIR/gpu_check.json (--out;
--json overrides both). A value that is null has a sibling `<key>_null_reason` saying why.

Memory: ZeRO-2 with bf16 and AdamW keeps about 20 bytes per parameter when the optimizer state is
not sharded (one GPU): the full 3.75 B-parameter model needs ~75 GB before activations. With
`--text-layers auto` (default) the text stack keeps its real width but drops layers until the
estimate fits the GPU (all 36 layers on a 139 GB H200; fewer on an 80 GB H100); the chosen shape is
recorded. `--text-layers 36` forces the full depth.
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import json
import os
import platform
import resource
import shutil
import signal
import subprocess
import sys
import time
import traceback
from pathlib import Path

T_START = time.perf_counter()
ROOT = Path(__file__).resolve().parents[1]
# Appended, not prepended: an installed olmocr_rl (the GPU kit on PYTHONPATH, or the dev venv's
# editable install) wins over the bare source tree, whose extension is not built where only the
# working tree was copied.
for _p in (str(ROOT), str(ROOT / "bench_fixtures")):
    if _p not in sys.path:
        sys.path.append(_p)

QWEN_VOCAB = 151936
QWEN_SPECIALS = {  # Qwen2.5-VL's ids
    "<|endoftext|>": 151643, "<|im_start|>": 151644, "<|im_end|>": 151645, "<|object_ref_start|>": 151646,
    "<|object_ref_end|>": 151647, "<|box_start|>": 151648, "<|box_end|>": 151649, "<|quad_start|>": 151650,
    "<|quad_end|>": 151651, "<|vision_start|>": 151652, "<|vision_end|>": 151653, "<|vision_pad|>": 151654,
    "<|image_pad|>": 151655, "<|video_pad|>": 151656,
}  # fmt: skip
BYTES_PER_PARAM = (2 + 2, 4 + 4 + 8)  # (bf16 weights + grads, fp32 master + grads + Adam m/v: sharded by ZeRO)
HEADROOM_GIB = 16  # activations (checkpointed), logits, generation cache, DeepSpeed buckets, CUDA context
PAGE_SIZE = (1288, 1008)

VARIANTS = ("plain", "deepspeed", "lora")
DESCRIPTIONS = {
    "plain": "one process, no DeepSpeed (GPU: bf16 weights and AdamW states); rollouts with model.generate",
    "deepspeed": "accelerate + DeepSpeed ZeRO-2 (GPU: bf16, fp32 master weights); rollouts with model.generate",
    "lora": "one process, peft LoRA (r=16) on the language model's attention and MLP projections; base frozen",
}
# Seconds per variant (process start to exit). GPU: about 7 of the 8 minutes one device command may
# take, after the kit install and the model folder. CPU (--tiny): DeepSpeed's first run on a machine
# JIT-builds its shm op (1-2 min on 2 cores).
BUDGETS_GPU = {"plain": 120, "deepspeed": 160, "lora": 110}
BUDGETS_TINY = {"plain": 240, "deepspeed": 480, "lora": 240}
KILL_GRACE_S = 20  # past the budget before the variant's processes are killed (it stops itself first)
LORA_TARGETS = r".*language_model.*\.(q_proj|k_proj|v_proj|o_proj|gate_proj|up_proj|down_proj)"

# Math and table tests on the sample paper's page (the bundled fixtures have none), so the reward
# runs KaTeX and the table parser as on olmOCR-bench pages.
EXTRA_TESTS = [
    {"pdf": "sample_paper.pdf", "page": 1, "id": "gpu_check_math_attention", "type": "math",
     "math": "\\mathrm{Attn}(Q, K, V) = \\mathrm{softmax}\\left(\\frac{Q K^{\\top}}{\\sqrt{d}}\\right) V"},
    {"pdf": "sample_paper.pdf", "page": 1, "id": "gpu_check_math_cost", "type": "math", "math": "O(n \\cdot w) \\ll O(n^2)"},
    {"pdf": "sample_paper.pdf", "page": 1, "id": "gpu_check_table_accuracy", "type": "table", "cell": "94.1",
     "left": "Sparse", "top_heading": "Accuracy"},
    {"pdf": "sample_paper.pdf", "page": 1, "id": "gpu_check_table_memory", "type": "table", "cell": "3.2",
     "up": "12.8", "left_heading": "Sparse"},
]  # fmt: skip
# A page as a good model would transcribe it (for the reward's cost on realistic text: random
# completions contain no tables or math).
REALISTIC_PAGE = """# Sparse Attention for Long Documents

**Abstract.** We study sparse attention patterns for long documents: local windows plus a few global tokens.

## Introduction

Our method reaches 94.1 % of dense accuracy at a quarter of the memory.

| Model | Accuracy | Memory (GB) |
|---|---|---|
| Dense | 100.0 | 12.8 |
| Sparse | 94.1 | 3.2 |

$$\\mathrm{Attn}(Q, K, V) = \\mathrm{softmax}\\left(\\frac{Q K^{\\top}}{\\sqrt{d}}\\right) V$$

The cost falls to $O(n \\cdot w) \\ll O(n^2)$ for a window $w$.

Figure 1: Attention patterns

[^1]: Measured on the validation split.
"""


# ----------------------------------------------------------------------------------------------
# Model folder (outer process).


def qwen25_vl_3b_config(text_layers: int = 36):
    from transformers import Qwen2_5_VLConfig

    text = dict(
        vocab_size=QWEN_VOCAB, hidden_size=2048, intermediate_size=11008, num_hidden_layers=text_layers,
        num_attention_heads=16, num_key_value_heads=2, max_position_embeddings=128000, rms_norm_eps=1e-6,
        rope_theta=1000000.0, tie_word_embeddings=True, hidden_act="silu",
        rope_scaling={"type": "mrope", "rope_type": "default", "mrope_section": [16, 24, 24]},
        bos_token_id=151643, eos_token_id=151645, pad_token_id=151643,
    )  # fmt: skip
    vision = dict(
        depth=32, hidden_size=1280, intermediate_size=3420, num_heads=16, in_channels=3, out_hidden_size=2048,
        patch_size=14, spatial_merge_size=2, temporal_patch_size=2, window_size=112,
        fullatt_block_indexes=[7, 15, 23, 31], hidden_act="silu",
    )  # fmt: skip
    return Qwen2_5_VLConfig(
        text_config=text, vision_config=vision, image_token_id=151655, video_token_id=151656,
        vision_start_token_id=151652, vision_end_token_id=151653, bos_token_id=151643, eos_token_id=151645,
        pad_token_id=151643, tie_word_embeddings=True,
    )  # fmt: skip


def count_params(config) -> int:
    import torch
    from transformers import AutoModelForImageTextToText

    with torch.device("meta"):
        model = AutoModelForImageTextToText.from_config(config)
    return sum(p.numel() for p in model.parameters())


def choose_text_layers(requested: str, gpu_bytes: int, num_processes: int) -> tuple[int, int, float]:
    """(text layers, parameters, estimated GiB per GPU under ZeRO-2)."""
    per_param = BYTES_PER_PARAM[0] + BYTES_PER_PARAM[1] / num_processes
    full = count_params(qwen25_vl_3b_config(36))
    per_layer = full - count_params(qwen25_vl_3b_config(35))
    layers = 36 if requested == "auto" else int(requested)
    if requested == "auto":
        budget = gpu_bytes / 2**30 - HEADROOM_GIB
        while layers > 1 and (full - (36 - layers) * per_layer) * per_param / 2**30 > budget:
            layers -= 1
    params = full - (36 - layers) * per_layer
    return layers, params, params * per_param / 2**30


def qwen_tokenizer():
    """Byte-level BPE with Qwen's vocabulary size and special-token ids (fillers in between)."""
    from tiny_vlm import CHAT_TEMPLATE
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    vocab = {c: i for i, c in enumerate(alphabet)}
    first_special = min(QWEN_SPECIALS.values())
    for combo in itertools.chain(itertools.product(alphabet, repeat=2), itertools.product(alphabet, repeat=3)):
        if len(vocab) >= first_special:
            break
        vocab["".join(combo)] = len(vocab)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(sorted(QWEN_SPECIALS, key=QWEN_SPECIALS.get))
    assert all(tok.token_to_id(t) == i for t, i in QWEN_SPECIALS.items())
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>", bos_token=None,
        padding_side="left", chat_template=CHAT_TEMPLATE,
        extra_special_tokens={"image_token": "<|image_pad|>", "video_token": "<|video_pad|>",
                              "vision_bos_token": "<|vision_start|>", "vision_eos_token": "<|vision_end|>"},
    )  # fmt: skip


def write_3b_model_dir(out: Path, text_layers: int) -> None:
    from tiny_vlm import CHAT_TEMPLATE
    from transformers import GenerationConfig, Qwen2_5_VLProcessor, Qwen2VLImageProcessor
    from transformers.models.qwen2_vl.video_processing_qwen2_vl import Qwen2VLVideoProcessor

    out.mkdir(parents=True, exist_ok=True)
    qwen25_vl_3b_config(text_layers).save_pretrained(out)
    GenerationConfig(eos_token_id=151645, pad_token_id=151643, bos_token_id=151643, do_sample=True).save_pretrained(out)
    pixels = dict(patch_size=14, temporal_patch_size=2, merge_size=2, min_pixels=3136, max_pixels=PAGE_SIZE[0] * PAGE_SIZE[1])
    Qwen2_5_VLProcessor(
        image_processor=Qwen2VLImageProcessor(**pixels), tokenizer=qwen_tokenizer(),
        video_processor=Qwen2VLVideoProcessor(**pixels), chat_template=CHAT_TEMPLATE,
    ).save_pretrained(out)  # fmt: skip


# ----------------------------------------------------------------------------------------------
# Environment facts (outer process; nothing here creates a CUDA context).


def dist_version(name: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def gpu_facts() -> dict | None:
    """name, driver and memory of GPU 0 from nvidia-smi (else NVML), or None."""
    if shutil.which("nvidia-smi"):
        q = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total,count", "--format=csv,noheader,nounits"],
                           capture_output=True, text=True)  # fmt: skip
        lines = [ln for ln in q.stdout.splitlines() if ln.strip()]
        if q.returncode == 0 and lines:
            name, driver, mem, count = [x.strip() for x in lines[0].split(",")[:4]]
            return {"name": name, "driver": driver, "memory_gib": round(float(mem) / 1024, 1), "count": int(count), "via": "nvidia-smi"}
    try:
        import pynvml

        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(0)
        name = pynvml.nvmlDeviceGetName(h)
        return {"name": name.decode() if isinstance(name, bytes) else name, "driver": pynvml.nvmlSystemGetDriverVersion(),
                "memory_gib": round(pynvml.nvmlDeviceGetMemoryInfo(h).total / 2**30, 1),
                "count": pynvml.nvmlDeviceGetCount(), "via": "nvml"}  # fmt: skip
    except Exception:  # noqa: BLE001  (no NVML: no GPU facts)
        return None


def versions(cuda: bool) -> dict:
    import torch

    v: dict = {"python": platform.python_version(), "python_implementation": platform.python_implementation()}
    for key, dist in (("torch", "torch"), ("transformers", "transformers"), ("trl", "trl"), ("accelerate", "accelerate"),
                      ("deepspeed", "deepspeed"), ("peft", "peft"), ("datasets", "datasets"), ("olmocr_rl", "olmocr-rl"),
                      ("tokenizers", "tokenizers"), ("safetensors", "safetensors"), ("huggingface_hub", "huggingface-hub"),
                      ("numpy", "numpy"), ("pyarrow", "pyarrow"), ("pydantic", "pydantic"), ("pillow", "pillow"),
                      ("typing_extensions", "typing-extensions")):  # fmt: skip
        v[key] = dist_version(dist)
        if v[key] is None:
            v[f"{key}_null_reason"] = f"{dist} is not installed"
    v["torch_cuda"] = torch.version.cuda
    if v["torch_cuda"] is None:
        v["torch_cuda_null_reason"] = "torch was built without CUDA"
    try:
        v["cudnn"] = torch.backends.cudnn.version() if cuda else None
    except Exception as e:  # noqa: BLE001
        v["cudnn"] = None
        v["cudnn_null_reason"] = f"torch.backends.cudnn.version() failed: {e}"
    if v["cudnn"] is None and "cudnn_null_reason" not in v:
        v["cudnn_null_reason"] = "no CUDA device (CPU run)"
    try:
        nccl = torch.cuda.nccl.version() if cuda else None
        v["nccl"] = ".".join(map(str, nccl)) if isinstance(nccl, tuple) else nccl
    except Exception as e:  # noqa: BLE001
        v["nccl"] = None
        v["nccl_null_reason"] = f"torch.cuda.nccl.version() failed: {e}"
    if v["nccl"] is None and "nccl_null_reason" not in v:
        v["nccl_null_reason"] = "no CUDA device (CPU run)"
    gpu = gpu_facts() if cuda else None
    for key in ("name", "driver", "memory_gib", "count"):
        v[f"gpu_{key}"] = gpu[key] if gpu else None
        if gpu is None:
            v[f"gpu_{key}_null_reason"] = "no CUDA device (CPU run)" if not cuda else "neither nvidia-smi nor NVML answered"
    v["cpu"] = platform.processor() or platform.machine()
    v["cpu_count"] = os.cpu_count()
    v["platform"] = platform.platform()
    return v


def kit_facts(kit: str | None) -> tuple[dict | None, str]:
    """The kit's manifest checked against its files, and the requirements coverage with the versions
    installed here (the kit on PYTHONPATH)."""
    if not kit:
        return None, "not run with --kit: the environment's own packages"
    import hashlib

    out: dict = {"dir": kit, "site": os.environ.get("GPU_CHECK_KIT_SITE", "")}
    try:
        manifest = json.loads((Path(kit) / "manifest.json").read_text())
        bad = []
        for w in manifest.get("wheels", []):
            p = Path(kit) / w["file"]
            if not p.is_file() or hashlib.sha256(p.read_bytes()).hexdigest() != w["sha256"]:
                bad.append(w["file"])
        out["wheels"] = [f"{w['name']} {w['version']}" for w in manifest.get("wheels", [])]
        out["wheels_not_matching_manifest"] = bad
    except (OSError, ValueError, KeyError) as e:
        out["wheels"] = None
        out["wheels_null_reason"] = f"no readable manifest.json: {e}"
        out["wheels_not_matching_manifest"] = []
    try:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import gpu_kit

        rows = gpu_kit.walk(gpu_kit.Provider(installed=True, kit_site=os.environ.get("GPU_CHECK_KIT_SITE")))
        out["coverage_installed"] = gpu_kit.coverage_report(rows)
    except Exception as e:  # noqa: BLE001  (recorded; the variants still run)
        out["coverage_installed"] = None
        out["coverage_installed_null_reason"] = f"coverage check failed: {type(e).__name__}: {e}"
    return out, ""


# ----------------------------------------------------------------------------------------------
# Reward suite.


def write_suite(folder: Path) -> list[str]:
    """The fixture tests plus EXTRA_TESTS in `folder`; returns the test ids a page carries."""
    from olmocr_rl import BenchSuite

    folder.mkdir(parents=True, exist_ok=True)
    for f in sorted((ROOT / "bench_fixtures").glob("*.jsonl")):
        shutil.copyfile(f, folder / f.name)
    (folder / "gpu_check_extra.jsonl").write_text("".join(json.dumps(r) + "\n" for r in EXTRA_TESTS))
    suite = BenchSuite.load(folder)
    return [i for i in suite.ids if suite.info(i).pdf == "sample_paper.pdf"]


def realistic_reward_cost(suite_dir: Path, test_ids: list[str], completions: int) -> dict:
    """Seconds the reward takes on `completions` distinct realistic pages (tables, math), median of 3."""
    from olmocr_rl import BenchReward, BenchSuite

    reward = BenchReward(BenchSuite.load(suite_dir))
    texts = [REALISTIC_PAGE + f"\n<!-- {i} -->\n" for i in range(completions)]
    times, out = [], []
    for _ in range(3):
        t = time.perf_counter()
        out = reward(completions=texts, test_ids=[test_ids] * completions)
        times.append(time.perf_counter() - t)
    s = sorted(times)[1]
    return {"completions": completions, "seconds": s, "ms_per_completion": 1000 * s / completions,
            "mean_reward": sum(out) / len(out), "threads": reward.threads if reward.threads is not None else os.cpu_count()}  # fmt: skip


# ----------------------------------------------------------------------------------------------
# Outer process: model folder, one process (group) per variant, the JSON.


def null(d: dict, key: str, value, reason: str) -> None:
    d[key] = value
    if value is None:
        d[f"{key}_null_reason"] = reason


def unexplained_nulls(obj, path: str = "") -> list[str]:
    """Paths of null values without a sibling `<key>_null_reason` (the JSON must have none)."""
    bad = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            if v is None and not obj.get(f"{k}_null_reason"):
                bad.append(f"{path}/{k}")
            else:
                bad += unexplained_nulls(v, f"{path}/{k}")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            bad += [f"{path}[{i}]"] if v is None else unexplained_nulls(v, f"{path}[{i}]")
    return bad


def tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def run_variant(name: str, args: argparse.Namespace, settings: dict, work: Path, budget: float) -> dict:
    from olmocr_rl.train.launch import build_launch_argv, launch_env

    vdir = work / name
    shutil.rmtree(vdir, ignore_errors=True)
    vdir.mkdir(parents=True)
    cfg = vdir / "config.json"
    result = vdir / "result.json"
    log = vdir / "log.txt"
    cfg.write_text(json.dumps({**settings, "variant": name, "out": str(vdir), "result": str(result), "budget_s": budget}, indent=2))
    program = [str(Path(__file__).resolve()), "--inner", str(cfg)]
    rec: dict = {"name": name, "description": DESCRIPTIONS[name], "budget_s": budget}
    if name == "deepspeed":
        nproc = settings["deepspeed_processes"]
        argv = build_launch_argv(cfg, num_processes=nproc, zero=2, mixed_precision="bf16" if settings["cuda"] else "no", program=program)
        env = launch_env(nproc)
    else:
        argv = [sys.executable] + program
        env = launch_env(1)
    env["PYTHONUNBUFFERED"] = "1"
    t0 = time.perf_counter()
    print(f"gpu_check: [{name}] {DESCRIPTIONS[name]}; budget {budget:.0f} s; log {log}", flush=True)
    with open(log, "w") as lf:
        proc = subprocess.Popen(argv, env=env, stdout=lf, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            rc = proc.wait(timeout=budget + KILL_GRACE_S)
            timed_out = False
        except subprocess.TimeoutExpired:
            timed_out = True
            for sig in (signal.SIGTERM, signal.SIGKILL):
                try:
                    os.killpg(proc.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    proc.wait(timeout=10)
                    break
                except subprocess.TimeoutExpired:
                    continue
            rc = proc.returncode if proc.returncode is not None else -9
    rec["wall_s"] = time.perf_counter() - t0
    rec["exit_code"] = rc
    try:
        inner = json.loads(result.read_text())
    except (OSError, ValueError):
        inner = {}
    steps = inner.get("steps", [])
    if timed_out:
        rec["status"] = "timeout"
        rec["error"] = f"killed after {rec['wall_s']:.0f} s (budget {budget:.0f} s + {KILL_GRACE_S} s grace); {len(steps)} step(s) recorded"
    elif rc != 0 or inner.get("error"):
        rec["status"] = "failed"
        rec["error"] = inner.get("error") or f"exit code {rc} without a result"
    else:
        rec["status"] = "ok"
    if rec["status"] != "ok":
        rec["log_tail"] = tail(log)
    fill(rec, inner)
    status = rec["status"] + (f" ({rec['error'].splitlines()[-1][:200]})" if rec.get("error") else "")
    print(f"gpu_check: [{name}] {status}, {len(steps)} step(s), {rec['wall_s']:.0f} s", flush=True)
    if rec["status"] != "ok":
        print("\n".join("    " + ln for ln in rec["log_tail"].splitlines()[-25:]), flush=True)
    return rec


def fill(rec: dict, inner: dict) -> None:
    """A variant's record from what its process wrote (null, with the reason, where it wrote nothing)."""
    before = "the variant stopped before its trainer existed" if rec["status"] != "skipped" else "skipped: " + rec["error"]
    for key in (
        "distributed",
        "world_size",
        "precision",
        "memory_kind",
        "params_total",
        "params_trainable",
        "prompt_tokens",
        "image_tokens",
        "completions_per_step",
        "generation_timer",
        "setup_s",
        "steps_planned",
    ):
        null(rec, key, inner.get(key), before)
    rec["stopped_early"] = inner.get("stopped_early", "")
    rec["steps"] = inner.get("steps", [])
    rec["summary"] = summarize(rec["steps"])
    rec["trainer_logs"] = inner.get("trainer_logs", [])


def realistic_share(rec: dict, realistic_s: float) -> None:
    """The reward's share of the step had the completions been realistic pages (random ones hold
    no tables or math): the step with its reward time replaced by the realistic pages' time."""
    s = rec["summary"]
    if s.get("time_s"):
        step = s["time_s"] - s["reward_s"] + realistic_s
        s["reward_share_realistic_pages"] = realistic_s / step if step > 0 else 0.0
    else:
        null(s, "reward_share_realistic_pages", None, "no step completed")


SUMMED = ("time_s", "generation_s", "forward_backward_s", "reward_s", "other_s")


def summarize(steps: list[dict]) -> dict:
    """Means over the timed steps (all but the first, which warms up; the only one if one)."""
    s: dict = {}
    timed = steps[1:] if len(steps) > 1 else steps
    s["timed_steps"] = [st["step"] for st in timed]
    if not timed:
        for key in SUMMED + ("generated_tokens_per_s", "tokens_per_s", "reward_share", "peak_memory_gib", "mean_reward"):
            null(s, key, None, "no step completed")
        return s
    for key in SUMMED:
        s[key] = sum(st[key] for st in timed) / len(timed)
    gen_tokens = sum(st["completion_tokens"] for st in timed)
    gen_time = sum(st["generation_s"] for st in timed)
    null(s, "generated_tokens_per_s", gen_tokens / gen_time if gen_time > 0 else None, "no generation time measured")
    toks = [st["tokens"] for st in timed if st.get("tokens") is not None]
    null(s, "tokens_per_s", sum(toks) / sum(st["time_s"] for st in timed) if toks else None,
         "trl logged no num_tokens for the timed steps")  # fmt: skip
    s["reward_share"] = s["reward_s"] / s["time_s"] if s["time_s"] > 0 else 0.0
    s["peak_memory_gib"] = max(st["peak_memory_gib"] for st in steps)
    s["mean_reward"] = sum(st["mean_reward"] for st in timed) / len(timed)
    return s


def outer(args: argparse.Namespace) -> int:
    try:
        import torch
    except ImportError as e:
        print(f"gpu_check: torch does not import ({e})")
        return 2
    cuda = torch.cuda.is_available()
    if not cuda and not args.tiny:
        print("gpu_check: no CUDA device visible; use --tiny for the CPU-sized variant")
        return 2
    out = Path(args.out).resolve()
    work = out / "work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    json_path = (
        Path(args.json) if args.json else (Path(os.environ["OUT"]) / "gpu_check.json" if os.environ.get("OUT") else out / "gpu_check.json")
    )
    json_path = json_path.resolve()
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.unlink(missing_ok=True)
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = sorted(set(variants) - set(VARIANTS))
    if unknown:
        print(f"gpu_check: unknown variant(s) {', '.join(unknown)} (choose from {', '.join(VARIANTS)})")
        return 2
    report: dict = {
        "schema": "olmocr-rl gpu_check 2",
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "mode": "tiny (CPU)" if args.tiny else "gpu",
        "command": [sys.executable] + sys.argv,
        "json": str(json_path),
    }
    t0 = time.perf_counter()
    report["versions"] = versions(cuda)
    kit, why = kit_facts(args.kit or os.environ.get("GPU_CHECK_KIT"))
    null(report, "kit", kit, why)
    from olmocr_rl._katex import find_katex_js

    katex = find_katex_js()
    null(report, "katex_js", str(katex) if katex else None, "no katex.min.js found (math tests cannot be checked)")
    ds_procs = args.num_processes or (1 if cuda else 2)
    if args.tiny:
        from tiny_vlm import build_tiny_vlm

        model_dir = build_tiny_vlm(work / "model")
        model = {"shape": "tiny Qwen2.5-VL (bench_fixtures/tiny_vlm.py)", "text_layers": 2, "page_size": [168, 112]}
        null(model, "estimated_gib_per_gpu", None, "CPU run")
        page = (168, 112)
    else:
        # Ask a child process, so this one never holds a CUDA context while the variants run.
        probe = "import torch; p = torch.cuda.get_device_properties(0); print(p.total_memory); print(p.name)"
        total, name = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split("\n")[:2]
        layers, params, est = choose_text_layers(args.text_layers, int(total), ds_procs)
        model_dir = work / "model"
        write_3b_model_dir(model_dir, layers)
        model = {"shape": f"Qwen2.5-VL-3B shapes, {layers}/36 text layers, {params / 1e9:.2f} B params, random weights",
                 "text_layers": layers, "page_size": list(PAGE_SIZE), "estimated_gib_per_gpu": round(est, 1),
                 "gpu_memory_gib": round(int(total) / 2**30, 1)}  # fmt: skip
        page = PAGE_SIZE
    report["model"] = model
    test_ids = write_suite(work / "suite")
    from olmocr_rl import BenchSuite

    suite = BenchSuite.load(work / "suite")
    types: dict[str, int] = {}
    for i in test_ids:
        types[suite.info(i).type] = types.get(suite.info(i).type, 0) + 1
    grad_accum = 2
    settings = dict(
        model_dir=str(model_dir), tiny=args.tiny, steps=args.steps, num_generations=args.num_generations,
        per_device_batch=args.per_device_batch, grad_accum=grad_accum, completion_length=args.completion_length,
        page=list(page), cuda=cuda, gradient_checkpointing={"on": True, "off": False}.get(args.gradient_checkpointing, not args.tiny),
        suite=str(work / "suite"), test_ids=test_ids, deepspeed_processes=ds_procs,
    )  # fmt: skip
    report["settings"] = {k: v for k, v in settings.items() if k not in ("model_dir", "suite", "test_ids")}
    report["reward"] = {"test_ids": test_ids, "tests_per_page": len(test_ids), "types": types,
                        "suite": "bench_fixtures/*.jsonl + gpu_check EXTRA_TESTS (math, table)"}  # fmt: skip
    completions = args.per_device_batch * grad_accum
    report["reward"]["realistic_pages"] = realistic_reward_cost(work / "suite", test_ids, completions)
    report["setup_s"] = time.perf_counter() - t0
    print(f"gpu_check: {model['shape']}; tests per page: {', '.join(f'{k} {v}' for k, v in types.items())}; "
          f"setup {report['setup_s']:.1f} s", flush=True)  # fmt: skip

    budgets = dict(BUDGETS_TINY if args.tiny else BUDGETS_GPU)
    if args.budget_s:
        budgets = {k: float(args.budget_s) for k in budgets}
    report["variants"] = []
    for name in variants:
        if name == "deepspeed":
            probe = subprocess.run([sys.executable, "-c", "import deepspeed"], capture_output=True, text=True, timeout=300)
            if probe.returncode != 0:
                err = (probe.stderr or probe.stdout).strip().splitlines()[-1:] or ["import failed"]
                rec = {"name": name, "description": DESCRIPTIONS[name], "budget_s": budgets[name], "wall_s": 0.0,
                       "exit_code": probe.returncode, "status": "skipped", "error": f"deepspeed does not import: {err[0]}"}  # fmt: skip
                fill(rec, {})
                print(f"gpu_check: [{name}] skipped: {rec['error']}", flush=True)
                report["variants"].append(rec)
                continue
        rec = run_variant(name, args, settings, work, budgets[name])
        realistic_share(rec, report["reward"]["realistic_pages"]["seconds"])
        report["variants"].append(rec)
        write_report(report, json_path)  # a partial report survives a kill of this process
    report["wall_s"] = time.perf_counter() - T_START
    report["ok"] = all(v["status"] == "ok" for v in report["variants"])
    write_report(report, json_path)
    print_summary(report)
    return 0 if report["ok"] else 1


def write_report(report: dict, path: Path) -> None:
    report["unexplained_nulls"] = []
    report["unexplained_nulls"] = unexplained_nulls(report)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(report, indent=2))
    os.replace(tmp, path)


def print_summary(r: dict) -> None:
    v = r["versions"]
    print("\n=== gpu_check summary ===")
    print(f"model            {r['model']['shape']}")
    print(f"versions         python {v['python']}, torch {v['torch']} (CUDA {v['torch_cuda']}), transformers {v['transformers']}, "
          f"trl {v['trl']}, accelerate {v['accelerate']}, deepspeed {v['deepspeed']}, peft {v['peft']}, datasets {v['datasets']}")  # fmt: skip
    print(f"device           {v['gpu_name'] or 'CPU'}{' (driver ' + v['gpu_driver'] + ')' if v['gpu_driver'] else ''}")
    rp = r["reward"]["realistic_pages"]
    print(f"reward           {r['reward']['tests_per_page']} tests per page ({', '.join(f'{k} {n}' for k, n in r['reward']['types'].items())}); "
          f"realistic pages: {rp['ms_per_completion']:.2f} ms per completion")  # fmt: skip
    for var in r["variants"]:
        s = var["summary"]
        head = f"\n--- {var['name']}: {var['status']}"
        if var.get("distributed"):
            head += f", {var['distributed']}{' (ZeRO-2)' if var['name'] == 'deepspeed' else ''}, world size {var['world_size']}"
        print(head + (f", {var['stopped_early']}" if var.get("stopped_early") else ""))
        if var.get("error"):
            print(f"error            {var['error'].strip().splitlines()[-1][:300]}")
        if not s.get("timed_steps"):
            continue
        steps = ", ".join(f"{st['time_s']:.2f}" for st in var["steps"])
        print(f"step time        {s['time_s']:.2f} s (mean of steps {s['timed_steps']}; all: {steps})")
        print(f"split            generation {s['generation_s']:.2f} s, forward/backward {s['forward_backward_s']:.2f} s, "
              f"reward {s['reward_s']:.3f} s, other {s['other_s']:.2f} s")  # fmt: skip
        tps = f"{s['tokens_per_s']:.0f}" if s.get("tokens_per_s") is not None else "n/a"
        gps = f"{s['generated_tokens_per_s']:.0f}" if s.get("generated_tokens_per_s") is not None else "n/a"
        print(f"tokens/s         {tps} processed (prompt + completion) per step second, {gps} generated per generation second")
        print(f"peak memory      {s['peak_memory_gib']:.2f} GiB ({var['memory_kind']})")
        print(f"reward share     {100 * s['reward_share']:.2f} % of the step ({s['reward_s']:.3f} s/step in the bench reward; "
              f"{100 * s['reward_share_realistic_pages']:.2f} % with realistic pages)")  # fmt: skip
        print(f"mean reward      {s['mean_reward']:.3f}")
    print(f"\njson             {r['json']}")
    print(f"result           {'all variants ok' if r['ok'] else 'FAILED: ' + ', '.join(x['name'] + ' ' + x['status'] for x in r['variants'] if x['status'] != 'ok')}"
          f" ({r['wall_s']:.0f} s)")  # fmt: skip


# ----------------------------------------------------------------------------------------------
# Inner process: one variant (one rank of it under accelerate launch).


def page_image(size: tuple[int, int], seed: int):
    from PIL import Image, ImageDraw

    img = Image.new("RGB", size, "white")
    draw = ImageDraw.Draw(img)
    lines = ["Sparse Attention for Long Documents", "We study sparse attention patterns", "Table 1: results",
             "| Dense | 100.0 | 12.8 |", "| Sparse | 94.1 | 3.2 |", "Attn(Q, K, V) = softmax(QK^T / sqrt(d)) V"]  # fmt: skip
    step = max(12, size[1] // 40)
    for i, y in enumerate(range(step, size[1] - step, step)):
        draw.text((step, y), f"{lines[(i + seed) % len(lines)]} {seed}.{i}", fill="black")
    return img


def inner(cfg_path: str) -> int:
    s = json.loads(Path(cfg_path).read_text())
    rank = int(os.environ.get("RANK", "0"))
    result: dict = {"steps": [], "steps_planned": s["steps"], "setup_s": {}}

    def save() -> None:
        if rank == 0:
            tmp = Path(s["result"]).with_suffix(".tmp")
            tmp.write_text(json.dumps(result, indent=2))
            os.replace(tmp, s["result"])

    try:
        return train_variant(s, result, save)
    except BaseException as e:
        result["error"] = f"{type(e).__name__}: {e}\n{traceback.format_exc()[-6000:]}"
        save()
        raise


def train_variant(s: dict, result: dict, save) -> int:
    t_import = time.perf_counter()
    import torch
    from datasets import Dataset
    from transformers import AutoConfig, AutoModelForImageTextToText, AutoProcessor, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from olmocr_rl import BenchReward, BenchSuite

    result["setup_s"]["import"] = time.perf_counter() - t_import
    cuda, variant = s["cuda"], s["variant"]
    world = int(os.environ.get("WORLD_SIZE", "1"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    reward = BenchReward(BenchSuite.load(s["suite"]))
    acc = {"reward_s": 0.0, "completion_tokens": 0, "rewards": [], "profiled": {}, "train_step_s": 0.0, "prepare_s": 0.0}

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize()

    def olmocr_bench(completions, completion_ids, test_ids, **kwargs):
        t = time.perf_counter()
        out = reward(completions=completions, test_ids=test_ids, **kwargs)
        acc["reward_s"] += time.perf_counter() - t
        acc["completion_tokens"] += sum(len(c) for c in completion_ids)
        acc["rewards"] += [r for r in out if r is not None]
        return out

    # trl's profiling hooks time generation (`GRPOTrainer.transformers.generate`, or vLLM's) and
    # more; in trl 1.16 they only report to wandb/mlflow/trackio, so the durations are caught here.
    generation_timer = "trl profiling_context (GRPOTrainer.*generate*)"
    try:
        from trl.extras import profiling as trl_profiling

        original_log = trl_profiling.ProfilingContext._log_metrics

        def log_metrics(self, duration):
            acc["profiled"][self.name] = acc["profiled"].get(self.name, 0.0) + duration
            return original_log(self, duration)

        trl_profiling.ProfilingContext._log_metrics = log_metrics
    except (ImportError, AttributeError):
        trl_profiling = None
        generation_timer = "wrapped GRPOTrainer._generate"

    grad_accum = s["grad_accum"]
    suppress = [151652, 151653, 151654, 151655, 151656] if not s["tiny"] else [259, 260, 261, 262]
    args = GRPOConfig(
        output_dir=str(Path(s["out"]) / "run"), per_device_train_batch_size=s["per_device_batch"],
        gradient_accumulation_steps=grad_accum, num_generations=s["num_generations"],
        max_completion_length=s["completion_length"], max_steps=s["steps"], logging_steps=1,
        learning_rate=1e-5 if variant == "lora" else 1e-6, temperature=1.0, beta=0.0, loss_type="bnpo", bf16=cuda,
        gradient_checkpointing=s["gradient_checkpointing"], report_to=[], save_strategy="no", dataloader_num_workers=0, seed=0,
        use_cpu=not cuda, ddp_backend="gloo" if not cuda and world > 1 else None,
        # A random policy samples any id; keep it from emitting vision placeholders in completions.
        generation_kwargs={"suppress_tokens": suppress},
    )  # fmt: skip
    result["completions_per_step"] = s["per_device_batch"] * world * grad_accum
    t = time.perf_counter()
    processor = AutoProcessor.from_pretrained(s["model_dir"])
    torch.manual_seed(0)
    if s["tiny"]:
        model = AutoModelForImageTextToText.from_pretrained(s["model_dir"])
    else:
        config = AutoConfig.from_pretrained(s["model_dir"])
        with torch.device(f"cuda:{local_rank}" if cuda else "cpu"):
            model = AutoModelForImageTextToText.from_config(config, dtype=torch.bfloat16)
    result["setup_s"]["model"] = time.perf_counter() - t
    peft_config = None
    if variant == "lora":
        from peft import LoraConfig

        peft_config = LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0, target_modules=LORA_TARGETS, task_type="CAUSAL_LM")
    prompt = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Convert this page to markdown."}]}]
    gen_batch = result["completions_per_step"]
    n_rows = max(8, s["steps"] * gen_batch // s["num_generations"] * 2)
    rows = [{"prompt": prompt, "image": page_image(tuple(s["page"]), i), "test_ids": s["test_ids"]} for i in range(n_rows)]
    first = [{**prompt[0], "content": [{"type": "image", "image": rows[0]["image"]}, prompt[0]["content"][1]]}]
    enc = processor.apply_chat_template([first], tokenize=True, return_dict=True, add_generation_prompt=True)
    ids = enc["input_ids"][0]
    image_id = processor.tokenizer.convert_tokens_to_ids("<|image_pad|>")
    result["prompt_tokens"], result["image_tokens"] = len(ids), sum(1 for x in ids if x == image_id)

    class Timer(TrainerCallback):
        def __init__(self):
            self.logs: list[dict] = []
            self.trainer = None

        def on_step_begin(self, a, state, control, **kw):
            sync()
            if cuda:
                torch.cuda.reset_peak_memory_stats()
            self.t = time.perf_counter()
            self.mark = {k: acc[k] for k in ("reward_s", "completion_tokens", "train_step_s", "prepare_s")}
            self.mark_rewards = len(acc["rewards"])
            self.mark_prof = dict(acc["profiled"])

        def on_step_end(self, a, state, control, **kw):
            sync()
            dt = time.perf_counter() - self.t
            d = {k: acc[k] - self.mark[k] for k in self.mark}
            prof = {k: v - self.mark_prof.get(k, 0.0) for k, v in acc["profiled"].items()}
            gen = sum(v for k, v in prof.items() if k.endswith("generate") or k.endswith("generate_batch"))
            fwd_bwd = max(0.0, d["train_step_s"] - d["prepare_s"])
            rewards = acc["rewards"][self.mark_rewards :]
            if cuda:
                peak = torch.cuda.max_memory_allocated() / 2**30
            else:
                peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
            step = {
                "step": state.global_step, "time_s": dt, "generation_s": gen, "forward_backward_s": fwd_bwd,
                "reward_s": d["reward_s"], "other_s": max(0.0, dt - gen - fwd_bwd - d["reward_s"]),
                # rank 0 generated 1/world of the completions (as many as each other rank)
                "completion_tokens": d["completion_tokens"] * world,
                "generated_tokens_per_s": d["completion_tokens"] * world / gen if gen > 0 else 0.0,
                "peak_memory_gib": peak, "reward_share": d["reward_s"] / dt if dt > 0 else 0.0,
                "mean_reward": sum(rewards) / len(rewards) if rewards else 0.0,
                "profiled_s": {k: round(v, 4) for k, v in prof.items() if v > 0},
            }  # fmt: skip
            step["tokens"] = None
            step["tokens_null_reason"] = "trl's log for this step had no num_tokens"
            result["steps"].append(step)
            # Stop before the budget runs out: the same decision on every rank.
            elapsed = time.perf_counter() - T_START
            stop = state.global_step < s["steps"] and elapsed + 1.3 * dt + 10 > s["budget_s"]
            if world > 1 and torch.distributed.is_initialized():
                flag = torch.tensor([1.0 if stop else 0.0], device=self.trainer.accelerator.device)
                torch.distributed.all_reduce(flag, op=torch.distributed.ReduceOp.MAX)
                stop = bool(flag.item())
            if stop:
                control.should_training_stop = True
                result["stopped_early"] = f"stopped after {state.global_step} of {s['steps']} steps (time budget {s['budget_s']:.0f} s)"
            save()

        def on_log(self, a, state, control, logs=None, **kw):
            logs = dict(logs or {})
            self.logs.append(logs)
            result["trainer_logs"] = self.logs
            if "num_tokens" in logs and result["steps"]:
                seen = [st.get("num_tokens_total") for st in result["steps"] if st.get("num_tokens_total") is not None]
                step = result["steps"][-1]
                step["num_tokens_total"] = float(logs["num_tokens"])
                step["tokens"] = float(logs["num_tokens"]) - (seen[-1] if seen else 0.0)
                step.pop("tokens_null_reason", None)
            save()

    timer = Timer()
    t = time.perf_counter()
    trainer = GRPOTrainer(model=model, args=args, processing_class=processor, reward_funcs=[olmocr_bench],
                          train_dataset=Dataset.from_list(rows), callbacks=[timer], peft_config=peft_config)  # fmt: skip
    timer.trainer = trainer
    result["setup_s"]["trainer_init"] = time.perf_counter() - t

    # forward/backward = training_step minus its _prepare_inputs (generation, reward, batching).
    def timed(method, key):
        def wrapper(*a, **kw):
            sync()
            t0 = time.perf_counter()
            try:
                return method(*a, **kw)
            finally:
                sync()
                acc[key] += time.perf_counter() - t0

        return wrapper

    trainer.training_step = timed(trainer.training_step, "train_step_s")
    trainer._prepare_inputs = timed(trainer._prepare_inputs, "prepare_s")
    if trl_profiling is None:
        original_generate = trainer._generate

        def generate(*a, **kw):
            t0 = time.perf_counter()
            try:
                return original_generate(*a, **kw)
            finally:
                acc["profiled"]["wrapped._generate"] = acc["profiled"].get("wrapped._generate", 0.0) + time.perf_counter() - t0

        trainer._generate = generate
    acc_ = trainer.accelerator
    result["distributed"] = str(acc_.distributed_type)
    result["world_size"] = acc_.num_processes
    result["precision"] = (
        ("bf16 autocast, " if cuda else "fp32 (CPU), ")
        + {"plain": "bf16 weights and AdamW states" if not s["tiny"] else "fp32 weights",
           "deepspeed": "ZeRO-2 with fp32 master weights" if cuda else "ZeRO-2",
           "lora": "frozen base, trainable LoRA adapters"}[variant]
    )  # fmt: skip
    result["memory_kind"] = "torch.cuda.max_memory_allocated per step (rank 0)" if cuda else "process max RSS (CPU run; cumulative, rank 0)"
    result["params_total"] = sum(p.numel() for p in trainer.model.parameters())
    result["params_trainable"] = sum(p.numel() for p in trainer.model.parameters() if p.requires_grad)
    result["generation_timer"] = generation_timer
    save()
    trainer.train()
    result["status"] = "done"
    save()
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--inner", help=argparse.SUPPRESS)
    p.add_argument("--tiny", action="store_true", help="CPU-sized: the tiny fixture model; DeepSpeed on 2 ranks")
    p.add_argument("--out", default=os.environ.get("GPU_CHECK_OUT", "/tmp/olmocr-rl-gpu-check"),
                   help="work folder (model, logs); the JSON too unless $OUT or --json say otherwise")  # fmt: skip
    p.add_argument("--json", help="where to write the JSON (default: $OUT/gpu_check.json, else OUT_DIR/gpu_check.json)")
    p.add_argument("--kit", help="the GPU kit folder (set by gpu_check.sh --kit): its manifest and coverage go in the JSON")
    p.add_argument("--variants", default=",".join(VARIANTS), help=f"comma-separated, of {', '.join(VARIANTS)}")
    p.add_argument("--num-processes", type=int, default=0, help="DeepSpeed variant's processes (default: 1 on GPU, 2 with --tiny)")
    p.add_argument("--steps", type=int, default=0, help="GRPO steps per variant (default: 3 on GPU, 2 with --tiny)")
    p.add_argument("--budget-s", type=float, default=0, help="seconds per variant (default: per variant, see BUDGETS_*)")
    p.add_argument("--num-generations", type=int, default=8)
    p.add_argument("--per-device-batch", type=int, default=4, help="completions per forward micro-batch")
    p.add_argument("--completion-length", type=int, default=512)
    p.add_argument("--text-layers", default="auto", help="'auto' (fit the GPU) or 1-36")
    p.add_argument(
        "--gradient-checkpointing", choices=["auto", "on", "off"], default="auto", help="auto: on for the GPU model, off with --tiny"
    )
    a = p.parse_args()
    if a.inner:
        from olmocr_rl.train.launch import shutdown_process_group

        code = inner(a.inner)
        if code == 0:
            shutdown_process_group()  # else gloo can abort a finished rank at exit
        return code
    if a.tiny:
        a.completion_length = min(a.completion_length, 32)
    a.steps = a.steps or (2 if a.tiny else 3)
    return outer(a)


if __name__ == "__main__":
    raise SystemExit(main())
