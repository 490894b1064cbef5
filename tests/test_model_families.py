"""Any model a user brings gets a true answer in seconds (olmocr_rl/families.py `family_problem`,
read by olmocr_rl/model_ref.py `resolve_model` from the folder's, the cache's or the hub's
config.json, before anything heavy): a text-only model is refused by every command; a
vision-language family the trainer does not train (Gemma 3, LLaVA-1.5, Idefics3 as SmolVLM and
granite-docling are) is refused by `train` in one line naming the families it plans and trains. The
shape reader (olmocr_rl/train/shape.py) reads those families from their headers all the same,
without a crash: parameters, layers, widths, the vision tower's share.

The folders are built offline from transformers' own config classes with tiny dimensions: the
text-only Llama with tiny real weights (save_pretrained), the vision-language ones as headers only
over sparse files (tests/training.py `header_folder`)."""

from __future__ import annotations

import math
import time
from pathlib import Path

import pytest
from conftest import need

need("transformers")
need("torch")
from clirun import invoke

QWEN_FAMILIES = "Qwen2-VL, Qwen2.5-VL, Qwen3-VL or Qwen3-VL-MoE"
TINY_TEXT = dict(vocab_size=96, hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1,
                 head_dim=8)  # fmt: skip
TINY_VISION = dict(hidden_size=16, intermediate_size=32, num_hidden_layers=3, num_attention_heads=2)


def llama_config():
    from transformers import LlamaConfig

    config = LlamaConfig(**TINY_TEXT)
    config.architectures = ["LlamaForCausalLM"]
    return config


def gemma3_config():
    from transformers import Gemma3Config

    # SigLIP: 64-pixel images of 16-pixel patches (16 patches), pooled to 4 image tokens.
    config = Gemma3Config(text_config=TINY_TEXT, vision_config=dict(TINY_VISION, image_size=64, patch_size=16), mm_tokens_per_image=4)
    config.architectures = ["Gemma3ForConditionalGeneration"]
    return config


def llava_config():
    from transformers import LlavaConfig

    # LLaVA-1.5's layout: a CLIP vision tower, a two-layer projector, a Llama decoder.
    config = LlavaConfig(vision_config=dict(TINY_VISION, model_type="clip_vision_model", image_size=28, patch_size=14, projection_dim=16),
                         text_config=dict(TINY_TEXT, model_type="llama"))  # fmt: skip
    config.architectures = ["LlavaForConditionalGeneration"]
    return config


def idefics3_config():
    from transformers import Idefics3Config

    # SmolVLM's and granite-docling's layout: a SigLIP-like tower, a pixel-shuffle connector, a Llama decoder.
    config = Idefics3Config(vision_config=dict(TINY_VISION, image_size=64, patch_size=16), text_config=dict(TINY_TEXT, model_type="llama"),
                            scale_factor=2)  # fmt: skip
    config.architectures = ["Idefics3ForConditionalGeneration"]
    return config


VLMS = {"gemma3": gemma3_config, "llava": llava_config, "idefics3": idefics3_config}
ARCHITECTURES = {"gemma3": "Gemma3ForConditionalGeneration", "llava": "LlavaForConditionalGeneration",
                 "idefics3": "Idefics3ForConditionalGeneration"}  # fmt: skip


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict[str, Path]:
    from training import header_folder
    from transformers import LlamaForCausalLM

    root = tmp_path_factory.mktemp("families")
    LlamaForCausalLM(llama_config()).save_pretrained(root / "llama")  # tiny real weights
    out = {"llama": root / "llama"}
    for kind, make in VLMS.items():
        header_folder(root / kind, make())
        out[kind] = root / kind
    return out


def one_error_line(res) -> str:
    lines = res.stderr.strip().splitlines()
    assert res.exit_code == 1 and len(lines) == 1 and lines[0].startswith("error: "), res.output
    assert "a bug in olmocr-rl" not in res.output and "Traceback" not in res.output, res.output
    return lines[0]


