"""What `bench` shows (olmocr_rl/bench/output.py): every field `--json` promises, the tests no
candidate passed and their records, the score line, and the console's lines and tables, on
candidates made up here over the fixtures' tests, each expected figure counted from the outcomes."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from pathlib import Path

import pytest

import olmocr_rl.tables as tables
from olmocr_rl.bench import load_bench
from olmocr_rl.bench.compare import compare, verdict
from olmocr_rl.bench.output import failed_everywhere, interval_text, print_summary, score_line, summary_dict
from olmocr_rl.bench.output import test_records as records_of  # not collected as a test
from olmocr_rl.bench.results import BenchSummary, CandidateResult, describe_semantics
from olmocr_rl.bench.results import TestOutcome as Outcome

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "bench_fixtures"
NO_INTERVAL = "no interval (--bootstrap-samples 0)"


@pytest.fixture(scope="module")
def bench():
    return load_bench(FIXTURES)


def group_of(t) -> str:
    return "baseline" if t.type == "baseline" else Path(t.source).name


def outcomes(bench, pattern: int, skip: str = "") -> list[Outcome]:
    """One outcome per test of the bench (but those of type `skip`): 1-3 repeats, a pattern of passes
    that leaves some tests at 1 of 3 or 2 of 3 repeats, an explanation per failed repeat."""
    out = []
    for i, t in enumerate(bench.tests):
        if t.type == skip:
            continue
        repeats = 1 + i % 3
        passes = (i * pattern) % (repeats + 1)
        md = [f"{t.pdf}_pg{t.page}_repeat{r + 1}.md" for r in range(repeats)]
        why = [f"{t.id}: repeat {r} failed" for r in range(repeats - passes)]
        out.append(Outcome(t.id, t.type, group_of(t), t.pdf, t.page, md, passes=passes, explanations=why))
    return out


def summary_of(bench, candidates, *, samples: int = 17, level: float = 0.9, seed: int = 3) -> BenchSummary:
    return BenchSummary(bench, candidates, samples, level, seed)


def good_and_broken(bench, errors: int = 23) -> tuple[CandidateResult, CandidateResult]:
    good = CandidateResult("good", outcomes(bench, 7), [], [], (0.123449, 0.98765))
    broken = CandidateResult(
        "broken", outcomes(bench, 5, skip="baseline"), [f"e{k}" for k in range(errors)], ["x_pg1_repeat1.md"], (0.25, 0.5)
    )
    return good, broken


def majority(o: Outcome) -> bool:
    return 2 * o.passes > len(o.md_files)


def test_the_json_holds_every_field_it_promises(bench):
    """Each top-level and per-candidate field, its value counted from the outcomes: the per-file pass
    rates (rates that do not divide), the types' mean share of repeats, the score (0 when FAILED),
    the interval and its half width, and every test below all of its repeats (2 of 3 too)."""
    b = dataclasses.replace(bench, warnings=["w1"], notes=["n1"])
    good, broken = good_and_broken(b)
    data = summary_dict(summary_of(b, [good, broken]))
    assert json.loads(json.dumps(data)) == data
    assert data["bench"] == str(FIXTURES) and data["jsonl_files"] == ["letter_tests.jsonl", "report_tests.jsonl", "text_tests.jsonl"]
    assert data["pdfs"] == 3 and data["tests"] == len(b.tests) == 29
    assert data["tests_by_type"] == dict(sorted(Counter(t.type for t in b.tests).items()))
    assert list(data["tests_by_type"]) == sorted(data["tests_by_type"])
    assert data["guard"] == "none" and data["warnings"] == ["w1"] and data["notes"] == ["n1"]
    sem = data["semantics"]
    assert sem == {"guard": "none", "sample": None, "skip_baseline": False, "pass_rule": "majority", "described": describe_semantics(sem)}
    assert data["ci"] == {"level": 0.9, "samples": 17, "seed": 3}
    assert "comparisons" not in data
    assert [c["name"] for c in data["candidates"]] == ["good", "broken"]
    for c, js in zip((good, broken), data["candidates"]):
        files: dict[str, list[int]] = {}
        kinds: dict[str, list[float]] = {}
        for o in c.outcomes:
            files.setdefault(o.group, []).append(majority(o))
            kinds.setdefault(o.type, []).append(o.passes / len(o.md_files))
        rates = {g: sum(v) / len(v) for g, v in files.items()}
        ignoring = sum(rates.values()) / len(rates)
        assert js["by_jsonl"] == {g: {"passed": sum(v), "total": len(v), "rate": pytest.approx(rates[g])} for g, v in sorted(files.items())}
        assert list(js["by_jsonl"]) == sorted(files)
        assert js["by_type"] == {k: {"score": pytest.approx(sum(v) / len(v)), "tests": len(v)} for k, v in kinds.items()}
        assert js["score_ignoring_errors"] == pytest.approx(ignoring)
        assert js["tests"] == len(c.outcomes) and js["missing"] == c.missing and js["errors"] == c.errors
        below = [o for o in c.outcomes if o.passes < len(o.md_files)]
        assert any(majority(o) for o in below) and any(o.passes == 0 for o in below)
        assert js["failed_tests"] == [
            {"id": o.id, "pdf": o.pdf, "page": o.page, "passes": o.passes, "repeats": len(o.md_files), "passed": majority(o),
             "explanation": o.explanations[0]}
            for o in below
        ]  # fmt: skip
    ok, failed = data["candidates"]
    assert (ok["status"], ok["reference_status"], ok["score"]) == (
        "ok",
        f"{ok['score_ignoring_errors'] * 100:0.1f}%",
        ok["score_ignoring_errors"],
    )
    assert (failed["status"], failed["reference_status"], failed["score"]) == ("failed", "FAILED (errors)", 0.0)
    assert failed["score_ignoring_errors"] > 0
    assert ok["ci"] == [0.123449, 0.98765] and ok["ci_half_width"] == pytest.approx((0.98765 - 0.123449) / 2)
    assert failed["ci"] == [0.25, 0.5] and failed["ci_half_width"] == 0.125

    # No notes: no "notes" key; no interval: null for both; a test without explanation: null.
    plain = dataclasses.replace(bench, warnings=[], notes=[])
    bare = Outcome("x", "present", "f.jsonl", "p.pdf", 1, ["a.md", "b.md"], passes=1)
    data = summary_dict(summary_of(plain, [CandidateResult("c", [bare], [], [], None)]))
    assert "notes" not in data and data["warnings"] == []
    [js] = data["candidates"]
    assert (js["ci"], js["ci_half_width"]) == (None, None)
    assert js["failed_tests"] == [{"id": "x", "pdf": "p.pdf", "page": 1, "passes": 1, "repeats": 2, "passed": False, "explanation": None}]


def test_the_json_holds_the_comparisons_when_given(bench):
    good, _ = good_and_broken(bench)
    other = CandidateResult("other", outcomes(bench, 3), [], [], (0.1, 0.2))
    cmp = compare(good, other, samples=20)
    data = summary_dict(summary_of(bench, [good, other]), [cmp])
    assert data["comparisons"] == [cmp.to_dict()]
    assert summary_dict(summary_of(bench, [good, other]), []).keys() == data.keys() - {"comparisons"}


def test_failed_everywhere_reads_only_candidates_without_errors(bench):
    """The tests no candidate without errors passed by the majority rule, in the bench's order; a
    FAILED candidate's passes do not count, a test no valid candidate scored is not listed, and
    with every candidate FAILED there is nothing to list."""
    ids = [t.id for t in bench.tests]
    a = CandidateResult("a", outcomes(bench, 7), [], [], None)
    b = CandidateResult("b", outcomes(bench, 5, skip="baseline"), [], [], None)
    passed = {o.id for c in (a, b) for o in c.outcomes if majority(o)}
    want = [i for i in ids if i not in passed]
    assert want and [t.id for t in failed_everywhere(summary_of(bench, [a, b]))] == want
    # b FAILED: only a's passes count, and every test a scored is a candidate for the list.
    b_failed = dataclasses.replace(b, errors=["boom"])
    assert {o.id for o in b.outcomes if majority(o)} - {o.id for o in a.outcomes if majority(o)}  # b's passes matter
    assert [t.id for t in failed_everywhere(summary_of(bench, [a, b_failed]))] == [o.id for o in a.outcomes if not majority(o)]
    # Only b valid: it did not score the baseline tests, so they are not listed though nobody passed them.
    only_b = failed_everywhere(summary_of(bench, [dataclasses.replace(a, errors=["x"]), b]))
    assert [t.id for t in only_b] == [o.id for o in b.outcomes if not majority(o)]
    assert all(t.type != "baseline" for t in only_b)
    assert failed_everywhere(summary_of(bench, [dataclasses.replace(a, errors=["x"]), b_failed])) == []


def test_records_are_the_lines_of_the_test_files(bench):
    """The records of chosen tests as their JSONL file holds them (read here), and an auto-added
    baseline test as the record the suite made for it."""
    chosen = [t for t in bench.tests if t.id in ("report_p1_order_letter", "sample_paper_baseline", "letter.pdf_baseline")]
    got = records_of(bench, chosen)
    assert got[0] == (FIXTURES / "report_tests.jsonl").read_text(encoding="utf-8").splitlines()[3]
    assert got[1] == (FIXTURES / "text_tests.jsonl").read_text(encoding="utf-8").splitlines()[8]
    assert json.loads(got[2]) == {"id": "letter.pdf_baseline", "pdf": "letter.pdf", "page": 1, "type": "baseline"}


def test_the_score_line_rounds_and_names_failed_candidates(bench):
    """One decimal, rounded (12.3449 -> 12.3, 98.765 -> 98.8), the level as given (90%, 95.5%);
    FAILED with the number of errors and the score ignoring them; without interval, NO_INTERVAL."""
    good, broken = good_and_broken(bench, errors=2)
    assert interval_text((0.123449, 0.98765)) == "12.3 – 98.8%" and interval_text(None) == NO_INTERVAL
    score = good.score_ignoring_errors * 100
    assert score_line(good, 0.9) == f"good: {score:0.1f}% (90% interval 12.3 – 98.8%), 29 tests"
    assert score_line(good, 0.955).startswith(f"good: {score:0.1f}% (95.5% interval 12.3 – 98.8%)")
    assert score_line(dataclasses.replace(good, ci=None), 0.9) == f"good: {score:0.1f}%, 29 tests; {NO_INTERVAL}"
    ignoring = broken.score_ignoring_errors * 100
    assert score_line(broken, 0.9) == f"broken: FAILED (2 error(s): the reference scores it 0); {ignoring:.1f}% ignoring errors, 26 tests"


class Recorder:
    """A console that keeps what is printed (the text and its style), with `tables.show` replaced so
    each table's title, headers and rows are kept as cells."""

    width = 400

    def __init__(self, monkeypatch):
        self.printed: list[tuple[str, dict]] = []
        self.tables: list[tuple[str, list[str], list[tuple[list[str], bool]]]] = []
        self.shown_on: list = []  # the console each table was shown on

        def show(console, t, title=""):
            self.shown_on.append(console)
            self.tables.append((title, [c.header for c in t.columns], t.rows))

        monkeypatch.setattr(tables, "show", show)

    def print(self, *objs, **kw):
        self.printed.append((str(objs[0]) if objs else "", kw))

    def texts(self) -> list[str]:
        return [text for text, _ in self.printed]


