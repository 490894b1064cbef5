"""The 7-8B plans docs/training.md shows, regenerated from the code, not typed: the olmOCR 2 recipe
(`--config olmocr2`) on the nodes upstream's users ask about, planned by `olmocr-rl train --dry-run`
for an olmOCR-2-7B-shaped model (Qwen2.5-VL-7B's config and safetensors headers over sparse files,
its preprocessor_config.json; nothing downloaded), the bench fixtures prepared at 1288 px.

    .venv/bin/python scripts/plan_tables.py [--before REV] [--image-tokens] [--model-states]

Prints, in markdown: the worked example's memory block (the CLI's own lines), the table of the
smallest setups with each one's peak per GPU, and with --before REV the same plans under that
revision's memory estimate (olmocr_rl/train/memory.py at REV, read with `git show`, given the same
model, layout and tokens), so that what a change to the estimate moved is shown, not retyped.
--image-tokens: our image tokens next to transformers' processors' (tests/test_image_tokens.py's
configs and pages). --model-states: the tiny Qwen3-VL's and Qwen3-VL-MoE's model states next to
the bytes of their real tensors at the first optimizer step on CPU (tests/memory_probe.py, ~2 min).
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

# (node, GPUs, GiB per GPU, setup, launch options, overrides); GiB as torch reports an 80 GB H100 / a 48 GB A6000.
COLOCATED = ["use_vllm=true", "vllm_mode=colocate", "vllm_gpu_memory_utilization=0.3", "vllm_enable_sleep_mode=true"]
SETUPS = [
    ("4 x 80 GB, server on 1 GPU, 3 ranks", 4, 79.0, "ZeRO-3", {"zero": 3, "vllm_gpus": 1}, []),
    ("4 x 80 GB, server on 1 GPU, 3 ranks", 4, 79.0, "ZeRO-2", {"zero": 2, "vllm_gpus": 1}, []),
    ("4 x 80 GB, colocated vLLM (0.3, sleep mode), 4 ranks", 4, 79.0, "ZeRO-3", {"zero": 3, "num_processes": 4}, COLOCATED),
    ("4 x 80 GB, colocated vLLM (0.3, sleep mode), 4 ranks", 4, 79.0, "ZeRO-2", {"zero": 2, "num_processes": 4}, COLOCATED),
    ("8 x 48 GB, server on 1 GPU, 7 ranks", 8, 47.5, "ZeRO-3", {"zero": 3, "vllm_gpus": 1}, []),
    ("8 x 48 GB, server on 1 GPU, 7 ranks", 8, 47.5, "ZeRO-2", {"zero": 2, "vllm_gpus": 1}, []),
    ("8 x 48 GB, server on 1 GPU, 7 ranks", 8, 47.5, "ZeRO-2, beta = 0", {"zero": 2, "vllm_gpus": 1}, ["beta=0"]),
    ("8 x 48 GB, colocated vLLM (0.3, sleep mode), 8 ranks", 8, 47.5, "ZeRO-3", {"zero": 3, "num_processes": 8}, COLOCATED),
    ("8 x 48 GB, colocated vLLM (0.3, sleep mode), 8 ranks", 8, 47.5, "ZeRO-2", {"zero": 2, "num_processes": 8}, COLOCATED),
    ("4 x 48 GB, 4 ranks, colocated vLLM (0.3, sleep mode)", 4, 47.5, "LoRA, ZeRO-2", {"zero": 2, "num_processes": 4}, [*COLOCATED, "lora=true"]),
    ("4 x 48 GB, 4 ranks, colocated vLLM (0.3, sleep mode)", 4, 47.5, "LoRA, ZeRO-3", {"zero": 3, "num_processes": 4}, [*COLOCATED, "lora=true"]),
    ("4 x 48 GB, 4 ranks, colocated vLLM (0.3, sleep mode)", 4, 47.5, "full, ZeRO-3", {"zero": 3, "num_processes": 4}, COLOCATED),
]  # fmt: skip
EXAMPLE = ("8 x 80 GB, server on 1 GPU, 7 ranks", 8, 79.0, "ZeRO-2", {"zero": 2, "vllm_gpus": 1}, [])


def inputs(work: Path) -> tuple[Path, Path]:
    """The 7B-shaped model folder and the prepared fixtures (1288 px pages)."""
    from test_memory import seven_b_folder

    from olmocr_rl.prepare import PrepareOptions, prepare

    model = work / "olmOCR-2-7B-shaped"
    seven_b_folder(model, processor=True)
    prepared = work / "prepared"
    prepare(ROOT / "bench_fixtures", prepared, PrepareOptions(workers=1), progress=False)
    return model, prepared


def plan_of(prepared: Path, model: Path, work: Path, setup: tuple):
    from olmocr_rl.train.config import load_config
    from olmocr_rl.train.plan import LaunchOptions, build_plan

    _, gpus, gib, _, launch, overrides = setup
    cfg = load_config("olmocr2", overrides, prepared_dir=str(prepared), model=str(model), output_dir=str(work / "run"))
    return build_plan(cfg, LaunchOptions(gpus=gpus, gpu_memory=gib, **launch), recipe="olmocr2")


def estimates(plan, old=None):
    """(this code's estimate, `old`'s estimate of the same model, layout and tokens)."""
    from olmocr_rl.train import memory
    from olmocr_rl.train.preflight import Context, plan_layout
    from olmocr_rl.train.shape import read_shape

    cfg = plan.cfg
    shape = read_shape(str(cfg.model))
    ctx = Context(
        cfg, plan.world_size, plan.inputs, True, True, zero=plan.options.zero, target=plan.target, vllm_server=plan.split is not None
    )
    layout = plan_layout(ctx)
    tokens = memory.tokens_of(cfg, plan.inputs.train_rows, memory.planning_budget(cfg, shape)[0])
    new = memory.estimate_memory(cfg, shape, layout, tokens)
    if old is None:
        return new, None
    was = old.estimate_memory(cfg, shape, old.Layout(**vars(layout)), old.Tokens(tokens.prompt, tokens.image, tokens.completion))
    return new, was


def old_memory(rev: str):
    """olmocr_rl/train/memory.py as it was at `rev`, as a module of its own."""
    source = subprocess.run(
        ["git", "show", f"{rev}:olmocr_rl/train/memory.py"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    path = Path(tempfile.mkdtemp()) / "memory_before.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("memory_before", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["memory_before"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def image_token_table() -> None:
    """Ours next to transformers' processor (image_grid_thw) for three families, two max_pixels."""
    from test_image_tokens import CONFIGS, real_tokens
    from transformers import AutoImageProcessor

    from olmocr_rl.image_tokens import budget_from_config
    from olmocr_rl.modeling import set_max_pixels

    pages = [(996, 1288), (911, 1288), (1288, 996), (2550, 3300)]
    print("| family | max_pixels | " + " | ".join(f"{w}x{h}: ours / transformers" for w, h in pages) + " |")
    print("|---|---|" + "---|" * len(pages))
    with tempfile.TemporaryDirectory() as tmp:
        for family, conf in CONFIGS.items():
            folder = Path(tmp) / family
            folder.mkdir()
            (folder / "preprocessor_config.json").write_text(__import__("json").dumps(conf))
            for max_pixels in (None, 1_003_520):
                processor = AutoImageProcessor.from_pretrained(str(folder))
                if max_pixels is not None:
                    set_max_pixels(processor, max_pixels)
                ours = budget_from_config(conf, "x").with_max_pixels(max_pixels)
                cells = [f"{ours.tokens(w, h):,} / {real_tokens(processor, w, h)[0]:,}" for w, h in pages]
                print(f"| {family} | {'the processor own' if max_pixels is None else f'{max_pixels:,}'} | " + " | ".join(cells) + " |")


