"""Issue 49, `train`'s front (and curate's, generate's where they share it): every simple mistake is
answered in one line before torch, trl or transformers is imported; a folder that holds a run is
never silently trained into again; options that contradict each other or are out of range are
usage errors; a config key given as an option, or under trl's name, is pointed at ours; a
scoring-only install says which extra to install; an unprepared bench folder gets the one
`prepare` line that makes it."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from clirun import invoke
from conftest import need
from training import RECIPE

import olmocr_rl.train.plan as plan_module
from olmocr_rl.train.run_folder import RUN_MARKS, reuse_problem

need("trl")
HEAVY = ("torch", "trl", "transformers", "deepspeed", "datasets")
BENCH = Path(__file__).resolve().parent.parent / "bench_fixtures"


def _make_mark(folder: Path, mark: str) -> None:
    target = folder / mark.replace("*", "3")
    if "." in target.name:  # a file (train_summary.json, logs/metrics.jsonl, report.html)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text('{"step": 1}\n')
    else:
        target.mkdir(parents=True)


# ---------------------------------------------------------------------------------------------
# item 5: simple mistakes, answered before any heavy import
# ---------------------------------------------------------------------------------------------

DRIVER = """
import json, sys, time
from olmocr_rl.cli import main
out = []
for argv in json.loads(sys.argv[1]):
    start = time.monotonic()
    code = main(argv)
    out.append([code, time.monotonic() - start])
