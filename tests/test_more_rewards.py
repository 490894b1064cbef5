"""olmOCR's other GRPO rewards (medoid, edit distance, element count, rectangular tables) and
rewards of the user's own: properties against the Python libraries upstream uses (RapidFuzz,
`re` with upstream's patterns), the page-group medoid across two ranks, the references prepare
copies, the training config's names, and user rewards loaded by path."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest
from conftest import need
from hypothesis import given, settings
from hypothesis import strategies as st

from olmocr_rl import EditDistanceReward, ElementCountReward, MedoidReward, RectTablesReward, _core

rapidfuzz = need("rapidfuzz")
from rapidfuzz import fuzz
from rapidfuzz.distance import Levenshtein

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

# The patterns of upstream's `count_elements` (issue #15 / grpo_train.py): the oracle for the
# Rust scans.
TABLE = re.compile(r"<table\b[^>]*>.*?</table>", re.DOTALL | re.IGNORECASE)
MATH = [re.compile(p, re.DOTALL) for p in (r"\$\$(.+?)\$\$", r"\\\((.+?)\\\)", r"\\\[(.+?)\\\]")]

pieces = st.sampled_from(["<table>", "</table>", "<TABLE x=1>", "</TaBlE>", "<tableau>", "<table_", "<tableé>", "$$", "$",
                          "\\(", "\\)", "\\[", "\\]", "a", "é", "😀", " ", "\n", ">", "<", "x"])  # fmt: skip
structured = st.lists(pieces, max_size=40).map("".join)
texty = st.text(alphabet=st.sampled_from("abcé😀 \n.,xyz"), max_size=300)


@settings(max_examples=400, deadline=None)
@given(structured, structured)
def test_element_counts_match_pythons_re(a, b):
    for text in (a, b):
        assert _core.element_counts(text) == (len(TABLE.findall(text)), sum(len(p.findall(text)) for p in MATH))
    expected = 0.5 * (
        (len(TABLE.findall(a)) == len(TABLE.findall(b))) + (sum(len(p.findall(a)) for p in MATH) == sum(len(p.findall(b)) for p in MATH))
    )
    assert ElementCountReward()(completions=[a, a], claude_original=[b, None]) == [expected, 0.0]


@settings(max_examples=400, deadline=None)
@given(texty, texty)
def test_levenshtein_and_edit_similarity_match_rapidfuzz(a, b):
    assert _core.levenshtein(a, b) == Levenshtein.distance(a, b)
    assert EditDistanceReward()(completions=[a, b], claude_original=[b, None]) == [fuzz.ratio(a, b) / 100.0, 0.0]


def test_levenshtein_long_near_copies_match_rapidfuzz():
    """The Landau-Vishkin and banded paths on page-sized texts (random DP checks are in Rust)."""
    import random

    rng = random.Random(7)
    words = ["the", "page", "table", "of", "results", "x", "é", "😀", "\n\n"]
    for _ in range(40):
        base = " ".join(rng.choice(words) for _ in range(rng.randint(300, 1500)))
        other = list(base)
        for _ in range(rng.choice([0, 5, 50, 300])):
            i = rng.randrange(len(other))
            op = rng.random()
            if op < 0.4:
                other[i] = rng.choice("abc ")
            elif op < 0.7:
                del other[i]
            else:
                other.insert(i, rng.choice("abc "))
        text = "".join(other)
        if rng.random() < 0.3:  # a dropped paragraph
            cut = rng.randrange(len(text))
            text = text[:cut] + text[cut + rng.randint(50, 800) :]
        assert _core.levenshtein(base, text) == Levenshtein.distance(base, text)


def upstream_medoid(texts: list[str]) -> list[float]:
    """The medoid reward as upstream defines it (issue #15), written out as the test's oracle."""
    n = len(texts)
    if n <= 1:
        return [1.0] * n
    d = [[Levenshtein.distance(a, b) for b in texts] for a in texts]
    biggest = max(max(row) for row in d)
    medoid = min(range(n), key=lambda i: sum(d[i]) / (n - 1))
    return [1.0 if i == medoid else max(0.0, 1.0 - (d[medoid][i] / biggest if biggest > 0 else 0.0)) for i in range(n)]


@settings(max_examples=200, deadline=None)
@given(st.lists(texty, max_size=12))
def test_medoid_batch_mode_is_upstreams_arithmetic(texts):
    assert MedoidReward("batch")(completions=texts) == upstream_medoid(texts)


def test_medoid_page_groups():
    texts = ["abc", "zzzz", "abd", "zzzy", "xyz"]
    got = MedoidReward("page")(completions=texts, pdf=["a", "b", "a", "b", "a"], page=[1, 1, 1, 1, 1])
    a, b = upstream_medoid(["abc", "abd", "xyz"]), upstream_medoid(["zzzz", "zzzy"])
    assert got == [a[0], b[0], a[1], b[1], a[2]]
    with pytest.raises(TypeError, match="groups completions by page"):
        MedoidReward()(completions=texts)
    assert MedoidReward()(prompts=["p", "q", "p", "q", "p"], completions=texts) == got  # the prompt as the key


def test_rect_tables():
    square = "<table><tr><td>a</td><td>b</td></tr><tr><td>c</td><td>d</td></tr></table>"
    ragged = "<table><tr><td>a</td><td>b</td></tr><tr><td>c</td></tr></table>"
    assert RectTablesReward()(completions=["no table", square, ragged, square + ragged]) == [1.0, 1.0, 0.0, 0.5]


# ---------------------------------------------------------------------------------------------
# the page-group medoid when trl splits a page's group across two ranks
# ---------------------------------------------------------------------------------------------

WORKER = """
import json, os, sys
import torch.distributed as dist
from olmocr_rl.reward_registry import build_rewards
from olmocr_rl.train.rewards import TrainRewardContext
rank, world, port, out = int(sys.argv[1]), 2, sys.argv[2], sys.argv[3]
os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
dist.init_process_group("gloo", rank=rank, world_size=world)
batch = json.loads(sys.argv[4])
n = len(batch) // world
mine = batch[rank * n:(rank + 1) * n]
funcs, _ = build_rewards({"medoid": 1.0, "medoid-batch": 1.0}, TrainRewardContext(None))
texts = [t for _, t in mine]
pdf = [p for p, _ in mine]
page = [1] * len(mine)
out_rows = [f(completions=texts, pdf=pdf, page=page) for f in funcs]
json.dump(out_rows, open(f"{out}/rank{rank}.json", "w"))
dist.barrier()
dist.destroy_process_group()
"""


def test_medoid_page_groups_split_across_two_ranks_equal_one_process(tmp_path):
    """As trl lays out a generation batch of 2 pages x 4 completions at two ranks with
    per_device_train_batch_size=2 and 2 accumulation steps: each rank holds 2 of each page's
    completions. The gathered page medoid equals the one-process rewards; upstream's batch mode
    (each rank on its own slice) does not."""
    import json
    import subprocess

    need("torch")
    from olmocr_rl.launch.launchers import free_port

    a = ["the cat sat on the mat", "the cat sat on a mat", "a cat sat on the mat", "the dog sat on the mat"]
    b = ["lorem ipsum dolor", "lorem ipsum dolor sit", "lorem ipsum", "lorem dolor"]
    # Rank r's rows in trl's order: micro-batch 1 then 2 of this rank (rows r*2.. of each).
    layout = [("A", a[0]), ("A", a[1]), ("B", b[0]), ("B", b[1]), ("A", a[2]), ("A", a[3]), ("B", b[2]), ("B", b[3])]
    port = str(free_port())
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, str(r), port, str(tmp_path), json.dumps(layout)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for r in (0, 1)]  # fmt: skip
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-3000:]
    ranks = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    page_mode = ranks[0][0] + ranks[1][0]
    batch_mode = ranks[0][1] + ranks[1][1]
    one_a, one_b = upstream_medoid(a), upstream_medoid(b)
    single = {t: r for t, r in zip(a, one_a)} | {t: r for t, r in zip(b, one_b)}
    assert page_mode == [single[t] for _, t in layout]
    assert batch_mode != page_mode  # what upstream's per-slice medoid would have given instead


