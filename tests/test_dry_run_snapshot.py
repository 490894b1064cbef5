"""The `train --dry-run` plans of the README's and docs/training.md's examples, held to a snapshot
(tests/fixtures/dry_run_snapshot.txt) so that a restructuring of the training half changes no plan
a user reads. Paths, the Python, free disk space, random ports and the plan's config file are
normalised. To accept a deliberate change: `OLMOCR_RL_UPDATE_SNAPSHOT=1 pytest
tests/test_dry_run_snapshot.py`, then read the diff before committing it.

And the README's dry run on the demo's data, run as written after `make demo`'s prepare: it passes,
and its first line is the one the README quotes."""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from pathlib import Path

from conftest import need

need("trl")
from clirun import invoke

SNAPSHOT = Path(__file__).parent / "fixtures" / "dry_run_snapshot.txt"
EXAMPLES = [
    ("one process, the resolved config shown", ["--show-config"], {}),
    ("README: 8 processes, ZeRO-2", ["--num-processes", "8", "--zero", "2"], {}),
    ("training.md: 7 processes", ["--num-processes", "7"], {}),
    ("training.md: two nodes, ZeRO-3", ["--num-processes", "16", "--zero", "3", "--num-machines", "2", "--machine-rank", "0",
                                        "--main-process-ip", "10.0.0.1"], {}),
    ("training.md: the olmocr2 recipe, vLLM server on the last GPU", ["--config", "olmocr2", "--zero", "2", "--vllm-gpus", "1"],
     {"CUDA_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7"}),
    ("training.md: colocated vLLM", ["--num-processes", "8", "--zero", "2", "use_vllm=true", "vllm_mode=colocate",
                                     "vllm_gpu_memory_utilization=0.3", "vllm_enable_sleep_mode=true"], {}),
    ("training.md: the deepspeed launcher", ["--num-processes", "8", "--zero", "2", "--launcher", "deepspeed"], {}),
]  # fmt: skip


def normalise(text: str, tmp: Path) -> str:
    from olmocr_rl.launch.launchers import torch_extensions_dir

    text = text.replace(str(tmp), "<TMP>").replace(str(torch_extensions_dir()), "<EXT>").replace(sys.executable, "<PY>")
    text = text.replace(str(Path(__file__).resolve().parent.parent), "<REPO>").replace(str(Path.home()), "<HOME>")
    text = re.sub(r"[\d,.]+ GB free", "<N> GB free", text)
    text = re.sub(r"\S*olmocr-rl-plan-[0-9a-f]{12}\.json", "<PLAN>", text)
    text = re.sub(r"(--master_port) \d+", r"\1 <PORT>", text)
    return text


def render(prepared: Path, model: Path, tmp: Path) -> str:
    out = []
    for title, args, env in EXAMPLES:
        res = invoke(["train", str(prepared), "--model", str(model), "-o", str(tmp / "run"), *args, "--dry-run"], env=env)
        out.append(f"### {title} (exit {res.exit_code})\n{res.stdout}--- stderr\n{res.stderr}")
    text = "\n".join(out)
    for path in (prepared, model):
        text = text.replace(str(path), f"<{'PREPARED' if path == prepared else 'MODEL'}>")
    return normalise(text, tmp)


def test_the_documented_dry_runs_are_unchanged(prepared, tiny_model, tmp_path):
    got = render(prepared, tiny_model, tmp_path)
    if os.environ.get("OLMOCR_RL_UPDATE_SNAPSHOT"):
        SNAPSHOT.write_text(got, encoding="utf-8")
    assert got == SNAPSHOT.read_text(encoding="utf-8")


def test_the_readmes_dry_run_on_the_demo_data_passes_as_written(tiny_model, tmp_path, monkeypatch):
    root = Path(__file__).resolve().parent.parent
    block = (root / "README.md").read_text(encoding="utf-8").split("**Will it fit?**")[1].split("```bash\n")[1].split("```")[0]
    command, quoted = block.splitlines()[:2]
    words = shlex.split(command)
    assert words[0] == "olmocr-rl" and "--dry-run" in words
    # What `make demo` leaves: its own prepare line (from the Makefile) and the tiny model (the same builder).
    demo = (root / "Makefile").read_text(encoding="utf-8").split("\ndemo:")[1].split("\n\n")[0]
    prepare = next(shlex.split(line.strip()) for line in demo.splitlines() if "olmocr-rl prepare" in line)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bench_fixtures").symlink_to(root / "bench_fixtures")
    assert invoke(prepare[1:]).exit_code == 0
    (tmp_path / "target" / "demo" / "tiny-vlm").symlink_to(tiny_model)
    res = invoke(words[1:])
    assert res.exit_code == 0 and res.stderr == "", res.output
    lines = res.stdout.splitlines()
    assert re.sub(r"[\d,]+ GB free", "NN GB free", lines[0]) == quoted.removeprefix("# "), lines[0]
    closing = lines[lines.index("verdict:") :]
    assert closing[1:4] == ["  starts:     yes", closing[2], closing[3]] and closing[2].startswith("  memory:     fits: 0.9 of 24.0 GiB")
    assert closing[3].startswith("  disk:       fits: 0 GB at the peak") and closing[4].startswith("  steps:      2 optimizer steps")
    assert not (tmp_path / "target" / "demo" / "run2").exists()  # a dry run writes nothing there
    config = Path(closing[-1].split()[1])
    assert config.is_file() and json.loads(config.read_text())["model"] == "target/demo/tiny-vlm"