print(json.dumps({"runs": out, "heavy": sorted(m for m in %r if m in sys.modules)}))
""" % (HEAVY,)


def test_simple_mistakes_are_answered_in_seconds_without_a_heavy_import(prepared, tiny_model, tmp_path):
    """In a fresh interpreter: each of these ends with its one error line in well under 5 s (main:
    13-22 s, trl imported first), and none of torch, trl, transformers was imported to say it."""
    (tmp_path / "fast.yaml").write_text("learning_rate: fast\n")
    (tmp_path / "trl.yaml").write_text("trl:\n  top_k: many\n")
    (tmp_path / "alias.yaml").write_text("model_name_or_path: Qwen/Qwen2.5-VL-3B-Instruct\n")
    held = tmp_path / "held"
    _make_mark(held, "logs/metrics.jsonl")
    base = ["train", str(prepared), "--model", str(tiny_model)]
    cases = [
        (["train", str(prepared), "-o", str(tmp_path / "r")], 1, "--model is required"),
        ([*base], 1, "--output-dir (-o) is required"),
        ([*base, "-o", str(tmp_path / "r"), "--config", str(tmp_path / "fast.yaml")], 1, "learning_rate must be float, got 'fast'"),
        ([*base, "-o", str(tmp_path / "r"), "--config", str(tmp_path / "trl.yaml")], 1, "top_k must be int, got 'many'"),
        ([*base, "-o", str(tmp_path / "r"), "num_generations=many"], 1, "num_generations must be int, got 'many'"),
        ([*base, "-o", str(tmp_path / "r"), "--config", str(tmp_path / "alias.yaml")], 1, "unknown key 'model_name_or_path' (did you mean 'model'?"),
        ([*base, "-o", str(tmp_path / "r"), "--show-config"], 2, "--show-config needs --dry-run"),
        ([*base, "-o", str(tmp_path / "r"), "--machine-rank", "3"], 2, "--machine-rank must be in [0, 1)"),
        ([*base, "-o", str(held)], 1, "holds a run (logs/metrics.jsonl): continue it with --resume auto"),
        (["train", str(BENCH), "--model", str(tiny_model), "-o", str(tmp_path / "r")], 1, f"olmocr-rl prepare {BENCH} {BENCH}-prepared"),
    ]  # fmt: skip
    start = time.monotonic()
    res = subprocess.run([sys.executable, "-c", DRIVER, json.dumps([argv for argv, _, _ in cases])], capture_output=True, text=True,
                         timeout=120)  # fmt: skip
    took = time.monotonic() - start
    report = json.loads(res.stdout.strip().splitlines()[-1])
    errors = [line for line in res.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == len(cases), res.stderr
    for (argv, code, said), (got, seconds), line in zip(cases, report["runs"], errors):
        assert got == code and said in line, (argv, got, line)
        assert seconds < 5, (argv, seconds)
    assert report["heavy"] == [], report["heavy"]
    assert not (tmp_path / "r").exists()
    print(f"{len(cases)} mistakes answered in {took:.2f} s in all (one interpreter), the slowest {max(s for _, s in report['runs']):.2f} s")


TYPE_ERRORS = [
    (["learning_rate: fast\n"], []),  # a trl option the recipe states (float)
    ([], ["learning_rate=fast"]),
    (["num_generations: many\n"], []),  # int | None
    ([], ["lora=maybe"]),  # ours, bool
    ([], ["dtype=float8"]),  # ours, a Literal
    (["trl:\n  top_k: many\n"], []),  # trl's only
    ([], ["trl.top_k=many"]),
    ([], ["top_k=many"]),  # trl's only, flat
    (["rewards:\n  bench: lots\n"], []),  # a reward weight
    ([], ["rewards.bench=lots"]),
    (["model_name_or_path: x\n"], []),  # trl's name for ours
    ([], ["torch_dtype=bfloat16"]),
]


@pytest.mark.parametrize("lines, overrides", TYPE_ERRORS)
def test_a_wrong_value_is_refused_early_with_the_full_checks_message(tmp_path, lines, overrides):
    from olmocr_rl.errors import ConfigError
    from olmocr_rl.train.config import load_config
    from olmocr_rl.train.keys import early_values

    config = None
    if lines:
        config = str(tmp_path / "c.yaml")
        (tmp_path / "c.yaml").write_text("".join(lines))
    with pytest.raises(ConfigError) as early:
        early_values(config, overrides)
    with pytest.raises(ConfigError) as full:
        load_config(config, overrides, prepared_dir="p", model="m", output_dir="o")
    assert str(early.value) == str(full.value)


def test_every_alias_points_at_our_key_and_is_no_key_itself():
    from olmocr_rl.errors import ConfigError
    from olmocr_rl.train.config import ALIASES, known_keys
    from olmocr_rl.train.keys import early_values

    for alias, ours in ALIASES.items():
        assert alias not in known_keys() and ours in known_keys(), alias
        with pytest.raises(ConfigError, match=rf"unknown key '{alias}' \(did you mean '{ours}'\?"):
            early_values(None, [f"{alias}=x"])


def test_the_recipe_file_is_read_once(prepared, tiny_model, tmp_path, monkeypatch):
    """One reader: the early check and the full config read the mapping `train` read once (main: twice)."""
    import yaml

    text, parsed, real = RECIPE.read_text(), [], yaml.safe_load
    monkeypatch.setattr(yaml, "safe_load", lambda stream: parsed.append(stream == text) or real(stream))
    monkeypatch.setattr(plan_module, "execute", lambda plan, echo: None)
    res = invoke(["train", prepared, "--model", tiny_model, "-o", tmp_path / "run", "--config", RECIPE])
    assert res.exit_code == 0, res.output
    assert parsed.count(True) == 1, parsed


# ---------------------------------------------------------------------------------------------
# item 2: a run folder is never silently reused
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mark", RUN_MARKS)
def test_a_folder_holding_a_run_is_refused_in_one_line(prepared, tiny_model, tmp_path, mark):
    out = tmp_path / "run"
    _make_mark(out, mark)
    before = sorted(p.relative_to(out) for p in out.rglob("*"))
    res = invoke(["train", prepared, "--model", tiny_model, "-o", out, "--config", RECIPE])
    assert res.exit_code == 1 and res.stdout == "", res.output
    (line,) = res.stderr.splitlines()
    assert line.startswith(f"error: {out} holds a run (") and "--resume auto" in line and "--overwrite" in line, line
    assert sorted(p.relative_to(out) for p in out.rglob("*")) == before  # nothing written


def test_no_run_no_refusal_and_the_resume_checks():
    """What is no run: a missing or empty folder, other files, train_config.json alone; resume with
    a checkpoint passes, resume auto without one is refused (it would start over into the old logs)."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        assert reuse_problem(root / "missing", resume=None, overwrite=False) is None
        assert reuse_problem(root, resume=None, overwrite=False) is None
        (root / "notes.txt").write_text("mine")
        (root / "train_config.json").write_text("{}")
        (root / "checkpoint-x").write_text("a file, not a checkpoint folder")
        assert reuse_problem(root, resume=None, overwrite=False) is None
        _make_mark(root, "logs/metrics.jsonl")
        held, fix = reuse_problem(root, resume="auto", overwrite=False)
        assert "no checkpoint to resume from" in held and "--overwrite" in fix
        assert reuse_problem(root, resume=None, overwrite=True) is None
        _make_mark(root, "checkpoint-*")
        assert reuse_problem(root, resume="auto", overwrite=False) is None
        assert reuse_problem(root, resume=str(root / "checkpoint-3"), overwrite=False) is None


