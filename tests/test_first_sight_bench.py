"""Issue 49 ("True at first sight"), the scoring commands: what bench, check and validate print is
what they computed, said the same way everywhere. One comparison in the terminal, `--json` and
the report (B − A in the order -c gave); no made-up interval without resamples; a closed stdout
does not stop the report; validate opens the PDFs; check names the PDF it cannot find; the
reference runner's spellings work but are listed once."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from clirun import invoke

from olmocr_rl.bench import run_bench
from olmocr_rl.bench.compare import compare_summary, verdict

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "bench_fixtures"
NO_INTERVAL = "no interval (--bootstrap-samples 0)"


def bench_copy(dst: Path) -> Path:
    shutil.copytree(FIXTURES, dst, ignore=shutil.ignore_patterns("*.py", "*.yaml"))
    return dst


def report_data(path: Path) -> dict:
    """The report's data.js (what the page list and the flips read), as JSON."""
    text = (path.with_name(path.stem + "_files") / "data.js").read_text(encoding="utf-8")
    return json.loads(text[text.index("=") + 1 : text.rindex(";")])


def headlines(page: str) -> list[str]:
    section = page.split('<section id="verdicts">')[1].split("</section>")[0]
    return [html.unescape(p) for p in re.findall(r'<p class="answer[^"]*"[^>]*>(.*?)</p>', section)]


def test_one_comparison_everywhere(tmp_path):
    """-c other_model -c demo_model (not the names' order): the terminal's verdict, --json's
    comparison and the report's headline, pair, tables and data all state demo_model − other_model,
    with the same numbers; candidates are shown in the order -c gave, everywhere."""
    args = ["bench", FIXTURES, "-c", "other_model", "-c", "demo_model", "--compare"]
    report = tmp_path / "r.html"
    term = invoke([*args, "--report", report], env={"COLUMNS": "200"})
    assert term.exit_code == 0, term.output
    data = json.loads(invoke([*args, "--json"]).stdout)
    [want] = compare_summary(run_bench(FIXTURES, ["other_model", "demo_model"]), "other_model")
    assert (want.a, want.b) == ("other_model", "demo_model")
    line = verdict(want)
    assert line.startswith("demo_model − other_model = +17.8 points (95% interval ")

    # The terminal: the verdict first, the tables' columns and B = ..., A = ... in -c order.
    lines = term.stdout.splitlines()
    assert lines[1] == line
    assert "B − A with B = demo_model, A = other_model" in term.stdout
    header = next(x for x in lines if x.startswith("JSONL file") and "other_model" in x)
    assert header.index("other_model") < header.index("demo_model")
    # --json: the same pair and figures, candidates in -c order.
    [cmp] = data["comparisons"]
    assert (cmp["a"], cmp["b"], cmp["verdict"]) == ("other_model", "demo_model", line)
    assert [c["name"] for c in data["candidates"]] == ["other_model", "demo_model"]
    o = want.overall
    assert (cmp["overall"]["diff"], cmp["overall"]["ci"], cmp["overall"]["gained"], cmp["overall"]["lost"]) == (
        o.diff, list(o.ci), o.gained, o.lost)  # fmt: skip
    # The report: the headline, the pair's name, its table's A and B, the score row's figures, the
    # candidates' columns and the data the flips are drawn from.
    page = report.read_text(encoding="utf-8")
    assert headlines(page) == [line]
    assert [html.unescape(x) for x in re.findall(r'<select id="f-pair"><option value="0">(.*?)</option>', page)] == [
        "demo_model − other_model"
    ]
    assert "A: other_model</th>" in page and "B: demo_model</th>" in page
    score_row = re.search(r'data-kind="score" data-key="overall" data-diff="([^"]+)" data-ci="([^"]+)" data-gained="(\d+)" '
                          r'data-lost="(\d+)"', page)  # fmt: skip
    assert score_row is not None
    assert (float(score_row[1]), [float(x) for x in score_row[2].split(",")], int(score_row[3]), int(score_row[4])) == (
        o.diff, list(o.ci), o.gained, o.lost)  # fmt: skip
    by_jsonl = page.split('<table id="by-jsonl">')[1].split("</tr>")[0]
    assert by_jsonl.index("other_model") < by_jsonl.index("demo_model")
    d = report_data(report)
    names = [c["name"] for c in d["cands"]]
    assert names == ["other_model", "demo_model"]
    assert [(names[p["a"]], names[p["b"]]) for p in d["pairs"]] == [("other_model", "demo_model")]
    # The flips the page draws (bench.js renderFlips: B's passes that A fails, by the majority rule).
    [pair] = d["pairs"]
    ok = [[m.count("1") / len(m) > 0.5 if m else False for m in marks] for marks in d["verdicts"]]
    flips = {"gained": (pair["b"], pair["a"]), "lost": (pair["a"], pair["b"])}
    for key, (yes, no) in flips.items():
        assert {t[0] for k, t in enumerate(d["tests"]) if ok[yes][k] and not ok[no][k]} == set(cmp[key]), key
    assert len(cmp["gained"]) == 7 and cmp["lost"] == []
    # The scores: the same in the three.
    shown = {c["name"]: c["score"] for c in data["candidates"]}
    assert {m[0]: float(m[1]) for m in re.findall(r'<tr data-cand="([^"]+)" data-score="([^"]+)"', page)} == shown


