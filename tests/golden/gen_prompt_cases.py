"""Golden prompts: the conversation upstream's GRPO trainer builds for each tested page of
bench_fixtures/, produced by running the reference (allenai/olmocr f7cfe4c,
`olmocr/train/grpo_train.py`'s `OlmOCRBenchDataset`, which renders each page with poppler's
pdftoppm and builds its messages with `build_no_anchoring_v4_yaml_prompt()`), and the text trl makes
of them for the tiny model's chat template (`trl.data_utils.prepare_multimodal_messages` +
`apply_chat_template`, as trl's GRPOTrainer does). Texts are kept as their sha256 only: the
instruction is upstream's, and it is not copied into this repository (olmocr_rl/prompts.py reads it
from the olmocr wheel at run time); the test compares hashes of what we build.

    python tests/golden/gen_prompt_cases.py --ref-tree /tmp/ref_f7 --extra-path /tmp/refdeps \\
        --out tests/golden/prompt_cases.json

The reference needs, beside this project's dev environment (torch, transformers, trl, rapidfuzz):
an extracted checkout (`git -C <upstream clone> archive f7cfe4c | tar -x -C /tmp/ref_f7`), wandb
(which grpo_train.py imports; `pip install --target /tmp/refdeps wandb`, appended to the path so it
shadows nothing) and pdftoppm (Debian's poppler-utils). Dev machines only; CI reads the JSON.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def hashed(messages: list[dict]) -> list[dict]:
    """The messages with every text part's text replaced by its sha256 (`text_sha256`)."""
    out = []
    for m in messages:
        parts = [{"type": "text", "text_sha256": sha256(p["text"])} if p.get("type") == "text" else p for p in m["content"]]
        out.append({**m, "content": parts})
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ref-tree", required=True, type=Path)
    parser.add_argument("--extra-path", action="append", default=[], help="appended to sys.path (wandb)")
    parser.add_argument("--out", required=True, type=Path, help="the golden JSON (the reference's imports print on stdout)")
    args = parser.parse_args()
    version = args.ref_tree / "olmocr" / "version.py"  # generated at upstream build time
    if not version.exists():
        version.write_text('VERSION = "reference"\nVERSION_SHORT = "reference"\n')
    sys.path.insert(0, str(args.ref_tree))
    sys.path.extend(args.extra_path)
    sys.path.insert(0, str(ROOT / "bench_fixtures"))
    from olmocr.train.grpo_train import OlmOCRBenchDataset  # the reference
    from tiny_vlm import build_tiny_vlm
    from transformers import AutoProcessor
    from trl.data_utils import prepare_multimodal_messages

    with tempfile.TemporaryDirectory() as tmp:
        processor = AutoProcessor.from_pretrained(build_tiny_vlm(Path(tmp) / "tiny"))
        dataset = OlmOCRBenchDataset(bench_data_folder=str(ROOT / "bench_fixtures"), processor=None)
        cases = []
        for i in range(len(dataset)):
            item = dataset[i]
            messages = hashed(json.loads(json.dumps(item["prompt"])))  # the reference's, texts hashed
            templated = processor.apply_chat_template(
                prepare_multimodal_messages(json.loads(json.dumps(item["prompt"])), images=[item["image"]]),
                add_generation_prompt=True,
                tokenize=False,
            )
            pdf = Path(item["pdf_path"]).relative_to(ROOT / "bench_fixtures" / "pdfs").as_posix()
            cases.append({"pdf": pdf, "page": dataset.samples[i]["page"], "messages": messages, "templated_sha256": sha256(templated)})
    golden = {"reference": "allenai/olmocr f7cfe4c olmocr/train/grpo_train.py OlmOCRBenchDataset", "cases": cases}
    args.out.write_text(json.dumps(golden, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
