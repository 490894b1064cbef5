"""The plan is the run and fits the node it names (issue 49, item 3): the trl.GRPOConfig a dry run
prints is the one a rank trains with (nothing changes it after `build_grpo_config`); `--gpus N`
without a process count plans N processes (and an explicit count below them says how many GPUs
sit idle); an engine that is not installed, or a server of the user's own that does not answer,
makes the verdict "starts: no" with the fix; a colocated vLLM engine's share is checked against
its 16-bit weights as a server's is; a fit within 1 GiB of the usable memory says how close."""

from __future__ import annotations

import importlib
import json
import socket
import sys
from pathlib import Path

import pytest
from conftest import need

need("trl")
need("torch")
from clirun import invoke

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_memory import seven_b_folder
from training import cfg_for, header_folder, qwen3_vl_moe_30b_config

from olmocr_rl.launch.launchers import LaunchOptions
from olmocr_rl.train import memory
from olmocr_rl.train.memory import GIB, RESERVED, Memory, Part, Target
from olmocr_rl.train.plan import build_plan

GRPO_LINE = "trl.GRPOConfig: "


@pytest.fixture(scope="module")
def seven_b(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("m7") / "olmOCR-2-7B-shaped"
    seven_b_folder(folder)
    return folder


def printed_grpo(plan) -> dict:
    """The trl.GRPOConfig arguments the dry run prints (`--show-config`)."""
    line = next(ln for ln in plan.describe(show_config=True).splitlines() if ln.startswith(GRPO_LINE))
    return json.loads(line[len(GRPO_LINE) :])


def received_args(monkeypatch, plan):
    """The GRPOConfig the rank's trainer is handed: olmocr_rl/train/worker.py `_build` run up to the
    trainer's construction, as `execute` runs it for this plan."""
    from olmocr_rl.train import trainer, worker

    class Received(Exception):
        pass

    got = {}

    def capture(*args, **kwargs):
        got["args"] = kwargs["args"]
        raise Received

    monkeypatch.setattr(trainer, "OlmocrGRPOTrainer", capture)
    with pytest.raises(Received):
        worker._build(plan.cfg, plan.inputs, plan.cuda)
    return got["args"]


def as_json(value):
    return json.loads(json.dumps(value, default=str))


@pytest.mark.parametrize(
    "settings",
    [
        [],  # transformers generates: suppress_tokens
        ["progress=true", "eval_split=none"],  # the rich display's disable_tqdm; no evaluation
        ["use_vllm=true", "vllm_mode=colocate", 'trl.generation_kwargs={"extra_args": {"mine": 1}, "min_p": 0.05}'],
        ["use_vllm=true", "vllm_mode=colocate", "loop_stop=false"],
    ],
    ids=["transformers", "progress-no-eval", "vllm-loop-stop-own-kwargs", "vllm-no-loop-stop"],
)
def test_the_dry_runs_grpo_config_is_what_a_rank_trains_with(monkeypatch, prepared, tiny_model, tmp_path, settings):
    cfg = cfg_for(prepared, tiny_model, tmp_path / "run", *settings)
    plan = build_plan(cfg, LaunchOptions())
    args = received_args(monkeypatch, plan)
    printed = printed_grpo(plan)
    # The dry run prints the plan's arguments; built, they are the whole config the rank's trainer got.
    from trl import GRPOConfig

    assert printed == as_json({k: v for k, v in plan.grpo_kwargs.items() if k != "output_dir"})
    assert as_json(GRPOConfig(**printed, output_dir=plan.cfg.output_dir).to_dict()) == as_json(args.to_dict())
    assert not plan.unresolved
    kwargs = printed["generation_kwargs"]
    ids = ["259", "260", "261", "262"]  # the tiny model's vision placeholders
    if cfg.use_vllm:
        assert sorted(kwargs["logit_bias"]) == ids and set(kwargs["logit_bias"].values()) == {-100.0}
        extra = kwargs.get("extra_args", {})
        assert ("olmocr_rl_loop_end" in extra) == cfg.loop_stop
        if cfg.trl.get("generation_kwargs"):
            assert extra["mine"] == 1 and kwargs["min_p"] == 0.05  # the run's own, beside ours
    else:
        assert sorted(str(i) for i in kwargs["suppress_tokens"]) == ids
    assert printed.get("disable_tqdm", False) is cfg.progress
    assert printed["eval_strategy"] == ("no" if cfg.eval_split == "none" else "steps")


def test_a_model_the_plan_cannot_read_says_what_each_rank_fills_in(prepared, seven_b, tmp_path):
    """A header-only folder (config.json, no tokenizer): the placeholder ids are read from its
    config; the loop stop's end token needs the tokenizer, and the plan says so in place of a
    made-up one (transformers 5 builds an empty tokenizer whose end token is 0)."""
    plan = build_plan(cfg_for(prepared, seven_b, tmp_path / "run", "use_vllm=true", "vllm_mode=colocate"), LaunchOptions())
    assert sorted(plan.grpo_kwargs["generation_kwargs"]["logit_bias"]) == [151652, 151653, 151655, 151656]
    assert "extra_args" not in plan.grpo_kwargs["generation_kwargs"]
    (line,) = [ln for ln in plan.describe().splitlines() if ln.startswith(GRPO_LINE)]
    assert line.startswith("trl.GRPOConfig: each rank fills in generation_kwargs' extra_args (the loop stop's switch and end token")
    assert "has no tokenizer files" in line


# --- the node: --gpus N plans N processes --------------------------------------------------------


@pytest.mark.parametrize(
    "options, world",
    [
        (dict(), 1),  # no GPU here, none described: a CPU plan, one process
        (dict(gpus=0), 1),  # a CPU plan asked for
        (dict(gpus=1, gpu_memory=80), 1),
        (dict(gpus=8, gpu_memory=80), 8),
        (dict(gpus=8, gpu_memory=80, num_processes=2), 2),
        (dict(gpus=8, gpu_memory=80, vllm_gpus=1), 7),
        (dict(gpus=8, gpu_memory=80, num_machines=2, main_process_ip="10.0.0.1"), 16),
        (dict(gpus=8, gpu_memory=80, vllm_gpus=2, num_machines=2, main_process_ip="10.0.0.1"), 12),
    ],
)
def test_gpus_without_a_process_count_plan_one_process_a_gpu(prepared, tiny_model, tmp_path, options, world):
    plan = build_plan(cfg_for(prepared, tiny_model, tmp_path / "run"), LaunchOptions(**options))
    assert plan.world_size == world and plan.distributed == (world > 1)
    if world > 1:
        assert plan.launcher_argv[plan.launcher_argv.index("--num_processes") + 1] == str(world)
    idle = [ln for ln in plan.describe().splitlines() if "would sit idle" in ln]
    assert idle == (["world size: 2 (--num-processes 2: 6 of the 8 GPUs would sit idle; leave --num-processes out to train on every one)"]
                    if options.get("num_processes") else [])  # fmt: skip


def test_the_gpus_found_here_are_planned_one_process_each(monkeypatch, prepared, tiny_model, tmp_path):
    """No --gpus on a machine with 4 GPUs: 4 processes (one GPU: one, trained in this process)."""
    import torch

    from olmocr_rl.launch import gpus

    monkeypatch.setattr(gpus, "cuda_available", lambda: True)
    monkeypatch.setattr(memory, "gpu_memory_here", lambda: 80 * GIB)
    for count, world in ((4, 4), (1, 1)):
        monkeypatch.setattr(torch.cuda, "device_count", lambda: count)
        plan = build_plan(cfg_for(prepared, tiny_model, tmp_path / "run"), LaunchOptions())
        assert plan.world_size == world and plan.target.gpus == count and plan.distributed == (world > 1)


def test_the_dry_run_of_an_8_gpu_node_plans_8_processes(prepared, tiny_model, tmp_path):
    res = invoke(["train", prepared, "--model", tiny_model, "-o", tmp_path / "run", "--gpus", "8", "--gpu-memory", "80", "--dry-run"])
    lines = res.stdout.splitlines()
    assert "world size: 8" in lines and "this process trains" not in res.stdout
    assert next(ln for ln in lines if ln.startswith("command: ")).count("--num_processes 8") == 1


# --- the engine: installed, its server reachable ------------------------------------------------------


def test_vllm_not_installed_stops_a_plan_for_another_node(monkeypatch, prepared, tiny_model, tmp_path):
    """--config olmocr2 (vLLM server mode) planned for an 8-GPU node from this machine: no vLLM in
    the environment train runs from is an error, its fix the project's own extra (pyproject.toml)."""
    import tomllib

    preflight = importlib.import_module("olmocr_rl.train.preflight")  # the package exports a function of that name

    monkeypatch.setattr(preflight, "vllm_distribution", lambda: None)
    res = invoke(["train", prepared, "--model", tiny_model, "-o", tmp_path / "run", "--config", "olmocr2", "--gpus", "8", "--gpu-memory",
                  "80", "--dry-run"])  # fmt: skip
    assert res.exit_code == 1
    assert "error: use_vllm: vLLM is not installed\n  fix: pip install 'olmocr-rl[vllm]'" in res.stderr
    starts = next(ln for ln in res.stdout.splitlines() if ln.startswith("  starts:"))
    assert starts.startswith("  starts:     no:") and "use_vllm" in starts
    extras = tomllib.loads((Path(__file__).resolve().parent.parent / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert "vllm" in extras


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_cfg(prepared, model, tmp_path, *extra):
    return cfg_for(prepared, model, tmp_path / "run", "use_vllm=true", "vllm_mode=server", *extra)


def test_a_server_that_refuses_stops_the_plan(monkeypatch, prepared, tiny_model, tmp_path):
    preflight = importlib.import_module("olmocr_rl.train.preflight")  # the package exports a function of that name

    monkeypatch.setattr(preflight, "vllm_problems", lambda cuda, mode="colocate": [])  # vLLM as if installed
    port = closed_port()
    for extra in (["vllm_server_host=127.0.0.1", f"vllm_server_port={port}"], [f"vllm_server_base_url=http://127.0.0.1:{port}"]):
        plan = build_plan(server_cfg(prepared, tiny_model, tmp_path, *extra), LaunchOptions())
        (problem,) = [p for p in plan.problems if p.key.startswith("vllm_server")]
        assert problem.severity == "error" and problem.key == extra[0].split("=")[0]
        assert (
            problem.message
            == f"vllm_mode=server: the vLLM server at 127.0.0.1:{port} cannot be reached: nothing listens there (connection refused)"
        )
        assert "trl vllm-serve --model" in problem.fix and "--vllm-gpus K" in problem.fix
        assert "  starts:     no: 1 error (vllm_server_" in plan.describe()
    # A server that listens: no problem; the default 0.0.0.0 is this machine's port (trl connects there).
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        port = listening.getsockname()[1]
        for host in ("127.0.0.1", "0.0.0.0"):
            plan = build_plan(
                server_cfg(prepared, tiny_model, tmp_path, f"vllm_server_host={host}", f"vllm_server_port={port}"), LaunchOptions()
            )
            assert not [p for p in plan.problems if p.severity == "error"], plan.problems
    # Planned for another node (--gpus here, no CUDA): its loopback is the node's, not asked here.
    plan = build_plan(server_cfg(prepared, tiny_model, tmp_path, f"vllm_server_port={closed_port()}"), LaunchOptions(gpus=2, gpu_memory=80))
    assert not [p for p in plan.problems if p.severity == "error" and p.key.startswith("vllm_server")]
    # --vllm-gpus: the server is the one train starts, not probed (a rank never probes either).
    plan = build_plan(cfg_for(prepared, tiny_model, tmp_path / "run"), LaunchOptions(gpus=2, gpu_memory=80, vllm_gpus=1))
    assert not [p for p in plan.problems if p.key.startswith("vllm_server_host") or p.key == "vllm_server_base_url"]


def test_a_server_that_does_not_answer_in_time(monkeypatch, prepared, tiny_model, tmp_path):
    """A remote address that drops the connection: the probe gives up after SERVER_PROBE_S."""
    preflight = importlib.import_module("olmocr_rl.train.preflight")  # the package exports a function of that name

    asked = []

    def silent(address, timeout):
        asked.append((address, timeout))
        raise TimeoutError("timed out")

    monkeypatch.setattr(socket, "create_connection", silent)
    problem = preflight.server_problem(server_cfg(prepared, tiny_model, tmp_path, "vllm_server_host=10.1.2.3", "vllm_server_port=8123"))
    assert asked == [(("10.1.2.3", 8123), preflight.SERVER_PROBE_S)]
    assert problem.message.endswith(f"cannot be reached: no answer within {preflight.SERVER_PROBE_S:g} s")


# --- memory: the colocated engine's share, how close a fit is ------------------------------------------


def share_problems(cfg, prepared, world: int, gpu_bytes: int) -> list:
    from olmocr_rl.train.preflight import preflight

    found = preflight(cfg, world, prepared, cuda=True, deepspeed=True, zero=3, target=Target(8, gpu_bytes, True))
    return [p for p in found if p.key == "vllm_gpu_memory_utilization"]


def test_a_colocated_share_that_cannot_hold_the_weights_is_refused(prepared, tmp_path):
    """Qwen3-VL-30B-A3B colocated at vllm_gpu_memory_utilization 0.3 of 80 GiB: 24 GiB for 57.9 GiB of
    16-bit weights (the issue's plan): an error naming changes that hold them."""
    folder = tmp_path / "moe"
    header_folder(folder, qwen3_vl_moe_30b_config(), shards=2)
    cfg = cfg_for(prepared, folder, tmp_path / "run", "use_vllm=true", "vllm_mode=colocate", "lora=true")
    (problem,) = share_problems(cfg, prepared, 8, 80 * GIB)
    assert problem.severity == "error"
    assert problem.message == ("the colocated vLLM engine's share of each training GPU (24.0 GiB: vllm_gpu_memory_utilization=0.3 x 80.0 GiB) "
                               "cannot hold the 16-bit weights (57.9 GiB a GPU)")  # fmt: skip
    fixes = problem.fix.split("; or ")
    assert fixes[0].startswith("raise vllm_gpu_memory_utilization above 0.73 ")
    assert fixes[1] == "set vllm_tensor_parallel_size=4 (14.5 GiB of weights a GPU)"  # 2 (29 GiB) is more than the 24 GiB share
    assert fixes[2].startswith("generate on GPUs of its own: --vllm-gpus K")
    res = invoke(["train", prepared, "--model", folder, "-o", tmp_path / "run", "--gpus", "8", "--gpu-memory", "80", "--zero", "3",
                  "--dry-run", "--set", "use_vllm=true", "--set", "vllm_mode=colocate", "--set", "lora=true"])  # fmt: skip
    assert "error: vllm_gpu_memory_utilization: the colocated vLLM engine's share" in res.stderr
    assert "vllm_gpu_memory_utilization" in next(ln for ln in res.stdout.splitlines() if ln.startswith("  starts:     no"))


def test_the_colocated_share_boundary(prepared, seven_b, tmp_path):
    """Exactly at the weights (a non-default utilization, 0.5, and tensor parallel 1 and 2): a share
    equal to the 16-bit weights is refused, a byte more is not."""
    from olmocr_rl.train.shape import read_shape

    weights = 2 * read_shape(str(seven_b)).params
    for tp in (1, 2):
        cfg = cfg_for(prepared, seven_b, tmp_path / "run", "use_vllm=true", "vllm_mode=colocate", "vllm_gpu_memory_utilization=0.5",
                      f"vllm_tensor_parallel_size={tp}")  # fmt: skip
        shard = weights // tp
        assert memory.colocated_share(cfg, read_shape(str(seven_b)), 2 * shard) == (shard, shard)
        assert [p.severity for p in share_problems(cfg, prepared, 4, 2 * shard)] == ["error"]
        assert share_problems(cfg, prepared, 4, 2 * shard + 2) == []
    server = cfg_for(prepared, seven_b, tmp_path / "run", "use_vllm=true", "vllm_mode=server")
    assert share_problems(server, prepared, 4, 2 * weights // 3) == []  # a server's share is its own GPU's (check_memory's other branch)


def fit(spare: float) -> Memory:
    """A plan whose peak leaves `spare` bytes of the usable memory (the card less RESERVED)."""
    peak = 70 * GIB
    return Memory([Part("weights", peak, "")], int(peak + RESERVED + spare))


def test_how_close_a_fit_is_said_at_the_threshold():
    """Default margin 1 GiB: exactly 1.0 GiB spare is not close, 0.99 is; a non-default margin
    (0.5 GiB) the same at its own edge; nothing spare still fits (and is close), a byte over does not."""
    assert not fit(1.0 * GIB).close() and fit(0.99 * GIB).close()
    assert not fit(0.5 * GIB).close(0.5 * GIB) and fit(0.49 * GIB).close(0.5 * GIB)
    assert fit(0).fits() and fit(0).close()
    assert not fit(-1).fits() and not fit(-1).close()
    assert fit(0.99 * GIB).spare_words() == "0.99 GiB spare of the 71.0 GiB usable: within 1 GiB, a different CUDA/NCCL build may not fit"
    assert fit(0.49 * GIB).spare_words(0.5 * GIB).startswith("0.49 GiB spare of the 70.5 GiB usable: within 0.5 GiB")
    assert fit(1.0 * GIB).spare_words() == ""


def test_a_ready_plan_within_1_gib_says_how_close(prepared, seven_b, tmp_path):
    """7B, olmocr2's settings colocated with sleep mode, 4 x 80 GiB, ZeRO-2: it fits with 0.94 GiB to
    spare and says so in the first line and the verdict; on 81 GiB cards it has 1.64 and says nothing."""
    args = ["train", prepared, "--model", seven_b, "-o", tmp_path / "run", "--config", "olmocr2", "--gpus", "4", "--num-processes", "4", "--zero", "2", "--dry-run",
            "--set", "use_vllm=true", "--set", "vllm_mode=colocate", "--set", "vllm_enable_sleep_mode=true"]  # fmt: skip
    close = "(98 %; 0.94 GiB spare of the 79.0 GiB usable: within 1 GiB, a different CUDA/NCCL build may not fit)"
    res = invoke([*args, "--gpu-memory", "80"])
    first, verdict = res.stdout.splitlines()[0], next(ln for ln in res.stdout.splitlines() if ln.startswith("  memory:"))
    assert f"memory fits, 78.1 of 80.0 GiB per training GPU {close};" in first
    assert verdict.startswith(f"  memory:     fits: 78.1 of 80.0 GiB per training GPU {close} at the peak")
    res = invoke([*args, "--gpu-memory", "81"])
    assert "memory fits, 78.4 of 81.0 GiB per training GPU (97 %);" in res.stdout.splitlines()[0] and "spare" not in res.stdout