def test_without_compare_the_report_pairs_follow_the_c_order(tmp_path):
    """Without --compare the report holds every pair, each B − A with B named after A by -c."""
    report = tmp_path / "r.html"
    res = invoke(["bench", FIXTURES, "-c", "other_model", "-c", "demo_model", "--report", report])
    assert res.exit_code == 0, res.output
    [pair] = compare_summary(run_bench(FIXTURES, ["other_model", "demo_model"]), all_pairs=True)
    assert headlines(report.read_text(encoding="utf-8")) == [verdict(pair)]
    assert verdict(pair).startswith("demo_model − other_model = ")
    # A name given twice is one candidate.
    data = json.loads(invoke(["bench", FIXTURES, "-c", "demo_model", "-c", "demo_model", "--json"]).stdout)
    assert [c["name"] for c in data["candidates"]] == ["demo_model"]


def test_no_resamples_no_interval(tmp_path):
    """--bootstrap-samples 0: no interval anywhere (no "0.0 – 0.0%"): the terminal says so, --json
    holds null, the report says so; with --compare too, and no verdict on the difference."""
    report = tmp_path / "r.html"
    one = invoke(["bench", FIXTURES, "-c", "demo_model", "--bootstrap-samples", "0", "--report", report], env={"COLUMNS": "200"})
    assert one.exit_code == 0, one.output
    assert one.stdout.splitlines()[1] == "demo_model: 91.9%, 29 tests; " + NO_INTERVAL
    printed = one.stdout.split("\nreport: ")[0]
    assert "0.0 – 0.0" not in printed and "interval" not in printed.replace(NO_INTERVAL, "")
    page = report.read_text(encoding="utf-8")
    assert headlines(page) == ["demo_model: 91.9%, 29 tests; " + NO_INTERVAL]
    assert "0.0% – 0.0%" not in page and "data-ci=" not in page and NO_INTERVAL in page

    args = ["bench", FIXTURES, "-c", "other_model", "-c", "demo_model", "--compare", "--bootstrap-samples", "0"]
    term = invoke([*args, "--report", report], env={"COLUMNS": "200"})
    data = json.loads(invoke([*args, "--json"]).stdout)
    line = "demo_model − other_model = +17.8 points, 7 tests gained, 0 lost: " + NO_INTERVAL + ", so no verdict on the difference"
    assert term.stdout.splitlines()[1] == line
    printed = term.stdout.split("\nreport: ")[0]
    assert "+0.0 … +0.0" not in printed and "interval" not in printed.replace(NO_INTERVAL, "")
    assert [(c["ci"], c["ci_half_width"]) for c in data["candidates"]] == [(None, None)] * 2
    [cmp] = data["comparisons"]
    assert cmp["verdict"] == line
    for row in [cmp["overall"], *cmp["by_jsonl"], *cmp["by_type"]]:
        assert (row["ci"], row["interval_excludes_zero"]) == (None, None), row
    page = report.read_text(encoding="utf-8")
    assert headlines(page) == [line]
    assert "data-ci=" not in page and "+0.0 … +0.0" not in page
    # With resamples, the interval is back (the rule is the resamples, not the data).
    assert json.loads(invoke(["bench", FIXTURES, "-c", "demo_model", "--bootstrap-samples", "1", "--json"]).stdout)["candidates"][0]["ci"]


