"""`OlmocrGRPOTrainer` (olmocr_rl/train/trainer.py), the one module that knows trl's internals:

* each method it overrides is one trl has, with a signature read in the window (`SEAMS`), and the
  facts of trl's code the overrides rely on; run at both ends of the window (`make test` at trl
  1.16, `make test-lower` at 1.11);
* the window is stated once: pyproject.toml's bounds equal it, the docs list exactly the overrides,
  and a trl outside it stops `train` before anything loads;
* nothing else in the package reaches into trl (a private name of a trainer, an assignment into a
  trl module or class), checked on the package's source, and the check itself on the code it
  replaced;
* two trainers in one process time their steps apart and leave trl's modules as they were.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import re
from pathlib import Path

import pytest
from conftest import need

need("trl")
need("torch")

from clirun import invoke
from training import cfg_for

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "olmocr_rl"


def overrides() -> set[str]:
    from trl import GRPOTrainer

    from olmocr_rl.train.trainer import OlmocrGRPOTrainer

    return {n for n, v in vars(OlmocrGRPOTrainer).items() if callable(v) and n != "__init__" and hasattr(GRPOTrainer, n)}


# ---------------------------------------------------------------------------------------------
# the seams against the installed trl
# ---------------------------------------------------------------------------------------------


def test_each_seam_is_the_installed_trls():
    """Every method the trainer overrides is in SEAMS (a helper of ours that trl happens to define
    too would override it silently), with the installed trl's parameters one of those read."""
    import trl
    from trl import GRPOTrainer

    from olmocr_rl.train.trainer import SEAMS

    assert overrides() == set(SEAMS)
    changed = {}
    for name, known in SEAMS.items():
        params = tuple(inspect.signature(getattr(GRPOTrainer, name)).parameters)
        if params not in known:
            changed[name] = params
    assert changed == {}, f"trl {trl.__version__} changed these seams (read trainer.py's override against the new trl): {changed}"


def test_what_the_overrides_rely_on_in_trls_code():
    """The order of calls and the values the overrides rely on (trl 1.11-1.16)."""
    from trl import GRPOTrainer
    from trl.generation.vllm_generation import VLLMGeneration
    from trl.models import utils as model_utils
    from trl.trainer import utils

    src = inspect.getsource(GRPOTrainer._generate_and_score_completions)
    # One _generate call, before any forward pass, with the prompts prepared as _round_prompts does.
    assert src.count("self._generate(prompts)") == 1 and src.index("self._generate(prompts)") < src.index("torch.no_grad()")
    before = src[: src.index("self._generate(prompts)")]
    for line in ('prompts = [x["prompt"] for x in inputs]', 'if "images" in inputs[0]:', 'elif "image" in inputs[0]:',
                 "if images is not None and all(img_list == [] for img_list in images):",
                 "prepare_multimodal_messages(prompt, images=image_list)"):  # fmt: skip
        assert line in before, line
    assert "= self._calculate_rewards(inputs, prompts, completions" in src
    assert "if images is None:\n            images = dataset_images" in src  # the replay's images=None: the rows' own
    assert "self._pending_extra_logs" in src and "self._metrics[mode]" in src
    assert "rewards_per_func = gather(rewards_per_func)" in inspect.getsource(GRPOTrainer._calculate_rewards)
    assert "generation_batch = self._generate_and_score_completions(generation_batch)" in inspect.getsource(GRPOTrainer._prepare_inputs)
    src = inspect.getsource(GRPOTrainer._generate)
    assert "return prompt_ids, completion_ids, tool_mask, completions, logprobs, extra_fields, images, tool_images" in src
    assert "self._generate_single_turn(" in src
    # The table: trl prints its own from `log` with num_completions_to_print, and none for 0.
    log = inspect.getsource(GRPOTrainer.log)
    assert "print_prompt_completions_sample(" in log and "self.num_completions_to_print" in log and 'self._logs["prompt"]' in log
    assert "elif num_samples <= 0:\n            return" in inspect.getsource(utils.print_prompt_completions_sample)
    # The colocated engine: built in the constructor, `LLM` looked up in trl's module.
    assert "VLLMGeneration(" in inspect.getsource(GRPOTrainer.__init__)
    assert "self.llm = LLM(" in inspect.getsource(VLLMGeneration._init_vllm)
    # The loop stop: every engine's completions come back from `_generate_single_turn` as id lists and
    # logprobs (None on the transformers path), which the loss's mask, the sampling logprobs and trl's
    # "truncated" (no end token last) are built from; the transformers path generates with the
    # model trl's unwrap_model_for_generation yields, accelerate's unwrapped model.
    src = inspect.getsource(GRPOTrainer._generate_single_turn)
    assert src.count("return completion_ids, logprobs") == 1 and "logprobs = None" in src
    assert "unwrapped_model.generate(\n                    **generate_inputs, generation_config=self.generation_config" in src or (
        "unwrapped_model.generate(**generate_inputs, generation_config=self.generation_config" in src
    )
    assert "self.model_wrapped," in src and "unwrap_model_for_generation(" in src
    assert "unwrapped_model = accelerator.unwrap_model(model)" in inspect.getsource(model_utils._unwrap_model_for_generation)
    built = inspect.getsource(GRPOTrainer._generate_and_score_completions)
    assert "completion_ids = [torch.tensor(ids) for ids in completion_ids_list]" in built
    assert "is_truncated = torch.tensor([ids[-1] not in eos_and_pad for ids in completion_ids_list]" in built
    assert "for logps in sampling_per_token_logps_list" in built