def model_state_table() -> None:
    """The tiny Qwen3-VL's and Qwen3-VL-MoE's model states, estimated and as their tensors hold them."""
    from test_learning import make_bench, prepare
    from test_memory import probe
    from training import build_model

    from olmocr_rl.train.memory import Layout, Tokens, estimate_memory
    from olmocr_rl.train.shape import read_shape

    names = ("weights", "master weights", "optimizer", "gradients")
    print("| model, path | " + " | ".join(f"{n}: estimate / tensors" for n in names) + " |")
    print("|---|" + "---|" * len(names))
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        prepared = prepare(make_bench(root / "bench", {("letter.pdf", 1): ["e"], ("sample_paper.pdf", 1): ["e", "a", "t"]}), root / "prep")
        for family, world, zero in (("qwen3_vl", 1, None), ("qwen3_vl_moe", 1, None), ("qwen3_vl_moe", 2, 2)):
            model = build_model(root / family, family)
            out = root / f"{family}-{world}-{zero}"
            out.mkdir()
            cfg, ranks = probe(prepared, model, out, world, zero, [])
            est = {
                p.name: p.bytes
                for p in estimate_memory(cfg, read_shape(str(model)), Layout(world, zero, bf16=True), Tokens(64, 16, 8)).parts
            }
            est["gradients"] = est.get("gradients", 0) + est.get("fp32 gradients", 0)
            got = dict(ranks[0])
            got["gradients"] = got.get("gradients", 0) + got.get("ZeRO buffers", 0)
            path = "one process" if zero is None else f"ZeRO-{zero}, {world} ranks (rank 0)"
            print(f"| {family}, {path} | " + " | ".join(f"{est.get(n, 0):,} / {got.get(n, 0):,}" for n in names) + " |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", help="also the plans under this revision's memory estimate (e.g. c12eda8)")
    parser.add_argument("--image-tokens", action="store_true", help="our image tokens next to transformers' processors'")
    parser.add_argument("--model-states", action="store_true", help="the tiny Qwen3-VL (and MoE) states next to their real tensors")
    args = parser.parse_args(argv)
    if args.image_tokens:
        image_token_table()
    if args.model_states:
        model_state_table()
    if args.image_tokens or args.model_states:
        return 0
    from olmocr_rl.train.memory import GIB

    old = old_memory(args.before) if args.before else None
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        model, prepared = inputs(work)
        example = plan_of(prepared, model, work, EXAMPLE)
        block = example.describe().splitlines()
        start = next(i for i, ln in enumerate(block) if ln.startswith("model: "))
        end = next(i for i in range(start, len(block)) if block[i].startswith("  peak:"))
        command = "olmocr-rl train PREPARED --model olmOCR-2-7B-shaped -o runs/a --config olmocr2 --zero 2 --vllm-gpus 1 --gpus 8 --gpu-memory 79 --dry-run"
        shown = "\n".join(block[start : end + 1]).replace(str(work) + "/", "")
        print("```\n" + command + "\n...\n" + shown + "\n```\n")
        head = "| node | setup | peak per GPU | fits |" + (f" before ({args.before}) |" if old else "")
        print(head)
        print("|" + "---|" * (head.count("|") - 1))
        for setup in SETUPS:
            plan = plan_of(prepared, model, work, setup)
            new, was = estimates(plan, old)
            fits = "yes" if new.fits() else "no"
            if new.fits() and new.near_edge():
                fits = "yes, near the edge (> 90 %)"
            row = f"| {setup[0]} | {setup[3]} | {new.peak / GIB:.1f} GiB ({new.largest_phase}) | {fits} |"
            if was is not None:
                row += f" {was.peak / GIB:.1f} GiB |"
            print(row)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
