"""`olmocr-rl train`: config loading and overrides, the GRPOConfig builder, pre-flight checks, and
real (tiny) GRPO runs on CPU with the bench reward on fixture data: metrics, checkpoint, resume,
LoRA, outputs that `olmocr-rl bench` scores."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import need

need("trl")
need("torch")

from clirun import invoke
from training import RECIPE, build_model, cfg_for, tree_digest

from olmocr_rl.errors import ConfigError
from olmocr_rl.train.config import TrainConfig, load_config
from olmocr_rl.train.grpo import build_grpo_config, grpo_kwargs
from olmocr_rl.train.preflight import errors, preflight

PROMPT = "Transcribe this page as markdown."


# ---------------------------------------------------------------------------------------------
# config, builder, pre-flight (no training)
# ---------------------------------------------------------------------------------------------


def test_config_file_unknown_key_is_rejected_with_suggestion(tmp_path):
    f = tmp_path / "recipe.yaml"
    f.write_text("num_generation: 8\nlearning_rate: 1e-6\n")
    with pytest.raises(ConfigError, match=r"unknown key 'num_generation'.*did you mean 'num_generations'"):
        load_config(f, prepared_dir="p", model="m", output_dir="o")
    t = tmp_path / "recipe.toml"
    t.write_text("[rewards]\nbench = 1.0\nbogus = 2.0\n")
    with pytest.raises(ConfigError, match="unknown reward 'bogus'"):
        load_config(t, prepared_dir="p", model="m", output_dir="o")


def test_config_file_then_overrides_then_explicit(tmp_path):
    f = tmp_path / "recipe.toml"
    f.write_text('num_generations = 8\ntemperature = 0.7\nreport_to = ["wandb"]\n[rewards]\nbench-macro = 1.0\n')
    cfg = load_config(
        f, ["temperature=0.9", "rewards.eos=0.25", "trl.top_k=7", "lora=true"], prepared_dir="p", model="m", output_dir="o", resume=None
    )
    assert cfg.num_generations == 8 and cfg.temperature == 0.9 and cfg.lora is True
    assert cfg.rewards == {"bench-macro": 1.0, "eos": 0.25} and cfg.trl["top_k"] == 7 and cfg.report_to == ["wandb"]
    # The resolved config states the options our code reads at top level, any other trl option under trl:.
    assert cfg.to_dict()["trl"] == {"top_k": 7} and cfg.to_dict()["num_generations"] == 8
    # Defaults follow olmOCR 2's recipe.
    d = TrainConfig()
    assert (d.num_generations, d.beta, d.temperature, d.loss_type, d.max_completion_length) == (28, 0.0, 0.8, "bnpo", 8000)
    with pytest.raises(ConfigError, match="num_generations must be int"):
        load_config(None, ["num_generations=many"], prepared_dir="p", model="m", output_dir="o")
    with pytest.raises(ConfigError, match="model is required"):
        load_config(None, [], prepared_dir="p", output_dir="o")


def test_builder_makes_a_cpu_grpo_config(tmp_path):
    cfg = load_config(RECIPE, ["rewards.eos=0.5", "trl.top_k=3"], prepared_dir="p", model="m", output_dir=str(tmp_path))
    args = build_grpo_config(cfg, cuda=False)
    assert args.num_generations == 4 and args.max_completion_length == 16 and args.top_k == 3
    assert args.reward_weights == [1.0, 0.5] and args.remove_unused_columns is False
    assert args.use_cpu is True and args.bf16 is False and args.beta == 0.0 and args.loss_type == "bnpo"
    assert args.generation_batch_size == 4 and args.eval_strategy == "steps" and args.eval_steps == 2
    assert args.vllm_mode == "colocate" and args.save_steps == 2
    # Several CPU ranks need gloo, or accelerate reports one process while torch.distributed has N.
    ddp = grpo_kwargs(cfg, cuda=False, world_size=2, deepspeed=False)
    assert ddp["ddp_backend"] == "gloo" and ddp["use_cpu"] is True  # accelerate: MULTI_CPU, else gather is a no-op
    zero = grpo_kwargs(cfg, cuda=False, world_size=2, deepspeed=True)
    assert zero["ddp_backend"] == "gloo" and "use_cpu" not in zero  # use_cpu would switch DeepSpeed off
    assert "ddp_backend" not in grpo_kwargs(cfg, cuda=True, world_size=2)
    assert grpo_kwargs(cfg, cuda=True)["bf16"] is True
    cfg.trl = {"top_kk": 1}
    with pytest.raises(ConfigError, match=r"trl.top_kk: not a GRPOConfig option.*'top_k'"):
        build_grpo_config(cfg, cuda=False)
    vcfg = load_config(None, ["use_vllm=true", "vllm_importance_sampling_cap=2.5"], prepared_dir="p", model="m", output_dir="o")
    kw = grpo_kwargs(vcfg, cuda=True)
    assert kw["vllm_importance_sampling_clip_max"] == 2.5 and kw["vllm_max_model_length"] == 3000 + 8000


def test_preflight_rejects_bad_batch_and_names_the_fix(prepared, tmp_path):
    cfg = load_config(None, ["gradient_accumulation_steps=8"], prepared_dir=str(prepared), model="m", output_dir=str(tmp_path))
    found = errors(preflight(cfg, 1, prepared))
    assert [p.key for p in found] == ["num_generations"]
    assert "= 8 is not divisible by num_generations (28)" in found[0].message
    assert "gradient_accumulation_steps=28" in found[0].fix and "num_generations=8" in found[0].fix
    assert not errors(preflight(cfg, 7, prepared))  # olmOCR's 7 GPUs x 1 x 8 = 56 = 2 x 28

    bad = cfg_for(
        prepared,
        "m",
        tmp_path,
        "per_device_eval_batch_size=3",
        "rewards.bench=0",
        "max_prompt_tokens=30",
        "use_vllm=true",
        "vllm_tensor_parallel_size=3",
    )
    keys = {p.key: p for p in errors(preflight(bad, 2, prepared))}
    assert "per_device_eval_batch_size" in keys and "multiple of 2" in keys["per_device_eval_batch_size"].fix
    assert "rewards" in keys and "max_prompt_tokens" in keys and "vllm_tensor_parallel_size" in keys
    assert "prepare with a smaller --longest-side" in keys["max_prompt_tokens"].fix
    assert errors(preflight(cfg, 7, tmp_path / "nowhere"))[0].key == "prepared_dir"


def test_cli_dry_run_prints_the_plan_and_rejects_bad_batches(prepared, tiny_model, tmp_path):
    out = tmp_path / "run"
    res = invoke(
        [
            "train",
            str(prepared),
            "--model",
            str(tiny_model),
            "-o",
            str(out),
            "--dry-run",
            "num_generations=4",
            "gradient_accumulation_steps=8",
        ]
    )
    assert res.exit_code == 0, res.output
    assert "world size: 1" in res.output and "= 8 completions = 2 pages x 4 generations" in res.output
    assert "command: this process trains (config" in res.output and not out.exists()
    res = invoke(["train", str(prepared), "--model", str(tiny_model), "-o", str(out), "--set", "gradient_accumulation_steps=6",
                  "num_generations=4"])  # fmt: skip
    assert res.exit_code == 1 and "fix: set gradient_accumulation_steps=8, or num_generations=3 or 6" in res.output and not out.exists()
    bad = tmp_path / "bad.yaml"
    bad.write_text("learning_rat: 1e-5\n")
    res = invoke(["train", str(prepared), "--model", str(tiny_model), "-o", str(out), "--config", str(bad)])
    assert res.exit_code == 1 and "unknown key 'learning_rat'" in res.output


def test_processor_must_be_multimodal_and_rewards_build_by_name(tiny_model, prepared, tmp_path):
    from olmocr_rl.modeling import load_processor
    from olmocr_rl.reward_registry import build_rewards
    from olmocr_rl.rewards import EosReward, FrontMatterReward
    from olmocr_rl.train.rewards import TrainBenchReward, TrainRewardContext

    processor = load_processor(str(tiny_model))
    funcs, weights = build_rewards(
        {"bench": 1.0, "bench-macro": 0.5, "eos": 0.1, "front-matter": 0.2}, TrainRewardContext(prepared / "tests", processor=processor)
    )
    assert weights == [1.0, 0.5, 0.1, 0.2]
    assert [type(f) for f in funcs] == [TrainBenchReward, TrainBenchReward, EosReward, FrontMatterReward]
    assert funcs[0].suite is funcs[1].suite and funcs[0].log_metrics and not funcs[1].log_metrics
    assert [f.__name__ for f in funcs] == ["olmocr_bench", "olmocr_bench_macro", "eos", "front_matter"]
    assert funcs[2].eos == {processor.tokenizer.eos_token_id}
    logged: dict[str, float] = {}
    ids = [["letter_present_salutation", "letter_absent_generic"]] * 2
    got = funcs[0](
        completions=[[{"role": "assistant", "content": "Dear Committee Members,"}], "nothing"], test_ids=ids, log_metric=logged.__setitem__
    )
    assert got == [1.0, 0.5] and logged["bench/present/pass_rate"] == 0.5 and logged["bench/absent/pass_rate"] == 1.0

    # An unknown processor class: AutoProcessor silently returns the bare tokenizer, which would
    # train text-only; it must be an error (docs/training.md, "Model").
    text_only = tmp_path / "text_only"
    shutil.copytree(tiny_model, text_only)
    for f in text_only.glob("*.json"):  # transformers 5: processor_config.json; 4.x: three files
        conf = json.loads(f.read_text())
        if isinstance(conf, dict) and "processor_class" in conf:
            f.write_text(json.dumps({**conf, "processor_class": "NoSuchProcessor"}))
    with pytest.raises(ConfigError, match="not a multimodal processor"):
        load_processor(str(text_only))


# ---------------------------------------------------------------------------------------------
# real GRPO on CPU with the tiny model and the bench reward
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def trained(prepared, tiny_model, tmp_path_factory):
    """The demo's training step (docs/training.md), through the CLI (in-process, one rank)."""
    out = tmp_path_factory.mktemp("train") / "run"
    res = invoke(["train", str(prepared), "--model", str(tiny_model), "-o", str(out), "--config", str(RECIPE)])
    assert res.exit_code == 0, res.output
    assert f"score them: olmocr-rl bench {out} --candidate outputs" in res.output
    assert "step 2/2  loss " in res.stderr  # the progress display's plain-line mode (not a terminal)
    _start_block_then_short_lines(res.stderr, prepared, tiny_model, out)
    cfg = TrainConfig.from_dict(json.loads((out / "train_config.json").read_text()))  # the resolved config round-trips
    assert cfg.output_dir == str(out) and cfg.num_generations == 4 and cfg.bf16 is False
    digest = tree_digest(out)
    yield cfg, out, json.loads((out / "train_summary.json").read_text())
    assert tree_digest(out) == digest, "a test changed the shared training run; tests that write copy it (own_copy)"


