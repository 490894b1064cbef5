"""GPU memory per training rank, by component, before anything is launched (`train --dry-run`
prints it; pre-flight refuses a plan that cannot fit and warns near the edge).

Every figure is bytes held at the rank's peak, from the model's shape (olmocr_rl/train/shape.py)
and the plan's layout; each component says where it comes from. P is every parameter, T the
trained ones (P, or the LoRA adapter's), N the training ranks (ZeRO partitions over all of them).

Model states (tests/test_memory.py holds them equal to the real tensors of each path on CPU):
* weights: the dtype `modeling.training_dtype` loads (float32 for full training without DeepSpeed,
  bf16 under DeepSpeed with bf16 and for LoRA's frozen base); ZeRO-3 holds 1/N of them, plus the
  layers it gathers for the running forward (two text layers: the current one and the prefetched).
* master weights: DeepSpeed's float32 partition of the trained weights (4T/N; stage_1_and_2.py
  `single_partition_of_fp32_groups`, stage3.py `fp32_partitioned_groups_flat`); none without it
  (the weights are float32 themselves).
* gradients: in the trained weights' dtype, whole on every rank without ZeRO (DDP adds its own
  buckets of the same size: torch's Reducer copies each gradient into them, transformers and
  accelerate leave `gradient_as_bucket_view` off); ZeRO-1 keeps whole 16-bit gradients, ZeRO-2 a
  16-bit partition (`grads_in_partition`) and its reduce bucket, ZeRO-3 a partition; each ZeRO stage
  adds the float32 partition gradient the optimizer step reads.
* optimizer: AdamW's two moments in the master dtype (8T, or 8T/N under ZeRO).
* reference model (beta != 0, not LoRA): trl builds it in the policy's dtype at the trainer's start
  (grpo_trainer.py: `model_init_kwargs.setdefault("dtype", self.model.dtype)`): float32 without
  DeepSpeed, 16-bit under it, partitioned by ZeRO-3 only.

Activations (formulas; checked against the tensors autograd saves on CPU, calibrated on a GPU by
scripts/gpu_check.py): per token and layer, bf16 weights save 20h + 4kv + 8i + 4 heads + 8 bytes
(h hidden, kv key/value width, i the MLP width, 4i for a plain MLP), float32 weights under bf16
autocast 10h more (the residual stream stays float32) and autocast keeps a bf16 copy of every
Linear weight while the forward runs (2 bytes a weight). With gradient checkpointing a layer keeps
only its input (h in the weights' dtype) and one layer is recomputed at a time. The vision encoder
the same way per patch (image tokens x spatial merge squared).

The loss: trl >= 1.15 computes log-probabilities through a fused, tiled LM head
(trainer/utils.py `add_fused_lm_head`, kernels/chunked_logprob.py): tiles of 4,096 tokens x 32,768
vocabulary entries and a float32 gradient of the LM head weight; older trl materialises the logits
of every completion token (bf16 logits, the temperature-scaled copy, float32 log-softmax, and its
gradient: 12 bytes a logit).

Generation: transformers' `generate` keeps a KV cache for the rank's whole generation batch
(per_device_train_batch_size x steps_per_generation sequences); ZeRO-3 gathers the whole 16-bit
model for it (trl's `ds3_gather_for_generation`); a colocated vLLM engine holds
vllm_gpu_memory_utilization of the card, released during the loss with vllm_enable_sleep_mode; a
`--vllm-gpus` server uses its own GPUs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from olmocr_rl.train.shape import ModelShape, Stack

if TYPE_CHECKING:
    from olmocr_rl.train.config import TrainConfig

GIB = 2**30
TOKEN_TILE = 4096  # trl kernels/chunked_logprob.py TOKEN_CHUNK_SIZE
VOCAB_TILE = 32768  # trl trainer/utils.py _CHUNKED_LOGPROB_CHUNK_SIZE
ZERO2_BUCKET = 500_000_000  # DeepSpeed's reduce_bucket_size default (our ZeRO-2 preset leaves it)
RESERVED = 1.0 * GIB  # CUDA context, NCCL and allocator slack torch's allocation does not show
EDGE = 0.9  # above this share of the card: a warning


@dataclass(frozen=True)
class Layout:
    """How one training rank holds the model: what the plan decided."""

    world: int  # training ranks in all
    zero: int | None
    bf16: bool
    fused_loss: bool = True  # trl >= 1.15's tiled LM head
    gpu_bytes: int | None = None  # the card's memory, as torch reports it
    vllm_server: bool = False  # generation on other GPUs


@dataclass(frozen=True)
class Tokens:
    """The longest sequence a micro-batch holds: prompt (instruction + image tokens) + completion."""

    prompt: int
    image: int  # image tokens of the largest page
    completion: int

    @property
    def sequence(self) -> int:
        return self.prompt + self.completion


@dataclass(frozen=True)
class Part:
    name: str
    bytes: int
    how: str
    phase: str = "states"  # "states" (held throughout), "train" (the loss), "generate"


@dataclass
class Memory:
    parts: list[Part] = field(default_factory=list)
    gpu_bytes: int | None = None

    def total(self, phase: str | None = None) -> int:
        return sum(p.bytes for p in self.parts if phase is None or p.phase == phase)

    @property
    def peak(self) -> int:
        """States plus the larger of the two phases (the loss never overlaps generation)."""
        return self.total("states") + max(self.total("train"), self.total("generate"))

    @property
    def usable(self) -> int | None:
        return None if self.gpu_bytes is None else self.gpu_bytes - int(RESERVED)

    def fits(self) -> bool | None:
        return None if self.usable is None else self.peak <= self.usable

    def near_edge(self) -> bool:
        return self.usable is not None and self.peak > EDGE * self.usable

    def lines(self) -> list[str]:
        out = []
        for phase, title in (("states", "held throughout"), ("train", "during the loss"), ("generate", "during generation")):
            rows = [p for p in self.parts if p.phase == phase and p.bytes]
            if not rows:
                continue
            out.append(f"  {title}: {gib(self.total(phase))}")
            out += [f"    {p.name:<22} {gib(p.bytes):>10}  {p.how}" for p in rows]
        card = "" if self.gpu_bytes is None else f" of {gib(self.gpu_bytes)} ({100 * self.peak / self.gpu_bytes:.0f} %)"
        out.append(f"  peak: {gib(self.peak)}{card} = held + the larger phase")
        return out


def gib(n: float) -> str:
    return f"{n / GIB:,.1f} GiB"


def weight_bytes(cfg: TrainConfig, layout: Layout) -> int:
    """Bytes per loaded weight: `modeling.training_dtype`'s choice, stated without torch."""
    if cfg.dtype != "auto":
        return 4 if cfg.dtype == "float32" else 2
    return 2 if layout.bf16 and (layout.zero is not None or cfg.lora) else 4


