"""The GPU check: `olmocr-rl prepare` and `olmocr-rl train` themselves, on one GPU, with a randomly
initialised model of Qwen2.5-VL-3B's shapes and the real olmOCR-bench reward; writes one JSON file.

Each variant is one `olmocr-rl train` run (its own processes, its own time budget; a failure or a
timeout is recorded and the next variant runs) on the same prepared folder (the fixture PDFs
rendered at 1288 px, about 1,650 image tokens a page, with the fixture tests plus math and table
tests), with the rewards bench + medoid (a random policy passes no test; the medoid reward differs
within a group, so the advantages and the updates are not zero):

* plain      one process; bf16 autocast over float32 weights (the precision `dtype: auto` picks)
* deepspeed  DeepSpeed ZeRO-2 under the `deepspeed` launcher (`--launcher deepspeed --zero 2`)
* lora       one process, a peft LoRA adapter (lora=true), base frozen
* beta       one process with beta=0.01: the KL term and its frozen reference model, as olmOCR 2 ran

From each run's own logs (logs/metrics.jsonl, train_summary.json) it reports per step the time
split into generation / reward / forward-backward / other (olmocr_rl.train.callbacks.StepTimer, the trainer's timers),
tokens/s, peak memory, the reward's share of the step (also with realistic pages: random
completions hold no tables or math), and whether the optimizer's weights moved
(`weights_moved`); plus the versions of everything that ran, the GPU and its driver.

    scripts/gpu_check.sh --kit target/gpu-kit    # the GPU machine (no package index there)
    python scripts/gpu_check.py --tiny           # CPU: the tiny fixture model, the same commands,
                                                 # DeepSpeed on 2 gloo ranks (CI runs this)

The JSON goes to $OUT/gpu_check.json when $OUT is set, else to OUT_DIR/gpu_check.json (--out;
--json overrides both). A value that is null has a sibling `<key>_null_reason` saying why.

Memory: the full 3.75 B-parameter model under ZeRO-2 on one GPU holds ~16-20 bytes per parameter
(bf16 weights and grads, float32 master weights and AdamW moments; the reference model with beta).
With `--text-layers auto` (default) the text stack keeps its width but drops layers until the
estimate fits the GPU (all 36 on a 139 GB H200; fewer on 80 GB); the chosen shape is recorded.
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import json
import os
import platform
import shutil
import subprocess
import sys
import time
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
HEADROOM_GIB = 20  # activations (checkpointed), logits, generation cache, DeepSpeed buckets, the reference model's share
PAGE_SIZE = (1288, 1008)

VARIANTS = ("plain", "deepspeed", "lora", "beta")
DESCRIPTIONS = {
    "plain": "olmocr-rl train, one process: bf16 autocast over float32 weights; rollouts with model.generate",
    "deepspeed": "olmocr-rl train --launcher deepspeed --zero 2: bf16 weights, float32 master weights",
    "lora": "olmocr-rl train lora=true: a LoRA adapter (r=16) on the attention projections; base frozen",
    "beta": "olmocr-rl train beta=0.01: the KL term against a frozen reference model",
}
OVERRIDES = {"plain": [], "deepspeed": [], "lora": ["lora=true", "learning_rate=1.0e-5"], "beta": ["beta=0.01"]}
# Seconds per variant (process start to exit). GPU: the four fit one device command of 10 minutes
# with the model written and the pages prepared. CPU (--tiny): DeepSpeed's first run on a machine
# JIT-builds its shm op (1-2 min on 2 cores).
BUDGETS_GPU = {"plain": 110, "deepspeed": 170, "lora": 90, "beta": 110}
BUDGETS_TINY = {"plain": 240, "deepspeed": 480, "lora": 240, "beta": 240}

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
# Model folder.


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


def write_bench(folder: Path) -> list[str]:
    """A bench folder: the fixture PDFs and tests plus EXTRA_TESTS (`olmocr-rl prepare` renders it
    for every variant); returns the test ids of the sample paper's page."""
    from olmocr_rl import BenchSuite

    shutil.copytree(ROOT / "bench_fixtures" / "pdfs", folder / "pdfs")
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


# ----------------------------------------------------------------------------------------------
# The runs.


