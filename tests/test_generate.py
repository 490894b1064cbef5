"""`olmocr-rl generate`: a model's transcriptions of a bench folder's tested pages, written as
the candidate files `olmocr-rl bench` reads; resumable, per-page errors recorded, front matter
parsed off; the vLLM engine at its boundary."""

from __future__ import annotations

import json
import os
import shutil
import sys
import types
from pathlib import Path

import pytest
from conftest import need

need("transformers")

from clirun import invoke

from olmocr_rl.engines import Engine, sample_seed
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


def pages_of(bench: Path) -> set[tuple[str, int]]:
    pages = set()
    for f in bench.glob("*.jsonl"):
        for line in f.read_text().splitlines():
            if line.strip():
                t = json.loads(line)
                pages.add((t["pdf"], t["page"]))
    return pages


def expected_files(bench: Path, repeats: int) -> set[str]:
    return {page_file(pdf, page, m) for pdf, page in pages_of(bench) for m in range(1, repeats + 1)}


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

    def generate(images, prompts, temperature, seeds):
        if any(im.getpixel((0, 0))[0] == 3 for im in images):
            raise RuntimeError("CUDA out of memory")
        return [
            "---\nprimary_language: en\nis_rotation_valid: true\nrotation_correction: 0\nis_table: false\nis_diagram: false\n---\nHello"
        ] * len(images)

    out = tmp_path / "out"
    engine = Engine(generate, lambda texts: [len(t) for t in texts])  # several pages per call, as vLLM
    summary = transcribe(engine, tmp_path, rows, out, batch_size=2)
    assert summary["errors"] == [{"pdf": "d3.pdf", "page": 1, "error": "RuntimeError: CUDA out of memory"}]
    assert sorted(p.name for p in out.glob("*.md")) == [f"d{i}_pg1_repeat1.md" for i in (0, 1, 2, 4)]
    assert (out / "d0_pg1_repeat1.md").read_text() == "Hello"  # front matter parsed off
    assert summary["parsed"] == 4
    raw = transcribe(engine, tmp_path, rows[:1], tmp_path / "raw", raw=True)
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
    bias = {261: -100.0, 262: -100.0, 259: -100.0, 260: -100.0}
    assert [{k: v for k, v in p.items() if k != "seed"} for p in calls["params"]] == [{"temperature": 0.0, "max_tokens": 64,
                                                                                       "logit_bias": bias}] * 4  # fmt: skip
    # Each request carries its page's seed (the run's seed, 0, and the page).
    assert sorted(p["seed"] for p in calls["params"]) == sorted(sample_seed(0, pdf, page, 0) for pdf, page in pages_of(bench))
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


# ---------------------------------------------------------------------------------------------
# each option for its effect (tests/test_options.py lists which test covers which option)
# ---------------------------------------------------------------------------------------------

SMALL = ["--max-new-tokens", "8", "--longest-side", "112", "--quiet"]


def texts(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): p.read_text() for p in folder.rglob("*.md") if ".render" not in p.parts}


def by_page(files: dict[str, str]) -> dict[str, list[str]]:
    pages: dict[str, list[str]] = {}
    for name in sorted(files):
        pages.setdefault(name.rsplit("_repeat", 1)[0], []).append(files[name])
    return pages


def test_temperature_samples_each_repeat_and_seed_fixes_them(tiny, tmp_path):
    """--temperature > 0: each repeat is its own sample (the pages' repeats differ), the same
    --seed gives the same files, another seed others; greedy (0) repeats are one text copied."""
    bench = bench_copy(tmp_path / "bench")
    run = ["generate", str(tiny), str(bench), *SMALL, "--repeats", "3"]
    assert invoke([*run, "--candidate", "greedy"]).exit_code == 0
    assert all(len(set(r)) == 1 for r in by_page(texts(bench / "greedy")).values())
    for name, seed in (("s1", "1"), ("s1again", "1"), ("s2", "2")):
        res = invoke([*run, "--candidate", name, "--temperature", "1.0", "--seed", seed])
        assert res.exit_code == 0, res.output
    sampled = by_page(texts(bench / "s1"))
    assert len(sampled) == 4 and all(len(set(r)) > 1 for r in sampled.values()), sampled
    assert texts(bench / "s1") == texts(bench / "s1again")
    assert texts(bench / "s1") != texts(bench / "s2")