def _start_block_then_short_lines(err: str, prepared: Path, model: Path, out: Path) -> None:
    """What `train` printed (issue 49): the start block before any step line, its fields true (the
    pages counted in the prepared folder, the steps those trl ran, the folders it names there), and
    every line of the block and every step line within 100 columns."""
    from rich.cells import cell_len

    lines = err.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("train: "))
    steps = [i for i, line in enumerate(lines) if line.startswith(("step ", "eval step ", "  pass rates: "))]
    assert steps and first < steps[0], err[-3000:]
    block = lines[first : lines.index("loading the model; a line per logged step follows") + 1]
    fields = {k.strip(): v.strip() for k, v in (line.split(": ", 1) for line in block[1:-1])}
    pages = [len((prepared / f"{split}.jsonl").read_text().splitlines()) for split in ("train", "eval")]
    trained_steps = json.loads((out / "train_summary.json").read_text())["global_step"]
    assert block[0] == f"train: {model}"
    assert fields["pages"] == f"{pages[0]} train, {pages[1]} eval (evaluated every 2 steps and at the end)", fields
    assert fields["prepared"] == str(prepared)
    assert fields["steps"] == f"{trained_steps} optimizer steps, 4 completions a page", fields
    assert fields["processes"] == "1 (this process trains)" and fields["generation"].startswith("transformers")
    assert fields["output"] == f"{out} (a checkpoint every 2 steps)"
    metrics = fields["metrics"].split(" (")[0]
    assert metrics == str(out / "logs" / "metrics.jsonl") and Path(metrics).is_file()
    runs = fields["tensorboard"].split(" (")[0]
    assert runs == str(out / "runs") and list(Path(runs).rglob("events.out.tfevents.*"))
    long = [line for line in [*block, *(lines[i] for i in steps)] if cell_len(line) > 100]
    assert not long, long
    assert "pass rates: " in err and "  lr " in err and "loss=" not in err  # abbreviated (the full set: metrics.jsonl)


