"""The HTML reports, opened in a real headless browser (Debian's chromium, over the DevTools
protocol): `bench --report` and `report RUN_DIR` render, show as many failing repeats as
`--details` lists, every image decodes, and the page makes no network request. Also `bench
--sample` and `--output-failed`."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from browser import Page, chromium
from clirun import invoke

ROOT = Path(__file__).resolve().parent.parent

if chromium() is None:
    if os.environ.get("CI"):
        raise RuntimeError("chromium is missing: `make test` installs it (apt-get install chromium)")
    pytest.skip("no chromium here (make test installs it)", allow_module_level=True)
pytest.importorskip("websocket")


def bench_copy(dst: Path) -> Path:
    shutil.copytree(ROOT / "bench_fixtures", dst, ignore=shutil.ignore_patterns("*.py", "*.yaml"))
    return dst


def check_page(html: Path, shot: Path) -> Page:
    page = Page(html.resolve().as_uri())
    page.screenshot(shot)
    assert shot.stat().st_size > 10_000  # a rendered page, not a blank one
    # No network: only the file itself (images are data: URIs and are not requests).
    assert [u for u in page.requests() if not u.startswith("data:")] == [html.resolve().as_uri()]
    assert page.evaluate("[...document.images].every(i => i.complete && i.naturalWidth > 0)") is True
    return page


def test_bench_report_in_a_browser(tmp_path):
    bench = bench_copy(tmp_path / "bench")
    html, details = tmp_path / "report.html", tmp_path / "details.jsonl"
    res = invoke(["bench", str(bench), "--report", str(html), "--details", str(details)])
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in details.read_text().splitlines()]
    failures = sum(1 for r in rows if r["passed"] is False)
    assert failures > 0
    with check_page(html, tmp_path / "bench.png") as page:
        assert page.evaluate("document.querySelectorAll('.rep.fail').length") == failures
        assert page.evaluate("document.querySelectorAll('.rep.pass').length") == sum(1 for r in rows if r["passed"] is True)
        assert page.evaluate("document.images.length") >= 3  # every tested page of each candidate
        # Failures first, per candidate.
        first = page.evaluate("document.querySelector('section.page h3').textContent")
        assert " 0 of " not in first
        # The status filter leaves only failing tests visible.
        visible = ("[...document.querySelectorAll('tr.test')].filter(r => r.style.display !== 'none' && "
                   "r.closest('section').style.display !== 'none').length")  # fmt: skip
        page.evaluate("document.getElementById('f-status').value='fail'; applyFilters()")
        assert page.evaluate(visible) == page.evaluate("document.querySelectorAll('tr.test.fail').length")
        page.evaluate("document.getElementById('f-status').value='all'; document.getElementById('f-type').value='present'; applyFilters()")
        assert page.evaluate(visible) == page.evaluate("document.querySelectorAll('tr.test[data-type=present]').length")


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


def test_run_report_in_a_browser(tmp_path):
    pytest.importorskip("trl")
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from test_train import RECIPE, make_prepared

    sys.path.insert(0, str(ROOT / "bench_fixtures"))
    from tiny_vlm import build_tiny_vlm

    model = build_tiny_vlm(tmp_path / "model")
    prepared = make_prepared(tmp_path / "prep")
    run = tmp_path / "run"
    res = invoke(["train", str(prepared), "--model", str(model), "-o", str(run), "--config", str(RECIPE), "progress=false",
                  "max_steps=3", "logging_steps=1", "final_outputs=none", "eval_steps=2"])  # fmt: skip
    assert res.exit_code == 0, res.output
    res = invoke(["report", str(run)])
    assert res.exit_code == 0 and (run / "report.html").is_file(), res.output
    failing = [json.loads(line) for f in (run / "completions").glob("failing_*.jsonl") for line in f.read_text().splitlines()]
    with check_page(run / "report.html", tmp_path / "run.png") as page:
        assert page.evaluate("document.querySelectorAll('svg polyline, svg circle').length") >= 1  # curves drawn
        assert page.evaluate("document.querySelectorAll('section.page').length") == min(len(failing), 40)
        assert page.evaluate("document.body.textContent.includes('Resolved config')") is True
    res = invoke(["report", str(tmp_path / "nothing")])
    assert res.exit_code == 1 and "no logs/metrics.jsonl" in res.stderr
