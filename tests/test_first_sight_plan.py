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


# --- the verdict's words, every branch (issue 50): pure calls on a plan's parts ------------------------


def _bare_plan(problems=(), **fields):
    """A Plan with only what the verdict reads: its problems, config and launch options."""
    from olmocr_rl.train.config import TrainConfig
    from olmocr_rl.train.plan import Plan

    fields.setdefault("cfg", TrainConfig())
    fields.setdefault("options", LaunchOptions())
    fields.setdefault("grpo_kwargs", {})
    return Plan(cuda=False, distributed=False, inputs=None, steps=0, problems=tuple(problems), **fields)


def _problem(key, severity="error"):
    from olmocr_rl.train.preflight import Problem

    return Problem(key, "m", "f", severity)


def _budget(steps=1, disk_gb=10.0, free_gb=20.0, train_tokens=1000, evaluations=0, eval_tokens=0, unknown=None):
    from types import SimpleNamespace

    return SimpleNamespace(steps=steps, disk_gb=disk_gb, free_gb=free_gb, train_tokens=train_tokens, evaluations=evaluations,
                           eval_tokens=eval_tokens, unknown=unknown)  # fmt: skip


@pytest.mark.parametrize(
    "problems, first, starts",
    [
        ([], "plan: ready;", "yes"),
        ([_problem("a", "warning")], "plan: ready (1 warning);", "yes, with 1 warning (printed above)"),
        ([_problem("a", "warning"), _problem("b", "warning")], "plan: ready (2 warnings);", "yes, with 2 warnings (printed above)"),
        ([_problem("a"), _problem("w", "warning")], "plan: will NOT start (1 error: a);", "no: 1 error (a; printed above)"),
        ([_problem("a"), _problem("b"), _problem("a")], "plan: will NOT start (3 errors: a, b);", "no: 3 errors (a, b; printed above)"),
    ],
)  # fmt: skip
def test_whether_it_starts_in_both_places(problems, first, starts):
    """The first line and the verdict: errors counted and their keys named once each, warnings
    counted, in the singular for one."""
    from olmocr_rl.train.plan import MemoryPlan

    plan, mem = _bare_plan(problems), MemoryPlan(why="w", cpu=True)
    assert plan.summary_line(_budget(), mem).startswith(first)
    assert plan.verdict_lines(_budget(), mem, None, False)[1] == f"  starts:     {starts}"


@pytest.mark.parametrize("steps, words", [(0, "0 optimizer steps"), (1, "1 optimizer step"), (2, "2 optimizer steps")])
def test_the_steps_in_both_places(steps, words):
    from olmocr_rl.train.plan import MemoryPlan

    plan, mem = _bare_plan(), MemoryPlan(why="w", cpu=True)
    assert plan.summary_line(_budget(steps=steps), mem).endswith(f"; {words}")
    line = next(ln for ln in plan.verdict_lines(_budget(steps=steps), mem, None, False) if ln.startswith("  steps:"))
    assert line == f"  steps:      {words} (as trl counts them)" + (": nothing would train" if steps == 0 else "")


@pytest.mark.parametrize(
    "disk, free, short, long",
    [
        (None, 5.0, "disk size unknown", "size unknown (no shape)"),
        (10.4, None, "disk 10 GB at the peak", "disk 10 GB at the peak, free space unknown"),
        (20.0, 20.0, "disk fits, 20 GB at the peak, 20 GB free", "fits: 20 GB at the peak, 20 GB free"),  # exactly the free space fits
        (20.001, 20.0, "disk does NOT fit, 20 GB at the peak, 20 GB free", "does NOT fit: 20 GB at the peak, 20 GB free"),
    ],
)  # fmt: skip
def test_the_disk_verdict_at_the_free_space(disk, free, short, long):
    budget = _budget(disk_gb=disk, free_gb=free, unknown="no shape")
    assert _bare_plan()._disk_verdict(budget, short=True) == short
    assert _bare_plan()._disk_verdict(budget) == long


