"""`olmocr-rl bench`: the summary equals the upstream runner's on our fixtures (golden data in
tests/golden/bench_summary.json, made by tests/golden/gen_bench_summary.py), and the file
discovery, repeats, majority rule, baseline tests, errors and outputs behave as upstream."""

from __future__ import annotations

import json
import math
import shutil
import sys
from pathlib import Path

import pytest
from clirun import invoke
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from olmocr_rl.bench import bootstrap_ci, load_bench, percentile, run_bench, summary_dict

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "bench_fixtures"
ERRORS = REPO / "tests" / "fixtures" / "bench_errors"
GOLDEN = json.loads((REPO / "tests" / "golden" / "bench_summary.json").read_text())

sys.path.insert(0, str(FIXTURES))
from make_pdfs import make_pdf

sys.path.pop(0)


def pct(x: float) -> str:
    return f"{x * 100:0.1f}"


def _kwargs(flags: list[str]) -> dict:
    kw: dict = {"skip_baseline": "--skip_baseline" in flags, "force": "--force" in flags}
    if "--candidate" in flags:
        kw["candidates"] = [flags[flags.index("--candidate") + 1]]
    return kw


@pytest.mark.parametrize("case", GOLDEN, ids=[c["case"] for c in GOLDEN])
def test_summary_matches_reference(case):
    assert case["exit_code"] == 0
    summary = run_bench(REPO / case["fixture"] / case["dir"], **_kwargs(case["flags"]))
    ours = {c.name: c for c in summary.candidates}
    assert sorted(ours) == sorted(case["candidates"])
    for name, ref in case["candidates"].items():
        c = ours[name]
        assert c.status == ref["status"], name
        if ref["by_type"]:  # empty when the reference stopped early (a PDF without page files)
            assert {k: (pct(s), n) for k, (s, n) in c.by_type.items()} == {k: (v["avg"], v["tests"]) for k, v in ref["by_type"].items()}, (
                name
            )
        jl = c.by_jsonl
        assert {k: t for k, (_, t) in jl.items()} == {k: v["total"] for k, v in ref["by_jsonl"].items()}, name
        if not c.failed:
            assert {k: (p, pct(p / t)) for k, (p, t) in jl.items()} == {k: (v["passed"], v["rate"]) for k, v in ref["by_jsonl"].items()}, (
                name
            )
            assert ref["average"]["tests"] == len(c.outcomes)
            # Every test below 100 % of its repeats, with its repeat counts and first explanation.
            below = {o.id: o for o in c.outcomes if o.avg < 1.0}
            assert sorted(below) == sorted(ref["failures"]), name
            for test_id, f in ref["failures"].items():
                o = below[test_id]
                assert (o.passes, o.repeats) == (f["passes"], f["repeats"]), test_id
                assert f["explanation"] in o.explanations, test_id
        else:
            assert ref["errors"]
            for err in ref["errors"]:
                if err.startswith("Error reading "):
                    path = err[len("Error reading ") :].split(": ")[0]
                    assert any(path in e for e in c.errors), err
                elif " page " in err:  # "... is missing MD repeats for b.pdf page 2 (expected ..."
                    pdf_page = err.split("missing MD repeats for ")[1].split(" (expected")[0]
                    pdf = pdf_page.rsplit(" page ", 1)[0]  # we name a PDF without any page file once
                    assert any(m.startswith((pdf_page + ":", pdf + ":")) for m in c.missing), err
                else:  # "... is missing MD repeats for b.pdf (expected ..."
                    pdf = err.split("missing MD repeats for ")[1].split(" (expected")[0]
                    assert any(m.startswith(pdf + ":") for m in c.missing), err


def test_auto_baseline_tests():
    bench = load_bench(FIXTURES)
    auto = [t for t in bench.tests if bench.group[t.id] == "baseline"]
    # sample_paper.pdf and reports/annual_report.pdf (page 2) have explicit baseline tests.
    assert [(t.id, t.pdf, t.page, t.type) for t in auto] == [("letter.pdf_baseline", "letter.pdf", 1, "baseline")]
    assert bench.group["report_p2_baseline"] == "report_tests.jsonl"
    assert bench.page_counts == {"letter.pdf": 1, "reports/annual_report.pdf": 2, "sample_paper.pdf": 1}
    # One .jsonl as the folder: only its PDFs, and their baseline tests come from elsewhere.
    single = load_bench(FIXTURES / "letter_tests.jsonl")
    assert single.pdf_keys == ["letter.pdf", "sample_paper.pdf"]
    assert sorted(t.id for t in single.tests if single.group[t.id] == "baseline") == [
        "letter.pdf_baseline",
        "sample_paper.pdf_baseline",
    ]
    skipped = load_bench(FIXTURES, skip_baseline=True)
    assert not [t for t in skipped.tests if t.type == "baseline"]


