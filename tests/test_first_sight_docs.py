"""Issue 49, item 7 ("the README's path to a decision is whole"), what needs no training run: the
README's download command is one the installed huggingface_hub has, its install lines say which
commands run without the train extra (prepare does: run here with the train stack hidden), every
command's help ends with an example that parses, one short option means one thing in every command,
and the model card names a hub base model and shows the OCR it was trained for. The README's
comparison with the starting checkpoint and the card of a real run: tests/test_train.py."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import textwrap
from collections import defaultdict
from pathlib import Path

import typer
from clirun import invoke

from olmocr_rl.cli import app

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"


def readme_section(start: str) -> str:
    """The README's text from the paragraph that starts with `start` (a step's bold title) to the
    next step or heading."""
    text = README.read_text(encoding="utf-8")
    assert start in text, start
    rest = text.split(start, 1)[1]
    return start + re.split(r"\n\*\*\d+\. |\n## ", rest, maxsplit=1)[0]


def commands() -> dict:
    return typer.main.get_command(app).commands


# ---------------------------------------------------------------------------------------------
# the README's download and install lines
# ---------------------------------------------------------------------------------------------


def test_the_readme_downloads_the_bench_with_a_command_that_exists():
    """Step 2 names `hf download` (huggingface_hub 1.x and 2.x have no `huggingface-cli`) with
    options the installed `hf` parses; a mistyped option is refused by the same check (exit 2)."""
    hf = Path(sys.executable).parent / "hf"
    assert hf.is_file() and not (Path(sys.executable).parent / "huggingface-cli").exists()
    docs = [README, *(ROOT / "docs").glob("*.md")]
    assert not [p.name for p in docs if "huggingface-cli" in p.read_text(encoding="utf-8")]
    block = readme_section("**2. Get olmOCR-bench**").split("```bash\n")[1].split("```")[0]
    (line,) = [line for line in block.splitlines() if line.strip()]
    words = shlex.split(line)
    assert words[:2] == ["hf", "download"] and "allenai/olmOCR-bench" in words
    assert words[words.index("--repo-type") + 1] == "dataset" and words[words.index("--local-dir") + 1] == "olmOCR-bench"
    # --help after the arguments: hf parses them all (an unknown option is an error) and downloads nothing.
    ok = subprocess.run([str(hf), *words[1:], "--help"], capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0 and "Download files from the Hub" in ok.stdout, ok.stderr
    typo = subprocess.run([str(hf), *(w.replace("--repo-type", "--repo-typo") for w in words[1:]), "--help"],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert typo.returncode == 2 and "No such option" in typo.stderr


# The train extra's libraries (pyproject.toml) and what they bring, by import name: a scoring-only
# install has none of them.
TRAIN_STACK = ("torch", "torchvision", "transformers", "trl", "accelerate", "datasets", "tokenizers", "peft", "safetensors",
               "tensorboard", "deepspeed", "huggingface_hub", "packaging")  # fmt: skip
HIDDEN = textwrap.dedent(
    f"""
    import importlib.abc, sys
    class Hidden(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in {set(TRAIN_STACK)!r}:
                raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
    sys.meta_path.insert(0, Hidden())
    if __name__ == "__main__":
        try:
            import torch
        except ModuleNotFoundError:
            pass
        else:
            raise SystemExit("torch is not hidden")
        from olmocr_rl.cli import main
        sys.exit(main(sys.argv[1:]))
    """
)


def test_prepare_runs_without_the_train_extra_as_the_readme_says(tmp_path):
    """`pip install .` (no train extra) runs prepare and report: here with every library of the
    train extra hidden, in prepare's render workers too. The README's install lines say so, and name curate, train,
    generate and soup (which need the extra) on the train line only."""
    script = tmp_path / "scoring_only.py"
    script.write_text(HIDDEN)
    out = tmp_path / "prepared"
    res = subprocess.run([sys.executable, str(script), "prepare", str(ROOT / "bench_fixtures"), str(out), "--eval-fraction", "0.34"],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    assert (out / "prepared.json").is_file() and len((out / "train.jsonl").read_text().splitlines()) == 3
    from test_reports import fake_run

    run = fake_run(tmp_path / "r")
    res = subprocess.run([sys.executable, str(script), "report", str(run)], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert res.returncode == 0 and (run / "report.html").is_file(), res.stdout + res.stderr
    block = readme_section("**1. Install**").split("```bash\n")[1].split("```")[0]
    scoring, train = [line.split("#", 1)[1] for line in block.splitlines() if line.startswith("pip install")][:2]

    def said(line: str) -> set[str]:
        return set(re.findall(r"[a-z][a-z-]+", line))

    assert {"bench", "check", "probe", "validate", "prepare", "report"} <= said(scoring)
    assert {"curate", "train", "generate", "soup"} <= said(train) and not {"curate", "train", "generate", "soup"} & said(scoring)
    assert "prepare" not in said(train)


# ---------------------------------------------------------------------------------------------
# help: one example per command; one meaning per short option
# ---------------------------------------------------------------------------------------------


def test_every_help_ends_with_one_example_that_parses():
    """Each `olmocr-rl COMMAND --help` ends with one example (olmocr_rl.cli `example`): an `Example:`
    line, then the command in shell-continued lines that fit 60 columns, whose words the command parses
    (its options exist, its arguments fit, its values convert)."""
    for name, command in commands().items():
        res = invoke([name, "--help"], env={"COLUMNS": "60"})
        assert res.exit_code == 0, (name, res.output)
        lines = [line for line in res.stdout.splitlines() if line.strip()]
        starts = [i for i, line in enumerate(lines) if line.strip().startswith("Example")]
        assert len(starts) == 1 and lines[starts[0]] == "  Example:", (name, lines[-4:])
        shown = lines[starts[0] + 1 :]
        assert all(line.endswith(" \\") for line in shown[:-1]) and not shown[-1].endswith("\\"), (name, shown)
        assert max(len(line) for line in shown) <= 60, (name, shown)
        words = shlex.split(" ".join(line.removesuffix(" \\") for line in shown))
        assert words[:2] == ["olmocr-rl", name], words
        command.make_context(name, words[2:])  # a usage error raises here


def test_a_mistyped_example_would_not_parse():
    """The check above can fail: an option the command lacks is a usage error."""
    import pytest

    with pytest.raises(Exception, match="No such option"):
        commands()["report"].make_context("report", ["run", "--nosuch"])


# A short option may stand for differently named long options only where they mean the same: -o is
# where the command writes (train's --output-dir is trl's own name for it, output_dir).
SAME_MEANING = ({"--output", "--output-dir"},)


def short_options() -> dict[str, set[tuple[str, str]]]:
    """Each short option of every command -> the (long option, command) pairs it stands for."""
    found: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for name, command in commands().items():
        for p in command.get_params(typer.Context(command, info_name=name)):
            if p.param_type_name != "option":
                continue
            names = p.opts + p.secondary_opts
            longs = sorted(o for o in names if o.startswith("--"))
            for short in (o for o in names if not o.startswith("--")):
                found[short].add((longs[0] if longs else p.name, name))
    return found


def clashes(found: dict[str, set[tuple[str, str]]]) -> dict[str, list[tuple[str, str]]]:
    out = {}
    for short, uses in found.items():
        longs = {long for long, _ in uses}
        if len(longs) > 1 and not any(longs <= same for same in SAME_MEANING):
            out[short] = sorted(uses)
    return out


def test_one_meaning_per_short_option():
    """A short option means one long option in every command that has it (`-c` was --config in
    train and curate, --candidate in bench and generate)."""
    found = short_options()
    assert found["-o"] and found["-c"]  # the collection sees the options
    assert clashes(found) == {}
    # The check can fail: the old -c.
    assert clashes({"-c": {("--config", "train"), ("--candidate", "bench")}}) == {"-c": [("--candidate", "bench"), ("--config", "train")]}


# ---------------------------------------------------------------------------------------------
# the model card
# ---------------------------------------------------------------------------------------------


def test_the_model_card_of_a_hub_base_model():
    """A hub id is linked and named in the metadata (`base_model`, which the hub reads); olmOCR 2's
    instruction comes before the image, as the run had it, and `generate` is told `--prompt
    olmocr-v4`; the code is valid Python with the instruction as a literal."""
    import ast

    import yaml

    from olmocr_rl.prompts import IMAGE_FIRST, TEXT_FIRST
    from olmocr_rl.train.card import CardFacts, model_card

    instruction = 'Attached is one page of a document.\n"Quotes", a backslash \\ and {braces}.'
    facts = CardFacts(name="run", base_model="allenai/olmOCR-2-7B-1025", model_id="runs/tok1", instruction=instruction, layout=TEXT_FIRST,
                      longest_side=1288, max_new_tokens=8000, pages=1, prompt_option=" --prompt olmocr-v4")  # fmt: skip
    card = model_card(facts)
    meta = yaml.safe_load(card.split("---\n")[1])
    assert meta["base_model"] == "allenai/olmOCR-2-7B-1025" and meta["pipeline_tag"] == "image-text-to-text"
    body = " ".join(card.split("---\n", 2)[2].split())
    assert "fine-tuned version of [allenai/olmOCR-2-7B-1025](https://huggingface.co/allenai/olmOCR-2-7B-1025), trained on 1 page" in body
    assert "its longest side 1288 px" in body and "olmocr-rl generate runs/tok1 BENCH_DIR --candidate NAME --prompt olmocr-v4" in body
    code = card.split("```python\n")[1].split("```")[0]
    tree = ast.parse(code)
    values = {n.targets[0].id: n.value for n in tree.body if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name)}
    assert ast.literal_eval(values["instruction"]) == instruction and ast.literal_eval(values["model_id"]) == "runs/tok1"
    assert 'messages = [{"role": "user", "content": [{"type": "text", "text": instruction}, {"type": "image"}]}]' in code
    first = model_card(CardFacts(name="r", base_model="/models/qwen", model_id="r", instruction="x", layout=IMAGE_FIRST))
    assert '[{"type": "image"}, {"type": "text", "text": instruction}]' in first and "base_model" not in first.split("---\n")[1]
    assert "the model in `/models/qwen` (a local folder)" in first
