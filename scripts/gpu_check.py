"""A few GRPO steps of a randomly initialised, realistic-size VLM under DeepSpeed ZeRO (default:
Qwen2.5-VL-3B shapes, ZeRO-2, one process per GPU), with the real olmOCR-bench reward on the
bundled fixture tests; prints step time, tokens/s, peak memory and the reward's share of the step.

Everything is offline: the model config is written here (random weights, built on the GPU), the
tokenizer is a byte-level BPE padded to Qwen's 151,936-token vocabulary with Qwen's special-token
ids, and page images are synthetic 1288x1008 pages (1,656 image tokens, olmOCR's render size).

    python scripts/gpu_check.py                # GPU machine (see scripts/gpu_check.sh)
    python scripts/gpu_check.py --tiny         # CPU-sized variant: the tiny fixture model, 2 ranks

Memory: ZeRO-2 with bf16 and AdamW keeps about 20 bytes per parameter when the optimizer state is
not sharded (one GPU): the full 3.75 B-parameter model needs ~75 GB before activations. With
`--text-layers auto` (default) the text stack keeps its real width but drops layers until the
estimate fits the GPU (all 36 layers on a 139 GB H200; fewer on an 80 GB H100); the chosen shape is
printed. `--text-layers 36` forces the full depth.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench_fixtures"))

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


# ----------------------------------------------------------------------------------------------
# Outer process: build the offline model folder, launch the ranks, print the summary.


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
    """(text layers, parameters, estimated GiB per GPU)."""
    per_param = BYTES_PER_PARAM[0] + BYTES_PER_PARAM[1] / num_processes
    full = count_params(qwen25_vl_3b_config(36))
    per_layer = (full - count_params(qwen25_vl_3b_config(35)))
    layers = 36 if requested == "auto" else int(requested)
    if requested == "auto":
        budget = gpu_bytes / 2**30 - HEADROOM_GIB
        while layers > 1 and (full - (36 - layers) * per_layer) * per_param / 2**30 > budget:
            layers -= 1
    params = full - (36 - layers) * per_layer
    return layers, params, params * per_param / 2**30


def qwen_tokenizer():
    """Byte-level BPE with Qwen's vocabulary size and special-token ids (fillers in between)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast
    from tiny_vlm import CHAT_TEMPLATE

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
    from transformers import GenerationConfig, Qwen2_5_VLProcessor, Qwen2VLImageProcessor
    from transformers.models.qwen2_vl.video_processing_qwen2_vl import Qwen2VLVideoProcessor
    from tiny_vlm import CHAT_TEMPLATE

    out.mkdir(parents=True, exist_ok=True)
    qwen25_vl_3b_config(text_layers).save_pretrained(out)
    GenerationConfig(eos_token_id=151645, pad_token_id=151643, bos_token_id=151643, do_sample=True).save_pretrained(out)
    pixels = dict(patch_size=14, temporal_patch_size=2, merge_size=2, min_pixels=3136, max_pixels=PAGE_SIZE[0] * PAGE_SIZE[1])
    Qwen2_5_VLProcessor(
        image_processor=Qwen2VLImageProcessor(**pixels), tokenizer=qwen_tokenizer(),
        video_processor=Qwen2VLVideoProcessor(**pixels), chat_template=CHAT_TEMPLATE,
    ).save_pretrained(out)  # fmt: skip


