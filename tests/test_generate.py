"""`olmocr-rl generate`: a model's transcriptions of a bench folder's tested pages, written as
the candidate files `olmocr-rl bench` reads; resumable, per-page errors recorded, front matter
parsed off; the vLLM engine at its boundary."""

from __future__ import annotations

import json
import shutil
import sys
import types
from pathlib import Path

import pytest
from conftest import need

need("transformers")

from clirun import invoke

from olmocr_rl.generate import page_file, page_text, transcribe

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    sys.path.insert(0, str(ROOT / "bench_fixtures"))
    from tiny_vlm import build_tiny_vlm

    return build_tiny_vlm(tmp_path_factory.mktemp("tiny") / "model")


def bench_copy(dst: Path) -> Path:
    shutil.copytree(ROOT / "bench_fixtures", dst, ignore=shutil.ignore_patterns("demo_model", "other_model", "*.py", "*.yaml"))
    return dst


def expected_files(bench: Path, repeats: int) -> set[str]:
    pages = set()
    for f in bench.glob("*.jsonl"):
        for line in f.read_text().splitlines():
            if line.strip():
                t = json.loads(line)
                pages.add((t["pdf"], t["page"]))
    return {page_file(pdf, page, m) for pdf, page in pages for m in range(1, repeats + 1)}


def written(folder: Path) -> dict[str, float]:
    return {p.relative_to(folder).as_posix(): p.stat().st_mtime_ns for p in folder.rglob("*.md") if ".render" not in p.parts}


def test_generate_writes_what_bench_reads_and_resumes(tiny, tmp_path):
    bench = bench_copy(tmp_path / "bench")
    args = ["generate", str(tiny), str(bench), "--candidate", "tiny", "--repeats", "2", "--max-new-tokens", "8",
            "--longest-side", "112", "--quiet"]  # fmt: skip
    res = invoke(args)
    assert res.exit_code == 0, res.output
    files = written(bench / "tiny")
    assert set(files) == expected_files(bench, 2)
    summary = json.loads((bench / "tiny" / "_generate.json").read_text())
    assert summary["written"] == len(files) and summary["errors"] == [] and summary["options"]["repeats"] == 2
    scored = invoke(["bench", str(bench), "--candidate", "tiny", "--json"])
    assert scored.exit_code == 0, scored.output
    assert "tiny" in scored.stdout and "no page files" not in scored.output
    # A second run has nothing to do.
    again = invoke(args)
    assert again.exit_code == 0 and written(bench / "tiny") == files
    assert json.loads((bench / "tiny" / "_generate.json").read_text())["skipped"] == len(files) // 2


def test_bad_model_and_unreadable_pdf(tiny, tmp_path):
    bench = bench_copy(tmp_path / "bench")
    res = invoke(["generate", str(tmp_path / "no-such-model"), str(bench), "--quiet", "--longest-side", "112"])
    assert res.exit_code == 1 and "error: " in res.stderr and "no-such-model" in res.stderr
    assert "Traceback" not in res.output
    (bench / "pdfs" / "broken.pdf").write_bytes(b"%PDF-1.4 not really")
    (bench / "broken_tests.jsonl").write_text(
        json.dumps({"pdf": "broken.pdf", "page": 1, "id": "b1", "type": "present", "text": "x"}) + "\n"
    )
    res = invoke(["generate", str(tiny), str(bench), "--candidate", "c", "--max-new-tokens", "4", "--longest-side", "112", "--quiet"])
    assert res.exit_code == 0, res.output
    assert "problem(s)" in res.stderr and "skipped" in res.stderr
    assert set(written(bench / "c")) == expected_files(bench, 1) - {page_file("broken.pdf", 1, 1)}


def test_a_failing_page_is_recorded_and_the_rest_written(tmp_path):
    from PIL import Image

    rows = []
    for i in range(5):
        Image.new("RGB", (10, 10), (i, i, i)).save(tmp_path / f"{i}.png")
        rows.append({"pdf": f"d{i}.pdf", "page": 1, "image": f"{i}.png", "prompt": "p"})

    def generate(images, prompts, temperature):
        if any(im.getpixel((0, 0))[0] == 3 for im in images):
            raise RuntimeError("CUDA out of memory")
        return [
            "---\nprimary_language: en\nis_rotation_valid: true\nrotation_correction: 0\nis_table: false\nis_diagram: false\n---\nHello"
        ] * len(images)

    out = tmp_path / "out"
    summary = transcribe(generate, tmp_path, rows, out, batch_size=2)
    assert summary["errors"] == [{"pdf": "d3.pdf", "page": 1, "error": "RuntimeError: CUDA out of memory"}]
    assert sorted(p.name for p in out.glob("*.md")) == [f"d{i}_pg1_repeat1.md" for i in (0, 1, 2, 4)]
    assert (out / "d0_pg1_repeat1.md").read_text() == "Hello"  # front matter parsed off
    assert summary["parsed"] == 4
    raw = transcribe(generate, tmp_path, rows[:1], tmp_path / "raw", raw=True)
    assert (tmp_path / "raw" / "d0_pg1_repeat1.md").read_text().startswith("---\n") and raw["unparsed"] == 1
    assert page_text("no front matter") == ("no front matter", False)


def test_vllm_engine_at_its_boundary(tiny, tmp_path, monkeypatch):
    """With `--engine vllm` our rendered page and our prompt (through the model's chat template)
    reach vLLM's offline engine; a recording `vllm` module stands in for the real one."""
    calls: dict = {}

    class LLM:
        def __init__(self, **kwargs):
            calls["init"] = kwargs

        def generate(self, requests, params, use_tqdm=True):
            calls.setdefault("requests", []).extend(requests)
            calls["params"] = params
            return [types.SimpleNamespace(outputs=[types.SimpleNamespace(text="from vllm")]) for _ in requests]

    fake = types.ModuleType("vllm")
    fake.LLM = LLM
    fake.SamplingParams = lambda **kw: kw
    monkeypatch.setitem(sys.modules, "vllm", fake)
    bench = bench_copy(tmp_path / "bench")
    res = invoke(["generate", str(tiny), str(bench), "--engine", "vllm", "--candidate", "v", "--max-new-tokens", "64",
                  "--longest-side", "112", "--quiet"])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert calls["init"]["model"] == str(tiny) and calls["init"]["seed"] == 0
    assert calls["init"]["enforce_eager"] is True  # no CUDA here: eager unless --no-eager
    # The placeholders are never sampled; the context is the longest prompt plus the new tokens.
    assert calls["params"] == {"temperature": 0.0, "max_tokens": 64, "logit_bias": {261: -100.0, 262: -100.0, 259: -100.0, 260: -100.0}}
    from olmocr_rl.modeling import load_processor

    processor = load_processor(str(tiny))
    longest = max(len(processor(text=[r["prompt"]], images=[r["multi_modal_data"]["image"]])["input_ids"][0]) for r in calls["requests"])
    assert calls["init"]["max_model_len"] == longest + 64
    from PIL import Image

    from olmocr_rl.prompts import DEFAULT_PROMPT

    rendered = {p.name: Image.open(p).convert("RGB").tobytes() for p in (bench / "v" / ".render" / "images").rglob("*.png")}
    for req in calls["requests"]:
        assert DEFAULT_PROMPT in req["prompt"] and "<|vision_start|>" in req["prompt"]
        assert req["multi_modal_data"]["image"].tobytes() in rendered.values()
    assert all(p.read_text() == "from vllm" for p in (bench / "v").glob("*.md"))
    assert set(written(bench / "v")) == expected_files(bench, 1)
