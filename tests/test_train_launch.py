"""The accelerate/DeepSpeed launchers: command construction (one rank entry point, one argv form,
one set of DeepSpeed presets for both launchers), environment."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
import yaml

from olmocr_rl.errors import ConfigError
from olmocr_rl.launch.launchers import (
    LaunchOptions,
    accelerate_argv,
    ddp_config_file,
    deepspeed_config_file,
    format_plan,
    launch_env,
    torch_extensions_dir,
)
from olmocr_rl.train.rank import ENTRY_MODULE, rank_program

PREP = Path("/data/prep")


def build_launch_argv(prepared, config, *, mixed_precision="no", devices=None, **launch):
    """accelerate's command for the training ranks, as `olmocr-rl train` builds it."""
    return accelerate_argv(rank_program(prepared, config), LaunchOptions(**launch), mixed_precision=mixed_precision, devices=devices)


def _flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


@pytest.mark.parametrize("zero", [1, 2, 3])
def test_zero_presets_are_deepspeed_configs_with_auto_batching(zero):
    ds = json.loads(deepspeed_config_file(zero).read_text())
    zo = ds["zero_optimization"]
    assert zo["stage"] == zero and zo["offload_optimizer"]["device"] == zo["offload_param"]["device"] == "none"
    assert zo.get("stage3_gather_16bit_weights_on_model_save", False) is (zero == 3)  # a whole model saved under ZeRO-3
    # Filled by the trainer from the training config (docs/training.md): nothing to keep in
    # agreement by hand.
    for key in ("train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps", "gradient_clipping"):
        assert ds[key] == "auto"
    assert ds["bf16"] == {"enabled": "auto"}
    with pytest.raises(ConfigError, match="--zero must be 1, 2 or 3"):
        deepspeed_config_file(4)


def test_ddp_preset():
    cfg = yaml.safe_load(ddp_config_file().read_text())
    assert cfg["distributed_type"] == "MULTI_GPU" and cfg["use_cpu"] is False


def test_argv_single_node(tmp_path):
    cfg = tmp_path / "train_config.json"
    argv = build_launch_argv(PREP, cfg, num_processes=4, zero=2)
    assert argv[:3] == [sys.executable, "-m", "accelerate.commands.launch"]
    # The JSON preset the deepspeed launcher's ranks use too; no accelerate YAML of its own.
    assert "--use_deepspeed" in argv and Path(_flag(argv, "--deepspeed_config_file")) == deepspeed_config_file(2)
    assert "--config_file" not in argv and "--zero3_init_flag" not in argv
    assert _flag(argv, "--num_processes") == "4"
    assert _flag(argv, "--num_machines") == "1"
    assert _flag(argv, "--mixed_precision") == "no"
    assert "--main_process_ip" not in argv
    assert _flag(argv, "--main_process_port") == "0"  # a free port: concurrent runs must not collide
    # The one rank entry point, in the train command's own argv form.
    assert argv[-5:] == ["-m", ENTRY_MODULE, str(PREP), "--config", str(cfg.resolve())]
    assert Path(_flag(build_launch_argv(PREP, cfg, num_processes=2, zero=None), "--config_file")) == ddp_config_file()


def test_argv_multi_node_and_precision(tmp_path):
    cfg = tmp_path / "c.json"
    argv = build_launch_argv(
        PREP, cfg, num_processes=16, zero=3, num_machines=2, machine_rank=1, main_process_ip="10.0.0.1", main_process_port=29501,
        mixed_precision="bf16",
    )  # fmt: skip
    assert _flag(argv, "--num_processes") == "16"  # the total over all machines
    assert _flag(argv, "--num_machines") == "2"
    assert _flag(argv, "--machine_rank") == "1"
    assert _flag(argv, "--main_process_ip") == "10.0.0.1"
    assert _flag(argv, "--main_process_port") == "29501"
    assert _flag(argv, "--mixed_precision") == "bf16"
    assert Path(_flag(argv, "--deepspeed_config_file")).name == "ds_zero3.json" and _flag(argv, "--zero3_init_flag") == "true"
    argv = build_launch_argv(PREP, cfg, num_processes=4, zero=None, num_machines=2, main_process_ip="h")
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
    with pytest.raises(ConfigError, match=message):
        build_launch_argv(PREP, tmp_path / "c.json", **kwargs)


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
    plan = format_plan(build_launch_argv(PREP, tmp_path / "c.json", num_processes=2, zero=2), env)
    assert plan.startswith("TORCH_EXTENSIONS_DIR=/x ") and "accelerate.commands.launch" in plan