def outer(args: argparse.Namespace) -> int:
    try:
        import deepspeed  # noqa: F401
        import torch
        import trl  # noqa: F401
    except ImportError as e:
        print(f"gpu_check: missing training dependencies ({e}); run `make setup` (pip install -e '.[dev]')")
        return 2
    from olmocr_rl.train.launch import build_launch_argv, format_plan, launch_env

    cuda = torch.cuda.is_available()
    if not cuda and not args.tiny:
        print("gpu_check: no CUDA device visible; use --tiny for the CPU-sized variant")
        return 2
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    nproc = args.num_processes or (torch.cuda.device_count() if cuda and not args.tiny else 2)
    t0 = time.perf_counter()
    if args.tiny:
        from tiny_vlm import build_tiny_vlm

        model_dir = build_tiny_vlm(out / "model")
        shape = "tiny Qwen2.5-VL (fixture)"
        page = (168, 112)
    else:
        # Ask a child process, so this one never holds a CUDA context (memory on GPU 0) while the ranks run.
        probe = "import torch; p = torch.cuda.get_device_properties(0); print(p.total_memory); print(p.name)"
        total, name = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split("\n")[:2]
        gpu = argparse.Namespace(total_memory=int(total), name=name)
        layers, params, est = choose_text_layers(args.text_layers, gpu.total_memory, nproc)
        model_dir = out / "model"
        write_3b_model_dir(model_dir, layers)
        shape = (
            f"Qwen2.5-VL-3B shapes, {layers}/36 text layers, {params / 1e9:.2f} B params, "
            f"est. {est:.0f} GiB/GPU of {gpu.total_memory / 2**30:.0f} GiB ({gpu.name})"
        )
        page = PAGE_SIZE
    settings = dict(
        model_dir=str(model_dir), tiny=args.tiny, steps=args.steps, num_generations=args.num_generations,
        per_device_batch=args.per_device_batch, completion_length=args.completion_length, page=page,
        out=str(out), shape=shape, cuda=cuda,
    )  # fmt: skip
    cfg = out / "gpu_check.json"
    cfg.write_text(json.dumps(settings, indent=2))
    argv = build_launch_argv(
        cfg, num_processes=nproc, zero=args.zero, mixed_precision="bf16" if cuda else "no",
        program=[str(Path(__file__).resolve()), "--inner", str(cfg)],
    )  # fmt: skip
    env = launch_env(nproc)
    print(f"gpu_check: {shape}; ZeRO-{args.zero}, {nproc} process(es); setup {time.perf_counter() - t0:.1f} s")
    print("gpu_check: " + format_plan(argv, env), flush=True)
    (out / "result.json").unlink(missing_ok=True)
    rc = subprocess.run(argv, env=env).returncode
    if rc != 0 or not (out / "result.json").is_file():
        print(f"gpu_check: FAILED (exit code {rc})")
        return rc or 1
    r = json.loads((out / "result.json").read_text())
    print("\n=== gpu_check summary ===")
    print(f"model            {shape}")
    print(f"distributed      {r['distributed']} (ZeRO-{args.zero}), world size {r['world_size']}")
    print(f"batch            {r['completions_per_step']} completions/step ({args.num_generations} per prompt), "
          f"<= {args.completion_length} new tokens, {r['prompt_tokens']} prompt tokens ({r['image_tokens']} image)")
    print(f"step time        {r['step_time_s']:.2f} s (mean of steps {r['timed_steps']}; all: "
          f"{', '.join(f'{s:.2f}' for s in r['step_times_s'])})")
    print(f"tokens/s         {r['tokens_per_s']:.0f} processed (prompt + completion), "
          f"{r['completion_tokens_per_s']:.0f} generated")
    print(f"peak memory      {r['peak_memory_gib']:.2f} GiB ({r['memory_kind']}, rank 0)")
    print(f"reward share     {100 * r['reward_share']:.2f} % of the step ({r['reward_s']:.3f} s/step in the bench reward)")
    print(f"mean reward      {r['mean_reward']:.3f}")
    return 0


# ----------------------------------------------------------------------------------------------
# Inner process: one rank under accelerate launch.


