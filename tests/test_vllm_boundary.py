"""What trl sends to vLLM for our prepared pages, captured at trl's vLLM boundary.

trl's vLLM generation (`trl.generation.vllm_generation.VLLMGeneration`) talks to a server only
through `VLLMClient`, and to a colocated engine only through `vllm.LLM` / `SamplingParams`. Here
recording stand-ins replace them (and vLLM's import check is answered yes; neither vLLM nor CUDA
exists on CI machines), and one real GRPO step of our worker runs with `use_vllm=true` in each
mode on the tiny model: the images and token ids it sends
must be our prepared page images and the tokens our processor makes of our prompt (the ones
`model.generate` sees: the processor-expanded image placeholders, then the instruction), with our
sampling settings; the completions the client returns are the ones the bench reward scores."""

from __future__ import annotations

import importlib
import json

import pytest
from conftest import need

need("trl")
torch = need("torch")

from training import cfg_for

COMPLETION = "The quick brown fox"


class RecordingClient:
    """Stands in for trl.generation.vllm_client.VLLMClient; class-level record of every call."""

    calls: list[tuple[str, dict]] = []
    tokenizer = None

    def __init__(self, base_url=None, host="0.0.0.0", server_port=8000, group_port=51216, connection_timeout=0.0):
        self.calls.append(("init", {"base_url": base_url, "host": host, "server_port": server_port, "timeout": connection_timeout}))

    def init_communicator(self, device=0):
        self.calls.append(("init_communicator", {"device": str(device)}))

    def get_server_info(self):
        return {"model_config": {"logprobs_mode": "processed_logprobs"}}

    def update_named_params(self, metadata, params):
        names = [name for name, _ in params]
        self.calls.append(("update_named_params", {"names": names, "metadata": metadata}))

    def reset_prefix_cache(self):
        pass

    def image_features(self, images):
        self.calls.append(("image_features", {"images": images}))
        return [{"mm_placeholders": {"image": [{"offset": 0, "length": 0}]}, "images": len(imgs)} for imgs in images]

    def generate(self, prompts, features=None, n=1, **sampling):
        self.calls.append(("generate", {"prompts": prompts, "features": features, "n": n, **sampling}))
        ids = self.tokenizer(COMPLETION, add_special_tokens=False)["input_ids"] + [self.tokenizer.convert_tokens_to_ids("<|im_end|>")]
        completions = [list(ids) for _ in prompts for _ in range(n)]
        logprobs = [[[-0.5] for _ in c] for c in completions]
        return {"prompt_ids": prompts, "completion_ids": completions, "logprobs": logprobs,
                "logprob_token_ids": [[[t] for t in c] for c in completions]}  # fmt: skip


class _Obj:
    def __init__(self, **kw):
        self.__dict__.update(kw)


class RecordingLLM:
    """Stands in for vllm.LLM in colocate mode (each rank's own engine)."""

    calls: list[tuple[str, dict]] = []
    tokenizer = None

    def __init__(self, **kwargs):
        self.calls.append(("init", kwargs))
        model = _Obj(load_weights=lambda weights: self.calls.append(("load_weights", {"names": [n for n, _ in weights]})))
        self.llm_engine = _Obj(model_executor=_Obj(driver_worker=_Obj(model_runner=_Obj(model=model))),
                               model_config=_Obj(max_model_len=kwargs["max_model_len"]))  # fmt: skip

    def reset_prefix_cache(self):
        pass

    def sleep(self, level=1):  # sleep mode (vllm_enable_sleep_mode)
        self.calls.append(("sleep", {"level": level}))

    def wake_up(self, tags=None):
        self.calls.append(("wake_up", {"tags": tags}))

    def generate(self, prompts, sampling_params=None, use_tqdm=False):
        self.calls.append(("generate", {"prompts": prompts, "sampling": sampling_params.kwargs}))
        ids = self.tokenizer(COMPLETION, add_special_tokens=False)["input_ids"] + [self.tokenizer.convert_tokens_to_ids("<|im_end|>")]
        logprobs = [{t: _Obj(rank=1, logprob=-0.5)} for t in ids]
        return [_Obj(prompt_token_ids=p["prompt_token_ids"], outputs=[_Obj(token_ids=list(ids), logprobs=logprobs)]) for p in prompts]


class RecordingSamplingParams:
    def __init__(self, **kwargs):
        self.kwargs = kwargs