def test_a_page_missing_one_repeat_is_generated_again_and_only_it(tiny, tmp_path):
    """Partial resume of a sampled run: the page whose second repeat is gone is transcribed again
    (all its repeats), the other pages are left as they were."""
    bench = bench_copy(tmp_path / "bench")
    run = ["generate", str(tiny), str(bench), *SMALL, "--repeats", "3", "--temperature", "1.0", "--candidate", "c"]
    assert invoke(run).exit_code == 0
    before = written(bench / "c")
    gone = sorted(before)[1]
    assert gone.endswith("_repeat2.md")
    (bench / "c" / gone).unlink()
    res = invoke(run)
    assert res.exit_code == 0, res.output
    after = written(bench / "c")
    assert set(after) == set(before)
    page = gone.rsplit("_repeat", 1)[0]
    assert {k for k in after if after[k] != before[k]} <= {f"{page}_repeat{m}.md" for m in (1, 2, 3)}
    assert {k: v for k, v in after.items() if not k.startswith(page)} == {k: v for k, v in before.items() if not k.startswith(page)}
    summary = json.loads((bench / "c" / "_generate.json").read_text())
    assert (summary["skipped"], summary["written"]) == (3, 3)


def test_batch_size_is_the_pages_per_generate_call(tiny, tmp_path, monkeypatch):
    """--batch-size pages per call with vLLM (a stand-in `vllm` module: each request carries its own
    seed); the transformers engine samples a call from one random stream, so it generates one page
    per call whatever --batch-size (docs/training.md: the cost of per-page seeds)."""
    import olmocr_rl.engines as engines

    calls: list[int] = []
    real = engines.transformers_generate

    def recording(*args, **kwargs):
        inner = real(*args, **kwargs)

        def generate_fn(images, prompts, temperature, seeds):
            calls.append(len(images))
            return inner(images, prompts, temperature, seeds)

        return generate_fn

    monkeypatch.setattr(engines, "transformers_generate", recording)
    bench = bench_copy(tmp_path / "bench")
    for size in ("1", "8"):
        calls.clear()
        res = invoke(["generate", str(tiny), str(bench), *SMALL, "--batch-size", size, "--candidate", f"b{size}"])
        assert res.exit_code == 0, res.output
        assert calls == [1, 1, 1, 1], (size, calls)
    vllm = fake_vllm(monkeypatch, "text")
    for size, expected in (("3", [3, 1]), ("1", [1, 1, 1, 1]), ("8", [4])):
        res = invoke(["generate", str(tiny), str(bench), *SMALL, "--engine", "vllm", "--batch-size", size, "--candidate", f"v{size}"])
        assert res.exit_code == 0, res.output
        assert [len(r) for r in vllm[-1]["calls"]] == expected, (size, vllm[-1]["calls"])


def fake_vllm(monkeypatch, text: str) -> list[dict]:
    """A recording `vllm` module: per engine built, its keyword arguments and the requests of each call."""
    engines: list[dict] = []

    class LLM:
        def __init__(self, **kwargs):
            engines.append({"init": kwargs, "calls": [], "params": []})

        def generate(self, requests, params, use_tqdm=True):
            engines[-1]["calls"].append(list(requests))
            engines[-1]["params"].append(list(params))
            return [types.SimpleNamespace(outputs=[types.SimpleNamespace(text=text)]) for _ in requests]

    fake = types.ModuleType("vllm")
    fake.LLM = LLM
    fake.SamplingParams = lambda **kw: kw
    monkeypatch.setitem(sys.modules, "vllm", fake)
    return engines


