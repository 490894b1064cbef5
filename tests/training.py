"""What the training tests share: the bench fixtures prepared as `olmocr-rl prepare` would, the tiny
random VLM, the demo's recipe, and `olmocr-rl train` as a subprocess. Importing this module needs
no training stack; the `prepared` and `tiny_model` session fixtures (conftest.py) build on it."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "bench_fixtures"
# Tiny GRPO: one page x 4 generations per step, 16-token completions; the demo's recipe
# (docs/training.md).
RECIPE = FIXTURES / "tiny_grpo.yaml"
QUIET = ["progress=false"]
CLI = str(Path(sys.executable).parent / "olmocr-rl")


def make_prepared(out: Path) -> Path:
    """The bench fixtures prepared by `olmocr-rl prepare` (one PDF of three held out for eval)."""
    from olmocr_rl.prepare import PrepareOptions, prepare

    result = prepare(FIXTURES, out, PrepareOptions(longest_side=140, eval_fraction=0.34, workers=1, seed=0), progress=False)
    assert len(result.train) == 3 and len(result.eval) == 1
    return out


def build_model(out: Path, family: str = "qwen2_5_vl", **kwargs) -> Path:
    """bench_fixtures/tiny_vlm.py's tiny random model of `family`."""
    sys.path.insert(0, str(FIXTURES))
    try:
        from tiny_vlm import build_tiny_vlm
    finally:
        sys.path.remove(str(FIXTURES))
    return build_tiny_vlm(out, family, **kwargs)


def cfg_for(prepared: Path, model: Path | str, out: Path, *extra: str):
    from olmocr_rl.train.config import load_config

    return load_config(RECIPE, [*QUIET, *extra], prepared_dir=str(prepared), model=str(model), output_dir=str(out))


def tree_digest(folder: Path) -> str:
    """sha256 over every file's relative path and bytes: to tell whether a shared folder changed."""
    h = hashlib.sha256()
    for p in sorted(q for q in Path(folder).rglob("*") if q.is_file()):
        h.update(p.relative_to(folder).as_posix().encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


# The image-processor files of the families' 7-8B checkpoints as published on the hub (Qwen2.5-VL-7B:
# top-level min/max_pixels, 14-pixel patches; Qwen3-VL: size.shortest_edge/longest_edge, 16-pixel).
QWEN2_5_VL_PROCESSOR = {"min_pixels": 3136, "max_pixels": 12845056, "patch_size": 14, "temporal_patch_size": 2, "merge_size": 2,
                        "image_mean": [0.48145466, 0.4578275, 0.40821073], "image_std": [0.26862954, 0.26130258, 0.27577711],
                        "image_processor_type": "Qwen2VLImageProcessor", "processor_class": "Qwen2_5_VLProcessor"}  # fmt: skip
QWEN3_VL_PROCESSOR = {"size": {"longest_edge": 16777216, "shortest_edge": 65536}, "patch_size": 16, "temporal_patch_size": 2,
                      "merge_size": 2, "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5],
                      "processor_class": "Qwen3VLProcessor", "image_processor_type": "Qwen2VLImageProcessorFast"}  # fmt: skip


def header_folder(folder: Path, config, *, shards: int = 1, processor: dict | None = None) -> int:
    """Writes a model folder of `config`'s shapes without its weights: config.json, the safetensors
    header of every tensor of the model transformers builds (on the meta device, tied weights once)
    over sparse files (no disk used for the data), `shards` > 1 with model.safetensors.index.json,
    and `processor` as preprocessor_config.json. Returns the parameter count."""
    import json
    import math

    import torch
    from transformers import AutoModelForImageTextToText

    folder.mkdir(parents=True, exist_ok=True)
    config.save_pretrained(folder)
    if processor is not None:
        (folder / "preprocessor_config.json").write_text(json.dumps(processor, indent=2))
    with torch.device("meta"):
        model = AutoModelForImageTextToText.from_config(config)
    tensors = [(n, p) for n, p in model.named_parameters()]
    per = math.ceil(len(tensors) / shards)
    weight_map, total = {}, 0
    for s in range(shards):
        name = "model.safetensors" if shards == 1 else f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
        header, offset = {}, 0
        for tensor, p in tensors[s * per : (s + 1) * per]:
            n = p.numel() * 2
            header[tensor] = {"dtype": "BF16", "shape": list(p.shape), "data_offsets": [offset, offset + n]}
            weight_map[tensor] = name
            offset += n
        raw = json.dumps(header).encode()
        with open(folder / name, "wb") as f:
            f.write(len(raw).to_bytes(8, "little") + raw)
            f.truncate(8 + len(raw) + offset)
        total += offset
    if shards > 1:
        (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}))
    return sum(p.numel() for _, p in tensors)


def qwen3_vl_moe_30b_config():
    """Qwen3-VL-30B-A3B's shapes: 48 layers of 128 experts (8 a token), 31.07 B parameters."""
    from transformers import Qwen3VLMoeConfig

    return Qwen3VLMoeConfig(
        text_config=dict(vocab_size=151936, hidden_size=2048, intermediate_size=6144, moe_intermediate_size=768, num_experts=128,
                         num_experts_per_tok=8, num_hidden_layers=48, num_attention_heads=32, num_key_value_heads=4, head_dim=128,
                         tie_word_embeddings=False, max_position_embeddings=262144,
                         rope_scaling={"rope_type": "default", "mrope_section": [24, 20, 20], "mrope_interleaved": True}),
        vision_config=dict(depth=27, hidden_size=1152, intermediate_size=4304, num_heads=16, out_hidden_size=2048, patch_size=16,
                           spatial_merge_size=2, temporal_patch_size=2, num_position_embeddings=2304, deepstack_visual_indexes=[8, 16, 24]),
        image_token_id=151655, video_token_id=151656, vision_start_token_id=151652, vision_end_token_id=151653, tie_word_embeddings=False,
    )  # fmt: skip


def qwen3_vl_8b_config():
    """Qwen3-VL-8B's shapes: 36 layers, 16-pixel patches, 8.77 B parameters."""
    from transformers import Qwen3VLConfig

    return Qwen3VLConfig(
        text_config=dict(vocab_size=151936, hidden_size=4096, intermediate_size=12288, num_hidden_layers=36, num_attention_heads=32,
                         num_key_value_heads=8, head_dim=128, tie_word_embeddings=False,
                         rope_scaling={"rope_type": "default", "mrope_section": [24, 20, 20], "mrope_interleaved": True}),
        vision_config=dict(depth=27, hidden_size=1152, intermediate_size=4304, num_heads=16, out_hidden_size=4096, patch_size=16,
                           spatial_merge_size=2, temporal_patch_size=2, num_position_embeddings=2304, deepstack_visual_indexes=[8, 16, 24]),
        image_token_id=151655, video_token_id=151656, vision_start_token_id=151652, vision_end_token_id=151653, tie_word_embeddings=False,
    )  # fmt: skip
