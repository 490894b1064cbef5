"""`bench --compare`: B − A per JSONL file, per type and overall with a paired bootstrap interval
over tests, and the tests gained and lost; checked against a bootstrap written out here with
numpy, on identical candidates (exactly 0, no flips), and through the command line."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
from clirun import invoke

from olmocr_rl.bench import run_bench
from olmocr_rl.bench.compare import Difference, compare, compare_summary, significance, verdict
from olmocr_rl.bench.results import CandidateResult
from olmocr_rl.bench.results import TestOutcome as Outcome

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "bench_fixtures"


def candidates(seed: int = 0, n: int = 300) -> tuple[CandidateResult, CandidateResult]:
    """Two candidates on the same n tests (three JSONL files, four types, 1-5 repeats), B a bit
    better than A and correlated with it, as two checkpoints are; B's outcomes in another order."""
    rng = random.Random(seed)
    out_a, out_b = [], []
    for i in range(n):
        group = rng.choice(["a.jsonl", "b.jsonl", "b.jsonl", "c.jsonl"])
        kind = rng.choice(["present", "order", "table", "math"])
        repeats = rng.randint(1, 5)
        md = [f"p{i}_pg1_repeat{r + 1}.md" for r in range(repeats)]
        skill = rng.random()
        pa = sum(rng.random() < skill for _ in range(repeats))
        pb = sum(rng.random() < min(1.0, skill + 0.1) for _ in range(repeats))
        out_a.append(Outcome(f"t{i}", kind, group, f"p{i}.pdf", 1, md, passes=pa))
        out_b.append(Outcome(f"t{i}", kind, group, f"p{i}.pdf", 1, md, passes=pb))
    rng.shuffle(out_b)  # pairing is by id, not by position
    return CandidateResult("A", out_a, [], [], (0, 0)), CandidateResult("B", out_b, [], [], (0, 0))


def direct_bootstrap(a: CandidateResult, b: CandidateResult, samples: int, seed: int, level: float = 0.95) -> dict:
    """The paired bootstrap written plainly: the same index draws as the module (per JSONL file in
    name order, one samples x n matrix each), then resample by resample, test by test."""
    by_id = {o.id: o for o in b.outcomes}
    pairs = [(o, by_id[o.id]) for o in a.outcomes]
    groups = sorted({o.group for o, _ in pairs})
    types = sorted({o.type for o, _ in pairs})
    members = {g: [p for p in pairs if p[0].group == g] for g in groups}
    rng = np.random.default_rng(seed)
    draws = {g: rng.integers(0, len(members[g]), size=(samples, len(members[g]))) for g in groups}
    overall, per_jsonl, per_type = [], {g: [] for g in groups}, {t: [] for t in types}
    for s in range(samples):
        group_means, sums, counts = [], dict.fromkeys(types, 0.0), dict.fromkeys(types, 0)
        for g in groups:
            drawn = [members[g][k] for k in draws[g][s]]
            mean = sum(int(pb.passed) - int(pa.passed) for pa, pb in drawn) / len(drawn)
            group_means.append(mean)
            per_jsonl[g].append(mean)
            for pa, pb in drawn:
                sums[pa.type] += pb.avg - pa.avg
                counts[pa.type] += 1
        overall.append(sum(group_means) / len(group_means))
        for t in types:
            if counts[t]:
                per_type[t].append(sums[t] / counts[t])
    q = [(1 - level) / 2 * 100, (1 + level) / 2 * 100]
    return {
        "overall": tuple(np.percentile(overall, q)),
        "jsonl": {g: tuple(np.percentile(v, q)) for g, v in per_jsonl.items()},
        "type": {t: tuple(np.percentile(v, q)) for t, v in per_type.items()},
    }


def test_interval_equals_a_direct_bootstrap():
    a, b = candidates()
    got = compare(a, b, samples=400, seed=7)
    want = direct_bootstrap(a, b, 400, 7)
    assert got.overall.ci == pytest.approx(want["overall"], abs=1e-12)
    for rows, key in ((got.by_jsonl, "jsonl"), (got.by_type, "type")):
        assert [d.name for d in rows] == list(want[key])
        for d in rows:
            assert d.ci == pytest.approx(want[key][d.name], abs=1e-12), d.name
    # The estimates: B − A of the reference's figures, and the flips by the majority rule.
    assert got.overall.diff == pytest.approx(b.score - a.score, abs=1e-12)
    assert {d.name: d.diff for d in got.by_type} == pytest.approx({k: b.by_type[k][0] - v[0] for k, v in a.by_type.items()}, abs=1e-12)
    passed_a, passed_b = {o.id for o in a.outcomes if o.passed}, {o.id for o in b.outcomes if o.passed}
    assert set(got.gained) == passed_b - passed_a and set(got.lost) == passed_a - passed_b
    assert got.overall.gained == len(passed_b - passed_a) > 0 and got.overall.lost == len(passed_a - passed_b) > 0
    assert sum(d.gained for d in got.by_jsonl) == got.overall.gained


