"""What the plan's estimates need to know of a model, read without loading it: its config
(config.json, through transformers' AutoConfig, which knows every Qwen-VL layout), its safetensors
headers (the first 8 + N bytes of each weight file: every tensor's name, shape and dtype) and its
image processor's config (how many tokens a page becomes: olmocr_rl/image_tokens.py). One reader for
the memory estimate (olmocr_rl/train/memory.py), the disk estimate (olmocr_rl/train/budget.py) and the
prompt lengths (olmocr_rl/train/preflight.py).

A model folder is read in place. A hub id is read through olmocr_rl/hub.py: from the Hugging Face
cache when the model was downloaded, else from the hub without its weights (config, processor
config, headers by range request: a few hundred KB, said in `ModelShape.source`), else (offline) from
what the cache holds. Without headers (offline, config.json alone in the cache) every tensor's shape
comes from transformers' own model built from config.json on the meta device (no memory, nothing
loaded), which is what the headers of a checkpoint it saved would say.

Mixture-of-experts text stacks (Qwen3-VL-MoE: experts fused per layer, `mlp.experts.gate_up_proj`
[experts, 2 x expert width, hidden] and `down_proj`): every expert is a parameter (the model states
count them all); the activations see the experts a token is routed to (`Stack.active_experts` of
`Stack.experts`, each `Stack.intermediate` wide: olmocr_rl/train/memory.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from olmocr_rl.image_tokens import ImageBudget

# The vision encoder's tensors (and its projector into the text stack), by the names transformers' image-text-to-text
# models give them: Qwen-VL's `visual.` (merger included), LLaVA's and Gemma 3's `vision_tower.` and
# `multi_modal_projector.`, Idefics3's `vision_model.` and `connector.`. LoRA's default targets are the text
# attention projections; a name's module is its second-to-last part.
_VISION_PREFIXES = tuple(f"{at}{part}." for at in ("", "model.") for part in ("visual", "vision_tower", "vision_model",
                                                                              "multi_modal_projector", "connector"))  # fmt: skip
_Tensors = dict[str, tuple[tuple[int, ...], str]]


class ShapeUnknown(Exception):
    """No estimate can be made: the message says what is missing."""


@dataclass(frozen=True)
class Stack:
    """One transformer stack (the text decoder, or the vision encoder): what its activations scale with."""

    layers: int
    hidden: int
    intermediate: int  # the MLP's width (a mixture of experts: one expert's)
    heads: int
    kv_dim: int  # key/value width (kv heads x head dim): GQA's smaller k and v
    gated_mlp: bool  # SwiGLU (gate, up, down) or a plain two-layer MLP
    linear_params: int  # parameters of its Linear layers (cast to bf16 by autocast: see memory.py)
    q_dim: int = 0  # query width (heads x head dim); 0: hidden (Qwen2/2.5-VL, where head dim = hidden / heads)
    kv_heads: int = 0
    qk_norm: bool = False  # RMSNorm on each query and key head (Qwen3)
    experts: int = 0  # a mixture of experts: experts per layer (0: a dense MLP)
    active_experts: int = 0  # experts each token is routed to
    layer_params: int = 0  # parameters of its largest layer, every tensor (what ZeRO-3 gathers to run it)

    @property
    def query(self) -> int:
        return self.q_dim or self.hidden


@dataclass(frozen=True)
class ModelShape:
    folder: Path  # a model folder, or the cache folder of a hub id's files
    params: int  # every parameter (every expert)
    vision_params: int
    text: Stack
    vision: Stack | None
    vocab: int
    merge: int  # patches per image token (spatial_merge_size squared)
    weight_file_bytes: int  # the safetensors files as they are on disk
    other_file_bytes: int  # tokenizer, processor and config files (copied into every checkpoint)
    largest: int  # elements of the largest tensor (a ZeRO partition holds the tensors it cuts whole)
    linear_in_out: dict[str, int] = field(default_factory=dict)  # module name -> sum of (in + out) of its 2-D weights
    image: ImageBudget | None = None  # how its processor turns a page into tokens (None: not a processor we compute)
    image_note: str = ""  # why `image` is None
    source: str = ""  # what was read, from where (a hub id: what was fetched)
    patch_values: int = 0  # values of one vision patch in the processor's pixel_values (channels x temporal x patch^2)
    lm_head: int = 0  # elements of the output embedding (vocab x hidden)

    def lora_params(self, targets: list[str], r: int) -> int:
        """Parameters of a LoRA adapter of rank r on these modules: r x (in + out) for each (peft's A and B)."""
        return r * sum(self.linear_in_out.get(t, 0) for t in targets)

    def image_budget(self, max_pixels: int | None) -> ImageBudget | None:
        """The model's image budget under a run's `max_pixels`."""
        return None if self.image is None else self.image.with_max_pixels(max_pixels)


def safetensors_headers_of(files: list[Path]) -> _Tensors:
    """name -> (shape, dtype) of every tensor in these safetensors files (their headers only;
    olmocr_rl/hub.py reads them)."""
    from olmocr_rl.hub import read_headers

    try:
        return read_headers(files)
    except ValueError as e:
        raise ShapeUnknown(str(e)) from None


def safetensors_headers(folder: Path) -> _Tensors:
    """name -> (shape, dtype) of every tensor in the folder's *.safetensors files."""
    files = sorted(folder.glob("*.safetensors"))
    if not files:
        raise ShapeUnknown(f"{folder} holds no *.safetensors weights")
    return safetensors_headers_of(files)


def _stack(config, tensors: _Tensors, prefix_test) -> Stack:
    """A stack's shape from its config, under the names transformers' configs give it (layers:
    `num_hidden_layers`, or Qwen-VL vision's `depth`; width: `hidden_size`, or Qwen2-VL vision's
    `embed_dim`; heads: `num_attention_heads` or `num_heads`; MLP: `intermediate_size`, or
    hidden x `mlp_ratio`), its parameters from the tensors `prefix_test` picks; AttributeError when a
    config names none of them."""
    layers = getattr(config, "depth", None) or config.num_hidden_layers
    h = int(getattr(config, "embed_dim", None) or config.hidden_size)
    heads = int(getattr(config, "num_attention_heads", None) or config.num_heads)
    head_dim = int(getattr(config, "head_dim", None) or h // heads)
    kv_heads = int(getattr(config, "num_key_value_heads", None) or heads)
    names = [n for n in tensors if prefix_test(n)]
    gated = any(".gate_proj." in n or ".gate_up_proj" in n for n in names)
    experts = int(getattr(config, "num_experts", 0) or 0) if any(".experts." in n for n in names) else 0
    if experts:
        inter = getattr(config, "moe_intermediate_size", None)
    else:
        inter = getattr(config, "intermediate_size", None)
    if inter is None:  # Qwen2-VL's vision MLP: hidden x mlp_ratio
        inter = int(h * float(getattr(config, "mlp_ratio", 4)))
    linear = sum(
        math.prod(s) for n, (s, _) in tensors.items() if prefix_test(n) and len(s) == 2 and "embed" not in n and "lm_head" not in n
    )
    per_layer: dict[str, int] = {}
    for n, (s, _) in tensors.items():
        parts = n.split(".")
        if prefix_test(n) and ("layers" in parts or "blocks" in parts):
            at = parts.index("layers" if "layers" in parts else "blocks")
            if at + 1 < len(parts) and parts[at + 1].isdigit():
                key = ".".join(parts[: at + 2])
                per_layer[key] = per_layer.get(key, 0) + math.prod(s)
    return Stack(
        int(layers), h, int(inter), heads, kv_heads * head_dim, gated, linear, q_dim=heads * head_dim,
        kv_heads=kv_heads, qk_norm=any(".q_norm." in n for n in names), experts=experts,
        active_experts=int(getattr(config, "num_experts_per_tok", 0) or 0) if experts else 0,
        layer_params=max(per_layer.values(), default=0),
    )  # fmt: skip


def _tensors_from_config(config: Any) -> _Tensors:
    """Every parameter of the model transformers builds from `config`, on the meta device (nothing
    allocated): what a checkpoint it saved would hold (tied weights once)."""
    import torch
    from transformers import AutoModelForImageTextToText

    dtype = str(getattr(config, "dtype", None) or "bfloat16").removeprefix("torch.")
    label = {"bfloat16": "BF16", "float16": "F16", "float32": "F32"}.get(dtype, "BF16")
    try:
        with torch.device("meta"):
            model = AutoModelForImageTextToText.from_config(config)
    except (ValueError, KeyError, TypeError, ImportError) as e:
        raise ShapeUnknown(f"transformers cannot build {type(config).__name__} from its config.json ({e})") from None
    return {name: (tuple(p.shape), label) for name, p in model.named_parameters()}


# Hub ids read once per process (the pre-flight, the plan and the disk estimate all ask).
_HUB_SHAPES: dict[tuple[str, str, str, bool], ModelShape] = {}


def read_shape(model: str, *, fetch: bool = True) -> ModelShape:
    """The shape of `model` (a model folder or a hub id: module docstring); ShapeUnknown says what
    is missing. `fetch=False`: a hub id from the Hugging Face cache only (a training rank's checks:
    the command that launched it planned with the hub already)."""
    p = Path(model).expanduser()
    if p.is_dir():
        return _folder_shape(p)
    if p.exists():
        raise ShapeUnknown(f"{model} is not a folder")
    from huggingface_hub import constants

    from olmocr_rl.hub import HubUnavailable, hub_model_files, is_hub_id

    if not is_hub_id(model):
        raise ShapeUnknown(f"{model}: no such model folder, nor a hub id")
    key = (model, str(constants.HF_HUB_CACHE), constants.ENDPOINT, bool(constants.HF_HUB_OFFLINE) or not fetch)
    if key not in _HUB_SHAPES:
        try:
            hub = hub_model_files(model, network=fetch)
        except (HubUnavailable, ValueError) as e:  # ValueError: a cached weight file whose header is not readable
            raise ShapeUnknown(str(e)) from None
        folder = hub.files["config.json"].parent
        tensors = hub.tensors
        source = hub.source
        if tensors is None:
            tensors = _tensors_from_config(_config(folder))
            source += "; tensor shapes from config.json (transformers' model on the meta device), no headers read"
        sizes = (hub.weight_bytes, hub.other_bytes)
        _HUB_SHAPES[key] = _shape(folder, tensors, hub.files, source, weight_bytes=sizes[0], other_bytes=sizes[1])
    return _HUB_SHAPES[key]


def _config(folder: Path) -> Any:
    from transformers import AutoConfig

    if not (folder / "config.json").is_file():
        raise ShapeUnknown(f"{folder} has no config.json")
    try:
        return AutoConfig.from_pretrained(str(folder))
    except (OSError, ValueError, KeyError) as e:
        raise ShapeUnknown(f"{folder}/config.json: transformers cannot read it ({e})") from None


def _folder_shape(folder: Path) -> ModelShape:
    from olmocr_rl.image_tokens import PROCESSOR_FILES

    if not (folder / "config.json").is_file():
        raise ShapeUnknown(f"{folder} has no config.json")
    tensors = safetensors_headers(folder)
    files = {n: folder / n for n in ("config.json", *PROCESSOR_FILES) if (folder / n).is_file()}
    return _shape(folder, tensors, files, f"{folder}: config.json and the safetensors headers")


def _shape(folder: Path, tensors: _Tensors, files: dict[str, Path], source: str, *, weight_bytes: int | None = None,
           other_bytes: int | None = None) -> ModelShape:  # fmt: skip
    from olmocr_rl.image_tokens import UnknownProcessor, budget_from_config, image_processor_config

    config = _config(folder)
    text_config = config.get_text_config()
    vision_config = getattr(config, "vision_config", None)

    def is_vision(name: str) -> bool:
        return name.startswith(_VISION_PREFIXES)

    try:
        text = _stack(text_config, tensors, lambda n: not is_vision(n))
        vision = None if vision_config is None else _stack(vision_config, tensors, is_vision)
        vocab = int(text_config.vocab_size)
    except (AttributeError, TypeError, ValueError) as e:  # a config layout none of transformers' usual names describe
        raise ShapeUnknown(
            f"{folder}/config.json ({type(config).__name__}): no layer, width or head count the estimate reads ({e})"
        ) from None
    io: dict[str, int] = {}
    for name, (s, _) in tensors.items():
        parts = name.split(".")
        if name.endswith(".weight") and len(s) == 2 and len(parts) > 1 and not is_vision(name):
            io[parts[-2]] = io.get(parts[-2], 0) + s[0] + s[1]
    image, note = None, ""
    found = image_processor_config(files)
    if found is None:
        note = "no processor config (processor_config.json / preprocessor_config.json)"
    else:
        try:
            image = budget_from_config(found[0], found[1])
        except UnknownProcessor as e:
            note = str(e)
    patch_values = 0
    if vision_config is not None:
        patch = int(getattr(vision_config, "patch_size", 14) or 14)
        channels = getattr(vision_config, "in_channels", None) or getattr(vision_config, "num_channels", None) or 3
        patch_values = int(channels) * int(getattr(vision_config, "temporal_patch_size", 1) or 1) * patch**2
    if weight_bytes is None:
        weight_bytes = sum(p.stat().st_size for p in sorted(folder.glob("*.safetensors")))
    if other_bytes is None:
        other_bytes = sum(
            p.stat().st_size for p in folder.iterdir() if p.is_file() and p.suffix != ".safetensors" and not p.name.startswith(".")
        )
    head = next((s for n, (s, _) in tensors.items() if n.endswith("lm_head.weight")), None)
    return ModelShape(
        folder=folder,
        params=sum(math.prod(s) for s, _ in tensors.values()),
        vision_params=sum(math.prod(s) for n, (s, _) in tensors.items() if is_vision(n)),
        text=text,
        vision=vision,
        vocab=vocab,
        merge=int(getattr(vision_config, "spatial_merge_size", 1) or 1) ** 2 if vision_config is not None else 1,
        weight_file_bytes=weight_bytes,
        other_file_bytes=other_bytes,
        largest=max(math.prod(s) for s, _ in tensors.values()),
        linear_in_out=io,
        image=image,
        image_note=note,
        source=source,
        patch_values=patch_values,
        lm_head=math.prod(head) if head is not None else vocab * text.hidden,
    )