def test_candidate_file_discovery():
    summary = run_bench(FIXTURES, ["demo_model"])
    outcomes = {o.id: o for o in summary.candidates[0].outcomes}
    # notes.md does not match the naming scheme; page files in sub-folders mirror pdfs/.
    assert outcomes["report_p1_present_title"].md_files == ["reports/annual_report_pg1_repeat1.md"]
    assert outcomes["report_p2_baseline"].md_files == ["reports/annual_report_pg2_repeat1.md"]
    other = run_bench(FIXTURES, ["other_model"]).candidates[0]
    o = {o.id: o for o in other.outcomes}
    # other_model/annual_report_pg1_repeat1.md is at the wrong level and is ignored.
    assert o["report_p1_present_title"].md_files == [
        "reports/annual_report_pg1_repeat1.md",
        "reports/annual_report_pg1_repeat2.md",
    ]
    assert o["sample_paper_baseline"].repeats == 3


# ----------------------------------------------------------------------------------------------
# Small synthetic bench folders


def baseline(i: str, pdf: str = "a.pdf", page=1, **kw) -> str:
    return json.dumps({"pdf": pdf, "page": page, "id": i, "type": "baseline", **kw})


def make_bench(root: Path, tests: list[str], pages: dict[str, int] | None = None, files: dict[str, bytes | str] | None = None) -> Path:
    (root / "pdfs").mkdir(parents=True)
    for key, n in (pages or {"a.pdf": 1}).items():
        (root / "pdfs" / key).parent.mkdir(parents=True, exist_ok=True)
        (root / "pdfs" / key).write_bytes(make_pdf([[f"page {i + 1}"] for i in range(n)]))
    (root / "tests.jsonl").write_text("\n".join(tests) + "\n")
    for rel, data in (files or {}).items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data if isinstance(data, bytes) else data.encode())
    return root


SHORT, LONG = "abc", "abcdefghij"  # pass / fail a baseline test with max_length 5


def test_majority_rule_two_and_three_repeats(tmp_path):
    tests = [baseline("two", max_length=5), baseline("three", pdf="b.pdf", max_length=5)]
    files = {
        "m/a_pg1_repeat1.md": SHORT,
        "m/a_pg1_repeat2.md": LONG,  # 1 of 2: not a majority
        "m/b_pg1_repeat1.md": SHORT,
        "m/b_pg1_repeat2.md": LONG,
        "m/b_pg1_repeat3.md": SHORT,  # 2 of 3: passes
    }
    root = make_bench(tmp_path / "bench", tests, {"a.pdf": 1, "b.pdf": 1}, files)
    c = run_bench(root).candidates[0]
    o = {o.id: o for o in c.outcomes}
    assert (o["two"].passes, o["two"].repeats, o["two"].passed) == (1, 2, False)
    assert (o["three"].passes, o["three"].repeats, o["three"].passed) == (2, 3, True)
    assert c.by_type == {"baseline": ((0.5 + 2 / 3) / 2, 2)}  # per type: mean of repeat averages
    assert c.by_jsonl == {"tests.jsonl": (1, 2)}
    assert c.score == 0.5 and c.status == "50.0%"


def test_universal_newlines_and_bom(tmp_path):
    from olmocr_rl.bench.folder import _read_page

    p = tmp_path / "x.md"
    p.write_bytes(b"\xef\xbb\xbfa\rb\r\nc\n")
    assert _read_page(p) == "\ufeffa\nb\nc\n"  # the BOM stays, as in the reference


def test_universal_newlines_reach_the_checks(tmp_path):
    tests = [json.dumps({"pdf": "a.pdf", "page": 1, "id": "h", "type": "format", "text": "Dear Committee Members", "format": "heading"})]
    root = make_bench(tmp_path / "bench", tests, files={"m/a_pg1_repeat1.md": b"# Dear Committee Members\r\rThank you for the letter.\r"})
    o = run_bench(root, skip_baseline=True).candidates[0].outcomes[0]
    assert (o.passes, o.repeats) == (1, 1)