# ---------------------------------------------------------------------------------------------
# one window, stated once
# ---------------------------------------------------------------------------------------------


def test_pyproject_bounds_and_the_docs_are_the_window():
    import tomllib
    from packaging.requirements import Requirement

    from olmocr_rl.train.schema import TRL_READ, trl_window

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    bounds = {e: str(Requirement(r).specifier) for e in ("train", "vllm") for r in extras[e] if Requirement(r).name == "trl"}
    assert sorted(bounds) == ["train", "vllm"]
    assert all(set(b.split(",")) == set(trl_window().split(",")) for b in bounds.values()), (bounds, trl_window())
    assert trl_window() == f">={TRL_READ[0]}.0,<1.{int(TRL_READ[1].split('.')[1]) + 1}"
    assert f"trl {TRL_READ[0]} to {TRL_READ[1]}" in _section(ROOT / "docs" / "development.md", "## trl seams")
    assert f"trl {TRL_READ[0]} to {TRL_READ[1]}" in _section(ROOT / "docs" / "training.md", "## Pre-flight")


def _section(path: Path, heading: str) -> str:
    text = path.read_text(encoding="utf-8")
    start = text.index(heading + "\n")
    end = text.find("\n## ", start + len(heading))
    return text[start : end if end >= 0 else None]


def test_the_docs_list_exactly_the_overrides():
    listed = re.findall(r"^- `(\w+)`", _section(ROOT / "docs" / "development.md", "## trl seams"), re.M)
    assert sorted(listed) == sorted(overrides()) and len(listed) == len(set(listed))


def test_a_trl_outside_the_window_stops_train_before_anything_loads(prepared, tmp_path, monkeypatch):
    preflight = importlib.import_module("olmocr_rl.train.preflight")
    real = preflight._dist_version
    installed = {"trl": "1.17.0"}
    monkeypatch.setattr(preflight, "_dist_version", lambda name: installed.get(name) or real(name))
    res = invoke(["train", str(prepared), "--model", "never/loaded", "-o", str(tmp_path / "o")])
    assert res.exit_code == 1 and res.stdout == ""
    assert res.stderr.splitlines() == [
        "error: trl 1.17.0 is installed; olmocr-rl's trainer was read against trl 1.11 to 1.16 (olmocr_rl/train/trainer.py); "
        "pip install 'trl>=1.11.0,<1.17'"
    ]
    assert not (tmp_path / "o").exists()
    for version, refused in (("1.10.2", True), ("1.11.0", False), ("1.16.3", False), ("1.17.0rc1", True), ("2.0.0", True)):
        installed["trl"] = version
        assert (preflight.trl_problem() is not None) is refused, version
    # A script that trains through the worker is stopped the same way, before the model loads.
    from olmocr_rl.errors import ConfigError
    from olmocr_rl.train import model, worker

    installed["trl"] = "1.17.0"
    monkeypatch.setattr(model, "load_model", lambda *a, **k: pytest.fail("the model loaded"))
    with pytest.raises(ConfigError, match="trl 1.17.0 is installed"):
        worker.run(cfg_for(prepared, "never/loaded", tmp_path / "w"), cuda=False)


# ---------------------------------------------------------------------------------------------
# nothing else reaches into trl
# ---------------------------------------------------------------------------------------------


def trl_reach(source: str) -> list[str]:
    """What a module does that only trainer.py may: a private attribute of a trainer
    (`trainer._x`, `self.trainer._x`) or of a trl object, an assignment into a trl module or class
    (`vllm_generation.LLM = ...`, `setattr(...)` on one), a setattr on a trainer, a private name
    imported from trl."""
    tree = ast.parse(source)
    found, trl_names = [], set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            trl_names |= {(a.asname or a.name).split(".")[0] for a in node.names if a.name == "trl" or a.name.startswith("trl.")}
        elif isinstance(node, ast.ImportFrom) and node.module and (node.module == "trl" or node.module.startswith("trl.")):
            trl_names |= {a.asname or a.name for a in node.names}
            found += [f"imports {node.module}.{a.name}" for a in node.names if a.name.startswith("_")]

    def root(expr: ast.AST) -> str | None:
        while isinstance(expr, ast.Attribute):
            expr = expr.value
        return expr.id if isinstance(expr, ast.Name) else None

    def is_trainer(expr: ast.AST) -> bool:
        return (isinstance(expr, ast.Name) and expr.id == "trainer") or (isinstance(expr, ast.Attribute) and expr.attr == "trainer")

    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            if is_trainer(node.value) or root(node) in trl_names:
                found.append(f"line {node.lineno}: {ast.unparse(node)}")
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
        )
        found += [f"line {node.lineno}: assigns {ast.unparse(t)}" for t in targets if isinstance(t, ast.Attribute) and root(t) in trl_names]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr" and node.args:
            if root(node.args[0]) in trl_names or is_trainer(node.args[0]):
                found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return sorted(set(found))


