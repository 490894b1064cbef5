"""A page's image tokens, computed once for the model that reads it (olmocr_rl/image_tokens.py), equal
what transformers' own image processor makes of the page: for Qwen2-VL, Qwen2.5-VL and Qwen3-VL
processor configs (the layouts their hub files and transformers 5's save use), on pages of several
sizes, without and with a run's max_pixels (set as the run sets it: modeling.set_max_pixels). The
golden counts come from transformers (image_grid_thw of each processed page), never from our code;
this file also runs at transformers' floor (make test-lower).

The configs are the image-processor files of the three families' 7-8B checkpoints as published on
the hub (Qwen2-VL-7B-Instruct, Qwen2.5-VL-7B-Instruct: top-level min/max_pixels, 14-pixel patches;
Qwen3-VL-8B-Instruct: size.shortest_edge/longest_edge, 16-pixel patches), and a processor_config.json
as transformers 5 writes it (the nested image_processor of the tiny Qwen3-VL)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import need

need("torchvision")
transformers = need("transformers")

from olmocr_rl.image_tokens import QWEN2_5_VL, ImageBudget, UnknownProcessor, budget_from_config, folder_budget, row_tokens, smart_resize

CLIP = {"image_mean": [0.48145466, 0.4578275, 0.40821073], "image_std": [0.26862954, 0.26130258, 0.27577711]}
CONFIGS = {
    "Qwen2-VL": {"min_pixels": 3136, "max_pixels": 12845056, "patch_size": 14, "temporal_patch_size": 2, "merge_size": 2, **CLIP,
                 "image_processor_type": "Qwen2VLImageProcessor", "processor_class": "Qwen2VLProcessor"},
    "Qwen2.5-VL": {"min_pixels": 3136, "max_pixels": 12845056, "patch_size": 14, "temporal_patch_size": 2, "merge_size": 2, **CLIP,
                   "image_processor_type": "Qwen2VLImageProcessor", "processor_class": "Qwen2_5_VLProcessor"},
    "Qwen3-VL": {"size": {"longest_edge": 16777216, "shortest_edge": 65536}, "patch_size": 16, "temporal_patch_size": 2,
                 "merge_size": 2, "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5],
                 "processor_class": "Qwen3VLProcessor", "image_processor_type": "Qwen2VLImageProcessorFast"},
}  # fmt: skip
# Pages as prepare renders them (longest side 1288: letter, A4, landscape), smaller and larger
# renders, sides that are no multiple of a token, one below min_pixels and one far above max_pixels.
PAGES = [(996, 1288), (911, 1288), (1288, 996), (1288, 1288), (1001, 1289), (1654, 2339), (2550, 3300), (224, 290), (60, 41),
         (3100, 4300), (3000, 30)]  # fmt: skip
MAX_PIXELS = [None, 1_003_520, 500_000]  # the processor's own; Qwen's class default (28 x 28 x 1280); one no token divides


def real_tokens(processor, width: int, height: int) -> tuple[int, tuple[int, int]]:
    """(image tokens, pixel_values shape) transformers' processor makes of a width x height page."""
    from PIL import Image

    out = processor(images=[Image.new("RGB", (width, height), "white")], return_tensors="pt")
    t, h, w = (int(x) for x in out["image_grid_thw"][0])
    return t * h * w // processor.merge_size**2, tuple(out["pixel_values"].shape)


def folder_with(tmp_path: Path, name: str, conf: dict, file: str = "preprocessor_config.json") -> Path:
    folder = tmp_path / name.replace(".", "_")
    folder.mkdir()
    data = {"image_processor": conf, "processor_class": conf.get("processor_class")} if file == "processor_config.json" else conf
    (folder / file).write_text(json.dumps(data))
    return folder


