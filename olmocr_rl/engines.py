"""What every generation engine is told, in one place: transformers' `generate` (training without
vLLM, `olmocr-rl generate`, final outputs), vLLM's offline engine (`generate --engine vllm`), the
engine trl colocates in each rank, and the server `train --vllm-gpus` starts.

* **Placeholder tokens are never sampled.** A sampled `<|image_pad|>` (or `<|vision_start|>`, which
  Qwen's position code reads as the start of an image) makes the image-token count of the
  completion disagree with the image features in the log-prob pass ("tokens: 49, features: 48") and
  ends the step. transformers gets `suppress_tokens`; vLLM a logit bias of -100 (the lowest it
  accepts: e^-100 is no probability a sampler reaches).
* **One source of processor settings.** A `max_pixels` set for training reaches the colocated engine
  and the server as `mm_processor_kwargs`, so both expand an image into as many tokens as the
  trainer's processor does.
* **The run's seed reaches every engine.** trl seeds a colocated engine with the rank index alone
  (every run samples the same streams whatever its seed) and starts no server; here the engine of
  rank r gets `rank_seed(seed, r)` and the server `--seed seed`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

# Qwen-VL's vision tokens, by their config names (Qwen2-VL, Qwen2.5-VL, Qwen3-VL; other VLMs use a
# subset of these names).
PLACEHOLDER_KEYS = ("image_token_id", "video_token_id", "vision_start_token_id", "vision_end_token_id")
# vLLM clamps a logit bias to [-100, 100].
VLLM_BAN = -100.0


def rank_seed(seed: int, rank: int) -> int:
    """The sampling seed of one rank (or of one tensor-parallel group of colocated engines):
    `seed` itself on rank 0 (so one rank under a launcher reproduces a one-process run), a
    SplitMix64 mix of (seed, rank) on the others. trl seeds rank r with seed + r, so runs with seeds
    s and s + 1 would share all but one of their ranks' sampling streams: "independent" seeds for a
    soup would start from the same completions on most GPUs."""
    if rank == 0:
        return seed
    mask = (1 << 64) - 1
    x = (seed * 0x9E3779B97F4A7C15 + rank * 0xBF58476D1CE4E5B9) & mask
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & mask
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & mask
    return (x ^ (x >> 31)) % (1 << 32)  # numpy's seed range


def placeholder_token_ids(config: Any) -> list[int]:
    """The vision placeholder token ids a model config names (top level, or its text config)."""
    ids: list[int] = []
    for scope in (config, getattr(config, "text_config", None)):
        for key in PLACEHOLDER_KEYS:
            value = getattr(scope, key, None) if scope is not None else None
            if isinstance(value, int) and not isinstance(value, bool) and value not in ids:
                ids.append(value)
    return ids


def transformers_suppression(config: Any) -> dict[str, Any]:
    """`generate` keyword arguments that keep the placeholders out of every completion."""
    ids = placeholder_token_ids(config)
    return {"suppress_tokens": ids} if ids else {}


def vllm_suppression(config: Any) -> dict[str, Any]:
    """vLLM `SamplingParams` keyword arguments (also what trl sends a server) that keep the
    placeholders out of every completion. JSON turns the keys into strings; vLLM reads them back."""
    ids = placeholder_token_ids(config)
    return {"logit_bias": {i: VLLM_BAN for i in ids}} if ids else {}


def pixel_bounds(max_pixels: int | None, model: str | None = None) -> dict[str, int]:
    """vLLM's `mm_processor_kwargs`: the image budget of the trainer's processor, stated outright
    (the model folder's min/max pixels, `max_pixels` when the run sets it), so that an engine with
    other defaults still cuts an image into as many tokens."""
    bounds = folder_pixel_bounds(model) if model else {}
    if max_pixels is not None:
        bounds["max_pixels"] = int(max_pixels)
    return bounds


def folder_pixel_bounds(model: str) -> dict[str, int]:
    """min/max pixels from a local model folder's image processor config (transformers 5's
    processor_config.json, or preprocessor_config.json); {} for a hub id or no such fields."""
    import json
    from pathlib import Path

    for name, nested in (("processor_config.json", "image_processor"), ("preprocessor_config.json", None)):
        path = Path(model) / name
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        conf = data.get(nested, {}) if nested else data
        if not isinstance(conf, dict):
            continue
        size = conf.get("size") if isinstance(conf.get("size"), dict) else {}
        low, high = conf.get("min_pixels", size.get("shortest_edge")), conf.get("max_pixels", size.get("longest_edge"))
        if isinstance(low, int) and isinstance(high, int):
            return {"min_pixels": low, "max_pixels": high}
    return {}


@contextlib.contextmanager
def colocated_engine(*, seed: int, tensor_parallel_size: int, mm_processor_kwargs: dict, enforce_eager: bool) -> Iterator[None]:
    """While trl builds its colocated engine (inside `GRPOTrainer(...)`), the `vllm.LLM` it calls
    also gets this rank's seed (the same within a tensor-parallel group, as trl requires), our
    processor bounds and `enforce_eager`. trl passes a fixed set of arguments and offers no hook for
    these, so its module's `LLM` name is wrapped for that call only."""
    from trl.generation import vllm_generation

    original = vllm_generation.LLM

    def llm(*args: Any, **kwargs: Any) -> Any:
        group = int(kwargs.get("seed", 0))  # trl passes process_index // tensor_parallel_size
        kwargs["seed"] = rank_seed(seed, group)
        if mm_processor_kwargs:
            kwargs["mm_processor_kwargs"] = {**(kwargs.get("mm_processor_kwargs") or {}), **mm_processor_kwargs}
        if enforce_eager:
            kwargs["enforce_eager"] = True
        return original(*args, **kwargs)

    vllm_generation.LLM = llm
    try:
        yield
    finally:
        vllm_generation.LLM = original
