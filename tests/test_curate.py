"""`olmocr-rl curate`: pages chosen by difficulty (issue 26, part 3).

The case is built so that the verdicts are known without a trained model: three pages whose tests
the tiny random model (bench_fixtures/tiny_vlm.py, 16-token completions of arbitrary bytes) passes
always, never, and sometimes:

* letter.pdf p1: one `absent` test of a phrase nobody writes: every sample passes (1.0);
* reports/annual_report.pdf p1: one `present` test of a long sentence: every sample fails (0.0);
* sample_paper.pdf p1: sixteen one-character `present` tests, each passed by 8-20 % of the tiny
  model's samples (measured on 64 samples): a sample's reward is its share, so 8 samples all
  earning the same is as unlikely as ~1e-4.

The library tests drive `curate` with a stand-in engine (exact, scheduled completions); the command
tests run the real tiny model through the transformers engine, then train on the selection.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import statistics as pystats
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import need

need("torch")
need("trl")

from clirun import invoke
from training import FIXTURES, RECIPE

from olmocr_rl.curate import (
    CurateError,
    DifficultyFile,
    KeepRule,
    Settings,
    curate,
    read_records,
    select,
    statistics,
    training_reward,
    write_split,
)
from olmocr_rl.engines import Engine
from olmocr_rl.prepared import PreparedError, read_split

ALWAYS, NEVER, SOMETIMES = "letter.pdf", "reports/annual_report.pdf", "sample_paper.pdf"
CHARS = "/PhaQR*iI$~xkfS0"  # the tiny model writes each in 8-20 % of its samples
SETTINGS = Settings(model="stand-in", samples=4, temperature=1.0, max_new_tokens=16, rewards={"bench": 1.0}, guard="short-output")


def make_case(root: Path) -> Path:
    """The three-page bench folder above, prepared (no eval split)."""
    from olmocr_rl.prepare import PrepareOptions, prepare

    bench = root / "bench"
    (bench / "pdfs" / "reports").mkdir(parents=True)
    for pdf in (ALWAYS, NEVER, SOMETIMES):
        (bench / "pdfs" / pdf).write_bytes((FIXTURES / "pdfs" / pdf).read_bytes())
    tests = [
        {"pdf": ALWAYS, "page": 1, "id": "never_written", "type": "absent", "text": "Quetzalcoatl zymurgy anteater"},
        {"pdf": NEVER, "page": 1, "id": "long_sentence", "type": "present",
         "text": "the quarterly revenue of the northern division rose by twelve percent"},
        *({"pdf": SOMETIMES, "page": 1, "id": f"char_{i}", "type": "present", "text": c} for i, c in enumerate(CHARS)),
    ]  # fmt: skip
    (bench / "tests.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tests))
    prepare(bench, root / "prep", PrepareOptions(longest_side=112, eval_fraction=0.0, workers=1, seed=0), progress=False)
    return root / "prep"


@pytest.fixture()
def case(tmp_path_factory) -> Path:
    return make_case(tmp_path_factory.mktemp("curate"))


class StandIn:
    """An engine whose completions are scheduled per page (pages told apart by their image's
    pixels); records how many completions of each page it was asked for."""

    def __init__(self, prepared: Path, schedule: dict[str, list[str]]):
        from PIL import Image

        self.pdf_of = {}
        for row in read_split(prepared, "train") + read_split(prepared, "eval"):
            with Image.open(prepared / row["image"]) as im:
                self.pdf_of[self._digest(im.convert("RGB"))] = row["pdf"]
        self.schedule = schedule
        self.asked: dict[str, int] = {}
        self.loads = 0

    @staticmethod
    def _digest(image) -> str:
        return hashlib.sha256(image.tobytes()).hexdigest()

    def load(self, rows: list[dict]) -> Engine:
        self.loads += 1
        return Engine(self.generate, words)

    def generate(self, images: list, prompts: list[str], temperature: float, seeds: list[int]) -> list[str]:
        out = []
        for im in images:
            pdf = self.pdf_of[self._digest(im)]
            n = self.asked.get(pdf, 0)
            self.asked[pdf] = n + 1
            texts = self.schedule[pdf]
            out.append(texts[n % len(texts)])
        return out


SCHEDULE = {ALWAYS: ["a page of text"], NEVER: ["nothing of the sort"], SOMETIMES: [CHARS, "zzz", CHARS, "zzz"]}


def words(texts: list[str]) -> list[int]:
    return [len(t.split()) for t in texts]


def run(prepared: Path, engine: StandIn, settings: Settings = SETTINGS, **kw):
    reward = training_reward(prepared, settings.rewards, settings.guard)
    return curate(prepared, settings, engine.load, reward, **kw)


def test_statistics_use_trls_group_std():
    torch = need("torch")
    rewards = [0.0, 0.25, 1.0, 1.0, 0.5]
    s = statistics(rewards)
    assert s["std"] == pytest.approx(torch.tensor(rewards).std().item(), rel=1e-6)  # Bessel, as trl's nanstd
    assert s["std"] == pytest.approx(pystats.stdev(rewards)) and s["mean"] == pytest.approx(0.55)
    assert (s["min"], s["max"]) == (0.0, 1.0)
    assert statistics([0.5] * 8)["std"] == 0.0  # equal rewards: exactly zero, as trl's isclose(std, 0)


def test_built_case_records_selection_and_savings(case):
    engine = StandIn(case, SCHEDULE)
    result = run(case, engine, batch_size=8)  # two pages per generate call
    assert result.scored == 3 and result.reused == 0 and not result.errors
    assert engine.asked == {ALWAYS: 4, NEVER: 4, SOMETIMES: 4}
    recs = {pdf: result.records[("train", pdf, 1)] for pdf in (ALWAYS, NEVER, SOMETIMES)}
    assert recs[ALWAYS]["rewards"] == [1.0] * 4 and recs[ALWAYS]["std"] == 0.0
    assert recs[NEVER]["rewards"] == [0.0] * 4 and recs[NEVER]["std"] == 0.0
    assert recs[SOMETIMES]["rewards"] == [1.0, 0.0, 1.0, 0.0]
    assert recs[SOMETIMES]["mean"] == 0.5 and recs[SOMETIMES]["std"] == pytest.approx(pystats.stdev([1, 0, 1, 0]))
    assert recs[ALWAYS]["tokens"] == [4] * 4 and recs[SOMETIMES]["tokens"] == [1] * 4

    # The file holds exactly these records, one line each.
    lines, _, torn = read_records(case / "difficulty.jsonl")
    assert not torn and sorted(r["pdf"] for _, r in lines) == sorted([ALWAYS, NEVER, SOMETIMES])

    sel = select(result.pages, result.records)
    assert sel.counts == {"all_pass": 1, "all_fail": 1, "uniform": 0, "disagree": 1}
    assert [r["pdf"] for r in sel.kept] == [SOMETIMES]
    assert sel.saved_pages == pytest.approx(2 / 3)
    assert sel.saved_tokens == pytest.approx((4 + 4) / (4 + 4 + 1))  # words per sample: 4, 4, 1
    path = write_split(case, "curated", sel.kept)
    (train_row,) = [r for r in read_split(case, "train") if r["pdf"] == SOMETIMES]
    (kept,) = read_split(case, "curated")  # a split the trainer reads
    assert {k: v for k, v in kept.items() if k != "difficulty"} == train_row and kept["difficulty"]["std"] > 0
    assert path == case / "curated.jsonl" and not (case / "curated.jsonl.tmp").exists()

    # Thresholds: a spread above min_std, a mean strictly inside the bounds.
    assert select(result.pages, result.records, KeepRule(min_std=0.6)).kept == []
    assert select(result.pages, result.records, KeepRule(max_mean=0.5)).kept == []
    assert len(select(result.pages, result.records, KeepRule(min_mean=0.49, max_mean=0.51)).kept) == 1
    with pytest.raises(CurateError, match="taken by prepare"):
        write_split(case, "train", sel.kept)
    with pytest.raises(CurateError, match="letters, digits"):
        write_split(case, "../elsewhere", sel.kept)
    (case / "mine.jsonl").write_text(json.dumps(train_row) + "\n")
    with pytest.raises(CurateError, match=r"mine.jsonl:1: not a selection"):
        write_split(case, "mine", sel.kept)


def test_degenerate_policies_make_pages_uniform_not_hard(case):
    """A policy that writes nothing, one newline, or the same loop every time gives each page one
    reward for all its samples: every page is dropped, none kept as hard. Under the published
    checks (no guard) one newline swaps roles with the test texts (checks.md 3.1.1): it passes the
    long `present` test and fails the `absent` one, so the page of the sentence never written looks
    solved; the training guard scores it as failed."""
    for text, guard, means in [
        ("", "short-output", {ALWAYS: 1.0, NEVER: 0.0, SOMETIMES: 0.0}),
        ("\n", "short-output", {ALWAYS: 1.0, NEVER: 0.0, SOMETIMES: 0.0}),
        ("\n", "none", {ALWAYS: 0.0, NEVER: 1.0, SOMETIMES: 0.0}),
        # The loop: "*...*" pairs are read as emphasis and normalized away, so "*" fails (15 of 16).
        (CHARS * 50, "short-output", {ALWAYS: 1.0, NEVER: 0.0, SOMETIMES: 15 / 16}),
    ]:
        settings = Settings(**{**SETTINGS.to_dict(), "guard": guard})
        out = case / f"difficulty_{len(text)}_{guard}.jsonl"
        result = run(case, StandIn(case, {pdf: [text] for pdf in SCHEDULE}), settings, output=out)
        got = {pdf: r["mean"] for (_, pdf, _), r in result.records.items()}
        assert got == means, (repr(text[:8]), guard)
        assert all(r["std"] == 0.0 for r in result.records.values())
        assert all(r["empty"] == (4 if not text.strip() else 0) for r in result.records.values())
        sel = select(result.pages, result.records)
        assert sel.kept == [] and sel.saved_pages == 1.0 and sel.counts["disagree"] == 0


def test_resume_skips_scored_pages_and_rescoring_changed_rows(case):
    engine = StandIn(case, SCHEDULE)
    run(case, engine)
    first = (case / "difficulty.jsonl").read_bytes()

    # Everything scored: no engine is loaded, nothing generated, the file untouched.
    again = StandIn(case, SCHEDULE)
    result = run(case, again)
    assert again.loads == 0 and again.asked == {} and result.reused == 3 and result.scored == 0
    assert (case / "difficulty.jsonl").read_bytes() == first

    # A row that changed since (prepare re-run with other tests) is scored again; its newest line wins.
    rows = read_split(case, "train")
    for r in rows:
        if r["pdf"] == SOMETIMES:
            r["test_ids"] = r["test_ids"][:1]  # only "/": CHARS passes, "zzz" fails
    (case / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    changed = StandIn(case, {**SCHEDULE, SOMETIMES: ["zzz"]})
    result = run(case, changed)
    assert changed.asked == {SOMETIMES: 4} and result.scored == 1 and result.reused == 2
    assert result.records[("train", SOMETIMES, 1)]["rewards"] == [0.0] * 4
    assert (case / "difficulty.jsonl").read_bytes().startswith(first)  # appended, never rewritten

    # Records made with other settings are refused, naming the file, the line and what differs.
    with pytest.raises(CurateError, match=r"difficulty.jsonl:1: made with other settings: samples 4 \(now 8\)"):
        run(case, StandIn(case, SCHEDULE), Settings(**{**SETTINGS.to_dict(), "samples": 8}))


def test_a_torn_last_line_is_dropped_and_a_bad_line_is_an_error(case, tmp_path):
    run(case, StandIn(case, SCHEDULE))
    path = case / "difficulty.jsonl"
    good = path.read_bytes()
    path.write_bytes(good + b'{"split": "train", "pdf": "x.pdf", "pa')  # what a kill during a write leaves
    records, valid, torn = read_records(path)
    assert torn and valid == len(good) and len(records) == 3
    again = StandIn(case, SCHEDULE)
    result = run(case, again)
    assert result.torn and again.asked == {} and path.read_bytes() == good  # the valid part, nothing more

    lines = good.decode().splitlines(keepends=True)
    path.write_text(lines[0] + "not json\n" + "".join(lines[1:]))
    with pytest.raises(CurateError, match=r"difficulty.jsonl:2: invalid JSON"):
        run(case, StandIn(case, SCHEDULE))
    path.write_text(lines[0] + json.dumps({"pdf": "x.pdf"}) + "\n")
    with pytest.raises(CurateError, match=r"difficulty.jsonl:2: missing split, page, key, rewards, settings"):
        run(case, StandIn(case, SCHEDULE))

    # A second writer is refused while one holds the file.
    path.write_bytes(good)
    holder = DifficultyFile(path)
    holder.open()
    try:
        with pytest.raises(CurateError, match="another `olmocr-rl curate` is writing"):
            run(case, StandIn(case, SCHEDULE))
    finally:
        holder.close()


def test_an_image_path_outside_the_folder_is_refused(case):
    engine = StandIn(case, SCHEDULE)
    rows = read_split(case, "train")
    rows[1]["image"] = "../../etc/passwd"
    (case / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(PreparedError, match=r"train.jsonl:2: image '../../etc/passwd' is outside"):
        run(case, engine)
    assert engine.loads == 0


def test_a_page_the_engine_fails_on_is_listed_and_the_others_written(case):
    engine = StandIn(case, SCHEDULE)

    def generate(images, prompts, temperature, seeds):
        texts = engine.generate(images, prompts, temperature, seeds)
        if any(engine.pdf_of[engine._digest(im)] == NEVER for im in images):
            raise RuntimeError("out of memory")
        return texts

    reward = training_reward(case, SETTINGS.rewards, SETTINGS.guard)
    result = curate(case, SETTINGS, lambda rows: Engine(generate, words), reward, batch_size=12)  # all three pages in one call
    assert [(e["pdf"], e["error"]) for e in result.errors] == [(NEVER, "RuntimeError: out of memory")]
    assert sorted(pdf for _, pdf, _ in result.records) == [ALWAYS, SOMETIMES]
    with pytest.raises(CurateError, match="1 train page"):
        select(result.pages, result.records)


def test_eval_pages_are_scored_and_never_selected(prepared, tmp_path):
    """The fixtures prepared as test_train prepares them (three train pages, one eval page)."""
    engine = StandIn(prepared, {pdf: ["a page", "another page of text"] for pdf in (ALWAYS, NEVER, SOMETIMES)})
    result = run(prepared, engine, output=tmp_path / "d.jsonl", splits=("train", "eval"))
    assert sorted(split for split, _, _ in result.records) == ["eval", "train", "train", "train"]
    sel = select(result.pages, result.records)
    assert len(sel.kept) + len(sel.dropped) == 3
    eval_pages = {(r["pdf"], r["page"]) for r in read_split(prepared, "eval")}
    assert not eval_pages & {(r["pdf"], r["page"]) for r in sel.kept}


@pytest.fixture
def hub(monkeypatch, tmp_path):
    """A stand-in hub (HF_ENDPOINT) that has the made-up models these tests name, so that `curate`
    finds them (olmocr_rl/model_ref.py asks the hub for a model that is not a folder here)."""
    from standin_hub import StandinHub, model_folder, online

    online(monkeypatch)
    with StandinHub({name: model_folder(tmp_path / "repos", name) for name in ("m", "stand-in")}) as standin:
        monkeypatch.setenv("HF_ENDPOINT", standin.url)
        yield standin


def test_command_errors_are_one_line(case, tmp_path, hub):
    res = invoke(["curate", case, "-q"])
    assert res.exit_code == 1 and res.stderr.strip() == "error: --model is required (there is no difficulty file to take it from)"
    res = invoke(["curate", case, "--model", "m", "--engine", "tgi", "-q"])
    assert res.exit_code == 1 and res.stderr.strip() == "error: --engine must be transformers or vllm, not 'tgi'"
    res = invoke(["curate", case, "--model", "m", "temperature=0", "-q"])
    assert res.exit_code == 1 and "error: temperature must be above 0" in res.stderr
    res = invoke(["curate", case, "--model", "m", "rewards={eos: 1.0}", "-q"])
    assert res.exit_code == 1 and "have no bench reward with a weight" in res.stderr
    res = invoke(["curate", case, "--model", "m", "--samples", "1"])
    assert res.exit_code == 2
    res = invoke(["curate", tmp_path / "nowhere", "--model", "m", "-q"])
    assert res.exit_code == 1 and "no prepared.json" in res.stderr and len(res.stderr.strip().splitlines()) == 1


def test_curate_options_for_their_effect(case, prepared, tmp_path, monkeypatch, hub):
    """The command's options the tests below do not check, each for its effect, with a stand-in
    engine (the engine builder replaced where curate calls it): --engine and --no-eager reach the engine,
    --batch-size is the completions per generate call, --set overrides the config (the temperature
    sampled at, and the train command shown), --output names the difficulty file, --tensor-parallel reaches the engine's settings,
    --min-mean / --max-mean bound the kept pages' mean reward, --eval scores the eval pages (never kept), --quiet starts no progress bar."""
    import importlib

    import rich.progress

    job = importlib.import_module("olmocr_rl.curate.job")

    bars: list[dict] = []

    class Recording(rich.progress.Progress):
        def start(self):
            bars.append({"updates": []})

        def update(self, task_id, **kwargs):
            bars[-1]["updates"].append(kwargs.get("completed"))

        def stop(self):
            bars[-1]["stopped"] = True

    loads: list[dict] = []
    calls: list[tuple[int, float]] = []  # (completions asked for, temperature) per generate call

    def stand_in(folder: Path, schedule: dict[str, list[str]]):
        def build_engine(engine, settings, rows, warn=print):
            loads.append({"engine": engine, "eager": settings.eager, "pages": len(rows), "tp": settings.tensor_parallel})
            engine_ = StandIn(folder, schedule)

            def generate(images, prompts, temperature, seeds):
                calls.append((len(images), temperature))
                return engine_.generate(images, prompts, temperature, seeds)

            return Engine(generate, words)

        return build_engine

    monkeypatch.setattr(rich.progress, "Progress", Recording)
    # Means 0.75, 0.25 and 0.5, each page's samples disagreeing.
    schedule = {
        ALWAYS: ["a page of text", "a page of text", "a page of text", "Quetzalcoatl zymurgy anteater"],
        NEVER: ["the quarterly revenue of the northern division rose by twelve percent", "no", "no", "no"],
        SOMETIMES: [CHARS, "zzz"],
    }
    monkeypatch.setattr(job, "build_engine", stand_in(case, schedule))
    difficulty = tmp_path / "elsewhere" / "d.jsonl"
    args = ["curate", case, "--model", "stand-in", "--samples", "4", "--output", difficulty, "--set", "temperature=1.25"]
    res = invoke([*args, "--engine", "vllm", "--no-eager", "--tensor-parallel", "2", "--batch-size", "3", "--min-mean", "0.6", "-q"])
    assert res.exit_code == 0, res.output
    assert loads == [{"engine": "vllm", "eager": False, "pages": 3, "tp": 2}]
    assert calls == [(3, 1.25), (1, 1.25)] * 3  # one page (4 completions) per group, at most 3 per call
    assert bars == []  # --quiet
    assert difficulty.is_file() and not (case / "difficulty.jsonl").exists()
    records = {r["pdf"]: r for _, r in read_records(difficulty)[0]}
    assert {pdf: r["mean"] for pdf, r in records.items()} == {ALWAYS: 0.75, NEVER: 0.25, SOMETIMES: 0.5}
    assert all(r["engine"] == "vllm" and r["settings"]["temperature"] == 1.25 for r in records.values())
    assert "kept 1 of 3 train pages (reward std > 0, mean > 0.6)" in res.output
    # The train command shown trains with the config curate scored with (its overrides too).
    assert f"train on them: olmocr-rl train {case} --model stand-in -o OUTPUT_DIR train_split=curated temperature=1.25\n" in res.output
    assert [r["pdf"] for r in read_split(case, "curated")] == [ALWAYS]
    # The other bound, from the same file (nothing sampled), into another split.
    res = invoke([*args, "--max-mean", "0.3", "--name", "low", "-q"])
    assert res.exit_code == 0, res.output
    assert len(loads) == 1 and "kept 1 of 3 train pages (reward std > 0, mean < 0.3)" in res.output
    assert "train_split=low temperature=1.25\n" in res.output
    assert [r["pdf"] for r in read_split(case, "low")] == [NEVER]

    # --eval, the defaults otherwise (the transformers engine, 16 completions per call, a progress bar):
    # every page's samples alternate between its present-tests' texts and nothing, so all disagree.
    folder = tmp_path / "prepared"
    shutil.copytree(prepared, folder)
    texts: dict[str, list[str]] = {}
    for tests in FIXTURES.glob("*_tests.jsonl"):
        for t in map(json.loads, tests.read_text().splitlines()):
            texts.setdefault(t["pdf"], []).extend([t["text"]] if t["type"] == "present" else [])
    loads.clear(), calls.clear()
    monkeypatch.setattr(job, "build_engine", stand_in(folder, {pdf: ["\n".join(t), ""] for pdf, t in texts.items()}))
    res = invoke(["curate", folder, "--model", "stand-in", "--eval"])
    assert res.exit_code == 0, res.output
    records = [r for _, r in read_records(folder / "difficulty.jsonl")[0]]
    assert sorted(r["split"] for r in records) == ["eval", "train", "train", "train"] and all(r["std"] > 0 for r in records)
    assert loads == [{"engine": "transformers", "eager": None, "pages": 4, "tp": 1}]
    assert [n for n, _ in calls] == [16, 16] and {t for _, t in calls} == {0.8}  # 4 pages x 8 samples; the recipe's temperature
    assert len(bars) == 1 and bars[0]["stopped"] and bars[0]["updates"][-1] == 4
    assert "kept 3 of 3 train pages" in res.output
    eval_pages = {(r["pdf"], r["page"]) for r in read_split(folder, "eval")}
    assert len(eval_pages) == 1 and not eval_pages & {(r["pdf"], r["page"]) for r in read_split(folder, "curated")}