@pytest.mark.parametrize("family", list(CONFIGS))
@pytest.mark.parametrize("max_pixels", MAX_PIXELS)
def test_image_tokens_are_the_real_processors(family, max_pixels, tmp_path):
    from transformers import AutoImageProcessor

    from olmocr_rl.modeling import set_max_pixels

    folder = folder_with(tmp_path, family, CONFIGS[family])
    processor = AutoImageProcessor.from_pretrained(str(folder))
    if max_pixels is not None:
        set_max_pixels(processor, max_pixels)  # as load_processor does for a run's max_pixels
    ours = folder_budget(folder).with_max_pixels(max_pixels)
    patch_values = 3 * processor.temporal_patch_size * processor.patch_size**2
    for width, height in PAGES:
        if max(width, height) / min(width, height) > 200:
            continue  # transformers refuses such a page
        tokens, pixels = real_tokens(processor, width, height)
        assert ours.tokens(width, height) == tokens, (family, max_pixels, width, height)
        # trl keeps these pixel_values on the GPU (olmocr_rl/train/memory.py): one row per patch.
        assert pixels == (ours.patches(width, height), patch_values)


def test_a_transformers_5_processor_config_and_the_full_processor(tiny_qwen3, tmp_path):
    """The layout transformers 5 saves (processor_config.json, the image processor nested), read
    through the full AutoProcessor and counted as the image tokens in the prompt's input ids."""
    from PIL import Image

    from olmocr_rl.modeling import load_processor

    budget = folder_budget(tiny_qwen3)
    assert (budget.patch_size, budget.merge_size, budget.source) == (16, 2, "processor_config.json")
    for max_pixels in (None, 32 * 32 * 9):
        processor = load_processor(str(tiny_qwen3), max_pixels=max_pixels)
        text = processor.apply_chat_template([{"role": "user", "content": [{"type": "image"}]}], tokenize=False)
        for width, height in [(140, 108), (300, 61), (33, 400)]:
            ids = processor(text=[text], images=[Image.new("RGB", (width, height))])["input_ids"][0]
            assert list(ids).count(processor.image_token_id) == budget.with_max_pixels(max_pixels).tokens(width, height)


def test_the_rows_tokens_come_from_the_page_size(tmp_path):
    """A prepared row's tokens follow the model and max_pixels; a row without a size keeps what an
    older prepare baked in."""
    qwen3 = folder_budget(folder_with(tmp_path, "q3", CONFIGS["Qwen3-VL"]))
    row = {"width": 996, "height": 1288, "image_tokens": 1}
    assert row_tokens(row, QWEN2_5_VL) == 46 * 36 and row_tokens(row, qwen3) == 40 * 31
    assert row_tokens(row, qwen3.with_max_pixels(200_000)) < 40 * 31
    assert row_tokens({"image_tokens": 1234}, qwen3) == 1234


def test_what_is_not_a_qwen_processor_is_said():
    with pytest.raises(UnknownProcessor, match="SiglipImageProcessor"):
        budget_from_config({"image_processor_type": "SiglipImageProcessor"}, "preprocessor_config.json")
    with pytest.raises(UnknownProcessor, match="positive integers"):
        budget_from_config({"patch_size": 0}, "preprocessor_config.json")
    # No keys: transformers' class defaults.
    assert budget_from_config({}, "x") == ImageBudget(14, 2, 3136, 1_003_520, "x")


def test_smart_resize_rounds_as_python_does():
    # Hand-computed with transformers' formula (round half to even, 28 px per token).
    assert smart_resize(1288, 996, 28, 3136, 12845056) == (1288, 1008)
    assert smart_resize(1288, 994, 28, 3136, 12845056) == (1288, 1008)  # 994/28 = 35.5 rounds to 36 (even)
    assert smart_resize(1288, 938, 28, 3136, 12845056) == (1288, 952)  # 938/28 = 33.5 rounds to 34 (even)
    assert smart_resize(1288, 966, 28, 3136, 12845056) == (1288, 952)  # 966/28 = 34.5 rounds to 34 (even)
    assert smart_resize(5600, 5600, 28, 3136, 12845056) == (3584, 3584)  # over max_pixels: beta = 1.5625
    assert smart_resize(10, 10, 28, 3136, 12845056) == (56, 56)  # under min_pixels
    assert smart_resize(2000, 10, 28, 3136, 12845056) == (812, 28)  # aspect over 200: estimated (rounds to 0 wide, scaled up)
    with pytest.raises(ValueError):
        smart_resize(0, 10, 28, 3136, 12845056)


