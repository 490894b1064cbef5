"""The image tokens of a page, for the model that reads it: one function (`ImageBudget.tokens`) that
the pre-flight's prompt-length check, the memory plan, `train --dry-run`, `curate` and `generate`
all read, from the page's width and height (kept on every prepared row), the model's own processor
config and the run's `max_pixels`.

The Qwen-VL image processors (transformers' `Qwen2VLImageProcessor`, which Qwen2-VL, Qwen2.5-VL and
Qwen3-VL all use, fast and PIL backends alike) resize a page with `smart_resize` to multiples of
patch_size x merge_size pixels, its area within [min_pixels, max_pixels], cut it into
patch_size-pixel patches and merge merge_size x merge_size of them into one token: Qwen2/2.5-VL
14-pixel patches (28-pixel tokens), Qwen3-VL 16-pixel patches (32-pixel tokens). The bounds come
from the processor config as transformers 5 reads it (5.17 to 5.23 alike): `size.shortest_edge` /
`size.longest_edge` (Qwen3-VL's and transformers 5's own layout), overridden by top-level
`min_pixels` / `max_pixels` (Qwen2-VL's and Qwen2.5-VL's files), else the class defaults; the config
is `processor_config.json`'s nested `image_processor` when there is one, else
`preprocessor_config.json` (transformers' `ImageProcessingMixin.get_image_processor_dict` order).
A run's `max_pixels` replaces `size.longest_edge` (olmocr_rl/modeling.py `set_max_pixels`).

Written by hand rather than calling transformers: planning runs before transformers is imported
and for models whose weights are not here. Held equal to transformers' own processors on page
images of several sizes, with and without `max_pixels` (tests/test_image_tokens.py).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

# The files an image processor's config is read from, in transformers' order.
PROCESSOR_FILES = ("processor_config.json", "preprocessor_config.json")
# transformers' Qwen2VLImageProcessor class defaults (size, patch_size, merge_size).
_DEFAULTS = {"shortest_edge": 56 * 56, "longest_edge": 28 * 28 * 1280, "patch_size": 14, "merge_size": 2}
# Image processor classes this arithmetic is theirs (the fast and PIL backends share it).
_QWEN_PROCESSORS = ("Qwen2VLImageProcessor", "Qwen2VLImageProcessorFast", "Qwen2VLImageProcessorPil")


@dataclass(frozen=True)
class ImageBudget:
    """How a model's processor turns a page into image tokens."""

    patch_size: int  # pixels of one vision patch's side
    merge_size: int  # patches merged into one token along each side
    min_pixels: int
    max_pixels: int
    source: str  # where the numbers were read

    @property
    def factor(self) -> int:
        """Pixels of one token's side: both resized sides are multiples of it."""
        return self.patch_size * self.merge_size

    def resized(self, width: int, height: int) -> tuple[int, int]:
        """(height, width) the processor resizes a width x height image to."""
        return smart_resize(int(height), int(width), self.factor, self.min_pixels, self.max_pixels)

    def tokens(self, width: int, height: int) -> int:
        """Image tokens of one width x height page (its `<|image_pad|>` run)."""
        h, w = self.resized(width, height)
        return (h // self.factor) * (w // self.factor)

    def patches(self, width: int, height: int) -> int:
        """Vision patches (rows of the processor's `pixel_values`) of one page."""
        return self.tokens(width, height) * self.merge_size**2

    def with_max_pixels(self, max_pixels: int | None) -> ImageBudget:
        """The budget under a run's `max_pixels` (None: the processor's own)."""
        if max_pixels is None:
            return self
        return replace(self, max_pixels=int(max_pixels), source=f"{self.source}, max_pixels={int(max_pixels):,} from the run")

    def describe(self) -> str:
        return (f"{self.factor} px a token (patch {self.patch_size} x merge {self.merge_size}), "
                f"{self.min_pixels:,}-{self.max_pixels:,} pixels ({self.source})")  # fmt: skip


# Qwen2.5-VL-7B's preprocessor_config.json (olmOCR-2-7B-1025's too): what `prepare` reports its
# estimate for when no model is named, and what rows of an older prepare baked in.
QWEN2_5_VL = ImageBudget(14, 2, 56 * 56, 14 * 14 * 4 * 16384, "Qwen2.5-VL-7B's preprocessor_config.json")


def smart_resize(height: int, width: int, factor: int, min_pixels: int, max_pixels: int) -> tuple[int, int]:
    """transformers' `smart_resize` (qwen2_vl/image_processing_qwen2_vl.py), Python's
    round-half-to-even included, except that an aspect ratio over 200, which transformers refuses,
    is estimated too."""
    if height <= 0 or width <= 0:
        raise ValueError(f"image size must be positive, got {width}x{height}")
    h_bar = round(height / factor) * factor
    w_bar = round(width / factor) * factor
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


class UnknownProcessor(ValueError):
    """The config is not a Qwen-VL image processor's: its tokens are not this arithmetic's."""


def budget_from_config(conf: dict[str, Any], source: str) -> ImageBudget:
    """The budget of an image processor config (the dict transformers builds the processor from)."""
    kind = conf.get("image_processor_type")
    if kind is not None and kind not in _QWEN_PROCESSORS:
        raise UnknownProcessor(f"{source}: image processor {kind!r} (image tokens are computed for the Qwen-VL processors only)")
    size = conf.get("size") if isinstance(conf.get("size"), dict) else {}
    low = conf.get("min_pixels", size.get("shortest_edge", _DEFAULTS["shortest_edge"]))
    high = conf.get("max_pixels", size.get("longest_edge", _DEFAULTS["longest_edge"]))
    patch, merge = conf.get("patch_size", _DEFAULTS["patch_size"]), conf.get("merge_size", _DEFAULTS["merge_size"])
    values = (patch, merge, low, high)
    if not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in values):
        raise UnknownProcessor(f"{source}: patch_size, merge_size and the pixel bounds must be positive integers, got {values}")
    return ImageBudget(patch, merge, low, high, source)