def test_interval_agrees_with_an_independent_resampling():
    """Another seed, resampled test by test with Python's random: the same interval up to Monte
    Carlo error; and pairing matters: the paired interval is narrower than one that resamples the
    two candidates independently."""
    a, b = candidates(seed=1, n=600)
    got = compare(a, b, samples=2000, seed=0).overall.ci
    rng = random.Random(5)
    by_id = {o.id: o for o in b.outcomes}
    groups: dict[str, list[tuple[int, int]]] = {}
    for o in a.outcomes:
        groups.setdefault(o.group, []).append((int(o.passed), int(by_id[o.id].passed)))
    paired, unpaired = [], []
    for _ in range(2000):
        paired.append(np.mean([np.mean([pb - pa for pa, pb in rng.choices(g, k=len(g))]) for g in groups.values()]))
        unpaired.append(
            np.mean(
                [
                    np.mean([x[1] for x in rng.choices(g, k=len(g))]) - np.mean([x[0] for x in rng.choices(g, k=len(g))])
                    for g in groups.values()
                ]
            )
        )
    want = np.percentile(paired, [2.5, 97.5])
    assert got == pytest.approx(tuple(want), abs=0.012)
    assert got[1] - got[0] < 0.8 * (np.percentile(unpaired, 97.5) - np.percentile(unpaired, 2.5))


def test_identical_candidates_differ_by_exactly_zero():
    a, _ = candidates(seed=2)
    twin = CandidateResult("twin", [Outcome(**{**o.__dict__, "md_files": list(o.md_files)}) for o in reversed(a.outcomes)], [], [], (0, 0))
    got = compare(a, twin, samples=300, seed=0)
    for d in [got.overall, *got.by_jsonl, *got.by_type]:
        assert (d.diff, d.ci, d.gained, d.lost) == (0.0, (0.0, 0.0), 0, 0), d
    assert got.gained == [] and got.lost == []
    assert verdict(got).endswith("0 tests gained, 0 lost: no clear difference (the 95% interval includes 0)")


def test_significance_follows_the_interval_not_the_sign():
    """Row 2 of issue 37: −0.4 with interval −1.3 … +0.0 is no clear difference; colour and the
    `*` mark follow the interval."""
    row = lambda diff, lo, hi: Difference("x", 10, 0.5, 0.5 + diff, diff, (lo, hi), 0, 0)
    assert significance(row(-0.004, -0.013, 0.0)) == 0
    assert significance(row(-0.004, -0.013, -0.001)) == -1
    assert significance(row(0.2, 0.0, 0.3)) == 0 and significance(row(0.2, 0.01, 0.3)) == 1


def test_candidates_on_different_tests_are_refused():
    a, b = candidates(n=20)
    b.outcomes.pop()
    with pytest.raises(ValueError, match="did not score the same tests"):
        compare(a, b)


