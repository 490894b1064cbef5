"""GPU memory per training rank, by component, before anything is launched (`train --dry-run`
prints it; pre-flight refuses a plan that cannot fit and warns near the edge).

Every figure is bytes held at the rank's peak, from the model's shape (olmocr_rl/train/shape.py)
and the plan's layout; each component says where it comes from. P is every parameter (every expert
of a mixture of experts), T the trained ones (P, or the LoRA adapter's), N the training ranks (ZeRO
partitions over all of them). A step runs three phases one after another, and a component lives in
the phases it is allocated for: generation, the loss (forward and backward of a micro-batch, once
per gradient accumulation step), the optimizer step (activations freed). The peak is what is held
throughout plus the largest phase.

Held throughout (tests/test_memory.py holds the model states equal to the real tensors of each path
on CPU):
* weights: the dtype `modeling.training_dtype` loads (float32 for full training without DeepSpeed,
  bf16 under DeepSpeed with bf16 and for LoRA's frozen base); ZeRO-3 holds 1/N of them.
* master weights: DeepSpeed's float32 partition of the trained weights (4T/N; stage_1_and_2.py
  `single_partition_of_fp32_groups`, stage3.py `fp32_partitioned_groups_flat`); none without it
  (the weights are float32 themselves).
* optimizer: AdamW's two moments in the master dtype (8T, or 8T/N under ZeRO).
* reference model (beta != 0, not LoRA): trl builds it in the policy's dtype at the trainer's start
  (grpo_trainer.py: `model_init_kwargs.setdefault("dtype", self.model.dtype)`): float32 without
  DeepSpeed, 16-bit under it, partitioned by ZeRO-3 only.
* ZeRO-3's 16-bit gradient partition (2T/N): stage3.py allocates `grad_partitions_flat_buffer` when
  it builds the optimizer and keeps it.
* pixel values: trl runs the processor on the rank's whole generation batch after generating it and
  keeps its `pixel_values` on the GPU for all the micro-batches of that batch (trl 1.16
  grpo_trainer.py ~2530 `prompt_inputs = super()._prepare_inputs(...)`, ~2914
  `output["pixel_values"]`; the same in 1.11); the previous batch's stay referenced in the buffer
  until the next one is built, so a batch's worth is there in every phase. One row per vision patch
  (image tokens x merge^2) of channels x temporal patch x patch^2 values, in the DeepSpeed dtype
  (transformers' `Trainer._prepare_input` casts float inputs to it) or float32 without DeepSpeed.

During the loss:
* activations (formulas; checked against the tensors autograd saves on CPU, calibrated on a GPU by
  scripts/gpu_check.py): per token and text layer, bf16 weights save 16h + 4q + 4kv + mlp + 4 heads
  + 8 bytes (h hidden, q the query width, kv the key/value width; mlp 8i for a gated MLP of width i,
  4i for a plain one); Qwen3's per-head q/k RMSNorm 6q + 6kv + 4 (heads + kv heads) more; a mixture
  of experts replaces 8i by what its routed experts save, k x (4h + 8i + 38) + 4E + 4 (k of E experts
  each token goes to, i one expert's width: transformers' grouped_mm experts, its default); float32
  weights under bf16 autocast 10h more (the residual stream stays float32; a mixture of experts
  k x (4h + 8i) - 2h more again) and autocast keeps a bf16 copy of every Linear weight while the
  forward runs (2 bytes a weight). With gradient checkpointing a layer keeps only its input (h in the
  weights' dtype) and one layer is recomputed at a time. The vision encoder the same way per patch
  (image tokens x spatial merge squared).
* gradients in the trained weights' dtype, whole on every rank without ZeRO (DDP adds its own
  buckets of the same size: torch's Reducer copies each gradient into them, transformers and
  accelerate leave `gradient_as_bucket_view` off); ZeRO-1 keeps whole 16-bit gradients, ZeRO-2 a
  16-bit partition (`grads_in_partition`) and its reduce bucket, ZeRO-3 its reduce buckets. They
  live on to the optimizer step.
* ZeRO-3 gathers each module whole to run it: the largest of a text layer and the LM head (trl's
  fused loss gathers the head itself: trl 1.16 trainer/utils.py ~1643 `maybe_gather_lm_head_ctx`,
  and again in its backward), plus the prefetch bucket (accelerate's auto: 0.9 x hidden^2).
* the loss: trl >= 1.15 computes log-probabilities through a fused, tiled LM head
  (trainer/utils.py `add_fused_lm_head`, kernels/chunked_logprob.py): tiles of 4,096 tokens x
  32,768 vocabulary entries, a float32 gradient of the LM head weight and of the hidden states, and
  at the end of its backward their copies in the weights' dtype (trl 1.16 chunked_logprob.py ~457
  `grad_weight.to(weight.dtype)`, `grad_hidden.to(hidden.dtype)`: bf16 weights make a second,
  16-bit LM-head gradient while the float32 one is alive); older trl materialises the logits of
  every completion token (bf16 logits, the temperature-scaled copy, float32 log-softmax, and its
  gradient: 12 bytes a logit).

At the optimizer step (activations freed): the gradients of the loss, and DeepSpeed's float32
partition of them, built per parameter group as the step runs (DeepSpeed 0.19.8 stage_1_and_2.py
~3118-3126 `single_grad_partition = self.flatten(...).to(fp32)`; stage3.py
`_prepare_fp32_grad_for_sub_group`, one sub-group of at most 1e9 elements at a time).

Generation: transformers' `generate` keeps a KV cache for the rank's whole generation batch
(per_device_train_batch_size x steps_per_generation sequences); ZeRO-3 gathers the whole 16-bit
model for it (trl's `ds3_gather_for_generation`); a colocated vLLM engine holds
vllm_gpu_memory_utilization of the card, released during the loss with vllm_enable_sleep_mode; a
`--vllm-gpus` server uses its own GPUs. With sleep mode trl discards the engine's weights after
every generate call (level 2) and pushes them again at the next (trl 1.16
generation/vllm_generation.py ~750-752, ~589-590): one push a generation round, 1 + the added
rounds of online filtering (`weight_pushes`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from olmocr_rl.train.shape import ModelShape, Stack

if TYPE_CHECKING:
    from olmocr_rl.image_tokens import ImageBudget
    from olmocr_rl.train.config import TrainConfig

GIB = 2**30
TOKEN_TILE = 4096  # trl kernels/chunked_logprob.py TOKEN_CHUNK_SIZE
VOCAB_TILE = 32768  # trl trainer/utils.py _CHUNKED_LOGPROB_CHUNK_SIZE
ZERO2_BUCKET = 500_000_000  # DeepSpeed's reduce_bucket_size default (our ZeRO-2 preset leaves it)
ZERO3_SUB_GROUP = 1_000_000_000  # DeepSpeed's sub_group_size default: the float32 gradient built at a time
RESERVED = 1.0 * GIB  # CUDA context, NCCL and allocator slack torch's allocation does not show
EDGE = 0.9  # above this share of the card: a warning
CLOSE = 1.0 * GIB  # a plan that fits with less to spare than this says how close it is (`Memory.close`)
# The phases of a step, in the order they run, and how `Memory.lines` names them.
PHASES = {"generate": "during generation", "loss": "during the loss", "step": "at the optimizer step"}


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
    patches: int = 0  # vision patches of the largest page (image x merge^2; 0: image x the model's merge)

    @property
    def sequence(self) -> int:
        return self.prompt + self.completion


@dataclass(frozen=True)
class Part:
    name: str
    bytes: int
    how: str
    phase: str = "states"  # "states" (held throughout), or the phases it lives in ("loss", "loss+step", ...)

    def lives_in(self, phase: str) -> bool:
        return phase in self.phase.split("+")


@dataclass
class Memory:
    parts: list[Part] = field(default_factory=list)
    gpu_bytes: int | None = None

    def total(self, phase: str | None = None) -> int:
        """Bytes of the parts alive in `phase` ("states": held throughout; None: every part once)."""
        return sum(p.bytes for p in self.parts if phase is None or p.lives_in(phase))

    @property
    def largest_phase(self) -> str:
        return max(PHASES, key=lambda ph: self.total(ph))

    @property
    def peak(self) -> int:
        """States plus the largest phase (the phases run one after another)."""
        return self.total("states") + self.total(self.largest_phase)

    @property
    def usable(self) -> int | None:
        return None if self.gpu_bytes is None else self.gpu_bytes - int(RESERVED)

    def fits(self) -> bool | None:
        return None if self.usable is None else self.peak <= self.usable

    def near_edge(self) -> bool:
        return self.usable is not None and self.peak > EDGE * self.usable

    @property
    def spare(self) -> int | None:
        """Bytes left of the usable memory at the peak (negative: it does not fit)."""
        return None if self.usable is None else self.usable - self.peak

    def close(self, margin: float = CLOSE) -> bool:
        """It fits, with less than `margin` bytes to spare: another CUDA or NCCL build (their own
        allocations are the RESERVED guess) may not."""
        return self.spare is not None and 0 <= self.spare < margin

    def spare_words(self, margin: float = CLOSE) -> str:
        """'' unless `close`; else how close, for the verdict."""
        if not self.close(margin):
            return ""
        return (f"{self.spare / GIB:.2f} GiB spare of the {gib(self.usable or 0)} usable: within {margin / GIB:g} GiB, "
                "a different CUDA/NCCL build may not fit")  # fmt: skip

    def lines(self) -> list[str]:
        """Each phase with its total; a part is listed in the first phase it lives in."""
        out, listed = [], set()
        for phase, title in (("states", "held throughout"), *PHASES.items()):
            alive = [p for p in self.parts if p.lives_in(phase) and p.bytes]
            if not alive:
                continue
            out.append(f"  {title}: {gib(self.total(phase))}")
            for p in alive:
                if p.name in listed:
                    continue
                listed.add(p.name)
                more = [PHASES[ph].removeprefix("during ").removeprefix("at ") for ph in p.phase.split("+")[1:]]
                out.append(f"    {p.name:<22} {gib(p.bytes):>10}  {p.how}" + (f" (to {' and '.join(more)})" if more else ""))
            carried = sum(p.bytes for p in alive if p.phase.split("+")[0] != phase)
            if carried:
                out.append(f"    {'from the loss':<22} {gib(carried):>10}  the gradients above")
        card = "" if self.gpu_bytes is None else f" of {gib(self.gpu_bytes)} ({100 * self.peak / self.gpu_bytes:.0f} %)"
        out.append(f"  peak: {gib(self.peak)}{card} = held + the largest phase ({PHASES[self.largest_phase].split(' ', 1)[1]})")
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
    h, q, kv = stack.hidden, stack.query, stack.kv_dim
    b = 16 * h + 4 * q + 4 * kv + 4 * stack.heads + 8
    if stack.qk_norm:
        b += 6 * q + 6 * kv + 4 * (stack.heads + (stack.kv_heads or stack.heads))
    fp32 = weight == 4 and autocast
    if stack.experts:
        k, i = stack.active_experts, stack.intermediate
        b += k * (4 * h + 8 * i + 38) + 4 * stack.experts + 4 + (k * (4 * h + 8 * i) - 2 * h if fp32 else 0)
    else:
        b += (8 if stack.gated_mlp else 4) * stack.intermediate
    return b + (10 * h if fp32 else 0)


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
    parts = [*_model_states(z), *_pixel_values(z, tokens), *_gradients(z), *_loss(z, tokens), *_generation(z, tokens)]
    return Memory(parts, layout.gpu_bytes)


def _model_states(z: _Sizes) -> list[Part]:
    cfg, n, zero, P, T, w, w16 = z.cfg, z.layout.world, z.layout.zero, z.shape.params, z.trained, z.w, z.w16
    if zero == 3:
        text = z.shape.text
        layer = text.layer_params or text.linear_params // max(1, text.layers)
        gathered = max(layer, z.shape.lm_head) + int(0.9 * text.hidden**2)
        what = "the LM head" if z.shape.lm_head >= layer else "a text layer"
        parts = [Part("weights", P * w // n, f"{w} B x P / {n} ranks"),
                 Part("ZeRO-3 gathered", gathered * w16, f"{what} whole (trl's fused loss gathers the head) + the prefetch bucket", "loss")]  # fmt: skip
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


def pixel_value_bytes(cfg: TrainConfig, shape: ModelShape, layout: Layout, tokens: Tokens) -> int:
    """The `pixel_values` trl keeps on the GPU for one rank's generation batch (module docstring)."""
    if shape.vision is None or not shape.patch_values:
        return 0
    patches = tokens.patches or tokens.image * shape.merge
    dtype = (2 if layout.bf16 else 4) if layout.zero is not None else 4
    return generation_sequences(cfg, layout.world) * patches * shape.patch_values * dtype


