"""The memory estimate is a claim about tensors (issue 34): for every path the plan can take here
(one process, LoRA, beta > 0, DDP over 2 ranks, ZeRO-1/2/3 over 2 ranks), the estimate's
model-state components equal the bytes of the real tensors on each rank during the first optimizer
step (tests/memory_probe.py), DeepSpeed's partitions bounded where a partition boundary keeps a cut
tensor whole. The activation formula is held against the bytes autograd saves on CPU."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import need

need("trl")
torch = need("torch")

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_precision import STEP

from olmocr_rl.train.config import load_config
from olmocr_rl.train.memory import Layout, Tokens, estimate_memory, per_token_layer
from olmocr_rl.train.shape import read_shape

HERE = Path(__file__).resolve().parent
PROBE = [str(HERE / "memory_probe.py")]

PATHS = {  # name: (ranks, ZeRO stage, overrides[, model family: the session's tiny Qwen2.5-VL without])
    "one process": (1, None, []),
    "lora": (1, None, ["lora=true", "lora_dropout=0.0"]),
    "beta": (1, None, ["beta=0.01"]),
    "ddp": (2, None, []),
    "zero1": (2, 1, []),
    "zero2 beta": (2, 2, ["beta=0.01"]),
    "zero3 beta": (2, 3, ["beta=0.01"]),
    "qwen3-vl one process": (1, None, [], "qwen3_vl"),
    "qwen3-vl-moe zero2": (2, 2, [], "qwen3_vl_moe"),  # ZeRO-2 cuts the fused 3-D expert tensors
}


def probe(prepared: Path, model: Path, out: Path, world: int, zero: int | None, extra: list[str]):
    from olmocr_rl.launch.launchers import LaunchOptions, accelerate_argv, launch_env

    cfg = load_config(None, [*STEP, f"per_device_train_batch_size={8 // world}", *extra], prepared_dir=str(prepared), model=str(model),
                      output_dir=str(out))  # fmt: skip
    config = cfg.to_json(out / "train_config.json")
    if world == 1 and zero is None:
        cmd = [sys.executable, *PROBE, str(config)]
    else:
        cmd = accelerate_argv([*PROBE, str(config)], LaunchOptions(num_processes=world, zero=zero), mixed_precision="bf16")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=launch_env(world))
    assert proc.returncode == 0, f"{' '.join(cmd)}\n--- stderr\n{proc.stderr[-6000:]}"
    return cfg, [json.loads((out / f"memory_rank{r}.json").read_text()) for r in range(world)]


@pytest.fixture(scope="module")
def two_pages(tmp_path_factory) -> Path:
    from test_learning import make_bench, prepare

    root = tmp_path_factory.mktemp("memory")
    return prepare(make_bench(root / "bench", {("letter.pdf", 1): ["e"], ("sample_paper.pdf", 1): ["e", "a", "t"]}), root / "prep")


@pytest.mark.distributed
@pytest.mark.parametrize("path", list(PATHS))
def test_model_states_are_the_real_tensors(path, two_pages, tiny_model, tiny_family, tmp_path):
    world, zero, extra, *family = PATHS[path]
    if zero is not None:
        need("deepspeed")
    model = tiny_family(family[0]) if family else tiny_model
    cfg, ranks = probe(two_pages, model, tmp_path, world, zero, extra)
    shape = read_shape(str(model))
    parts = estimate_memory(cfg, shape, Layout(world, zero, bf16=True), Tokens(64, 16, 8)).parts
    est = {p.name: p.bytes for p in parts}
    for measured in ranks:
        # DeepSpeed's float32 gradient partition exists at the step, not while the loss runs.
        assert measured["backward calls"] >= 1
        assert measured["loss: fp32 gradients"] == sum(p.bytes for p in parts if p.name == "fp32 gradients" and p.lives_in("loss")) == 0
        step_fp32 = sum(p.bytes for p in parts if p.name == "fp32 gradients" and p.lives_in("step"))
        assert 0.99 * step_fp32 <= measured.get("step: fp32 gradients", 0) <= step_fp32, (measured, step_fp32)
        for name in ("weights", "master weights", "reference model", "DDP buckets"):
            assert measured.get(name, 0) == est.get(name, 0), (name, measured, est)
        # AdamW's moments: 8 B a trained weight; a DeepSpeed partition whose gradient slot of a
        # parameter group is still empty at the first step holds a few fewer.
        assert 0.99 * est["optimizer"] <= measured["optimizer"] <= est["optimizer"], (measured, est)
        grads = measured.get("gradients", 0) + measured.get("ZeRO buffers", 0)
        if zero is None:
            assert grads == est["gradients"], (grads, est)
            continue
        # At the step: the 16-bit partition and the float32 one the step builds (the step phase's
        # gradients). ZeRO-1/2's 16-bit partition keeps whole a tensor its boundary cuts (the
        # estimate allows two of the largest); ZeRO-1's whole 16-bit gradients live during the
        # backward, before this moment.
        trained, n = shape.params, world
        exact = (trained // n) * 2 + 4 * trained // n
        # ZeRO-3 keeps one of its reduce buckets (hidden^2 16-bit elements) past the backward.
        step = est["gradients"] + est["fp32 gradients"]
        bound = step + (est["reduce buckets"] // 2 if zero == 3 else 0)
        assert exact <= grads <= bound, (grads, exact, bound, measured)
        if zero != 1:
            assert step - exact == (2 * shape.largest * 2 if zero == 2 else 0)


def saved_bytes(model, ids, autocast: bool) -> int:
    """Bytes of the tensors autograd saves for backward in one forward of the text decoder (each
    storage once, parameters and their autocast copies excluded)."""
    seen: dict[int, int] = {}

    def pack(t):
        s = t.untyped_storage()
        seen[s.data_ptr()] = s.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            model.model.language_model(input_ids=ids, use_cache=False)
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    weights = sum(2 * p.numel() for n, p in model.model.language_model.named_parameters() if p.dim() == 2 and "embed" not in n)
    total = sum(n for ptr, n in seen.items() if ptr not in params)
    return total - (weights if autocast else 0)  # autocast's bf16 weight copies are counted apart


ROPE2 = {"type": "mrope", "rope_type": "default", "mrope_section": [4, 6, 6]}
ROPE3 = {"rope_type": "default", "mrope_section": [4, 6, 6], "mrope_interleaved": True}
IDS = dict(image_token_id=511, video_token_id=510, vision_start_token_id=509, vision_end_token_id=508)
TEXT = dict(vocab_size=512, hidden_size=128, intermediate_size=352, num_attention_heads=4, num_key_value_heads=2)
# A mixture of experts under several shapes (hidden, expert width, experts, experts a token), so
# that each coefficient of the formula is held, not one sum.
MOE = [(128, 48, 8, 2), (256, 48, 8, 2), (128, 96, 16, 4)]


def text_model(family: str, layers: int, dtype, moe=(128, 48, 8, 2)):
    """A small model of `family` whose text decoder has `layers` layers."""
    if family == "qwen2_5_vl":
        from transformers import Qwen2_5_VLConfig as Config
        from transformers import Qwen2_5_VLForConditionalGeneration as Model

        text = dict(TEXT, num_hidden_layers=layers, rope_scaling=ROPE2)
        vision = dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=2, out_hidden_size=128)
    else:
        if family == "qwen3_vl":
            from transformers import Qwen3VLConfig as Config
            from transformers import Qwen3VLForConditionalGeneration as Model

            text = dict(TEXT, num_hidden_layers=layers, head_dim=48, rope_scaling=ROPE3)  # queries 4 x 48 wide: not the hidden size
        else:
            from transformers import Qwen3VLMoeConfig as Config
            from transformers import Qwen3VLMoeForConditionalGeneration as Model

            h, i, e, k = moe
            text = dict(TEXT, hidden_size=h, num_hidden_layers=layers, head_dim=32, rope_scaling=ROPE3, moe_intermediate_size=i,
                        num_experts=e, num_experts_per_tok=k)  # fmt: skip
        vision = dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=2, out_hidden_size=text["hidden_size"],
                      deepstack_visual_indexes=[0])  # fmt: skip
    torch.manual_seed(0)
    return Model(Config(text_config=text, vision_config=vision, **IDS)).to(dtype).train()


def text_stack(model):
    """The Stack shape.py reads for this model's text decoder (from its own parameters)."""
    from olmocr_rl.train.shape import _stack

    tensors = {n: (tuple(p.shape), "") for n, p in model.named_parameters()}
    t = model.config.get_text_config()
    return _stack(t, tensors, lambda n: "visual" not in n)