def own_copy(trained, tmp_path: Path):
    """The shared run copied into tmp_path, its resolved config pointing there: for tests that write."""
    from dataclasses import replace

    cfg, out, summary = trained
    mine = tmp_path / "run"
    shutil.copytree(out, mine)
    return replace(cfg, output_dir=str(mine)), mine, summary


def _logs(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "logs" / "metrics.jsonl").read_text().splitlines()]


def test_grpo_run_logs_per_type_pass_rates_and_checkpoints(trained):
    cfg, out, summary = trained
    assert summary["global_step"] == 2
    logs = _logs(out)
    train_keys = set().union(*(r for r in logs if "loss" in r))
    assert {"bench/present/pass_rate", "bench/absent/pass_rate", "rewards/olmocr_bench/mean"} <= train_keys
    eval_keys = set().union(*(r for r in logs if any(k.startswith("eval_") for k in r)))
    assert any(k.startswith("eval_bench/") and k.endswith("/pass_rate") for k in eval_keys), eval_keys
    assert (out / "checkpoint-2" / "trainer_state.json").is_file()
    assert (out / "model.safetensors").is_file()
    assert any((out / f).is_file() for f in ("processor_config.json", "preprocessor_config.json"))  # transformers 5 / 4
    assert list((out / "runs").rglob("events.out.tfevents.*")), "tensorboard is the default logger"
    failing = [json.loads(line) for line in (out / "completions" / "failing_train.jsonl").read_text().splitlines()]
    assert failing and all(r["failed"] and r["total"] >= len(r["failed"]) for r in failing)
    assert (out / "completions" / "failing_eval.jsonl").is_file()


