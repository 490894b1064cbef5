"""Every term of the memory plan and the phase it lives in, from first principles (issue 50): the
bytes of weights, master weights, gradients and AdamW's moments per ZeRO stage as DeepSpeed
partitions them (1/N of the trained parameters, N ranks that do not divide them), the loss's and
generation's terms, the verdict's arithmetic and the lines the plan prints. Pure function calls on
a made-up model shape whose sizes are all different and divide nothing, so that a term taken from
the wrong size, rounded the other way or put in another phase is seen."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from olmocr_rl.image_tokens import ImageBudget
from olmocr_rl.train.config import TrainConfig
from olmocr_rl.train.memory import (
    CLOSE,
    EDGE,
    GIB,
    PHASES,
    RESERVED,
    TOKEN_TILE,
    VOCAB_TILE,
    ZERO2_BUCKET,
    ZERO3_SUB_GROUP,
    Layout,
    Memory,
    Part,
    Target,
    Tokens,
    alternatives,
    colocated_share,
    engine_share,
    estimate_memory,
    estimate_prompt_tokens,
    fused_loss_bytes,
    generation_sequences,
    gib,
    node_target,
    per_token_layer,
    pixel_value_bytes,
    planning_budget,
    server_share,
    share_fixes,
    stack_activations,
    tokens_of,
    trained_params,
    weight_bytes,
    weight_pushes,
    what_fits,
)
from olmocr_rl.train.shape import ModelShape, Stack

P = 1_000_003  # parameters: prime, so no rank count divides it
N = 3  # ranks
TEXT = Stack(layers=3, hidden=11, intermediate=7, heads=2, kv_dim=5, gated_mlp=True, linear_params=301, q_dim=13, kv_heads=1,
             layer_params=97)  # fmt: skip
VISION = Stack(layers=2, hidden=6, intermediate=9, heads=3, kv_dim=6, gated_mlp=False, linear_params=53)
LORA_TARGETS = {"q_proj": 24, "k_proj": 16, "v_proj": 17, "o_proj": 23, "gate_proj": 1000}


def shape(**kw) -> ModelShape:
    base = dict(folder=Path("m"), params=P, vision_params=71, text=TEXT, vision=VISION, vocab=37, merge=4, weight_file_bytes=0,
                other_file_bytes=0, largest=131, linear_in_out=LORA_TARGETS, patch_values=5, lm_head=37 * 11)  # fmt: skip
    return ModelShape(**(base | kw))


def config(**kw) -> TrainConfig:
    return TrainConfig(prepared_dir="p", model="m", output_dir="o", **kw)


TOK = Tokens(prompt=19, image=3, completion=23)


def parts(cfg: TrainConfig, layout: Layout, shp: ModelShape | None = None, tokens: Tokens = TOK) -> dict[str, Part]:
    found = estimate_memory(cfg, shp or shape(), layout, tokens).parts
    named = {p.name: p for p in found}
    assert len(named) == len(found), [p.name for p in found]  # each term once
    return named


def terms(named: dict[str, Part]) -> dict[str, tuple[int, str]]:
    return {name: (p.bytes, p.phase) for name, p in named.items()}


# ---------------------------------------------------------------------------------------------
# The model states, per path (DeepSpeed's ZeRO paper / docs: 16-bit weights 2P, their gradients 2P,
# float32 master weights 4P and Adam's two moments 8P; stage 1 partitions the optimizer states,
# stage 2 the gradients too, stage 3 the 16-bit weights too, each over the N ranks).


def test_weight_bytes_is_the_dtype_each_path_loads():
    """float32 without DeepSpeed (bf16 through autocast), bf16 under DeepSpeed and for LoRA's frozen
    base, and what `dtype` names when it is set."""
    assert weight_bytes(config(), Layout(1, None, True)) == 4
    assert weight_bytes(config(), Layout(2, 1, True)) == 2
    assert weight_bytes(config(lora=True), Layout(1, None, True)) == 2
    assert weight_bytes(config(lora=True), Layout(1, None, False)) == 4
    assert weight_bytes(config(), Layout(2, 2, False)) == 4
    assert weight_bytes(config(dtype="float32"), Layout(2, 3, True)) == 4
    assert weight_bytes(config(dtype="bfloat16"), Layout(1, None, False)) == 2
    assert weight_bytes(config(dtype="float16"), Layout(1, None, False)) == 2


def test_one_process_holds_float32_weights_adam_and_gradients_whole():
    """No DeepSpeed, bf16: float32 weights (4P), no master copy (the weights are float32), AdamW 8P,
    float32 gradients 4P in the loss and the step, no DDP buckets with one rank."""
    t = terms(parts(config(beta=0.0), Layout(1, None, True)))
    assert t["weights"] == (4 * P, "states")
    assert t["optimizer"] == (8 * P, "states")
    assert t["gradients"] == (4 * P, "loss+step")
    assert "master weights" not in t and "DDP buckets" not in t and "reference model" not in t
    assert "fp32 gradients" not in t and "reduce buckets" not in t and "ZeRO-3 gathered" not in t


def test_ddp_adds_its_buckets_and_the_reference_model_is_float32():
    """DDP over N ranks: every state whole on every rank, torch's Reducer a second copy of the
    gradients; beta != 0 builds the reference model in the policy's dtype (float32), not partitioned."""
    t = terms(parts(config(beta=0.04), Layout(N, None, True)))
    assert t["weights"] == (4 * P, "states") and t["optimizer"] == (8 * P, "states")
    assert t["gradients"] == t["DDP buckets"] == (4 * P, "loss+step")
    assert t["reference model"] == (4 * P, "states")


def test_lora_trains_a_float32_adapter_over_a_16_bit_base():
    """LoRA: T = r x (in + out) of the targeted modules; the base bf16 (2P) plus the adapter in float32
    (4T), AdamW and the gradients over T alone, no reference model whatever beta."""
    cfg = config(lora=True, lora_r=3, beta=0.04)
    T = 3 * (24 + 16 + 17 + 23)
    assert trained_params(cfg, shape()) == T and trained_params(config(), shape()) == P
    t = terms(parts(cfg, Layout(1, None, True)))
    assert t["weights"] == (2 * P + 4 * T, "states")
    assert t["optimizer"] == (8 * T, "states")
    assert t["gradients"] == (4 * T, "loss+step")
    assert "reference model" not in t
    lora_two = terms(parts(cfg, Layout(2, None, True)))
    assert lora_two["DDP buckets"] == (4 * T, "loss+step")
    assert "LM-head gradient" not in t  # the head is frozen: no gradient of it