def test_the_console_shows_each_figure_and_its_style(bench, monkeypatch):
    """Title, each score line (red when FAILED), the semantics, warnings and notes; the score table
    with the interval's columns at a non-default level; the per-file and per-type pass rates, a
    candidate that did not score a file or type left blank; the FAILED note; at most 20 errors
    then how many more; with `show_failures` every test below all of its repeats."""
    b = dataclasses.replace(bench, warnings=["w1"], notes=["n1"])
    good, broken = good_and_broken(b)
    summary = summary_of(b, [good, broken])
    con = Recorder(monkeypatch)
    print_summary(summary, con, show_failures=True)
    texts = con.texts()
    assert con.printed[0] == (f"olmOCR-bench: {FIXTURES}", {"style": "bold", "highlight": False})
    assert con.printed[1] == (score_line(good, 0.9), {"style": "bold", "highlight": False})
    assert con.printed[2] == (score_line(broken, 0.9), {"style": "bold red", "highlight": False})
    assert con.printed[3] == ("scored with: " + "; ".join(describe_semantics(summary.semantics)),
                              {"style": "dim", "highlight": False, "markup": False})  # fmt: skip
    assert con.printed[4] == ("[yellow]warning:[/] w1", {"highlight": False})
    assert con.printed[5] == ("note: n1", {"style": "dim", "highlight": False})

    (t_score, h_score, r_score), (t_file, h_file, r_file), (t_type, h_type, r_type) = con.tables
    assert t_score == "score: the mean of the per-JSONL pass rates"
    assert h_score == ["candidate", "score", "± (90% CI)", "90% interval", "tests"]
    assert r_score == [
        (["good", good.status, "43.2%", "12.3 – 98.8%", "29"], False),
        (["broken", "[red]FAILED (errors)[/]", "", f"[dim]{broken.score_ignoring_errors * 100:0.1f}% ignoring errors[/]", "26"], False),
    ]
    assert t_file == "pass rate by JSONL file (tests passed): a test passes when more than half of its repeats pass"
    assert t_type == "pass rate by test type: the mean over its tests of the share of repeats passed"
    assert h_file == ["JSONL file", "tests", "good", "broken"] and h_type == ["test type", "tests", "good", "broken"]

    def file_cell(c, g):
        got = [majority(o) for o in c.outcomes if o.group == g]
        return f"{sum(got) / len(got) * 100:0.1f}% ({sum(got)})" if got else ""

    def type_cell(c, k):
        got = [o.passes / len(o.md_files) for o in c.outcomes if o.type == k]
        return f"{sum(got) / len(got) * 100:0.1f}%" if got else ""

    groups = sorted({group_of(t) for t in b.tests})
    kinds = sorted({t.type for t in b.tests})
    count = lambda key: lambda v: str(sum(key(t) == v for t in b.tests))
    assert r_file == [([g, count(group_of)(g), file_cell(good, g), file_cell(broken, g)], False) for g in groups]
    assert r_type == [([k, count(lambda t: t.type)(k), type_cell(good, k), type_cell(broken, k)], False) for k in kinds]
    assert ["baseline", "3", file_cell(good, "baseline"), ""] in [cells for cells, _ in r_file]  # broken did not score them

    fail = texts.index("FAILED (errors): the candidate has errors (listed below) and the reference scores it 0.")
    assert con.printed[fail][1] == {"style": "dim", "highlight": False}
    errors = texts.index("[red]broken: 23 error(s)[/]")
    assert texts[errors + 1 : errors + 22] == [f"  e{k}" for k in range(20)] + ["  ... and 3 more (see --json)"]
    assert con.printed[errors][1] == {"highlight": False} and con.printed[errors + 21][1] == {"highlight": False}
    assert con.printed[errors + 1][1] == {"highlight": False, "markup": False}
    fails = [t for t in texts if t.startswith("  [FAIL] ")]
    want = [
        f"  [FAIL] {c.name}: {o.id} ({o.pdf} page {o.page}) {o.passes}/{len(o.md_files)} repeats passed. {o.explanations[0]}"
        for c in (good, broken)
        for o in c.outcomes
        if o.passes < len(o.md_files)
    ]
    assert fails == want
    assert texts[-1] == want[-1] and con.printed[-1][1] == {"highlight": False, "markup": False}