def test_max_new_tokens_and_longest_side(tiny, tmp_path):
    """Each of the tiny model's tokens is one byte: K tokens are at most K characters. The pages
    are rendered with the longest side asked for."""
    from PIL import Image

    bench = bench_copy(tmp_path / "bench")
    for k, side in ((2, 84), (12, 140)):
        res = invoke(["generate", str(tiny), str(bench), "--max-new-tokens", str(k), "--longest-side", str(side), "-q", "-c", f"k{k}"])
        assert res.exit_code == 0, res.output
        assert all(len(t) <= k for t in texts(bench / f"k{k}").values())
        sizes = [Image.open(p).size for p in (bench / f"k{k}" / ".render" / "images").rglob("*.png")]
        assert sizes and all(max(s) == side for s in sizes), sizes
    assert max(len(t) for t in texts(bench / "k12").values()) > 2


FRONT_MATTER = "---\nprimary_language: en\nis_rotation_valid: true\nrotation_correction: 0\nis_table: false\nis_diagram: false\n---\n"


def test_what_reaches_the_vllm_engine(tiny, tmp_path, monkeypatch):
    """With a recording `vllm` module: --raw keeps the front matter the default parses off,
    --prompt-file and --prompt choose the instruction, --temperature, --seed, --no-eager and
    --tensor-parallel reach the engine as asked."""
    calls: list[dict] = []

    class LLM:
        def __init__(self, **kwargs):
            calls.append({"init": kwargs, "requests": [], "params": None})

        def generate(self, requests, params, use_tqdm=True):
            calls[-1]["requests"] += requests
            calls[-1]["params"] = params
            return [types.SimpleNamespace(outputs=[types.SimpleNamespace(text=FRONT_MATTER + "Page text")]) for _ in requests]

    fake = types.ModuleType("vllm")
    fake.LLM = LLM
    fake.SamplingParams = lambda **kw: kw
    monkeypatch.setitem(sys.modules, "vllm", fake)
    bench = bench_copy(tmp_path / "bench")
    base = ["generate", str(tiny), str(bench), "--engine", "vllm", "--max-new-tokens", "8", "--longest-side", "112", "-q"]
    assert invoke([*base, "-c", "parsed"]).exit_code == 0
    assert set(texts(bench / "parsed").values()) == {"Page text"}
    assert invoke([*base, "-c", "raw", "--raw"]).exit_code == 0
    assert set(texts(bench / "raw").values()) == {FRONT_MATTER + "Page text"}
    assert (calls[0]["init"]["seed"], calls[0]["init"]["enforce_eager"], calls[0]["params"][0]["temperature"]) == (0, True, 0.0)
    assert calls[0]["init"]["use_tqdm_on_load"] is False  # -q: no "Loading safetensors checkpoint shards" bar from vLLM

    instruction = tmp_path / "prompt.txt"
    instruction.write_text("Say what the page says, nothing else.")
    res = invoke([*base, "-c", "custom", "--prompt-file", str(instruction), "--temperature", "0.7", "--seed", "5", "--no-eager",
                  "--tensor-parallel", "2"])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert calls[-1]["requests"] and all("Say what the page says, nothing else." in r["prompt"] for r in calls[-1]["requests"])
    assert (calls[-1]["init"]["seed"], calls[-1]["init"]["enforce_eager"], calls[-1]["params"][0]["temperature"]) == (5, False, 0.7)
    assert calls[-1]["init"]["tensor_parallel_size"] == 2 and calls[0]["init"]["tensor_parallel_size"] == 1  # one engine on 2 GPUs

    from olmocr_rl.prompts import resolve_prompt

    res = invoke([*base, "-c", "v4", "--prompt", "olmocr-v4"])
    assert res.exit_code == 0, res.output
    v4 = resolve_prompt("olmocr-v4").text
    assert all(v4 in r["prompt"] and "Say what the page" not in r["prompt"] for r in calls[-1]["requests"])
    assert all(v4 not in r["prompt"] for r in calls[0]["requests"])  # the default is ours