def test_outputs_are_scored_by_bench(trained):
    cfg, out, summary = trained
    files = sorted(p.relative_to(out / "outputs").as_posix() for p in (out / "outputs").rglob("*.md"))
    assert files == [
        "letter_pg1_repeat1.md",
        "reports/annual_report_pg1_repeat1.md",
        "reports/annual_report_pg2_repeat1.md",
        "sample_paper_pg1_repeat1.md",
    ]
    res = invoke(["bench", str(out), "--candidate", "outputs", "--json"])
    assert res.exit_code == 0, res.output
    summary_json = json.loads(res.output[res.output.index("{") :])
    (cand,) = summary_json["candidates"]
    assert cand["name"] == "outputs" and not cand.get("errors")


def test_final_outputs_from_the_saved_model_batched_with_repeats(trained, tmp_path):
    from dataclasses import replace

    from olmocr_rl.train.worker import write_final_outputs

    cfg, out, _ = own_copy(trained, tmp_path)
    before = {p.name: p.read_text() for p in (out / "outputs").rglob("*.md")}
    got = write_final_outputs(replace(cfg, final_output_repeats=2, final_batch_size=3))  # loads out/ (the saved model)
    assert got["files"] == 8 and got["tests"] == 28 and got["pdfs"] == 3
    after = {p.name: p.read_text() for p in (out / "outputs").rglob("*.md")}
    assert len(after) == 8
    for name, text in before.items():  # greedy: the same text in every repeat, batched or not
        assert after[name] == text == after[name.replace("_repeat1", "_repeat2")]