@pytest.mark.parametrize("weights", ["bfloat16", "float32 autocast"])
@pytest.mark.parametrize("family", ["qwen2_5_vl", "qwen3_vl", *(f"qwen3_vl_moe {m}" for m in MOE)])
def test_activation_formula_is_what_autograd_saves(family, weights):
    """A decoder layer's saved bytes (two layers minus one) equal the formula: Qwen2.5-VL, Qwen3-VL
    (per-head q/k norms, queries wider than the hidden size) and Qwen3-VL-MoE (the experts a token
    is routed to, through transformers' default grouped_mm experts)."""
    dtype = torch.bfloat16 if weights == "bfloat16" else torch.float32
    name, *moe = family.split(" ", 1)
    shape = tuple(int(x) for x in moe[0].strip("()").split(", ")) if moe else (128, 48, 8, 2)
    L, measured = 256, {}
    for layers in (1, 2):
        model = text_model(name, layers, dtype, shape)
        measured[layers] = saved_bytes(model, torch.randint(0, 500, (1, L)), autocast=dtype == torch.float32)
    stack = text_stack(model)
    assert (stack.experts, stack.active_experts) == ((shape[2], shape[3]) if moe else (0, 0))
    formula = per_token_layer(stack, 2 if dtype == torch.bfloat16 else 4, dtype == torch.float32) * L
    # grouped_mm adds a few bytes a layer whatever the length (its per-expert offsets).
    assert 0 <= measured[2] - measured[1] - formula <= 8 * stack.experts, (measured[2] - measured[1], formula)
    # Outside the layers (embedding output, rotary tables, final norm): a few hidden vectors a token.
    assert 0 <= measured[1] - formula <= 12 * stack.hidden * L