def test_no_module_but_the_trainer_reaches_into_trl():
    reached = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path != PACKAGE / "train" / "trainer.py" and (found := trl_reach(path.read_text(encoding="utf-8"))):
            reached[path.relative_to(ROOT).as_posix()] = found
    assert reached == {}


@pytest.mark.parametrize(
    "code",
    [  # what main c12eda8 did outside a trainer class (filtering.py, worker.py, callbacks.py, console.py, engines.py)
        "trainer._generate_and_score_completions = online.generate_and_score",
        "pending = trainer._pending_extra_logs",
        "metrics = self.trainer._metrics['train']",
        "trainer._load_from_checkpoint = lambda *args, **kwargs: None",
        "setattr(trainer, name, self._timed(method, key))",
        "from trl.extras import profiling\nprofiling.ProfilingContext._log_metrics = log_metrics",
        "from trl.trainer import grpo_trainer\ngrpo_trainer.print_prompt_completions_sample = compact_completions_table",
        "def f():\n    from trl.generation import vllm_generation\n    vllm_generation.LLM = llm",
        "import trl.generation.vllm_generation as g\nsetattr(g, 'LLM', llm)",
        "from trl.trainer.utils import _private",
    ],
)
def test_the_reach_check_finds_what_main_did(code):
    assert trl_reach(code)


def test_the_reach_check_leaves_public_use_alone():
    code = ("from trl import GRPOConfig\nimport trl.trainer\nstep = trainer.state.global_step\nself._own = 1\n"
            "x = trainer.accelerator.process_index\nhasattr(trl.trainer, 'add_fused_lm_head')\ncfg._resolved = True")  # fmt: skip
    assert trl_reach(code) == []


# ---------------------------------------------------------------------------------------------
# two trainers in one process
# ---------------------------------------------------------------------------------------------


def test_two_trainers_time_apart_and_leave_trl_as_it_was(prepared, tiny_model, tmp_path, capsys):
    """Each trainer's step timer counts its own generation, rewards and training; trl's modules
    and classes hold the same objects after both as before; the compact table is printed, trl's
    is not; the trl state the trainer reads exists."""
    from trl import GRPOTrainer
    from trl.extras import profiling
    from trl.generation import vllm_generation
    from trl.trainer import grpo_trainer, utils

    from olmocr_rl.train import worker
    from olmocr_rl.train.preflight import run_inputs
    from olmocr_rl.train.trainer import TRL_STATE

    held = [profiling, profiling.ProfilingContext, grpo_trainer, utils, vllm_generation, GRPOTrainer]
    before = [dict(vars(obj)) for obj in held]
    trainers = []
    for name in ("a", "b"):
        cfg = cfg_for(prepared, tiny_model, tmp_path / name, "max_steps=1", "save_steps=0", "eval_split=none", "final_outputs=none",
                      "report_to=[none]", "write_failing_completions=false", "num_completions_to_print=2")  # fmt: skip
        trainers.append(worker._build(cfg, run_inputs(cfg), False).trainer)
    a, b = trainers
    assert {name for name in TRL_STATE if not hasattr(a, name)} == set()
    timed = ("generation_s", "reward_s", "train_s", "prepare_s")
    a.train()
    first = dict(a.step_timer.acc)
    assert all(first[k] > 0 for k in timed) and all(v == 0 for v in b.step_timer.acc.values())
    b.train()
    assert a.step_timer.acc == first and all(b.step_timer.acc[k] > 0 for k in timed)
    for name in ("a", "b"):
        logged = [json.loads(line) for line in (tmp_path / name / "logs" / "metrics.jsonl").read_text().splitlines()]
        assert any(r.get("time/generation_s", 0) > 0 and r.get("time/reward_s", 0) > 0 for r in logged)
    for obj, was in zip(held, before):
        now = vars(obj)
        assert [k for k, v in was.items() if now.get(k) is not v] == [], obj
    out = capsys.readouterr().out
    assert out.count("train completions, step 1: 2 of 4") == 2 and "Prompt" not in out  # ours, twice; trl's header never
