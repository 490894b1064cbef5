"""Every key set on the command line reaches the ranks (issue 33, defect 4): `olmocr-rl train` writes
the resolved config (`TrainConfig.to_json`), and each rank a launcher starts reads it back
(`python -m olmocr_rl.train PREPARED --config FILE`). Checked through the rank entry point itself,
whose `--dry-run` prints the config that rank would train with, for a value other than the default
of every field, and for a field added to the dataclass later (in a scratch copy of the package: the
resolved config used to list its keys by hand, and a new field reached the ranks as its default)."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import typing
from pathlib import Path

from conftest import need

need("trl")

from olmocr_rl.train.config import TrainConfig, load_config

# Values the checks at load time constrain (everything else: any value of the field's type).
CHOSEN = {"rewards": {"bench": 0.5, "eos": 0.25}, "report_to": ["wandb"], "resume": "auto", "trl": {"top_k": 7, "vllm_group_port": 51300}}
RANK_ENV = {"LOCAL_RANK": "0", "RANK": "0", "WORLD_SIZE": "1", "TORCHELASTIC_RUN_ID": "test"}


def another(name: str, typ, default):
    """A value of `typ` other than `default`."""
    if name in CHOSEN:
        return CHOSEN[name]
    args = [a for a in typing.get_args(typ) if a is not type(None)]
    if typing.get_origin(typ) is typing.Literal:
        return next(c for c in args if c != default)
    if typing.get_origin(typ) in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        typ = args[0]
    if typ is bool:
        return not default
    if typ is int:
        return (default or 0) + 3
    if typ is float:
        return (default or 0.0) + 0.25
    if typ is list:
        return ["q_proj", "--flag"]
    return "set-on-the-command-line"


def values() -> dict:
    """A value other than the default for every field of TrainConfig (ours and the trl options it states)."""
    from olmocr_rl.train.schema import trl_fields

    hints, defaults = typing.get_type_hints(TrainConfig), TrainConfig()
    out = {}
    for f in dataclasses.fields(TrainConfig):
        typ = trl_fields()[f.name][0] if f.metadata.get("trl") and f.name in trl_fields() else hints[f.name]
        out[f.name] = another(f.name, typ, getattr(defaults, f.name))
    return out


def rank_config(config: Path, prepared: Path, package_root: Path | None = None) -> dict:
    """The config a rank started on `config` would train with (its --dry-run); `package_root`: run
    the olmocr_rl package there (`python -m` puts the working folder first on the path)."""
    env = {**os.environ, **RANK_ENV, **({"PYTHONPATH": str(package_root)} if package_root else {})}
    proc = subprocess.run([sys.executable, "-m", "olmocr_rl.train", str(prepared), "--config", str(config), "--dry-run"],
                          capture_output=True, text=True, timeout=300, env=env, cwd=package_root)  # fmt: skip
    start = proc.stdout.find("{")
    assert start >= 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout[start:])


def overrides(settings: dict) -> list[str]:
    out = []
    for key, value in settings.items():
        if isinstance(value, dict):
            out += [f"{key}.{k}={json.dumps(v)}" for k, v in value.items()]
        else:
            out.append(f"{key}={json.dumps(value)}")
    return out


def test_every_key_set_on_the_command_line_reaches_a_rank(prepared, tmp_path):
    assert set(CHOSEN) <= {f.name for f in dataclasses.fields(TrainConfig)}
    settings = {k: v for k, v in values().items() if k not in ("prepared_dir", "model", "output_dir")}
    cfg = load_config(None, overrides(settings), prepared_dir=str(prepared), model="org/model", output_dir=str(tmp_path / "run"))
    config = cfg.to_json(tmp_path / "train_config.json")  # as `olmocr-rl train` writes it for its ranks
    got = rank_config(config, prepared)
    for key, value in settings.items():
        if key == "rewards":
            value = {"bench": 0.5, "eos": 0.25}
        assert got[key] == value, (key, got[key], value)


def test_a_field_added_later_reaches_a_rank(prepared, tmp_path):
    import olmocr_rl

    copy = tmp_path / "pkg" / "olmocr_rl"
    shutil.copytree(Path(olmocr_rl.__file__).parent, copy, ignore=shutil.ignore_patterns("__pycache__"))
    config_py = copy / "train" / "config.py"
    anchor = '    final_batch_size: int = opt(8, "pages per generate call")\n'
    text = config_py.read_text()
    assert text.count(anchor) == 1, "the anchor of the added field moved"
    config_py.write_text(text.replace(anchor, anchor + '    extra_knob: int = opt(1, "a field added later")\n'))
    write = (f"from olmocr_rl.train.config import load_config; "
             f"load_config(None, ['extra_knob=5'], prepared_dir={str(prepared)!r}, model='org/model', "
             f"output_dir={str(tmp_path / 'run')!r}).to_json({str(tmp_path / 'c.json')!r})")  # fmt: skip
    subprocess.run(
        [sys.executable, "-c", write], check=True, cwd=copy.parent, env={**os.environ, "PYTHONPATH": str(copy.parent)}, timeout=300
    )
    assert rank_config(tmp_path / "c.json", prepared, copy.parent)["extra_knob"] == 5