def test_a_text_only_model_is_refused_in_one_line(folders, prepared, tmp_path):
    model = folders["llama"]
    start = time.perf_counter()
    res = invoke(["train", prepared, "--model", model, "-o", tmp_path / "run", "--dry-run"])
    took = time.perf_counter() - start
    assert one_error_line(res) == (
        f"error: --model {model} is a text-only model (LlamaForCausalLM, model_type llama; its config.json has no vision_config): "
        f"it cannot read a page image; olmocr-rl trains {QWEN_FAMILIES} models"
    )
    assert took < 5 and not (tmp_path / "run").exists(), took
    # generate refuses it too (it reads page images), with its own argument's name.
    (tmp_path / "bench").mkdir()
    res = invoke(["generate", str(model), str(tmp_path / "bench")])
    assert one_error_line(res) == (
        f"error: MODEL {model} is a text-only model (LlamaForCausalLM, model_type llama; its config.json has no vision_config): "
        "it cannot read a page image; give a vision-language (image-text-to-text) model"
    )
    assert list((tmp_path / "bench").iterdir()) == []


@pytest.mark.parametrize("kind", sorted(VLMS))
def test_a_vision_family_the_trainer_does_not_train_is_refused_in_one_line(folders, prepared, tmp_path, kind):
    """Today Gemma 3 and LLaVA end after ~38 s in an AttributeError reported as a bug; Idefics3 the same."""
    model = folders[kind]
    start = time.perf_counter()
    res = invoke(["train", prepared, "--model", model, "-o", tmp_path / "run", "--dry-run"])
    took = time.perf_counter() - start
    assert one_error_line(res) == (
        f"error: --model {model} is a vision-language family olmocr-rl does not train ({ARCHITECTURES[kind]}, model_type {kind}): "
        f"it plans and trains {QWEN_FAMILIES} models (the image tokens, max_pixels and memory plan it computes are theirs)"
    )
    assert took < 5, took


def test_a_rank_or_library_caller_loading_the_policy_is_refused_too(folders, tmp_path):
    """train/model.py `load_model` (what every rank calls) checks again, before transformers loads anything."""
    from olmocr_rl.errors import ConfigError
    from olmocr_rl.train.config import load_config
    from olmocr_rl.train.model import load_model

    for kind in ("llama", "gemma3"):
        cfg = load_config("olmocr2", [], prepared_dir="p", model=str(folders[kind]), output_dir=str(tmp_path / "o"))
        with pytest.raises(
            ConfigError, match=f"^model {folders[kind]} is a (text-only model|vision-language family olmocr-rl does not train)"
        ):
            load_model(cfg, bf16=False, deepspeed=False)


def test_the_families_trained_are_transformers_model_types():
    """Each key of TRAINED_FAMILIES is the model_type transformers writes for that family (a typo would
    refuse every Qwen model), and each passes; the message names them all."""
    from transformers import CONFIG_MAPPING

    from olmocr_rl.families import TRAINED_FAMILIES, family_problem, trained_families

    for kind in TRAINED_FAMILIES:
        config = CONFIG_MAPPING[kind]().to_dict()
        assert config["model_type"] == kind and family_problem(config, "m") is None
    assert trained_families() == QWEN_FAMILIES
    assert family_problem({}, "m") is None  # says too little to tell: transformers names it when it loads
    assert family_problem(gemma3_config().to_dict(), "m", trains=False) is None  # generate may read Gemma 3 pages