def test_details_file_and_json_output(tmp_path):
    details = tmp_path / "details.jsonl"
    out = invoke(["bench", str(FIXTURES), "--details", str(details), "--json"])
    assert out.exit_code == 0, out.output
    summary = json.loads(out.stdout)
    ref = next(c for c in GOLDEN if c["case"] == "fixtures")["candidates"]
    cands = {c["name"]: c for c in summary["candidates"]}
    assert {n: c["reference_status"] for n, c in cands.items()} == {n: r["status"] for n, r in ref.items()}
    assert cands["demo_model"]["status"] == "ok" and cands["demo_model"]["errors"] == []
    assert cands["other_model"]["by_jsonl"]["report_tests.jsonl"] == {"passed": 3, "total": 10, "rate": 0.3}
    assert summary["ci"] == {"level": 0.95, "samples": 1000, "seed": 0}
    assert summary["tests"] == 29
    lo, hi = cands["demo_model"]["ci"]
    assert lo <= cands["demo_model"]["score"] <= hi

    rows = [json.loads(line) for line in details.read_text().splitlines()]
    assert all(set(r) >= {"candidate", "id", "type", "jsonl", "md", "passed", "explanation"} for r in rows)
    # One row per (test, md file): demo_model has 1 repeat per page; other_model 3, 2, 2 and 3.
    per_page_other = {"sample_paper.pdf": 3, "letter.pdf": 3, "reports/annual_report.pdf": 2}
    bench = load_bench(FIXTURES)
    expected_other = sum(per_page_other[t.pdf] for t in bench.tests)
    assert sum(r["candidate"] == "demo_model" for r in rows) == len(bench.tests)
    assert sum(r["candidate"] == "other_model" for r in rows) == expected_other
    row = next(r for r in rows if r["candidate"] == "other_model" and r["id"] == "report_p1_present_revenue" and not r["passed"])
    assert row["md"] == "reports/annual_report_pg1_repeat1.md" and row["jsonl"] == "report_tests.jsonl"
    assert row["type"] == "present" and row["explanation"].startswith("Expected 'Revenue grew")
    auto = [r for r in rows if r["id"] == "letter.pdf_baseline"]
    assert [r["jsonl"] for r in auto] == ["baseline"] * 4


def test_terminal_report_and_progress_free_output():
    out = invoke(["bench", str(FIXTURES), "--candidate", "demo_model", "--workers", "2", "--show-failures"])
    assert out.exit_code == 0, out.output
    assert "demo_model" in out.output and "91.9%" in out.output
    assert "letter_tests.jsonl" in out.output and "[FAIL]" in out.output
    assert "FAILED (errors)" not in out.output  # the legend only explains a status that occurs
    failed = invoke(["bench", str(ERRORS)])
    assert failed.exit_code == 0 and "FAILED (errors): the candidate has errors" in " ".join(failed.output.split())


def test_error_candidates(tmp_path):
    details = tmp_path / "d.jsonl"
    summary = run_bench(ERRORS, details=details)
    c = {c.name: c for c in summary.candidates}
    bad = c["cand_bad_files"]
    assert bad.failed and bad.status == "FAILED (errors)" and bad.score == 0.0
    assert any("a_pg1_repeat1.md" in e and "utf-8" in e for e in bad.errors)
    assert bad.missing == ["b.pdf page 2: no page files (expected b_pg2_repeat<M>.md)"]
    # The score computed anyway counts the unreadable repeat and the missing page as failures.
    o = {o.id: o for o in bad.outcomes}
    assert (o["a_present"].passes, o["a_present"].repeats) == (2, 3)
    assert (o["b2_present"].passes, o["b2_present"].repeats, o["b2_present"].explanations) == (0, 0, ["Missing MD files"])
    assert bad.score_ignoring_errors == (2 / 4 + 2 / 2) / 2
    assert c["cand_no_b"].missing == ["b.pdf: no page files (expected b_pg<N>_repeat<M>.md)"]
    assert not c["cand_ok"].failed and c["cand_ok"].score == 1.0
    rows = [json.loads(line) for line in details.read_text().splitlines()]
    unreadable = [r for r in rows if r["md"] == "a_pg1_repeat1.md" and r["candidate"] == "cand_bad_files"]
    assert unreadable and all(r["error"] and not r["passed"] and "utf-8" in r["explanation"] for r in unreadable)
    missing = [r for r in rows if r["id"] == "b2_present" and r["candidate"] == "cand_bad_files"]
    assert missing == [
        {
            "candidate": "cand_bad_files",
            "id": "b2_present",
            "type": "present",
            "jsonl": "tests.jsonl",
            "md": None,
            "passed": False,
            "explanation": "Missing MD files",
            "semantics": {"guard": "none", "sample": None, "skip_baseline": False, "pass_rule": "majority"},
        }
    ]
    js = summary_dict(summary)["candidates"][0]
    assert js["status"] == "failed" and js["score"] == 0.0 and js["score_ignoring_errors"] > 0


