"""What trl sends to a vLLM server for our prepared pages, captured at trl's client boundary.

trl's server-mode generation (`trl.generation.vllm_generation.VLLMGeneration`) talks to the
server only through `VLLMClient`. Here a recording client replaces it (and vLLM's import check is
answered yes; neither vLLM nor CUDA exists on CI machines), and one real GRPO step of our worker
runs with `use_vllm=true vllm_mode=server` on the tiny model: the images and token ids it sends
must be our prepared page images and the tokens our processor makes of our prompt (the ones
`model.generate` sees: the processor-expanded image placeholders, then the instruction), with our
sampling settings; the completions the client returns are the ones the bench reward scores."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("trl")
torch = pytest.importorskip("torch")

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_train import cfg_for, prepared, tiny_model  # noqa: E402,F401  (session fixtures)

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


def test_trl_sends_our_page_image_and_prompt_tokens(prepared, tiny_model, tmp_path, monkeypatch):
    import trl.generation.vllm_generation as vllm_generation
    from PIL import Image

    from olmocr_rl.train.data import conversation, read_split
    from olmocr_rl.train.modeling import load_processor
    from olmocr_rl.train.worker import run

    preflight = importlib.import_module("olmocr_rl.train.preflight")
    monkeypatch.setattr(preflight, "vllm_problems", lambda cuda: [])  # no vLLM, no CUDA here
    monkeypatch.setattr(vllm_generation, "is_vllm_available", lambda *a, **k: True)
    monkeypatch.setattr(vllm_generation, "VLLMClient", RecordingClient)
    processor = load_processor(str(tiny_model))
    RecordingClient.calls, RecordingClient.tokenizer = [], processor.tokenizer

    out = tmp_path / "run"
    cfg = cfg_for(prepared, tiny_model, out, "use_vllm=true", "vllm_mode=server", "vllm_server_host=10.0.0.7",
                  "vllm_server_port=8123", "max_steps=1", "save_steps=0", "eval_split=none", "final_outputs=none")  # fmt: skip
    summary = run(cfg, final_outputs=False)
    assert summary["global_step"] == 1

    calls = RecordingClient.calls
    assert calls[0][1]["base_url"] == "http://10.0.0.7:8123" and calls[0][1]["timeout"] == cfg.vllm_server_timeout
    pushed = next(c for name, c in calls if name == "update_named_params")
    assert pushed["names"] and len(pushed["names"]) == len(pushed["metadata"])  # the training weights go to the server
    images = [c["images"] for name, c in calls if name == "image_features"]
    generate = [c for name, c in calls if name == "generate"]
    assert len(images) == len(generate) == 1
    sent_images, sent = images[0], generate[0]
    assert sent["n"] == cfg.num_generations and sent["temperature"] == cfg.temperature
    assert sent["max_tokens"] == cfg.max_completion_length and sent["top_p"] == cfg.top_p
    assert sent["logprobs"] == 0  # the sampled token's logprob: importance sampling correction

    rows = read_split(prepared, "train")
    pages = {row["image"]: Image.open(prepared / row["image"]).convert("RGB") for row in rows}
    per_step_pages = cfg.per_device_train_batch_size * cfg.gradient_accumulation_steps // cfg.num_generations
    assert len(sent_images) == len(sent["prompts"]) == per_step_pages
    for imgs, prompt_ids in zip(sent_images, sent["prompts"]):
        assert len(imgs) == 1
        # The image is one of our prepared pages, pixel for pixel ...
        match = [rel for rel, page in pages.items() if page.size == imgs[0].size and page.tobytes() == imgs[0].convert("RGB").tobytes()]
        assert len(match) == 1, "the image sent is not one of the prepared pages"
        row = next(r for r in rows if r["image"] == match[0])
        # ... and the token ids are what our processor makes of that page and our prompt text.
        messages = conversation(row["prompt"])
        messages[0]["content"][0]["image"] = pages[match[0]]
        expected = processor.apply_chat_template([messages], tokenize=True, add_generation_prompt=True, return_dict=True)["input_ids"][0]
        assert list(prompt_ids) == list(expected)
        text = processor.tokenizer.decode(prompt_ids)
        assert row["prompt"] in text and text.count("<|image_pad|>") > 1  # placeholders expanded for this image

    # The completions the client returned are the ones the rewards scored.
    logged = [json.loads(line) for line in (out / "logs" / "metrics.jsonl").read_text().splitlines()]
    assert any("reward" in rec for rec in logged)
    recorded = list((out / "completions").glob("failing_train*.jsonl"))
    assert recorded and COMPLETION in recorded[0].read_text()