def test_the_memory_verdict_each_way():
    """Not estimated (a CPU plan or why), the card's size unknown, fits (and how close) or not, short
    and long; the server GPU's line in the verdict."""
    from olmocr_rl.train.plan import MemoryPlan

    plan = _bare_plan()
    assert plan._memory_verdict(MemoryPlan(why="why", cpu=True), short=True) == "memory not estimated (a CPU plan)"
    assert plan._memory_verdict(MemoryPlan(why="why"), short=True) == "memory not estimated (see above)"
    assert plan._memory_verdict(MemoryPlan(why="why", cpu=True)) == "not estimated: why"
    assert (
        plan._memory_verdict(MemoryPlan(Memory([Part("weights", 3 * GIB, "")])))
        == "memory 3.0 GiB per training GPU (the card's size unknown)"
    )
    roomy = Memory([Part("weights", 40 * GIB, "")], 80 * GIB)
    assert plan._memory_verdict(MemoryPlan(roomy), short=True) == "memory fits, 40.0 of 80.0 GiB per training GPU (50 %)"
    assert (
        plan._memory_verdict(MemoryPlan(roomy))
        == "fits: 40.0 of 80.0 GiB per training GPU (50 %) at the peak (an estimate; usable: the card less 1 GiB)"
    )
    over = Memory([Part("weights", 79.5 * GIB, "")], 80 * GIB)
    assert plan._memory_verdict(MemoryPlan(over), short=True) == "memory does NOT fit, 79.5 of 80.0 GiB per training GPU (99 %)"
    close = fit(0.5 * GIB)
    assert plan._memory_verdict(MemoryPlan(close), short=True).endswith(f"(98 %; {close.spare_words()})")
    lines = plan.verdict_lines(_budget(), MemoryPlan(roomy, server="vLLM takes half"), None, False)
    assert lines[2].startswith("  memory:     fits: 40.0") and lines[3] == "  server GPU: vLLM takes half"
    assert not any(ln.startswith("  server GPU") for ln in plan.verdict_lines(_budget(), MemoryPlan(roomy), None, False))


def test_the_generation_and_config_lines_of_the_verdict():
    """Training tokens; an evaluation's tokens times their count when there are evaluations; online
    filtering's worst case first; where the resolved config is, and whether it was printed."""
    from olmocr_rl.train.config import TrainConfig
    from olmocr_rl.train.plan import MemoryPlan

    mem = MemoryPlan(why="w", cpu=True)
    lines = _bare_plan().verdict_lines(_budget(train_tokens=12345), mem, None, False)
    assert lines[-1] == "  generation: up to 12,345 completion tokens for training"
    lines = _bare_plan().verdict_lines(_budget(train_tokens=12345, evaluations=3, eval_tokens=4000), mem, "/tmp/c.json", False)
    assert lines[-2:] == ["  generation: up to 12,345 completion tokens for training, 4,000 per evaluation x 3",
                          "  config:     /tmp/c.json (the resolved config; --show-config prints it here)"]  # fmt: skip
    assert _bare_plan().verdict_lines(_budget(), mem, "/tmp/c.json", True)[-1] == "  config:     /tmp/c.json"
    cfg = TrainConfig(filter_groups=True, filter_extra_rounds=2, per_device_train_batch_size=2, gradient_accumulation_steps=3,
                      num_generations=4)  # fmt: skip
    line = _bare_plan(cfg=cfg, options=LaunchOptions(num_processes=2)).verdict_lines(_budget(train_tokens=5), mem, None, False)[-1]
    assert line == ("  generation: at most 36 completions a generation batch (online filtering's worst case, 3 rounds); "
                    "up to 5 completion tokens for training")  # fmt: skip


@pytest.mark.parametrize(
    "gpus, vllm_gpus, machines, world, note",
    [
        (0, None, 1, 1, ""),
        (8, None, 1, 8, ""),  # every GPU trains
        (8, 1, 1, 7, ""),  # the server's GPU is not idle
        (8, 1, 1, 5, " (--num-processes 5: 2 of the 8 GPUs would sit idle; leave --num-processes out to train on every one)"),
        (8, 2, 2, 10, " (--num-processes 10: 2 of the 16 GPUs of the 2 machines would sit idle; leave --num-processes out to train on every one)"),
    ],
)  # fmt: skip
def test_the_idle_gpus_of_the_planned_nodes(gpus, vllm_gpus, machines, world, note):
    target = Target(gpus, 80 * GIB if gpus else None, "")
    plan = _bare_plan(options=LaunchOptions(num_processes=world, vllm_gpus=vllm_gpus, num_machines=machines), target=target)
    assert plan._idle_note() == note
    assert _bare_plan(options=LaunchOptions(num_processes=1))._idle_note() == ""  # no node planned