def test_ctrl_c_says_what_was_written_and_how_to_go_on(tiny, tmp_path, monkeypatch):
    """Ctrl-C (a KeyboardInterrupt where the engine generates) after the first page: status 130 and
    one line with the files written and that the same command goes on, which it does (skipping the
    page done). Before any page is written: that nothing was, and no candidate folder is left."""
    stop_at: list[int] = [1]

    class LLM:
        def __init__(self, **kwargs):
            self.calls = 0

        def generate(self, requests, params, use_tqdm=True):
            self.calls += 1
            if self.calls > stop_at[0]:
                raise KeyboardInterrupt
            return [types.SimpleNamespace(outputs=[types.SimpleNamespace(text=FRONT_MATTER + "Page text")]) for _ in requests]

    fake = types.ModuleType("vllm")
    fake.LLM = LLM
    fake.SamplingParams = lambda **kw: kw
    monkeypatch.setitem(sys.modules, "vllm", fake)
    bench = bench_copy(tmp_path / "bench")
    args = [
        "generate",
        str(tiny),
        str(bench),
        "--engine",
        "vllm",
        "--max-new-tokens",
        "8",
        "--longest-side",
        "84",
        "--batch-size",
        "1",
        "-q",
    ]
    res = invoke([*args, "-c", "c"])
    assert res.exit_code == 130 and res.stderr.strip().splitlines()[-1] == (
        f"error: interrupted: 1 page file(s) are written in {bench / 'c'}; the same command again transcribes only the rest"
    ), res.stderr
    stop_at[0] = 100
    res = invoke([*args, "-c", "c"])
    assert res.exit_code == 0 and "3 files written, 1 pages already done" in res.stdout, res.output
    stop_at[0] = 0
    res = invoke([*args, "-c", "d"])
    assert res.exit_code == 130 and "interrupted before any page was transcribed: nothing was written" in res.stderr, res.stderr
    assert not (bench / "d").exists()


def test_quiet_hides_the_progress_bar(tiny, tmp_path, monkeypatch):
    """A progress bar (rich's) is started and advanced to every page, except with --quiet; which
    also silences the weight-loading bars (transformers' "Loading weights", huggingface_hub's), for
    this command only."""
    import huggingface_hub.utils as hub_utils
    import rich.progress
    from transformers.utils import logging as hf_logging

    before = hf_logging.is_progress_bar_enabled(), hub_utils.are_progress_bars_disabled()
    hf_logging.enable_progress_bar()  # as a fresh process has it (an earlier test may have switched it off)

    bars: list[dict] = []

    class Recording(rich.progress.Progress):
        def start(self):
            bars.append({"updates": []})

        def update(self, task_id, **kwargs):
            bars[-1]["updates"].append(kwargs.get("completed"))

        def stop(self):
            bars[-1]["stopped"] = True

    monkeypatch.setattr(rich.progress, "Progress", Recording)
    bench = bench_copy(tmp_path / "bench")
    args = ["generate", str(tiny), str(bench), "--max-new-tokens", "2", "--longest-side", "84", "--batch-size", "2"]
    try:
        shown = invoke([*args, "-c", "a"])
        assert shown.exit_code == 0 and "Loading weights" in shown.stderr, shown.stderr
        assert bars == [{"updates": [1, 2, 3, 4], "stopped": True}]  # the transformers engine: one page a call
        quiet = invoke([*args, "-c", "b", "--quiet"])
        assert quiet.exit_code == 0 and "Loading weights" not in quiet.stderr and "%|" not in quiet.stderr, quiet.stderr
        assert len(bars) == 1
        assert hub_utils.are_progress_bars_disabled() and "OLMOCR_RL_QUIET" not in os.environ  # the environment as it was
    finally:
        hf_logging.enable_progress_bar() if before[0] else hf_logging.disable_progress_bar()
        hub_utils.disable_progress_bars() if before[1] else hub_utils.enable_progress_bars()


# ---------------------------------------------------------------------------------------------
# the loop stop (olmocr_rl/loops.py): exact where the loop goes on, which is why it is off by default
# ---------------------------------------------------------------------------------------------


def verdicts(bench: Path, candidate: str) -> dict[tuple[str, str], bool]:
    details = bench.parent / f"{candidate}.details.jsonl"
    res = invoke(["bench", str(bench), "--candidate", candidate, "--details", str(details)])
    assert res.exit_code == 0, res.output
    return {(r["id"], r["md"]): r["passed"] for r in map(json.loads, details.read_text().splitlines())}