def per_token_layer(stack: Stack, weight: int, autocast: bool) -> int:
    """Bytes autograd saves per token in one layer without checkpointing (see the docstring)."""
    mlp = 8 if stack.gated_mlp else 4
    b = 20 * stack.hidden + 4 * stack.kv_dim + mlp * stack.intermediate + 4 * stack.heads + 8
    return b + (10 * stack.hidden if weight == 4 and autocast else 0)


def stack_activations(stack: Stack, tokens: int, weight: int, autocast: bool, checkpointing: bool) -> int:
    full = per_token_layer(stack, weight, autocast) * tokens
    if not checkpointing:
        return full * stack.layers
    return weight * stack.hidden * tokens * stack.layers + full  # inputs kept; one layer recomputed


def trained_params(cfg: TrainConfig, shape: ModelShape) -> int:
    return shape.lora_params(list(cfg.lora_target_modules), cfg.lora_r) if cfg.lora else shape.params


def generation_sequences(cfg: TrainConfig, world: int) -> int:
    """Sequences one rank generates at once: its share of the generation batch."""
    from olmocr_rl.train.budget import steps_per_generation

    return cfg.per_device_train_batch_size * steps_per_generation(cfg, world)


@dataclass(frozen=True)
class _Sizes:
    """What every component reads: the model, the layout and the bytes a weight takes."""

    cfg: TrainConfig
    shape: ModelShape
    layout: Layout
    trained: int  # T
    w: int  # bytes of a loaded weight
    w16: int  # bytes of DeepSpeed's 16-bit copy

    @classmethod
    def of(cls, cfg: TrainConfig, shape: ModelShape, layout: Layout) -> _Sizes:
        return cls(cfg, shape, layout, trained_params(cfg, shape), weight_bytes(cfg, layout), 2 if layout.bf16 else 4)