def test_the_dry_run_says_it_as_a_problem_and_does_not_start(prepared, tiny_model, tmp_path):
    out = tmp_path / "run"
    _make_mark(out, "train_summary.json")
    res = invoke(["train", prepared, "--model", tiny_model, "-o", out, "--config", RECIPE, "--dry-run"])
    assert res.exit_code == 1, res.output
    assert res.stdout.startswith("plan: will NOT start (1 error: output_dir)"), res.stdout[:300]
    assert f"error: output_dir: {out} holds a run (train_summary.json)" in res.stderr
    assert "fix: continue it with --resume auto, or delete it and start again with --overwrite" in res.stderr
    res = invoke(["train", prepared, "--model", tiny_model, "-o", out, "--config", RECIPE, "--dry-run", "--overwrite"])
    assert res.exit_code == 0 and res.stdout.startswith("plan: ready"), res.output
    assert f"warning: output_dir: {out} holds a run (train_summary.json): --overwrite deletes everything in it" in res.stderr
    assert (out / "train_summary.json").exists()  # a dry run deletes nothing
    clean = tmp_path / "other"
    clean.mkdir()
    (clean / "notes.txt").write_text("mine")
    res = invoke(["train", prepared, "--model", tiny_model, "-o", clean, "--config", RECIPE, "--dry-run"])
    assert res.exit_code == 0 and "output_dir" not in res.stderr, res.output


def test_overwrite_deletes_the_old_run_and_resume_drops_the_rows_it_logs_again(prepared, tiny_model, tmp_path, monkeypatch):
    """What execute finds in the folder (a stand-in records it; no training): with --overwrite, only
    the lock of the old run's folder; with --resume auto from checkpoint-2, the rows up to step 2."""
    seen = {}

    def standin(plan, echo):
        out = Path(plan.cfg.output_dir)
        seen["names"] = sorted(p.name for p in out.iterdir())
        metrics = out / "logs" / "metrics.jsonl"
        seen["steps"] = [json.loads(r)["step"] for r in metrics.read_text().splitlines()] if metrics.exists() else None
        return None

    monkeypatch.setattr(plan_module, "execute", standin)
    out = tmp_path / "run"
    for mark in RUN_MARKS:
        _make_mark(out, mark)
    (out / "model.safetensors").write_text("old weights")
    (out / "logs" / "metrics.jsonl").write_text("".join(json.dumps({"step": s, "loss": 1.0}) + "\n" for s in (1, 2, 3, 4)))
    (out / "completions" / "failing_train.jsonl").write_text("".join(json.dumps({"step": s}) + "\n" for s in (2, 3)))
    (out / "checkpoint-2").mkdir()
    (out / "checkpoint-2" / "trainer_state.json").write_text("{}")
    args = ["train", prepared, "--model", tiny_model, "-o", out, "--config", RECIPE]
    res = invoke([*args, "--resume", "auto", "--overwrite"])
    assert res.exit_code == 2 and "--overwrite deletes the run that --resume continues" in res.stderr, res.output
    res = invoke([*args, "--resume", str(out / "checkpoint-2")])
    assert res.exit_code == 0, res.output
    assert seen["steps"] == [1, 2] and "checkpoint-3" in seen["names"]  # rows after the checkpoint dropped, nothing else
    assert [json.loads(r)["step"] for r in (out / "completions" / "failing_train.jsonl").read_text().splitlines()] == [2]
    res = invoke([*args, "--overwrite"])
    assert res.exit_code == 0, res.output
    assert seen["names"] == [".olmocr-rl.lock"] and seen["steps"] is None
    assert f"--overwrite: deleted the run in {out}" in res.stderr