def _pixel_values(z: _Sizes, tokens: Tokens) -> list[Part]:
    b = pixel_value_bytes(z.cfg, z.shape, z.layout, tokens)
    seqs = generation_sequences(z.cfg, z.layout.world)
    dtype = "16-bit" if z.layout.zero is not None and z.layout.bf16 else "float32"
    return [Part("pixel values", b, f"{seqs} pages' pixel_values kept for the generation batch ({dtype}, trl)")] if b else []


def _gradients(z: _Sizes) -> list[Part]:
    n, zero, T, w16 = z.layout.world, z.layout.zero, z.trained, z.w16
    if zero is None:
        tw = 4 if z.cfg.lora else z.w  # peft keeps adapters in float32 over a half base
        ddp = [Part("DDP buckets", T * tw, "torch's Reducer: a copy of every gradient", "loss+step")] if n > 1 else []
        return [Part("gradients", T * tw, f"{tw} B x trained", "loss+step"), *ddp]
    fp32 = min(T // n, ZERO3_SUB_GROUP) if zero == 3 else T // n
    step = Part("fp32 gradients", 4 * fp32, "DeepSpeed's float32 partition, built at the step", "step")
    if zero == 3:
        return [Part("gradients", T * w16 // n, f"{w16}-byte partition (ZeRO-3 keeps it from the start)"),
                Part("reduce buckets", 2 * z.shape.text.hidden**2 * w16, "2 x hidden^2 (accelerate's auto, double-buffered)", "loss"),
                step]  # fmt: skip
    # ZeRO-1/2 keep whole the tensors their partition boundaries cut (at most two per rank).
    low = T * w16 if zero == 1 else (T // n + (2 * z.shape.largest if zero == 2 else 0)) * w16
    how = f"{w16}-byte {'whole' if zero == 1 else 'partition'}"
    return [Part("gradients", low, how, "loss+step"),
            Part("reduce buckets", ZERO2_BUCKET * w16, "reduce_bucket_size 5e8 (DeepSpeed's default)", "loss+step"), step]  # fmt: skip


def _loss(z: _Sizes, tokens: Tokens) -> list[Part]:
    cfg, shape, w = z.cfg, z.shape, z.w
    autocast = z.layout.bf16 and w == 4
    checkpointing = bool(cfg.gradient_checkpointing)
    b = cfg.per_device_train_batch_size
    act = stack_activations(shape.text, b * tokens.sequence, w, autocast, checkpointing)
    if shape.vision is not None:
        act += stack_activations(shape.vision, b * (tokens.patches or tokens.image * shape.merge), w, autocast, checkpointing)
    ck = "gradient checkpointing" if checkpointing else "no checkpointing"
    experts = f", {shape.text.active_experts} of {shape.text.experts} experts a token" if shape.text.experts else ""
    parts = [Part("activations", act, f"{b} x {tokens.sequence:,} tokens, {ck}{experts}", "loss")]
    if autocast:
        linear = shape.text.linear_params + (shape.vision.linear_params if shape.vision else 0)
        parts.append(Part("autocast copies", 2 * linear, "bf16 copies of the float32 Linear weights", "loss"))
    kept = b * (tokens.completion + 1)
    if z.layout.fused_loss:
        tile, head, hidden = fused_loss_bytes(cfg, shape, w, kept)
        parts.append(Part("loss (fused LM head)", tile + hidden, "a logit tile, the hidden states' float32 gradient and its copy", "loss"))
        if head:
            copy = f" + its {w}-byte copy (trl)" if w != 4 else ""
            parts.append(Part("LM-head gradient", head, f"float32{copy}: {shape.lm_head:,} weights", "loss"))
    else:
        parts.append(Part("loss logits", kept * shape.vocab * 12, f"{kept:,} tokens x {shape.vocab:,} vocab x 12 B (trl < 1.15)", "loss"))
    return parts


def fused_loss_bytes(cfg: TrainConfig, shape: ModelShape, w: int, kept: int) -> tuple[int, int, int]:
    """(logit tile, LM-head weight gradient, hidden-state gradient) bytes of trl's fused log-prob
    backward over `kept` tokens with weights of `w` bytes (trl 1.16 kernels/chunked_logprob.py
    `backward`: float32 accumulators, returned as `.to(weight.dtype)` / `.to(hidden.dtype)` copies)."""
    from olmocr_rl.train.config import trl_default

    h = shape.text.hidden
    fp32_head = cfg.trl.get("cast_lm_head_to_fp32", trl_default("cast_lm_head_to_fp32"))
    tile = min(kept, TOKEN_TILE) * VOCAB_TILE * (4 if (w == 4 or fp32_head) else 2)
    copy = 0 if w == 4 else w  # `.to(weight.dtype)` of a float32 tensor is itself
    head = 0 if cfg.lora else shape.lm_head * (4 + copy)
    hidden_dtype = 4 if (w == 4 or fp32_head) else w  # cast_lm_head_to_fp32 hands the kernel float32 hidden states
    hidden = kept * h * (4 + (0 if hidden_dtype == 4 else hidden_dtype))
    return tile, head, hidden


def _generation(z: _Sizes, tokens: Tokens) -> list[Part]:
    cfg, layout = z.cfg, z.layout
    if cfg.use_vllm and cfg.vllm_mode == "colocate" and not layout.vllm_server:
        share, weights = colocated_share(cfg, z.shape, layout.gpu_bytes or 0)
        how = f"vllm_gpu_memory_utilization={cfg.vllm_gpu_memory_utilization:g} of the card (its 16-bit weights: {gib(weights)})"
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


def weight_pushes(cfg: TrainConfig, shape: ModelShape, zero: int | None) -> str | None:
    """What colocated vLLM with sleep mode costs besides memory: trl pushes the 16-bit weights into
    the engine once per generation round (module docstring), a line for the plan; None otherwise."""
    if not (cfg.use_vllm and cfg.vllm_mode == "colocate" and cfg.vllm_enable_sleep_mode):
        return None
    rounds = 1 + (int(getattr(cfg, "filter_extra_rounds", 0) or 0) if getattr(cfg, "filter_groups", False) else 0)
    each = gib(2 * shape.params)
    gathered = "; ZeRO-3 gathers every parameter for each" if zero == 3 else ""
    why = "sleep level 2 discards them after each generate call" + (
        " (online filtering: 1 + filter_extra_rounds rounds)" if rounds > 1 else ""
    )
    return f"vLLM sleep mode: up to {rounds} weight push(es) per generation batch into each rank's engine, {each} of 16-bit weights each ({why}{gathered})"


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


def tokens_of(cfg: TrainConfig, rows: list[dict], budget: ImageBudget) -> Tokens:
    """The longest micro-batch sequence of the prepared rows (instruction + image + completion), their
    image tokens from each page's size under the model's `budget` (olmocr_rl/image_tokens.py), else
    max_prompt_tokens when no row is at hand."""
    from olmocr_rl.image_tokens import row_tokens

    if not rows:
        return Tokens(cfg.max_prompt_tokens, cfg.max_prompt_tokens, cfg.max_completion_length)
    images = [row_tokens(r, budget) for r in rows]
    prompt = max(estimate_prompt_tokens(str(r["prompt"]), n) for r, n in zip(rows, images))
    image = max(images)
    return Tokens(min(prompt, cfg.max_prompt_tokens), image, cfg.max_completion_length, image * budget.merge_size**2)


def planning_budget(cfg: TrainConfig, shape: ModelShape | None) -> tuple[ImageBudget, str | None]:
    """The image budget a run's estimates use: the model's processor (read with its shape) under the
    run's max_pixels, else `image_tokens.model_budget`'s (Qwen2.5-VL's, with why)."""
    from olmocr_rl.image_tokens import model_budget

    if shape is not None and shape.image is not None:
        return shape.image.with_max_pixels(cfg.max_pixels), None
    budget, why = model_budget(str(cfg.model), cfg.max_pixels)
    if why is not None and shape is not None and shape.image_note:
        why = f"image tokens estimated with Qwen2.5-VL's processor: {shape.image_note}"
    return budget, why


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
    est = estimate_memory(cfg, shape, layout, tokens_of(cfg, rows, planning_budget(cfg, shape)[0]))
    record = {
        "estimate_gib": round(est.peak / GIB, 3),
        "gpu_gib": round((layout.gpu_bytes or 0) / GIB, 3),
        "parts_gib": {f"{p.phase}/{p.name}": round(p.bytes / GIB, 3) for p in est.parts},
    }
    if measured_peak:
        record["measured_peak_gib"] = round(measured_peak / GIB, 3)
        record["measured_over_estimate"] = round(measured_peak / est.peak, 3)
    return record


def engine_share(utilization: float, shape: ModelShape, gpu_bytes: int, tensor_parallel: int) -> tuple[int, int]:
    """(bytes a vLLM engine takes of each of its GPUs at `utilization`, bytes its 16-bit weights need
    there: one tensor-parallel shard): the rest of its share is KV cache and vLLM's own buffers."""
    return int(utilization * gpu_bytes), 2 * shape.params // max(1, tensor_parallel)


def server_share(cfg: TrainConfig, shape: ModelShape, gpu_bytes: int, tensor_parallel: int) -> tuple[int, int]:
    """`engine_share` of a --vllm-gpus server's GPU (vllm_server_gpu_memory_utilization)."""
    return engine_share(cfg.vllm_server_gpu_memory_utilization, shape, gpu_bytes, tensor_parallel)


def colocated_share(cfg: TrainConfig, shape: ModelShape, gpu_bytes: int) -> tuple[int, int]:
    """`engine_share` of a colocated engine on each training GPU (vllm_gpu_memory_utilization,
    vllm_tensor_parallel_size)."""
    return engine_share(cfg.vllm_gpu_memory_utilization, shape, gpu_bytes, cfg.vllm_tensor_parallel_size)


def share_fixes(cfg: TrainConfig, shape: ModelShape, gpu_bytes: int, world: int) -> list[str]:
    """The changes that let a colocated engine's share hold its 16-bit weights (`colocated_share`):
    a higher vllm_gpu_memory_utilization (when the weights leave room on the card), a tensor-parallel
    size that divides the training ranks and shards them small enough, generation on GPUs of its own."""
    share, weights = colocated_share(cfg, shape, gpu_bytes)
    whole = 2 * shape.params  # one shard's bytes x the tensor parallel size
    out = []
    if (need := weights / gpu_bytes) < 0.95:
        out.append(f"raise vllm_gpu_memory_utilization above {math.ceil(need * 100) / 100:.2f} (the weights alone; the KV cache takes the rest "
                   "of the share, and training what the share leaves)")  # fmt: skip
    tps = [t for t in range(cfg.vllm_tensor_parallel_size + 1, world + 1) if world % t == 0 and whole // t < share]
    if tps:
        out.append(f"set vllm_tensor_parallel_size={tps[0]} ({gib(whole // tps[0])} of weights a GPU)")
    out.append("generate on GPUs of its own: --vllm-gpus K (a vLLM server on the node's last K GPUs)")
    return out