def test_a_hub_id_is_refused_from_the_cache_or_the_config_json_the_hub_sends(folders, tmp_path, monkeypatch):
    """A hub id in the cache: its snapshot's config.json, no request. Not in the cache: the one
    request resolve_model makes (a GET of config.json) is read."""
    from standin_hub import StandinHub, online

    from olmocr_rl.model_ref import ModelUnsupported, resolve_model

    online(monkeypatch)
    cache = tmp_path / "cache"
    snap = cache / "models--org--llava" / "snapshots" / ("0" * 40)
    snap.mkdir(parents=True)
    (snap / "config.json").symlink_to(folders["llava"] / "config.json")
    (cache / "models--org--llava" / "refs").mkdir()
    (cache / "models--org--llava" / "refs" / "main").write_text("0" * 40)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    with StandinHub({"google/gemma-3-tiny": folders["gemma3"], "meta/llama-tiny": folders["llama"]}) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        with pytest.raises(ModelUnsupported, match=r"^--model org/llava is a vision-language family olmocr-rl does not train "
                                                   r"\(LlavaForConditionalGeneration, model_type llava\)"):  # fmt: skip
            resolve_model("org/llava", trains=True)
        assert hub.log == []  # the cache answered
        with pytest.raises(ModelUnsupported, match=r"^--model google/gemma-3-tiny is a vision-language family olmocr-rl does not train "
                                                   r"\(Gemma3ForConditionalGeneration, model_type gemma3\)"):  # fmt: skip
            resolve_model("google/gemma-3-tiny", trains=True)
        assert resolve_model("google/gemma-3-tiny").where == "hub"  # generate, curate: a VLM is theirs to try
        with pytest.raises(ModelUnsupported, match=r"^model meta/llama-tiny is a text-only model \(LlamaForCausalLM"):
            resolve_model("meta/llama-tiny", "model")
    assert [(r.method, r.path) for r in hub.log] == [("GET", f"/{m}/resolve/main/config.json") for m in
                                                     ("google/gemma-3-tiny", "google/gemma-3-tiny", "meta/llama-tiny")]  # fmt: skip


def header_shapes(folder: Path) -> dict[str, tuple[int, ...]]:
    """Every tensor's shape as the safetensors library itself reads the folder's files."""
    from safetensors import safe_open

    out = {}
    for f in sorted(folder.glob("*.safetensors")):
        with safe_open(str(f), framework="np") as fh:
            for name in fh.keys():
                out[name] = tuple(fh.get_slice(name).get_shape())
    return out


@pytest.mark.parametrize("kind", ["llama", *sorted(VLMS)])
def test_the_shape_of_any_family_is_read_from_its_headers(folders, kind):
    """read_shape never crashes on a family's config (today: 'SiglipVisionConfig' object has no
    attribute 'depth'): every figure read, held against the safetensors library's own reading of the
    files and the config transformers builds."""
    from transformers import AutoConfig

    from olmocr_rl.train.shape import read_shape

    folder = folders[kind]
    start = time.perf_counter()
    shape = read_shape(str(folder))
    assert time.perf_counter() - start < 5
    shapes = header_shapes(folder)
    config = AutoConfig.from_pretrained(folder)
    text = config.get_text_config()
    assert shape.params == sum(math.prod(s) for s in shapes.values())
    assert (shape.text.layers, shape.text.hidden, shape.text.heads, shape.text.kv_dim, shape.vocab) == (2, 16, 2, 8, text.vocab_size)
    assert shape.text.intermediate == 32 and shape.text.gated_mlp
    vision = getattr(config, "vision_config", None)
    if vision is None:
        assert shape.vision is None and shape.vision_params == 0
        return
    assert (shape.vision.layers, shape.vision.hidden, shape.vision.heads, shape.vision.intermediate) == (3, 16, 2, 32)
    towers = ("vision_tower", "vision_model", "multi_modal_projector", "connector")
    assert shape.vision_params == sum(math.prod(s) for n, s in shapes.items() if n.split(".")[1 if n.startswith("model.") else 0] in towers)
    assert 0 < shape.vision_params < shape.params
    assert shape.patch_values == 3 * vision.patch_size**2  # RGB patches, no temporal axis (Qwen-VL's is 2)
    assert shape.text.layer_params == sum(math.prod(s) for n, s in shapes.items() if ".layers.0." in n and "vision" not in n)