# ---------------------------------------------------------------------------------------------
# references, config names, user rewards
# ---------------------------------------------------------------------------------------------


def test_prepare_copies_references_and_the_dataset_carries_them(tmp_path):
    from olmocr_rl.prepare import PrepareOptions, prepare, reference_file

    bench = tmp_path / "bench"
    shutil.copytree(ROOT / "bench_fixtures", bench, ignore=shutil.ignore_patterns("demo_model", "other_model", "*.py", "*.yaml"))
    ref = bench / "claude_original" / "letter_page1_pg1_repeat1.md"
    ref.parent.mkdir(parents=True)
    ref.write_text("---\nprimary_language: en\n---\nDear reader, $$x$$\n")
    assert reference_file(bench, "letter.pdf", 1) == ref and reference_file(bench, "letter.pdf", 2) is None
    assert reference_file(bench, "x/doc_page7.pdf", 1) is None
    (bench / "claude_original" / "x").mkdir()
    (bench / "claude_original" / "x" / "doc_page7_pg1_repeat1.md").write_text("r")
    assert reference_file(bench, "x/doc_page7.pdf", 1) == bench / "claude_original" / "x" / "doc_page7_pg1_repeat1.md"

    out = tmp_path / "prep"
    result = prepare(bench, out, PrepareOptions(longest_side=112, workers=1), progress=False)
    rows = {r["pdf"]: r for r in result.train}
    assert rows["letter.pdf"]["reference"] == "references/letter_page1_pg1_repeat1.md"
    assert (out / rows["letter.pdf"]["reference"]).read_text() == ref.read_text()
    assert "reference" not in rows["sample_paper.pdf"]

    need("datasets")
    from olmocr_rl.train.data import build_dataset

    ds = build_dataset(out, result.train)
    by_pdf = {row["pdf"]: row for row in ds}
    assert by_pdf["letter.pdf"]["claude_original"] == ref.read_text() and by_pdf["sample_paper.pdf"]["claude_original"] is None


