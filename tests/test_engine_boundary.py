"""What reaches the generation engine, for every command that builds one (olmocr_rl/engines.py):
the prompt layout (olmOCR 2's instruction before the image), the placeholder suppression, the
processor's pixel bounds (the training config's `max_pixels`, else the model folder's) and the seed.

The engines are recorded at their library's boundary: transformers' `generate` (every call any
model makes: `olmocr-rl generate`, `curate`, training without vLLM through trl, the final outputs)
and a stand-in `vllm` module (`generate --engine vllm`, `curate --engine vllm`); training with vLLM
is tests/test_vllm_boundary.py's (trl's vLLM client and engine recorded). Each command runs as the
user runs it, with the tiny model. The config asks for `prompt=olmocr-v4` (a stand-in of olmOCR's
prompts file: an instruction of our own), `max_pixels=6272` (at most 8 image tokens; the tiny
model's folder allows 16) and seed 5."""

from __future__ import annotations

import json
import shutil
import sys
import types
from pathlib import Path

import pytest
from conftest import need

need("trl")
torch = need("torch")

from clirun import invoke
from training import FIXTURES, RECIPE

from olmocr_rl.engines import folder_pixel_bounds
from olmocr_rl.prompts import IMAGE_FIRST, TEXT_FIRST

ROOT = Path(__file__).resolve().parent.parent
V4 = "Stand-in of olmOCR 2's instruction: transcribe the page."
PLACEHOLDERS = {259, 260, 261, 262}  # the tiny model's vision tokens (bench_fixtures/tiny_vlm.py)
BOUND = 28 * 28 * 8  # max_pixels: at most 8 image tokens
CONFIG = ["prompt=olmocr-v4", f"max_pixels={BOUND}", "seed=5"]


@pytest.fixture(autouse=True)
def v4_prompt(tmp_path, monkeypatch):
    """olmOCR's prompts file as `olmocr-rl install-katex` stores it, with an instruction of ours."""
    path = tmp_path / "prompts.py"
    path.write_text(f"def build_no_anchoring_v4_yaml_prompt():\n    return {V4!r}\n")
    monkeypatch.setenv("OLMOCR_RL_OLMOCR_PROMPTS", str(path))
    torch.manual_seed(0)  # what an engine that is not given the seed would sample with


class Transformers:
    """Every `generate` call of a transformers model: the prompt as text, the image tokens per
    image, the tokens suppressed (a keyword, or trl's GenerationConfig), the torch seed."""

    def __init__(self, monkeypatch, processor):
        from transformers.generation.utils import GenerationMixin

        self.calls: list[dict] = []
        self.tokenizer = processor.tokenizer
        original = GenerationMixin.generate

        def generate(model, *args, **kwargs):
            config = kwargs.get("generation_config")
            suppressed = kwargs.get("suppress_tokens") or getattr(config, "suppress_tokens", None) or []
            ids = kwargs["input_ids"]
            self.calls.append({
                "texts": [self.tokenizer.decode(row) for row in ids],
                "image_tokens": [int(row.eq(model.config.image_token_id).sum()) for row in ids],
                "suppressed": set(suppressed),
                "seed": torch.initial_seed(),
                "trainer": config is not None,  # trl passes its GenerationConfig
            })  # fmt: skip
            return original(model, *args, **kwargs)

        monkeypatch.setattr(GenerationMixin, "generate", generate)


class VLLM:
    """A stand-in `vllm` module: what the engine is built with, the requests, the sampling."""

    def __init__(self, monkeypatch):
        self.init: list[dict] = []
        self.requests: list[dict] = []
        self.sampling: list[dict] = []
        owner = self

        class LLM:
            def __init__(self, **kwargs):
                owner.init.append(kwargs)

            def generate(self, requests, params, use_tqdm=True):
                owner.requests += requests
                owner.sampling.append(params)
                return [types.SimpleNamespace(outputs=[types.SimpleNamespace(text="text")]) for _ in requests]

        fake = types.ModuleType("vllm")
        fake.LLM = LLM
        fake.SamplingParams = lambda **kw: kw
        monkeypatch.setitem(sys.modules, "vllm", fake)


def layout(text: str, instruction: str) -> str:
    """Where the instruction sits in a prompt: before the image or after it."""
    return TEXT_FIRST if text.index(instruction) < text.index("<|vision_start|>") else IMAGE_FIRST


def processor_of(model: Path, max_pixels: int | None = None):
    from olmocr_rl.modeling import load_processor

    return load_processor(str(model), max_pixels=max_pixels)


def bench_copy(dst: Path) -> Path:
    shutil.copytree(ROOT / "bench_fixtures", dst, ignore=shutil.ignore_patterns("demo_model", "other_model", "*.py", "*.yaml"))
    return dst


def page_seeds(seed: int) -> set[int]:
    """The seeds of the fixture pages' samples (olmocr_rl/engines.py `sample_seed`) in a run seeded `seed`."""
    from olmocr_rl.engines import sample_seed
    from olmocr_rl.jsonl import read_jsonl

    pages = {(t["pdf"], int(t["page"])) for f in FIXTURES.glob("*.jsonl") for t in map(json.loads, filter(str.strip, read_jsonl(f).lines))}
    return {sample_seed(seed, pdf, page, j) for pdf, page in pages for j in range(8)}