def closed_stdout_run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """The command with a stdout whose reader is gone before it writes (as `| head -1` ends up)."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run([sys.executable, "-m", "olmocr_rl.cli", *map(str, args)], stdout=write, stderr=subprocess.PIPE,
                              text=True, cwd=cwd, timeout=120)  # fmt: skip
    finally:
        os.close(write)


def test_a_closed_stdout_still_writes_the_report(tmp_path):
    """`bench ... --report r.html | head -1`: the report and --output-failed are written, named on
    stderr, exit 0, no error; check's reader gone: it stops quietly (exit 1: typer's and rich's way)."""
    bench = bench_copy(tmp_path / "bench")
    res = closed_stdout_run(["bench", bench, "--compare", "--report", "r.html", "--output-failed", "failed.jsonl"], tmp_path)
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "r.html").is_file() and (tmp_path / "r_files" / "data.js").is_file()
    assert (tmp_path / "failed.jsonl").read_text().strip()
    assert res.stderr.splitlines() == ["report: r.html", f"{len((tmp_path / 'failed.jsonl').read_text().splitlines())} test(s) "
                                       "that no candidate passed: failed.jsonl"], res.stderr  # fmt: skip
    res = closed_stdout_run(["bench", bench, "--json", "--report", "j.html"], tmp_path)
    assert res.returncode == 0 and (tmp_path / "j.html").is_file() and res.stderr == "report: j.html\n", res.stderr
    res = closed_stdout_run(["check", bench, bench / "demo_model" / "letter_pg1_repeat1.md", "--pdf", "letter.pdf"], tmp_path)
    assert (res.returncode, res.stderr) == (1, "")


def test_check_names_the_pdf_no_test_names():
    page = FIXTURES / "demo_model" / "letter_pg1_repeat1.md"
    res = invoke(["check", FIXTURES, page, "--pdf", "nope.pdf"])
    assert (res.exit_code, res.stderr) == (1, f"error: no test in {FIXTURES} names the PDF 'nope.pdf'\n")
    res = invoke(["check", FIXTURES, page, "--pdf", "lettr.pdf"])
    assert res.stderr == f"error: no test in {FIXTURES} names the PDF 'lettr.pdf' (did you mean 'letter.pdf'?)\n"
    res = invoke(["check", FIXTURES, page, "--pdf", "pdfs/annual_report.pdf"])  # the folder left out: the file name
    assert res.stderr.endswith("(did you mean 'reports/annual_report.pdf'?)\n"), res.stderr
    res = invoke(["check", FIXTURES, page, "--test", "letter_present_salutaton"])
    assert res.stderr.startswith(
        f"error: no test with id 'letter_present_salutaton' in {FIXTURES} (did you mean 'letter_present_salutation'"
    )
    assert invoke(["check", FIXTURES, page]).stderr == "error: name tests with --test or --pdf\n"
    # A test named by --test and by --pdf runs and counts once.
    both = invoke(["check", FIXTURES, page, "--pdf", "letter.pdf", "--test", "letter_present_salutation"])
    alone = invoke(["check", FIXTURES, page, "--pdf", "letter.pdf"])
    assert both.exit_code == 0 and both.stdout == alone.stdout and alone.stdout.endswith("/7 passed\n"), both.stdout