# ---------------------------------------------------------------------------------------------
# the command, with the tiny model
# ---------------------------------------------------------------------------------------------

CURATE = ["--samples", "8", "--config", str(RECIPE), "-q"]  # the tiny recipe: 16-token completions, 4 generations


def test_curate_with_the_tiny_model_then_train_reads_only_the_kept_pages(case, tiny_model, tmp_path):
    res = invoke(["curate", case, "--model", tiny_model, "--samples", "8", "--config", str(RECIPE), "-q"])  # CURATE
    assert res.exit_code == 0, res.output
    records = {r["pdf"]: r for _, r in read_records(case / "difficulty.jsonl")[0]}
    assert records[ALWAYS]["rewards"] == [1.0] * 8
    assert records[NEVER]["rewards"] == [0.0] * 8
    assert records[SOMETIMES]["std"] > 0, records[SOMETIMES]["rewards"]
    assert all(0 < t <= 16 for r in records.values() for t in r["tokens"])
    assert records[ALWAYS]["settings"] == {"model": str(tiny_model.resolve()), "samples": 8, "temperature": 0.8, "max_new_tokens": 16,
                                           "rewards": {"bench": 1.0}, "guard": "short-output+footnote"}  # fmt: skip
    assert "train pages: 1 all samples pass, 1 all fail, 0 all the same otherwise, 1 disagree" in res.output
    assert f"kept 1 of 3 train pages (reward std > 0): {case / 'curated.jsonl'}" in res.output
    assert "2 pages x 4 generations x <= 16 tokens = 66.7% of the completion budget" in res.output
    assert "train_split=curated" in res.output
    assert [r["pdf"] for r in read_split(case, "curated")] == [SOMETIMES]

    # Re-selecting needs no model (taken from the file) and generates nothing; nothing kept: no split written.
    before = (case / "curated.jsonl").read_bytes()
    res = invoke(["curate", case, *CURATE, "--min-std", "10"])
    assert res.exit_code == 1 and "3 already there" in res.output
    assert "error: no train page kept (reward std > 10)" in res.output
    assert (case / "curated.jsonl").read_bytes() == before
    res = invoke(["curate", case, *CURATE, "--name", "eval"])
    assert res.exit_code == 1 and "error: --name 'eval': that name is taken" in res.output

    # GRPO on the selection: three steps of one page each, every completion of the kept page.
    out = tmp_path / "run"
    res = invoke(["train", case, "--model", tiny_model, "-o", out, "--config", RECIPE, "train_split=curated", "max_steps=3",
                  "eval_split=none", "final_outputs=none", "save_steps=0", "report_to=[none]"])  # fmt: skip
    assert res.exit_code == 0, res.output
    seen = [json.loads(line) for line in (out / "completions" / "failing_train.jsonl").read_text().splitlines()]
    assert len({r["step"] for r in seen}) == 3
    assert {(r["pdf"], r["page"]) for r in seen} == {(SOMETIMES, 1)}
    # Curation working, in the logs: trl's share of groups with one reward, per step.
    logs = [json.loads(line) for line in (out / "logs" / "metrics.jsonl").read_text().splitlines()]
    shares = [r["frac_reward_zero_std"] for r in logs if "loss" in r]
    assert len(shares) == 3 and all(0.0 <= s <= 1.0 for s in shares) and min(shares) < 1.0  # the dropped pages log 1.0
    assert " zero-std " in res.output  # the step line (olmocr_rl/train/console.py STEP_METRICS: frac_reward_zero_std)