def image_processor_config(files: dict[str, Path]) -> tuple[dict[str, Any], str] | None:
    """(the image processor's config, the file it came from) from a model's files (name -> local
    path; missing ones left out), in transformers' order; None when neither file has one."""
    for name in PROCESSOR_FILES:
        path = files.get(name)
        if path is None:
            continue
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        conf = data.get("image_processor") if name == "processor_config.json" else data
        if isinstance(conf, dict):
            return conf, name
    return None


def folder_budget(folder: str | Path) -> ImageBudget:
    """The budget of a model folder's image processor; UnknownProcessor when it has none this
    module computes."""
    found = image_processor_config({n: Path(folder) / n for n in PROCESSOR_FILES})
    if found is None:
        raise UnknownProcessor(f"{folder} has no image processor config ({' or '.join(PROCESSOR_FILES)})")
    conf, name = found
    return budget_from_config(conf, name)


def processor_budget(image_processor: Any) -> ImageBudget:
    """The budget of a loaded image processor (its bounds as they stand: a run's max_pixels set by
    olmocr_rl/modeling.py `load_processor` included)."""
    name = type(image_processor).__name__
    size = getattr(image_processor, "size", None)  # a dict, or transformers' SizeDict: both have .get
    bounds = {k: size.get(k) if hasattr(size, "get") else None for k in ("shortest_edge", "longest_edge")}
    conf = {"image_processor_type": name, "patch_size": getattr(image_processor, "patch_size", None),
            "merge_size": getattr(image_processor, "merge_size", None), "size": bounds}  # fmt: skip
    return budget_from_config(conf, f"the loaded {name}")


def model_processor_config(model: str, *, fetch: bool = False) -> tuple[dict[str, Any], str] | None:
    """(the image processor's config, its file) of a model folder, or of a hub id from the Hugging
    Face cache (`fetch`: from the hub when the cache lacks it, the small files only, unless offline:
    olmocr_rl/hub.py); None when there is none to be had."""
    from olmocr_rl.hub import PROCESSOR_FILES as HUB_FILES
    from olmocr_rl.hub import HubUnavailable, _cached, hub_model_files, is_hub_id, offline

    path = Path(model).expanduser()
    if path.is_dir():
        return image_processor_config({n: path / n for n in PROCESSOR_FILES})
    if not is_hub_id(model):
        return None
    found = image_processor_config({n: p for n in HUB_FILES if isinstance(p := _cached(model, n), Path)})
    if found is None and fetch and not offline():
        try:
            found = image_processor_config(hub_model_files(model, tensors=False).files)
        except HubUnavailable:
            return None
    return found


def model_budget(model: str, max_pixels: int | None = None) -> tuple[ImageBudget, str | None]:
    """(the budget of `model`'s processor under the run's `max_pixels`, None) for a model folder or a
    hub id whose processor config is in the Hugging Face cache (no network: the memory plan fetches
    it, olmocr_rl/hub.py); where it cannot be read, (Qwen2.5-VL's budget, why) so that an estimate
    is still made and says what it assumed."""
    try:
        found = model_processor_config(model)
        if found is None:
            where = "its folder" if Path(model).expanduser().is_dir() else "the Hugging Face cache"
            raise UnknownProcessor(f"{model}: no image processor config in {where}")
        return budget_from_config(*found).with_max_pixels(max_pixels), None
    except UnknownProcessor as e:
        return QWEN2_5_VL.with_max_pixels(max_pixels), f"image tokens estimated with Qwen2.5-VL's processor: {e}"


def row_tokens(row: dict[str, Any], budget: ImageBudget) -> int:
    """A prepared row's image tokens under `budget`, from its page's width and height (every prepare
    wrote them); a row without them keeps the estimate an older prepare wrote (`image_tokens`)."""
    if row.get("width") and row.get("height"):
        return budget.tokens(int(row["width"]), int(row["height"]))
    return int(row.get("image_tokens", 0))