# ---------------------------------------------------------------------------------------------
# items 2-3: options refused as usage errors; one meaning per short option
# ---------------------------------------------------------------------------------------------


def test_contradicting_options_and_gone_short_forms_are_usage_errors(prepared, tiny_model, tmp_path):
    out = tmp_path / "run"
    base = ["train", prepared, "--model", tiny_model, "-o", out]
    res = invoke([*base, "--show-config"])
    assert res.exit_code == 2 and "--show-config needs --dry-run" in res.stderr and not out.exists()
    for gone in ("-v", "-c"):
        res = invoke([*base, gone, *(["olmocr2"] if gone == "-c" else [])])
        assert res.exit_code == 2 and f"No such option: {gone}" in res.stderr, res.output
    res = invoke(["curate", prepared, "--model", tiny_model, "-c", "olmocr2"])
    assert res.exit_code == 2 and "No such option: -c" in res.stderr


@pytest.mark.parametrize("command", ["train", "curate", "generate"])
def test_a_machine_rank_beyond_the_machines_is_a_usage_error(command, prepared, tiny_model, tmp_path):
    args = {
        "train": ["train", prepared, "--model", tiny_model, "-o", tmp_path / "run"],
        "curate": ["curate", prepared, "--model", tiny_model],
        "generate": ["generate", tiny_model, tmp_path / "bench", "-c", "x"],
    }[command]
    for machines, rank in ((1, 3), (2, 2)):
        res = invoke([*args, "--num-machines", machines, "--machine-rank", rank, "--main-process-ip", "10.0.0.1"])
        assert res.exit_code == 2, res.output
        assert f"--machine-rank must be in [0, {machines}) with --num-machines {machines}" in res.stderr and f"got {rank}" in res.stderr
    assert not (tmp_path / "run").exists() and not (tmp_path / "bench").exists()


@pytest.mark.parametrize("command", ["train", "curate"])
def test_a_config_key_given_as_an_option_is_pointed_at_key_value(command, prepared):
    for option, value in (("--learning_rate", "1e-6"), ("--learning-rate=1e-6", "1e-6"), ("--top_k", "5")):
        res = invoke([command, prepared, *([option, value] if "=" not in option else [option])])
        key = option[2:].split("=")[0].replace("-", "_")
        assert res.exit_code == 2 and "No such option" in res.stderr, res.output
        assert f"give it as {key}={value}, or --set {key}={value}" in res.stderr, res.stderr
    res = invoke([command, prepared, "--bogus"])
    assert res.exit_code == 2 and "config key" not in res.stderr