@pytest.mark.parametrize("launcher, machines, parent", [("accelerate", 1, True), ("accelerate", 2, True), ("deepspeed", 1, True),
                                                        ("deepspeed", 2, False)])  # fmt: skip
def test_who_writes_the_final_outputs(launcher, machines, parent):
    from olmocr_rl.train.plan import parent_writes_outputs

    assert parent_writes_outputs(LaunchOptions(launcher=launcher, num_machines=machines)) is parent
    assert _bare_plan(options=LaunchOptions(launcher=launcher, num_machines=machines)).parent_writes_outputs is parent


def test_the_prompt_line_each_way(monkeypatch):
    """The prepared pages' own instruction, a named prompt in either layout, a name that does not
    resolve (with why)."""
    from olmocr_rl import prompts
    from olmocr_rl.train.config import TrainConfig
    from olmocr_rl.train.plan import prompt_line

    assert prompt_line(TrainConfig(prompt=None)) == "each prepared page's own instruction (prepare --prompt / --prompt-file)"
    ours = prompts.resolve_prompt("olmocr-rl")
    assert prompt_line(TrainConfig(prompt="olmocr-rl")) == f"olmocr-rl: {ours.source}; the image, then the instruction"
    assert prompt_line(TrainConfig(prompt="nope")).startswith("nope: unknown prompt 'nope'; choose from olmocr-rl, olmocr-v4")
    monkeypatch.setattr(prompts, "resolve_prompt", lambda name: prompts.Prompt("olmocr-v4", "t", prompts.TEXT_FIRST, "src"))
    assert prompt_line(TrainConfig(prompt="olmocr-v4")) == "olmocr-v4: src; the instruction before the image"


def test_the_resume_hint(tmp_path):
    from olmocr_rl.train.config import TrainConfig
    from olmocr_rl.train.plan import resume_hint

    assert resume_hint(TrainConfig(output_dir=str(tmp_path / "none"))) == "No checkpoint was written yet."
    assert resume_hint(TrainConfig(output_dir=str(tmp_path))) == "No checkpoint was written yet."
    for n in (2, 10):
        (tmp_path / f"checkpoint-{n}").mkdir()
    hint = resume_hint(TrainConfig(output_dir=str(tmp_path)))
    assert hint == f"Last checkpoint: {tmp_path / 'checkpoint-10'}; continue with the same command and --resume auto."


def test_the_dry_runs_config_file_is_named_after_its_content(tmp_path):
    import hashlib

    from olmocr_rl.train.config import TrainConfig
    from olmocr_rl.train.plan import write_config

    plan = _bare_plan(cfg=TrainConfig(output_dir=str(tmp_path / "never")))
    path = write_config(plan)
    text = json.dumps(plan.cfg.to_dict(), indent=2) + "\n"
    assert path.read_text() == text and path.name == f"olmocr-rl-plan-{hashlib.sha1(text.encode()).hexdigest()[:12]}.json"
    assert not (tmp_path / "never").exists()
    assert write_config(_bare_plan(cfg=TrainConfig(output_dir="other"))) != path