def _cli_error(args: list[str]) -> str:
    out = invoke(["bench", *map(str, args)])
    assert out.exit_code == 1, out.output
    assert "Traceback" not in out.output
    return out.output


def test_user_errors_are_one_clear_message(tmp_path):
    root = tmp_path / "bench"
    shutil.copytree(ERRORS, root)
    assert "no candidate folder 'nope'" in _cli_error([root, "--candidate", "nope"])
    assert "no such file or directory" in _cli_error([tmp_path / "missing"])
    # A corrupt PDF is named; with --force it is only a warning.
    (root / "pdfs" / "c.pdf").write_bytes(b"%PDF-1.4\nthis is not a pdf")
    msg = _cli_error([root])
    assert "c.pdf: cannot read the PDF" in msg
    out = invoke(["bench", str(root), "--force", "--json"])
    assert out.exit_code == 0, out.output
    assert any("c.pdf: cannot read the PDF" in w for w in json.loads(out.stdout)["warnings"])
    (root / "pdfs" / "c.pdf").unlink()
    # A page without tests stops the run unless --force.
    (root / "pdfs" / "a.pdf").write_bytes(make_pdf([["alpha beta"], ["second page"]]))
    assert "no test for a.pdf page 2 (use --force" in _cli_error([root])
    assert invoke(["bench", str(root), "--force", "--json"]).exit_code == 0
    # A malformed test line names file:line (every bad line, not only the first).
    with open(root / "tests.jsonl", "a") as f:
        f.write('{"pdf": "a.pdf", "page": 1, "id": "bad", "type": "present"}\n{not json\n')
    msg = _cli_error([root, "--force"])
    assert "tests.jsonl:5: test 'bad'" in msg and "tests.jsonl:6:" in msg
    shutil.rmtree(root / "pdfs")
    assert "no pdfs/ folder" in _cli_error([root])


def test_workers_option_sets_the_pool_size_without_touching_the_environment(tmp_path, monkeypatch):
    import os

    import olmocr_rl.bench.checking as bench_module

    monkeypatch.delenv("OLMOCR_RL_THREADS", raising=False)
    seen = []
    original = bench_module._check_files

    def spy(*args, **kwargs):
        seen.append(args[5] if len(args) > 5 else kwargs.get("threads"))
        return original(*args, **kwargs)

    monkeypatch.setattr(bench_module, "_check_files", spy)
    root = make_bench(tmp_path / "bench", [baseline("b")], files={"m/a_pg1_repeat1.md": SHORT})
    run_bench(root, threads=3)
    assert seen == [3] and "OLMOCR_RL_THREADS" not in os.environ
    with pytest.raises(ValueError, match="threads must be a positive integer"):
        run_bench(root, threads=0)


# ----------------------------------------------------------------------------------------------
# Confidence interval


def test_percentile_is_numpy_linear():
    xs = [0.1, 0.4, 0.2, 0.9, 0.5]
    # numpy.percentile(xs, q) for these q, computed once with numpy 2.x
    assert percentile(xs, 2.5) == pytest.approx(0.11)
    assert percentile(xs, 97.5) == pytest.approx(0.86)
    assert percentile(xs, 50) == 0.4
    assert percentile([3.0], 97.5) == 3.0


