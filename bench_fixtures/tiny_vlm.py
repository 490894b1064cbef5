"""Build a tiny, randomly initialised Qwen2.5-VL / Qwen2-VL / Qwen3-VL / Qwen3-VL-MoE model and its processor,
fully offline (no hub access): the tokenizer is a byte-level BPE made with the `tokenizers`
library (256 byte symbols + 7 Qwen special tokens = vocab 263), the image processor is the stock
Qwen2-VL one with a small pixel budget (4-16 merged image tokens per image), the weights are
random but seeded, so two builds with the same arguments are identical.

Used by the training tests and the README demo:

    python bench_fixtures/tiny_vlm.py OUT_DIR [--family qwen2_5_vl|qwen2_vl|qwen3_vl|qwen3_vl_moe] [--seed 0] [--head-dim 16|32]

The Qwen3-VL-MoE variant has 4 experts of width 32 per text layer, 2 a token (the 30B-A3B's layout:
experts fused per layer in `mlp.experts.gate_up_proj` / `down_proj`), and Qwen3-VL's vision tower
and processor.

or `from tiny_vlm import build_tiny_vlm` (with bench_fixtures/ on sys.path).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

FAMILIES = ("qwen2_5_vl", "qwen2_vl", "qwen3_vl", "qwen3_vl_moe")

SPECIALS = [
    "<|endoftext|>",  # 256: pad
    "<|im_start|>",  # 257
    "<|im_end|>",  # 258: eos
    "<|vision_start|>",  # 259
    "<|vision_end|>",  # 260
    "<|image_pad|>",  # 261
    "<|video_pad|>",  # 262
]
PAD_ID, EOS_ID, VISION_START_ID, VISION_END_ID, IMAGE_ID, VIDEO_ID = 256, 258, 259, 260, 261, 262
VOCAB_SIZE = 263

# Handles string content and typed parts ({"type": "image"} -> Qwen's three vision tokens; the
# processor expands <|image_pad|> to one token per merged patch).
CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
    "{% for part in message['content'] %}"
    "{% if part['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def _tokenizer():
    import transformers
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    assert len(alphabet) == 256
    tok = Tokenizer(models.BPE(vocab={c: i for i, c in enumerate(alphabet)}, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(SPECIALS)
    assert tok.get_vocab_size() == VOCAB_SIZE
    kwargs = dict(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        bos_token=None,
        padding_side="left",
        chat_template=CHAT_TEMPLATE,
    )
    if int(transformers.__version__.split(".")[0]) >= 5:
        from transformers import PreTrainedTokenizerFast

        return PreTrainedTokenizerFast(
            **kwargs,
            extra_special_tokens={
                "image_token": "<|image_pad|>",
                "video_token": "<|video_pad|>",
                "vision_bos_token": "<|vision_start|>",
                "vision_eos_token": "<|vision_end|>",
            },
        )
    # transformers 4.x processors type-check the tokenizer class.
    from transformers import Qwen2TokenizerFast

    return Qwen2TokenizerFast(**kwargs)


HEAD_DIMS = (16, 32)


def _configs(family: str, head_dim: int = 16):
    """(model config, image-processor kwargs) for a ~0.2 M parameter model of `family`, with
    attention heads of `head_dim` (16: 4 heads; 32: 2 heads, as vLLM's CPU attention needs)."""
    heads = 64 // head_dim
    # mrope sections sum to head_dim / 2.
    mrope = [2, 3, 3] if head_dim == 16 else [4, 6, 6]
    text = dict(
        vocab_size=VOCAB_SIZE,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=heads,
        num_key_value_heads=max(1, heads // 2),
        max_position_embeddings=4096,
        tie_word_embeddings=False,
        bos_token_id=None,
        eos_token_id=EOS_ID,
        pad_token_id=PAD_ID,
    )
    ids = dict(
        image_token_id=IMAGE_ID,
        video_token_id=VIDEO_ID,
        vision_start_token_id=VISION_START_ID,
        vision_end_token_id=VISION_END_ID,
        eos_token_id=EOS_ID,
        pad_token_id=PAD_ID,
        bos_token_id=None,
        tie_word_embeddings=False,
    )
    image = dict(patch_size=14, temporal_patch_size=2, merge_size=2, min_pixels=28 * 28 * 4, max_pixels=28 * 28 * 16)
    if family == "qwen2_5_vl":
        from transformers import Qwen2_5_VLConfig

        text["rope_scaling"] = {"type": "mrope", "rope_type": "default", "mrope_section": mrope}
        vision = dict(
            depth=2,
            hidden_size=32,
            intermediate_size=64,
            num_heads=2,
            out_hidden_size=64,
            patch_size=14,
            spatial_merge_size=2,
            temporal_patch_size=2,
            window_size=56,
            fullatt_block_indexes=[1],
            in_channels=3,
        )
        return Qwen2_5_VLConfig(text_config=text, vision_config=vision, **ids), image
    if family == "qwen2_vl":
        from transformers import Qwen2VLConfig

        text["rope_scaling"] = {"type": "mrope", "rope_type": "default", "mrope_section": mrope}
        vision = dict(
            depth=2, embed_dim=32, hidden_size=64, mlp_ratio=2, num_heads=2, patch_size=14, spatial_merge_size=2, temporal_patch_size=2
        )
        return Qwen2VLConfig(text_config=text, vision_config=vision, **ids), image
    if family in ("qwen3_vl", "qwen3_vl_moe"):
        from transformers import Qwen3VLConfig, Qwen3VLMoeConfig

        text["head_dim"] = head_dim
        if family == "qwen3_vl_moe":
            text.update(moe_intermediate_size=32, num_experts=4, num_experts_per_tok=2, decoder_sparse_step=1)
        text["rope_scaling"] = {"rope_type": "default", "mrope_section": mrope, "mrope_interleaved": True}
        vision = dict(
            depth=2,
            hidden_size=32,
            intermediate_size=64,
            num_heads=2,
            out_hidden_size=64,
            patch_size=16,
            spatial_merge_size=2,
            temporal_patch_size=2,
            num_position_embeddings=64,
            deepstack_visual_indexes=[1],
        )
        image = dict(patch_size=16, temporal_patch_size=2, merge_size=2, min_pixels=32 * 32 * 4, max_pixels=32 * 32 * 16)
        config = Qwen3VLMoeConfig if family == "qwen3_vl_moe" else Qwen3VLConfig
        return config(text_config=text, vision_config=vision, **ids), image
    raise ValueError(f"unknown family {family!r}; choose one of {', '.join(FAMILIES)}")


def _processor(family: str, tokenizer, image_kwargs: dict):
    from transformers import Qwen2VLImageProcessor

    image_processor = Qwen2VLImageProcessor(**image_kwargs)
    if family == "qwen2_5_vl":
        from transformers import Qwen2_5_VLProcessor as cls
    elif family == "qwen2_vl":
        from transformers import Qwen2VLProcessor as cls
    else:
        from transformers import Qwen3VLProcessor as cls
    # The stock processors need a video processor, which needs torchvision (a `train` dependency).
    try:
        from transformers import AutoVideoProcessor  # noqa: F401
        from transformers.models.qwen2_vl.video_processing_qwen2_vl import Qwen2VLVideoProcessor
    except ImportError as e:  # pragma: no cover - torchvision missing
        raise RuntimeError(f"the tiny VLM's processor needs torchvision: pip install 'olmocr-rl[train]' ({e})") from e
    if family.startswith("qwen3_vl"):
        from transformers.models.qwen3_vl.video_processing_qwen3_vl import Qwen3VLVideoProcessor as video_cls
    else:
        video_cls = Qwen2VLVideoProcessor
    video_processor = video_cls(**image_kwargs)
    return cls(image_processor=image_processor, tokenizer=tokenizer, video_processor=video_processor, chat_template=CHAT_TEMPLATE)


def build_tiny_vlm(
    out_dir: str | Path, family: str = "qwen2_5_vl", *, seed: int = 0, head_dim: int = 16, loops_forever: bool = False
) -> Path:
    """Write a tiny random `family` model + processor to `out_dir` (save_pretrained layout) and
    return the directory. Deterministic for a given (family, seed, head_dim, library versions).
    `head_dim=32` is the variant vLLM's CPU attention runs (it needs heads of at least 32).
    `loops_forever`: the text layers' attention outputs are zeroed, so each token depends on the one
    before it alone and greedy decoding falls into a loop it never leaves (the stock model's loops
    drift: it leaves them after a few hundred tokens); for the loop stop's exactness tests."""
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; choose one of {', '.join(FAMILIES)}")
    if head_dim not in HEAD_DIMS:
        raise ValueError(f"head_dim must be one of {HEAD_DIMS}, not {head_dim}")
    import torch
    from transformers import AutoModelForImageTextToText, GenerationConfig

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    config, image_kwargs = _configs(family, head_dim)
    tokenizer = _tokenizer()
    processor = _processor(family, tokenizer, image_kwargs)

    state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    try:
        model = AutoModelForImageTextToText.from_config(config, dtype=torch.float32)
    except TypeError:  # transformers 4.x names it torch_dtype
        model = AutoModelForImageTextToText.from_config(config, torch_dtype=torch.float32)
    finally:
        torch.random.set_rng_state(state)
    if loops_forever:
        with torch.no_grad():
            for name, p in model.named_parameters():
                if name.endswith("self_attn.o_proj.weight") and "visual" not in name:
                    p.zero_()
    model.generation_config = GenerationConfig(eos_token_id=EOS_ID, pad_token_id=PAD_ID, bos_token_id=None, do_sample=True, temperature=1.0)
    model.save_pretrained(out)
    processor.save_pretrained(out)
    (out / "tiny_vlm.json").write_text(
        json.dumps(
            {
                "family": family,
                "seed": seed,
                "head_dim": head_dim,
                "loops_forever": loops_forever,
                "params": sum(p.numel() for p in model.parameters()),
            }
        )
        + "\n"
    )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--family", choices=FAMILIES, default="qwen2_5_vl")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--head-dim", type=int, choices=HEAD_DIMS, default=16, help="32: the variant vLLM's CPU attention runs")
    parser.add_argument("--loops-forever", action="store_true", help="attention outputs zeroed: greedy decoding loops and never leaves")
    args = parser.parse_args(argv)
    out = build_tiny_vlm(args.out_dir, args.family, seed=args.seed, head_dim=args.head_dim, loops_forever=args.loops_forever)
    print(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
