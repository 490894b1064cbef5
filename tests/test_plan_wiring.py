"""The training plan's own decisions, pinned by pure in-process calls (no model, no prepared folder,
no subprocess): what `build_plan` hands each part it calls (the node planned for, pre-flight, the
launcher, the rank program, the vLLM server, trl's arguments) and what it keeps on the plan; what
`memory_estimate` builds the estimate from (the Context of the checks, the rows, the model's image
budget); the words of the plan's lines that the end-to-end tests (test_first_sight_plan.py) leave
open. The parts are replaced by recorders (`record`) that pass through or return a stand-in; the
prepared folder is a fixed `Inputs`."""

from __future__ import annotations

import importlib
import shlex
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest

from olmocr_rl.errors import ConfigError
from olmocr_rl.image_tokens import ImageBudget
from olmocr_rl.launch.launchers import LaunchOptions
from olmocr_rl.train.config import TrainConfig
from olmocr_rl.train.data import Inputs
from olmocr_rl.train.memory import GIB, Memory, Part, Target
from olmocr_rl.train.plan import MemoryPlan, Plan, build_plan, image_lines
from olmocr_rl.train.preflight import Context, Problem

WARNING = Problem("learning_rate", "high", "lower it", "warning")
PORT = Problem("vllm_server_port", "in use", "another port", "error")
ROWS = [{"width": 280, "height": 560, "image_tokens": 1}] * 6
INPUTS = Inputs(Path("/prepared"), manifest={}, train_rows=ROWS, eval_rows=ROWS[:3])
IP = "10.0.0.1"


def record(monkeypatch, module: str, name: str, returns=...):
    """Replaces `module.name` by a recorder of its calls, [(args, kwargs), ...]: it calls the real
    one, or returns `returns` (called with the arguments when callable)."""
    mod = importlib.import_module(module)  # the module, also where a package exports a function of its name
    real, calls = getattr(mod, name), []

    def recorder(*args, **kwargs):
        calls.append((args, kwargs))
        if returns is ...:
            return real(*args, **kwargs)
        return returns(*args, **kwargs) if callable(returns) else returns

    monkeypatch.setattr(mod, name, recorder)
    return calls


@pytest.fixture
def no_model(monkeypatch):
    """No model's shape is readable (and no hub is asked)."""
    from olmocr_rl.train.shape import ShapeUnknown

    def unreadable(*args, **kwargs):
        raise ShapeUnknown("no model here")

    monkeypatch.setattr(importlib.import_module("olmocr_rl.train.shape"), "read_shape", unreadable)
    monkeypatch.setattr(importlib.import_module("olmocr_rl.train.budget"), "read_shape", unreadable)


@pytest.fixture
def parts(monkeypatch, no_model):
    """build_plan's parts, recorded: no CUDA here (unless a test says), the fixed prepared folder,
    pre-flight finding one warning, the server's port taken, stand-ins for the server command and
    trl's arguments; no model readable."""
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(importlib.import_module("olmocr_rl.launch.gpus"), "cuda_available", lambda: False)
    monkeypatch.setattr(importlib.import_module("olmocr_rl.train.preflight"), "run_inputs", lambda cfg, *a: INPUTS)
    return SimpleNamespace(
        preflight=record(monkeypatch, "olmocr_rl.train.preflight", "preflight", lambda *a, **k: [WARNING]),
        ports=record(monkeypatch, "olmocr_rl.train.vllm_server", "port_problems", lambda cfg: [PORT]),
        server=record(monkeypatch, "olmocr_rl.train.vllm_server", "server_argv", ["vllm-serve"]),
        generation=record(monkeypatch, "olmocr_rl.train.grpo", "generation_kwargs", ({"min_p": 0.1}, ["what a rank reads"])),
        grpo=record(monkeypatch, "olmocr_rl.train.grpo", "grpo_kwargs", {"grpo": 1}),
        steps=record(monkeypatch, "olmocr_rl.train.budget", "training_steps"),
        launcher=record(monkeypatch, "olmocr_rl.launch.launchers", "launcher_argv"),
        env=record(monkeypatch, "olmocr_rl.launch.launchers", "launch_env"),
        program=record(monkeypatch, "olmocr_rl.train.plan", "rank_program"),
    )