def test_validate_opens_every_pdf_the_tests_name(tmp_path, monkeypatch):
    """A corrupt PDF, a missing one, one outside pdfs/ and a page past a PDF's end: each one line
    naming the file and the tests (file:line, id) that name it, those tests invalid, exit 1."""
    bench = bench_copy(tmp_path / "bench")
    good = invoke(["validate", bench])
    assert good.exit_code == 0 and good.stdout.endswith("; 0 invalid\n") and good.stderr == "", good.output
    data = (bench / "pdfs" / "letter.pdf").read_bytes()
    (bench / "pdfs" / "letter.pdf").write_bytes(data[: len(data) // 3])  # truncated: pypdf and the core cannot read it
    with (bench / "text_tests.jsonl").open("a") as f:
        f.write('{"pdf": "sample_paper.pdf", "page": 2, "id": "past", "type": "present", "text": "x"}\n')
        f.write('{"pdf": "gone.pdf", "page": 1, "id": "gone", "type": "present", "text": "x"}\n')
        f.write('{"pdf": "../elsewhere.pdf", "page": 1, "id": "out", "type": "present", "text": "x"}\n')
    shutil.copy(FIXTURES / "pdfs" / "sample_paper.pdf", tmp_path / "elsewhere.pdf")
    res = invoke(["validate", bench])
    assert res.exit_code == 1, res.output
    pdfs = bench / "pdfs"
    lines = res.stderr.splitlines()
    assert len(lines) == 4, lines
    assert lines[0].startswith(f"{pdfs / 'letter.pdf'}: cannot read the PDF (") and lines[0].endswith(
        "so bench stops on it; named by 7 test(s): letter_tests.jsonl:1 'letter_present_salutation', letter_tests.jsonl:2 "
        "'letter_absent_generic', letter_tests.jsonl:3 'letter_order_body_signoff' and 4 more"
    ), lines[0]
    assert lines[1:] == [
        f"{pdfs / 'sample_paper.pdf'}: a test's page is past the PDF's end (it has 1 page(s)); named by 1 test(s): text_tests.jsonl:10 'past'",
        f"{pdfs / 'gone.pdf'}: no such file in pdfs/; named by 1 test(s): text_tests.jsonl:11 'gone'",
        f"{pdfs / '../elsewhere.pdf'}: not a path inside pdfs/; named by 1 test(s): text_tests.jsonl:12 'out'",
    ]
    assert (
        res.stdout
        == "21 valid tests (absent 3, baseline 2, footnote 1, format 5, order 2, present 8); 10 invalid (10 on 4 PDF(s) that cannot be used)\n"
    )
    # bench agrees that the truncated PDF cannot be used.
    assert "letter.pdf: cannot read the PDF (" in invoke(["bench", bench]).stderr
    # A PDF pypdf reads and pdfium does not (pdfium refuses a password it is not given): prepare could not render it.
    (bench / "pdfs" / "letter.pdf").write_bytes(data)
    (bench / "text_tests.jsonl").write_text("".join((FIXTURES / "text_tests.jsonl").read_text().splitlines(keepends=True)))
    import olmocr_rl.pdfs as pdf_module

    real = pdf_module.open_document

    def refuse(path):
        if Path(path).name == "letter.pdf":
            raise pdf_module.PdfUnreadable("PdfiumError: Failed to load document (PDFium: Incorrect password error).")
        return real(path)

    monkeypatch.setattr(pdf_module, "open_document", refuse)
    res = invoke(["validate", bench])
    assert res.exit_code == 1 and res.stderr.startswith(
        f"{pdfs / 'letter.pdf'}: pdfium cannot open the PDF (PdfiumError: Failed to load document (PDFium: Incorrect password error).), "
        "so prepare cannot render its pages; named by 7 test(s)"
    ), res.output
    # A test file alone, without pdfs/ beside it: its records only.
    alone = tmp_path / "alone" / "t.jsonl"
    alone.parent.mkdir()
    shutil.copy(bench / "text_tests.jsonl", alone)
    assert invoke(["validate", alone]).exit_code == 0
    # No valid test: no empty "()" after the count.
    (alone.parent / "bad.jsonl").write_text('{"pdf": "x.pdf", "page": 0, "id": "t1", "type": "present", "text": "x"}\n')
    res = invoke(["validate", alone.parent / "bad.jsonl"])
    assert (res.exit_code, res.stdout) == (1, "0 valid tests; 1 invalid\n")


REFERENCE_SPELLINGS = ["--skip_baseline", "--bootstrap_samples", "--confidence_level", "--test_report", "--max_reports", "--output_failed"]


@pytest.mark.parametrize("columns", ["80", "200"])
def test_help_lists_each_option_once_and_the_reference_spellings_still_work(tmp_path, columns):
    res = invoke(["bench", "--help"], env={"COLUMNS": columns})
    assert res.exit_code == 0
    for name in [*REFERENCE_SPELLINGS, "--test-report"]:
        assert name not in res.stdout, name
    for name in ["--skip-baseline", "--bootstrap-samples", "--confidence-level", "--report", "--max-reports", "--output-failed", "-c",
                 "--candidate", "-h", "--help"]:  # fmt: skip
        assert re.search(rf"(^|[ ,]){re.escape(name)}[ ,\n]", res.stdout), name
    if columns == "200":
        return
    # Each spelling does what its first name does.
    report, failed = tmp_path / "r.html", tmp_path / "failed.jsonl"
    args = ["bench", FIXTURES, "--json", "--skip_baseline", "--bootstrap_samples", "0", "--confidence_level", "0.5",
            "--test_report", report, "--max_reports", "1", "--output_failed", failed]  # fmt: skip
    res = invoke(args)
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["ci"] == {"level": 0.5, "samples": 0, "seed": 0} and data["semantics"]["skip_baseline"] is True
    assert "baseline" not in data["tests_by_type"]
    assert report.is_file() and "--max-reports 1:" in report.read_text(encoding="utf-8") and failed.read_text().strip()


def test_probe_says_but_by_design_only_before_a_floor(tmp_path):
    """`no exploit: ..., but by design:` is followed by the expected floors it announces; with none,
    the line ends there. One page and one test are "1 page, 1 test"."""
    order = tmp_path / "order.jsonl"
    order.write_text('{"pdf": "x.pdf", "page": 1, "id": "t1", "type": "order", "before": "Alpha beta gamma", "after": "Delta epsilon"}\n')
    res = invoke(["probe", order], env={"COLUMNS": "300"})
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert lines[0] == f"probe: {order}: 1 page, 1 test (order 1)"
    at = next(i for i, line in enumerate(lines) if line.startswith("no exploit"))
    assert lines[at] == "no exploit: no degenerate candidate passes more than 50% of a test type's tests."
    absent = tmp_path / "absent.jsonl"
    absent.write_text('{"pdf": "x.pdf", "page": 1, "id": "t1", "type": "absent", "text": "Alpha beta gamma"}\n'
                      '{"pdf": "x.pdf", "page": 2, "id": "t2", "type": "order", "before": "Alpha beta", "after": "Delta epsilon"}\n')  # fmt: skip
    lines = invoke(["probe", absent], env={"COLUMNS": "300"}).stdout.splitlines()
    assert lines[0] == f"probe: {absent}: 2 pages, 2 tests (absent 1, order 1)"
    at = next(i for i, line in enumerate(lines) if line.startswith("no exploit"))
    assert lines[at] == "no exploit: no degenerate candidate passes more than 50% of a test type's tests, but by design:"
    assert lines[at + 1].startswith("expected floor, absent: empty, ")