@pytest.fixture(scope="module")
def tiny_qwen3(tmp_path_factory) -> Path:
    from training import build_model

    return build_model(tmp_path_factory.mktemp("q3") / "qwen3_vl", "qwen3_vl")


# Sizes for the pure checks against transformers' own smart_resize: sides no token divides, the
# round-half-to-even ties, pages exactly at a bound and one pixel over or under it, thin pages.
EDGES = [(1288, 996), (1288, 994), (1288, 938), (1289, 1001), (41, 60), (28, 28), (56, 56), (55, 57), (1000, 1000), (1001, 999),
         (2339, 1654), (300, 61), (30, 3000), (5000, 26), (14, 14), (1, 1), (3584, 3584), (3585, 3584)]  # fmt: skip
BOUNDS = [(28, 3136, 12845056), (28, 3136, 1_003_520), (32, 65536, 16777216), (28, 56 * 56 * 4, 28 * 28 * 100),
          (32, 1024, 32 * 32 * 30), (42, 3136, 500_000), (28, 3136, 3584 * 3584), (28, 56 * 56, 1_000_000)]  # fmt: skip


def test_smart_resize_is_transformers_at_the_bounds_and_off_the_grid():
    """Every size and bound pair as transformers' `smart_resize` resizes it (the bound hit exactly:
    3584 x 3584 at max_pixels 3584 x 3584, 56 x 56 at min_pixels 3136, is kept)."""
    from transformers.models.qwen2_vl.image_processing_qwen2_vl import smart_resize as theirs

    for factor, low, high in BOUNDS:
        for height, width in EDGES:
            if max(height, width) / min(height, width) > 200:
                continue
            assert smart_resize(height, width, factor, low, high) == theirs(height, width, factor, low, high), (height, width)
    assert smart_resize(3584, 3584, 28, 3136, 3584 * 3584) == (3584, 3584)
    assert smart_resize(56, 56, 28, 3136, 12845056) == (56, 56)
    for h, w in [(0, 10), (10, 0), (-1, 10), (10, -1)]:
        with pytest.raises(ValueError, match=f"got {w}x{h}"):
            smart_resize(h, w, 28, 3136, 12845056)