def cfg_in(tmp_path, **kw) -> TrainConfig:
    return TrainConfig(output_dir=str(tmp_path / "run"), prepared_dir="/prepared", model=str(tmp_path / "no-model"), **kw)


# --- build_plan: what it hands each part ----------------------------------------------------------


@pytest.mark.parametrize(
    "options, world, cuda, expect",
    [
        (LaunchOptions(), 1, False, dict(deepspeed=None, zero=None, vllm_server=False, elsewhere=False, server_tensor_parallel=1)),
        (LaunchOptions(gpus=0), 1, False, dict(deepspeed=None, zero=None, vllm_server=False, elsewhere=False, server_tensor_parallel=1)),
        (LaunchOptions(gpus=4, gpu_memory=80, zero=3), 4, True,
         dict(deepspeed=True, zero=3, vllm_server=False, elsewhere=True, server_tensor_parallel=1)),
        (LaunchOptions(gpus=1, gpu_memory=80), 1, True, dict(deepspeed=None, zero=None, vllm_server=False, elsewhere=True, server_tensor_parallel=1)),
        (LaunchOptions(gpus=3, gpu_memory=80, vllm_gpus=2), 1, True,
         dict(deepspeed=None, zero=None, vllm_server=True, elsewhere=True, server_tensor_parallel=2)),
    ],
    ids=["cpu", "cpu-asked-for", "zero-3-node", "one-gpu-node", "server-tensor-parallel"],
)  # fmt: skip
def test_preflight_gets_the_plans_own_parts(parts, tmp_path, options, world, cuda, expect):
    """Pre-flight checks the resolved config, the world size and the prepared folder read once (the
    same Inputs the plan keeps), with the node planned for, whether it is another machine's (a
    described GPU node from a machine without CUDA), the server's tensor parallel size and the
    probe of a server of the user's own."""
    plan = build_plan(cfg_in(tmp_path), options)
    assert plan.world_size == world and plan.cuda is cuda and plan.inputs is INPUTS
    ((args, kwargs),) = parts.preflight
    assert args[0] is plan.cfg and args[1] == world and args[2] is INPUTS
    assert kwargs == dict(cuda=cuda, target=plan.target, probe_server=True, **expect)


def test_a_node_of_this_machine_is_not_elsewhere(parts, monkeypatch, tmp_path):
    """CUDA here: a --gpus node is this machine's (no `elsewhere`); cuda as the node has GPUs."""
    monkeypatch.setattr(importlib.import_module("olmocr_rl.launch.gpus"), "cuda_available", lambda: True)
    plan = build_plan(cfg_in(tmp_path), LaunchOptions(gpus=2, gpu_memory=80))
    ((_, kwargs),) = parts.preflight
    assert plan.cuda is True and kwargs["elsewhere"] is False and kwargs["cuda"] is True


def test_the_problems_the_plan_keeps(parts, tmp_path):
    """Pre-flight's problems, then the port problems of the server this machine starts (none for a
    plan without one); `strict` makes each an error, and is off unless asked for."""
    cfg = cfg_in(tmp_path)
    assert build_plan(cfg, LaunchOptions()).problems == (WARNING,) and parts.ports == []
    served = build_plan(cfg, LaunchOptions(gpus=2, gpu_memory=80, vllm_gpus=1))
    assert served.problems == (WARNING, PORT) and parts.ports == [((served.cfg,), {})]
    strict = build_plan(cfg, LaunchOptions(), strict=True)
    assert strict.problems == (replace(WARNING, severity="error"),) and strict.problems[0].severity == "error"
    other = build_plan(cfg, LaunchOptions(gpus=2, gpu_memory=80, vllm_gpus=1, num_machines=2, machine_rank=1, main_process_ip=IP))
    assert other.server_argv is None and other.problems == (WARNING,)  # no server on machine rank 1: its ports are not this one's