@pytest.mark.parametrize("bf16", [True, False])
def test_zero_1_and_2_partition_the_optimizer_states_and_keep_16_bit_weights_whole(bf16):
    """ZeRO-1/2: the 16-bit weights whole (2P; 4P without bf16), float32 master weights and AdamW's
    moments partitioned (4P/N, 8P/N, rounded down as DeepSpeed's partitions are), DeepSpeed's
    float32 gradient partition built at the step (4 x P // N)."""
    w16 = 2 if bf16 else 4
    for zero in (1, 2):
        t = terms(parts(config(beta=0.04), Layout(N, zero, bf16)))
        assert t["weights"] == (w16 * P, "states")
        assert t["master weights"] == (4 * P // N, "states")
        assert t["optimizer"] == (8 * P // N, "states")
        assert t["reference model"] == (w16 * P, "states")  # 16-bit under DeepSpeed, not partitioned
        assert t["fp32 gradients"] == (4 * (P // N), "step")
        assert t["reduce buckets"] == (ZERO2_BUCKET * w16, "loss+step")
        assert "DDP buckets" not in t and "ZeRO-3 gathered" not in t
    assert ZERO2_BUCKET == 500_000_000  # DeepSpeed's reduce_bucket_size default


def test_zero_1_keeps_whole_gradients_and_zero_2_a_partition_with_two_cut_tensors():
    """ZeRO-1's 16-bit gradients are whole (2P); ZeRO-2's are the 1/N partition plus the two tensors
    its boundaries may cut, kept whole (2 x the largest)."""
    largest = shape().largest
    assert terms(parts(config(), Layout(N, 1, True)))["gradients"] == (2 * P, "loss+step")
    assert terms(parts(config(), Layout(N, 2, True)))["gradients"] == ((P // N + 2 * largest) * 2, "loss+step")
    assert terms(parts(config(), Layout(N, 2, False)))["gradients"] == ((P // N + 2 * largest) * 4, "loss+step")


@pytest.mark.parametrize("bf16", [True, False])
def test_zero_3_partitions_the_weights_too_and_gathers_a_module_for_the_loss(bf16):
    """ZeRO-3: 16-bit weights, their gradients and the reference model 1/N each, held throughout;
    master weights 4P/N, AdamW 8P/N; its reduce buckets (2 x hidden^2, double-buffered) in the loss;
    the largest module it gathers whole (here the 37 x 11 LM head, above a 97-parameter layer)
    plus the prefetch bucket 0.9 x hidden^2 (int(108.9) = 108) in the loss."""
    w16 = 2 if bf16 else 4
    t = terms(parts(config(beta=0.04), Layout(N, 3, bf16)))
    w = 2 if bf16 else 4  # DeepSpeed's dtype
    assert t["weights"] == (P * w // N, "states")
    assert t["master weights"] == (4 * P // N, "states") and t["optimizer"] == (8 * P // N, "states")
    assert t["gradients"] == (P * w16 // N, "states")
    assert t["reference model"] == (P * w16 // N, "states")
    assert t["reduce buckets"] == (2 * 11**2 * w16, "loss")
    assert t["fp32 gradients"] == (4 * (P // N), "step")
    assert t["ZeRO-3 gathered"] == ((37 * 11 + 108) * w16, "loss")


def test_zero_3_gathers_a_text_layer_where_it_outweighs_the_head():
    """The gather is the largest of a text layer and the LM head; without per-layer counts, the text
    stack's Linear parameters over its layers (rounded down); the part says which."""
    head_big = parts(config(), Layout(N, 3, True))["ZeRO-3 gathered"]
    assert "the LM head" in head_big.how
    layer_big = parts(config(), Layout(N, 3, True), shape(text=replace(TEXT, layer_params=1009)))["ZeRO-3 gathered"]
    assert layer_big.bytes == (1009 + 108) * 2 and "a text layer" in layer_big.how
    from_linear = parts(config(), Layout(N, 3, True), shape(text=replace(TEXT, layer_params=0, linear_params=3001)))
    assert from_linear["ZeRO-3 gathered"].bytes == (3001 // 3 + 108) * 2  # 1000 > 407: a layer
    tie = parts(config(), Layout(N, 3, True), shape(text=replace(TEXT, layer_params=37 * 11)))["ZeRO-3 gathered"]
    assert "the LM head" in tie.how  # equal: the head (trl's fused loss gathers it)
    no_layers = shape(text=replace(TEXT, layers=0, layer_params=0, linear_params=5000), lm_head=1)
    assert parts(config(), Layout(N, 3, True), no_layers)["ZeRO-3 gathered"].bytes == (5000 + 108) * 2


def test_zero_3s_float32_gradient_is_built_one_sub_group_at_a_time():
    """stage3.py builds the float32 gradient one sub-group (sub_group_size, 1e9 elements) at a time:
    a partition above it holds one sub-group's, below it the whole partition."""
    big = shape(params=3 * ZERO3_SUB_GROUP + 7)
    assert parts(config(), Layout(N, 3, True), big)["fp32 gradients"].bytes == 4 * ZERO3_SUB_GROUP
    assert parts(config(), Layout(1, 3, True), shape(params=ZERO3_SUB_GROUP))["fp32 gradients"].bytes == 4 * ZERO3_SUB_GROUP
    assert parts(config(), Layout(N, 2, True), big)["fp32 gradients"].bytes == 4 * (big.params // N)  # ZeRO-2: no sub-groups
    assert ZERO3_SUB_GROUP == 1_000_000_000


def test_the_reference_model_is_partitioned_by_zero_3_alone_and_absent_at_beta_0():
    for zero, expected in ((None, 4 * P), (1, 2 * P), (2, 2 * P), (3, 2 * P // N)):
        assert parts(config(beta=0.5), Layout(N, zero, True))["reference model"].bytes == expected, zero
        assert "reference model" not in parts(config(beta=0.0), Layout(N, zero, True))
    assert "/ 3" in parts(config(beta=0.5), Layout(N, 3, True))["reference model"].how
    assert "/" not in parts(config(beta=0.5), Layout(N, 2, True))["reference model"].how


# ---------------------------------------------------------------------------------------------
# Pixel values, activations, the loss.


def test_pixel_values_are_the_generation_batchs_pages_in_deepspeeds_dtype():
    """One row per patch (tokens.patches, else image tokens x merge) of patch_values values, for
    per_device_train_batch_size x steps_per_generation pages: 16-bit under DeepSpeed with bf16,
    float32 otherwise; held throughout; none without a vision tower or patch values."""
    cfg = config(per_device_train_batch_size=2, gradient_accumulation_steps=5)
    assert generation_sequences(cfg, N) == 10
    assert generation_sequences(config(per_device_train_batch_size=2, steps_per_generation=7), N) == 14
    assert pixel_value_bytes(cfg, shape(), Layout(N, None, True), TOK) == 10 * 3 * 4 * 5 * 4
    assert pixel_value_bytes(cfg, shape(), Layout(N, 2, True), TOK) == 10 * 3 * 4 * 5 * 2
    assert pixel_value_bytes(cfg, shape(), Layout(N, 2, False), TOK) == 10 * 3 * 4 * 5 * 4
    assert pixel_value_bytes(cfg, shape(), Layout(N, None, True), replace(TOK, patches=17)) == 10 * 17 * 5 * 4
    assert pixel_value_bytes(cfg, shape(vision=None), Layout(N, None, True), TOK) == 0
    assert pixel_value_bytes(cfg, shape(patch_values=0), Layout(N, None, True), TOK) == 0
    pv = parts(cfg, Layout(N, 2, True))["pixel values"]
    assert (pv.bytes, pv.phase) == (10 * 3 * 4 * 5 * 2, "states") and "10 pages" in pv.how and "16-bit" in pv.how
    assert "float32" in parts(cfg, Layout(N, None, True))["pixel values"].how
    assert "float32" in parts(cfg, Layout(N, 2, False))["pixel values"].how
    assert "pixel values" not in parts(cfg, Layout(N, None, True), shape(vision=None))


def test_the_activation_formula_term_by_term():
    """Per token and layer, bf16 weights: 16h + 4q + 4kv + 4 heads + 8, a gated MLP 8i (plain 4i),
    Qwen3's q/k norms 6q + 6kv + 4 (heads + kv heads); float32 weights under autocast 10h more."""
    h, q, kv, i = 11, 13, 5, 7
    base = 16 * h + 4 * q + 4 * kv + 4 * 2 + 8
    assert per_token_layer(TEXT, 2, False) == base + 8 * i
    assert per_token_layer(replace(TEXT, gated_mlp=False), 2, False) == base + 4 * i
    assert per_token_layer(TEXT, 4, True) == base + 8 * i + 10 * h
    assert per_token_layer(TEXT, 4, False) == per_token_layer(TEXT, 2, True) == base + 8 * i  # autocast needs float32 weights
    norm = replace(TEXT, qk_norm=True)
    assert per_token_layer(norm, 2, False) == base + 8 * i + 6 * q + 6 * kv + 4 * (2 + 1)
    assert per_token_layer(replace(norm, kv_heads=0), 2, False) == base + 8 * i + 6 * q + 6 * kv + 4 * (2 + 2)  # kv heads: the heads


def test_the_activation_formula_of_a_mixture_of_experts():
    """k of E experts a token, each i wide: k x (4h + 8i + 38) + 4E + 4 instead of the MLP's 8i;
    float32 weights under autocast k x (4h + 8i) - 2h more again, and the 10h."""
    h, q, kv, i, k, e = 11, 13, 5, 7, 3, 17
    moe = replace(TEXT, experts=e, active_experts=k)
    base = 16 * h + 4 * q + 4 * kv + 4 * 2 + 8
    assert per_token_layer(moe, 2, False) == base + k * (4 * h + 8 * i + 38) + 4 * e + 4
    assert per_token_layer(moe, 4, True) == base + k * (4 * h + 8 * i + 38) + 4 * e + 4 + k * (4 * h + 8 * i) - 2 * h + 10 * h


def test_gradient_checkpointing_keeps_each_layers_input_and_recomputes_one_layer():
    per = per_token_layer(TEXT, 2, False)
    assert stack_activations(TEXT, 29, 2, False, False) == per * 29 * 3
    assert stack_activations(TEXT, 29, 2, False, True) == 2 * 11 * 29 * 3 + per * 29
    assert stack_activations(TEXT, 29, 4, True, True) == 4 * 11 * 29 * 3 + per_token_layer(TEXT, 4, True) * 29


def test_the_loss_phase_holds_activations_autocast_copies_and_the_fused_head():
    """The loss: the text stack's activations over micro-batch x (prompt + completion) tokens and the
    vision tower's over its patches; float32 weights under bf16 autocast add bf16 copies of every
    Linear weight (2 B each, text and vision); trl's fused head its tiles and gradients."""
    cfg = config(per_device_train_batch_size=2, gradient_checkpointing=False)
    named = parts(cfg, Layout(1, None, True))  # float32 weights, autocast
    act = stack_activations(TEXT, 2 * 42, 4, True, False) + stack_activations(VISION, 2 * 12, 4, True, False)
    assert (named["activations"].bytes, named["activations"].phase) == (act, "loss")
    assert "no checkpointing" in named["activations"].how and "2 x 42 tokens" in named["activations"].how
    assert terms(named)["autocast copies"] == (2 * (301 + 53), "loss")
    tile, head, hidden = fused_loss_bytes(cfg, shape(), 4, 2 * 24)
    assert terms(named)["loss (fused LM head)"] == (tile + hidden, "loss")
    assert terms(named)["LM-head gradient"] == (head, "loss")
    assert "copy" not in named["LM-head gradient"].how  # float32 weights: the copy is the tensor itself
    zero = parts(cfg, Layout(N, 2, True))  # bf16 weights: no autocast
    assert "autocast copies" not in zero and "2-byte copy" in zero["LM-head gradient"].how
    assert zero["activations"].bytes == stack_activations(TEXT, 2 * 42, 2, False, False) + stack_activations(
        VISION, 2 * 12, 2, False, False
    )
    no_vision = parts(cfg, Layout(1, None, True), shape(vision=None))
    assert no_vision["activations"].bytes == stack_activations(TEXT, 2 * 42, 4, True, False)
    assert no_vision["autocast copies"].bytes == 2 * 301
    ck = parts(config(gradient_checkpointing=True), Layout(1, None, True), tokens=replace(TOK, patches=50))
    assert ck["activations"].bytes == stack_activations(TEXT, 42, 4, True, True) + stack_activations(VISION, 50, 4, True, True)
    assert "gradient checkpointing" in ck["activations"].how and "experts" not in ck["activations"].how
    moe = parts(cfg, Layout(1, None, True), shape(text=replace(TEXT, experts=17, active_experts=3)))
    assert "3 of 17 experts a token" in moe["activations"].how


def test_the_fused_lm_heads_tiles_and_gradients():
    """trl's chunked log-prob: a tile of min(kept, 4,096) tokens x 32,768 vocabulary entries (float32
    with float32 weights or cast_lm_head_to_fp32, else 16-bit); the head's float32 gradient plus its
    copy in the weights' dtype (none for LoRA: the head is frozen); the hidden states' float32
    gradient plus a copy in their dtype."""
    assert (TOKEN_TILE, VOCAB_TILE) == (4096, 32768)
    cfg, shp, head = config(), shape(), 37 * 11
    assert fused_loss_bytes(cfg, shp, 2, 5001) == (4096 * 32768 * 2, head * 6, 5001 * 11 * 6)
    assert fused_loss_bytes(cfg, shp, 2, 4095) == (4095 * 32768 * 2, head * 6, 4095 * 11 * 6)
    assert fused_loss_bytes(cfg, shp, 4, 4097) == (4096 * 32768 * 4, head * 4, 4097 * 11 * 4)
    fp32 = config(trl={"cast_lm_head_to_fp32": True})
    assert fused_loss_bytes(fp32, shp, 2, 100) == (100 * 32768 * 4, head * 6, 100 * 11 * 4)
    assert fused_loss_bytes(config(lora=True), shp, 2, 100)[1] == 0


def test_trl_before_the_fused_head_materialises_every_completion_tokens_logits():
    """12 bytes a logit (bf16 logits, the scaled copy, float32 log-softmax and its gradient) over the
    micro-batch's completion tokens + 1."""
    named = parts(config(per_device_train_batch_size=2), Layout(1, None, True, fused_loss=False))
    assert terms(named)["loss logits"] == (2 * 24 * 37 * 12, "loss")
    assert "loss (fused LM head)" not in named and "LM-head gradient" not in named
    assert "48 tokens x 37 vocab" in named["loss logits"].how


# ---------------------------------------------------------------------------------------------
# Generation.


def test_generation_with_transformers_holds_the_kv_cache_and_zero_3s_whole_model():
    """transformers' generate: a K and V per token and layer (kv_dim wide) of the rank's generation
    batch, in the loaded dtype (16-bit under DeepSpeed); ZeRO-3 gathers the whole 16-bit model."""
    cfg = config(per_device_train_batch_size=2, gradient_accumulation_steps=5)
    kv = 10 * 42 * 3 * 2 * 5
    assert terms(parts(cfg, Layout(N, None, True)))["KV cache"] == (kv * 4, "generate")
    assert terms(parts(cfg, Layout(N, 2, True)))["KV cache"] == (kv * 2, "generate")
    assert terms(parts(cfg, Layout(N, 2, False)))["KV cache"] == (kv * 4, "generate")
    z3 = terms(parts(cfg, Layout(N, 3, True)))
    assert z3["ZeRO-3 gathered model"] == (2 * P, "generate") and z3["KV cache"] == (kv * 2, "generate")
    assert "ZeRO-3 gathered model" not in parts(cfg, Layout(N, 2, True))
    assert "10 sequences x 42 tokens" in parts(cfg, Layout(N, 2, True))["KV cache"].how


def test_a_colocated_vllm_takes_its_share_asleep_or_throughout():
    gpu = 80 * GIB + 3
    share = int(0.3 * gpu)
    on = dict(use_vllm=True, vllm_mode="colocate")
    asleep = parts(config(**on, vllm_enable_sleep_mode=True), Layout(N, 2, True, gpu_bytes=gpu))
    assert terms(asleep)["vLLM (colocated)"] == (share, "generate")
    weights = gib(2 * P)
    assert asleep["vLLM (colocated)"].how == (
        f"vllm_gpu_memory_utilization=0.3 of the card (its 16-bit weights: {weights}); asleep during the loss"
    )
    assert "KV cache" not in asleep
    awake = parts(config(**on), Layout(N, 2, True, gpu_bytes=gpu))
    assert terms(awake)["vLLM (colocated)"] == (share, "states")
    assert awake["vLLM (colocated)"].how == f"vllm_gpu_memory_utilization=0.3 of the card (its 16-bit weights: {weights}), held throughout"
    assert "vllm_gpu_memory_utilization=0.3" in awake["vLLM (colocated)"].how
    assert parts(config(**on), Layout(N, 2, True))["vLLM (colocated)"].bytes == 0  # no card known: no share of it
    assert parts(config(**on, vllm_gpu_memory_utilization=1.0), Layout(N, 2, True))["vLLM (colocated)"].bytes == 0
    server = parts(config(**on), Layout(N, 2, True, gpu_bytes=gpu, vllm_server=True))
    assert not {"vLLM (colocated)", "KV cache", "ZeRO-3 gathered model"} & set(server)
    mode_server = parts(config(use_vllm=True, vllm_mode="server"), Layout(N, 3, True, gpu_bytes=gpu))
    assert not {"vLLM (colocated)", "KV cache", "ZeRO-3 gathered model"} & set(mode_server)


def test_engine_shares_and_their_weights():
    """A vLLM engine takes utilization x the card of each of its GPUs; its 16-bit weights are 2P over
    the tensor-parallel size (rounded down)."""
    gpu = 24 * GIB + 1
    assert engine_share(0.45, shape(), gpu, 2) == (int(0.45 * gpu), 2 * P // 2)
    assert engine_share(0.45, shape(), gpu, 0) == (int(0.45 * gpu), 2 * P)
    cfg = config(vllm_gpu_memory_utilization=0.4, vllm_server_gpu_memory_utilization=0.7, vllm_tensor_parallel_size=3)
    assert server_share(cfg, shape(), gpu, 2) == (int(0.7 * gpu), P)
    assert colocated_share(cfg, shape(), gpu) == (int(0.4 * gpu), 2 * P // 3)


def test_share_fixes_name_the_utilization_the_tensor_parallel_size_and_a_server():
    """A share too small for the weights: raise the utilization above what the weights need (rounded
    up to a hundredth), while they need less than 95 % of the card; the first tensor-parallel size
    above the current one that divides the ranks and shards the weights below the share; a server."""
    gpu = 10**7
    shp = shape(params=2 * 10**6 + 1)  # 16-bit weights: 4,000,002 B = 0.4000002 of the card
    fixes = share_fixes(config(vllm_gpu_memory_utilization=0.3), shp, gpu, 6)
    assert fixes[0].startswith("raise vllm_gpu_memory_utilization above 0.41 ")
    assert fixes[1].startswith("set vllm_tensor_parallel_size=2 ")  # 2,000,001 B < 3,000,000
    assert fixes[2].startswith("generate on GPUs of its own") and len(fixes) == 3
    tight = share_fixes(config(vllm_gpu_memory_utilization=0.15), shp, gpu, 6)
    assert "vllm_tensor_parallel_size=3 " in tight[1]  # 2 shards 2,000,001 > 1,500,000; 3: 1,333,334
    five = share_fixes(config(vllm_gpu_memory_utilization=0.15), shp, gpu, 5)
    assert any("vllm_tensor_parallel_size=5 " in f for f in five)  # 5 ranks: only 5 divides them
    at_edge = shape(params=int(0.95 * gpu) // 2)  # weights exactly 95 % of the card: no utilization fix
    assert not share_fixes(config(vllm_gpu_memory_utilization=0.3), at_edge, gpu, 1)[0].startswith("raise")
    below = shape(params=int(0.95 * gpu) // 2 - 1)
    assert share_fixes(config(vllm_gpu_memory_utilization=0.3), below, gpu, 1)[0].startswith(
        "raise vllm_gpu_memory_utilization above 0.95 "
    )
    current = share_fixes(config(vllm_gpu_memory_utilization=0.3, vllm_tensor_parallel_size=2), shp, gpu, 6)
    assert "vllm_tensor_parallel_size=3 " in current[1]  # sizes above the current one


def test_weight_pushes_count_the_generation_rounds():
    on = dict(use_vllm=True, vllm_mode="colocate", vllm_enable_sleep_mode=True)
    shp = shape(params=3 * GIB // 4)  # 2P = 1.5 GiB
    one = weight_pushes(config(**on), shp, 2)
    assert one is not None and one.startswith("vLLM sleep mode: up to 1 weight push(es) per generation batch")
    assert "1.5 GiB of 16-bit weights each" in one and "online filtering" not in one and "ZeRO-3" not in one
    assert "sleep level 2 discards them after each generate call" in one
    filtering = weight_pushes(config(**on, filter_groups=True, filter_extra_rounds=2), shp, 3)
    assert "up to 3 weight push(es)" in filtering and "(online filtering: 1 + filter_extra_rounds rounds)" in filtering
    assert "; ZeRO-3 gathers every parameter for each" in filtering
    assert "up to 1 weight" in weight_pushes(config(**on, filter_extra_rounds=2), shp, None)
    assert "up to 1 weight" in weight_pushes(config(**on, filter_groups=True, filter_extra_rounds=0), shp, None)
    assert weight_pushes(SimpleNamespace(**on), shp, None).startswith("vLLM sleep mode: up to 1 ")
    assert weight_pushes(config(use_vllm=True, vllm_mode="colocate"), shp, 2) is None
    assert weight_pushes(config(use_vllm=True, vllm_mode="server", vllm_enable_sleep_mode=True), shp, 2) is None
    assert weight_pushes(config(vllm_mode="colocate", vllm_enable_sleep_mode=True), shp, 2) is None


# ---------------------------------------------------------------------------------------------
# The verdict's arithmetic and the printed lines.


def made(gpu: int | None = None) -> Memory:
    return Memory([Part("a", 10 * GIB, "held"), Part("g", 3 * GIB, "gen", "generate"), Part("l", 2 * GIB, "loss", "loss"),
                   Part("ls", 2 * GIB, "both", "loss+step"), Part("s", 1 * GIB, "step", "step")], gpu)  # fmt: skip


def test_totals_per_phase_and_the_peak():
    """Each part counts in the phases it lives in; the peak is what is held plus the largest phase."""
    m = made()
    assert (m.total("states"), m.total("generate"), m.total("loss"), m.total("step"), m.total()) == (
        10 * GIB,
        3 * GIB,
        4 * GIB,
        3 * GIB,
        18 * GIB,
    )
    assert m.largest_phase == "loss" and m.peak == 14 * GIB
    assert Part("x", 1, "", "loss+step").lives_in("step") and not Part("x", 1, "", "loss+step").lives_in("generate")
    assert not Part("x", 1, "", "states").lives_in("loss") and Part("x", 1, "").lives_in("states")
    gen = Memory([Part("g", 5, "", "generate"), Part("l", 4, "", "loss")])
    assert gen.largest_phase == "generate" and gen.peak == 5
    step = Memory([Part("g", 5, "", "generate"), Part("l", 4, "", "loss+step"), Part("s", 2, "", "step")])
    assert step.largest_phase == "step" and step.peak == 6
    tie = Memory([Part("g", 4, "", "generate"), Part("l", 4, "", "loss")])
    assert tie.largest_phase == "generate"  # the first of equal phases, in the order they run
    assert list(PHASES) == ["generate", "loss", "step"]


def test_fits_at_the_usable_memory_and_warns_above_nine_tenths():
    """Usable: the card less RESERVED (1 GiB); fits at exactly the usable bytes, not one more; near
    the edge above 0.9 of it; spare and `close` (fits with under 1 GiB to spare) at their bounds."""
    assert RESERVED == GIB and EDGE == 0.9 and CLOSE == GIB
    none = made()
    assert none.usable is None and none.fits() is None and not none.near_edge() and none.spare is None and not none.close()
    assert none.spare_words() == ""
    exact = made(15 * GIB)
    assert exact.usable == 14 * GIB and exact.fits() is True and exact.spare == 0 and exact.close() and exact.near_edge()
    over = made(15 * GIB - 1)
    assert over.fits() is False and over.spare == -1 and not over.close() and over.near_edge()
    roomy = made(16 * GIB)
    assert roomy.spare == GIB and not roomy.close() and roomy.close(GIB + 1) and roomy.near_edge()  # 14 > 0.9 x 15
    under = made(15 * GIB + GIB - 1)
    assert under.close() and under.spare == GIB - 1
    edge = Memory([Part("a", 9 * GIB, "")], 11 * GIB)  # 9 GiB of 10 usable: at 0.9, not above
    assert not edge.near_edge() and Memory([Part("a", 9 * GIB + 1, "")], 11 * GIB).near_edge()
    assert not Memory([Part("a", 1, "")], 11 * GIB).close()
    words = Memory([Part("a", 9 * GIB + GIB // 2, "")], 11 * GIB).spare_words()
    assert words == "0.50 GiB spare of the 10.0 GiB usable: within 1 GiB, a different CUDA/NCCL build may not fit"
    assert Memory([Part("a", 9 * GIB, "")], 11 * GIB).spare_words(2 * GIB).startswith("1.00 GiB spare of the 10.0 GiB usable: within 2 GiB")
    assert Memory([Part("a", 9 * GIB, "")], 11 * GIB).spare_words() == ""


def test_the_lines_list_each_part_once_under_its_first_phase():
    m = made(20 * GIB)
    m.parts.append(Part("zero", 0, "nothing", "loss"))
    assert m.lines() == [
        "  held throughout: 10.0 GiB",
        f"    {'a':<22} {'10.0 GiB':>10}  held",
        "  during generation: 3.0 GiB",
        f"    {'g':<22} {'3.0 GiB':>10}  gen",
        "  during the loss: 4.0 GiB",
        f"    {'l':<22} {'2.0 GiB':>10}  loss",
        f"    {'ls':<22} {'2.0 GiB':>10}  both (to the optimizer step)",
        "  at the optimizer step: 3.0 GiB",
        f"    {'s':<22} {'1.0 GiB':>10}  step",
        f"    {'from the loss':<22} {'2.0 GiB':>10}  the gradients above",
        "  peak: 14.0 GiB of 20.0 GiB (70 %) = held + the largest phase (the loss)",
    ]
    assert made().lines()[-1] == "  peak: 14.0 GiB = held + the largest phase (the loss)"
    only = Memory([Part("g", 3 * GIB, "gen", "generate+loss")])
    assert only.lines() == ["  during generation: 3.0 GiB", f"    {'g':<22} {'3.0 GiB':>10}  gen (to the loss)", "  during the loss: 3.0 GiB",
                            f"    {'from the loss':<22} {'3.0 GiB':>10}  the gradients above",
                            "  peak: 3.0 GiB = held + the largest phase (generation)"]  # fmt: skip
    assert gib(1.5 * GIB) == "1.5 GiB" and gib(1234 * GIB) == "1,234.0 GiB"


# ---------------------------------------------------------------------------------------------
# What fits, the node, the tokens.


def test_alternatives_in_the_order_one_would_try_them():
    cfg = config(beta=0.04, max_completion_length=5000, gradient_checkpointing=False)
    labels = [label for label, _, _ in alternatives(cfg, Layout(2, None, True), 4)]
    assert labels == ["--zero 1", "--zero 2", "--zero 3", "--num-processes 4 --zero 2", "--num-processes 4 --zero 3", "lora=true",
                      "beta=0 (drops the reference model)", "max_completion_length=2500", "max_completion_length=1250",
                      "max_completion_length=625", "gradient_checkpointing=true"]  # fmt: skip
    by = {label: (c, lay) for label, c, lay in alternatives(cfg, Layout(2, 2, True), 4)}
    assert list(by)[:3] == ["--zero 3", "--num-processes 4 --zero 2", "--num-processes 4 --zero 3"]
    assert by["--zero 3"][1] == Layout(2, 3, True) and by["--num-processes 4 --zero 2"][1] == Layout(4, 2, True)
    assert by["lora=true"][0].lora and not cfg.lora and by["beta=0 (drops the reference model)"][0].beta == 0.0
    assert by["max_completion_length=625"][0].max_completion_length == 625 and by["gradient_checkpointing=true"][0].gradient_checkpointing
    z3 = [label for label, _, _ in alternatives(config(lora=True, max_completion_length=1024), Layout(4, 3, True), 4)]
    assert z3 == []  # ZeRO-3, every rank, LoRA, checkpointing, completions at 1,024: nothing left
    more = [label for label, _, _ in alternatives(config(lora=True, max_completion_length=1025), Layout(2, 3, True), 4)]
    assert more == ["--num-processes 4 --zero 3", "max_completion_length=512"]
    assert "--num-processes 2 --zero 2" not in [label for label, _, _ in alternatives(cfg, Layout(2, None, True), 2)]
    assert "beta=0 (drops the reference model)" not in [label for label, _, _ in alternatives(config(), Layout(1, None, True), None)]


def test_what_fits_estimates_each_alternative_at_its_own_completion_length():
    """The first `limit` alternatives whose estimate fits the card, each with its peak, each estimated
    at its own max_completion_length (trl < 1.15's logits: 12 B a completion token and vocab entry)."""
    cfg = config(max_completion_length=4096, gradient_checkpointing=False, beta=0.04)
    layout = Layout(2, None, True, fused_loss=False, gpu_bytes=26_000_000 + GIB)

    def peak(c, lay):
        return estimate_memory(c, shape(), lay, replace(TOK, completion=c.max_completion_length)).peak

    zero3, wide3 = peak(cfg, replace(layout, zero=3)), peak(cfg, replace(layout, world=4, zero=3))
    lora, short = peak(replace(cfg, lora=True), layout), peak(replace(cfg, max_completion_length=1024), layout)
    assert (
        max(zero3, wide3, lora, short)
        <= 26_000_000
        < min(peak(replace(cfg, beta=0.0), layout), peak(replace(cfg, max_completion_length=2048), layout))
    )
    assert what_fits(cfg, shape(), layout, TOK, 4, limit=10) == [f"--zero 3 ({gib(zero3)})", f"--num-processes 4 --zero 3 ({gib(wide3)})",
                                                                 f"lora=true ({gib(lora)})", f"max_completion_length=1024 ({gib(short)})"]  # fmt: skip
    assert what_fits(cfg, shape(), layout, TOK, 4) == what_fits(cfg, shape(), layout, TOK, 4, limit=10)[:3]
    assert what_fits(cfg, shape(), layout, TOK, 4, limit=2) == [f"--zero 3 ({gib(zero3)})", f"--num-processes 4 --zero 3 ({gib(wide3)})"]
    assert what_fits(cfg, shape(), replace(layout, gpu_bytes=None), TOK, 4) == []  # no card: nothing is said to fit


def test_the_node_is_described_or_read():
    assert Target(0, None, False).describe() == "node: no GPU (a CPU plan)"
    assert Target(8, 80 * GIB, True).describe() == "node: 8 GPU(s), 80.0 GiB each (as described by --gpus/--gpu-memory)"
    assert Target(2, None, False).describe() == "node: 2 GPU(s), memory unknown (this machine)"
    assert node_target(None, None, cuda_here=False) == Target(0, None, False)
    assert node_target(None, 47.5, cuda_here=False, at_least=3) == Target(3, int(47.5 * GIB), True)
    assert node_target(None, 47.5, cuda_here=False) == Target(1, int(47.5 * GIB), True)
    assert node_target(4, None, cuda_here=False) == Target(4, None, True)
    assert node_target(0, 80.0, cuda_here=False) == Target(0, None, True)
    assert node_target(2, 79.5, cuda_here=False) == Target(2, int(79.5 * GIB), True)


def test_gpu_memory_here_reads_nvidia_smi_and_skips_what_it_cannot_read(monkeypatch):
    import shutil
    import subprocess

    from olmocr_rl.train import memory

    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert memory.gpu_memory_here() is None
    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/nvidia-smi" if name == "nvidia-smi" else None)
    seen = []

    def smi(out: str, rc: int = 0):
        def run(argv, **kw):
            seen.append((argv, kw))
            return SimpleNamespace(returncode=rc, stdout=out)

        monkeypatch.setattr(subprocess, "run", run)

    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    smi("0, GPU-a, 2048\n1, GPU-b, bad\n2, GPU-c\n3, GPU-d, 1024.5\n")
    assert memory.gpu_memory_here() == int(1024.5 * 2**20)  # past a line it cannot read
    argv, kw = seen[-1]
    assert argv == ["nvidia-smi", "--query-gpu=index,uuid,memory.total", "--format=csv,noheader,nounits"]
    assert kw == {"capture_output": True, "text": True}
    smi("0, GPU-a, 1024\n", rc=1)
    assert memory.gpu_memory_here() is None
    smi("")
    assert memory.gpu_memory_here() is None
    smi("0, GPU-a, 1024\n1, GPU-b, 512\n")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", " 0 , ,GPU-b ")
    assert memory.gpu_memory_here() == 512 * 2**20
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    assert memory.gpu_memory_here() == 512 * 2**20
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert memory.gpu_memory_here() is None  # nothing visible


def test_prompt_tokens_and_the_longest_sequence_of_the_rows():
    """A prompt: its image tokens, its UTF-8 bytes / 3 rounded up, 24 for the chat template; the rows'
    longest prompt (capped at max_prompt_tokens), their largest image, its patches (x merge^2)."""
    assert estimate_prompt_tokens("abcd", 7) == 7 + 2 + 24
    assert estimate_prompt_tokens("é", 0) == 1 + 24  # 2 bytes
    assert estimate_prompt_tokens("", 5) == 5 + 24
    budget = ImageBudget(14, 2, 56 * 56, 14 * 14 * 4 * 16384, "test")
    cfg = config(max_prompt_tokens=3000, max_completion_length=77)
    assert tokens_of(cfg, [], budget) == Tokens(3000, 3000, 77)
    rows = [{"prompt": "x" * 10, "width": 996, "height": 1288}, {"prompt": "y" * 400, "width": 100, "height": 100}]
    big, small = budget.tokens(996, 1288), budget.tokens(100, 100)
    prompt = max(big + 4 + 24, small + 134 + 24)
    assert tokens_of(cfg, rows, budget) == Tokens(prompt, big, 77, big * 4)
    assert tokens_of(config(max_prompt_tokens=100, max_completion_length=77), rows, budget) == Tokens(100, big, 77, big * 4)


def test_the_planning_budget_is_the_models_processor_under_max_pixels(tmp_path):
    own = ImageBudget(16, 2, 1024, 10**6, "its processor")
    budget, why = planning_budget(config(max_pixels=500_000), shape(image=own))
    assert why is None and budget.max_pixels == 500_000 and budget.patch_size == 16
    assert planning_budget(config(), shape(image=own)) == (own, None)
    cfg = config(max_pixels=600_000)
    cfg = replace(cfg, model=str(tmp_path))
    budget, why = planning_budget(cfg, shape(image=None, image_note="not a Qwen-VL processor"))
    assert budget.max_pixels == 600_000 and budget.patch_size == 14
    assert why == "image tokens estimated with Qwen2.5-VL's processor: not a Qwen-VL processor"
    _, plain = planning_budget(cfg, shape(image=None))
    assert plain == f"image tokens estimated with Qwen2.5-VL's processor: {tmp_path}: no image processor config in its folder"
    _, none = planning_budget(cfg, None)
    assert none == plain


def test_the_run_record_puts_the_estimate_next_to_the_measured_peak(monkeypatch, tmp_path):
    """train_summary.json's memory: the estimate's peak, the card, every part by phase and name (GiB,
    3 decimals), and the measured peak with its ratio; None without CUDA or a readable model."""
    torch = pytest.importorskip("torch")
    from olmocr_rl.train import shape as shape_module
    from olmocr_rl.train.memory import run_record

    gpu = 2 * GIB + 12_345_678  # 2.0115 GiB: rounded to 3 decimals
    cfg = replace(config(beta=0.0), model=str(tmp_path))
    own = ImageBudget(14, 3, 2_000_000, 4_000_000, "its processor")  # scales the page up: not Qwen2.5-VL's patches
    rows = [{"prompt": "x" * 30, "width": 420, "height": 840}]
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert run_record(cfg, None, [], 5) is None
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda i: SimpleNamespace(total_memory=gpu))

    def unknown(model):
        raise shape_module.ShapeUnknown(model)

    monkeypatch.setattr(shape_module, "read_shape", unknown)
    assert run_record(cfg, None, [], 5) is None
    big = dict(image=own, patch_values=10**7)  # pixel values of hundreds of GiB: the budget shows in the rounded GiB
    monkeypatch.setattr(shape_module, "read_shape", lambda model: shape(**big) if model == str(tmp_path) else None)
    trainer = SimpleNamespace(accelerator=SimpleNamespace(num_processes=N, state=SimpleNamespace(deepspeed_plugin=SimpleNamespace(zero_stage=2))),
                              args=SimpleNamespace(bf16=True))  # fmt: skip
    record = run_record(cfg, trainer, rows, GIB // 3)
    tokens = tokens_of(cfg, rows, own)
    assert tokens.image == own.tokens(420, 840) and tokens.patches == 9 * tokens.image
    est = estimate_memory(cfg, shape(**big), Layout(N, 2, True, True, gpu, False), tokens)
    assert record == {
        "estimate_gib": round(est.peak / GIB, 3),
        "gpu_gib": 2.011,
        "parts_gib": {f"{p.phase}/{p.name}": round(p.bytes / GIB, 3) for p in est.parts},
        "measured_peak_gib": 0.333,
        "measured_over_estimate": round(GIB // 3 / est.peak, 3),
    }
    assert record["parts_gib"]["states/master weights"] == round(4 * P // N / GIB, 3)
    assert run_record(cfg, trainer, rows, int(est.peak * 1.23456))["measured_over_estimate"] == 1.235  # to 3 places
    assert "step/fp32 gradients" in record["parts_gib"]
    assert set(run_record(cfg, trainer, [], None)) == {"estimate_gib", "gpu_gib", "parts_gib"}
    assert run_record(cfg, trainer, rows, 0) == {k: v for k, v in record.items() if not k.startswith("measured")}
    ddp = SimpleNamespace(accelerator=SimpleNamespace(num_processes=1, state=SimpleNamespace()), args=SimpleNamespace(bf16=False))
    plain = run_record(cfg, ddp, [], None)
    one = estimate_memory(cfg, shape(**big), Layout(1, None, False, True, gpu, False), tokens_of(cfg, [], own))
    assert plain["estimate_gib"] == round(one.peak / GIB, 3) and "states/master weights" not in plain["parts_gib"]
    served = run_record(replace(cfg, use_vllm=True, vllm_mode="server"), trainer, [], None)
    assert "generate/KV cache" not in served["parts_gib"]
    colocated = run_record(replace(cfg, use_vllm=True, vllm_mode="colocate"), trainer, [], None)
    assert colocated["parts_gib"]["states/vLLM (colocated)"] == round(int(0.3 * gpu) / GIB, 3)
    assert math.isclose(record["estimate_gib"], est.peak / GIB, abs_tol=5e-4)


def test_the_fused_loss_is_trls_from_1_15():
    """trl >= 1.15 exports `add_fused_lm_head` from trl.trainer (the installed trl is 1.16)."""
    import trl

    from olmocr_rl.train.memory import trl_has_fused_loss

    major, minor = (int(x) for x in trl.__version__.split(".")[:2])
    assert trl_has_fused_loss() is ((major, minor) >= (1, 15))


HOW = {  # what each part says it is (the plan's lines: docs/training.md's ZeRO-2 block), per path
    "one process, beta": (config(beta=0.04), Layout(1, None, True), {
        "weights": "4 B x P", "optimizer": "AdamW moments: 8 B x trained", "reference model": "beta=0.04: 4 B x P (trl's copy)",
        "pixel values": "28 pages' pixel_values kept for the generation batch (float32, trl)", "gradients": "4 B x trained",
        "activations": "1 x 42 tokens, no checkpointing", "autocast copies": "bf16 copies of the float32 Linear weights",
        "loss (fused LM head)": "a logit tile, the hidden states' float32 gradient and its copy",
        "LM-head gradient": "float32: 407 weights", "KV cache": "28 sequences x 42 tokens (transformers generate)"}),
    "ddp": (config(), Layout(2, None, True), {"DDP buckets": "torch's Reducer: a copy of every gradient"}),
    "lora": (config(lora=True, lora_r=3), Layout(1, None, True), {"weights": "frozen base 2 B x P + adapter 4 B x 240"}),
    "zero1": (config(beta=0.04), Layout(N, 1, True), {
        "weights": "2 B x P (whole on every rank under ZeRO-1)", "master weights": "float32 partition: 4 B x trained / 3",
        "optimizer": "AdamW moments: 8 B x trained / 3", "reference model": "beta=0.04: 2 B x P (trl's copy)",
        "pixel values": "28 pages' pixel_values kept for the generation batch (16-bit, trl)", "gradients": "2-byte whole",
        "reduce buckets": "reduce_bucket_size 5e8 (DeepSpeed's default)",
        "fp32 gradients": "DeepSpeed's float32 partition, built at the step",
        "activations": "1 x 42 tokens, gradient checkpointing", "LM-head gradient": "float32 + its 2-byte copy (trl): 407 weights"}),
    "zero2": (config(), Layout(N, 2, True), {"gradients": "2-byte partition", "weights": "2 B x P (whole on every rank under ZeRO-2)"}),
    "zero3, beta, 2 ranks": (config(beta=0.04), Layout(2, 3, True), {
        "weights": "2 B x P / 2 ranks", "reference model": "beta=0.04: 2 B x P / 2 (trl's copy)",
        "ZeRO-3 gathered": "the LM head whole (trl's fused loss gathers the head) + the prefetch bucket",
        "gradients": "2-byte partition (ZeRO-3 keeps it from the start)",
        "reduce buckets": "2 x hidden^2 (accelerate's auto, double-buffered)",
        "ZeRO-3 gathered model": "2 B x P for generate (ds3_gather_for_generation)"}),
}  # fmt: skip


@pytest.mark.parametrize("path", list(HOW))
def test_each_part_says_where_its_bytes_come_from(path):
    """The plan prints each part with its derivation; the words are what a user reads next to the
    bytes, so they are held whole."""
    cfg, layout, expected = HOW[path]
    if path == "one process, beta":
        cfg = replace(cfg, gradient_checkpointing=False)
    hows = {name: p.how for name, p in parts(cfg, layout).items()}
    assert {name: hows.get(name) for name in expected} == expected
    layer = parts(config(), Layout(2, 3, True), shape(text=replace(TEXT, layer_params=1009)))["ZeRO-3 gathered"].how
    assert layer == "a text layer whole (trl's fused loss gathers the head) + the prefetch bucket"


def test_the_rank_count_reaches_the_generation_batch():
    """With trl's generation_batch_size, steps_per_generation = that / (micro-batch x ranks): the
    pixel values and the KV cache are per rank's share of it."""
    cfg = config(per_device_train_batch_size=2, trl={"generation_batch_size": 60})
    assert generation_sequences(cfg, 3) == 2 * 10 and generation_sequences(cfg, 5) == 2 * 6
    assert pixel_value_bytes(cfg, shape(), Layout(3, 2, True), TOK) == 20 * 3 * 4 * 5 * 2
    named = parts(cfg, Layout(5, 2, True))
    assert named["KV cache"].bytes == 12 * 42 * 3 * 2 * 5 * 2
    assert named["pixel values"].bytes == 12 * 3 * 4 * 5 * 2 and named["pixel values"].how.startswith("12 pages'")


def test_a_float32_dtype_under_deepspeed_still_holds_16_bit_copies():
    """dtype=float32 under DeepSpeed bf16: the loaded weights are 4 B, but DeepSpeed's 16-bit copy
    (the reference model's, the KV cache's) 2 B; dtype=bfloat16 without DeepSpeed: 2-byte gradients."""
    named = parts(config(dtype="float32", beta=0.04), Layout(N, 2, True))
    assert named["reference model"].bytes == 2 * P and named["KV cache"].bytes == 28 * 42 * 3 * 2 * 5 * 2
    assert parts(config(dtype="bfloat16"), Layout(1, None, True))["gradients"].bytes == 2 * P


def test_the_fused_heads_float32_default_is_trls(monkeypatch):
    """Unset, cast_lm_head_to_fp32 is the recipe's/trl's default (config.trl_default)."""
    from olmocr_rl.train import config as config_module

    monkeypatch.setattr(config_module, "trl_default", lambda name: name == "cast_lm_head_to_fp32")
    assert fused_loss_bytes(config(), shape(), 2, 100) == (100 * 32768 * 4, 37 * 11 * 6, 100 * 11 * 4)


def test_the_plan_lines_join_every_later_phase():
    m = Memory([Part("g", GIB, "all", "generate+loss+step")])
    assert m.lines()[1] == f"    {'g':<22} {'1.0 GiB':>10}  all (to the loss and the optimizer step)"


def test_weight_pushes_words_and_configs_without_the_filter_fields():
    on = dict(use_vllm=True, vllm_mode="colocate", vllm_enable_sleep_mode=True)
    shp = shape(params=3 * GIB // 4)
    assert weight_pushes(config(**on), shp, 1) == (
        "vLLM sleep mode: up to 1 weight push(es) per generation batch into each rank's engine, 1.5 GiB of 16-bit weights each "
        "(sleep level 2 discards them after each generate call)"
    )
    assert weight_pushes(config(**on, filter_groups=True, filter_extra_rounds=1), shp, 3) == (
        "vLLM sleep mode: up to 2 weight push(es) per generation batch into each rank's engine, 1.5 GiB of 16-bit weights each "
        "(sleep level 2 discards them after each generate call (online filtering: 1 + filter_extra_rounds rounds); "
        "ZeRO-3 gathers every parameter for each)"
    )
    assert "up to 1 " in weight_pushes(SimpleNamespace(**on, filter_groups=True), shp, None)
    assert "up to 1 " in weight_pushes(SimpleNamespace(**on, filter_extra_rounds=2), shp, None)


def test_the_node_of_this_machine_reads_its_gpus(monkeypatch):
    torch = pytest.importorskip("torch")
    from olmocr_rl.train import memory

    monkeypatch.setattr(torch.cuda, "device_count", lambda: 3)
    monkeypatch.setattr(memory, "gpu_memory_here", lambda: 777)
    assert node_target(None, None, cuda_here=True) == Target(3, 777, False)
    assert node_target(2, None, cuda_here=True) == Target(2, 777, True)
    assert node_target(2, None, cuda_here=False) == Target(2, None, True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    assert node_target(None, None, cuda_here=True) == Target(0, None, False)


def test_a_tensor_parallel_shard_must_be_below_the_share():
    """A shard exactly the share's size does not leave room: not offered."""
    whole = 4_000_002
    fixes = share_fixes(config(vllm_gpu_memory_utilization=0.5), shape(params=whole // 2), whole, 2)
    assert not any("tensor_parallel" in f for f in fixes)
    tail = share_fixes(config(vllm_gpu_memory_utilization=0.3), shape(params=2 * 10**6 + 1), 10**7, 6)[0]
    assert tail.endswith("(the weights alone; the KV cache takes the rest of the share, and training what the share leaves)")


def test_the_longest_sequence_with_a_merge_of_three():
    budget = ImageBudget(14, 3, 42 * 42, 14 * 14 * 9 * 4096, "test")
    rows = [{"prompt": "x", "width": 420, "height": 420}]
    tokens = budget.tokens(420, 420)
    assert tokens_of(config(), rows, budget).patches == tokens * 9
