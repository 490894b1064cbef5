"""The memory estimate is a claim about tensors (issue 34): for every path the plan can take here
(one process, LoRA, beta > 0, DDP over 2 ranks, ZeRO-1/2/3 over 2 ranks), the estimate's
model-state components equal the bytes of the real tensors on each rank during the first optimizer
step (tests/memory_probe.py), DeepSpeed's partitions bounded where a partition boundary keeps a cut
tensor whole. The activation formula is held against the bytes autograd saves on CPU."""

from __future__ import annotations

import json
import math
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

PATHS = {  # name: (ranks, ZeRO stage, overrides)
    "one process": (1, None, []),
    "lora": (1, None, ["lora=true", "lora_dropout=0.0"]),
    "beta": (1, None, ["beta=0.01"]),
    "ddp": (2, None, []),
    "zero1": (2, 1, []),
    "zero2 beta": (2, 2, ["beta=0.01"]),
    "zero3 beta": (2, 3, ["beta=0.01"]),
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
def test_model_states_are_the_real_tensors(path, two_pages, tiny_model, tmp_path):
    world, zero, extra = PATHS[path]
    if zero is not None:
        need("deepspeed")
    cfg, ranks = probe(two_pages, tiny_model, tmp_path, world, zero, extra)
    shape = read_shape(str(tiny_model))
    est = {p.name: p.bytes for p in estimate_memory(cfg, shape, Layout(world, zero, bf16=True), Tokens(64, 16, 8)).parts}
    for measured in ranks:
        for name in ("weights", "master weights", "reference model", "DDP buckets"):
            assert measured.get(name, 0) == est.get(name, 0), (name, measured, est)
        # AdamW's moments: 8 B a trained weight; a DeepSpeed partition whose gradient slot of a
        # parameter group is still empty at the first step holds a few fewer.
        assert 0.99 * est["optimizer"] <= measured["optimizer"] <= est["optimizer"], (measured, est)
        grads = measured.get("gradients", 0) + measured.get("ZeRO buffers", 0)
        if zero is None:
            assert grads == est["gradients"], (grads, est)
            continue
        # At the step: the 16-bit partition and the float32 one the step reads. ZeRO-1/2's 16-bit
        # partition keeps whole a tensor its boundary cuts (the estimate allows two of the largest);
        # ZeRO-1's whole 16-bit gradients live during the backward, before this moment.
        trained, n = shape.params, world
        exact = (trained // n) * 2 + 4 * trained // n
        # ZeRO-3 keeps one of its reduce buckets (hidden^2 16-bit elements) past the backward.
        bound = est["gradients"] + (est["reduce buckets"] // 2 if zero == 3 else 0)
        assert exact <= grads <= bound, (grads, exact, bound, measured)
        if zero != 1:
            assert est["gradients"] - exact == (2 * shape.largest * 2 if zero == 2 else 0)


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


@pytest.mark.parametrize("weights", ["bfloat16", "float32 autocast"])
def test_activation_formula_is_what_autograd_saves(weights):
    """A decoder layer's saved bytes (two layers minus one) equal the formula exactly."""
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration

    dtype = torch.bfloat16 if weights == "bfloat16" else torch.float32
    L, measured = 256, {}
    for layers in (1, 2):
        config = Qwen2_5_VLConfig(
            text_config=dict(vocab_size=512, hidden_size=128, intermediate_size=352, num_hidden_layers=layers, num_attention_heads=4,
                             num_key_value_heads=2, rope_scaling={"type": "mrope", "rope_type": "default", "mrope_section": [4, 6, 6]}),
            vision_config=dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=2, out_hidden_size=128),
            image_token_id=511, video_token_id=510, vision_start_token_id=509, vision_end_token_id=508,
        )  # fmt: skip
        torch.manual_seed(0)
        model = Qwen2_5_VLForConditionalGeneration(config).to(dtype).train()
        measured[layers] = saved_bytes(model, torch.randint(0, 500, (1, L)), autocast=dtype == torch.float32)
    stack = read_shape_of(model)
    assert measured[2] - measured[1] == per_token_layer(stack, 2 if dtype == torch.bfloat16 else 4, dtype == torch.float32) * L
    # Outside the layers (embedding output, rotary tables, final norm): a few hidden vectors a token.
    assert 0 <= measured[1] - per_token_layer(stack, 2 if dtype == torch.bfloat16 else 4, dtype == torch.float32) * L <= 12 * 128 * L


def read_shape_of(model):
    from olmocr_rl.train.shape import Stack

    t = model.config.get_text_config()
    return Stack(t.num_hidden_layers, t.hidden_size, t.intermediate_size, t.num_attention_heads,
                 t.num_key_value_heads * (t.hidden_size // t.num_attention_heads), True, 0)  # fmt: skip


def test_a_7b_shape_reads_from_headers_alone(tmp_path):
    """A model folder of olmOCR-2-7B's shapes (config.json + safetensors headers over a sparse file):
    the parameter count transformers' own model has."""
    shape, params = seven_b_folder(tmp_path / "m")
    assert shape.params == params
    assert 8.2e9 < params < 8.4e9
    assert (shape.text.layers, shape.text.hidden, shape.text.kv_dim, shape.vocab) == (28, 3584, 512, 152064)
    assert shape.vision is not None and shape.vision.layers == 32 and shape.merge == 4


def seven_b_folder(folder: Path):
    """Writes a Qwen2.5-VL-7B-shaped folder: config.json and one safetensors file whose header
    names every tensor of the model transformers builds (on the meta device), data left sparse."""
    from transformers import AutoModelForImageTextToText, Qwen2_5_VLConfig

    config = Qwen2_5_VLConfig(
        text_config=dict(vocab_size=152064, hidden_size=3584, intermediate_size=18944, num_hidden_layers=28, num_attention_heads=28,
                         num_key_value_heads=4, rope_scaling={"type": "mrope", "rope_type": "default", "mrope_section": [16, 24, 24]},
                         tie_word_embeddings=False),
        vision_config=dict(depth=32, hidden_size=1280, intermediate_size=3420, num_heads=16, out_hidden_size=3584,
                           fullatt_block_indexes=[7, 15, 23, 31]),
        image_token_id=151655, video_token_id=151656, vision_start_token_id=151652, vision_end_token_id=151653,
        tie_word_embeddings=False,
    )  # fmt: skip
    folder.mkdir(parents=True)
    config.save_pretrained(folder)
    with torch.device("meta"):
        model = AutoModelForImageTextToText.from_config(config)
    header, offset = {}, 0
    for name, t in model.state_dict().items():
        n = t.numel() * 2
        header[name] = {"dtype": "BF16", "shape": list(t.shape), "data_offsets": [offset, offset + n]}
        offset += n
    raw = json.dumps(header).encode()
    with open(folder / "model.safetensors", "wb") as f:
        f.write(len(raw).to_bytes(8, "little") + raw)
        f.truncate(8 + len(raw) + offset)  # sparse: no disk used for the data
    return read_shape(str(folder)), sum(math.prod(t.shape) for t in model.state_dict().values())