def test_compare_on_the_command_line():
    res = invoke(["bench", str(FIXTURES), "-c", "other_model", "-c", "demo_model", "--compare", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    [cmp] = data["comparisons"]
    # The baseline is the first candidate named with -c: demo_model − other_model.
    assert (cmp["a"], cmp["b"]) == ("other_model", "demo_model")
    summary = run_bench(FIXTURES, ["other_model", "demo_model"])
    [want] = compare_summary(summary, "other_model")
    assert cmp == json.loads(json.dumps(want.to_dict()))
    cands = {c["name"]: c for c in data["candidates"]}
    assert cmp["overall"]["a"] == cands["other_model"]["score"] and cmp["overall"]["b"] == cands["demo_model"]["score"]
    assert cmp["overall"]["gained"] == len(cmp["gained"]) and cmp["overall"]["lost"] == len(cmp["lost"])

    # Without -c the baseline is the first candidate by name; the console states the same numbers,
    # the verdict first (right under the title, before any table).
    res = invoke(["bench", str(FIXTURES), "--compare"], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    [rev] = compare_summary(summary, "demo_model")
    o = rev.overall
    assert o.ci[1] < 0  # other_model is the worse of the two fixtures' candidates
    lines = res.stdout.splitlines()
    pts = lambda x: f"{x * 100:+.1f}"
    assert (
        lines[1]
        == verdict(rev)
        == (
            f"other_model − demo_model = {pts(o.diff)} points (95% interval {pts(o.ci[0])} … {pts(o.ci[1])}), "
            f"{o.gained} tests gained, {o.lost} lost: other_model is lower (the 95% interval excludes 0)"
        )
    )
    assert cmp["verdict"] == verdict(want)
    assert "B − A with B = other_model, A = demo_model" in res.stdout
    # Rows name what they are (no styles in a pipe) and the rule their figures follow; `*` marks
    # exactly the rows whose interval excludes 0.
    assert "by JSONL file and the score (the mean of the files): pass rates, a test passing when more than half" in res.stdout
    assert "by test type: A, B and B − A: the mean share of a test's repeats passed; gained / lost: by the majority rule" in res.stdout
    rows = {
        line.split()[0]: line.split() for line in lines if line.split() and line.split()[0] in ("score", "present", "letter_tests.jsonl")
    }
    assert rows["score"][4] == f"{pts(o.diff)}*"
    for d in [*rev.by_jsonl, *rev.by_type]:
        if d.name in rows:
            assert rows[d.name][4] == pts(d.diff) + ("*" if significance(d) else ""), d
    assert {significance(d) for d in [*rev.by_jsonl, *rev.by_type]} >= {0, -1}
    without = invoke(["bench", str(FIXTURES), "--json"])
    assert "comparisons" not in json.loads(without.stdout)

    res = invoke(["bench", str(FIXTURES), "-c", "demo_model", "--compare"])
    assert res.exit_code == 1 and res.stderr.strip() == "error: --compare needs two or more candidates"


def test_a_failed_candidate_is_named_first_in_the_verdict(tmp_path):
    """A candidate missing page files is FAILED (the reference scores it 0): the verdict line says
    so before the difference (console, JSON and the report), which is on its figures ignoring errors."""
    import shutil

    bench = tmp_path / "bench"
    shutil.copytree(FIXTURES, bench, ignore=shutil.ignore_patterns("*.py", "*.yaml"))
    shutil.copytree(bench / "demo_model", bench / "partial")
    for f in sorted((bench / "partial").rglob("*.md"))[:2]:
        f.unlink()
    res = invoke(
        ["bench", bench, "-c", "demo_model", "-c", "partial", "--compare", "--report", tmp_path / "r.html"], env={"COLUMNS": "400"}
    )
    assert res.exit_code == 0, res.output
    [cmp] = compare_summary(run_bench(bench, ["demo_model", "partial"]), "demo_model")
    line = res.stdout.splitlines()[1]
    assert cmp.failed == ["partial"] and line == verdict(cmp)
    assert line.startswith("partial is FAILED (errors: the reference scores it 0); ignoring errors, partial − demo_model = "), line
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    shown = html.split('<section id="verdicts">')[1].split("</p>")[0]
    assert "partial is FAILED (errors: the reference scores it 0); ignoring errors, partial − demo_model = " in shown
    data = json.loads(invoke(["bench", bench, "-c", "demo_model", "-c", "partial", "--compare", "--json"]).stdout)
    assert data["comparisons"][0]["verdict"] == line and data["comparisons"][0]["failed"] == ["partial"]
    # Neither failed: the verdict is the difference alone.
    [plain] = compare_summary(run_bench(FIXTURES, ["demo_model", "other_model"]), "demo_model")
    assert plain.failed == [] and verdict(plain).startswith("other_model − demo_model = ")


def test_one_candidate_prints_its_score_first(tmp_path):
    """`bench` with one candidate: its score (or FAILED) on the line after the title, before
    anything else."""
    res = invoke(["bench", FIXTURES, "-c", "demo_model"], env={"COLUMNS": "200"})
    [cand] = run_bench(FIXTURES, ["demo_model"]).candidates
    assert res.stdout.splitlines()[1] == (
        f"demo_model: {cand.score * 100:.1f}% (95% interval {cand.ci[0] * 100:.1f} – {cand.ci[1] * 100:.1f}%), {len(cand.outcomes)} tests"
    )
    import shutil

    bench = tmp_path / "bench"
    shutil.copytree(FIXTURES, bench, ignore=shutil.ignore_patterns("*.py", "*.yaml"))
    next(iter(sorted((bench / "demo_model").rglob("*.md")))).unlink()
    res = invoke(["bench", bench, "-c", "demo_model"], env={"COLUMNS": "200"})
    assert res.stdout.splitlines()[1].startswith("demo_model: FAILED (1 error(s): the reference scores it 0); "), res.stdout