def test_the_readme_compares_the_trained_model_with_its_start(trained, tiny_model, prepared, tmp_path):
    """Issue 49, item 7: the README's step 6 (generate the base model into the run folder, then
    bench base against outputs) run as written on the demo's run, with the tiny recipe's values
    where the README's are olmOCR 2's (its prompt and completion length, held equal to the
    recipe's here). `generate` so told writes the trained model's own final outputs again, file
    for file (the same pages, told the same); the comparison is outputs − base over one set of tests."""
    import shlex

    import yaml
    from test_first_sight_docs import readme_section

    from olmocr_rl.cli import app
    from olmocr_rl.prepared import read_manifest

    cfg, out, _ = own_copy(trained, tmp_path)
    block = readme_section("**6. Did training help?**").split("```bash\n")[1].split("```")[0]
    lines = [shlex.split(line.split("  #")[0]) for line in block.splitlines() if line.startswith("olmocr-rl ")]
    assert [w[:2] for w in lines] == [["olmocr-rl", "generate"], ["olmocr-rl", "bench"]]
    generate, bench = lines[0][1:], lines[1][1:]
    assert generate[1:4] == ["M", "run", "--candidate"] and bench[1] == "run"
    # The README's values are the recipe's: its prompt, and generate's default length is its completion length.
    recipe = yaml.safe_load((Path(__file__).resolve().parent.parent / "olmocr_rl" / "recipes" / "olmocr2.yaml").read_text())
    assert generate[generate.index("--prompt") + 1] == recipe["prompt"]
    defaults = {p.name: p.default for p in typer_command(app, "generate").params}
    assert defaults["max_new_tokens"] == recipe["max_completion_length"] and "--max-new-tokens" not in generate
    assert defaults["longest_side"] == 1288 and "final_outputs=eval" in readme_section("**5. Train**")
    # The demo's run: the prepared rows' own instruction (no prompt in its recipe), 16 tokens, 140 px pages.
    assert cfg.prompt is None
    del generate[generate.index("--prompt") : generate.index("--prompt") + 2]
    tiny = ["--max-new-tokens", str(cfg.max_completion_length), "--longest-side", str(read_manifest(prepared)["options"]["longest_side"])]
    where = {"M": str(tiny_model), "run": str(out)}
    res = invoke([where.get(w, w) for w in generate] + tiny)
    assert res.exit_code == 0, res.output
    base = generate[generate.index("--candidate") + 1]
    again = invoke(["generate", str(out), str(out), "--candidate", "again", *tiny])  # the trained model, told the same
    assert again.exit_code == 0, again.output
    mine = {p.relative_to(out / "outputs").as_posix(): p.read_text() for p in (out / "outputs").rglob("*.md")}
    assert {p.relative_to(out / "again").as_posix(): p.read_text() for p in (out / "again").rglob("*.md")} == mine
    assert sorted(p.relative_to(out / base).as_posix() for p in (out / base).rglob("*.md")) == sorted(mine)
    res = invoke([where.get(w, w) for w in bench], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert res.stdout.splitlines()[1].startswith(f"outputs − {base} = "), res.stdout
    as_json = invoke([where.get(w, w) for w in bench] + ["--json"])
    summary = json.loads(as_json.stdout[as_json.stdout.index("{") :])
    tests = sum(len(f.read_text().splitlines()) for f in out.glob("*.jsonl"))  # and bench's own baseline tests
    assert [(c["name"], c["tests"]) for c in summary["candidates"]] == [(base, summary["tests"]), ("outputs", summary["tests"])]
    assert summary["tests"] >= tests


def typer_command(app, name: str):
    import typer

    return typer.main.get_command(app).commands[name]


def test_the_model_card_names_the_base_model_and_runs_an_ocr_example(trained, tiny_model, prepared, tmp_path, monkeypatch):
    """Issue 49, item 7: the run folder's README.md (trl's slot, written at each checkpoint) is
    ours, not trl's text-model card ("fine-tuned version of [None]", a text-generation pipeline):
    it names the base model (a folder here: by its path, no hub link), the pages, and an OCR
    example with the run's instruction, whose code runs as written on one of the run's pages and
    prints what the final outputs hold for it."""
    import contextlib
    import io

    from olmocr_rl.prepared import read_split
    from olmocr_rl.prompts import DEFAULT_PROMPT

    cfg, out, _ = trained
    card = (out / "README.md").read_text()
    _, meta, body = card.split("---\n", 2)
    assert "[None]" not in card and "text-generation" not in card and "pipeline(" not in card
    assert "pipeline_tag: image-text-to-text" in meta and "base_model" not in meta  # a local folder: nothing to link
    assert f"fine-tuned version of the model in `{tiny_model}` (a local folder), trained on 3 pages with GRPO" in " ".join(body.split())
    code = body.split("```python\n")[1].split("```")[0]
    assert f"model_id = {str(out)!r}" in code and f"instruction = {DEFAULT_PROMPT!r}" in code
    assert f"max_new_tokens={cfg.max_completion_length}," in code
    assert f"olmocr-rl generate {out} BENCH_DIR --candidate NAME   #" in body  # the default instruction: no --prompt
    row = read_split(prepared, "train")[0]
    shutil.copy(prepared / row["image"], tmp_path / "page.png")
    monkeypatch.chdir(tmp_path)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, "README.md", "exec"), {})
    written = out / "outputs" / f"{row['pdf'].removesuffix('.pdf')}_pg{row['page']}_repeat1.md"
    assert printed.getvalue().strip() == written.read_text().strip()


