"""`olmocr-rl train --vllm-gpus K`: the GPU split, the server command trl builds, and the
orchestration around it, with stand-ins for `vllm serve` (tests/standin_vllm.py: answers /health,
records its arguments and environment, starts a worker child as vLLM does; variants never become
healthy, crash at start, or die mid-run) and for the training launcher (tests/standin_trainer.py).
Every test ends by checking that no process it started is left and the port is free again."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from conftest import need

from olmocr_rl.errors import ConfigError
from olmocr_rl.launch.gpus import GpuSplit, split_gpus, visible_gpus
from olmocr_rl.launch.launchers import free_port
from olmocr_rl.launch.server import ServerError, VLLMServer, port_free, server_env
from olmocr_rl.launch.supervise import supervise
from olmocr_rl.train.config import TrainConfig
from olmocr_rl.train.vllm_server import server_argv

HERE = Path(__file__).resolve().parent
STANDIN = [sys.executable, str(HERE / "standin_vllm.py")]
TRAINER = [sys.executable, str(HERE / "standin_trainer.py")]


def alive(pid: int) -> bool:
    """Running (a zombie nobody reaped yet counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def gone(*pids: int, within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while any(alive(p) for p in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


# ---------------------------------------------------------------------------------------------
# the split and the command
# ---------------------------------------------------------------------------------------------


def test_split_serves_on_the_last_gpus():
    gpus = [str(i) for i in range(8)]
    assert split_gpus(gpus, 1) == GpuSplit(tuple("0123456"), ("7",), 1, 1)
    assert split_gpus(gpus, 2) == GpuSplit(tuple("012345"), ("6", "7"), 2, 1)  # tensor parallel by default
    assert split_gpus(gpus, 2, data_parallel=2) == GpuSplit(tuple("012345"), ("6", "7"), 1, 2)
    assert split_gpus(["4", "5", "6"], 1).train == ("4", "5")  # the ids CUDA_VISIBLE_DEVICES names
    with pytest.raises(ConfigError, match="--vllm-gpus 8 leaves no GPU for training: this node has 8"):
        split_gpus(gpus, 8)
    with pytest.raises(ConfigError, match="not a multiple of vllm_data_parallel_size=2"):
        split_gpus(gpus, 3, data_parallel=2)
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": "2, 3,"}) == ["2", "3"]
    assert visible_gpus({"CUDA_VISIBLE_DEVICES": ""}) == []


def test_server_command_is_the_one_trl_builds():
    need("trl")
    import dataclasses

    from trl.scripts.vllm_serve import ScriptArguments, build_command

    from olmocr_rl.loops import VLLM_PROCESSOR

    cfg = TrainConfig(model="org/model", max_prompt_tokens=3000, max_completion_length=8000, bf16=True,
                      vllm_server_gpu_memory_utilization=0.5, vllm_server_args=["--enable-prefix-caching"])  # fmt: skip
    split = split_gpus(["0", "1", "2", "3"], 2)
    argv = server_argv(cfg, split, host="127.0.0.1", port=8123)
    expected = build_command(ScriptArguments(model="org/model", host="127.0.0.1", port=8123, tensor_parallel_size=2,
                                             gpu_memory_utilization=0.5, max_model_len=11000, dtype="bfloat16"),
                             ["--seed", "42", "--logits-processors", VLLM_PROCESSOR, "--enable-prefix-caching"])  # fmt: skip
    # trl's command, the run's seed (trl starts no server to seed), the loop stop's logits processor (on
    # by default in training; each request switches it on), the user's arguments.
    assert argv == expected
    assert "--logits-processors" not in server_argv(dataclasses.replace(cfg, loop_stop=False), split, host="127.0.0.1", port=8123)
    # The trainer's processor bounds reach the server, so both expand an image into as many tokens.
    bounded = server_argv(TrainConfig(model="org/model", max_pixels=1003520, seed=3), split, host="127.0.0.1", port=8123)
    assert bounded[bounded.index("--seed") + 1] == "3"
    assert json.loads(bounded[bounded.index("--mm-processor-kwargs") + 1]) == {"max_pixels": 1003520}
    assert argv[argv.index("serve") + 1] == "org/model" and "--weight-transfer-config" in argv
    env = server_env(split, base={"PATH": "/bin"})
    assert env == {"PATH": "/bin", "CUDA_VISIBLE_DEVICES": "2,3", "VLLM_SERVER_DEV_MODE": "1"}
    # A wrapper replaces the program, keeps the arguments.
    cfg.vllm_server_command = "apptainer exec img.sif vllm serve"
    wrapped = server_argv(cfg, split, host="127.0.0.1", port=8123)
    assert wrapped[:5] == ["apptainer", "exec", "img.sif", "vllm", "serve"]
    assert wrapped[5:] == expected[expected.index("serve") + 1 :]


# ---------------------------------------------------------------------------------------------
# the orchestration
# ---------------------------------------------------------------------------------------------


def _server(tmp_path: Path, mode: str, port: int, **env: str) -> VLLMServer:
    base = {**os.environ, "STANDIN_MODE": mode, "STANDIN_RECORD": str(tmp_path / "server.json"), **env}
    split = GpuSplit(("0", "1"), ("2",), 1, 1)
    argv = [*STANDIN, "model-x", "--host", "127.0.0.1", "--port", str(port)]
    return VLLMServer(argv, server_env(split, base), tmp_path / "logs" / "vllm.log", f"http://127.0.0.1:{port}", grace=5)


def _trainer(tmp_path: Path, mode: str, port: int) -> tuple[list[str], dict[str, str]]:
    env = {**os.environ, "TRAINER_MODE": mode, "TRAINER_RECORD": str(tmp_path / "trainer.json"), "CUDA_VISIBLE_DEVICES": "0,1"}
    return [*TRAINER, f"http://127.0.0.1:{port}"], env


def _records(tmp_path: Path) -> tuple[dict, dict | None]:
    server = json.loads((tmp_path / "server.json").read_text())
    trainer = tmp_path / "trainer.json"
    return server, json.loads(trainer.read_text()) if trainer.exists() else None


def test_healthy_server_training_succeeds_then_everything_stops(tmp_path):
    port = free_port()
    server = _server(tmp_path, "ok", port)
    argv, env = _trainer(tmp_path, "ok", port)
    lines: list[str] = []
    assert supervise(argv, env, server=server, timeout=30, echo=lines.append) == 0
    srv, trainer = _records(tmp_path)
    assert srv["env"] == {"CUDA_VISIBLE_DEVICES": "2", "VLLM_SERVER_DEV_MODE": "1"}  # the server's GPUs
    assert trainer["health"] == 200 and trainer["env"]["CUDA_VISIBLE_DEVICES"] == "0,1"  # started after health
    assert any("healthy at" in line for line in lines)
    assert gone(srv["pid"], srv["child_pid"]) and port_free(port, "127.0.0.1")
    log = (tmp_path / "logs" / "vllm.log").read_text()
    assert log.startswith("$ ") and "Application startup complete" in log


def test_training_failure_stops_the_server(tmp_path):
    port = free_port()
    argv, env = _trainer(tmp_path, "fail", port)
    assert supervise(argv, env, server=_server(tmp_path, "ok", port), timeout=30, echo=lambda s: None) == 5
    srv, _ = _records(tmp_path)
    assert gone(srv["pid"], srv["child_pid"]) and port_free(port, "127.0.0.1")


def test_never_healthy_times_out_with_the_log_tail(tmp_path):
    port = free_port()
    argv, env = _trainer(tmp_path, "ok", port)
    start = time.monotonic()
    with pytest.raises(ServerError) as err:
        supervise(argv, env, server=_server(tmp_path, "never", port), timeout=3, echo=lambda s: None)
    assert 3 <= time.monotonic() - start < 20
    message = str(err.value)
    assert f"was not healthy after 3 s (vllm_server_timeout); last lines of {tmp_path / 'logs' / 'vllm.log'}" in message
    assert "Application startup complete" in message  # the tail
    srv, trainer = _records(tmp_path)
    assert trainer is None  # training never started
    assert gone(srv["pid"], srv["child_pid"]) and port_free(port, "127.0.0.1")


def test_server_crash_at_start_is_reported_at_once(tmp_path):
    port = free_port()
    argv, env = _trainer(tmp_path, "ok", port)
    start = time.monotonic()
    with pytest.raises(ServerError, match=r"exited with status 2 before it was ready(.|\n)*no kernel image"):
        supervise(argv, env, server=_server(tmp_path, "crash", port), timeout=60, echo=lambda s: None)
    assert time.monotonic() - start < 15  # not the timeout
    assert not (tmp_path / "trainer.json").exists()


def test_server_dying_mid_run_stops_training(tmp_path):
    port = free_port()
    argv, env = _trainer(tmp_path, "hang", port)
    with pytest.raises(ServerError, match=r"exited with status 3 during training; training was stopped(.|\n)*engine core died"):
        supervise(argv, env, server=_server(tmp_path, "die", port, STANDIN_DIE_AFTER="2"), timeout=30, echo=lambda s: None)
    srv, trainer = _records(tmp_path)
    assert trainer is not None  # it was running
    assert gone(srv["pid"], srv["child_pid"], trainer["pid"]) and port_free(port, "127.0.0.1")


DRIVER = textwrap.dedent("""
    import sys
    sys.path.insert(0, {here!r})
    from pathlib import Path
    from olmocr_rl.procs import Interrupted
    from olmocr_rl.launch.supervise import supervise
    from test_vllm_server import _server, _trainer
    tmp, port, mode = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    argv, env = _trainer(tmp, mode, port)
    try:
        supervise(argv, env, server=_server(tmp, "ok", port), timeout=30, grace=3, echo=print)
    except Interrupted as e:
        print("interrupted:", e, flush=True)
        sys.exit(130)
""")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_interrupt_stops_server_and_training(tmp_path, signum):
    """SIGHUP (a dropped ssh session) as SIGINT and SIGTERM: every process the command started is
    gone, the ranks a launcher puts in sessions of their own (as torchrun does) and a rank that
    ignores SIGTERM included."""
    port = free_port()
    driver = subprocess.Popen([sys.executable, "-c", DRIVER.format(here=str(HERE)), str(tmp_path), str(port), "hang-ranks"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)  # fmt: skip
    deadline = time.monotonic() + 60
    while not (tmp_path / "trainer.json").exists():
        assert driver.poll() is None and time.monotonic() < deadline, driver.stdout.read() if driver.stdout else ""
        time.sleep(0.1)
    driver.send_signal(signum)
    out, _ = driver.communicate(timeout=60)
    assert driver.returncode == 130, out
    assert f"interrupted: {signal.Signals(signum).name}" in out
    srv, trainer = _records(tmp_path)
    assert gone(srv["pid"], srv["child_pid"], trainer["pid"], *trainer["ranks"]) and port_free(port, "127.0.0.1")


def test_kill_9_of_the_command_stops_its_children(tmp_path):
    """kill -9 cannot be caught: the server and the launcher are told by their parent-death signal."""
    port = free_port()
    driver = subprocess.Popen([sys.executable, "-c", DRIVER.format(here=str(HERE)), str(tmp_path), str(port), "hang"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)  # fmt: skip
    deadline = time.monotonic() + 60
    while not (tmp_path / "trainer.json").exists():
        assert driver.poll() is None and time.monotonic() < deadline
        time.sleep(0.1)
    driver.kill()
    driver.wait(timeout=10)
    srv, trainer = _records(tmp_path)
    assert gone(srv["pid"], trainer["pid"], within=10)


# ---------------------------------------------------------------------------------------------
# pre-flight: vLLM installed, at a version the installed trl takes, built for this torch
# ---------------------------------------------------------------------------------------------

TRL_REQUIRES = ["accelerate>=1.10.1", 'vllm<=0.31.0,>=0.22.0; extra == "vllm"', 'requests; extra == "vllm"']
VLLM_REQUIRES = ["transformers<5.18.0,>=5.10.4", "torch==2.13.0", "torchvision==0.28.0", 'pytest; extra == "test"']
VLLM_REQUIRES_BY_NAME = {"vllm": VLLM_REQUIRES}


def _fake_environment(monkeypatch, versions: dict[str, str | None]):
    import importlib
    import importlib.util

    preflight = importlib.import_module("olmocr_rl.train.preflight")
    requires = {"trl": TRL_REQUIRES, **VLLM_REQUIRES_BY_NAME}
    monkeypatch.setattr(preflight, "_dist_version", lambda name: versions.get(name))
    monkeypatch.setattr(preflight, "vllm_distribution", lambda: "vllm" if versions.get("vllm") else None)
    monkeypatch.setattr(preflight, "_dist_requires", lambda name: requires.get(name, []))
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: (object() if versions.get("vllm") else None) if name == "vllm" else real(name, *a)
    )
    return preflight


@pytest.mark.parametrize(
    "versions, cuda, problems",
    [
        ({"vllm": None, "trl": "1.16.0"}, True, ["vLLM is not installed"]),
        ({"vllm": "0.31.0+cu129", "trl": "1.16.0", "torch": "2.13.0+cu129", "transformers": "5.17.0"}, True, []),
        ({"vllm": "0.33.0", "trl": "1.16.0", "torch": "2.13.0", "transformers": "5.17.0"}, True,
         ["vLLM 0.33.0 is outside what trl 1.16.0 supports (<=0.31.0,>=0.22.0)"]),
        ({"vllm": "0.31.0", "trl": "1.16.0", "torch": "2.14.1", "transformers": "5.23.0"}, True,
         ["vLLM 0.31.0 needs torch==2.13.0, but torch 2.14.1 is installed",
          "vLLM 0.31.0 needs transformers<5.18.0,>=5.10.4, but transformers 5.23.0 is installed"]),
        # PyPI's CPU build pins torch==2.13.0+cpu, a build PyPI does not have; its torch 2.13.0 runs it.
        ({"vllm": "0.31.0", "trl": "1.16.0", "torch": "2.13.0", "transformers": "5.17.0", "requires": "+cpu"}, True, []),
    ],
)  # fmt: skip
def test_vllm_preflight(monkeypatch, versions, cuda, problems):
    if versions.pop("requires", None):
        monkeypatch.setitem(VLLM_REQUIRES_BY_NAME, "vllm", [r.replace("torch==2.13.0", "torch==2.13.0+cpu") for r in VLLM_REQUIRES])
    preflight = _fake_environment(monkeypatch, versions)
    found = preflight.vllm_problems(cuda)
    assert [p.message for p in found] == problems
    assert all(p.severity == "error" and "use_vllm=false" in p.fix for p in found)
    if any("needs torch" in m or "not installed" in m for m in problems):
        assert "pip install 'olmocr-rl[vllm]'" in found[0].fix


def test_vllm_preflight_without_cuda_accepts_what_works(monkeypatch):
    """Without CUDA (vLLM's CPU build): never server mode (its weight sync is NCCL), colocated
    generation only where the engine takes the trainer's weights (asked of the installed vLLM)."""
    preflight = _fake_environment(monkeypatch, {"vllm": "0.31.0", "trl": "1.16.0", "torch": "2.13.0", "transformers": "5.17.0"})
    server = preflight.vllm_problems(False, "server")
    assert [p.key for p in server] == ["vllm_mode"] and "NCCL" in server[0].message and "vllm_mode=colocate" in server[0].fix
    monkeypatch.setattr(preflight, "cpu_engine_cannot_take_weights", lambda: "it repacks linear weights")
    (problem,) = preflight.vllm_problems(False, "colocate")
    assert problem.key == "use_vllm" and problem.message.endswith("cannot take the trainer's weights: it repacks linear weights")
    monkeypatch.setattr(preflight, "cpu_engine_cannot_take_weights", lambda: None)
    assert preflight.vllm_problems(False, "colocate") == []


def test_vllm_preflight_runs_in_train_preflight(monkeypatch, tmp_path):
    preflight = _fake_environment(monkeypatch, {"vllm": None})
    cfg = TrainConfig(prepared_dir=str(tmp_path), model="m", output_dir=str(tmp_path / "o"), use_vllm=True)
    assert "vLLM is not installed" in [p.message for p in preflight.preflight(cfg, 1, cuda=True)]
    cfg.use_vllm = False
    assert "vLLM is not installed" not in [p.message for p in preflight.preflight(cfg, 1, cuda=False)]


# ---------------------------------------------------------------------------------------------
# through the command line
# ---------------------------------------------------------------------------------------------

sys.path.insert(0, str(HERE))
from clirun import invoke
from training import RECIPE


def _cli(prepared: Path, model: Path, out: Path, port: int, *extra: str) -> list[str]:
    return ["train", str(prepared), "--model", str(model), "-o", str(out), "--config", str(RECIPE), "--vllm-gpus", "1",
            f"vllm_server_port={port}", f"vllm_server_command={sys.executable} {HERE / 'standin_vllm.py'}",
            "vllm_server_timeout=30", "final_outputs=none", *extra]  # fmt: skip


def test_dry_run_prints_the_split_and_both_commands(prepared, tiny_model, tmp_path):
    need("trl")  # the server command is trl's
    res = invoke([*_cli(prepared, tiny_model, tmp_path / "run", 8123), "--dry-run"], env={"CUDA_VISIBLE_DEVICES": "0,1,2,3"})
    assert "GPUs: training on 0,1,2 (3 ranks per node); vLLM server on 3 (tensor parallel 1 x data parallel 1)" in res.stdout
    server = next(line for line in res.stdout.splitlines() if line.startswith("server: "))
    assert "CUDA_VISIBLE_DEVICES=3 VLLM_SERVER_DEV_MODE=1 " in server and "standin_vllm.py" in server
    assert "--port 8123" in server and "--host 127.0.0.1" in server
    command = next(line for line in res.stdout.splitlines() if line.startswith("command: "))
    assert "CUDA_VISIBLE_DEVICES=0,1,2 " in command and "--num_processes 3" in command
    assert "world size: 3" in res.stdout
    # The resolved config the plan writes (its file named at the end of the plan) points at the server.
    config = json.loads(Path(res.stdout.split("\n  config:     ")[1].split()[0]).read_text())
    assert (config["vllm_mode"], config["vllm_server_host"]) == ("server", "127.0.0.1")
    # Another machine of a multi-node run: no server there, the rank-0 address in the config.
    res = invoke([*_cli(prepared, tiny_model, tmp_path / "run", 8123), "--dry-run", "--num-machines", "2", "--machine-rank", "1",
                  "--main-process-ip", "10.1.2.3"], env={"CUDA_VISIBLE_DEVICES": "0,1,2,3"})  # fmt: skip
    assert "server: none on this machine (machine rank 1); the trainer connects to 10.1.2.3:8123" in res.stdout
    assert "--num_processes 6" in res.stdout  # 3 per node x 2


def test_dry_run_checks_both_ports(prepared, tiny_model, tmp_path, monkeypatch):
    """The server's port and trl's weight-sync port (51216 unless trl.vllm_group_port): a second run
    on one node would meet the first on it only when the first weights are pushed."""
    import importlib
    import socket

    preflight = importlib.import_module("olmocr_rl.train.preflight")
    monkeypatch.setattr(preflight, "vllm_problems", lambda cuda, mode="colocate": [])  # no vLLM, no CUDA here

    server_port, sync_port = free_port(), free_port()
    args = [*_cli(prepared, tiny_model, tmp_path / "run", server_port), "--dry-run", f"trl.vllm_group_port={sync_port}"]
    res = invoke(args, env={"CUDA_VISIBLE_DEVICES": "0,1"})
    assert res.exit_code == 0, res.output
    assert f"ports: server {server_port} (vllm_server_port), weight sync {sync_port} (trl.vllm_group_port)" in res.stdout
    with socket.socket() as busy:
        busy.bind(("0.0.0.0", sync_port))
        busy.listen()
        res = invoke(args, env={"CUDA_VISIBLE_DEVICES": "0,1"})
    assert res.exit_code == 1
    assert f"error: trl.vllm_group_port: port {sync_port} for trl's weight sync is in use" in res.stderr
    assert "fix: set trl.vllm_group_port to a free port" in res.stderr


def test_cli_runs_server_then_training_and_cleans_up(prepared, tiny_model, tmp_path, monkeypatch):
    """The command's own wiring: pre-flight (vLLM/CUDA checks stubbed: neither exists here), the
    port check, the server's log path, the launcher environment, the resolved config."""
    need("trl")
    import importlib

    launch = importlib.import_module("olmocr_rl.launch.launchers")
    preflight = importlib.import_module("olmocr_rl.train.preflight")  # the package exports a function of that name

    port = free_port()
    monkeypatch.setattr(preflight, "vllm_problems", lambda cuda, mode="colocate": [])
    monkeypatch.setenv("STANDIN_RECORD", str(tmp_path / "server.json"))
    monkeypatch.setenv("TRAINER_RECORD", str(tmp_path / "trainer.json"))
    seen = {}

    def launcher_argv(program, launch_options, **kw):
        config_path = program[program.index("--config") + 1]
        seen.update(kw, launch=launch_options, config_path=Path(config_path))  # written once the plan stands
        return [*TRAINER, f"http://127.0.0.1:{port}"]

    monkeypatch.setattr(launch, "launcher_argv", launcher_argv)
    out = tmp_path / "run"
    res = invoke(_cli(prepared, tiny_model, out, port), env={"CUDA_VISIBLE_DEVICES": "0,1,2"})
    assert res.exit_code == 0, res.output
    assert seen["launch"].num_processes == 2 and seen["devices"] == ["0", "1"]
    seen["config"] = json.loads(seen["config_path"].read_text())
    assert (seen["config"]["vllm_mode"], seen["config"]["vllm_server_host"], seen["config"]["vllm_server_port"]) == (
        "server",
        "127.0.0.1",
        port,
    )
    srv, trainer = _records(tmp_path)
    assert srv["env"]["CUDA_VISIBLE_DEVICES"] == "2" and trainer["env"]["CUDA_VISIBLE_DEVICES"] == "0,1"
    assert (out / "logs" / "vllm.log").is_file()
    assert gone(srv["pid"], srv["child_pid"]) and port_free(port, "127.0.0.1")

    # The port taken: one error line, nothing started.
    import socket

    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("0.0.0.0", port))
        s.listen()
        res = invoke(_cli(prepared, tiny_model, out, port), env={"CUDA_VISIBLE_DEVICES": "0,1,2"})
    assert res.exit_code == 1 and f"error: vllm_server_port: port {port} for the vLLM server is in use" in res.stderr
