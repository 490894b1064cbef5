"""`bench --compare`: B − A per JSONL file, per type and overall with a paired bootstrap interval
over tests, and the tests gained and lost; checked against a bootstrap written out here with
numpy, on identical candidates (exactly 0, no flips), and through the command line."""

from __future__ import annotations

import json
import random
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from clirun import invoke

from olmocr_rl.bench import run_bench
from olmocr_rl.bench.compare import Comparison, Difference, compare, compare_summary, interval_text, significance, verdict
from olmocr_rl.bench.results import CandidateResult
from olmocr_rl.bench.results import TestOutcome as Outcome

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "bench_fixtures"
NO_INTERVAL = "no interval (--bootstrap-samples 0)"


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


def test_interval_in_blocks_and_with_a_type_some_resamples_miss(monkeypatch):
    """Drawn in blocks of resamples (the module's bound on memory, made small here: a few rows at a
    time for the small files, 1 for the large, the last block short), the intervals are the direct
    bootstrap's, drawn at once (numpy's draws do not depend on how they are split); a type with one
    test, which some resamples do not draw, takes its interval over the resamples that do."""
    import importlib

    module = importlib.import_module("olmocr_rl.bench.compare")  # the package names its function `compare` too

    a, b = candidates(seed=3, n=100)
    for c, passes in ((a, 0), (b, 1)):
        c.outcomes.append(Outcome("rare1", "rare", "b.jsonl", "r.pdf", 1, ["r_pg1_repeat1.md"], passes=passes))
    monkeypatch.setattr(module, "_BLOCK", 80)
    sizes = Counter(o.group for o in a.outcomes)
    rows = sorted(max(1, 80 // m) for m in sizes.values())
    assert rows[0] == 1 and 10 % rows[-1]  # one row at a time for the largest file, a short last block for the smallest
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a type some resamples miss is no 0/0 warning on the console
        got = compare(a, b, samples=10, seed=2)
    want = direct_bootstrap(a, b, 10, 2)
    assert got.overall.ci == pytest.approx(want["overall"], abs=1e-12)
    for table, key in ((got.by_jsonl, "jsonl"), (got.by_type, "type")):
        assert [d.name for d in table] == list(want[key])
        for d in table:
            assert d.ci == pytest.approx(want[key][d.name], abs=1e-12), d.name
    rare = next(d for d in got.by_type if d.name == "rare")
    assert (rare.tests, rare.diff, rare.gained) == (1, 1.0, 1)
    assert want["type"]["rare"] == (1.0, 1.0)  # every resample that drew it: +1
    # One resample that does not draw it (the same draws as the module's, here by hand): no figure
    # for the type, so no difference shown: the interval (0, 0), as for identical candidates.
    rng = np.random.default_rng(1)
    members = {g: [o.id for o in a.outcomes if o.group == g] for g in sorted(sizes)}
    drawn = {g: {ids[k] for k in rng.integers(0, len(ids), size=(1, len(ids)))[0]} for g, ids in members.items()}
    assert "rare1" not in drawn["b.jsonl"]
    [rare] = [d for d in compare(a, b, samples=1, seed=1).by_type if d.name == "rare"]
    assert (rare.diff, rare.ci, significance(rare)) == (1.0, (0.0, 0.0), 0)


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
    none = Difference("x", 10, 0.5, 0.7, 0.2, None, 0, 0)
    assert significance(none) == 0 and interval_text(none) == NO_INTERVAL
    assert interval_text(row(0.2, 0.01249, -0.0125)) == "+1.2 … -1.2"


def test_candidates_on_different_tests_are_refused():
    a, b = candidates(n=20)
    b.outcomes.pop()
    with pytest.raises(ValueError, match="did not score the same tests"):
        compare(a, b)
    # A test twice in one candidate, or more tests in A though each is in B: refused too.
    one = lambda i: Outcome(f"t{i}", "present", "f.jsonl", "p.pdf", 1, ["m.md"], passes=1)
    for xs, ys in (([0, 0, 1], [0, 1, 1]), ([0, 1, 1], [0, 1])):
        with pytest.raises(ValueError, match="^A and B did not score the same tests: they cannot be compared test by test$"):
            compare(CandidateResult("A", [one(i) for i in xs], [], [], None), CandidateResult("B", [one(i) for i in ys], [], [], None))


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


def comparison(diff: float, ci: tuple[float, float] | None, gained: int, lost: int, failed: tuple[str, ...] = (), level: float = 0.9):
    """A comparison of B with A stated by hand (the verdict reads only its overall row)."""
    o = Difference("overall", 10, 0.5, 0.5 + diff, diff, ci, gained, lost)
    return Comparison("A", "B", 10, o, [], [], [], [], samples=0 if ci is None else 10, level=level, seed=0, failed=list(failed))


def test_verdict_says_higher_lower_or_no_difference_and_who_is_failed():
    """Each answer the verdict gives, at a non-default level: higher, lower, no clear difference, no
    interval; "1 test" for one; one FAILED candidate ("is", "it") and two ("are", "them"), both named."""
    assert verdict(comparison(0.0125, (0.001, 0.03), 1, 2)) == (
        "B − A = +1.2 points (90% interval +0.1 … +3.0), 1 test gained, 2 lost: B is higher (the 90% interval excludes 0)"
    )
    assert verdict(comparison(-0.02, (-0.0351, -0.0049), 0, 1, level=0.955)) == (
        "B − A = -2.0 points (95.5% interval -3.5 … -0.5), 0 tests gained, 1 lost: B is lower (the 95.5% interval excludes 0)"
    )
    assert verdict(comparison(0.01, (0.0, 0.02), 2, 0)).endswith(
        "2 tests gained, 0 lost: no clear difference (the 90% interval includes 0)"
    )
    assert (
        verdict(comparison(0.01, None, 2, 0))
        == "B − A = +1.0 points, 2 tests gained, 0 lost: " + NO_INTERVAL + ", so no verdict on the difference"
    )
    plain = verdict(comparison(0.01, (0.005, 0.02), 2, 0))
    assert verdict(comparison(0.01, (0.005, 0.02), 2, 0, failed=("A",))) == (
        "A is FAILED (errors: the reference scores it 0); ignoring errors, " + plain
    )
    assert verdict(comparison(0.01, (0.005, 0.02), 2, 0, failed=("A", "B"))) == (
        "A and B are FAILED (errors: the reference scores them 0); ignoring errors, " + plain
    )


def failed_copy(c: CandidateResult) -> CandidateResult:
    return CandidateResult(c.name, c.outcomes, ["missing page file"], [], c.ci)


def test_two_failed_candidates_are_both_named_and_compared_ignoring_errors():
    """Both candidates FAILED (the reference scores both 0): both are named, in A, B order, in the
    verdict, the notes and `failed`; the figures are the same as without the errors (ignoring them)."""
    a, b = candidates(n=60)
    clean = compare(a, b, samples=50)
    both = compare(failed_copy(a), failed_copy(b), samples=50)
    assert both.failed == ["A", "B"] and both.overall == clean.overall and both.by_type == clean.by_type
    assert both.notes == [f"{x} has errors: the reference scores it 0 (FAILED); compared here on its figures ignoring errors" for x in "AB"]
    assert verdict(both) == "A and B are FAILED (errors: the reference scores them 0); ignoring errors, " + verdict(clean)
    only_a = compare(failed_copy(a), b, samples=50)
    assert only_a.failed == ["A"] and [n.split()[0] for n in only_a.notes] == ["A"]
    assert clean.failed == [] and clean.notes == []
    assert both.to_dict()["failed"] == ["A", "B"] and both.to_dict()["notes"] == both.notes


def test_the_json_of_a_comparison_holds_every_field():
    """Every field `--json`'s comparison promises, each row's `interval_excludes_zero` at both ends
    of the interval (an end at exactly 0 includes 0), `ci` a list, null without resamples."""
    a, b = candidates(n=80)
    c = compare(a, b, samples=60, level=0.8, seed=4)
    c.by_jsonl[0].ci, c.by_jsonl[1].ci, c.by_jsonl[2].ci = (0.0, 0.1), (0.001, 0.1), (-0.1, -0.001)
    c.by_type[0].ci, c.by_type[1].ci = (-0.1, 0.0), None
    data = json.loads(json.dumps(c.to_dict()))
    assert set(data) == {"a", "b", "tests", "overall", "by_jsonl", "by_type", "gained", "lost", "samples", "level", "seed", "notes", "failed",
                         "verdict"}  # fmt: skip
    assert (data["a"], data["b"], data["tests"], data["samples"], data["level"], data["seed"]) == ("A", "B", 80, 60, 0.8, 4)
    assert (data["gained"], data["lost"], data["verdict"]) == (c.gained, c.lost, verdict(c))
    rows = [data["overall"], *data["by_jsonl"], *data["by_type"]]
    for row, d in zip(rows, [c.overall, *c.by_jsonl, *c.by_type]):
        assert set(row) == {"name", "tests", "a", "b", "diff", "ci", "gained", "lost", "interval_excludes_zero"}
        assert (row["name"], row["tests"], row["a"], row["b"], row["diff"], row["gained"], row["lost"]) == (
            d.name, d.tests, d.a, d.b, d.diff, d.gained, d.lost)  # fmt: skip
        assert row["ci"] == (None if d.ci is None else list(d.ci))
    assert [r["interval_excludes_zero"] for r in data["by_jsonl"]] == [False, True, True]
    assert [(r["name"], r["tests"]) for r in data["by_jsonl"]] == sorted(Counter(o.group for o in a.outcomes).items())
    assert [(r["name"], r["tests"]) for r in data["by_type"]] == sorted(Counter(o.type for o in a.outcomes).items())
    assert (data["overall"]["name"], data["overall"]["tests"]) == ("overall", 80)
    assert [r["interval_excludes_zero"] for r in data["by_type"][:2]] == [False, None]


def test_compare_summary_pairs_with_the_runs_resamples():
    """Against the first candidate, a named baseline, or every pair (j − i for i < j); each with the
    summary's resamples, level and seed; an unknown baseline names the candidates."""
    from olmocr_rl.bench.results import BenchSummary

    a, b = candidates(n=40)
    c = CandidateResult("C", list(b.outcomes), [], [], (0, 0))
    summary = BenchSummary(None, [a, b, c], 30, 0.8, 9)  # type: ignore[arg-type]
    pairs = lambda got: [(x.a, x.b) for x in got]
    assert pairs(compare_summary(summary)) == [("A", "B"), ("A", "C")]
    assert pairs(compare_summary(summary, "B")) == [("B", "A"), ("B", "C")]
    every = compare_summary(summary, all_pairs=True)
    assert pairs(every) == [("A", "B"), ("A", "C"), ("B", "C")]
    for x in [*every, *compare_summary(summary)]:
        assert (x.samples, x.level, x.seed) == (30, 0.8, 9)
    assert every[0].overall.ci == compare(a, b, samples=30, level=0.8, seed=9).overall.ci
    with pytest.raises(ValueError) as err:
        compare_summary(summary, "D")
    assert str(err.value) == "no candidate 'D' to compare against (candidates: A, B, C)"


class Recorder:
    """A console that keeps what is printed, with `tables.show` replaced so each table's title,
    headers and rows (cells, end of section) are kept."""

    width = 400

    def __init__(self, monkeypatch):
        import olmocr_rl.tables as tables

        self.printed: list[tuple[str, dict]] = []
        self.tables: list[tuple[str, list[str], list[tuple[list[str], bool]]]] = []
        monkeypatch.setattr(tables, "show", lambda console, t, title="": self.tables.append((title, [c.header for c in t.columns], t.rows)))

    def print(self, *objs, **kw):
        self.printed.append((str(objs[0]) if objs else "", kw))


def test_the_comparison_tables_row_by_row(monkeypatch):
    """Two tables per comparison, their titles naming B, A, the tests and the rules; per JSONL file
    then the score (its own section), per type; A, B and B − A in points to one decimal, `*` and
    colour on exactly the rows whose interval excludes 0, the interval column at a non-default
    level (one resample is enough for it); the closing line and the notes. Without resamples, no
    interval column and the closing line says so."""
    from olmocr_rl.bench.compare import FILE_RULE, SIGNIFICANT, TYPE_RULE, print_comparisons

    a, b = candidates(n=120)
    c = compare(failed_copy(a), b, samples=1, level=0.8, seed=5)
    c.by_jsonl[0].ci, c.by_jsonl[1].ci, c.by_jsonl[2].ci = (0.001, 0.1), (-0.1, -0.001), (0.0, 0.1)
    bare = compare(a, b, samples=0)
    empty = compare(CandidateResult("A", [], [], [], None), CandidateResult("B", [], [], [], None), samples=3)
    con = Recorder(monkeypatch)
    print_comparisons([c, bare, empty], con)
    (t_file, h_file, r_file), (t_type, h_type, r_type), (t_file0, h_file0, r_file0), (_, h_type0, r_type0) = con.tables[:4]
    # No tests: the score row alone, 0 everywhere, and no type row.
    assert [rows for _, _, rows in con.tables[4:]] == [[(["score", "0", "0.0", "0.0", "+0.0 ", "+0.0 … +0.0", "0", "0"], False)], []]
    head = "B − A with B = B, A = A, paired over 120 tests, in points"
    assert t_file == f"{head}, by JSONL file and the score (the mean of the files): {FILE_RULE}" == t_file0
    assert t_type == f"by test type: {TYPE_RULE}"
    assert h_file == ["JSONL file", "tests", "A %", "B %", "B − A", "80% interval", "gained", "lost"]
    assert h_type == ["test type", *h_file[1:]]
    assert h_file0 == ["JSONL file", "tests", "A %", "B %", "B − A", "gained", "lost"] and h_type0 == ["test type", *h_file0[1:]]

    def cells(d, name, ci=True):
        sig = 1 if d.ci and d.ci[0] > 0 else -1 if d.ci and d.ci[1] < 0 else 0
        pts = f"{d.diff * 100:+.1f}"
        diff = {1: f"[green]{pts}{SIGNIFICANT}[/]", -1: f"[red]{pts}{SIGNIFICANT}[/]", 0: f"{pts} "}[sig]
        shown = [f"{d.ci[0] * 100:+.1f} … {d.ci[1] * 100:+.1f}"] if ci else []
        return [name, str(d.tests), f"{d.a * 100:.1f}", f"{d.b * 100:.1f}", diff, *shown, str(d.gained), str(d.lost)]

    rows = [*c.by_jsonl, c.overall]
    assert r_file == [(cells(d, "score" if d is c.overall else d.name), d is c.by_jsonl[-1]) for d in rows]
    assert [r[0][4][:3] for r in r_file[:3]] == ["[gr", "[re", f"{c.by_jsonl[2].diff * 100:+.1f}"[:3]]
    assert r_type == [(cells(d, d.name), False) for d in c.by_type]
    assert r_file0 == [
        (cells(d, "score" if d is bare.overall else d.name, ci=False), d is bare.by_jsonl[-1]) for d in [*bare.by_jsonl, bare.overall]
    ]
    assert r_type0 == [(cells(d, d.name, ci=False), False) for d in bare.by_type]
    texts = [t for t, _ in con.printed]
    assert texts == [
        "80% interval: 1 bootstrap resamples of tests within each JSONL file, the same tests for A and B (seed 5); "
        f"{SIGNIFICANT}: the interval excludes 0; gained / lost: tests passing in B only / in A only.",
        "[yellow]note:[/] " + c.notes[0],
        NO_INTERVAL + "; gained / lost: tests passing in B only / in A only.",
        texts[0].replace("1 bootstrap", "3 bootstrap").replace("(seed 5)", "(seed 0)").replace("80%", "95%"),
    ]
    assert con.printed[0][1] == {"style": "dim", "highlight": False} and con.printed[1][1] == {"highlight": False}


def test_defaults_are_the_references_and_nothing_to_compare_is_zero():
    """The defaults: 1,000 resamples, a 95% interval, seed 0. No tests at all: no rows, B − A 0 with
    the interval (0, 0)."""
    a, b = candidates(n=50)
    assert compare(a, b).overall.ci == compare(a, b, samples=1000, level=0.95, seed=0).overall.ci
    assert compare(a, b).overall.ci != compare(a, b, samples=1000, level=0.95, seed=1).overall.ci
    got = compare(CandidateResult("A", [], [], [], None), CandidateResult("B", [], [], [], None), samples=20)
    assert (got.overall.diff, got.overall.ci, got.overall.gained, got.overall.lost, got.tests) == (0.0, (0.0, 0.0), 0, 0, 0)
    assert got.by_jsonl == [] and got.by_type == []