def _sent(mode: str) -> tuple[list, list, dict]:
    """(images per prompt, token ids per prompt, sampling settings) of the one generation call."""
    if mode == "server":
        calls = RecordingClient.calls
        images = [c["images"] for name, c in calls if name == "image_features"]
        generate = [c for name, c in calls if name == "generate"]
        assert len(images) == len(generate) == 1
        pushed = next(c for name, c in calls if name == "update_named_params")
        assert pushed["names"] and len(pushed["names"]) == len(pushed["metadata"])  # the training weights go to the server
        sampling = {k: v for k, v in generate[0].items() if k not in ("prompts", "features")}
        return images[0], generate[0]["prompts"], sampling
    calls = RecordingLLM.calls
    generate = [c for name, c in calls if name == "generate"]
    assert len(generate) == 1 and any(name == "load_weights" for name, _ in calls)
    prompts = generate[0]["prompts"]
    images = [[p["multi_modal_data"]["image"]] for p in prompts]
    return images, [p["prompt_token_ids"] for p in prompts], generate[0]["sampling"]


V4 = "Stand-in of olmOCR 2's instruction: transcribe the page."


def stand_in_vllm(monkeypatch, tokenizer) -> None:
    """trl's vLLM boundary answered by the recording stand-ins (no vLLM, no CUDA here)."""
    import trl.generation.vllm_generation as vllm_generation

    preflight = importlib.import_module("olmocr_rl.train.preflight")
    monkeypatch.setattr(preflight, "vllm_problems", lambda cuda, mode="colocate": [])
    monkeypatch.setattr(vllm_generation, "is_vllm_available", lambda *a, **k: True)
    monkeypatch.setattr(vllm_generation, "VLLMClient", RecordingClient)
    monkeypatch.setattr(vllm_generation, "LLM", RecordingLLM, raising=False)
    monkeypatch.setattr(vllm_generation, "SamplingParams", RecordingSamplingParams, raising=False)
    for var in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        # Colocate mode sets them for vLLM. setenv first: delenv of an unset variable records
        # nothing, and the test's values would outlive it.
        monkeypatch.setenv(var, "0")
        monkeypatch.delenv(var)
    RecordingClient.calls, RecordingClient.tokenizer = [], tokenizer
    RecordingLLM.calls, RecordingLLM.tokenizer = [], tokenizer


def test_sleep_mode_pushes_the_weights_every_generation_round(prepared, tiny_model, tmp_path, monkeypatch):
    """Colocated vLLM with sleep mode: trl discards the engine's weights after every generate call
    (sleep level 2) and pushes them again before the next (trl generation/vllm_generation.py), so
    online filtering's added rounds each cost a full weight push, as the plan says
    (olmocr_rl/train/memory.py `weight_pushes`). Every completion the stand-in returns is the same,
    so no group is kept and every round allowed runs."""
    from olmocr_rl.modeling import load_processor
    from olmocr_rl.train.memory import weight_pushes
    from olmocr_rl.train.shape import read_shape
    from olmocr_rl.train.worker import run

    stand_in_vllm(monkeypatch, load_processor(str(tiny_model)).tokenizer)
    cfg = cfg_for(prepared, tiny_model, tmp_path / "run", "use_vllm=true", "vllm_mode=colocate", "vllm_enable_sleep_mode=true",
                  "filter_groups=true", "filter_extra_rounds=2", "max_steps=1", "save_steps=0", "eval_split=none", "final_outputs=none")  # fmt: skip
    assert run(cfg, final_outputs=False)["global_step"] == 1
    calls = [name if name != "wake_up" else f"wake_up {c['tags']}" for name, c in RecordingLLM.calls if name != "load_weights"]
    pushes = calls.count("wake_up ['weights']")
    assert calls.count("generate") == 3 and pushes == 3 and calls.count("sleep") >= 3, calls
    assert f"up to {pushes} weight push(es) per generation batch" in weight_pushes(cfg, read_shape(str(tiny_model)), None)


