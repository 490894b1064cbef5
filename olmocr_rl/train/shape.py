"""What the plan's estimates need to know of a model, read without loading it: its config
(config.json, through transformers' AutoConfig, which knows every Qwen-VL layout) and its
safetensors headers (the first 8 + N bytes of each weight file: every tensor's name, shape and
dtype). One reader for the memory estimate (olmocr_rl/train/memory.py) and the disk estimate
(olmocr_rl/train/budget.py).

A hub id is looked up in the local Hugging Face cache only (`huggingface_hub.try_to_load_from_cache`:
no network), as a training node that has downloaded the model holds it; where neither a folder nor
the cache has it, `read_shape` says what is missing.
"""

from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass, field
from pathlib import Path

# LoRA's default targets are the text attention projections; a name's module is its second-to-last part.
_VISION_PREFIXES = ("visual.", "model.visual.", "vision_tower.", "model.vision_tower.")


class ShapeUnknown(Exception):
    """No estimate can be made: the message says what is missing."""


@dataclass(frozen=True)
class Stack:
    """One transformer stack (the text decoder, or the vision encoder): what its activations scale with."""

    layers: int
    hidden: int
    intermediate: int
    heads: int
    kv_dim: int  # key/value width (kv heads x head dim): GQA's smaller k and v
    gated_mlp: bool  # SwiGLU (gate, up, down) or a plain two-layer MLP
    linear_params: int  # parameters of its Linear layers (cast to bf16 by autocast: see memory.py)


@dataclass(frozen=True)
class ModelShape:
    folder: Path
    params: int  # every parameter
    vision_params: int
    text: Stack
    vision: Stack | None
    vocab: int
    merge: int  # patches per image token (spatial_merge_size squared)
    weight_file_bytes: int  # the safetensors files as they are on disk
    other_file_bytes: int  # tokenizer, processor and config files (copied into every checkpoint)
    largest: int  # elements of the largest tensor (a ZeRO partition holds the tensors it cuts whole)
    linear_in_out: dict[str, int] = field(default_factory=dict)  # module name -> sum of (in + out) of its 2-D weights

    def lora_params(self, targets: list[str], r: int) -> int:
        """Parameters of a LoRA adapter of rank r on these modules: r x (in + out) for each (peft's A and B)."""
        return r * sum(self.linear_in_out.get(t, 0) for t in targets)


def model_folder(model: str) -> Path:
    """The local folder of a model folder or hub id (from the Hugging Face cache, no network)."""
    p = Path(model).expanduser()
    if p.is_dir():
        return p
    if p.exists():
        raise ShapeUnknown(f"{model} is not a folder")
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # pragma: no cover - transformers requires huggingface_hub
        raise ShapeUnknown(f"{model} is not a local folder, and huggingface_hub is not installed to look in its cache") from None
    try:
        hit = try_to_load_from_cache(model, "config.json")
    except ValueError:  # not a valid repo id
        hit = None
    if isinstance(hit, str):
        return Path(hit).parent
    from huggingface_hub.constants import HF_HUB_CACHE

    raise ShapeUnknown(f"{model} is neither a local folder nor in the Hugging Face cache ({HF_HUB_CACHE}); "
                       f"download it first (hf download {model}) or give its folder")  # fmt: skip


def safetensors_headers(folder: Path) -> dict[str, tuple[tuple[int, ...], str]]:
    """name -> (shape, dtype) of every tensor in the folder's *.safetensors files."""
    files = sorted(folder.glob("*.safetensors"))
    if not files:
        raise ShapeUnknown(f"{folder} holds no *.safetensors weights")
    out: dict[str, tuple[tuple[int, ...], str]] = {}
    for f in files:
        try:
            with open(f, "rb") as fh:
                (size,) = struct.unpack("<Q", fh.read(8))
                header = json.loads(fh.read(size))
        except (OSError, ValueError, struct.error) as e:
            raise ShapeUnknown(f"{f}: not a readable safetensors file ({e})") from None
        for name, v in header.items():
            if name != "__metadata__":
                out[name] = (tuple(int(x) for x in v["shape"]), str(v["dtype"]))
    return out


def _stack(config, layers_attr: str, tensors: dict, prefix_test, *, hidden: str, intermediate: str | None) -> Stack:
    h = int(getattr(config, hidden))
    heads = int(getattr(config, "num_attention_heads", None) or config.num_heads)
    head_dim = int(getattr(config, "head_dim", None) or h // heads)
    kv_heads = int(getattr(config, "num_key_value_heads", None) or heads)
    names = [n for n in tensors if prefix_test(n)]
    gated = any(".gate_proj." in n for n in names)
    inter = getattr(config, intermediate, None) if intermediate else None
    if inter is None:  # Qwen2-VL's vision MLP: hidden x mlp_ratio
        inter = int(h * float(getattr(config, "mlp_ratio", 4)))
    linear = sum(
        math.prod(s) for n, (s, _) in tensors.items() if prefix_test(n) and len(s) == 2 and "embed" not in n and "lm_head" not in n
    )
    return Stack(int(getattr(config, layers_attr)), h, int(inter), heads, kv_heads * head_dim, gated, linear)


def read_shape(model: str) -> ModelShape:
    """The shape of `model` (a folder or a cached hub id); ShapeUnknown says what is missing."""
    folder = model_folder(model)
    if not (folder / "config.json").is_file():
        raise ShapeUnknown(f"{folder} has no config.json")
    tensors = safetensors_headers(folder)
    from transformers import AutoConfig

    try:
        config = AutoConfig.from_pretrained(str(folder))
    except (OSError, ValueError, KeyError) as e:
        raise ShapeUnknown(f"{folder}/config.json: transformers cannot read it ({e})") from None
    text_config = config.get_text_config()
    vision_config = getattr(config, "vision_config", None)

    def is_vision(name: str) -> bool:
        return name.startswith(_VISION_PREFIXES)

    text = _stack(
        text_config, "num_hidden_layers", tensors, lambda n: not is_vision(n), hidden="hidden_size", intermediate="intermediate_size"
    )
    vision = None
    if vision_config is not None:
        hidden = "hidden_size" if hasattr(vision_config, "intermediate_size") else "embed_dim"
        vision = _stack(
            vision_config, "depth", tensors, is_vision, hidden=hidden, intermediate="intermediate_size" if hidden == "hidden_size" else None
        )
    io: dict[str, int] = {}
    for name, (s, _) in tensors.items():
        parts = name.split(".")
        if name.endswith(".weight") and len(s) == 2 and len(parts) > 1 and not is_vision(name):
            io[parts[-2]] = io.get(parts[-2], 0) + s[0] + s[1]
    weights = sorted(folder.glob("*.safetensors"))
    other = sum(p.stat().st_size for p in folder.iterdir() if p.is_file() and p.suffix != ".safetensors" and not p.name.startswith("."))
    return ModelShape(
        folder=folder,
        params=sum(math.prod(s) for s, _ in tensors.values()),
        vision_params=sum(math.prod(s) for n, (s, _) in tensors.items() if is_vision(n)),
        text=text,
        vision=vision,
        vocab=int(text_config.vocab_size),
        merge=int(getattr(vision_config, "spatial_merge_size", 1) or 1) ** 2 if vision_config is not None else 1,
        weight_file_bytes=sum(p.stat().st_size for p in weights),
        other_file_bytes=other,
        largest=max(math.prod(s) for s, _ in tensors.values()),
        linear_in_out=io,
    )
