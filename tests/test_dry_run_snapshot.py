"""The `train --dry-run` plans of the README's and docs/training.md's examples, held to a snapshot
(tests/fixtures/dry_run_snapshot.txt) so that a restructuring of the training half changes no plan
a user reads. Paths, the Python, free disk space and random ports are normalised. To accept a
deliberate change: `OLMOCR_RL_UPDATE_SNAPSHOT=1 pytest tests/test_dry_run_snapshot.py`, then read
the diff before committing it."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from conftest import need

need("trl")
from clirun import invoke

SNAPSHOT = Path(__file__).parent / "fixtures" / "dry_run_snapshot.txt"
EXAMPLES = [
    ("one process", [], {}),
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