# ---------------------------------------------------------------------------------------------
# item 6: a scoring-only install; item 7: an unprepared bench folder
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def scoring_only(monkeypatch):
    """This process as a scoring-only install: the train extra's modules (and packaging, which comes
    with them) are not imported and cannot be found (found: ModuleNotFoundError, as for a module that
    is not installed); restored afterwards."""
    import importlib.abc

    from olmocr_rl.errors import ALSO, EXTRA_MODULES

    blocked = {*EXTRA_MODULES["train"], *ALSO["train"]}

    class NotInstalled(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in blocked:
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    for name in [m for m in sys.modules if m.split(".")[0] in blocked]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(sys, "meta_path", [NotInstalled(), *sys.meta_path])


def test_each_extras_modules_come_with_it():
    """EXTRA_MODULES (and ALSO) name modules the extra brings: its requirements, or theirs."""
    import re
    from importlib.metadata import requires

    from olmocr_rl.errors import ALSO, EXTRA_MODULES

    def names(dist: str, extra: str | None = None) -> set[str]:
        out = set()
        for line in requires(dist) or []:
            if (extra is None and "extra ==" not in line) or (extra is not None and f"extra == '{extra}'" in line.replace('"', "'")):
                out.add(re.sub(r"[-_.]+", "_", re.match(r"[A-Za-z0-9_.-]+", line).group(0).lower()))
        return out

    ours = names("olmocr-rl", "train")
    brought = ours | {n for dist in ("transformers", "trl") for n in names(dist)}
    modules = {"bs4": "beautifulsoup4"}
    for extra in ("train", "deepspeed", "synth"):
        own = names("olmocr-rl", extra) | (brought if extra == "train" else set())
        for module in (*EXTRA_MODULES[extra], *ALSO.get(extra, ())):
            assert modules.get(module, module) in own, (extra, module)
    assert "trl" in names("olmocr-rl", "vllm") and EXTRA_MODULES["vllm"] == ("vllm",)  # trl[vllm]: vLLM itself


def test_a_scoring_only_install_names_the_extra(scoring_only, prepared, tmp_path):
    model = tmp_path / "m"
    model.mkdir()
    (model / "config.json").write_text('{"model_type": "qwen2_5_vl", "architectures": ["Qwen2_5_VLForConditionalGeneration"]}')
    for args in (["train", prepared, "--model", model, "-o", tmp_path / "run"], ["curate", prepared, "--model", model],
                 ["generate", model, BENCH, "-c", "x", "--dry-run"]):  # fmt: skip
        res = invoke(args)
        assert res.exit_code == 1, (args, res.output)
        (line,) = [x for x in res.stderr.splitlines() if x.startswith("error:")]
        assert "pip install 'olmocr-rl[train]'" in line and "a bug" not in line, (args, line)
    # prepare needs none of it
    res = invoke(["prepare", BENCH, tmp_path / "prep", "--quiet"])
    assert res.exit_code == 0, res.output


def test_an_unprepared_bench_folder_gets_the_prepare_line_once(tiny_model, tmp_path):
    res = invoke(["train", BENCH, "--model", tiny_model, "-o", tmp_path / "run"])
    assert res.exit_code == 1 and res.stderr.count("olmocr-rl prepare") == 1, res.stderr
    assert f"`olmocr-rl prepare {BENCH} {BENCH}-prepared`, then give {BENCH}-prepared in its place" in res.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    res = invoke(["train", empty, "--model", tiny_model, "-o", tmp_path / "run"])
    assert res.exit_code == 1 and f"`olmocr-rl prepare BENCH_DIR {empty}`" in res.stderr and res.stderr.count("olmocr-rl prepare") == 1


def test_the_preflight_says_the_prepare_line_once(tmp_path):
    from olmocr_rl.train.config import load_config
    from olmocr_rl.train.preflight import preflight

    cfg = load_config(None, ["eval_split=none"], prepared_dir=str(BENCH), model="m", output_dir=str(tmp_path / "o"))
    (problem,) = [p for p in preflight(cfg, 1, cuda=False) if p.key == "prepared_dir"]
    assert str(problem).count("olmocr-rl prepare") == 1 and f"olmocr-rl prepare {BENCH} {BENCH}-prepared" in problem.fix, str(problem)


def test_resume_drops_the_rows_logged_after_its_checkpoint(tmp_path):
    """run_folder.trim_metrics (train --resume): the rows of logs/metrics.jsonl and of the recorded
    completions with a step past checkpoint-N go (the resumed run logs them again); the rest, a row
    that is not JSON and a row without a step included, stay; a folder not named checkpoint-N trims nothing."""
    import json

    from olmocr_rl.train.run_folder import trim_metrics

    (tmp_path / "logs").mkdir()
    (tmp_path / "completions").mkdir()
    metrics = [json.dumps({"step": s, "loss": 0.1 * s}) for s in (1, 2, 3, 4)] + ["not json", json.dumps({"note": 1})]
    (tmp_path / "logs" / "metrics.jsonl").write_text("\n".join(metrics) + "\n")
    (tmp_path / "completions" / "failing_0.jsonl").write_text("\n".join(json.dumps({"step": s}) for s in (2, 3)) + "\n")
    assert trim_metrics(tmp_path, tmp_path / "latest") == 0
    assert trim_metrics(tmp_path, tmp_path / "checkpoint-2") == 3
    assert (tmp_path / "logs" / "metrics.jsonl").read_text().splitlines() == [metrics[0], metrics[1], "not json", metrics[5]]
    assert (tmp_path / "completions" / "failing_0.jsonl").read_text().splitlines() == [json.dumps({"step": 2})]
    assert trim_metrics(tmp_path, tmp_path / "checkpoint-2") == 0