def page_image(size: tuple[int, int], seed: int):
    from PIL import Image, ImageDraw

    img = Image.new("RGB", size, "white")
    draw = ImageDraw.Draw(img)
    lines = ["Sparse Attention for Long Documents", "We study sparse attention patterns", "Table 1: results"]
    step = max(12, size[1] // 40)
    for i, y in enumerate(range(step, size[1] - step, step)):
        draw.text((step, y), f"{lines[(i + seed) % len(lines)]} {seed}.{i}", fill="black")
    return img


def inner(cfg_path: str) -> int:
    import torch
    from datasets import Dataset
    from transformers import AutoModelForImageTextToText, AutoProcessor, AutoConfig, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from olmocr_rl import BenchReward, BenchSuite

    s = json.loads(Path(cfg_path).read_text())
    cuda = s["cuda"]
    world = int(os.environ.get("WORLD_SIZE", "1"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    suite = BenchSuite.load(ROOT / "bench_fixtures")
    test_ids = [i for i in suite.ids if suite.info(i).pdf == "sample_paper.pdf"]
    reward = BenchReward(suite)
    timing = {"reward_s": 0.0, "completion_tokens": 0, "rewards": []}

    def olmocr_bench(completions, completion_ids, test_ids, **kwargs):
        t = time.perf_counter()
        out = reward(completions=completions, test_ids=test_ids, **kwargs)
        timing["reward_s"] += time.perf_counter() - t
        timing["completion_tokens"] += sum(len(c) for c in completion_ids)
        timing["rewards"] += [r for r in out if r is not None]
        return out

    grad_accum = 2
    args = GRPOConfig(
        output_dir=str(Path(s["out"]) / "run"), per_device_train_batch_size=s["per_device_batch"],
        gradient_accumulation_steps=grad_accum, num_generations=s["num_generations"],
        max_completion_length=s["completion_length"], max_steps=s["steps"], logging_steps=1, learning_rate=1e-6,
        temperature=1.0, beta=0.0, loss_type="bnpo", bf16=cuda, gradient_checkpointing=not s["tiny"],
        report_to=[], save_strategy="no", dataloader_num_workers=0, seed=0,
        use_cpu=not cuda, ddp_backend=None if cuda else "gloo",
        # A random policy samples any id; keep it from emitting vision placeholders in completions.
        generation_kwargs={"suppress_tokens": [151652, 151653, 151654, 151655, 151656] if not s["tiny"] else [259, 260, 261, 262]},
    )  # fmt: skip
    gen_batch = s["per_device_batch"] * world * grad_accum
    processor = AutoProcessor.from_pretrained(s["model_dir"])
    torch.manual_seed(0)
    if s["tiny"]:
        model = AutoModelForImageTextToText.from_pretrained(s["model_dir"])
    else:
        config = AutoConfig.from_pretrained(s["model_dir"])
        with torch.device(f"cuda:{local_rank}"):
            model = AutoModelForImageTextToText.from_config(config, dtype=torch.bfloat16)
    prompt = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "Convert this page to markdown."}]}]
    n_rows = max(8, s["steps"] * gen_batch // s["num_generations"] * 2)
    rows = [{"prompt": prompt, "image": page_image(tuple(s["page"]), i), "test_ids": test_ids} for i in range(n_rows)]
    enc = processor.apply_chat_template([[{**prompt[0], "content": [{"type": "image", "image": rows[0]["image"]}, prompt[0]["content"][1]]}]],
                                        tokenize=True, return_dict=True, add_generation_prompt=True)
    ids = enc["input_ids"][0]
    image_tokens = sum(1 for t in ids if t == processor.tokenizer.convert_tokens_to_ids("<|image_pad|>"))

    class Timer(TrainerCallback):
        def __init__(self):
            self.steps: list[dict] = []
            self.logs: list[dict] = []

        def on_step_begin(self, a, state, control, **kw):
            if cuda:
                torch.cuda.synchronize()
            self.t = time.perf_counter()
            self.r0, self.c0 = timing["reward_s"], timing["completion_tokens"]

        def on_step_end(self, a, state, control, **kw):
            if cuda:
                torch.cuda.synchronize()
            self.steps.append({"time": time.perf_counter() - self.t, "reward_s": timing["reward_s"] - self.r0,
                               "completion_tokens": timing["completion_tokens"] - self.c0})

        def on_log(self, a, state, control, logs=None, **kw):
            self.logs.append(dict(logs or {}))

    timer = Timer()
    trainer = GRPOTrainer(model=model, args=args, processing_class=processor, reward_funcs=[olmocr_bench],
                          train_dataset=Dataset.from_list(rows), callbacks=[timer])  # fmt: skip
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    trainer.train()
    if trainer.accelerator.process_index != 0:
        return 0
    steps = timer.steps
    timed = list(range(1, len(steps))) if len(steps) > 1 else [0]  # the first step warms up
    step_time = sum(steps[i]["time"] for i in timed) / len(timed)
    num_tokens = [lg["num_tokens"] for lg in timer.logs if "num_tokens" in lg]
    per_step_tokens = [b - a for a, b in zip([0.0] + num_tokens, num_tokens)]
    tokens = sum(per_step_tokens[i] for i in timed if i < len(per_step_tokens)) / len(timed) if per_step_tokens else 0.0
    # Completion tokens: rank 0 saw 1/world of them.
    gen_tokens = sum(steps[i]["completion_tokens"] for i in timed) / len(timed) * world
    reward_s = sum(steps[i]["reward_s"] for i in timed) / len(timed)
    if cuda:
        peak, kind = torch.cuda.max_memory_allocated() / 2**30, "torch.cuda.max_memory_allocated"
    else:
        peak, kind = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, "process max RSS"
    result = dict(
        distributed=str(trainer.accelerator.distributed_type), world_size=trainer.accelerator.num_processes,
        completions_per_step=gen_batch, prompt_tokens=len(ids), image_tokens=image_tokens,
        step_times_s=[st["time"] for st in steps], timed_steps=[i + 1 for i in timed], step_time_s=step_time,
        tokens_per_s=tokens / step_time, completion_tokens_per_s=gen_tokens / step_time,
        peak_memory_gib=peak, memory_kind=kind, reward_s=reward_s, reward_share=reward_s / step_time,
        mean_reward=sum(timing["rewards"]) / max(1, len(timing["rewards"])), logs=timer.logs,
    )  # fmt: skip
    (Path(s["out"]) / "result.json").write_text(json.dumps(result, indent=2))
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--inner", help=argparse.SUPPRESS)
    p.add_argument("--tiny", action="store_true", help="CPU-sized variant: the tiny fixture model on 2 ranks")
    p.add_argument("--out", default=os.environ.get("GPU_CHECK_OUT", "/tmp/olmocr-rl-gpu-check"))
    p.add_argument("--zero", type=int, default=2, choices=[1, 2, 3])
    p.add_argument("--num-processes", type=int, default=0, help="default: one per visible GPU (--tiny: 2)")
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--num-generations", type=int, default=8)
    p.add_argument("--per-device-batch", type=int, default=4, help="completions per forward micro-batch")
    p.add_argument("--completion-length", type=int, default=512)
    p.add_argument("--text-layers", default="auto", help="'auto' (fit the GPU) or 1-36")
    a = p.parse_args()
    if a.inner:
        from olmocr_rl.train.launch import shutdown_process_group

        code = inner(a.inner)
        if code == 0:
            shutdown_process_group()  # else gloo can abort a finished rank at exit
        return code
    if a.tiny:
        a.completion_length = min(a.completion_length, 32)
    return outer(a)


if __name__ == "__main__":
    raise SystemExit(main())