def test_the_rank_entry_point_is_the_train_command():
    """`python -m olmocr_rl.train` is `olmocr-rl train` (the form both launchers start)."""
    import subprocess

    proc = subprocess.run([sys.executable, "-m", ENTRY_MODULE, "--help"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "--config" in proc.stdout and "--zero" in proc.stdout


# ---------------------------------------------------------------------------------------------
# the deepspeed launcher (#13)
# ---------------------------------------------------------------------------------------------


def test_deepspeed_argv(tmp_path):
    from olmocr_rl.launch.launchers import deepspeed_argv, launcher_argv

    cfg = tmp_path / "train_config.json"

    def build_deepspeed_argv(prepared, config, *, zero, devices=None, **launch):
        return deepspeed_argv(rank_program(prepared, config, zero), LaunchOptions(zero=zero, **launch), devices=devices)

    argv = build_deepspeed_argv(PREP, cfg, num_processes=4, zero=2, main_process_port=29611)
    assert argv[:3] == [sys.executable, "-m", "deepspeed.launcher.runner"]
    assert _flag(argv, "--num_gpus") == "4" and _flag(argv, "--master_port") == "29611"
    # The same entry point and argv form as accelerate's ranks, with the stage of the JSON preset.
    assert argv[argv.index("--module") + 1 :] == [ENTRY_MODULE, str(PREP), "--config", str(cfg.resolve()), "--zero", "2"]
    # Chosen GPUs (the training share of a --vllm-gpus split): --include, not --num_gpus.
    argv = build_deepspeed_argv(PREP, cfg, num_processes=3, zero=3, devices=["0", "1", "2"])
    assert _flag(argv, "--include") == "localhost:0,1,2" and "--num_gpus" not in argv
    assert int(_flag(argv, "--master_port")) > 0  # a free port, not 0: the launcher needs a real one
    # Several machines: the hostfile names them; the launcher starts every node.
    argv = build_deepspeed_argv(PREP, cfg, num_processes=16, zero=2, num_machines=2, hostfile="hosts", main_process_ip="10.0.0.1")
    assert (_flag(argv, "--hostfile"), _flag(argv, "--num_nodes"), _flag(argv, "--num_gpus")) == ("hosts", "2", "8")
    assert _flag(argv, "--master_addr") == "10.0.0.1" and _flag(argv, "--master_port") == "29500"
    with pytest.raises(ConfigError, match="needs --hostfile"):
        build_deepspeed_argv(PREP, cfg, num_processes=16, zero=2, num_machines=2)
    with pytest.raises(ConfigError, match="give --zero 1, 2 or 3"):
        build_deepspeed_argv(PREP, cfg, num_processes=2, zero=None)
    with pytest.raises(ConfigError, match="--hostfile is for --launcher deepspeed"):
        launcher_argv(rank_program(PREP, cfg), LaunchOptions(num_processes=2, zero=2, hostfile="hosts"))
    with pytest.raises(ConfigError, match="--launcher 'torchrun': choose accelerate or deepspeed"):
        LaunchOptions(launcher="torchrun", num_processes=2, zero=2)


def test_a_deepspeed_launcher_rank_exports_what_accelerate_would(monkeypatch):
    from olmocr_rl.launch.launchers import use_deepspeed_preset

    env = use_deepspeed_preset(2, "bf16", env={})
    assert env["ACCELERATE_USE_DEEPSPEED"] == "true" and env["ACCELERATE_MIXED_PRECISION"] == "bf16"
    assert env["ACCELERATE_DEEPSPEED_CONFIG_FILE"].endswith("ds_zero2.json")


def test_a_launched_rank_is_recognised(monkeypatch):
    from olmocr_rl.train.rank import launched_rank

    for var in ("LOCAL_RANK", "WORLD_SIZE", "TORCHELASTIC_RUN_ID", "LOCAL_SIZE", "CROSS_RANK"):
        monkeypatch.setenv(var, "0")
        monkeypatch.delenv(var)
    assert launched_rank(1)  # the deepspeed launcher's --local_rank
    monkeypatch.setenv("LOCAL_RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "2")
    assert not launched_rank(None)  # leftovers in a shell are not a launch
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "x")  # torchrun
    assert launched_rank(None)


def test_dry_run_of_a_first_run_shows_the_precision_it_will_launch(tmp_path, tiny_model):
    """The accelerate command takes the mixed precision from the config in hand: on a first run the
    resolved config file does not exist yet (it used to say `--mixed_precision no` then)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from clirun import invoke

    out = tmp_path / "never-written"
    res = invoke(["train", str(tmp_path / "prep"), "--model", tiny_model, "-o", str(out), "--num-processes", "2", "--zero", "2",
                  "--dry-run", "bf16=true"])  # fmt: skip
    command = next(line for line in res.stdout.splitlines() if line.startswith("command: "))
    assert "--mixed_precision bf16" in command and not (out / "train_config.json").exists()
    res = invoke(
        ["train", str(tmp_path / "prep"), "--model", tiny_model, "-o", str(out), "--num-processes", "2", "--dry-run", "bf16=false"]
    )
    assert "--mixed_precision no" in next(line for line in res.stdout.splitlines() if line.startswith("command: "))


def test_the_plan_is_one_frozen_resolved_value(prepared, tmp_path):
    """build_plan leaves the config it is given as it was and returns a frozen plan holding the
    resolved, read-only config (bf16 by the one precision rule; with --vllm-gpus the server's mode
    and address) and the resolved launch options, which the commands were built from."""
    from dataclasses import FrozenInstanceError, replace

    from olmocr_rl.train.budget import training_steps
    from olmocr_rl.train.config import load_config, precision
    from olmocr_rl.train.plan import build_plan

    cfg = load_config(None, ["num_generations=4", "gradient_accumulation_steps=2", "vllm_server_host=10.9.9.9"],
                      prepared_dir=str(prepared), model="org/model", output_dir=str(tmp_path / "run"))  # fmt: skip
    before = cfg.to_dict()
    # A described node of 3 GPUs, the last serving: 2 training ranks, bf16 (CUDA there), the server on this node.
    plan = build_plan(cfg, LaunchOptions(vllm_gpus=1, gpus=3, gpu_memory=80.0, main_process_port=29700))
    assert cfg.to_dict() == before and cfg.bf16 is None and cfg.use_vllm is False
    r = plan.cfg
    assert (r.bf16, r.use_vllm, r.vllm_mode, r.vllm_server_host, r.vllm_server_base_url) == (True, True, "server", "127.0.0.1", None)
    assert r.bf16 == precision(cfg, True) and plan.cuda
    assert plan.options.num_processes == plan.world_size == 2 and plan.options.main_process_port == 29700
    assert _flag(plan.launcher_argv, "--num_processes") == "2" and _flag(plan.launcher_argv, "--mixed_precision") == "bf16"
    assert plan.server_argv is not None and plan.grpo_kwargs["bf16"] is True and plan.grpo_kwargs["vllm_mode"] == "server"
    assert plan.steps == training_steps(r, len(plan.inputs.train_rows), 2) > 0
    with pytest.raises(FrozenInstanceError):
        plan.cfg.bf16 = False
    with pytest.raises(FrozenInstanceError):
        plan.cfg.rewards = {}
    with pytest.raises(FrozenInstanceError):
        plan.cfg = cfg
    assert r.rewards is not cfg.rewards and r.trl is not cfg.trl  # its own lists and dicts
    derived = replace(r, max_steps=3)  # a later stage derives another config, the plan's stays
    assert derived.max_steps == 3 and r.max_steps != 3
    # Without CUDA and without --vllm-gpus: bf16 off (asked for: on), the config's own vLLM settings kept.
    assert build_plan(cfg, LaunchOptions(gpus=0)).cfg.bf16 is False
    on = load_config(None, ["num_generations=4", "gradient_accumulation_steps=2", "bf16=true"], prepared_dir=str(prepared),
                     model="org/model", output_dir=str(tmp_path / "run"))  # fmt: skip
    assert build_plan(on, LaunchOptions(gpus=0)).cfg.bf16 is True and build_plan(on, LaunchOptions(gpus=0)).cfg.use_vllm is False


# ---------------------------------------------------------------------------------------------
# the final outputs: exactly one writer (issue 33, defect 3)
# ---------------------------------------------------------------------------------------------

LAUNCHES = {
    "accelerate, one machine": dict(num_processes=2),
    "accelerate, two machines": dict(num_processes=4, num_machines=2, main_process_ip="10.0.0.1"),
    "deepspeed, one machine": dict(num_processes=2, zero=2, launcher="deepspeed"),
    "deepspeed, two machines": dict(num_processes=4, zero=2, launcher="deepspeed", num_machines=2, hostfile="hosts",
                                    main_process_ip="10.0.0.1"),
}  # fmt: skip


@pytest.mark.parametrize("launch", list(LAUNCHES))
def test_the_final_outputs_have_one_writer(prepared, tmp_path, monkeypatch, launch):
    """The parent `olmocr-rl train` writes them when its ranks can be told to leave them to it;
    rank 0 when they cannot (the deepspeed launcher's pdsh passes on only its own variables) and
    when no parent launched them (a user's `deepspeed -m` / `torchrun -m`). Counted over the
    parent and rank 0 of every launch, the launcher in between standing in as the environment it
    passes on."""
    import importlib

    from olmocr_rl.launch.launchers import PARENT_ENV
    from olmocr_rl.train.config import load_config
    from olmocr_rl.train.plan import LaunchOptions, build_plan, execute
    from olmocr_rl.train.rank import rank_main

    worker, plan_module = importlib.import_module("olmocr_rl.train.worker"), importlib.import_module("olmocr_rl.train.plan")
    for var in (
        "PATH",
        "TORCH_EXTENSIONS_DIR",
        "ACCELERATE_USE_DEEPSPEED",
        "ACCELERATE_DEEPSPEED_CONFIG_FILE",
        "ACCELERATE_MIXED_PRECISION",
    ):
        monkeypatch.setenv(var, os.environ.get(var, ""))  # a rank sets them for itself; restored after the test
    written: list[str] = []
    monkeypatch.setattr(worker, "run", lambda cfg, inputs, **kw: {})
    monkeypatch.setattr(worker, "write_final_outputs", lambda cfg: written.append("x") or {"candidate": "c", "bench_command": "b"})
    monkeypatch.setattr(plan_module, "_launch", lambda plan, echo: 0)
    args = ["final_outputs=eval", "num_generations=4", "gradient_accumulation_steps=2"]  # 1 or 2 pages a generation batch (3 here)
    cfg = load_config(None, args, prepared_dir=str(prepared), model="org/model", output_dir=str(tmp_path / "run"))
    plan = build_plan(cfg, LaunchOptions(**LAUNCHES[launch]))
    execute(plan, echo=lambda *a, **k: None)
    passed_on = plan.env if LAUNCHES[launch].get("num_machines", 1) == 1 or launch.startswith("accelerate") else {}
    for var in (PARENT_ENV, "RANK", "WORLD_SIZE"):
        monkeypatch.delenv(var, raising=False)
    if PARENT_ENV in passed_on:
        monkeypatch.setenv(PARENT_ENV, passed_on[PARENT_ENV])
    monkeypatch.setenv("WORLD_SIZE", str(plan.world_size))  # what every launcher tells its ranks
    rank = load_config(plan.config_path, args, prepared_dir=str(prepared))  # what rank 0 reads
    assert rank_main(rank, LAUNCHES[launch].get("zero"), echo=lambda *a, **k: None) == 0
    assert len(written) == 1
    # Without a parent, rank 0 writes them.
    written.clear()
    monkeypatch.delenv(PARENT_ENV, raising=False)
    assert rank_main(rank, None, echo=lambda *a, **k: None) == 0 and len(written) == 1


# ---------------------------------------------------------------------------------------------
# execute: each way a run ends, and what it hands the launcher (issue 50)
# ---------------------------------------------------------------------------------------------


def _execute_plan(prepared, tmp_path, *args, **launch):
    from olmocr_rl.train.config import load_config
    from olmocr_rl.train.plan import build_plan

    cfg = load_config(None, ["num_generations=4", "gradient_accumulation_steps=2", *args], prepared_dir=str(prepared), model="org/model",
                      output_dir=str(tmp_path / "run"))  # fmt: skip
    from dataclasses import replace

    return replace(build_plan(cfg, LaunchOptions(**launch)), problems=())  # what pre-flight says of "org/model" aside


def test_execute_refuses_errors_and_trains_in_process(prepared, tmp_path, monkeypatch, capsys):
    """Pre-flight errors: nothing runs, the count said; one process: the worker trains here on the
    plan's config, inputs and device, its outputs returned, the config written first."""
    from dataclasses import replace

    from olmocr_rl.train import plan as plan_module
    from olmocr_rl.train import worker
    from olmocr_rl.train.preflight import Problem

    plan = _execute_plan(prepared, tmp_path, "final_outputs=eval", gpus=0)
    assert not plan.distributed
    bad = replace(plan, problems=(Problem("a", "m", "f"), Problem("b", "m", "f"), Problem("c", "m", "f", "warning")))
    with pytest.raises(ConfigError, match=r"^2 pre-flight problem\(s\); nothing was launched$"):
        plan_module.execute(bad)
    assert not plan.config_path.exists()
    seen = []
    monkeypatch.setattr(
        worker, "run", lambda cfg, inputs, cuda: seen.append((cfg, inputs, cuda, plan.config_path.exists())) or {"outputs": {"o": 1}}
    )
    assert plan_module.execute(plan) == {"o": 1}
    assert seen == [(plan.cfg, plan.inputs, plan.cuda, True)]


def test_an_interrupted_run_in_process_stops_what_it_started(prepared, tmp_path, monkeypatch):
    """SIGTERM while training here: the DataLoader workers stopped (10 s grace), the run a
    TrainingFailed with status 130 and where to resume."""
    from olmocr_rl import procs
    from olmocr_rl.procs import Interrupted
    from olmocr_rl.train import worker
    from olmocr_rl.train.plan import TrainingFailed, execute

    stopped = []

    class Tree:
        def stop(self, grace):
            stopped.append(grace)

    monkeypatch.setattr(procs, "ProcessTree", Tree)
    monkeypatch.setattr(worker, "run", lambda *a, **k: (_ for _ in ()).throw(Interrupted(15)))
    plan = _execute_plan(prepared, tmp_path, gpus=0)
    with pytest.raises(TrainingFailed) as e:
        execute(plan)
    assert stopped == [10] and e.value.code == 130
    assert str(e.value) == "interrupted (SIGTERM); every process it started was stopped. No checkpoint was written yet."


@pytest.mark.parametrize("machines", [1, 2])
def test_a_launched_runs_lock_status_and_outputs(prepared, tmp_path, monkeypatch, machines):
    """The output folder locked for the launch on one machine (by `train`), not on several (shared
    storage); a non-zero status is a TrainingFailed with it; status 0: the final outputs written
    here from the run's config, none with final_outputs=none."""
    import importlib

    from olmocr_rl.folder_lock import LOCK_NAME
    from olmocr_rl.train import worker
    from olmocr_rl.train.plan import TrainingFailed, execute

    plan_module = importlib.import_module("olmocr_rl.train.plan")
    extra = dict(num_machines=2, main_process_ip="10.0.0.1") if machines == 2 else {}
    plan = _execute_plan(prepared, tmp_path, "final_outputs=eval", num_processes=2 * machines, **extra)
    lock = Path(plan.cfg.output_dir) / LOCK_NAME
    launched, written, code = [], [], {"status": 3}

    def launch(p, echo):
        launched.append((p, echo, lock.read_text() if lock.exists() else None))
        return code["status"]

    monkeypatch.setattr(plan_module, "_launch", launch)
    monkeypatch.setattr(worker, "write_final_outputs", lambda cfg: written.append(cfg) or {"w": 1})
    echo = print
    with pytest.raises(TrainingFailed, match=r"^training exited with status 3$") as e:
        execute(plan, echo=echo)
    assert e.value.code == 3 and not written
    held = f"pid {os.getpid()} (olmocr-rl train)\n" if machines == 1 else None
    assert launched == [(plan, echo, held)]
    code["status"] = 0
    assert execute(plan, echo=echo) == {"w": 1} and written == [plan.cfg]
    from dataclasses import replace

    assert execute(replace(plan, cfg=replace(plan.cfg, final_outputs="none")), echo=echo) is None and len(written) == 1


def test_an_interrupted_launch_says_where_to_resume(prepared, tmp_path, monkeypatch):
    import importlib

    from olmocr_rl.procs import Interrupted
    from olmocr_rl.train.plan import TrainingFailed, execute

    plan_module = importlib.import_module("olmocr_rl.train.plan")
    plan = _execute_plan(prepared, tmp_path, num_processes=2)
    (Path(plan.cfg.output_dir) / "checkpoint-4").mkdir(parents=True)
    monkeypatch.setattr(plan_module, "_launch", lambda p, echo: (_ for _ in ()).throw(Interrupted(2)))
    with pytest.raises(TrainingFailed) as e:
        execute(plan)
    assert e.value.code == 130 and str(e.value) == (
        f"interrupted (SIGINT); every process it started was stopped. Last checkpoint: {Path(plan.cfg.output_dir) / 'checkpoint-4'}; "
        "continue with the same command and --resume auto."
    )


def test_the_launch_with_and_without_a_server(prepared, tmp_path, monkeypatch):
    """No split: the launcher's command and environment, its status. With --vllm-gpus: the server
    (its command, environment, log in the output folder, its address) supervised with the ranks,
    the split said first; on a machine without the server, the ranks alone."""
    from olmocr_rl.launch import launchers, server, supervise
    from olmocr_rl.train.plan import _launch

    calls = []
    monkeypatch.setattr(launchers, "launch", lambda argv, env: calls.append(("launch", argv, env)) or 5)
    plan = _execute_plan(prepared, tmp_path, num_processes=2)
    assert _launch(plan, print) == 5 and calls == [("launch", plan.launcher_argv, plan.env)]

    class Server:
        def __init__(self, *args):
            self.args = args

    monkeypatch.setattr(server, "VLLMServer", Server)
    monkeypatch.setattr(supervise, "supervise", lambda argv, env, **kw: calls.append(("supervise", argv, env, kw)) or 7)
    split = _execute_plan(prepared, tmp_path, "vllm_server_timeout=123", vllm_gpus=1, gpus=3, gpu_memory=80.0)
    said = []
    calls.clear()
    assert _launch(split, said.append) == 7
    ((what, argv, env, kw),) = calls
    assert (what, argv, env, said) == ("supervise", split.launcher_argv, split.env, [split.split.describe()])
    assert kw["timeout"] == 123 and kw["echo"] == said.append
    url = f"http://127.0.0.1:{split.cfg.vllm_server_port}"
    assert kw["server"].args == (split.server_argv, server.server_env(split.split), Path(split.cfg.output_dir) / "logs" / "vllm.log", url)
    from dataclasses import replace

    calls.clear()
    assert _launch(replace(split, server_argv=None), said.append) == 7 and calls[0][3]["server"] is None