def test_curate_stop_loops_scores_stopped_samples_as_the_full_run(case, tmp_path):
    """--stop-loops with the loops_forever tiny model (it never leaves a loop) sampled near greedily:
    every sample is stopped at the rule's cut, and each page's record (rewards, the texts' token
    counts) is what the run without the stop writes; the records count the stops and the decode
    tokens saved, the settings hold the rule (so a file made without it is not mixed with one made
    with it), and the run says how many samples looped."""
    from training import build_model

    forever = build_model(tmp_path / "forever", loops_forever=True)
    base = ["curate", case, "--model", forever, "--samples", "2", "--config", str(RECIPE), "-q", "--set", "temperature=1e-5",
            "--set", "max_completion_length=40"]  # fmt: skip
    full, stop = tmp_path / "full.jsonl", tmp_path / "stop.jsonl"
    # Near-greedy samples are all alike, so no page is kept (exit 1): the records are written first.
    res = invoke([*base, "--output", full])
    assert res.exit_code == 1 and "no train page kept" in res.output, res.output
    res = invoke([*base, "--output", stop, "--stop-loops", "--loop-rule", "min_span=8", "--loop-rule", "min_repeats=2"])
    assert res.exit_code == 1 and "no train page kept" in res.output, res.output
    a, b = ({r["pdf"]: r for _, r in read_records(f)[0]} for f in (full, stop))
    assert {k: (r["rewards"], r["tokens"]) for k, r in a.items()} == {k: (r["rewards"], r["tokens"]) for k, r in b.items()}
    assert all(r["loops"] == 2 and 0 < r["loop_tokens_saved"] < 2 * 40 for r in b.values()) and "loops" not in next(iter(a.values())), [
        (r.get("loops"), r.get("loop_tokens_saved")) for r in b.values()
    ]
    assert next(iter(b.values()))["settings"]["loop_rule"] == {"max_period": 256, "min_span": 8, "min_repeats": 2}
    assert "loop_rule" not in next(iter(a.values()))["settings"]
    assert "loops: 6 of 6 samples stopped in a repetition loop" in res.output
    res = invoke([*base, "--output", stop])  # the same file without the stop: other settings
    assert res.exit_code == 1 and "made with other settings: loop_rule" in res.output
    assert invoke([*base, "--loop-rule", "min_span=8"]).exit_code == 1  # the rule without the stop


