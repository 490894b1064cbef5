"""The accelerate/DeepSpeed launcher: command construction, packaged presets, environment."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

from olmocr_rl.train.launch import (
    WORKER_MODULE,
    build_launch_argv,
    config_file,
    format_plan,
    launch_env,
    torch_extensions_dir,
)


def _flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


@pytest.mark.parametrize("zero", [1, 2, 3])
def test_zero_presets_are_deepspeed_configs_with_auto_batching(zero):
    cfg = yaml.safe_load(config_file(zero).read_text())
    assert cfg["distributed_type"] == "DEEPSPEED"
    assert cfg["deepspeed_config"]["zero_stage"] == zero
    assert cfg["deepspeed_config"]["zero3_init_flag"] is (zero == 3)
    # Accumulation and clipping come from the training config (docs/training.md); a value pinned
    # here would have to agree with it by hand.
    assert "gradient_accumulation_steps" not in cfg["deepspeed_config"]
    assert "gradient_clipping" not in cfg["deepspeed_config"]
    assert cfg["use_cpu"] is False  # accelerate skips DeepSpeed when use_cpu is set


def test_ddp_preset():
    assert yaml.safe_load(config_file(None).read_text())["distributed_type"] == "MULTI_GPU"
    with pytest.raises(ValueError, match="--zero must be 1, 2 or 3"):
        config_file(4)


def test_argv_single_node(tmp_path):
    cfg = tmp_path / "train_config.json"
    cfg.write_text(json.dumps({"bf16": False}))
    argv = build_launch_argv(cfg, num_processes=4, zero=2)
    assert argv[:3] == [sys.executable, "-m", "accelerate.commands.launch"]
    assert Path(_flag(argv, "--config_file")) == config_file(2)
    assert _flag(argv, "--num_processes") == "4"
    assert _flag(argv, "--num_machines") == "1"
    assert _flag(argv, "--mixed_precision") == "no"
    assert "--main_process_ip" not in argv
    assert _flag(argv, "--main_process_port") == "0"  # a free port: concurrent runs must not collide
    assert argv[-3:] == ["-m", WORKER_MODULE, str(cfg.resolve())]


def test_argv_multi_node_and_precision(tmp_path):
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"model": "x", "grpo": {"bf16": True}}))
    argv = build_launch_argv(
        cfg, num_processes=16, zero=3, num_machines=2, machine_rank=1, main_process_ip="10.0.0.1", main_process_port=29501
    )
    assert _flag(argv, "--num_processes") == "16"  # the total over all machines
    assert _flag(argv, "--num_machines") == "2"
    assert _flag(argv, "--machine_rank") == "1"
    assert _flag(argv, "--main_process_ip") == "10.0.0.1"
    assert _flag(argv, "--main_process_port") == "29501"
    assert _flag(argv, "--mixed_precision") == "bf16"
    assert Path(_flag(argv, "--config_file")).name == "zero3.yaml"
    argv = build_launch_argv(cfg, num_processes=4, zero=None, num_machines=2, main_process_ip="h")
    assert _flag(argv, "--main_process_port") == "29500"  # nodes must agree on the port


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(num_processes=0, zero=2), "--num-processes must be at least 1"),
        (dict(num_processes=3, zero=2, num_machines=2, main_process_ip="h"), "must be divisible by --num-machines"),
        (dict(num_processes=4, zero=2, num_machines=2), "needs --main-process-ip"),
        (dict(num_processes=4, zero=2, num_machines=2, machine_rank=2, main_process_ip="h"), r"--machine-rank must be in \[0, 2\)"),
    ],
)
def test_argv_errors_name_the_flag(tmp_path, kwargs, message):
    with pytest.raises(ValueError, match=message):
        build_launch_argv(tmp_path / "c.json", **kwargs)


def test_env_caches_deepspeed_ops_and_finds_ninja(monkeypatch, tmp_path):
    monkeypatch.delenv("TORCH_EXTENSIONS_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    ext = torch_extensions_dir()
    assert ext.parent == tmp_path / "olmocr-rl" / "torch_extensions"
    assert ext.name.startswith(f"py{sys.version_info.major}{sys.version_info.minor}_torch")
    env = launch_env(2, base={"PATH": "/usr/bin"})
    assert env["TORCH_EXTENSIONS_DIR"] == str(ext)
    assert env["PATH"].split(":")[0] == str(Path(sys.executable).parent)
    assert int(env["OMP_NUM_THREADS"]) >= 1
    # User settings win.
    env = launch_env(2, base={"PATH": "/usr/bin", "TORCH_EXTENSIONS_DIR": "/x", "OMP_NUM_THREADS": "7"})
    assert env["TORCH_EXTENSIONS_DIR"] == "/x" and env["OMP_NUM_THREADS"] == "7"
    plan = format_plan(build_launch_argv(tmp_path / "c.json", num_processes=2, zero=2), env)
    assert plan.startswith("TORCH_EXTENSIONS_DIR=/x ") and "accelerate.commands.launch" in plan


def test_rank_entry_point_runs_the_worker():
    """Each rank runs `python -m olmocr_rl.train.launch CONFIG`: the worker's main (its usage
    error here), then the process-group shutdown."""
    import subprocess

    proc = subprocess.run([sys.executable, "-m", WORKER_MODULE], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "usage: python -m olmocr_rl.train.worker RESOLVED_CONFIG.json" in proc.stderr


# ---------------------------------------------------------------------------------------------
# the deepspeed launcher (#13)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("zero", [1, 2, 3])
def test_deepspeed_json_presets_match_the_accelerate_presets(zero):
    from olmocr_rl.train.launch import deepspeed_config_file

    ds = json.loads(deepspeed_config_file(zero).read_text())
    acc = yaml.safe_load(config_file(zero).read_text())["deepspeed_config"]
    zo = ds["zero_optimization"]
    assert zo["stage"] == acc["zero_stage"] == zero
    assert zo["offload_optimizer"]["device"] == acc["offload_optimizer_device"]
    assert zo["offload_param"]["device"] == acc["offload_param_device"]
    assert zo.get("stage3_gather_16bit_weights_on_model_save", False) == acc["zero3_save_16bit_model"]
    # Filled by the trainer from the training config: nothing to keep in agreement by hand.
    for key in ("train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps", "gradient_clipping"):
        assert ds[key] == "auto"
    assert ds["bf16"] == {"enabled": "auto"}


def test_deepspeed_argv(tmp_path):
    from olmocr_rl.train.launch import build_deepspeed_argv, launcher_argv

    cfg = tmp_path / "train_config.json"
    argv = build_deepspeed_argv(cfg, num_processes=4, zero=2, main_process_port=29611)
    assert argv[:3] == [sys.executable, "-m", "deepspeed.launcher.runner"]
    assert _flag(argv, "--num_gpus") == "4" and _flag(argv, "--master_port") == "29611"
    assert argv[argv.index("--module") + 1 :] == [WORKER_MODULE, str(cfg.resolve()), "--zero", "2"]
    # Chosen GPUs (the training share of a --vllm-gpus split): --include, not --num_gpus.
    argv = build_deepspeed_argv(cfg, num_processes=3, zero=3, gpus=["0", "1", "2"])
    assert _flag(argv, "--include") == "localhost:0,1,2" and "--num_gpus" not in argv
    assert int(_flag(argv, "--master_port")) > 0  # a free port, not 0: the launcher needs a real one
    # Several machines: the hostfile names them; the launcher starts every node.
    argv = build_deepspeed_argv(cfg, num_processes=16, zero=2, num_machines=2, hostfile="hosts", main_process_ip="10.0.0.1")
    assert (_flag(argv, "--hostfile"), _flag(argv, "--num_nodes"), _flag(argv, "--num_gpus")) == ("hosts", "2", "8")
    assert _flag(argv, "--master_addr") == "10.0.0.1" and _flag(argv, "--master_port") == "29500"
    with pytest.raises(ValueError, match="needs --hostfile"):
        build_deepspeed_argv(cfg, num_processes=16, zero=2, num_machines=2)
    with pytest.raises(ValueError, match="give --zero 1, 2 or 3"):
        build_deepspeed_argv(cfg, num_processes=2, zero=None)
    with pytest.raises(ValueError, match="--hostfile is for --launcher deepspeed"):
        launcher_argv(cfg, "accelerate", num_processes=2, zero=2, hostfile="hosts")
    with pytest.raises(ValueError, match="--launcher must be accelerate or deepspeed"):
        launcher_argv(cfg, "torchrun", num_processes=2, zero=2)


def test_rank_arguments_from_the_deepspeed_launcher(monkeypatch):
    from olmocr_rl.train.launch import rank_args, use_deepspeed_preset

    assert rank_args(["--local_rank=1", "/x/train_config.json", "--zero", "3"]) == (["/x/train_config.json"], 3)
    assert rank_args(["--local_rank", "0", "/x/c.json"]) == (["/x/c.json"], None)
    assert rank_args(["/x/c.json", "--zero=2", "--outputs-only"]) == (["/x/c.json", "--outputs-only"], 2)
    env = use_deepspeed_preset(2, "bf16", env={})
    assert env["ACCELERATE_USE_DEEPSPEED"] == "true" and env["ACCELERATE_MIXED_PRECISION"] == "bf16"
    assert env["ACCELERATE_DEEPSPEED_CONFIG_FILE"].endswith("ds_zero2.json")


def test_a_launched_rank_is_recognised(monkeypatch):
    from types import SimpleNamespace

    from olmocr_rl.cli.train import launched_rank

    for var in ("LOCAL_RANK", "WORLD_SIZE", "TORCHELASTIC_RUN_ID", "LOCAL_SIZE", "CROSS_RANK"):
        monkeypatch.setenv(var, "0")
        monkeypatch.delenv(var)
    assert launched_rank(SimpleNamespace(local_rank=1))  # the deepspeed launcher's --local_rank
    monkeypatch.setenv("LOCAL_RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "2")
    assert not launched_rank(SimpleNamespace(local_rank=None))  # leftovers in a shell are not a launch
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "x")  # torchrun
    assert launched_rank(SimpleNamespace(local_rank=None))


def test_dry_run_of_a_first_run_shows_the_precision_it_will_launch(tmp_path):
    """The accelerate command takes the mixed precision from the config in hand: on a first run the
    resolved config file does not exist yet (it used to say `--mixed_precision no` then)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from clirun import invoke

    out = tmp_path / "never-written"
    res = invoke(["train", str(tmp_path / "prep"), "--model", "m", "-o", str(out), "--num-processes", "2", "--zero", "2",
                  "--dry-run", "bf16=true"])  # fmt: skip
    command = next(line for line in res.stdout.splitlines() if line.startswith("command: "))
    assert "--mixed_precision bf16" in command and not (out / "train_config.json").exists()
    res = invoke(["train", str(tmp_path / "prep"), "--model", "m", "-o", str(out), "--num-processes", "2", "--dry-run", "bf16=false"])
    assert "--mixed_precision no" in next(line for line in res.stdout.splitlines() if line.startswith("command: "))