@pytest.mark.parametrize("patch, merge", [(14, 2), (16, 2), (14, 3), (8, 4)])
def test_tokens_and_patches_follow_the_processors_grid(patch, merge):
    """Tokens are the resized grid over (patch x merge)-pixel cells, patches the grid over
    patch-pixel cells (transformers' Qwen2VLImageProcessor: grid_h x grid_w rows of pixel_values,
    merge_size**2 of them a token); the page is width x height, the resize (height, width)."""
    from transformers.models.qwen2_vl.image_processing_qwen2_vl import smart_resize as theirs

    budget = ImageBudget(patch, merge, 56 * 56, 700_000, "t")
    assert budget.factor == patch * merge
    for height, width in EDGES:
        if max(height, width) / min(height, width) > 200:
            continue
        h, w = theirs(height, width, patch * merge, 56 * 56, 700_000)
        assert budget.resized(width, height) == (h, w)
        assert budget.patches(width, height) == (h // patch) * (w // patch)
        assert budget.tokens(width, height) == (h // patch) * (w // patch) // merge**2
        assert type(budget.tokens(width, height)) is int and type(budget.patches(width, height)) is int


def test_a_runs_max_pixels_and_the_line_that_says_it():
    budget = budget_from_config(CONFIGS["Qwen2.5-VL"], "preprocessor_config.json")
    assert budget.with_max_pixels(None) is budget
    run = budget.with_max_pixels(500_000.0)
    assert (run.max_pixels, run.min_pixels, run.patch_size, run.merge_size) == (500_000, 3136, 14, 2)
    assert run.source == "preprocessor_config.json, max_pixels=500,000 from the run"
    # The plan's "image tokens:" line (tests/test_hub_plan.py reads it from the CLI).
    assert budget.describe() == "28 px a token (patch 14 x merge 2), 3,136-12,845,056 pixels (preprocessor_config.json)"


def test_which_bounds_a_config_states_win():
    """Top-level min/max_pixels override size.shortest_edge/longest_edge, each on its own; a
    missing key falls back to transformers' Qwen2VLImageProcessor class defaults; a size that is
    not a dict is ignored; each Qwen processor class (and none named) is this arithmetic's."""
    # The class defaults, read in a fresh interpreter: transformers 5.17's Qwen2VLImageProcessor
    # writes a config's top-level min_pixels/max_pixels into its class-level `size` dict (5.23
    # copies it first), so in this process the "defaults" depend on which processor a test built first.
    script = (
        "import json; from transformers.models.qwen2_vl.image_processing_qwen2_vl import Qwen2VLImageProcessor as P; p = P(); "
        "print(json.dumps([p.size['shortest_edge'], p.size['longest_edge'], p.patch_size, p.merge_size]))"
    )
    shortest, longest, patch, merge = json.loads(
        subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    )
    size = {"shortest_edge": 1000, "longest_edge": 9000}
    assert budget_from_config({"size": size}, "s") == ImageBudget(14, 2, 1000, 9000, "s")
    assert budget_from_config({"size": size, "min_pixels": 77}, "s") == ImageBudget(14, 2, 77, 9000, "s")
    assert budget_from_config({"size": size, "max_pixels": 88}, "s") == ImageBudget(14, 2, 1000, 88, "s")
    assert budget_from_config({"size": {"longest_edge": 9000}}, "s").min_pixels == shortest
    assert budget_from_config({"size": {"shortest_edge": 1000}}, "s").max_pixels == longest
    assert budget_from_config({"size": [1, 2]}, "s") == ImageBudget(patch, merge, 3136, 1_003_520, "s")
    assert budget_from_config({"patch_size": 16, "merge_size": 3}, "s").factor == 48
    for kind in ("Qwen2VLImageProcessor", "Qwen2VLImageProcessorFast", "Qwen2VLImageProcessorPil", None):
        assert budget_from_config({"image_processor_type": kind}, "s").patch_size == 14
    for bad in ({"merge_size": 0}, {"min_pixels": -1}, {"max_pixels": 0}, {"patch_size": True}, {"patch_size": 14.0}, {"merge_size": "2"}):
        with pytest.raises(UnknownProcessor, match=r"^s: patch_size, merge_size and the pixel bounds must be positive integers, got \("):
            budget_from_config(bad, "s")
    with pytest.raises(
        UnknownProcessor, match=r"^p\.json: image processor 'SiglipImageProcessor' \(image tokens are computed for the Qwen-VL"
    ):
        budget_from_config({"image_processor_type": "SiglipImageProcessor"}, "p.json")


def test_the_processor_config_is_read_in_transformers_order(tmp_path):
    """processor_config.json's nested image_processor first, else preprocessor_config.json
    (ImageProcessingMixin.get_image_processor_dict); a file that is unreadable, not JSON, or has no
    nested image processor is passed over."""
    from olmocr_rl.image_tokens import image_processor_config

    q3, q25 = CONFIGS["Qwen3-VL"], CONFIGS["Qwen2.5-VL"]
    both = folder_with(tmp_path, "both", q3, "processor_config.json")
    (both / "preprocessor_config.json").write_text(json.dumps(q25))
    assert folder_budget(both) == ImageBudget(16, 2, 65536, 16777216, "processor_config.json")
    files = {"processor_config.json": both / "processor_config.json", "preprocessor_config.json": both / "preprocessor_config.json"}
    assert image_processor_config(files) == (q3, "processor_config.json")
    (both / "processor_config.json").write_text(json.dumps({"processor_class": "Qwen3VLProcessor"}))
    assert image_processor_config(files) == (q25, "preprocessor_config.json")
    (both / "processor_config.json").write_text("{not json")
    assert image_processor_config(files) == (q25, "preprocessor_config.json")
    assert image_processor_config({"preprocessor_config.json": both / "preprocessor_config.json"}) == (q25, "preprocessor_config.json")
    assert image_processor_config({"preprocessor_config.json": both / "absent.json"}) is None
    (both / "preprocessor_config.json").write_text("[1]")
    assert image_processor_config(files) is None
    with pytest.raises(UnknownProcessor, match=r"has no image processor config \(processor_config.json or preprocessor_config.json\)"):
        folder_budget(tmp_path)


def test_a_loaded_processors_bounds_as_they_stand():
    """transformers' own processor object (size a SizeDict of attributes, or a plain dict)."""
    from transformers.models.qwen2_vl.image_processing_qwen2_vl import Qwen2VLImageProcessor

    from olmocr_rl.image_tokens import processor_budget

    p = Qwen2VLImageProcessor(patch_size=16, merge_size=2, size={"shortest_edge": 4096, "longest_edge": 700_000})
    assert processor_budget(p) == ImageBudget(16, 2, 4096, 700_000, f"the loaded {type(p).__name__}")

    class Qwen2VLImageProcessorPil:
        patch_size, merge_size, size = 14, 3, {"shortest_edge": 999, "longest_edge": 5000}

    assert processor_budget(Qwen2VLImageProcessorPil()) == ImageBudget(14, 3, 999, 5000, "the loaded Qwen2VLImageProcessorPil")

    # What a loaded processor lacks is refused as the config would be, never an AttributeError:
    # no size, patch or merge attribute, or a size without .get, reads as "not stated".
    class Qwen2VLImageProcessorFast:
        pass

    with pytest.raises(UnknownProcessor, match=r"the loaded Qwen2VLImageProcessorFast: .* got \(None, None, None, None\)$"):
        processor_budget(Qwen2VLImageProcessorFast())
    odd = Qwen2VLImageProcessorFast()
    odd.patch_size, odd.merge_size, odd.size = 14, 2, (56, 1000)
    with pytest.raises(UnknownProcessor, match=r"got \(14, 2, None, None\)$"):
        processor_budget(odd)

    # The class name is the processor's type: another family's processor is said, not computed.
    class SiglipImageProcessor:
        patch_size, merge_size, size = 14, 2, {"shortest_edge": 999, "longest_edge": 5000}

    with pytest.raises(UnknownProcessor, match="^the loaded SiglipImageProcessor: image processor 'SiglipImageProcessor' "):
        processor_budget(SiglipImageProcessor())


def test_bounds_and_sizes_of_one_are_a_budget():
    """Every value a positive integer: 1 is one (a processor that merges no patches, merge_size 1,
    has a token a patch, as transformers' grid_thw / merge_size**2 counts), 0 is not."""
    budget = budget_from_config({"patch_size": 14, "merge_size": 1, "min_pixels": 1, "max_pixels": 1_000_000}, "c")
    assert (budget.factor, budget.min_pixels) == (14, 1)
    assert budget.tokens(140, 280) == 10 * 20 == budget.patches(140, 280)
    for key in ("patch_size", "merge_size", "min_pixels", "max_pixels"):
        with pytest.raises(UnknownProcessor, match="must be positive integers"):
            budget_from_config({"patch_size": 14, "merge_size": 1, "min_pixels": 1, "max_pixels": 1_000_000, key: 0}, "c")


def test_a_hub_ids_processor_config_is_fetched_only_when_asked(tmp_path, monkeypatch):
    """`model_processor_config` for a hub id the cache lacks: fetched (the small files, no tensor
    headers) only with `fetch` and not offline; a cached one is never fetched again; a hub that
    cannot be reached is None. `model_budget` (the memory plan's estimate) never fetches."""
    from huggingface_hub import constants

    import olmocr_rl.hub as hub
    from olmocr_rl.image_tokens import model_budget, model_processor_config

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    fetched = folder_with(tmp_path, "fetched", CONFIGS["Qwen3-VL"])
    calls = []

    def hub_model_files(repo, *, tensors=True, network=True):
        calls.append((repo, tensors, network))
        if repo == "o/down":
            raise hub.HubUnavailable("o/down: the hub cannot be reached")
        return hub.HubModel(repo, None, {"preprocessor_config.json": fetched / "preprocessor_config.json"}, None)

    monkeypatch.setattr(hub, "hub_model_files", hub_model_files)
    assert model_processor_config("o/m") is None and calls == []
    assert model_budget("o/m")[1].endswith("o/m: no image processor config in the Hugging Face cache") and calls == []
    assert model_processor_config("o/m", fetch=True) == (CONFIGS["Qwen3-VL"], "preprocessor_config.json")
    assert calls == [("o/m", False, True)]
    assert model_processor_config("o/down", fetch=True) is None and calls[-1] == ("o/down", False, True)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    assert model_processor_config("o/m", fetch=True) is None and len(calls) == 2
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    cached_file(tmp_path / "hub", "o/c", "preprocessor_config.json", CONFIGS["Qwen2.5-VL"])
    assert model_processor_config("o/c", fetch=True) == (CONFIGS["Qwen2.5-VL"], "preprocessor_config.json") and len(calls) == 2


def test_a_models_budget_from_its_folder_the_cache_or_the_assumption(tmp_path, monkeypatch):
    """A folder, a hub id in the Hugging Face cache (a snapshot as huggingface_hub lays it out), a
    name that is neither; where nothing is read, Qwen2.5-VL's budget and why."""
    from huggingface_hub import constants

    from olmocr_rl.image_tokens import model_budget, model_processor_config

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    folder = folder_with(tmp_path, "q3", CONFIGS["Qwen3-VL"])
    assert model_budget(str(folder), 300_000) == (
        ImageBudget(16, 2, 65536, 300_000, "preprocessor_config.json, max_pixels=300,000 from the run"),
        None,
    )
    cached_file(tmp_path / "hub", "o/m", "processor_config.json", {"image_processor": CONFIGS["Qwen3-VL"]})
    assert model_processor_config("o/m") == (CONFIGS["Qwen3-VL"], "processor_config.json")
    assert model_budget("o/m") == (ImageBudget(16, 2, 65536, 16777216, "processor_config.json"), None)
    assert model_processor_config("not a/hub id") is None
    assert model_processor_config("o/absent", fetch=True) is None  # offline: nothing fetched
    assumed, why = model_budget("o/absent", 500_000)
    assert assumed == QWEN2_5_VL.with_max_pixels(500_000)
    assert why == "image tokens estimated with Qwen2.5-VL's processor: o/absent: no image processor config in the Hugging Face cache"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert model_budget(str(empty))[1].endswith(f"{empty}: no image processor config in its folder")


def test_a_row_without_a_size_keeps_its_baked_estimate():
    assert row_tokens({"width": 996, "height": 0, "image_tokens": 7}, QWEN2_5_VL) == 7
    assert row_tokens({"width": 0, "height": 1288, "image_tokens": 7}, QWEN2_5_VL) == 7
    assert row_tokens({"height": 1288}, QWEN2_5_VL) == 0
    assert row_tokens({"width": "996", "height": "1288"}, QWEN2_5_VL) == QWEN2_5_VL.tokens(996, 1288)


SNAPSHOT = "ab" * 20


def cached_file(cache: Path, repo: str, name: str, content: dict) -> None:
    """`repo`'s file `name` in a Hugging Face cache, laid out as huggingface_hub writes it (a
    snapshot and the ref main pointing at it)."""
    root = cache / ("models--" + repo.replace("/", "--"))
    (root / "snapshots" / SNAPSHOT).mkdir(parents=True, exist_ok=True)
    (root / "refs").mkdir(exist_ok=True)
    (root / "refs" / "main").write_text(SNAPSHOT)
    (root / "snapshots" / SNAPSHOT / name).write_text(json.dumps(content))
