"""The instruction and its place: `--prompt olmocr-v4` (the `olmocr2` recipe's) gives each page the
conversation upstream's GRPO trainer builds, checked against golden values produced by running the
reference (tests/golden/gen_prompt_cases.py: upstream's `OlmOCRBenchDataset` on the fixtures; texts
as sha256, the instruction is not copied into this repository)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from training import FIXTURES

from olmocr_rl.prompts import IMAGE_FIRST, TEXT_FIRST, PromptError, conversation, resolve_prompt

GOLDEN = json.loads((Path(__file__).parent / "golden" / "prompt_cases.json").read_text())["cases"]


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def hashed(messages: list[dict]) -> list[dict]:
    return [
        {**m, "content": [{"type": "text", "text_sha256": sha256(p["text"])} if p["type"] == "text" else p for p in m["content"]]}
        for m in messages
    ]


@pytest.fixture(scope="module")
def prepared_v4(tmp_path_factory) -> Path:
    from olmocr_rl.prepare import PrepareOptions, prepare

    p = resolve_prompt("olmocr-v4")
    out = tmp_path_factory.mktemp("v4") / "prep"
    prepare(FIXTURES, out, PrepareOptions(longest_side=140, workers=1, prompt=p.text, prompt_name=p.name, prompt_layout=p.layout),
            progress=False)  # fmt: skip
    return out


def trl_text(processor, messages: list[dict], image) -> str:
    """The prompt text trl's GRPOTrainer makes of a conversational prompt with its image."""
    from trl.data_utils import prepare_multimodal_messages

    return processor.apply_chat_template(prepare_multimodal_messages(json.loads(json.dumps(messages)), images=[image]),
                                         add_generation_prompt=True, tokenize=False)  # fmt: skip


def test_olmocr_v4_is_read_from_the_olmocr_wheel_text_first():
    p = resolve_prompt("olmocr-v4")
    assert p.layout == TEXT_FIRST and "build_no_anchoring_v4_yaml_prompt" in p.source
    assert {sha256(p.text)} == {part["text_sha256"] for c in GOLDEN for part in c["messages"][0]["content"] if part["type"] == "text"}
    assert resolve_prompt().layout == IMAGE_FIRST and resolve_prompt("olmocr-rl").name == "olmocr-rl"
    with pytest.raises(PromptError, match="unknown prompt 'olmocr-v5'"):
        resolve_prompt("olmocr-v5")


def test_each_page_gets_upstreams_conversation(prepared_v4, tiny_model):
    """For every tested page of the fixtures: the messages (order included) and the text trl
    templates from them equal the reference's."""
    from transformers import AutoProcessor

    from olmocr_rl.prepared import read_split
    from olmocr_rl.train.data import build_dataset

    processor = AutoProcessor.from_pretrained(tiny_model)
    rows = read_split(prepared_v4, "train")
    dataset = build_dataset(prepared_v4, rows)
    ours = {(r["pdf"], r["page"]): dataset[i] for i, r in enumerate(rows)}
    assert set(ours) == {(c["pdf"], c["page"]) for c in GOLDEN}
    for case in GOLDEN:
        item = ours[(case["pdf"], case["page"])]
        assert hashed(item["prompt"]) == case["messages"], case["pdf"]
        assert sha256(trl_text(processor, item["prompt"], item["image"])) == case["templated_sha256"], case["pdf"]


def test_the_run_config_prompt_overrides_a_folder_prepared_with_ours(tmp_path):
    """`prompt: olmocr-v4` in the training config (the olmocr2 recipe) reaches the dataset even when
    the folder was prepared with this project's own instruction."""
    from olmocr_rl.prepare import PrepareOptions, prepare
    from olmocr_rl.prepared import read_split
    from olmocr_rl.train.data import build_dataset

    prepare(FIXTURES, tmp_path / "prep", PrepareOptions(longest_side=140, workers=1), progress=False)
    rows = read_split(tmp_path / "prep", "train")
    default = build_dataset(tmp_path / "prep", rows)[0]["prompt"]
    assert [p["type"] for p in default[0]["content"]] == ["image", "text"]
    v4 = build_dataset(tmp_path / "prep", rows, resolve_prompt("olmocr-v4"))[0]["prompt"]
    assert hashed(v4) == GOLDEN[0]["messages"]


def test_layouts():
    assert [p["type"] for p in conversation("x")[0]["content"]] == ["image", "text"]
    assert [p["type"] for p in conversation("x", TEXT_FIRST)[0]["content"]] == ["text", "image"]