def test_bootstrap_is_seeded_and_sensible():
    groups = [[1.0] * 30 + [0.0] * 10, [1.0] * 5 + [0.0] * 5, [1.0] * 8]
    a = bootstrap_ci(groups, seed=0)
    assert a == bootstrap_ci(groups, seed=0)
    big = [[1.0] * 700 + [0.0] * 300, [1.0] * 450 + [0.0] * 550]
    assert bootstrap_ci(big, seed=0) != bootstrap_ci(big, seed=1)
    mean = (0.75 + 0.5 + 1.0) / 3
    lo, hi = a
    assert lo < mean < hi
    # Normal approximation of the sd of the mean of group means.
    sd = math.sqrt(0.75 * 0.25 / 40 + 0.25 / 10) / 3
    assert hi - lo == pytest.approx(2 * 1.96 * sd, rel=0.15)
    assert bootstrap_ci([[1.0, 1.0], [0.0]]) == (0.5, 0.5)
    assert bootstrap_ci([]) == (0.0, 0.0)
    assert bootstrap_ci([[1.0, 0.0]], samples=0) is None  # no resamples: no interval, not (0, 0)


_BYTES = st.lists(
    st.sampled_from(
        [b"\r", b"\n", b"\r\n", b"a", b" ", b"# ", b"Total", b"\xc3\xa9", b"\xef\xbb\xbf", b"\xff", b"\xed\xa0\x80", b"\xe2\x82"]
    ),
    max_size=12,
).map(b"".join)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(contents=st.lists(_BYTES, min_size=1, max_size=4))
@example(contents=[b"x\r# Total", b"x\r\n# Total\r", b"\xef\xbb\xbf# Total"])
def test_files_read_in_rust_equal_python_reads(tmp_path, contents):
    """`check_files` reads page files as Python's text mode does (strict UTF-8, universal
    newlines, BOM kept): its verdicts equal checking Python's read; undecodable files are None."""
    from olmocr_rl import BenchSuite
    from olmocr_rl.bench.folder import _read_page

    suite = BenchSuite.from_jsonl(
        "\n".join(
            json.dumps(r)
            for r in [
                {"pdf": "a.pdf", "page": 1, "id": "p", "type": "present", "text": "a\nTotal"},
                {"pdf": "a.pdf", "page": 1, "id": "h", "type": "format", "text": "Total", "format": "heading"},
                {"pdf": "a.pdf", "page": 1, "id": "b", "type": "baseline"},
            ]
        )
    )
    items = []
    for i, data in enumerate(contents):
        path = tmp_path / f"f{i}.md"
        path.write_bytes(data)
        items.append((str(path), ["p", "h", "b"]))
    got = suite.check_files(items, threads=2)
    for (path, ids), rows in zip(items, got):
        try:
            text = _read_page(Path(path))
        except UnicodeDecodeError:
            assert rows is None
            continue
        assert rows == suite.check_batch([(text, ids)])[0], path


def test_progress_reports_checked_pairs(monkeypatch):
    import olmocr_rl.bench.checking as bench_mod

    monkeypatch.setattr(bench_mod, "_PROGRESS_CHUNK", 5)  # several chunks on the small fixture
    calls = []
    run_bench(FIXTURES, ["other_model"], progress=lambda msg, done=None, total=None: calls.append((msg, done, total)))
    counted = [(d, t) for _, d, t in calls if t is not None]
    assert len(counted) > 3 and counted[-1][0] == counted[-1][1] > 0
    assert all(a[0] <= b[0] for a, b in zip(counted, counted[1:]))
    assert all(msg.startswith("other_model: check") for msg, _, t in calls if t is not None)


def test_page_counts_are_pypdfs(tmp_path):
    """The reference counts pages with pypdf (the page tree's leaves): so does bench, through the
    core's reader or, where it declines, pypdf itself; a wrong /Count changes nothing."""
    from pypdf import PdfReader

    from olmocr_rl import pdfs

    three = make_pdf([["a"], ["b"], ["c"]])
    cases = {
        "one": make_pdf([["a"]]),
        "three": three,
        "says_five": three.replace(b"/Count 3", b"/Count 5"),
        "says_one": three.replace(b"/Count 3", b"/Count 1"),
        "no_xref": three[: three.index(b"xref")] + b"trailer << /Root 1 0 R >>\n%%EOF",  # pypdf raises
    }
    for name, data in cases.items():
        (tmp_path / f"{name}.pdf").write_bytes(data)
    paths = [*sorted(tmp_path.glob("*.pdf")), *sorted((FIXTURES / "pdfs").rglob("*.pdf"))]
    for p, got in zip(paths, pdfs.page_counts(paths)):
        try:
            want: object = len(PdfReader(p).pages)
        except Exception as e:
            want = f"{type(e).__name__}: {e}"
        assert (str(got) if isinstance(got, pdfs.PdfUnreadable) else got) == want, p.name