def test_the_dry_runs_lines_of_a_node_with_a_server(prepared, tiny_model, tmp_path):
    """The generation batch as trl builds it (trl.generation_batch_size: 24 completions of 3 per device
    x 2 processes is 4 steps, not the accumulation's 5); machine rank 0 runs the server and says its
    ports, the launcher told which GPUs train; another machine's rank runs none and says where the
    trainer connects."""
    from olmocr_rl.train.vllm_server import weight_sync_port

    cfg = cfg_for(prepared, tiny_model, tmp_path / "run", "per_device_train_batch_size=3", "gradient_accumulation_steps=5",
                  "num_generations=4", "trl.generation_batch_size=24")  # fmt: skip
    plan = build_plan(cfg, LaunchOptions(vllm_gpus=1, gpus=3, gpu_memory=80.0))
    lines = plan.describe().splitlines()
    assert "generation batch: 3 per device x 2 processes x 4 steps = 24 completions = 6 pages x 4 generations" in lines
    port = plan.cfg.vllm_server_port
    assert f"ports: server {port} (vllm_server_port), weight sync {weight_sync_port(plan.cfg)} (trl.vllm_group_port)" in lines
    command = next(ln for ln in lines if ln.startswith("command: "))
    assert "CUDA_VISIBLE_DEVICES=0,1 " in command
    # The memory of the node planned: what was read of the model, the estimate per training GPU, the server's GPU.
    from olmocr_rl.train.shape import read_shape

    mem, shape = plan.memory_estimate(), read_shape(str(tiny_model))
    assert mem.estimate is not None and mem.shape == shape and mem.layout.world == 2 and mem.pushes is None
    assert mem.read[0] == f"model: {shape.source}" and mem.read[1].startswith("image tokens: ") and "for the largest page" in mem.read[1]
    head = (f"memory per training GPU (estimate; {shape.params / 1e9:.2f} B parameters, 2 ranks, no ZeRO, bf16, "
            f"longest sequence {mem.tokens.sequence:,} tokens):")  # fmt: skip
    at = lines.index(head)
    assert lines[at - 2 : at] == list(mem.read) and lines[at + 1 : at + 1 + len(mem.estimate.lines())] == mem.estimate.lines()
    assert mem.server.startswith("vLLM takes ") and f"memory per server GPU: {mem.server}" in lines
    assert f"  server GPU: {mem.server}" in lines and lines[0].startswith("plan: ") and "memory fits, " in lines[0]
    assert lines[lines.index(head) - 3] == plan.target.describe()
    other = build_plan(cfg, LaunchOptions(vllm_gpus=1, gpus=3, gpu_memory=80.0, num_machines=2, machine_rank=1, main_process_ip="10.0.0.1",
                                          num_processes=4))  # fmt: skip
    lines = other.describe().splitlines()
    assert f"server: none on this machine (machine rank 1); the trainer connects to 10.0.0.1:{port}" in lines
    assert not any(ln.startswith("ports: ") for ln in lines)


def test_what_describe_shows_of_the_config_the_rules_and_the_recipe(tmp_path):
    """--show-config: the resolved config as JSON after the first line, trl's arguments (any value
    as a string, output_dir left out); what each rank fills in; the loop stop's and online
    filtering's lines as their modules word them; the memory of a CPU plan; the recipe's departures
    under their heading, one line each."""
    from olmocr_rl.loops import rule_from, stop_line
    from olmocr_rl.recipes import departures
    from olmocr_rl.train.budget import filter_cost
    from olmocr_rl.train.config import TrainConfig

    model = tmp_path / "model.bin"
    model.write_text("")
    cfg = TrainConfig(model=str(model), output_dir=str(tmp_path / "run"), filter_groups=True, per_device_train_batch_size=2,
                      gradient_accumulation_steps=2, num_generations=4)  # fmt: skip
    plan = _bare_plan(cfg=cfg, grpo_kwargs={"output_dir": "o", "where": Path("/x")}, unresolved=("a", "b"), recipe="olmocr2")
    text = plan.describe(show_config=True)
    lines = text.splitlines()
    assert lines[0].startswith("plan: ") and lines[1] == "resolved config:"
    assert "\n".join(lines[2:]).startswith(json.dumps(cfg.to_dict(), indent=2) + "\ntrl.GRPOConfig: ")
    assert 'trl.GRPOConfig: {"where": "/x"}' in lines and "trl.GRPOConfig: each rank fills in generation_kwargs' a; b" in lines
    assert stop_line(rule_from(cfg), cfg.max_completion_length) in lines and not any(ln.startswith("loop stop: off") for ln in lines)
    assert filter_cost(cfg, 1).line() in lines
    assert "memory: not estimated for a CPU plan (give --gpus N --gpu-memory GIB to plan a GPU node)" in lines
    made = departures(cfg)
    assert made, "the defaults depart from upstream's runs somewhere"
    at = lines.index("departures from upstream's olmOCR 2 runs (allenai/olmocr f7cfe4c; docs/training.md):")
    assert lines[at + 1 : at + 1 + len(made)] == [f"  {d.what}: {d.ours} (upstream: {d.upstream}): {d.why}" for d in made]
    assert "departures" not in _bare_plan(cfg=cfg).describe()
    assert "resolved config:" not in _bare_plan(cfg=cfg).describe()