@pytest.mark.parametrize("mode", ["server", "colocate"])
def test_trl_sends_our_page_image_and_prompt_tokens(prepared, tiny_model, tmp_path, monkeypatch, mode):
    """The server mode with each prepared page's own instruction (after the image); the colocated
    engine with the config's `prompt=olmocr-v4` (olmOCR 2's layout: the instruction first; a
    stand-in of olmOCR's prompts file)."""
    import trl.generation.vllm_generation as vllm_generation
    from PIL import Image

    from olmocr_rl.modeling import load_processor
    from olmocr_rl.prepared import read_split
    from olmocr_rl.prompts import IMAGE_FIRST, TEXT_FIRST, conversation
    from olmocr_rl.train.worker import run

    preflight = importlib.import_module("olmocr_rl.train.preflight")
    monkeypatch.setattr(preflight, "vllm_problems", lambda cuda, mode="colocate": [])  # no vLLM, no CUDA here
    monkeypatch.setattr(vllm_generation, "is_vllm_available", lambda *a, **k: True)
    monkeypatch.setattr(vllm_generation, "VLLMClient", RecordingClient)
    monkeypatch.setattr(vllm_generation, "LLM", RecordingLLM, raising=False)
    monkeypatch.setattr(vllm_generation, "SamplingParams", RecordingSamplingParams, raising=False)
    for var in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        # Colocate mode sets them for vLLM. setenv first: delenv of an unset variable records
        # nothing, and the test's values would outlive it.
        monkeypatch.setenv(var, "0")
        monkeypatch.delenv(var)
    processor = load_processor(str(tiny_model), max_pixels=6272)  # the trainer's processor, with the run's max_pixels
    RecordingClient.calls, RecordingClient.tokenizer = [], processor.tokenizer
    RecordingLLM.calls, RecordingLLM.tokenizer = [], processor.tokenizer

    out = tmp_path / "run"
    prompts = tmp_path / "prompts.py"
    prompts.write_text(f"def build_no_anchoring_v4_yaml_prompt():\n    return {V4!r}\n")
    monkeypatch.setenv("OLMOCR_RL_OLMOCR_PROMPTS", str(prompts))
    v4 = ["prompt=olmocr-v4"] if mode == "colocate" else []
    cfg = cfg_for(prepared, tiny_model, out, "use_vllm=true", f"vllm_mode={mode}", "vllm_server_host=10.0.0.7",
                  "vllm_server_port=8123", "max_steps=1", "save_steps=0", "eval_split=none", "final_outputs=none",
                  "seed=5", "max_pixels=6272", *v4)  # fmt: skip
    summary = run(cfg, final_outputs=False)
    assert summary["global_step"] == 1

    if mode == "server":
        init = RecordingClient.calls[0][1]
        assert init["base_url"] == "http://10.0.0.7:8123" and init["timeout"] == cfg.vllm_server_timeout
    else:
        init = RecordingLLM.calls[0][1]
        assert init["model"] == str(tiny_model) and init["gpu_memory_utilization"] == cfg.vllm_gpu_memory_utilization
        assert init["max_model_len"] == cfg.max_prompt_tokens + cfg.max_completion_length
        assert init["enable_sleep_mode"] is False and init["logprobs_mode"] == "processed_logprobs"
        # The run's seed (trl alone would give rank 0 seed 0 whatever the run's seed) and the
        # trainer's processor bounds reach the engine (olmocr_rl/engines.py).
        assert init["seed"] == 5 and init["mm_processor_kwargs"] == {"min_pixels": 3136, "max_pixels": 6272}
    sent_images, sent_prompts, sampling = _sent(mode)
    completions = cfg.per_device_train_batch_size * cfg.gradient_accumulation_steps  # one generation round
    if mode == "server":
        assert sampling["n"] == cfg.num_generations  # one request per page, 28 samples each
    else:
        assert sampling["n"] == 1 and len(sent_prompts) == completions  # each rank: one request per completion
    assert sampling["temperature"] == cfg.temperature and sampling["top_p"] == cfg.top_p
    assert sampling["max_tokens"] == cfg.max_completion_length
    assert sampling["logprobs"] == 0  # the sampled token's logprob: importance sampling correction
    # Vision placeholders are never sampled (a sampled one breaks the log-prob pass).
    bias = sampling["logit_bias"] if mode == "colocate" else sampling["generation_kwargs"]["logit_bias"]
    assert bias == {259: -100.0, 260: -100.0, 261: -100.0, 262: -100.0}

    rows = read_split(prepared, "train")
    pages = {row["image"]: Image.open(prepared / row["image"]).convert("RGB") for row in rows}
    if mode == "server":
        assert len(sent_images) == len(sent_prompts) == completions // cfg.num_generations
    for imgs, prompt_ids in zip(sent_images, sent_prompts):
        assert len(imgs) == 1
        # The image is one of our prepared pages, pixel for pixel ...
        match = [rel for rel, page in pages.items() if page.size == imgs[0].size and page.tobytes() == imgs[0].convert("RGB").tobytes()]
        assert len(match) == 1, "the image sent is not one of the prepared pages"
        row = next(r for r in rows if r["image"] == match[0])
        # ... and the token ids are what our processor makes of that page and our prompt text, in its layout.
        instruction = V4 if v4 else row["prompt"]
        messages = conversation(instruction, TEXT_FIRST if v4 else IMAGE_FIRST)
        next(part for part in messages[0]["content"] if part["type"] == "image")["image"] = pages[match[0]]
        expected = processor.apply_chat_template([messages], tokenize=True, add_generation_prompt=True, return_dict=True)["input_ids"][0]
        assert list(prompt_ids) == list(expected)
        text = processor.tokenizer.decode(prompt_ids)
        assert instruction in text and text.count("<|image_pad|>") > 1  # placeholders expanded for this image
        assert (text.index(instruction) < text.index("<|vision_start|>")) == bool(v4)

    # The completions the client returned are the ones the rewards scored.
    logged = [json.loads(line) for line in (out / "logs" / "metrics.jsonl").read_text().splitlines()]
    assert any("reward" in rec for rec in logged)
    recorded = list((out / "completions").glob("failing_train*.jsonl"))
    assert recorded and COMPLETION in recorded[0].read_text()