def write_random_weights(model_dir: Path, cuda: bool) -> None:
    """Random (seeded) bf16 weights for the config in `model_dir`, saved beside it, built in a
    child process (this one never holds a CUDA context while the variants run)."""
    code = (
        "import sys, torch\n"
        "from transformers import AutoConfig, AutoModelForImageTextToText\n"
        "d = sys.argv[1]\n"
        "torch.manual_seed(0)\n"
        f"with torch.device({'cuda' if cuda else 'cpu'!r}):\n"
        "    m = AutoModelForImageTextToText.from_config(AutoConfig.from_pretrained(d), dtype=torch.bfloat16)\n"
        "m.save_pretrained(d)\n"
    )
    subprocess.run([sys.executable, "-c", code, str(model_dir)], check=True)


CALIBRATION_LENGTHS = (2048, 8192)


def calibrate_child(model_dir: str, json_out: str, lengths: tuple[int, ...]) -> None:
    """In a child process: the text decoder of the model's config, random weights on the device, one
    forward and backward per (weights, checkpointing, length); records what the allocator holds after
    the forward (the saved activations) and at its peak, over the model states, next to
    olmocr_rl/train/memory.py's formulas (the text stack's activations; autocast's weight copies)."""
    import torch
    from transformers import AutoConfig, AutoModelForImageTextToText

    from olmocr_rl.train.memory import per_token_layer, stack_activations
    from olmocr_rl.train.shape import read_shape

    device = "cuda" if torch.cuda.is_available() else "cpu"
    shape = read_shape(model_dir)
    text = shape.text
    out = []
    for weights in ("bfloat16", "float32 + bf16 autocast"):
        dtype = torch.bfloat16 if weights == "bfloat16" else torch.float32
        torch.manual_seed(0)
        with torch.device(device):
            model = AutoModelForImageTextToText.from_config(AutoConfig.from_pretrained(model_dir), dtype=dtype)
        lm = model.model.language_model
        autocast = dtype == torch.float32
        for checkpointing in (False, True):
            if checkpointing:
                model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
            model.train()
            for length in lengths:
                ids = torch.randint(0, shape.vocab - 16, (1, length), device=device)  # clear of the special tokens
                model.zero_grad(set_to_none=True)
                if device == "cuda":
                    torch.cuda.synchronize()
                    torch.cuda.reset_peak_memory_stats()
                base = torch.cuda.memory_allocated() if device == "cuda" else 0
                with torch.autocast(device, dtype=torch.bfloat16, enabled=autocast):
                    hidden = lm(input_ids=ids, use_cache=False).last_hidden_state
                loss = hidden.float().pow(2).mean()
                held = (torch.cuda.memory_allocated() - base) if device == "cuda" else 0
                forward_peak = (torch.cuda.max_memory_allocated() - base) if device == "cuda" else 0
                loss.backward()
                peak = (torch.cuda.max_memory_allocated() - base) if device == "cuda" else 0
                del hidden, loss
                w = 2 if dtype == torch.bfloat16 else 4
                formula = stack_activations(text, length, w, autocast, checkpointing)
                copies = 2 * text.linear_params if autocast else 0
                out.append({"weights": weights, "checkpointing": checkpointing, "tokens": length,
                            "held_after_forward_gib": held / 2**30, "forward_peak_gib": forward_peak / 2**30, "step_peak_gib": peak / 2**30,
                            "formula_activations_gib": formula / 2**30, "formula_autocast_copies_gib": copies / 2**30,
                            "per_token_layer_bytes": per_token_layer(text, w, autocast),
                            "held_over_formula": (held / (formula + (copies if not checkpointing else 0))) if formula else None})  # fmt: skip
                print(f"gpu_check: [calibrate] {weights}, checkpointing {checkpointing}, {length} tokens: held {held / 2**30:.2f} GiB "
                      f"(formula {(formula + (copies if not checkpointing else 0)) / 2**30:.2f}), forward peak {forward_peak / 2**30:.2f}, "
                      f"step peak {peak / 2**30:.2f} GiB", flush=True)  # fmt: skip
        del model, lm
        if device == "cuda":
            torch.cuda.empty_cache()
    Path(json_out).write_text(json.dumps(out, indent=2))