def assert_transformers_engine(calls: list[dict], *, instruction: str, max_tokens: int, seed: int, more_than: int | None = None,
                               per_page: bool = True):  # fmt: skip
    """`per_page`: each call seeded with a sample seed of one of the pages (generate, curate, the
    final outputs); else with the run's seed (trl's training)."""
    assert calls, "no generate call reached transformers"
    seeds = page_seeds(seed) if per_page else {seed}
    assert not page_seeds(seed + 1) & seeds
    for call in calls:
        assert all(layout(t, instruction) == TEXT_FIRST for t in call["texts"]), call["texts"][0]
        assert PLACEHOLDERS <= call["suppressed"], call["suppressed"]
        assert all(0 < n <= max_tokens for n in call["image_tokens"]), call["image_tokens"]
        assert call["seed"] in seeds, call["seed"]
    if more_than is not None:  # the bound is the model folder's, not a smaller one
        assert max(n for c in calls for n in c["image_tokens"]) > more_than


def assert_vllm_engine(fake: VLLM, *, instruction: str, bounds: dict, seed: int):
    (init,) = fake.init
    assert init["seed"] == seed and init["mm_processor_kwargs"] == bounds
    assert fake.requests and all(layout(r["prompt"], instruction) == TEXT_FIRST for r in fake.requests)
    params = [p for call in fake.sampling for p in call]  # one per request
    assert len(params) == len(fake.requests)
    assert all(p["logit_bias"] == {i: -100.0 for i in PLACEHOLDERS} for p in params)
    assert all(p["seed"] in page_seeds(seed) for p in params)  # each request its page's sample seed


# ---------------------------------------------------------------------------------------------
# olmocr-rl generate: no config; the model folder's bounds (as training with max_pixels unset)
# ---------------------------------------------------------------------------------------------

GENERATE = ["--prompt", "olmocr-v4", "--seed", "5", "--longest-side", "140", "--max-new-tokens", "4", "-q"]


def test_generate_transformers(tiny_model, tmp_path, monkeypatch):
    recorded = Transformers(monkeypatch, processor_of(tiny_model))
    res = invoke(["generate", tiny_model, bench_copy(tmp_path / "bench"), *GENERATE])
    assert res.exit_code == 0, res.output
    assert_transformers_engine(recorded.calls, instruction=V4, max_tokens=16, seed=5, more_than=8)


def test_generate_vllm(tiny_model, tmp_path, monkeypatch):
    fake = VLLM(monkeypatch)
    res = invoke(["generate", tiny_model, bench_copy(tmp_path / "bench"), *GENERATE, "--engine", "vllm"])
    assert res.exit_code == 0, res.output
    assert_vllm_engine(fake, instruction=V4, bounds=folder_pixel_bounds(str(tiny_model)), seed=5)


# ---------------------------------------------------------------------------------------------
# olmocr-rl curate: the training config's prompt, max_pixels and seed
# ---------------------------------------------------------------------------------------------


def curate(prepared: Path, model: Path, tmp_path: Path, *args: str):
    folder = tmp_path / "prepared"
    shutil.copytree(prepared, folder)
    return invoke(["curate", folder, "--model", model, "--samples", "2", "--config", RECIPE, *CONFIG, *args, "-q"])


def test_curate_transformers(prepared, tiny_model, tmp_path, monkeypatch):
    recorded = Transformers(monkeypatch, processor_of(tiny_model))
    res = curate(prepared, tiny_model, tmp_path)
    assert res.exit_code in (0, 1), res.output  # 1: no page kept (a random model's samples may all agree)
    assert_transformers_engine(recorded.calls, instruction=V4, max_tokens=8, seed=5)


def test_curate_vllm(prepared, tiny_model, tmp_path, monkeypatch):
    fake = VLLM(monkeypatch)
    res = curate(prepared, tiny_model, tmp_path, "--engine", "vllm")
    assert res.exit_code in (0, 1), res.output
    assert_vllm_engine(fake, instruction=V4, bounds={"min_pixels": 3136, "max_pixels": BOUND}, seed=5)


# ---------------------------------------------------------------------------------------------
# olmocr-rl train without vLLM: trl's generate, the final outputs of the trained model in memory
# and of the saved one
# ---------------------------------------------------------------------------------------------


def test_train_without_vllm_and_its_final_outputs(prepared, tiny_model, tmp_path, monkeypatch):
    from olmocr_rl.train.config import load_config
    from olmocr_rl.train.worker import write_final_outputs

    recorded = Transformers(monkeypatch, processor_of(tiny_model))
    out = tmp_path / "run"
    args = [*CONFIG, "max_steps=1", "save_steps=0", "eval_split=none", "final_outputs=train", "max_train_pages=1", "report_to=[none]",
            "progress=false"]  # fmt: skip
    res = invoke(["train", prepared, "--model", tiny_model, "-o", out, "--config", RECIPE, *args])
    assert res.exit_code == 0, res.output
    training = [c for c in recorded.calls if c["trainer"]]
    outputs = [c for c in recorded.calls if not c["trainer"]]
    assert training and outputs, recorded.calls
    assert_transformers_engine(training, instruction=V4, max_tokens=8, seed=5, per_page=False)
    assert_transformers_engine(outputs, instruction=V4, max_tokens=8, seed=5)
    # The saved model, as `olmocr-rl train` writes them after launching ranks.
    recorded.calls.clear()
    torch.manual_seed(0)
    cfg = load_config(RECIPE, args, prepared_dir=str(prepared), model=str(tiny_model), output_dir=str(out))
    write_final_outputs(cfg)
    assert_transformers_engine(recorded.calls, instruction=V4, max_tokens=8, seed=5)