def test_stop_loops_writes_the_full_runs_files_where_the_loop_goes_on(tmp_path):
    """Greedy decoding on every fixture page, the full run (48 tokens) against --stop-loops. The
    loops_forever model (attention zeroed: it never leaves a loop): every page is stopped, and its
    file and verdicts are the full run's, byte for byte and test for test; the summary counts the
    stops and the decode tokens saved. (The stock tiny model leaves some of its loops before the
    limit, and there the stop writes another file than the full run: benchmarks/bench_loops.py shows
    it page by page, and it is why `generate` leaves the stop off by default.)"""
    from training import build_model

    forever = build_model(tmp_path / "forever", loops_forever=True)
    bench = bench_copy(tmp_path / "bench")
    base = ["generate", "--max-new-tokens", "48", "--longest-side", "84", "-q"]
    for extra, kind in (([], "full"), (["--stop-loops", "--loop-rule", "min_span=16", "--loop-rule", "min_repeats=2"], "stop")):
        res = invoke([*base, str(forever), str(bench), "-c", f"forever-{kind}", *extra])
        assert res.exit_code == 0, res.output
    full, stopped = texts(bench / "forever-full"), texts(bench / "forever-stop")
    assert full == stopped and len(full) == 4
    assert verdicts(bench, "forever-full") == verdicts(bench, "forever-stop")
    loops = json.loads((bench / "forever-stop" / "_generate.json").read_text())["loops"]
    assert loops["completions"] == loops["stopped"] == 4
    assert loops["saved"] == 4 * 48 - loops["tokens"] > 0 and 0 < loops["loop_tokens"] < loops["tokens"]
    assert "loops" not in json.loads((bench / "forever-full" / "_generate.json").read_text())


def test_stop_loops_reaches_the_vllm_engine(tiny, tmp_path, monkeypatch):
    """With --engine vllm and --stop-loops: the logits processor is loaded at engine start, every
    request carries the rule and the end token, and a completion returned ending in the end token the
    processor forced after a loop is written as the loop run on to the limit; one without a loop as
    vLLM's text (a recording `vllm` module)."""
    import vllm_interface

    from olmocr_rl.loops import rule_from_extra_args
    from olmocr_rl.modeling import load_processor

    tok = load_processor(str(tiny)).tokenizer
    looping = tok("Hi" + "abc" * 20, add_special_tokens=False)["input_ids"] + [tok.eos_token_id]  # forced end token after the cut
    engines: list[dict] = []

    class LLM:
        def __init__(self, **kwargs):
            engines.append({"init": kwargs, "params": []})

        def generate(self, requests, params, use_tqdm=True):
            engines[-1]["params"] += params
            out = [types.SimpleNamespace(text="Hiabc...", token_ids=looping), types.SimpleNamespace(text="plain", token_ids=[1, 2, 3])]
            return [types.SimpleNamespace(outputs=[out[(len(engines[-1]["params"]) - i) % 2]]) for i in range(len(requests))]

    fake = types.ModuleType("vllm")
    fake.LLM = LLM
    fake.SamplingParams = lambda **kw: kw
    vllm_interface.install(monkeypatch, fake)
    bench = bench_copy(tmp_path / "bench")
    res = invoke(["generate", str(tiny), str(bench), "--engine", "vllm", "-c", "v", "--max-new-tokens", "100", "--longest-side", "84",
                  "-q", "--batch-size", "1", "--stop-loops", "--loop-rule", "min_span=32", "--loop-rule", "max_period=16"])  # fmt: skip
    assert res.exit_code == 0, res.output
    (engine,) = engines
    assert [c.__name__ for c in engine["init"]["logits_processors"]] == ["LoopStopProcessor"]
    rules = {rule_from_extra_args(p["extra_args"]) for p in engine["params"]}
    assert len(rules) == 1 and next(iter(rules))[1] == 258 and next(iter(rules))[0].min_span == 32
    written_texts = sorted(texts(bench / "v").values())
    assert written_texts[0] == "Hi" + ("abc" * 40)[:98] and written_texts[-1] == "plain"
    assert "loops: 2 of 4 completions stopped" in res.stdout