def estimate_memory(cfg: TrainConfig, shape: ModelShape, layout: Layout, tokens: Tokens) -> Memory:
    """Per-GPU bytes of one training rank, by component (module docstring)."""
    z = _Sizes.of(cfg, shape, layout)
    return Memory([*_model_states(z), *_gradients(z), *_loss(z, tokens), *_generation(z, tokens)], layout.gpu_bytes)


def _model_states(z: _Sizes) -> list[Part]:
    cfg, n, zero, P, T, w, w16 = z.cfg, z.layout.world, z.layout.zero, z.shape.params, z.trained, z.w, z.w16
    if zero == 3:
        layer = 2 * (z.shape.text.linear_params // max(1, z.shape.text.layers)) * w
        parts = [Part("weights", P * w // n, f"{w} B x P / {n} ranks"),
                 Part("gathered layers", layer, "ZeRO-3: the running and the prefetched text layer", "train")]  # fmt: skip
    elif zero is not None:
        parts = [Part("weights", P * w16, f"{w16} B x P (whole on every rank under ZeRO-{zero})")]
    elif cfg.lora:
        parts = [Part("weights", P * w + T * 4, f"frozen base {w} B x P + adapter 4 B x {T:,}")]
    else:
        parts = [Part("weights", P * w, f"{w} B x P")]
    if zero is not None:
        parts += [Part("master weights", 4 * T // n, f"float32 partition: 4 B x trained / {n}"),
                  Part("optimizer", 8 * T // n, f"AdamW moments: 8 B x trained / {n}")]  # fmt: skip
    else:
        parts.append(Part("optimizer", 8 * T, "AdamW moments: 8 B x trained"))
    if cfg.beta != 0 and not cfg.lora:
        ref_w, split = (w if zero is None else w16), (n if zero == 3 else 1)
        parts.append(
            Part("reference model", P * ref_w // split, f"beta={cfg.beta:g}: {ref_w} B x P{f' / {n}' if split > 1 else ''} (trl's copy)")
        )
    return parts


def _gradients(z: _Sizes) -> list[Part]:
    n, zero, T, w16 = z.layout.world, z.layout.zero, z.trained, z.w16
    if zero is None:
        tw = 4 if z.cfg.lora else z.w  # peft keeps adapters in float32 over a half base
        ddp = [Part("DDP buckets", T * tw, "torch's Reducer: a copy of every gradient", "train")] if n > 1 else []
        return [Part("gradients", T * tw, f"{tw} B x trained", "train"), *ddp]
    # ZeRO-1/2 keep whole the tensors their partition boundaries cut (at most two per rank).
    low = T * w16 if zero == 1 else (T // n + (2 * z.shape.largest if zero == 2 else 0)) * w16
    how = f"{w16}-byte {'whole' if zero == 1 else 'partition'} + the float32 partition the step reads"
    bucket = 2 * z.shape.text.hidden**2 * w16 if zero == 3 else ZERO2_BUCKET * w16
    bucket_how = "2 x hidden^2 (accelerate's auto, double-buffered)" if zero == 3 else "reduce_bucket_size 5e8 (DeepSpeed's default)"
    return [Part("gradients", low + 4 * T // n, how, "train"), Part("reduce buckets", bucket, bucket_how, "train")]


def _loss(z: _Sizes, tokens: Tokens) -> list[Part]:
    cfg, shape, w = z.cfg, z.shape, z.w
    autocast = z.layout.bf16 and w == 4
    checkpointing = bool(cfg.gradient_checkpointing)
    b = cfg.per_device_train_batch_size
    act = stack_activations(shape.text, b * tokens.sequence, w, autocast, checkpointing)
    if shape.vision is not None:
        act += stack_activations(shape.vision, b * tokens.image * shape.merge, w, autocast, checkpointing)
    ck = "gradient checkpointing" if checkpointing else "no checkpointing"
    parts = [Part("activations", act, f"{b} x {tokens.sequence:,} tokens, {ck}", "train")]
    if autocast:
        linear = shape.text.linear_params + (shape.vision.linear_params if shape.vision else 0)
        parts.append(Part("autocast copies", 2 * linear, "bf16 copies of the float32 Linear weights", "train"))
    kept, h = b * (tokens.completion + 1), shape.text.hidden
    if z.layout.fused_loss:
        from olmocr_rl.train.config import trl_default

        fp32_head = cfg.trl.get("cast_lm_head_to_fp32", trl_default("cast_lm_head_to_fp32"))
        tile = min(kept, TOKEN_TILE) * VOCAB_TILE * (4 if (w == 4 or fp32_head) else 2)
        head_grad = 0 if cfg.lora else shape.vocab * h * 4
        parts.append(
            Part("loss (fused LM head)", tile + head_grad + kept * h * 4, "a logit tile, float32 LM-head and hidden gradients", "train")
        )
    else:
        parts.append(Part("loss logits", kept * shape.vocab * 12, f"{kept:,} tokens x {shape.vocab:,} vocab x 12 B (trl < 1.15)", "train"))
    return parts


def _generation(z: _Sizes, tokens: Tokens) -> list[Part]:
    cfg, layout = z.cfg, z.layout
    if cfg.use_vllm and cfg.vllm_mode == "colocate" and not layout.vllm_server:
        share = int(cfg.vllm_gpu_memory_utilization * (layout.gpu_bytes or 0))
        how = f"vllm_gpu_memory_utilization={cfg.vllm_gpu_memory_utilization:g} of the card"
        if cfg.vllm_enable_sleep_mode:
            return [Part("vLLM (colocated)", share, how + "; asleep during the loss", "generate")]
        return [Part("vLLM (colocated)", share, how + ", held throughout")]
    if cfg.use_vllm:
        return []  # a server on GPUs of its own
    seqs = generation_sequences(cfg, layout.world)
    kv = seqs * tokens.sequence * z.shape.text.layers * 2 * z.shape.text.kv_dim * (z.w if layout.zero is None else z.w16)
    parts = [Part("KV cache", kv, f"{seqs} sequences x {tokens.sequence:,} tokens (transformers generate)", "generate")]
    if layout.zero == 3:
        parts.append(
            Part("ZeRO-3 gathered model", z.shape.params * z.w16, f"{z.w16} B x P for generate (ds3_gather_for_generation)", "generate")
        )
    return parts


def alternatives(cfg: TrainConfig, layout: Layout, ranks_available: int | None) -> list[tuple[str, TrainConfig, Layout]]:
    """Plans one change away from this one, in the order a user would try them before renting more
    GPUs: a ZeRO stage, more ranks (ZeRO partitions over them), LoRA, beta = 0, shorter completions,
    gradient checkpointing."""
    out: list[tuple[str, TrainConfig, Layout]] = []

    def changed(**kw) -> TrainConfig:
        return replace(cfg, **kw)  # the plan's config is read-only (config.resolve)

    for stage in (1, 2, 3):
        if layout.zero is None or layout.zero < stage:
            out.append((f"--zero {stage}", cfg, replace(layout, zero=stage)))
    if ranks_available and layout.world < ranks_available:
        for stage in (2, 3):
            if layout.zero is None or layout.zero <= stage:
                out.append((f"--num-processes {ranks_available} --zero {stage}", cfg, replace(layout, world=ranks_available, zero=stage)))
    if not cfg.lora:
        out.append(("lora=true", changed(lora=True), layout))
    if cfg.beta != 0 and not cfg.lora:
        out.append(("beta=0 (drops the reference model)", changed(beta=0.0), layout))
    length = cfg.max_completion_length
    while length > 1024:
        length //= 2
        out.append((f"max_completion_length={length}", changed(max_completion_length=length), layout))
    if not cfg.gradient_checkpointing:
        out.append(("gradient_checkpointing=true", changed(gradient_checkpointing=True), layout))
    return out


def what_fits(
    cfg: TrainConfig, shape: ModelShape, layout: Layout, tokens: Tokens, ranks_available: int | None, limit: int = 3
) -> list[str]:
    """The first `limit` single changes (alternatives' order) whose estimate fits the card."""
    fits = []
    for label, c, lay in alternatives(cfg, layout, ranks_available):
        m = estimate_memory(c, shape, lay, replace(tokens, completion=c.max_completion_length))
        if m.fits():
            fits.append(f"{label} ({gib(m.peak)})")
        if len(fits) == limit:
            break
    return fits


# ---------------------------------------------------------------------------------------------
# The node a plan is for.


@dataclass(frozen=True)
class Target:
    """The GPUs of one node of the run: read off this machine, or described (--gpus, --gpu-memory)."""

    gpus: int  # per node; 0: a CPU plan
    gpu_bytes: int | None  # memory of one GPU (the smallest), as torch reports it
    described: bool  # given on the command line rather than read here

    def describe(self) -> str:
        if not self.gpus:
            return "node: no GPU (a CPU plan)"
        mem = "memory unknown" if self.gpu_bytes is None else f"{self.gpu_bytes / GIB:,.1f} GiB each"
        return f"node: {self.gpus} GPU(s), {mem} ({'as described by --gpus/--gpu-memory' if self.described else 'this machine'})"


def gpu_memory_here() -> int | None:
    """The smallest visible GPU's memory in bytes (nvidia-smi: no CUDA context is created in this
    process, which would hold GPU memory for the whole run), or None."""
    import os
    import shutil
    import subprocess

    if not shutil.which("nvidia-smi"):
        return None
    q = subprocess.run(
        ["nvidia-smi", "--query-gpu=index,uuid,memory.total", "--format=csv,noheader,nounits"], capture_output=True, text=True
    )
    if q.returncode:
        return None
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    wanted = None if visible is None else {v.strip() for v in visible.split(",") if v.strip()}
    sizes = []
    for line in q.stdout.splitlines():
        parts = [x.strip() for x in line.split(",")]
        if len(parts) == 3 and (wanted is None or parts[0] in wanted or parts[1] in wanted):
            try:
                sizes.append(int(float(parts[2]) * 2**20))
            except ValueError:
                continue
    return min(sizes) if sizes else None


def node_target(gpus: int | None, gpu_memory_gib: float | None, *, cuda_here: bool, at_least: int = 1) -> Target:
    """--gpus / --gpu-memory, else this machine's visible GPUs (none: a CPU plan). --gpu-memory alone
    on a machine without GPUs describes `at_least` GPUs (the ranks the plan asks for on a node)."""
    described = gpus is not None or gpu_memory_gib is not None
    if gpus is None:
        if cuda_here:
            import torch

            gpus = torch.cuda.device_count()  # NVML: no CUDA context
        else:
            gpus = at_least if gpu_memory_gib is not None else 0
    if not gpus:
        return Target(0, None, described)
    memory = int(gpu_memory_gib * GIB) if gpu_memory_gib is not None else (gpu_memory_here() if cuda_here else None)
    return Target(gpus, memory, described)


def trl_has_fused_loss() -> bool:
    """trl >= 1.15's tiled LM head (`add_fused_lm_head`, which trl.trainer exports)."""
    import trl.trainer

    return hasattr(trl.trainer, "add_fused_lm_head")


# Tokens the chat template adds around one user turn and the generation prompt (Qwen-style), and a
# conservative bytes-per-token ratio for the prompt text: the estimates run before any tokenizer is
# loaded, so they estimate high.
TEMPLATE_TOKENS = 24
BYTES_PER_TOKEN = 3


def estimate_prompt_tokens(prompt_text: str, image_tokens: int) -> int:
    """A prompt's tokens: its image tokens, its text at BYTES_PER_TOKEN, the chat template's."""
    return int(image_tokens) + math.ceil(len(prompt_text.encode("utf-8")) / BYTES_PER_TOKEN) + TEMPLATE_TOKENS


def tokens_of(cfg: TrainConfig, rows: list[dict]) -> Tokens:
    """The longest micro-batch sequence of the prepared rows (instruction + image + completion),
    else max_prompt_tokens when no row is at hand."""
    if not rows:
        return Tokens(cfg.max_prompt_tokens, cfg.max_prompt_tokens, cfg.max_completion_length)
    prompt = max(estimate_prompt_tokens(str(r["prompt"]), int(r.get("image_tokens", 0))) for r in rows)
    image = max(int(r.get("image_tokens", 0)) for r in rows)
    return Tokens(min(prompt, cfg.max_prompt_tokens), image, cfg.max_completion_length)


def run_record(cfg: TrainConfig, trainer, rows: list[dict], measured_peak: int | None) -> dict | None:
    """The estimate next to what a CUDA run allocated at its peak (`torch.cuda.max_memory_allocated`
    over the steps), for train_summary.json: every GPU run checks the estimate. None without CUDA or
    without a readable model folder."""
    import torch

    from olmocr_rl.train.shape import ShapeUnknown, read_shape

    if not torch.cuda.is_available():
        return None
    try:
        shape = read_shape(str(cfg.model))
    except ShapeUnknown:
        return None
    plugin = getattr(trainer.accelerator.state, "deepspeed_plugin", None)
    layout = Layout(
        trainer.accelerator.num_processes, plugin.zero_stage if plugin is not None else None, bool(trainer.args.bf16), trl_has_fused_loss(),
        torch.cuda.get_device_properties(torch.cuda.current_device()).total_memory, cfg.use_vllm and cfg.vllm_mode == "server",
    )  # fmt: skip
    est = estimate_memory(cfg, shape, layout, tokens_of(cfg, rows))
    record = {
        "estimate_gib": round(est.peak / GIB, 3),
        "gpu_gib": round((layout.gpu_bytes or 0) / GIB, 3),
        "parts_gib": {f"{p.phase}/{p.name}": round(p.bytes / GIB, 3) for p in est.parts},
    }
    if measured_peak:
        record["measured_peak_gib"] = round(measured_peak / GIB, 3)
        record["measured_over_estimate"] = round(measured_peak / est.peak, 3)
    return record


def server_share(cfg: TrainConfig, shape: ModelShape, gpu_bytes: int, tensor_parallel: int) -> tuple[int, int]:
    """(bytes vLLM takes of each server GPU, bytes its 16-bit weights need there): the rest of its
    share is KV cache and vLLM's own buffers."""
    return int(cfg.vllm_server_gpu_memory_utilization * gpu_bytes), 2 * shape.params // max(1, tensor_parallel)
