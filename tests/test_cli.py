"""The Typer command line: every command keeps the arguments, options and defaults it had on
argparse (the table below was read off the argparse parser before the move), `install-katex`
stores a verified KaTeX where every entry point finds it, and the training stack's refusals end
as one `error:` line."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import typer
from clirun import invoke
from conftest import GOLDEN, golden_disagreement, need, read_jsonl

from olmocr_rl import _core, _katex
from olmocr_rl.cli import app

# command -> {option strings or argument name: default}; (the argparse parser's table)
COMMANDS = {
    "validate": {"tests": None},
    "check": {"tests": None, "page": None, ("--test", "-t"): None, ("--pdf",): None, ("--json",): False,
              ("--guard",): "none",  # #26: the published checks unless asked
              ("--strict",): False},  # #29: exit 1 when a test fails, for CI
    "bench": {
        "bench_dir": None, ("--candidate", "-c"): None, ("--details",): None, ("--json",): False,
        ("--skip-baseline", "--skip_baseline"): False, ("--force",): False, ("--workers",): None,
        ("--bootstrap-samples", "--bootstrap_samples"): 1000, ("--confidence-level", "--confidence_level"): 0.95,
        ("--seed",): 0, ("--show-failures",): False,
        # #16: the reference runner's report, sample and failed-tests options
        ("--report", "--test-report", "--test_report"): None, ("--max-reports", "--max_reports"): None, ("--sample",): None,
        ("--output-failed", "--output_failed"): None,
        ("--guard",): "none",  # #26: the published checks unless asked
        ("--compare",): False,  # #30: paired differences against the first candidate
        ("--strict",): False,  # #29: exit 1 when a candidate is FAILED, for CI
    },
    "probe": {"tests": None, ("--flag-share",): 0.5, ("--details",): None, ("--json",): False, ("--workers",): None},  # #26: new
    "prepare": {
        "bench_dir": None, "out_dir": None, ("--longest-side", "--target-longest-image-dim"): 1288,
        ("--jsonl-filter",): None, ("--type-filter",): None, ("--max-pages",): None, ("--eval-fraction",): 0.0,
        ("--eval-dir",): None, ("--seed",): 0, ("--workers",): None, ("--prompt-file",): None, ("--patch-size",): None,
        ("--processor",): None,  # #43: the report's image tokens for a named model's processor
        ("--prompt",): None,  # #25: olmocr-v4, olmOCR 2's instruction
        ("--strict",): False, ("--quiet", "-q"): False,
    },
    "synth": {  # #38: new
        "paths": None, ("--name",): "synthetic", ("--page-timeout",): 120.0, ("--page-memory",): 1024, ("--from-pdf",): None,
        ("--endpoint",): None, ("--model",): None, ("--all-pages",): False, ("--exclude",): None, ("--concurrency",): 4,
        ("--retries",): 3, ("--request-timeout",): 300.0, ("--max-tokens",): None, ("--budget",): None, ("--strict",): False,
        ("--quiet", "-q"): False,
        ("--seed",): 0, ("--keep-katex-math",): False,  # #42: the pages' seeds (0: upstream's), KaTeX's MathML copy not cut off
    },
    "train": {
        "prepared_dir": None, "overrides": None, ("--model",): "", ("--output-dir", "-o"): None, ("--config",): None,
        ("--set",): None, ("--resume",): None, ("--num-machines",): 1,
        ("--machine-rank",): 0, ("--main-process-ip",): None, ("--main-process-port",): None, ("--dry-run",): False,
        ("--debug",): False,  # new: the traceback of a refused configuration
        # #13: None = 1, or every training GPU with --vllm-gpus; launcher choice, vLLM server GPUs,
        # DeepSpeed hostfile, and the --local_rank the deepspeed launcher passes each rank.
        ("--num-processes",): None, ("--zero",): None, ("--launcher",): "accelerate", ("--vllm-gpus",): None,
        ("--hostfile",): None, ("--local_rank", "--local-rank"): None,
        ("--gpus",): None, ("--gpu-memory",): None,  # #34: the node planned for (default: this machine's)
        ("--options",): None,  # #17: every config key with its type, default and help
        ("--strict",): False,  # #25: pre-flight warnings (checkpoint disk) stop the run
        ("--show-config",): False,  # #42: the dry run prints the resolved config (else only its file); #49: no -v
        ("--overwrite",): False,  # #49: a folder holding a run is refused without it (or --resume)
        ("--quiet", "-q"): False,  # #49: no bar, step lines or completions tables
    },
    "generate": {  # #16: new
        "model": None, "bench_dir": None, ("--candidate", "-c"): "generated", ("--repeats",): 1, ("--temperature",): 0.0,
        ("--max-new-tokens",): 8000, ("--batch-size",): 8, ("--engine",): "transformers", ("--prompt-file",): None,
        ("--longest-side",): 1288, ("--raw",): False, ("--quiet", "-q"): False,
        ("--seed",): 0, ("--eager", "--no-eager"): None,  # #24/#25: the run's seed reaches the engine; vLLM eager mode
        ("--prompt",): None,  # #25: olmocr-v4, olmOCR 2's instruction
        **{("--num-processes",): 1, ("--tensor-parallel",): 1, ("--dry-run",): False},  # #36: workers, vLLM tensor parallel
        **{("--num-machines",): 1, ("--machine-rank",): 0, ("--main-process-ip",): None, ("--main-process-port",): None},  # #36
        ("--stop-loops",): False, ("--loop-rule",): None,  # #44: the loop stop (off: evaluation and selection), its rule
    },
    "curate": {  # #26: new
        "prepared_dir": None, "overrides": None, ("--model",): "", ("--samples", "-n"): 8, ("--engine",): "transformers",
        ("--config",): None, ("--set",): None, ("--eval",): False, ("--batch-size",): 16, ("--output", "-o"): None,
        ("--name",): "curated", ("--min-std",): 0.0, ("--min-mean",): None, ("--max-mean",): None, ("--eager", "--no-eager"): None,
        ("--quiet", "-q"): False,
        **{("--num-processes",): 1, ("--tensor-parallel",): 1, ("--dry-run",): False},  # #36: workers, vLLM tensor parallel
        **{("--num-machines",): 1, ("--machine-rank",): 0, ("--main-process-ip",): None, ("--main-process-port",): None},  # #36
        ("--stop-loops",): False, ("--loop-rule",): None,  # #44: the loop stop (off: evaluation and selection), its rule
    },
    "report": {"run_dir": None, ("--output", "-o"): None, ("--max-completions",): 40},  # #16: new
    "soup": {"checkpoints": None, ("--output", "-o"): None, ("--overwrite",): False},
    "install-katex": {("--from-wheel",): None, ("--dir",): None},
}  # fmt: skip


def params(name: str) -> dict:
    command = typer.main.get_command(app).commands[name]
    out = {}
    for p in command.params:
        if p.name == "help":
            continue
        key = p.name if not p.opts[0].startswith("-") else tuple(p.opts + p.secondary_opts)
        out[key] = p.default
    return out


@pytest.mark.parametrize("name", list(COMMANDS))
def test_each_command_keeps_its_options_and_defaults(name):
    assert params(name) == COMMANDS[name]


def test_every_command_is_listed_and_version_works():
    assert sorted(typer.main.get_command(app).commands) == sorted(COMMANDS)
    out = invoke(["--version"])
    assert out.exit_code == 0 and out.stdout.startswith("olmocr-rl ")
    assert invoke([]).exit_code in (0, 2)  # no_args_is_help: prints the help


def test_shell_completion_is_offered():
    out = subprocess.run([sys.executable, "-m", "olmocr_rl.cli", "--show-completion", "bash"], capture_output=True, text=True,
                         env={"_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1", "PATH": ""})  # fmt: skip
    assert out.returncode == 0 and "complete" in out.stdout.lower(), out.stderr


# ---------------------------------------------------------------------------------------------
# install-katex
# ---------------------------------------------------------------------------------------------


def olmocr_like_wheel(path: Path, katex: bytes, prompts: bytes | None = None) -> Path:
    """A wheel holding the two files install-katex takes: katex.min.js and olmOCR's prompts.py
    (the installed copy unless given)."""
    from olmocr_rl.prompts import olmocr_prompts_file

    if prompts is None:
        found = olmocr_prompts_file()
        assert found is not None, "olmOCR's prompts are not installed: run `olmocr-rl install-katex`"
        prompts = found.read_bytes()
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("olmocr/__init__.py", "")
        z.writestr(_katex.WHEEL_MEMBER, katex)
        z.writestr(_katex.PROMPTS_MEMBER, prompts)
    return path


@pytest.fixture
def katex_bytes() -> bytes:
    found = _katex.find_katex_js()
    if found is None or not found.is_file():
        pytest.skip("no KaTeX installed here to build a wheel from")
    data = found.read_bytes()
    assert hashlib.sha256(data).hexdigest() == _katex.KATEX_SHA256
    return data


def test_install_katex_from_a_wheel_into_the_cache_then_math_agrees_with_golden(katex_bytes, tmp_path, monkeypatch):
    wheel = olmocr_like_wheel(tmp_path / "olmocr-0.4.27-py3-none-any.whl", katex_bytes)
    cache = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    monkeypatch.delenv("OLMOCR_RL_KATEX_JS", raising=False)
    try:
        out = invoke(["install-katex", "--from-wheel", wheel])
        assert out.exit_code == 0, out.output
        target = cache / "olmocr-rl" / "katex" / "0.16.21" / "katex.min.js"
        assert target.read_bytes() == katex_bytes
        assert _katex.find_katex_js() == target  # found without any environment variable
        from olmocr_rl.prompts import olmocr_prompts_file, resolve_prompt

        monkeypatch.delenv("OLMOCR_RL_OLMOCR_PROMPTS", raising=False)
        assert olmocr_prompts_file() == cache / "olmocr-rl" / "olmocr-0.4.27" / "prompts.py"  # olmOCR's prompts beside it
        assert resolve_prompt("olmocr-v4").source.endswith(str(olmocr_prompts_file()))
        _katex.configure()
        assert _core.katex_problem() is None
        cases = [c for c in read_jsonl(GOLDEN / "math_cases.jsonl") if c.get("stage") == "mathml"][:20]
        assert len(cases) == 20 and all(golden_disagreement(c) is None for c in cases)
    finally:
        monkeypatch.undo()
        _katex.configure()


def test_install_katex_rejects_a_wrong_file(tmp_path):
    bad = olmocr_like_wheel(tmp_path / "olmocr-0.4.27-py3-none-any.whl", b'var katex = {version: "0.16.21"}; // not it')
    out = invoke(["install-katex", "--from-wheel", bad, "--dir", tmp_path / "k"])
    assert out.exit_code == 1 and "sha256" in out.stderr and not (tmp_path / "k" / "katex.min.js").exists()
    empty = tmp_path / "empty.whl"
    with zipfile.ZipFile(empty, "w") as z:
        z.writestr("x.txt", "")
    out = invoke(["install-katex", "--from-wheel", empty, "--dir", tmp_path / "k"])
    assert out.exit_code == 1 and "has no olmocr/bench/katex/katex.min.js" in out.stderr
    out = invoke(["install-katex", "--from-wheel", tmp_path / "nope.whl", "--dir", tmp_path / "k"])
    assert out.exit_code == 1 and "no such file" in out.stderr
    from olmocr_rl.prompts import olmocr_prompts_file

    edited = olmocr_prompts_file().read_bytes().replace(b"Attached is one page", b"Attached is a page")
    katex = _katex.find_katex_js().read_bytes()
    out = invoke(["install-katex", "--from-wheel", olmocr_like_wheel(tmp_path / "p.whl", katex, edited), "--dir", tmp_path / "p"])
    assert out.exit_code == 1 and "olmocr/prompts/prompts.py is missing or not olmocr 0.4.27's" in out.stderr


def test_install_katex_into_a_folder(katex_bytes, tmp_path):
    wheel = olmocr_like_wheel(tmp_path / "w.whl", katex_bytes)
    out = invoke(["install-katex", "--from-wheel", wheel, "--dir", tmp_path / "k"])
    assert out.exit_code == 0 and (tmp_path / "k" / "katex.min.js").read_bytes() == katex_bytes


# ---------------------------------------------------------------------------------------------
# the training stack refusing a configuration: one error line
# ---------------------------------------------------------------------------------------------


def test_a_refused_trl_option_is_one_error_line(prepared, tiny_model, tmp_path, monkeypatch):
    """The real command, in its own process: one error line, no traceback; with --debug (in-process:
    the same code path, the traceback printed) the traceback."""
    need("trl")
    from training import FIXTURES

    args = ["train", str(prepared), "--model", str(tiny_model), "-o", str(tmp_path / "run"), "--config", str(FIXTURES / "tiny_grpo.yaml"),
            "progress=false", "final_outputs=none", "trl.use_transformers_paged=true"]  # fmt: skip
    out = subprocess.run([sys.executable, "-m", "olmocr_rl.cli", *args], capture_output=True, text=True, timeout=600)
    errors = [line for line in out.stderr.splitlines() if line.startswith("error:")]
    assert out.returncode == 1, out.stderr[-3000:]
    assert len(errors) == 1 and "Traceback" not in out.stderr, out.stderr[-3000:]
    assert "trl refused the configuration" in errors[0] and "trl.use_transformers_paged" in errors[0], errors[0]
    monkeypatch.delenv("OLMOCR_RL_DEBUG", raising=False)
    debug = invoke([*args, "--debug"])
    assert debug.exit_code == 1 and "Traceback" in debug.stderr and "use_transformers_paged" in debug.stderr, debug.stderr[-3000:]
    # `train --debug` turned debug on for its ranks and its own errors only: the caller's environment is as it was.
    assert "OLMOCR_RL_DEBUG" not in os.environ


def test_an_unexpected_error_is_one_line_unless_debug(monkeypatch):
    import olmocr_rl.cli.check as check_module

    def boom(path, strict):
        raise RuntimeError("something broke")

    monkeypatch.setattr(check_module, "_load", boom)  # a bug deep in the command
    out = invoke(["validate", "x"])
    assert (
        out.exit_code == 1
        and out.stderr.strip()
        == "error: unexpected RuntimeError: something broke (a bug in olmocr-rl or a library it uses; run with --debug for the traceback)"
    )
    out = invoke(["--debug", "validate", "x"])
    assert out.exit_code == 1 and "Traceback" in out.stderr


def test_report_turns_only_the_environments_errors_into_an_error_line(monkeypatch, tmp_path):
    """`report`: an OSError (no run folder, a disk full) is the user's to fix, one error line; a
    ValueError from inside is a bug, reported as one (it used to be shown as the user's error)."""
    import olmocr_rl.report as report

    for error, said in ((OSError("disk full"), "error: disk full"), (ValueError("bad math"), "error: unexpected ValueError: bad math")):

        def fails(*a, error=error, **k):
            raise error

        monkeypatch.setattr(report, "run_report", fails)
        out = invoke(["report", str(tmp_path)])
        assert out.exit_code == 1 and out.stderr.startswith(said), out.stderr


def test_train_options_lists_every_config_key_with_help():
    from olmocr_rl.reward_registry import REWARDS
    from olmocr_rl.train.config import OWN, TRL_STATED
    from olmocr_rl.train.schema import trl_fields

    res = invoke(["train", "--options"], env={"COLUMNS": "250"})
    assert res.exit_code == 0, res.output
    for f in OWN:
        assert f.name in res.stdout, f.name
        assert f.metadata.get("help"), f"{f.name} has no help text"
    for f in TRL_STATED:  # trl's options the config states: listed with trl's help
        assert f.name in trl_fields() and f.name in res.stdout, f.name
    rewards = res.stdout[res.stdout.index("rewards (rewards.NAME=WEIGHT") :]
    for name, reward in REWARDS.items():  # the reward table, read from the registry
        assert any(line.split(" ")[0] == name for line in rewards.splitlines()) and reward.about.split()[0] in rewards, name
    assert "colocate | server" in res.stdout or "float or none" in res.stdout  # our annotated types
    # trl's GRPOConfig options are listed from trl itself, olmOCR 2's overrides marked.
    lines = res.stdout.splitlines()
    k = lines.index("num_generations (int or none) = 28")
    assert lines[k + 1].startswith("    (olmOCR 2; trl: 8) trl: Number of generations")
    assert any(line.startswith("top_k (int) = ") for line in lines)  # any other trl option too
    # At 80 columns, in a pipe: every line fits and every meaning is whole (issue 37, row 3).
    narrow = invoke(["train", "--options"], env={"COLUMNS": "80"})
    assert max(len(line) for line in narrow.stdout.splitlines()) <= 80
    assert " ".join(narrow.stdout.split()) == " ".join(res.stdout.split())
    assert len(narrow.stdout.splitlines()) < 1000


def test_readme_walks_a_user_through_commands_that_exist(monkeypatch):
    """Issue 37, row 7: the README's path from install to a decision comes right after the quick
    start and before the verification table; every `olmocr-rl` line in it names a command and
    options that exist, curate's sample count is its default, and the comparison it quotes is
    what `bench` prints first on the fixtures."""
    import re
    import shlex

    root = Path(__file__).resolve().parent.parent
    monkeypatch.chdir(root)  # the quoted output names the bench folder as typed
    readme = (root / "README.md").read_text(encoding="utf-8")
    heads = [line for line in readme.splitlines() if line.startswith("## ")]
    assert heads[:2] == ["## Quick start", "## From install to a decision"]
    assert heads.index("## What is here, and how it is verified") > heads.index("## Command line")
    path = readme.split("## From install to a decision")[1].split("\n## ")[0]
    for word in ("pip install .", "allenai/olmOCR-bench", "bench_data", "--compare", "--report", "prepare", "curate", "train", "_files/"):
        assert word in path, word
    commands = typer.main.get_command(app).commands
    lines = [line.split("  #")[0].strip() for block in re.findall(r"```bash\n(.*?)```", path, re.S) for line in block.splitlines()]
    used = [shlex.split(line) for line in lines if line.startswith("olmocr-rl ")]
    assert len(used) >= 8
    for words in used:
        command = commands[words[1]]
        known = {o for p in command.params for o in p.opts + p.secondary_opts}
        assert all(w in known for w in words[2:] if w.startswith("-")), words
    samples = next(p.default for p in commands["curate"].params if p.name == "samples")
    assert f"# {samples} samples a page (--samples)" in path and "--samples 16" not in readme
    quoted = path.split("olmocr-rl bench bench_fixtures -c demo_model -c other_model --compare\n")[1].split("```")[0]
    printed = invoke(["bench", "bench_fixtures", "-c", "demo_model", "-c", "other_model", "--compare"], env={"COLUMNS": "200"})
    said = " ".join(line.removeprefix("# ") for line in quoted.splitlines())
    assert said == " ".join(printed.stdout.splitlines()[:2])


def test_a_ctrl_c_no_command_caught_is_one_error_line(tmp_path, monkeypatch):
    """typer turns a KeyboardInterrupt its command does not catch into a silent status 130: the
    command line says it was interrupted (issue 49: `prepare` printed nothing)."""
    import olmocr_rl.report

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(olmocr_rl.report, "run_report", interrupted)
    res = invoke(["report", str(tmp_path)])
    assert res.exit_code == 130 and res.stderr == "error: interrupted\n", res.output