# The child: the command with the real engine, held on its second generate call (the second page)
# until it is killed.
CHILD = """
import sys, time
from pathlib import Path
import olmocr_rl.engines as g
real = g.transformers_generate
def held(*a, **k):
    generate, calls = real(*a, **k), []
    def f(images, prompts, temperature, seeds):
        calls.append(1)
        if len(calls) == 2:
            Path(sys.argv[1]).touch()
            time.sleep(600)
        return generate(images, prompts, temperature, seeds)
    return f
g.transformers_generate = held
from olmocr_rl.cli import main
sys.exit(main(sys.argv[2:]))
"""


def held_child(args: list[str], marker: Path) -> subprocess.Popen:
    """The command in a child process, returned once it is generating its second page."""
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(marker), *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 300
    while not marker.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail("the child never reached its second page:\n" + proc.stdout.read().decode()[-3000:])
        time.sleep(0.1)
    return proc


def test_a_killed_run_resumes_where_it_stopped(case, tiny_model, tmp_path):
    args = ["curate", str(case), "--model", str(tiny_model), "--samples", "8", "--batch-size", "8", "--config", str(RECIPE), "-q"]
    proc = held_child(args, tmp_path / "second_page_started")
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    path = case / "difficulty.jsonl"
    first = path.read_bytes()
    records, valid, torn = read_records(path)
    assert not torn and valid == len(first) and [r["pdf"] for _, r in records] == [ALWAYS]  # the finished page, whole
    assert not (case / "curated.jsonl").exists()  # the selection is written once every page is scored

    res = invoke(args)
    assert res.exit_code == 0, res.output
    assert "2 scored now" in res.output and "1 already there" in res.output
    assert path.read_bytes().startswith(first)  # the killed run's line kept as it was
    records, _, torn = read_records(path)
    assert not torn and sorted(r["pdf"] for _, r in records) == sorted([ALWAYS, NEVER, SOMETIMES])  # each page once
    assert (case / "curated.jsonl").is_file()


def test_sigterm_ends_the_run_as_ctrl_c_does(case, tiny_model, tmp_path):
    """SIGTERM is an interrupt (status 130, one `error:` line), not Python's instant death, so the
    interpreter shuts down in order (vLLM's engine processes with it: tests/test_vllm_real.py);
    the finished page stays in the file."""
    args = ["curate", str(case), "--model", str(tiny_model), "--samples", "8", "--batch-size", "8", "--config", str(RECIPE), "-q"]
    proc = held_child(args, tmp_path / "second_page_started")
    proc.send_signal(signal.SIGTERM)
    out = proc.communicate(timeout=120)[0].decode()
    assert proc.returncode == 130 and out.strip().endswith("error: interrupted: the pages finished are in the difficulty file; "
                                                          "run again to go on"), out[-3000:]  # fmt: skip
    records, _, torn = read_records(case / "difficulty.jsonl")
    assert not torn and [r["pdf"] for _, r in records] == [ALWAYS]