def live_peak(fn, *skip) -> int:
    """The most bytes of CPU tensors that `fn` allocated and held at once (every op's outputs,
    tracked while they are alive; the storages of `skip`, made before, not counted)."""
    import weakref

    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    before = {t.untyped_storage().data_ptr() for t in skip}

    class Live(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.refs: dict[int, list] = {}
            self.size: dict[int, int] = {}
            self.peak = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            for t in tree_flatten(out)[0]:
                if isinstance(t, torch.Tensor) and (key := t.untyped_storage().data_ptr()) and key not in before:
                    self.refs.setdefault(key, []).append(weakref.ref(t))
                    self.size[key] = t.untyped_storage().nbytes()
            for key in [k for k, refs in self.refs.items() if all(r() is None for r in refs)]:
                del self.refs[key], self.size[key]
            self.peak = max(self.peak, sum(self.size.values()))
            return out

    mode = Live()
    with mode:
        fn()
    return mode.peak


def test_the_lm_head_gradient_is_what_trls_fused_backward_allocates():
    """trl's chunked log-prob backward accumulates the LM-head gradient in float32 and returns a
    copy in the weights' dtype (chunked_logprob.py `grad_weight.to(weight.dtype)`): with bf16 weights
    both are alive at its end. Measured on CPU as the peak of the tensors the backward allocates, at
    two vocabulary sizes (what the tiles allocate does not grow with the vocabulary): the peak grows
    by the estimate's LM-head term, float32 and 16-bit copy, 6 bytes a weight."""
    from types import SimpleNamespace

    from trl.kernels.chunked_logprob import ChunkedLogProbFunction

    from olmocr_rl.train.config import TrainConfig
    from olmocr_rl.train.memory import VOCAB_TILE, fused_loss_bytes

    hidden, tokens, peaks, heads = 64, 4, {}, {}
    cfg = TrainConfig(prepared_dir="p", model="m", output_dir="o")
    for tiles in (4, 8):
        vocab = tiles * VOCAB_TILE
        torch.manual_seed(0)
        weight = torch.randn(vocab, hidden, dtype=torch.bfloat16, requires_grad=True)
        states = torch.randn(tokens, hidden, dtype=torch.bfloat16, requires_grad=True)
        out = ChunkedLogProbFunction.apply(states, weight, None, torch.randint(0, vocab, (tokens,)), 1.0, VOCAB_TILE, None, 1.0, ())
        loss = -out[0].sum()
        peaks[tiles] = live_peak(loss.backward, weight, states)
        assert weight.grad.dtype == torch.bfloat16
        shape = SimpleNamespace(text=SimpleNamespace(hidden=hidden), lm_head=vocab * hidden)
        heads[tiles] = fused_loss_bytes(cfg, shape, 2, tokens)[1]
    assert peaks[8] - peaks[4] == heads[8] - heads[4] == 4 * VOCAB_TILE * hidden * 6, (peaks, heads)


def test_pixel_values_are_what_the_processor_makes(tiny_family):
    """The pixel values trl keeps for a rank's generation batch: one processor output per completion
    (each carries its page), float32 from the processor (16-bit under DeepSpeed, which casts float
    inputs: transformers' Trainer._prepare_input)."""
    from PIL import Image

    from olmocr_rl.modeling import load_processor
    from olmocr_rl.train.config import TrainConfig
    from olmocr_rl.train.memory import Layout, Tokens, pixel_value_bytes

    for family in ("qwen3_vl", "qwen3_vl_moe"):
        model = tiny_family(family)
        processor, shape = load_processor(str(model)), read_shape(str(model))
        cfg = TrainConfig(prepared_dir="p", model=str(model), output_dir="o", per_device_train_batch_size=2, gradient_accumulation_steps=3)
        page = (140, 108)
        values = processor.image_processor(images=[Image.new("RGB", page)], return_tensors="pt")["pixel_values"]
        tokens = shape.image.tokens(*page)
        assert values.dtype == torch.float32 and tuple(values.shape) == (tokens * shape.merge, shape.patch_values)
        batch = 2 * 3  # per_device_train_batch_size x steps_per_generation completions, each with its page
        assert pixel_value_bytes(cfg, shape, Layout(1, None, True), Tokens(0, tokens, 0)) == batch * values.numel() * 4
        assert pixel_value_bytes(cfg, shape, Layout(1, 2, True), Tokens(0, tokens, 0)) == batch * values.numel() * 2


def test_a_7b_shape_reads_from_headers_alone(tmp_path):
    """A model folder of olmOCR-2-7B's shapes (config.json + safetensors headers over a sparse file):
    the parameter count transformers' own model has."""
    shape, params = seven_b_folder(tmp_path / "m")
    assert shape.params == params
    assert 8.2e9 < params < 8.4e9
    assert (shape.text.layers, shape.text.hidden, shape.text.kv_dim, shape.vocab) == (28, 3584, 512, 152064)
    assert shape.vision is not None and shape.vision.layers == 32 and shape.merge == 4


def seven_b_folder(folder: Path, processor: bool = False):
    """Writes a Qwen2.5-VL-7B-shaped folder: config.json and one safetensors file whose header
    names every tensor of the model transformers builds (on the meta device), data left sparse
    (with `processor`: Qwen2.5-VL-7B's preprocessor_config.json too)."""
    from training import QWEN2_5_VL_PROCESSOR, header_folder
    from transformers import Qwen2_5_VLConfig

    config = Qwen2_5_VLConfig(
        text_config=dict(vocab_size=152064, hidden_size=3584, intermediate_size=18944, num_hidden_layers=28, num_attention_heads=28,
                         num_key_value_heads=4, rope_scaling={"type": "mrope", "rope_type": "default", "mrope_section": [16, 24, 24]},
                         tie_word_embeddings=False),
        vision_config=dict(depth=32, hidden_size=1280, intermediate_size=3420, num_heads=16, out_hidden_size=3584,
                           fullatt_block_indexes=[7, 15, 23, 31]),
        image_token_id=151655, video_token_id=151656, vision_start_token_id=151652, vision_end_token_id=151653,
        tie_word_embeddings=False,
    )  # fmt: skip
    params = header_folder(folder, config, processor=QWEN2_5_VL_PROCESSOR if processor else None)
    return read_shape(str(folder)), params


def test_zero3_gathers_the_lm_head_where_it_outweighs_a_layer(tmp_path):
    """Under ZeRO-3 the loss phase holds the largest module DeepSpeed gathers whole: trl's fused loss
    gathers the LM head (trl utils.py `maybe_gather_lm_head_ctx`), which for a 7B (152,064 x 3,584)
    outweighs a text layer (233 M), plus the prefetch bucket (0.9 x hidden^2). Read from the headers;
    the gather itself needs GPUs to be seen (docs/training.md)."""
    from olmocr_rl.train.config import load_config

    shape, _ = seven_b_folder(tmp_path / "m")
    assert shape.lm_head == 152064 * 3584 and shape.text.layer_params == 233_057_792 < shape.lm_head
    cfg = load_config("olmocr2", [], prepared_dir="p", model=str(tmp_path / "m"), output_dir=str(tmp_path / "o"))
    parts = {p.name: p for p in estimate_memory(cfg, shape, Layout(8, 3, True), Tokens(2000, 1600, 8000)).parts}
    gathered = parts["ZeRO-3 gathered"]
    assert gathered.bytes == 2 * (shape.lm_head + int(0.9 * 3584**2)) and gathered.phase == "loss"
    assert "ZeRO-3 gathered" not in {p.name for p in estimate_memory(cfg, shape, Layout(8, 2, True), Tokens(2000, 1600, 8000)).parts}