def test_resume_continues_from_the_checkpoint(trained, prepared, tiny_model, caplog, tmp_path):
    """Through the CLI, in-process (tests/test_resume.py compares a resumed run's weights with an
    uninterrupted run's)."""
    cfg, out, _ = own_copy(trained, tmp_path)
    res = invoke(
        [
            "train",
            str(prepared),
            "--model",
            str(tiny_model),
            "-o",
            str(out),
            "--config",
            str(RECIPE),
            "--resume",
            "auto",
            "max_steps=3",
            "final_outputs=none",
            "eval_split=none",
            "--quiet",
        ]
    )
    assert res.exit_code == 0, res.output
    # --quiet: the start block, then no step line and no completions table (the metrics are logged all the same)
    assert "train: " in res.stderr and "  resume:      auto" in res.stderr and "no evaluation" in res.stderr, res.stderr
    shown = [
        line for line in res.output.splitlines() if line.startswith(("step ", "eval step ", "  pass rates")) or "completions, step" in line
    ]
    assert not shown, shown
    assert any(r["step"] == 3 and "loss" in r for r in _logs(out))
    summary = json.loads((out / "train_summary.json").read_text())
    assert summary["resumed_from"].endswith("checkpoint-2")
    assert summary["global_step"] == 3
    # The Trainer's raw state-dict load matches no Qwen-VL key (transformers#43701); the worker
    # loads the checkpoint with from_pretrained instead.
    assert "missing keys" not in caplog.text
    state = json.loads((out / "checkpoint-3" / "trainer_state.json").read_text())
    assert state["global_step"] == 3 and any(r.get("step") == 3 for r in state["log_history"])