def calibrate(model_dir: Path, work: Path, tiny: bool) -> dict:
    """The activation calibration in its own process (this one holds no CUDA context)."""
    out = work / "calibration.json"
    lengths = "64,128" if tiny else ",".join(map(str, CALIBRATION_LENGTHS))
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, __file__, "--calibrate-child", str(model_dir), str(out), lengths], capture_output=True, text=True
    )
    print(proc.stdout, end="", flush=True)
    rec: dict = {"wall_s": time.perf_counter() - t0}
    if proc.returncode != 0:
        null(rec, "rows", None, f"the calibration failed: {(proc.stderr.strip().splitlines() or ['?'])[-1]}")
        rec["stderr_tail"] = proc.stderr[-3000:]
        return rec
    rec["rows"] = json.loads(out.read_text())
    return rec


def recipe(args: argparse.Namespace, cuda: bool) -> dict:
    """The training config every variant shares (its own overrides come on the command line)."""
    return {
        "num_generations": args.num_generations, "per_device_train_batch_size": args.per_device_batch,
        "gradient_accumulation_steps": 2, "max_completion_length": args.completion_length, "max_steps": args.steps,
        "max_prompt_tokens": 4096, "logging_steps": 1, "save_steps": 0, "eval_split": "none", "final_outputs": "none",
        "learning_rate": 1.0e-6, "warmup_steps": 0, "temperature": 1.0, "report_to": ["none"], "progress": False,
        "log_completions": False, "dataloader_num_workers": 0, "seed": 0, "bf16": cuda,
        "gradient_checkpointing": {"on": True, "off": False}.get(args.gradient_checkpointing, cuda),
        "lora_target_modules": ["q_proj", "k_proj", "v_proj", "o_proj"],
        "rewards": {"bench": 1.0, "medoid": 0.5},
    }  # fmt: skip


def train_argv(name: str, prepared: Path, model: Path, out: Path, config: Path, ds_procs: int) -> list[str]:
    argv = [sys.executable, "-m", "olmocr_rl.cli", "train", str(prepared), "--model", str(model), "-o", str(out), "--config", str(config)]
    if name == "deepspeed":
        argv += ["--launcher", "deepspeed", "--zero", "2", "--num-processes", str(ds_procs)]
    return argv + OVERRIDES[name]