def my_reward(prompts, completions, **kwargs):
    return [float(len(str(c))) for c in completions]


class MyRewardClass:
    __name__ = "mine"

    def __call__(self, prompts=None, completions=(), **kwargs):
        return [0.5 for _ in completions]


def bad_signature(text):
    return [0.0]


def test_user_rewards_by_path(monkeypatch):
    from olmocr_rl.errors import ConfigError
    from olmocr_rl.reward_registry import RewardContext, build_rewards
    from olmocr_rl.train.config import TrainConfig, validate

    monkeypatch.syspath_prepend(str(HERE))
    funcs, weights = build_rewards({"test_more_rewards:my_reward": 0.2, "test_more_rewards:MyRewardClass": 0.3}, RewardContext(None))
    assert weights == [0.2, 0.3]
    assert funcs[0](prompts=None, completions=["ab"]) == [2.0] and funcs[1](completions=["x"]) == [0.5]
    for name, message in [
        ("no_such_module_x:f", "cannot import no_such_module_x"),
        ("test_more_rewards:nothing", "has no attribute 'nothing'"),
        ("test_more_rewards:bad_signature", r"signature \(text\) cannot take trl's call"),
    ]:
        with pytest.raises(ConfigError, match=message):
            build_rewards({name: 1.0}, RewardContext(None))
    cfg = TrainConfig(prepared_dir="p", model="m", output_dir="o", rewards={"pkg.mod:fn": 1.0})
    validate(cfg)  # a path is a valid name
    cfg.rewards = {"not a path": 1.0}
    with pytest.raises(ConfigError, match="package.module:function"):
        validate(cfg)


def test_user_reward_problems_in_preflight(monkeypatch, tmp_path):
    from olmocr_rl.train.config import TrainConfig
    from olmocr_rl.train.preflight import preflight

    monkeypatch.syspath_prepend(str(HERE))
    cfg = TrainConfig(prepared_dir=str(tmp_path), model="m", output_dir=str(tmp_path / "o"),
                      rewards={"bench": 1.0, "test_more_rewards:bad_signature": 0.1, "edit-distance": 0.1})  # fmt: skip
    problems = {p.key: p for p in preflight(cfg, 1)}
    assert problems["rewards.test_more_rewards:bad_signature"].severity == "error"
    assert "cannot take trl's call" in problems["rewards.test_more_rewards:bad_signature"].message
    assert problems["rewards.edit-distance"].severity == "warning"
    assert "no prepared page has a reference output" in problems["rewards.edit-distance"].message


# ---------------------------------------------------------------------------------------------
# in training
# ---------------------------------------------------------------------------------------------


def test_training_logs_each_reward(tmp_path, monkeypatch):
    need("trl")
    import json

    from training import RECIPE, make_prepared

    from olmocr_rl.train.config import load_config
    from olmocr_rl.train.worker import run

    sys.path.insert(0, str(ROOT / "bench_fixtures"))
    from tiny_vlm import build_tiny_vlm

    monkeypatch.syspath_prepend(str(HERE))
    model = build_tiny_vlm(tmp_path / "model")
    prepared = make_prepared(tmp_path / "prep")
    rewards = {"bench": 1.0, "medoid": 0.1, "medoid-batch": 0.1, "edit-distance": 0.1, "element-count": 0.1,
               "rect-tables": 0.1, "test_more_rewards:my_reward": 0.01}  # fmt: skip
    cfg = load_config(RECIPE, ["progress=false", "max_steps=1", "save_steps=0", "eval_split=none", "final_outputs=none", "logging_steps=1"],
                      prepared_dir=str(prepared), model=str(model), output_dir=str(tmp_path / "run"))  # fmt: skip
    cfg.rewards = rewards
    run(cfg, final_outputs=False)
    logged = [json.loads(line) for line in (tmp_path / "run" / "logs" / "metrics.jsonl").read_text().splitlines()]
    keys = {k for rec in logged for k in rec}
    for name in ("olmocr_bench", "medoid", "edit_distance", "element_count", "rect_tables", "my_reward"):
        assert f"rewards/{name}/mean" in keys, (name, sorted(keys))