def test_line_separators_inside_json_strings_round_trip(tmp_path):
    """Issue 33, defect 1: JSON allows U+2028, U+2029 and U+0085 raw inside strings, and
    `str.splitlines()` splits on them. Tests holding them (t1, t2, t3, all failing) come back
    whole from --output-failed (their lines as the file holds them), --details (one line per row
    for any reader: written escaped) and the report's test definitions. The ids hold them too
    (texts are normalized before an explanation quotes them; ids are not)."""
    texts = {"t1\u2028": "alpha\u2028beta", "t2\u2029": "gamma\u2029delta", "t3\x85": "eps\x85ilon"}
    lines = [json.dumps({"pdf": "a.pdf", "page": 1, "id": i, "type": "present", "text": t}, ensure_ascii=False) for i, t in texts.items()]
    root = make_bench(tmp_path / "bench", lines, files={"m/a_pg1_repeat1.md": "nothing of the kind"})
    failed, details, html = tmp_path / "failed.jsonl", tmp_path / "details.jsonl", tmp_path / "r.html"
    res = invoke(["bench", root, "--output-failed", failed, "--details", details, "--report", html, "--json"])
    assert res.exit_code == 0, res.output
    assert "3 test(s) that no candidate passed" in res.stderr

    from olmocr_rl.jsonl import read_jsonl

    assert [line for line in read_jsonl(failed).lines if line] == lines  # byte for byte, nothing cut or lost
    assert [json.loads(line)["text"] for line in read_jsonl(failed).lines if line] == list(texts.values())

    rows = [json.loads(line) for line in details.read_text(encoding="utf-8").splitlines()]  # a naive reader
    assert [r["id"] for r in rows] == [*texts, "a.pdf_baseline"]
    assert [r["explanation"].split("...")[0] for r in rows[:3]] == ["Expected 'alpha beta", "Expected 'gamma delta", "Expected 'eps ilon"]
    assert "\u2028" not in details.read_text(encoding="utf-8")  # written as \\u2028

    data = (tmp_path / "r_files" / "data.js").read_text(encoding="utf-8")
    report = json.loads(data.removeprefix("window.REPORT_DATA=").removesuffix(";\n"))
    shown = {t[0]: dict((field, value) for field, value, _ in t[4]) for t in report["tests"]}
    assert {i: shown[i]["text"] for i in texts} == texts


def test_suggested_bench_command_works_as_printed(prepared, tmp_path):
    """Issue 37, row 6: after training on a curated split that kept page 2 of the fixtures'
    two-page PDF (whose page-2 baseline test means no baseline is added for page 1), the command
    `train` prints scores the outputs as printed: with --force, whose warning no longer says to
    use it. A folder whose pages all have tests gets no --force; a path with a space is quoted."""
    import shlex

    from olmocr_rl.bench.plan import command_line
    from olmocr_rl.train.data import read_split
    from olmocr_rl.train.outputs import CANDIDATE, make_bench_folder

    out = tmp_path / "run dir"
    rows = [
        r for r in read_split(prepared, "train") + read_split(prepared, "eval") if (r["pdf"], r["page"]) == ("reports/annual_report.pdf", 2)
    ]
    assert len(rows) == 1
    (out / CANDIDATE / "reports").mkdir(parents=True)
    (out / CANDIDATE / "reports" / "annual_report_pg2_repeat1.md").write_text("Demand held up.", encoding="utf-8")
    printed = make_bench_folder(prepared, out, rows)["bench_command"]
    assert printed == f"olmocr-rl bench '{out}' --candidate outputs --force"
    words = shlex.split(printed)
    res = invoke(words[1:])
    assert res.exit_code == 0, res.output
    assert "no test for reports/annual_report.pdf page 1 (scored anyway: --force)" in " ".join(res.stdout.split())
    assert "use --force" not in res.output
    assert invoke([w for w in words[1:] if w != "--force"]).exit_code == 1  # without it, as bench says

    covered = make_bench(tmp_path / "covered", [baseline("b")], files={"m/a_pg1_repeat1.md": SHORT})
    assert command_line(covered, "m") == f"olmocr-rl bench {covered} --candidate m"