def test_lora_run(prepared, tiny_model, tmp_path):
    from olmocr_rl.train.worker import run

    out = tmp_path / "lora"
    cfg = cfg_for(
        prepared,
        tiny_model,
        out,
        "lora=true",
        "lora_r=4",
        "lora_target_modules=[q_proj,v_proj]",
        "max_steps=1",
        "save_steps=0",
        "eval_split=none",
        "final_outputs=none",
        "report_to=none",
        "rewards.eos=0.5",
    )
    summary = run(cfg)
    assert summary["global_step"] == 1
    assert (out / "adapter_config.json").is_file() and (out / "adapter_model.safetensors").is_file()
    logs = _logs(out)
    assert any("rewards/eos/mean" in r for r in logs)


def test_other_vlm_families_train(prepared, tmp_path):
    from olmocr_rl.train.worker import run

    model = build_model(tmp_path / "qwen2_vl", "qwen2_vl")
    out = tmp_path / "run"
    cfg = cfg_for(
        prepared, model, out, "max_steps=1", "save_steps=0", "eval_split=none", "final_outputs=train", "report_to=none", "max_train_pages=1"
    )
    summary = run(cfg)
    assert summary["global_step"] == 1 and summary["outputs"]["files"] == 1
    assert any("bench/present/pass_rate" in r for r in _logs(out))


@pytest.mark.parametrize("family", ["qwen3_vl", "qwen3_vl_moe"])
def test_qwen3_vl_prepare_train_generate_curate(family, prepared, tmp_path):
    """Qwen3-VL, dense and mixture of experts, through the whole path: the prepared fixtures, one
    GRPO step, the trained model transcribing a bench folder, and curating the prepared pages; the
    prompts carry the image tokens Qwen3-VL's own processor makes of each page (32-pixel tokens,
    olmocr_rl/image_tokens.py), which is also what the plan counts."""
    from PIL import Image

    from olmocr_rl.image_tokens import folder_budget
    from olmocr_rl.modeling import load_processor
    from olmocr_rl.prompts import row_conversation

    model = build_model(tmp_path / family, family)
    out = tmp_path / "run"
    res = invoke(["train", prepared, "--model", model, "-o", out, "--config", RECIPE, "max_steps=1", "save_steps=0", "eval_split=none",
                  "final_outputs=none", "report_to=[none]", "max_train_pages=1", "progress=false"])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert json.loads((out / "train_summary.json").read_text())["global_step"] == 1
    assert json.loads((out / "config.json").read_text())["architectures"][0].startswith("Qwen3VL")

    bench = tmp_path / "bench"
    shutil.copytree(RECIPE.parent, bench, ignore=shutil.ignore_patterns("demo_model", "other_model", "*.py", "*.yaml"))
    res = invoke(["generate", out, bench, "--candidate", "c", "--max-new-tokens", "4", "--longest-side", "112", "-q"])
    assert res.exit_code == 0, res.output
    assert len(list((bench / "c").rglob("*.md"))) == 4

    case = tmp_path / "prepared"
    shutil.copytree(prepared, case)
    res = invoke(["curate", case, "--model", out, "--samples", "2", "--config", RECIPE, "-q"])
    assert res.exit_code in (0, 1), res.output  # 1: no page kept (a one-step random model may agree with itself)
    assert len((case / "difficulty.jsonl").read_text().splitlines()) == 3

    processor, budget = load_processor(str(out)), folder_budget(out)
    assert budget.factor == 32
    from olmocr_rl.prepared import read_split

    row = read_split(prepared, "train")[0]
    text = processor.apply_chat_template(row_conversation(row), add_generation_prompt=True, tokenize=False)
    ids = processor(text=[text], images=[Image.new("RGB", (row["width"], row["height"]))])["input_ids"][0]
    assert list(ids).count(processor.image_token_id) == budget.tokens(row["width"], row["height"])