def test_the_console_without_resamples_errors_or_failures(bench, monkeypatch):
    """No resamples: the score table has no interval columns and says so in its title, a FAILED
    candidate's cell holds its score ignoring errors; exactly 20 errors print no "more" line; no
    FAILED candidate, no FAILED note; without `show_failures`, no [FAIL] line; a guard is yellow."""
    good, broken = good_and_broken(bench, errors=20)
    con = Recorder(monkeypatch)
    print_summary(summary_of(bench, [dataclasses.replace(good, ci=None), broken], samples=0), con)
    (t_score, h_score, r_score) = con.tables[0]
    assert t_score == "score: the mean of the per-JSONL pass rates; " + NO_INTERVAL
    assert h_score == ["candidate", "score", "tests"]
    assert r_score == [
        (["good", good.status, "29"], False),
        (["broken", f"[red]FAILED (errors)[/] [dim]{broken.score_ignoring_errors * 100:0.1f}% ignoring errors[/]", "26"], False),
    ]
    texts = con.texts()
    errors = texts.index("[red]broken: 20 error(s)[/]")
    one = Recorder(monkeypatch)  # one resample is an interval: its columns are back
    print_summary(summary_of(bench, [good], samples=1), one)
    assert one.tables[0][:2] == (
        "score: the mean of the per-JSONL pass rates",
        ["candidate", "score", "± (90% CI)", "90% interval", "tests"],
    )
    assert texts[errors + 1 :] == [f"  e{k}" for k in range(20)]
    assert not any("[FAIL]" in t for t in texts)

    con = Recorder(monkeypatch)
    print_summary(summary_of(load_bench(FIXTURES, guard="short-output"), [good]), con)
    scored = next(kw for text, kw in con.printed if text.startswith("scored with: "))
    assert scored["style"] == "yellow"
    assert not any(text.startswith("FAILED (errors)") for text in con.texts())
    assert not any("error(s)" in text for text in con.texts())