def test_trl_gets_the_plans_parts_and_the_plan_keeps_the_rest(parts, tmp_path):
    """trl's arguments from the resolved config, CUDA, whether there is evaluation (the rows the ranks
    evaluate: none with max_eval_pages=0), the world size, DeepSpeed and the generation kwargs; the
    generation kwargs read non-strictly (what each rank fills in kept on the plan), the steps from
    the train rows the run takes (max_train_pages), the recipe."""
    cfg = cfg_in(tmp_path, max_train_pages=4)
    plan = build_plan(cfg, LaunchOptions(gpus=2, gpu_memory=80, zero=2), recipe="olmocr2")
    assert parts.generation == [((plan.cfg,), {"strict": False})]
    assert parts.grpo == [((plan.cfg,), dict(cuda=True, has_eval=True, world_size=2, deepspeed=True, generation={"min_p": 0.1}))]
    assert parts.steps == [((plan.cfg, 4, 2), {})]
    assert plan.grpo_kwargs == {"grpo": 1} and plan.unresolved == ("what a rank reads",) and plan.recipe == "olmocr2"
    build_plan(replace(cfg, max_eval_pages=0), LaunchOptions())
    assert parts.grpo[-1][1]["has_eval"] is False and parts.grpo[-1][1]["deepspeed"] is False and parts.grpo[-1][1]["cuda"] is False
    assert build_plan(cfg, LaunchOptions()).recipe is None


def test_the_steps_the_plan_keeps(parts, tmp_path):
    from olmocr_rl.train.budget import training_steps

    cfg = cfg_in(tmp_path, max_train_pages=4, per_device_train_batch_size=1, gradient_accumulation_steps=2, num_generations=2)
    plan = build_plan(cfg, LaunchOptions())
    assert parts.steps[0][0][1:] == (4, 1) and plan.steps == training_steps(plan.cfg, 4, 1) == 4  # 4 pages, one a step


@pytest.mark.parametrize(
    "options, distributed",
    [
        (LaunchOptions(), False),
        (LaunchOptions(zero=2), True),  # DeepSpeed even in one process
        (LaunchOptions(gpus=2, gpu_memory=80, vllm_gpus=1), True),  # one training process beside its server
    ],
    ids=["one-process", "zero", "server"],
)
def test_what_is_launched_rather_than_trained_here(parts, tmp_path, options, distributed):
    plan = build_plan(cfg_in(tmp_path), options)
    assert plan.world_size == 1 and plan.distributed is distributed
    if not distributed:
        assert plan.launcher_argv is None and plan.env is None and parts.launcher == []
    else:
        assert plan.launcher_argv is not None and plan.env is not None and len(parts.launcher) == 1


def test_several_machines_and_the_deepspeed_launcher_are_launched(parts, tmp_path):
    """Two machines, or the deepspeed launcher, are launched even with one process in all: the
    launcher refuses what it cannot start (one process for two machines; DeepSpeed without a ZeRO
    stage), rather than this machine training alone."""
    with pytest.raises(ConfigError, match=r"^--launcher deepspeed runs DeepSpeed: give --zero 1, 2 or 3"):
        build_plan(cfg_in(tmp_path), LaunchOptions(launcher="deepspeed"))
    with pytest.raises(
        ConfigError, match=r"^--num-processes \(1\) is the total over all machines and must be divisible by --num-machines \(2\)$"
    ):
        build_plan(cfg_in(tmp_path), LaunchOptions(num_machines=2, main_process_ip=IP))


def test_the_launcher_and_the_rank_program(parts, monkeypatch, tmp_path):
    """The rank program is told the ZeRO stage under the deepspeed launcher only (accelerate's config
    carries it); the launcher gets the config's precision (a CPU plan: no bf16; a GPU node: bf16)
    and the GPUs to name: none by default, CUDA_VISIBLE_DEVICES's under the deepspeed launcher (which
    ignores the variable, so the ranks' environment drops it), the split's training GPUs."""
    cfg = cfg_in(tmp_path)
    plan = build_plan(cfg, LaunchOptions(launcher="deepspeed", zero=2, num_processes=2))
    assert parts.program[-1][0][2] == 2 and parts.launcher[-1][1] == {"mixed_precision": "no", "devices": None}
    build_plan(cfg, LaunchOptions(zero=2, num_processes=2))
    assert parts.program[-1][0][2] is None
    build_plan(cfg, LaunchOptions(gpus=2, gpu_memory=80, num_processes=2))
    assert parts.launcher[-1][1] == {"mixed_precision": "bf16", "devices": None}
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    plan = build_plan(cfg, LaunchOptions(launcher="deepspeed", zero=2, num_processes=2))
    assert parts.launcher[-1][1]["devices"] == ["2", "3"] and "CUDA_VISIBLE_DEVICES" not in plan.env
    plan = build_plan(cfg, LaunchOptions(num_processes=2))
    assert parts.launcher[-1][1]["devices"] is None and plan.env["CUDA_VISIBLE_DEVICES"] == "2,3"
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    plan = build_plan(cfg, LaunchOptions(gpus=3, gpu_memory=80, vllm_gpus=1))
    assert parts.launcher[-1][1]["devices"] == ["0", "1"] and plan.env["CUDA_VISIBLE_DEVICES"] == "0,1"
    plan = build_plan(cfg, LaunchOptions(launcher="deepspeed", zero=2, gpus=3, gpu_memory=80, vllm_gpus=1))  # --include names them
    assert parts.launcher[-1][1]["devices"] == ["0", "1"] and "CUDA_VISIBLE_DEVICES" not in plan.env