def run_variant(name: str, argv: list[str], work: Path, budget: float, completions_per_step: int) -> dict:
    """One `olmocr-rl train` run, stopped (with every process it started) past its budget."""
    from olmocr_rl.procs import ProcessTree

    out = Path(argv[argv.index("-o") + 1])
    log = work / f"{name}.log"
    rec: dict = {"name": name, "description": DESCRIPTIONS[name], "budget_s": budget, "command": argv[2:]}
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    print(f"gpu_check: [{name}] {DESCRIPTIONS[name]}; budget {budget:.0f} s; log {log}", flush=True)
    t0 = time.perf_counter()
    tree = ProcessTree()
    with open(log, "w") as lf:
        proc = tree.spawn(argv, env, stdout=lf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            rc = proc.wait(timeout=budget)
            timed_out = False
        except subprocess.TimeoutExpired:
            timed_out = True
            rc = None
        tree.stop(grace=15)
    rec["wall_s"] = time.perf_counter() - t0
    null(rec, "exit_code", rc if rc is not None else proc.returncode, "stopped at its time budget")
    rec.update(read_run(out, completions_per_step))
    if timed_out:
        rec["status"] = "timeout"
        rec["error"] = f"stopped after {rec['wall_s']:.0f} s (budget {budget:.0f} s); {len(rec['steps'])} step(s) logged"
    elif rc != 0:
        rec["status"] = "failed"
        rec["error"] = (tail(log, 3) or f"exit code {rc}").strip().splitlines()[-1]
    else:
        rec["status"] = "ok"
    if rec["status"] != "ok":
        rec["log_tail"] = tail(log)
    print(f"gpu_check: [{name}] {rec['status']}, {len(rec['steps'])} step(s), {rec['wall_s']:.0f} s", flush=True)
    if rec["status"] != "ok":
        print("\n".join("    " + ln for ln in rec["log_tail"].splitlines()[-25:]), flush=True)
    return rec


def read_run(out: Path, completions_per_step: int) -> dict:
    """A run's figures from its own logs: a step per `time/step_s` row of logs/metrics.jsonl."""
    rec: dict = {"steps": []}
    rows = []
    try:
        for line in (out / "logs" / "metrics.jsonl").read_text().splitlines():
            try:
                rows.append(json.loads(line))
            except ValueError:
                continue  # a line cut by the stop
    except OSError:
        pass
    tokens_seen = 0.0
    for r in rows:
        if "time/step_s" not in r:
            continue
        completions = r.get("completions/mean_length")
        step = {
            "step": r["step"], "time_s": r["time/step_s"], "generation_s": r["time/generation_s"], "reward_s": r["time/reward_s"],
            "forward_backward_s": r["time/forward_backward_s"], "other_s": r["time/other_s"], "peak_memory_gib": r["memory/peak_gib"],
            "mean_reward": r.get("reward"), "mean_completion_length": completions,
        }  # fmt: skip
        step["reward_share"] = step["reward_s"] / step["time_s"] if step["time_s"] > 0 else 0.0
        if "num_tokens" in r:
            null(step, "tokens", float(r["num_tokens"]) - tokens_seen, "")
            tokens_seen = float(r["num_tokens"])
        else:
            null(step, "tokens", None, "trl logged no num_tokens for this step")
        rec["steps"].append(step)
    try:
        summary = json.loads((out / "train_summary.json").read_text())
    except (OSError, ValueError):
        summary = {}
    null(rec, "weights_moved", summary.get("weights_moved"), "the run wrote no train_summary.json (it did not finish)")
    null(rec, "memory", summary.get("memory"), "no train_summary.json, or no CUDA (the estimate is recorded for CUDA runs)")
    try:
        cfg = json.loads((out / "train_config.json").read_text())
        rec["config"] = {k: cfg[k] for k in ("lora", "beta", "bf16", "dtype", "num_generations", "max_completion_length", "max_steps")}
    except (OSError, ValueError, KeyError):
        null(rec, "config", None, "no train_config.json")
    rec["summary"] = summarize(rec["steps"], completions_per_step)
    return rec


SUMMED = ("time_s", "generation_s", "forward_backward_s", "reward_s", "other_s")


def summarize(steps: list[dict], completions_per_step: int) -> dict:
    """Means over the timed steps (all but the first, which warms up; the only one if one)."""
    s: dict = {}
    timed = steps[1:] if len(steps) > 1 else steps
    s["timed_steps"] = [st["step"] for st in timed]
    if not timed:
        for key in (*SUMMED, "generated_tokens_per_s", "tokens_per_s", "reward_share", "peak_memory_gib", "mean_reward"):
            null(s, key, None, "no step completed")
        return s
    for key in SUMMED:
        s[key] = sum(st[key] for st in timed) / len(timed)
    toks = [st["tokens"] for st in timed if st.get("tokens") is not None]
    null(s, "tokens_per_s", sum(toks) / sum(st["time_s"] for st in timed) if toks else None, "trl logged no num_tokens")
    lengths = [st["mean_completion_length"] for st in timed if st.get("mean_completion_length") is not None]
    gen = sum(st["generation_s"] for st in timed)
    s["completions_per_step"] = completions_per_step
    generated = sum(lengths) * completions_per_step / gen if len(lengths) == len(timed) and gen > 0 else None
    null(s, "generated_tokens_per_s", generated, "trl logged no completions/mean_length, or no generation time")
    s["reward_share"] = s["reward_s"] / s["time_s"] if s["time_s"] > 0 else 0.0
    s["peak_memory_gib"] = max(st["peak_memory_gib"] for st in steps)
    rewards = [st["mean_reward"] for st in timed if st.get("mean_reward") is not None]
    null(s, "mean_reward", sum(rewards) / len(rewards) if rewards else None, "no reward logged")
    return s


def realistic_share(rec: dict, realistic_s: float) -> None:
    """The reward's share of the step had the completions been realistic pages (random ones hold
    no tables or math): the step with its reward time replaced by the realistic pages' time."""
    s = rec["summary"]
    if s.get("time_s"):
        step = s["time_s"] - s["reward_s"] + realistic_s
        s["reward_share_realistic_pages"] = realistic_s / step if step > 0 else 0.0
    else:
        null(s, "reward_share_realistic_pages", None, "no step completed")


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
        "schema": "olmocr-rl gpu_check 3",
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
    model_dir = work / "model"
    if args.tiny:
        from tiny_vlm import build_tiny_vlm

        build_tiny_vlm(model_dir)
        model = {"shape": "tiny Qwen2.5-VL (bench_fixtures/tiny_vlm.py)", "text_layers": 2}
        null(model, "estimated_gib_per_gpu", None, "CPU run")
        longest = 112
    else:
        probe = "import torch; p = torch.cuda.get_device_properties(0); print(p.total_memory); print(p.name)"
        total, name = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split("\n")[:2]
        layers, params, est = choose_text_layers(args.text_layers, int(total), ds_procs)
        write_3b_model_dir(model_dir, layers)
        write_random_weights(model_dir, cuda)
        model = {"shape": f"Qwen2.5-VL-3B shapes, {layers}/36 text layers, {params / 1e9:.2f} B params, random weights",
                 "text_layers": layers, "estimated_gib_per_gpu": round(est, 1), "gpu_memory_gib": round(int(total) / 2**30, 1)}  # fmt: skip
        longest = PAGE_SIZE[0]
    report["model"] = model
    report["model_written_s"] = time.perf_counter() - t0
    test_ids = write_bench(work / "bench")
    prepared = work / "prepared"
    prep = subprocess.run([sys.executable, "-m", "olmocr_rl.cli", "prepare", str(work / "bench"), str(prepared), "--longest-side",
                           str(longest), "--quiet"], capture_output=True, text=True)  # fmt: skip
    if prep.returncode != 0:
        print(f"gpu_check: olmocr-rl prepare failed:\n{prep.stdout[-3000:]}{prep.stderr[-3000:]}")
        return 2
    rows = [json.loads(line) for line in (prepared / "train.jsonl").read_text().splitlines()]
    from olmocr_rl import BenchSuite

    suite = BenchSuite.load(work / "bench")
    types: dict[str, int] = {}
    for i in suite.ids:
        types[suite.info(i).type] = types.get(suite.info(i).type, 0) + 1
    shared = recipe(args, cuda)
    config = work / "recipe.json"
    config.write_text(json.dumps(shared, indent=2))
    from olmocr_rl.image_tokens import model_budget, row_tokens

    budget = model_budget(str(model_dir))[0]  # the model's own processor (olmocr_rl/image_tokens.py)
    report["settings"] = {**shared, "deepspeed_processes": ds_procs, "page_longest_side": longest,
                          "image_tokens": sorted({row_tokens(r, budget) for r in rows})}  # fmt: skip
    report["reward"] = {"test_ids": test_ids, "tests": len(suite.ids), "types": types, "pages": len(rows),
                        "suite": "bench_fixtures/*.jsonl + gpu_check EXTRA_TESTS (math, table)"}  # fmt: skip
    report["reward"]["realistic_pages"] = realistic_reward_cost(work / "bench", test_ids, args.per_device_batch * 2)
    report["setup_s"] = time.perf_counter() - t0
    print(f"gpu_check: {model['shape']}; {len(rows)} prepared pages; setup {report['setup_s']:.1f} s", flush=True)

    if not args.no_calibrate:
        report["calibration"] = calibrate(model_dir, work, args.tiny)
        write_report(report, json_path)
    budgets = dict(BUDGETS_TINY if args.tiny else BUDGETS_GPU)
    if args.budget_s:
        budgets = {k: float(args.budget_s) for k in budgets}
    report["variants"] = []
    for name in variants:
        argv = train_argv(name, prepared, model_dir, work / "runs" / name, config, ds_procs)
        world = ds_procs if name == "deepspeed" else 1
        rec = run_variant(name, argv, work, budgets[name], args.per_device_batch * 2 * world)  # x 2 accumulation steps
        rec["world_size"] = world
        realistic_share(rec, report["reward"]["realistic_pages"]["seconds"])
        report["variants"].append(rec)
        write_report(report, json_path)  # a partial report survives a kill of this process
    report["wall_s"] = time.perf_counter() - T_START
    report["ok"] = all(v["status"] == "ok" and (v.get("weights_moved") or {}).get("share", 0) > 0.5 for v in report["variants"])
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
    print(f"reward           {r['reward']['tests']} tests on {r['reward']['pages']} pages "
          f"({', '.join(f'{k} {n}' for k, n in r['reward']['types'].items())}); realistic pages: {rp['ms_per_completion']:.2f} ms per completion")  # fmt: skip
    for var in r["variants"]:
        s = var["summary"]
        print(f"\n--- {var['name']}: {var['status']} (world size {var['world_size']})")
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
        print(f"peak memory      {s['peak_memory_gib']:.2f} GiB ({'CUDA, rank 0' if r['mode'] == 'gpu' else 'process max RSS, rank 0'})")
        print(
            f"reward share     {100 * s['reward_share']:.2f} % of the step ({100 * s['reward_share_realistic_pages']:.2f} % with realistic pages)"
        )
        mem = var.get("memory") or {}
        if mem.get("measured_peak_gib") is not None:
            print(f"memory estimate  {mem['estimate_gib']:.2f} GiB estimated, {mem['measured_peak_gib']:.2f} GiB allocated at the peak "
                  f"(measured / estimate = {mem['measured_over_estimate']:.2f})")  # fmt: skip
        moved = var.get("weights_moved") or {}
        print(
            f"weights moved    {100 * moved.get('share', 0):.1f} % of a sample, median step {moved.get('median_change_over_lr', 0):.2f} x lr"
        )
    print(f"\njson             {r['json']}")
    print(f"result           {'all variants ok' if r['ok'] else 'FAILED: ' + ', '.join(x['name'] + ' ' + x['status'] for x in r['variants'] if x['status'] != 'ok')}"
          f" ({r['wall_s']:.0f} s)")  # fmt: skip


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tiny", action="store_true", help="CPU-sized: the tiny fixture model; DeepSpeed on 2 ranks")
    p.add_argument("--out", default=os.environ.get("GPU_CHECK_OUT", "/tmp/olmocr-rl-gpu-check"),
                   help="work folder (model, runs, logs); the JSON too unless $OUT or --json say otherwise")  # fmt: skip
    p.add_argument("--json", help="where to write the JSON (default: $OUT/gpu_check.json, else OUT_DIR/gpu_check.json)")
    p.add_argument("--kit", help="the GPU kit folder (set by gpu_check.sh --kit): its manifest and coverage go in the JSON")
    p.add_argument("--variants", default=",".join(VARIANTS), help=f"comma-separated, of {', '.join(VARIANTS)}")
    p.add_argument("--num-processes", type=int, default=0, help="DeepSpeed variant's processes (default: 1 on GPU, 2 with --tiny)")
    p.add_argument("--steps", type=int, default=0, help="GRPO steps per variant (default: 3 on GPU, 2 with --tiny)")
    p.add_argument("--budget-s", type=float, default=0, help="seconds per variant (default: per variant, see BUDGETS_*)")
    p.add_argument("--num-generations", type=int, default=8)
    p.add_argument("--per-device-batch", type=int, default=4, help="completions per forward micro-batch")
    p.add_argument("--completion-length", type=int, default=1024)
    p.add_argument("--text-layers", default="auto", help="'auto' (fit the GPU) or 1-36")
    p.add_argument(
        "--gradient-checkpointing", choices=["auto", "on", "off"], default="auto", help="auto: on for the GPU model, off with --tiny"
    )
    p.add_argument("--no-calibrate", action="store_true", help="skip the activation calibration")
    p.add_argument("--calibrate-child", nargs=3, metavar=("MODEL", "JSON", "LENGTHS"), help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.calibrate_child:
        model, out, lengths = a.calibrate_child
        calibrate_child(model, out, tuple(int(x) for x in lengths.split(",")))
        return 0
    if a.tiny:
        a.completion_length = min(a.completion_length, 32)
    a.steps = a.steps or (2 if a.tiny else 3)
    return outer(a)


if __name__ == "__main__":
    raise SystemExit(main())