def test_the_console_with_comparisons_prints_the_verdicts_first(bench, monkeypatch):
    """With comparisons, each verdict right under the title, green when B is higher, red when lower,
    plain when the interval holds 0; no score lines; then the comparison tables after the others."""
    good, _ = good_and_broken(bench)
    worse = CandidateResult("worse", [dataclasses.replace(o, passes=0) for o in good.outcomes], [], [], (0.0, 0.1))
    twin = CandidateResult("twin", list(good.outcomes), [], [], good.ci)
    cmps = [compare(worse, good, samples=50), compare(good, worse, samples=50), compare(good, twin, samples=50)]
    con = Recorder(monkeypatch)
    print_summary(summary_of(bench, [good, worse, twin]), con, comparisons=cmps)
    assert con.printed[1:4] == [
        (verdict(cmps[0]), {"style": "bold green", "highlight": False}),
        (verdict(cmps[1]), {"style": "bold red", "highlight": False}),
        (verdict(cmps[2]), {"style": "bold", "highlight": False}),
    ]
    assert con.texts()[4].startswith("scored with: ")
    heads = [title.split(",")[0] for title, _, _ in con.tables[3:]]
    assert len(con.shown_on) == 9 and all(c is con for c in con.shown_on)  # the comparison tables too, on the caller's console
    assert heads == [
        "B − A with B = good",
        "by test type: A",
        "B − A with B = worse",
        "by test type: A",
        "B − A with B = twin",
        "by test type: A",
    ]


def test_one_error_past_twenty_and_a_failure_without_explanation(bench, monkeypatch):
    """21 errors: 20 lines, then "... and 1 more"; a failed test with no explanation recorded
    prints its [FAIL] line with nothing after "repeats passed. "."""
    good, broken = good_and_broken(bench, errors=21)
    mute = [dataclasses.replace(o, passes=0, explanations=[]) for o in good.outcomes[:1]]
    con = Recorder(monkeypatch)
    print_summary(summary_of(bench, [dataclasses.replace(good, outcomes=mute), broken]), con, show_failures=True)
    texts = con.texts()
    errors = texts.index("[red]broken: 21 error(s)[/]")
    assert texts[errors + 21] == "  ... and 1 more (see --json)"
    o = mute[0]
    assert f"  [FAIL] good: {o.id} ({o.pdf} page {o.page}) 0/{len(o.md_files)} repeats passed. " in texts
