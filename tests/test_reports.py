"""The HTML reports, opened in a real headless browser (Debian's chromium, over the DevTools
protocol), view by view: `bench --report` (summary = `bench --json`, comparison rows = the paired
statistics of `bench --compare --json`, every test's definition and per-repeat verdicts = the
details file, images decoded, filters, texts, no sideways scroll, hostile strings shown as text)
and `report RUN_DIR` (curves = metrics.jsonl, one entry per page and step with the best and worst
completion, step numbers the curves'). Every page is checked for console errors and for requests
outside the report's own files. Also `bench --sample` and `--output-failed`."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest
from browser import Page, chromium
from clirun import invoke
from conftest import need

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench_fixtures"))
from make_pdfs import make_pdf

if chromium() is None:
    if os.environ.get("CI"):
        raise RuntimeError("chromium is missing: `make test` installs it (apt-get install chromium)")
    pytest.skip("no chromium here (make test installs it)", allow_module_level=True)
need("websocket")


def bench_copy(dst: Path) -> Path:
    shutil.copytree(ROOT / "bench_fixtures", dst, ignore=shutil.ignore_patterns("*.py", "*.yaml"))
    return dst


# One test of every type, on three pages; candidate "alpha" with one repeat, "beta" with three.
ALL_TYPES = {
    "doc_a.pdf": [
        {"id": "a_present", "type": "present", "text": "Quarterly revenue grew", "max_diffs": 1},
        {"id": "a_absent", "type": "absent", "text": "Confidential draft", "case_sensitive": False},
        {"id": "a_order", "type": "order", "before": "Quarterly revenue grew", "after": "Costs fell"},
        {"id": "a_format_" + "x" * 150, "type": "format", "text": "Results", "format": "heading"},  # a long id must wrap
        {"id": "a_footnote", "type": "footnote", "marker": "1", "appears_before_marker": "Costs fell"},
    ],
    "doc_b.pdf": [
        {"id": "b_table", "type": "table", "cell": "12", "up": "Q1", "left": "Revenue", "top_heading": "Q1"},
        {"id": "b_baseline", "type": "baseline", "max_repeats": 10},
    ],
    "sub/doc_c.pdf": [{"id": "c_math", "type": "math", "math": "a^{2} + b^{2} = c^{2}"}],
}
TEXTS = {
    "alpha": {
        "doc_a": ["# Results\n\nQuarterly revenue grew by a third. Costs fell.[^1]\n\n[^1]: see notes"],
        "doc_b": ["| | Q1 | Q2 |\n|---|---|---|\n| Revenue | 12 | 14 |"],
        "sub/doc_c": ["The identity $$a^{2} + b^{2} = c^{2}$$ holds."],
    },
    "beta": {
        "doc_a": ["Results\n\nQuarterly revenue grew. CONFIDENTIAL DRAFT. Costs fell.", "# Results\n\nQuarterly revenue grew.",
                  "# Results\n\nQuarterly revenue grew. Costs fell.[^1]\n\n[^1]: n"],
        "doc_b": ["| | Q1 |\n|---|---|\n| Revenue | 13 |", "| | Q1 |\n|---|---|\n| Revenue | 12 |", ""],
        "sub/doc_c": ["$$a^2+b^2=c^3$$", "$$a^{2} + b^{2} = c^{2}$$", "no math"],
    },
}  # fmt: skip


def all_types_bench(root: Path, texts: dict = TEXTS, tests: dict = ALL_TYPES) -> Path:
    for pdf, records in tests.items():
        (root / "pdfs" / pdf).parent.mkdir(parents=True, exist_ok=True)
        (root / "pdfs" / pdf).write_bytes(make_pdf([[r["id"] for r in records] + ["Quarterly revenue grew. Costs fell."]]))
    lines = [json.dumps({"pdf": pdf, "page": 1, **r}) for pdf, records in tests.items() for r in records]
    (root / "tests.jsonl").write_text("\n".join(lines) + "\n")
    for cand, pages in texts.items():
        for base, reps in pages.items():
            for r, text in enumerate(reps):
                f = root / cand / f"{base}_pg1_repeat{r + 1}.md"
                f.parent.mkdir(parents=True, exist_ok=True)
                f.write_text(text)
    return root


def open_report(html: Path, shot: Path, *, width: int = 1200) -> Page:
    """The report in chromium, ready, with its screenshot; only the report's own files requested
    (its page images are loaded as the pages are shown)."""
    page = Page(html.resolve().as_uri(), width=width)
    page.wait_for("document.body.dataset.ready === '1'")
    page.screenshot(shot)
    assert shot.stat().st_size > 10_000  # a rendered page, not a blank one
    return page


def assert_local_only(page: Page, html: Path) -> None:
    """No request but the report's own files, no console error, and a policy that forbids the
    network (so a string that escaped escaping still could not load anything)."""
    csp = page.evaluate("document.querySelector('meta[http-equiv=Content-Security-Policy]').content")
    sources = {d.split()[0]: d.split()[1:] for d in csp.split(";") if d.strip()}
    assert sources["default-src"] == ["'none'"]
    assert all(
        s in ("data:", "'self'", "file:", "'unsafe-inline'") or s.startswith("'sha256-")
        for v in sources.values()
        for s in v
        if s != "'none'"
    )
    allowed = (html.resolve().as_uri(), html.resolve().with_name(html.stem + "_files").as_uri() + "/")
    outside = [u for u in page.requests() if not u.startswith("data:") and u != allowed[0] and not u.startswith(allowed[1])]
    assert outside == []
    assert page.console_errors() == []


def visible_count(page: Page) -> int:
    return page.evaluate("document.querySelectorAll('#toc li[data-i]').length")


def run_cli(*args: str) -> dict:
    res = invoke([*map(str, args)])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout) if "--json" in args else {}


def test_bench_report_views(tmp_path):
    bench = all_types_bench(tmp_path / "bench")
    html, details = tmp_path / "out" / "report.html", tmp_path / "details.jsonl"
    data = run_cli("bench", bench, "--report", html, "--details", details, "--json", "--compare")
    rows = [json.loads(line) for line in details.read_text().splitlines()]
    records = {json.loads(line)["id"]: json.loads(line) for line in (bench / "tests.jsonl").read_text().splitlines()}
    for pdf, tests in ALL_TYPES.items():  # the baseline tests the runner adds
        if not any(t["type"] == "baseline" for t in tests):
            records[f"{pdf}_baseline"] = {"id": f"{pdf}_baseline", "pdf": pdf, "page": 1, "type": "baseline"}
    [cmp] = data["comparisons"]
    with open_report(html, tmp_path / "bench.png") as page:
        # Summary = bench --json, to the last digit (data attributes) and as shown.
        for c in data["candidates"]:
            row = f"document.querySelector('#scores tr[data-cand=\"{c['name']}\"]')"
            assert float(page.evaluate(f"{row}.dataset.score")) == c["score"]
            assert [float(x) for x in page.evaluate(f"{row}.dataset.ci").split(",")] == c["ci"]
            assert f"{c['score'] * 100:0.1f}%" in page.evaluate(f"{row}.textContent")
        for table, key, field in (("by-jsonl", "by_jsonl", "rate"), ("by-type", "by_type", "score")):
            shown = page.evaluate(f"[...document.querySelectorAll('#{table} tr[data-key]')].map(r => [r.dataset.key, "
                                  "[...r.querySelectorAll('td[data-value]')].map(td => +td.dataset.value)])")  # fmt: skip
            assert {k: v for k, v in shown} == {k: [c[key][k][field] for c in data["candidates"]] for k in data["candidates"][0][key]}
        assert "olmocr-rl" in page.evaluate("document.getElementById('run').textContent")

        # Comparison rows = bench --compare --json (the same pair: beta − alpha).
        got = page.evaluate("[...document.querySelectorAll('.pair.cur tr[data-kind]')].map(r => [r.dataset.kind, r.dataset.key, "
                            "+r.dataset.diff, r.dataset.ci.split(',').map(Number), +r.dataset.gained, +r.dataset.lost])")  # fmt: skip
        want = [["JSONL file", d["name"], d["diff"], d["ci"], d["gained"], d["lost"]] for d in cmp["by_jsonl"]]
        want += [["type", d["name"], d["diff"], d["ci"], d["gained"], d["lost"]] for d in cmp["by_type"]]
        o = cmp["overall"]
        want.append(["score", "overall", o["diff"], o["ci"], o["gained"], o["lost"]])
        assert got == want
        flips = page.evaluate("document.getElementById('flips').textContent")
        assert f"{o['gained']} pass only in beta, {o['lost']} only in alpha" in flips
        assert o["gained"] + o["lost"] > 0

        # Every page: its image decodes, every test shows its definition and, per candidate, one
        # mark per repeat as --details has it, with every failing repeat's explanation.
        page.evaluate("document.getElementById('f-show').value='all'; document.getElementById('f-show').dispatchEvent(new Event('change'))")
        assert visible_count(page) == 3
        seen_types = set()
        for i in range(3):
            page.evaluate(f"document.querySelectorAll('#toc li[data-i]')[{i}].click()")
            page.wait_for("document.getElementById('pageimg') && document.getElementById('pageimg').complete && "
                          "document.getElementById('pageimg').naturalWidth > 0")  # fmt: skip
            page.wait_for("document.querySelector('#texts pre') !== null")
            cards = page.evaluate("[...document.querySelectorAll('#detail .test')].map(t => ({id: t.dataset.id, "
                                  "def: [...t.querySelectorAll('dl.def dt')].map(d => [d.textContent, d.nextElementSibling.textContent]), "
                                  "marks: [...t.querySelectorAll('.v')].map(v => [...v.querySelectorAll('.rep')].map(m => m.classList.contains('p') ? '1' : '0').join('')), "
                                  "why: [...t.querySelectorAll('.v')].map(v => v.querySelector('ul.why') ? v.querySelector('ul.why').textContent : '')}))")  # fmt: skip
            for card in cards:
                record = records[card["id"]]
                seen_types.add(record["type"])
                shown = dict(card["def"])
                for k, v in record.items():
                    if k not in ("id", "pdf", "page", "type"):
                        assert shown[k].startswith(v if isinstance(v, str) else json.dumps(v)), (card["id"], k)
                for k, (name, marks, why) in enumerate(zip(["alpha", "beta"], card["marks"], card["why"])):
                    mine = [r for r in rows if r["candidate"] == name and r["id"] == card["id"]]
                    assert marks == "".join("1" if r["passed"] else "0" for r in mine), (card["id"], name)
                    for r in mine:
                        if not r["passed"]:
                            assert r["explanation"] in why
            # The texts, side by side: each candidate's first repeat as written.
            pdf = page.evaluate(f"document.querySelectorAll('#toc li[data-i]')[{i}].textContent").split(" p.1")[0]
            firsts = page.evaluate("[...document.querySelectorAll('#texts pre')].map(p => p.textContent)")
            base = pdf[: -len(".pdf")]
            assert firsts == [TEXTS[c][base][0] or "(empty)" for c in ("alpha", "beta")]
        assert seen_types == {"present", "absent", "order", "table", "math", "baseline", "format", "footnote"}
        # The math test shows its LaTeX source; a default that decides a test is shown as one.
        page.evaluate("document.getElementById('f-q').value='c_math'; document.getElementById('f-q').dispatchEvent(new Event('input'))")
        assert "a^{2} + b^{2} = c^{2}" in page.evaluate("document.querySelector('#detail .test').textContent")
        page.evaluate("document.getElementById('f-q').value='b_baseline'; document.getElementById('f-q').dispatchEvent(new Event('input'))")
        assert "check_disallowed_characters" in page.evaluate(
            "document.querySelector('#detail .test[data-id=b_baseline] dl.def').textContent"
        )

        # Filters: failing for one candidate, a type, the flips of the pair; the count says so.
        def listed(show: str, cand: str = "any", kind: str = "all") -> set[str]:
            page.evaluate(f"""(() => {{ const set = (id, v, ev) => {{ const e = document.getElementById(id); e.value = v; e.dispatchEvent(new Event(ev)); }};
                set('f-q', '', 'input'); set('f-cand', '{cand}', 'change'); set('f-type', '{kind}', 'change'); set('f-show', '{show}', 'change'); }})()""")
            return set(page.evaluate("[...document.querySelectorAll('#toc li[data-i]')].map(l => l.textContent.split(' p.1')[0])"))

        def majority(cand: str, test_id: str) -> bool:
            mine = [r["passed"] for r in rows if r["candidate"] == cand and r["id"] == test_id]
            return bool(mine) and sum(mine) / len(mine) > 0.5

        pdf_of = {r["id"]: r["pdf"] for r in records.values()}
        for cand_i, cand in enumerate(["alpha", "beta"]):
            want_pages = {pdf_of[t] for t in records if not majority(cand, t)}
            assert listed("fail", str(cand_i)) == want_pages
        assert listed("all", kind="table") == {"doc_b.pdf"}
        assert listed("flip") == {pdf_of[t] for t in records if majority("alpha", t) != majority("beta", t)}
        assert page.evaluate("document.getElementById('count').textContent") == f"{visible_count(page)} of 3 pages"

        # The image enlarges; at 900 px the page does not scroll sideways.
        page.evaluate("document.getElementById('pageimg').click()")
        assert page.evaluate("document.getElementById('lightbox').classList.contains('open')") is True
        listed("all")
        page.evaluate("document.getElementById('f-q').value='a_format'; document.getElementById('f-q').dispatchEvent(new Event('input'))")
        page.set_width(900)
        assert page.evaluate("document.querySelector('#detail .test[data-id^=a_format] .tid').textContent").startswith("a_format_xxx")
        assert page.evaluate("document.documentElement.scrollWidth") <= 900
        assert_local_only(page, html)
    # Each page image once, shared by the candidates.
    assert len(list((tmp_path / "out" / "report_files" / "img").glob("*.webp"))) == 3


def test_bench_report_marks_pages_that_loop(tmp_path):
    """A page file that ends in a repetition loop (the loop stop's detector, olmocr_rl/loops.py) is
    counted in the summary's loops column and marked in the page list; a long legitimate table of
    identical rows is not."""
    from olmocr_rl.loops import LoopRule

    looping = "# Results\n\nQuarterly revenue grew." + "\n| Revenue | 12 |" * 400  # 6,400 characters of one row
    table = "| | Q1 |\n|---|---|\n" + "| 0 | 0 |\n" * 40 + "Revenue 12"
    assert LoopRule().find_text(looping) and not LoopRule().find_text(table)
    texts = {"alpha": {"doc_a": [looping], "doc_b": ["plain"]}, "beta": {"doc_a": ["Results"], "doc_b": [table]}}
    tests = {k: ALL_TYPES[k] for k in ("doc_a.pdf", "doc_b.pdf")}
    bench = all_types_bench(tmp_path / "bench", texts, tests)
    html = tmp_path / "report.html"
    run_cli("bench", bench, "--report", html)
    with open_report(html, tmp_path / "loops.png") as page:
        counts = page.evaluate("[...document.querySelectorAll('#scores tr[data-cand]')].map(r => [r.dataset.cand, "
                               "+r.querySelector('td[data-loops]').dataset.loops])")  # fmt: skip
        assert counts == [["alpha", 1], ["beta", 0]]
        assert page.evaluate("REPORT_DATA.loops") == [[0], []]
        page.evaluate("document.getElementById('f-show').value='all'; document.getElementById('f-show').dispatchEvent(new Event('change'))")
        marks = page.evaluate("[...document.querySelectorAll('#toc li[data-i]')].map(l => [l.textContent.split(' p.1')[0], "
                              "l.textContent.includes('⟳')])")  # fmt: skip
        assert sorted(marks) == [["doc_a.pdf", True], ["doc_b.pdf", False]]
        assert "repetition loop" in page.evaluate("document.getElementById('summary').textContent")
        assert_local_only(page, html)


HOSTILE = '<img src=x onerror="window.pwned=1"></script><script>window.pwned=2</script>"\'&amp;'


def test_a_failed_candidate_reads_first_and_whole_at_800_px(tmp_path):
    """The verdict names the FAILED candidate first; at 800 px the summary table fits (the error
    wraps) rather than hiding its last column behind a scroll bar."""
    bench = tmp_path / "bench"
    shutil.copytree(ROOT / "bench_fixtures", bench, ignore=shutil.ignore_patterns("*.py", "*.yaml"))
    shutil.copytree(bench / "demo_model", bench / "partial")
    for f in sorted((bench / "partial").rglob("*.md"))[:2]:
        f.unlink()
    html = tmp_path / "r.html"
    assert invoke(["bench", bench, "-c", "demo_model", "-c", "partial", "--compare", "--report", html]).exit_code == 0
    with open_report(html, tmp_path / "r.png", width=800) as page:
        page.set_width(800)
        assert page.evaluate("document.querySelector('#verdicts p.answer').textContent").startswith("partial is FAILED (errors")
        assert page.evaluate("(s => s.scrollWidth <= s.clientWidth)(document.getElementById('scores').parentElement)") is True


def test_bench_report_shows_hostile_strings_as_text(tmp_path):
    tests = {f"x{HOSTILE[:8]}.pdf".replace("/", ""): [{"id": f"t{HOSTILE}", "type": "present", "text": f"a{HOSTILE}"}]}
    pdf = next(iter(tests))
    texts = {f"cand{HOSTILE[:12]}".replace("/", ""): {pdf[:-4]: [f"text {HOSTILE}"]}, "plain": {pdf[:-4]: ["plain"]}}
    bench = all_types_bench(tmp_path / "bench", texts, tests)
    html = tmp_path / "r.html"
    run_cli("bench", bench, "--report", html, "--skip-baseline", "--force")
    with open_report(html, tmp_path / "hostile.png") as page:
        page.wait_for("document.querySelector('#texts pre') !== null")
        body = page.evaluate("document.body.textContent")
        assert f"t{HOSTILE}" in body and f"text {HOSTILE}" in body and f"a{HOSTILE}" in body
        assert page.evaluate("window.pwned === undefined && document.querySelectorAll('img[src=x], [onerror]').length === 0") is True
        assert_local_only(page, html)


def test_bench_report_states_sample_and_max_reports(tmp_path):
    bench = bench_copy(tmp_path / "bench")
    html = tmp_path / "report.html"
    total = run_cli("bench", bench, "--json")["tests"]
    run_cli("bench", bench, "--report", html, "--sample", "6")
    with open_report(html, tmp_path / "sample.png") as page:
        said = page.evaluate("document.querySelector('#semantics li[data-choice=sample]').textContent")
        assert said == f"--sample 6: 6 of {total} tests scored, drawn with seed 0"
        assert page.evaluate("REPORT_DATA.tests.length") == 6
        assert_local_only(page, html)
    # --max-reports 1: per JSONL file, the tests of its first PDF by name (the reference's rule).
    run_cli("bench", bench, "--report", html, "--max-reports", "1")
    records = [
        json.loads(line) | {"jsonl": f.name} for f in sorted(bench.glob("*.jsonl")) for line in f.read_text().splitlines() if line.strip()
    ]
    with_baseline = {r["pdf"] for r in records if r["type"] == "baseline"}
    pdfs = sorted(str(p.relative_to(bench / "pdfs")) for p in (bench / "pdfs").rglob("*.pdf"))
    records += [{"id": f"{p}_baseline", "pdf": p, "jsonl": "baseline"} for p in pdfs if p not in with_baseline]
    first = {}
    for r in sorted(records, key=lambda r: r["pdf"]):
        first.setdefault(r["jsonl"], r["pdf"])
    want = {r["id"] for r in records if first[r["jsonl"]] == r["pdf"]}
    assert len(want) < len(records)
    with open_report(html, tmp_path / "max.png") as page:
        assert set(page.evaluate("REPORT_DATA.tests.map(t => t[0])")) == want
        notes = page.evaluate("document.querySelector('#run .notes').textContent")
        assert (
            f"--max-reports 1: the page list holds at most 1 PDFs per JSONL file: {page.evaluate('REPORT_DATA.pages.length')} of 4 pages"
            in notes
        )
        assert f"{len(want)} of {total} tests" in notes
        assert_local_only(page, html)


CHOICES = {  # option -> (semantics key, its value with the option; every other key keeps its default)
    "guard": (["--guard", "short-output+footnote"], "short-output+footnote"),
    "sample": (["--sample", "6"], {"tests": 6, "of": 29, "seed": 0}),
    "skip_baseline": (["--skip-baseline"], True),
    "pass_rule": ([], "majority"),  # not an option: always the majority rule, always named
}
DEFAULTS = {"guard": "none", "sample": None, "skip_baseline": False, "pass_rule": "majority"}


@pytest.mark.parametrize("choice", CHOICES)
def test_every_choice_that_changes_a_score_is_named(tmp_path, choice):
    """Issue 37, row 1: the guard, --sample, --skip-baseline and the majority rule are named in
    the report's header (in its first screen), in --json, and in each --details record."""
    bench = bench_copy(tmp_path / "bench")
    html, details = tmp_path / "report.html", tmp_path / "details.jsonl"
    flags, value = CHOICES[choice]
    data = run_cli("bench", bench, "--report", html, "--details", details, "--json", "-c", "demo_model", *flags)
    want = {**DEFAULTS, choice: value}
    sem = data["semantics"]
    assert {k: sem[k] for k in want} == want
    rows = [json.loads(line) for line in details.read_text(encoding="utf-8").splitlines()]
    assert rows and all(r["semantics"] == want for r in rows)
    with open_report(html, tmp_path / "shot.png", width=1100) as page:
        page.set_width(1100, 760)
        said = page.evaluate("[...document.querySelectorAll('#semantics li')].map(li => [li.dataset.choice, li.textContent])")
        assert said == [list(p) for p in zip(DEFAULTS, sem["described"])]
        assert page.evaluate("document.getElementById('semantics').getBoundingClientRect().bottom") < 760  # the first screen
        assert page.evaluate("document.getElementById('semantics').dataset.guard") == want["guard"]
    if choice == "guard":  # the rules by name and by PR, marked as not the published checks
        assert said[0][1].startswith("guard short-output+footnote, NOT the published checks: short-output: allenai/olmocr PR #462")
        assert "footnote: allenai/olmocr PR #476" in said[0][1]


def test_comparison_verdict_is_in_the_first_screen(tmp_path):
    """Issue 37, row 2: each pair's verdict at the top, coloured by whether its interval excludes
    0 (not by its sign), as `verdict` words it."""
    from olmocr_rl.bench import run_bench
    from olmocr_rl.bench.compare import compare_summary, significance, verdict

    bench = bench_copy(tmp_path / "bench")
    html = tmp_path / "report.html"
    run_cli("bench", bench, "--report", html, "-c", "demo_model", "-c", "other_model")
    [pair] = compare_summary(run_bench(bench, ["demo_model", "other_model"]), all_pairs=True)
    with open_report(html, tmp_path / "shot.png", width=1100) as page:
        page.set_width(1100, 760)
        answer = "document.querySelector('#verdicts p.answer')"
        assert page.evaluate(f"{answer}.textContent") == verdict(pair)
        assert page.evaluate(f"{answer}.getBoundingClientRect().bottom") < 200
        assert page.evaluate(f"{answer}.className") == "answer " + {1: "pos", -1: "neg", 0: "unclear"}[significance(pair.overall)]
        cells = page.evaluate("[...document.querySelectorAll('.pair.cur td.diff')].map(td => [td.className, td.textContent])")
        rows = [*pair.by_jsonl, *pair.by_type, pair.overall]
        want = [[f"num diff {dict([(1, 'pos'), (-1, 'neg'), (0, 'unclear')])[significance(d)]}",
                 f"{d.diff * 100:+.1f}" + ("*" if significance(d) else "")] for d in rows]  # fmt: skip
        assert cells == want
        assert {c[0] for c in cells} >= {"num diff unclear", "num diff neg"}  # both kinds occur in the fixtures
        rules = page.evaluate("[...document.querySelectorAll('.pair.cur tr.sect')].map(r => r.textContent)")
        assert rules[1] == "by test type: A, B and B − A: the mean share of a test's repeats passed; gained / lost: by the majority rule"


def test_bench_report_is_replaced_whole(tmp_path, monkeypatch):
    bench = bench_copy(tmp_path / "bench")
    html = tmp_path / "report.html"
    run_cli("bench", bench, "--report", html)
    before = {p: p.read_bytes() for p in tmp_path.glob("report*/**/*") if p.is_file()} | {html: html.read_bytes()}
    import olmocr_rl.report.bench as module

    def broken(*a, **kw):
        raise OSError("disk full")

    monkeypatch.setattr(module, "_render_all", broken)
    res = invoke(["bench", str(bench), "--report", str(html)])
    assert res.exit_code == 1 and res.stderr.strip().startswith("error: cannot write the report") and "disk full" in res.stderr
    after = {p: p.read_bytes() for p in tmp_path.glob("report*/**/*") if p.is_file()} | {html: html.read_bytes()}
    assert after == before  # the old report is untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bench", "report.html", "report_files"]  # no temporary left


def test_bench_sample_and_output_failed(tmp_path, monkeypatch):
    bench = bench_copy(tmp_path / "bench")
    details = tmp_path / "d.jsonl"
    res = invoke(["bench", str(bench), "--details", str(details), "--sample", "6", "--skip-baseline"])
    assert res.exit_code == 0, res.output
    assert len({json.loads(x)["id"] for x in details.read_text().splitlines()}) == 6  # 6 tests scored
    monkeypatch.chdir(tmp_path)
    res = invoke(["bench", str(bench), "--details", str(details), "--output-failed", "failed.jsonl", "--skip-baseline"])
    assert res.exit_code == 0, res.output
    assert not any(bench.glob("failed.jsonl"))  # not in the bench folder, where it would be read as tests
    failed = [json.loads(line) for line in (tmp_path / "failed.jsonl").read_text().splitlines()]
    # Each written test failed (most repeats) for every candidate; each line is the test's own record.
    reps: dict[tuple[str, str], list[bool]] = {}
    for x in details.read_text().splitlines():
        r = json.loads(x)
        reps.setdefault((r["candidate"], r["id"]), []).append(bool(r["passed"]))
    passed = {i for (_, i), v in reps.items() if sum(v) / len(v) > 0.5}
    assert failed and all(t["id"] not in passed for t in failed)
    assert {t["id"] for t in failed} == {i for (_, i) in reps} - passed
    sources = {
        json.loads(line)["id"]: json.loads(line) for f in bench.glob("*.jsonl") for line in f.read_text().splitlines() if line.strip()
    }
    assert all(t == sources[t["id"]] for t in failed)


# ----------------------------------------------------------------------------------------------
# report RUN_DIR


def fake_run(root: Path) -> Path:
    """A training output folder as `olmocr-rl train` writes it: metrics (train steps 1-4, eval at
    2 and 4), recorded completions (train: the trainer's counter, one below the logged step; one
    of them empty), the config and the prepared page images."""
    from PIL import Image

    prep = root / "prep"
    (prep / "images").mkdir(parents=True)
    for i, pdf in enumerate(["p.pdf", "q.pdf"]):
        Image.new("RGB", (300, 400), (255, 255, 255 - 40 * i)).save(prep / "images" / f"{pdf}.png")
    (prep / "train.jsonl").write_text(
        "".join(json.dumps({"pdf": pdf, "page": 1, "image": f"images/{pdf}.png"}) + "\n" for pdf in ["p.pdf", "q.pdf"])
    )
    run = root / "run"
    (run / "logs").mkdir(parents=True)
    (run / "completions").mkdir()
    metrics = []
    for s in range(1, 5):
        metrics.append({"step": s, "loss": 0.1 / s, "reward": 0.2 + 0.1 * s, "rewards/bench/mean": 0.2 + 0.1 * s, "reward_std": 0.1,
                        "frac_reward_zero_std": [0.5, 0.25, 0.75, 0.0][s - 1], "bench/present/pass_rate": 0.1 * s,
                        "bench/table/pass_rate": 0.05 * s})  # fmt: skip
        if s % 2 == 0:
            metrics.append({"step": s, "eval_reward": 0.3, "eval_frac_reward_zero_std": 1.0 / s, "eval_bench/present/pass_rate": 0.2})
    (run / "logs" / "metrics.jsonl").write_text("".join(json.dumps(m) + "\n" for m in metrics) + '{"step": 5, "rew')
    train = []
    for counter in range(4):
        rewards = [0.5, 0.25, 0.75, 0.0] if counter != 2 else [0.5] * 4
        for k, r in enumerate(rewards):
            train.append({"step": counter, "mode": "train", "pdf": "p.pdf", "page": 1, "reward": r, "passed": int(4 * r), "total": 4,
                          "failed": [{"id": f"t{j}<b>", "type": "present", "explanation": f"missing {j} <i>"} for j in range(4 - int(4 * r))],
                          "completion": "" if (counter, k) == (3, 3) else f"text {counter}.{k} <script>window.pwned=1</script>"})  # fmt: skip
    evals = [{"step": 2, "mode": "eval", "pdf": "q.pdf", "page": 1, "reward": r, "passed": 1, "total": 2, "failed": [], "completion": "e"}
             for r in (0.5, 1.0)]  # fmt: skip
    (run / "completions" / "failing_train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in train))
    (run / "completions" / "failing_eval.jsonl").write_text("".join(json.dumps(r) + "\n" for r in evals))
    (run / "train_config.json").write_text(json.dumps({"model": "m", "prepared_dir": str(prep), "num_generations": 4,
                                                        "num_generations_eval": 2, "rewards": {"bench": 1.0}}))  # fmt: skip
    return run


def test_run_report_views(tmp_path):
    run = fake_run(tmp_path)
    barely = "training barely moved the weights: 2.0 % of a sample of them changed (every reward in each group equal, ...)"
    (run / "train_summary.json").write_text(json.dumps({"weights_moved": {"elements_sampled": 5000, "share": 0.02,
                                                                          "median_change_over_lr": 0.5}, "warnings": [barely]}))  # fmt: skip
    res = invoke(["report", str(run)])
    assert res.exit_code == 0, res.output
    html = run / "report.html"
    logs = [json.loads(line) for line in (run / "logs" / "metrics.jsonl").read_text().splitlines()[:-1]]
    with open_report(html, tmp_path / "run.png") as page:
        # The verdict opens the report: the reward's first and last step, the zero-spread share, the
        # weights moved, and the console's warnings (train_summary.json).
        assert page.evaluate("document.querySelector('h1').nextElementSibling.nextElementSibling.id") == "verdict"
        assert page.evaluate("document.querySelector('#verdict p.answer').textContent") == (
            "The reward rose: 0.300 at step 1 → 0.600 at step 4, beyond the step-to-step noise (±0.200); eval 0.300 → 0.300; "
            "38% of groups without reward spread; "
            "2.0% of sampled weights moved. 1 warning."
        )
        assert page.evaluate("document.querySelector('#verdict p.warning').textContent") == f"warning: {barely}"
        facts = page.evaluate("[...document.querySelectorAll('#verdict li')].map(li => li.textContent)")
        assert facts[-1] == "weights moved: 2.0% of 5,000 sampled elements changed, the median change 0.5 x the learning rate"
        # The zero-spread curve, train and eval, point for point; every metric in its own panel.
        for series, key in (("train", "frac_reward_zero_std"), ("eval", "eval_frac_reward_zero_std")):
            got = page.evaluate(f"[...document.querySelectorAll('figure[data-metric=frac_reward_zero_std] circle[data-series={series}]')]"
                                ".map(c => [+c.dataset.step, +c.dataset.value])")  # fmt: skip
            assert got == [[m["step"], m[key]] for m in logs if key in m]
        metrics = page.evaluate("[...document.querySelectorAll('figure.chart')].map(f => f.dataset.metric)")
        assert len(metrics) == len(set(metrics))
        assert {"reward", "frac_reward_zero_std", "bench/present/pass_rate", "bench/table/pass_rate", "loss"} <= set(metrics)
        assert "rewards/bench/mean" not in metrics  # one reward function: its curve is the reward's

        # One entry per page and step; train shown at the logged step (the counter + 1).
        entries = page.evaluate("[...document.querySelectorAll('section.entry')].map(e => [e.dataset.mode, +e.dataset.step, e.dataset.pdf, "
                                "JSON.parse(e.dataset.rewards), [...e.querySelectorAll('.completion')].map(c => +c.dataset.reward)])")  # fmt: skip
        assert [e[:3] for e in entries] == [
            ["train", 4, "p.pdf"],
            ["train", 3, "p.pdf"],
            ["eval", 2, "q.pdf"],
            ["train", 2, "p.pdf"],
            ["train", 1, "p.pdf"],
        ]
        steps = {m["step"] for m in logs}
        assert all(step in steps for _, step, *_ in entries)
        for _, _, _, rewards, shown in entries:
            assert shown == ([max(rewards), min(rewards)] if max(rewards) > min(rewards) else [rewards[0]])
        flat = page.evaluate("[...document.querySelectorAll('section.entry[data-flat=\"1\"]')].map(e => +e.dataset.step)")
        assert flat == [3]
        # The empty completion is said to be empty; hostile text stays text.
        assert "(empty completion" in page.evaluate("document.querySelector('section.entry').textContent")
        assert page.evaluate("window.pwned === undefined") is True
        assert "<script>window.pwned=1</script>" in page.evaluate("document.body.textContent")
        # Images decode; filters.
        assert page.evaluate("[...document.images].filter(i => i.id !== 'lightimg').every(i => i.complete && i.naturalWidth > 0)") is True
        page.evaluate(
            "document.getElementById('f-mode').value='eval'; document.getElementById('f-mode').dispatchEvent(new Event('change'))"
        )
        assert page.evaluate("[...document.querySelectorAll('section.entry')].filter(e => !e.hidden).map(e => e.dataset.mode)") == ["eval"]
        assert page.evaluate("document.getElementById('count').textContent") == "1 of 5 shown"
        cut = f"{run / 'logs' / 'metrics.jsonl'}:{len(logs) + 1}: cut short (the run stopped while writing it); skipped"
        assert cut in page.evaluate("document.getElementById('run').textContent")
        assert_local_only(page, html)
    res = invoke(["report", str(tmp_path / "nothing")])
    assert res.exit_code == 1 and "no logs/metrics.jsonl" in res.stderr


def _headline(run: Path, rewards: list[float]) -> str:
    """The run report's headline for train rewards logged by hand, one row a step, read from the
    HTML `report` writes."""
    import html as html_lib
    import re

    (run / "logs" / "metrics.jsonl").write_text("".join(json.dumps({"step": s, "reward": r}) + "\n" for s, r in enumerate(rewards, 1)))
    res = invoke(["report", str(run)])
    assert res.exit_code == 0, res.output
    return html_lib.unescape(re.search(r'<p class="answer[^"]*">(.*?)</p>', (run / "report.html").read_text()).group(1))


def test_run_report_says_when_the_reward_change_is_within_noise(tmp_path, monkeypatch):
    """Issue 49, item 7: the headline's first-to-last change is held against the step-to-step
    noise, NOISE_TIMES x the root mean square of the changes between consecutive steps: two steps
    are always within it; exactly at the bound is within; just past it, in either direction, is a
    rise or a fall. Exact binary fractions, so that "exactly" is exact."""
    import olmocr_rl.report.run as run_report

    run = fake_run(tmp_path)
    (run / "train_summary.json").write_text(json.dumps({"weights_moved": {"elements_sampled": 10, "share": 0.5}}))
    assert _headline(run, [0.159, 0.167]).startswith(  # the issue's two steps: noise 2 x 0.008
        "The reward moved 0.159 at step 1 → 0.167 at step 2, within the step-to-step noise (±0.016); "
    )
    # 0.25 then 0.5 four times: one change of 0.25 in four, noise 2 x sqrt(0.25² / 4) = 0.25 = the change.
    at = [0.25, 0.5, 0.5, 0.5, 0.5]
    assert _headline(run, at).startswith("The reward moved 0.250 at step 1 → 0.500 at step 5, within the step-to-step noise (±0.250)")
    eps = 2.0**-10
    assert _headline(run, [*at[:-1], 0.5 + eps]).startswith("The reward rose: 0.250 at step 1 → 0.501 at step 5, beyond the "
                                                           "step-to-step noise (±0.250)")  # fmt: skip
    assert _headline(run, [*at[:-1], 0.5 - eps]).startswith("The reward moved 0.250 at step 1 → 0.499 at step 5, within")
    down = [0.5, 0.25, 0.25, 0.25, 0.25 - eps]
    assert _headline(run, down).startswith("The reward fell: 0.500 at step 1 → 0.249 at step 5, beyond the step-to-step noise (±0.250)")
    assert _headline(run, [0.3, 0.302, 0.301]).startswith("The reward stayed level: 0.300 at step 1 → 0.301 at step 3; ")
    assert _headline(run, [0.3]).startswith("One training step logged: the reward 0.300 at step 1 (no change to judge yet); ")
    # A non-default bound, exactly: 4 x the root mean square of one 0.25 change in sixteen = 0.25.
    monkeypatch.setattr(run_report, "NOISE_TIMES", 4.0)
    flat = [0.25] + [0.5] * 16
    assert run_report.step_noise(flat) == 0.25
    assert _headline(run, flat).startswith("The reward moved 0.250 at step 1 → 0.500 at step 17, within the step-to-step noise (±0.250)")
    assert _headline(run, [*flat[:-1], 0.5 + eps]).startswith("The reward rose: ")
    monkeypatch.setattr(run_report, "NOISE_TIMES", 1.0)  # two steps at a bound of 1 x their change: within, exactly
    assert _headline(run, [0.25, 0.5]).startswith(
        "The reward moved 0.250 at step 1 → 0.500 at step 2, within the step-to-step noise (±0.250)"
    )
    facts = run_report.verdict([{"step": 1, "reward": 0.25}, {"step": 2, "reward": 0.5}], {})[1]
    assert facts[0] == ("train reward (mean over the step's completions): 0.250 at step 1, 0.500 at step 2 (+0.250; step-to-step "
                        "noise ±0.250: 1 × the root mean square of the 1 change between consecutive logged steps)")  # fmt: skip


def test_run_report_names_the_split_and_labels_axes_apart(tmp_path):
    """Issue 37, row 6: the run report names the split trained on (a curated one here, cut by
    max_train_pages) and the eval split, with their pages; every axis labels distinct values
    (entropy between 5.545 and 5.555 printed "5.55" twice)."""
    from olmocr_rl.report.charts import nice_ticks, tick_labels

    run = fake_run(tmp_path)
    prep = tmp_path / "prep"
    (prep / "curated.jsonl").write_text("".join(json.dumps({"pdf": p, "page": n, "image": "images/p.pdf.png"}) + "\n"
                                                for p, n in (("p.pdf", 1), ("p.pdf", 2), ("q.pdf", 1))))  # fmt: skip
    config = json.loads((run / "train_config.json").read_text())
    config |= {"train_split": "curated", "max_train_pages": 2, "eval_split": "train", "bench_guard": "short-output+footnote"}
    (run / "train_config.json").write_text(json.dumps(config))
    with (run / "logs" / "metrics.jsonl").open("a") as f:  # after the cut line: entropy within a hundredth
        f.write("\n" + "".join(json.dumps({"step": s, "entropy": 5.5455 + 0.0025 * s, "grad_norm": 12.34561 + 0.00002 * s}) + "\n"
                               for s in range(1, 5)))  # fmt: skip
    res = invoke(["report", str(run)])
    assert res.exit_code == 0, res.output
    with open_report(run / "report.html", tmp_path / "run.png") as page:
        facts = dict(page.evaluate("[...document.querySelectorAll('#run dt')].map(d => [d.textContent, d.nextElementSibling.textContent])"))
        assert facts["training split"] == "curated: 3 pages of 2 PDFs; the first 2 used (max_train_pages)"
        assert facts["eval split"] == "train: 2 pages of 2 PDFs"
        assert facts["bench guard"] == "short-output+footnote"
        for metric in page.evaluate("[...document.querySelectorAll('figure.chart')].map(f => f.dataset.metric)"):
            labels = page.evaluate(
                f"[...document.querySelectorAll('figure[data-metric=\"{metric}\"] svg text[text-anchor=end]')].map(t => t.textContent)"
            )
            assert len(labels) == len(set(labels)) > 1, (metric, labels)
        entropy = page.evaluate(
            "[...document.querySelectorAll('figure[data-metric=entropy] svg text[text-anchor=end]')].map(t => t.textContent)"
        )
        assert "5.545" in entropy or "5.555" in entropy
        # Every axis label is drawn whole inside its panel (a long one, "12.34564", was clipped at the left).
        clipped = page.evaluate("[...document.querySelectorAll('figure.chart svg text')].filter(t => t.getBBox().x < 0 || "
                                "t.getBBox().x + t.getBBox().width > t.ownerSVGElement.width.baseVal.value).map(t => t.textContent)")  # fmt: skip
        assert clipped == [], clipped
        assert (
            max(
                len(t)
                for t in page.evaluate(
                    "[...document.querySelectorAll('figure[data-metric=grad_norm] svg text[text-anchor=end]')].map(t => t.textContent)"
                )
            )
            >= 7
        )
    assert tick_labels(nice_ticks(5.541, 5.558)) == ["5.545", "5.55", "5.555"]
    assert tick_labels(nice_ticks(1234.5, 1236)) == ["1234.5", "1235", "1235.5", "1236"]  # was "1.2e+03" four times
    assert tick_labels([0.0, 0.25, 0.5]) == ["0", "0.25", "0.5"]


def test_run_report_of_a_real_run(tmp_path):
    need("trl")
    from tiny_vlm import build_tiny_vlm
    from training import RECIPE, make_prepared

    model = build_tiny_vlm(tmp_path / "model")
    prepared = make_prepared(tmp_path / "prep")
    run = tmp_path / "run"
    res = invoke(["train", str(prepared), "--model", str(model), "-o", str(run), "--config", str(RECIPE), "progress=false",
                  "max_steps=3", "logging_steps=1", "final_outputs=none", "eval_steps=2"])  # fmt: skip
    assert res.exit_code == 0, res.output
    res = invoke(["report", str(run)])
    assert res.exit_code == 0 and (run / "report.html").is_file(), res.output
    recorded = [json.loads(line) for f in (run / "completions").glob("failing_*.jsonl") for line in f.read_text().splitlines()]
    groups = {(r["mode"], r["step"] + (r["mode"] == "train"), r["pdf"], r["page"]) for r in recorded}
    logged = {json.loads(line)["step"] for line in (run / "logs" / "metrics.jsonl").read_text().splitlines()}
    summary = json.loads((run / "train_summary.json").read_text())
    assert summary["warnings"] == [] and summary["weights_moved"]["share"] > 0.1  # lr 1e-3 moves them: no warning
    with open_report(run / "report.html", tmp_path / "run.png") as page:
        verdict = page.evaluate("document.querySelector('#verdict p.answer').textContent")
        assert verdict.startswith("The reward ") and f"{summary['weights_moved']['share']:.1%} of sampled weights moved." in verdict
        assert page.evaluate("document.querySelectorAll('#verdict p.warning').length") == 0
        assert page.evaluate("document.querySelectorAll('figure[data-metric=frac_reward_zero_std] circle').length") >= 3
        entries = page.evaluate("[...document.querySelectorAll('section.entry')].map(e => [e.dataset.mode, +e.dataset.step])")
        assert len(entries) == min(len(groups), 40) and {s for _, s in entries} <= logged
        assert page.evaluate("[...document.images].filter(i => i.id !== 'lightimg').every(i => i.complete && i.naturalWidth > 0)") is True
        assert_local_only(page, run / "report.html")