def test_the_ranks_environment_is_per_machine(parts, tmp_path):
    """launch_env is told the local ranks (processes / machines, an int): OMP_NUM_THREADS divides the
    cores among them."""
    import os

    plan = build_plan(cfg_in(tmp_path), LaunchOptions(gpus=2, gpu_memory=80, num_machines=2, main_process_ip=IP))
    assert plan.world_size == 4 and repr(parts.env[-1][0]) == "(2,)"
    assert plan.env["OMP_NUM_THREADS"] == str(max(1, (os.cpu_count() or 1) // 2))


def test_the_server_this_machine_starts(parts, tmp_path):
    """The server binds the loopback on one machine, every interface when other machines' ranks
    connect; on the config's port; for another node when the node is described."""
    one = build_plan(cfg_in(tmp_path), LaunchOptions(gpus=3, gpu_memory=80, vllm_gpus=1))
    assert one.server_argv == ["vllm-serve"]
    assert parts.server[-1] == ((one.cfg, one.split), dict(host="127.0.0.1", port=one.cfg.vllm_server_port, for_node=True))
    two = build_plan(cfg_in(tmp_path), LaunchOptions(gpus=3, gpu_memory=80, vllm_gpus=1, num_machines=2, main_process_ip=IP))
    assert parts.server[-1][1]["host"] == "0.0.0.0" and two.world_size == 4


def test_a_node_with_cuda_here_is_split_by_its_visible_gpus(parts, monkeypatch, tmp_path):
    """This machine's GPUs (CUDA_VISIBLE_DEVICES=4,5,6): the last serves, 4 and 5 train, with or
    without --gpu-memory (which then only describes their memory); a node described by --gpus is
    split as its GPUs 0..N-1."""
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(importlib.import_module("olmocr_rl.launch.gpus"), "cuda_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 3)
    monkeypatch.setattr(importlib.import_module("olmocr_rl.train.memory"), "gpu_memory_here", lambda: 80 * GIB)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5,6")
    for options in (LaunchOptions(vllm_gpus=1), LaunchOptions(vllm_gpus=1, gpu_memory=80)):
        plan = build_plan(cfg_in(tmp_path), options)
        assert (plan.split.train, plan.split.server) == (("4", "5"), ("6",)) and plan.world_size == 2
        assert parts.server[-1][1]["for_node"] is bool(options.gpu_memory)
        assert plan.env["CUDA_VISIBLE_DEVICES"] == "4,5"
    plan = build_plan(cfg_in(tmp_path), LaunchOptions(vllm_gpus=1, gpus=3, gpu_memory=80))  # a node described by --gpus: its 0..N-1
    assert (plan.split.train, plan.split.server) == (("0", "1"), ("2",))


@pytest.mark.parametrize(
    "options, described",
    [
        (LaunchOptions(gpu_memory=80), "node: 1 GPU(s), 80.0 GiB each"),
        (LaunchOptions(gpu_memory=80, num_processes=4), "node: 4 GPU(s), 80.0 GiB each"),
        (LaunchOptions(gpu_memory=80, num_processes=8, num_machines=2, main_process_ip=IP), "node: 4 GPU(s), 80.0 GiB each"),
        (LaunchOptions(gpu_memory=80, num_processes=3, vllm_gpus=1), "node: 4 GPU(s), 80.0 GiB each"),
        (LaunchOptions(gpu_memory=80, vllm_gpus=1), "node: 2 GPU(s), 80.0 GiB each"),
    ],
)
def test_gpu_memory_alone_describes_the_gpus_the_plan_needs(parts, tmp_path, options, described):
    """--gpu-memory without --gpus, from a machine without CUDA: a node of the GPUs the plan asks for
    on one machine (its processes over the machines, plus the server's), split as GPUs 0..N-1 (this
    machine has none to split)."""
    plan = build_plan(cfg_in(tmp_path), options)
    assert plan.target.describe() == f"{described} (as described by --gpus/--gpu-memory)"
    if options.vllm_gpus:
        gpus = plan.target.gpus
        assert plan.split.train == tuple(str(i) for i in range(gpus - 1)) and plan.split.server == (str(gpus - 1),)


def test_the_split_of_a_described_node(parts, tmp_path):
    """--num-processes on several machines is split per machine (an int); more processes than the
    training GPUs is refused, naming them; the server's data parallel size is the config's."""
    plan = build_plan(
        cfg_in(tmp_path), LaunchOptions(gpus=4, gpu_memory=80, vllm_gpus=1, num_processes=4, num_machines=2, main_process_ip=IP)
    )
    assert plan.world_size == 4 and repr(plan.options.num_processes) == "4"
    assert plan.launcher_argv[plan.launcher_argv.index("--num_processes") + 1] == "4"
    with pytest.raises(ConfigError) as e:
        build_plan(cfg_in(tmp_path), LaunchOptions(gpus=4, gpu_memory=80, vllm_gpus=1, num_processes=4))
    assert str(e.value) == "--num-processes 4 needs 4 training GPUs per machine; --vllm-gpus 1 leaves 3 (0,1,2)"
    plan = build_plan(cfg_in(tmp_path, vllm_data_parallel_size=2), LaunchOptions(gpus=4, gpu_memory=80, vllm_gpus=2))
    assert (plan.split.tensor_parallel, plan.split.data_parallel) == (1, 2)


# --- what describe prints of a built plan ---------------------------------------------------------


def test_the_server_and_command_lines(parts, monkeypatch, tmp_path):
    """The server's line: its GPUs and trl's dev-mode switch, nothing else of this environment; the
    launcher's line: the op cache and, beside a server only, the training GPUs; the resolved
    config's file in the verdict, with the hint unless it was printed."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2")
    plan = build_plan(cfg_in(tmp_path), LaunchOptions(gpus=3, gpu_memory=80, vllm_gpus=1))
    lines = plan.describe(config_file="c.json").splitlines()
    assert "server: CUDA_VISIBLE_DEVICES=2 VLLM_SERVER_DEV_MODE=1 vllm-serve" in lines
    command = next(ln for ln in lines if ln.startswith("command: "))
    ops = f"TORCH_EXTENSIONS_DIR={shlex.quote(plan.env['TORCH_EXTENSIONS_DIR'])}"
    assert command == f"command: {ops} CUDA_VISIBLE_DEVICES=0,1 {shlex.join(plan.launcher_argv)}"
    assert lines[-1] == "  config:     c.json (the resolved config; --show-config prints it here)"
    assert plan.describe(show_config=True, config_file="c.json").splitlines()[-1] == "  config:     c.json"
    plain = build_plan(cfg_in(tmp_path), LaunchOptions(num_processes=2))  # CUDA_VISIBLE_DEVICES in its environment, not shown
    command = next(ln for ln in plain.describe().splitlines() if ln.startswith("command: "))
    assert command == f"command: {ops} {shlex.join(plain.launcher_argv)}"


def test_a_distributed_plan_without_its_environment_is_refused(monkeypatch, no_model):
    """A launched plan needs both its command and its environment: describe and the launch stop
    at one without them rather than start a command half-made."""
    from olmocr_rl.train import plan as plan_module

    launched = record(monkeypatch, "olmocr_rl.launch.launchers", "launch", 0)
    for argv, env in ((["accelerate"], None), (None, {"A": "1"})):
        plan = Plan(TrainConfig(), LaunchOptions(num_processes=2), False, True, {}, None, 1, launcher_argv=argv, env=env)
        with pytest.raises(AssertionError):
            plan.describe()
        with pytest.raises(AssertionError):
            plan_module._launch(plan, print)
    assert launched == []


# --- memory_estimate: what the estimate is made of ------------------------------------------------


IMAGE = ImageBudget(14, 2, 56 * 56, 1_000_000, "the shape's processor")
SHAPE = SimpleNamespace(source="model.safetensors headers", image=IMAGE, image_note=None, params=7 * 10**9)
LAYOUT = SimpleNamespace(zero=3, world=2, bf16=True)
TOKENS = SimpleNamespace(sequence=4321)
ESTIMATE = Memory([Part("weights", 20 * GIB, "")], 80 * GIB)
SPLIT = SimpleNamespace(tensor_parallel=2, train=("0", "1"), server=("2", "3"))


@pytest.fixture
def memory_parts(monkeypatch):
    """memory_estimate's parts, recorded: a readable shape (with its processor's image budget), the
    layout, tokens, estimate, server share and weight pushes as stand-ins."""
    return SimpleNamespace(
        shape=record(monkeypatch, "olmocr_rl.train.shape", "read_shape", SHAPE),
        layout=record(monkeypatch, "olmocr_rl.train.preflight", "plan_layout", LAYOUT),
        tokens=record(monkeypatch, "olmocr_rl.train.memory", "tokens_of", TOKENS),
        estimate=record(monkeypatch, "olmocr_rl.train.memory", "estimate_memory", ESTIMATE),
        share=record(monkeypatch, "olmocr_rl.train.memory", "server_share", (40 * GIB, 15 * GIB)),
        pushes=record(monkeypatch, "olmocr_rl.train.memory", "weight_pushes", "pushes: a line"),
    )


def gpu_plan(cfg, options, split=None, target=Target(2, 80 * GIB, True), inputs=INPUTS) -> Plan:
    return Plan(cfg, options, True, True, {}, inputs, 1, launcher_argv=["x"], env={}, split=split, target=target)


def test_the_estimate_is_made_of_the_plans_parts(memory_parts, tmp_path):
    """The shape of the config's model; the checks' Context of this plan (the world size, the
    prepared folder, DeepSpeed and its stage, CUDA, the node, whether a server generates); the
    rows the run takes; the image budget of the model's processor; the weight pushes of the
    layout's stage; a server GPU's share from the node's memory and the split's tensor parallel."""
    cfg = cfg_in(tmp_path, max_train_pages=4)
    target = Target(4, 80 * GIB, True)
    mem = gpu_plan(cfg, LaunchOptions(num_processes=2, zero=3), split=SPLIT, target=target).memory_estimate()
    assert memory_parts.shape == [((cfg.model,), {})]
    ((ctx,), _) = memory_parts.layout[0]
    assert ctx == Context(cfg, 2, INPUTS, True, True, zero=3, target=target, vllm_server=True)
    assert memory_parts.tokens == [((cfg, ROWS[:4], IMAGE), {})]
    assert memory_parts.estimate == [((cfg, SHAPE, LAYOUT, TOKENS), {})]
    assert memory_parts.share == [((cfg, SHAPE, 80 * GIB, 2), {})]
    assert memory_parts.pushes == [((cfg, SHAPE, 3), {})]
    server = ("vLLM takes 40.0 GiB of 80.0 GiB (vllm_server_gpu_memory_utilization="
              f"{cfg.vllm_server_gpu_memory_utilization:g}): 16-bit weights 15.0 GiB, the rest KV cache")  # fmt: skip
    read = ("model: model.safetensors headers", f"image tokens: 200 for the largest page (280x560 px), {IMAGE.describe()}")
    assert mem == MemoryPlan(ESTIMATE, shape=SHAPE, layout=LAYOUT, tokens=TOKENS, server=server, read=read, pushes="pushes: a line")
    # No server, no ZeRO: a Context that says so, no server share (None, not an empty line).
    mem = gpu_plan(cfg, LaunchOptions(num_processes=2)).memory_estimate()
    ctx = memory_parts.layout[-1][0][0]
    assert ctx == Context(cfg, 2, INPUTS, False, True, zero=None, target=Target(2, 80 * GIB, True), vllm_server=False)
    assert mem.server is None and len(memory_parts.share) == 1


def test_no_estimate_without_a_gpu_or_a_readable_model(monkeypatch, tmp_path):
    """A CPU plan and a model whose shape cannot be read: no estimate, why, and the image tokens of
    the largest page all the same (under the default processor, saying so)."""
    from olmocr_rl.train.shape import ShapeUnknown

    cfg = cfg_in(tmp_path)
    default = image_lines(cfg, None, ROWS)
    assert default[0].startswith("image tokens: ") and "Qwen2.5-VL" in default[0]
    cpu = gpu_plan(cfg, LaunchOptions(), target=None).memory_estimate()
    assert cpu == MemoryPlan(why="a CPU plan (give --gpus N --gpu-memory GIB to plan a GPU node)", cpu=True, read=tuple(default))

    def unreadable(*args, **kwargs):
        raise ShapeUnknown("no config.json")

    monkeypatch.setattr(importlib.import_module("olmocr_rl.train.shape"), "read_shape", unreadable)
    assert gpu_plan(cfg, LaunchOptions()).memory_estimate() == MemoryPlan(why="no config.json", read=tuple(default))
    assert gpu_plan(cfg, LaunchOptions(), inputs=None).memory_estimate().cpu is True  # nothing prepared: nothing to estimate


def test_describe_estimates_the_memory_once(monkeypatch, no_model, tmp_path):
    """The estimate reads the model (from the hub, for a hub id): describe makes it once, its lines
    and verdict read that one."""
    calls = []
    real = Plan.memory_estimate

    def counted(self):
        calls.append(1)
        return real(self)

    monkeypatch.setattr(Plan, "memory_estimate", counted)
    plan = Plan(cfg_in(tmp_path), LaunchOptions(), False, False, {}, None, 0)
    plan.describe()
    assert len(calls) == 1
    assert plan._memory_lines(MemoryPlan(why="w", cpu=True)) and len(calls) == 1
    assert plan._memory_lines()[-1].startswith("memory: not estimated for a CPU plan") and len(calls) == 2


def test_describe_says_the_loop_stop_of_the_config(no_model, tmp_path):
    from olmocr_rl.loops import rule_from, stop_line

    cfg = cfg_in(tmp_path, loop_min_repeats=7, max_completion_length=1234)
    line = stop_line(rule_from(cfg), 1234)
    assert line != stop_line(rule_from(TrainConfig()), 1234)
    assert line in Plan(cfg, LaunchOptions(), False, False, {}, None, 0).describe().splitlines()


# --- the memory lines, the verdict's words ------------------------------------------------------------


def test_the_memory_lines_of_each_plan():
    """The node, what was read, then the estimate under its heading (parameters in billions, ranks,
    the ZeRO stage, the precision, the longest sequence), the weight pushes and the server GPU's
    share; without an estimate, why; a CPU plan says how to plan a GPU node."""
    target = Target(2, 80 * GIB, True)
    plan = Plan(TrainConfig(), LaunchOptions(), True, False, {}, None, 0, target=target)
    shape = SimpleNamespace(params=1_375_000_000)  # 1.375 B: rounds to 1.38 (1.37 a hair below)
    mem = MemoryPlan(ESTIMATE, shape=shape, layout=SimpleNamespace(zero=3, world=2, bf16=False), tokens=TOKENS, server="half of it",
                     read=("model: m", "image tokens: 9"), pushes="pushes: a line")  # fmt: skip
    head = "memory per training GPU (estimate; 1.38 B parameters, 2 ranks, ZeRO-3, float32, longest sequence 4,321 tokens):"
    assert plan._memory_lines(mem) == [target.describe(), "model: m", "image tokens: 9", head, *ESTIMATE.lines(), "pushes: a line",
                                       "memory per server GPU: half of it"]  # fmt: skip
    mem = replace(mem, layout=SimpleNamespace(zero=None, world=1, bf16=True), pushes=None, server=None)
    assert (
        plan._memory_lines(mem)[3]
        == "memory per training GPU (estimate; 1.38 B parameters, 1 ranks, no ZeRO, bf16, longest sequence 4,321 tokens):"
    )
    assert plan._memory_lines(mem)[-1] == ESTIMATE.lines()[-1]
    unknown = MemoryPlan(why="no config.json", read=("image tokens: 9",))
    assert plan._memory_lines(unknown) == [target.describe(), "image tokens: 9", "memory: not estimated (no config.json)"]
    cpu = Plan(TrainConfig(), LaunchOptions(), False, False, {}, None, 0)
    assert cpu._memory_lines(MemoryPlan(why="w", cpu=True, read=("image tokens: 9",))) == [
        "image tokens: 9", "memory: not estimated for a CPU plan (give --gpus N --gpu-memory GIB to plan a GPU node)"]  # fmt: skip


def test_the_budget_is_the_plans(monkeypatch, tmp_path):
    """The disk and steps estimate of the rows the run takes (max_train_pages, max_eval_pages), the
    world size, DeepSpeed and its stage; nothing prepared, no rows."""
    calls = record(monkeypatch, "olmocr_rl.train.budget", "estimate", "budget")
    cfg = cfg_in(tmp_path, max_train_pages=4, max_eval_pages=2)
    assert gpu_plan(cfg, LaunchOptions(num_processes=2, zero=3))._budget() == "budget"
    assert calls[-1] == ((cfg, 2, 4, 2), {"deepspeed": True, "zero": 3})
    Plan(cfg, LaunchOptions(), False, False, {}, None, 0)._budget()
    assert calls[-1] == ((cfg, 1, 0, 0), {"deepspeed": False, "zero": None})


def bare(problems=(), **fields) -> Plan:
    return Plan(TrainConfig(), fields.pop("options", LaunchOptions()), False, False, {}, None, 0, problems=tuple(problems), **fields)


def test_the_first_line_and_the_verdict_in_full():
    """The first line whole (the disk's short verdict), two errors in the plural both places, the
    verdict's heading."""
    budget = SimpleNamespace(steps=3, disk_gb=10.0, free_gb=20.0, train_tokens=1, evaluations=0, eval_tokens=0, unknown=None)
    cpu = MemoryPlan(why="w", cpu=True)
    assert bare().summary_line(budget, cpu) == (
        "plan: ready; memory not estimated (a CPU plan); disk fits, 10 GB at the peak, 20 GB free; 3 optimizer steps"
    )
    two = bare([Problem("a", "m", "f", "error"), Problem("b", "m", "f", "error")])
    assert two.summary_line(budget, cpu).startswith("plan: will NOT start (2 errors: a, b);")
    assert two.verdict_lines(budget, cpu, None, False)[:2] == ["verdict:", "  starts:     no: 2 errors (a, b; printed above)"]


def test_one_idle_gpu_is_said():
    plan = bare(options=LaunchOptions(num_processes=7), target=Target(8, 80 * GIB, ""))
    assert plan._idle_note() == " (--num-processes 7: 1 of the 8 GPUs would sit idle; leave --num-processes out to train on every one)"


# --- image_lines ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "rows, words",
    [
        ([{"width": 280, "height": 560}, {"image_tokens": 50}], "200 for the largest page (280x560 px)"),  # 10 x 20 tokens of 28 px
        ([{"image_tokens": 300}], "300 for the largest page"),  # an older prepare's estimate: no size
        ([{"height": 560, "image_tokens": 300}], "300 for the largest page"),  # half a size is none
        ([{"width": 280, "image_tokens": 300}], "300 for the largest page"),
    ],
    ids=["sized", "unsized", "height-only", "width-only"],
)
def test_the_image_tokens_of_the_largest_page(tmp_path, rows, words):
    """Under the model's processor (its shape's budget, nothing assumed): the largest page's tokens
    and its size in pixels where the row has both; under the default processor, what it assumed."""
    cfg = cfg_in(tmp_path)
    assert image_lines(cfg, SHAPE, rows) == [f"image tokens: {words}, {IMAGE.describe()}"]
    (line,) = image_lines(cfg, None, rows)
    assert line.startswith(f"image tokens: {words}, ") and "; image tokens estimated with Qwen2.5-VL's processor: " in line


def test_the_image_budget_without_rows(tmp_path):
    cfg = cfg_in(tmp_path)
    assert image_lines(cfg, SHAPE, []) == [f"image tokens: {IMAGE.describe()}"]
    (line,) = image_lines(cfg, None, [])
    assert line.startswith("image tokens: ") and "; image tokens estimated with Qwen2.5-VL's processor: " in line
