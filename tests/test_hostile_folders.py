"""Bad input, kills and a second copy of a command (#29): outputs written whole or not at all and
never over an input, output paths checked before any work, page numbers that the rest can handle,
file names that are not UTF-8, names that look like rich markup, folders that are not candidates,
`--strict`, and `report RUN_DIR` on a run that was killed or holds paths out of its folders.
`benchmarks/hostile_folders.py` runs every command on such folders (the last test)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from clirun import invoke

from olmocr_rl.atomic import atomic_write

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "bench_fixtures"


@pytest.fixture
def bench(tmp_path: Path) -> Path:
    root = tmp_path / "bench"
    shutil.copytree(FIXTURES, root, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def one_error(res) -> str:
    """The one `error:` line of a command that failed as a user error should."""
    assert res.exit_code == 1, res.output
    assert "Traceback" not in res.output and "unexpected" not in res.output, res.output
    errors = [line for line in res.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, res.stderr
    return errors[0]


def fs(name: bytes) -> str:
    """A file name made of raw bytes, as Python names it (undecodable bytes as surrogates)."""
    return os.fsdecode(name)


# ---------------------------------------------------------------------------------------------
# Outputs: whole or not at all, never over an input, checked before any work


def test_atomic_write_keeps_the_old_file_when_the_block_fails(tmp_path):
    target = tmp_path / "out.jsonl"
    target.write_text("old\n")
    with pytest.raises(RuntimeError), atomic_write(target) as f:
        f.write("half")
        raise RuntimeError("killed")
    assert target.read_text() == "old\n" and os.listdir(tmp_path) == ["out.jsonl"]
    with atomic_write(target) as f:
        f.write("new\n")
    assert target.read_text() == "new\n" and os.listdir(tmp_path) == ["out.jsonl"]
    assert target.stat().st_mode & 0o777 == 0o666 & ~_umask()  # not mkstemp's private 0600


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_details_of_a_run_that_dies_leave_the_previous_file(bench, tmp_path, monkeypatch):
    import olmocr_rl.bench.run as run_module
    from olmocr_rl.bench import run_bench

    details = tmp_path / "details.jsonl"
    run_bench(bench, details=details)
    before = details.read_bytes()
    assert before.count(b"\n") > 20
    calls = []
    real = run_module.evaluate_candidate

    def dies_on_the_second(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("killed")
        return real(*args, **kwargs)

    monkeypatch.setattr(run_module, "evaluate_candidate", dies_on_the_second)
    with pytest.raises(RuntimeError):
        run_bench(bench, details=details)
    assert details.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["bench", "details.jsonl"]  # no temporary file left


@pytest.mark.parametrize(
    "option, target",
    [
        ("--details", "text_tests.jsonl"),
        ("--details", "demo_model/letter_pg1_repeat1.md"),
        ("--output-failed", "pdfs/letter.pdf"),
        ("--report", "other_model/letter_pg1_repeat2.md"),
    ],
)
def test_an_output_over_an_input_of_the_run_is_refused(bench, option, target):
    path = bench / target
    before = path.read_bytes()
    error = one_error(invoke(["bench", bench, option, path]))
    assert option in error and error.count(str(path)) == 2 and "an input of this run" in error, error
    assert path.read_bytes() == before


@pytest.mark.parametrize("option", ["--report", "--output-failed", "--details"])
@pytest.mark.parametrize("where", ["no folder", "a folder"])
def test_output_paths_are_checked_before_any_work(bench, tmp_path, monkeypatch, option, where):
    import olmocr_rl.bench

    def scored(*args, **kwargs):
        raise AssertionError("the bench ran before its output paths were checked")

    monkeypatch.setattr(olmocr_rl.bench, "run_bench", scored)
    path = tmp_path / "nodir" / "out.x" if where == "no folder" else tmp_path
    if where == "no folder" and option == "--report":  # the report makes its folder: one that cannot be made
        (tmp_path / "file").write_text("")
        path = tmp_path / "file" / "nodir" / "out.html"
    error = one_error(invoke(["bench", bench, option, path]))
    assert error.startswith(f"error: {option} {path}: "), error
    assert ("no folder" if where == "no folder" else "is a folder") in error
    if option == "--report" and where == "no folder":
        assert error.endswith(f"no folder {tmp_path / 'file'} (it is a file)"), error


def test_the_summary_is_printed_before_optional_outputs(bench, tmp_path, monkeypatch):
    import olmocr_rl.atomic

    def disk_full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(olmocr_rl.atomic, "write_text", disk_full)
    res = invoke(["bench", bench, "--output-failed", tmp_path / "failed.jsonl"], env={"COLUMNS": "200"})
    error = one_error(res)
    assert "--output-failed" in error and "No space left" in error
    assert "olmOCR-bench" in res.stdout and "demo_model" in res.stdout  # the scores are not lost


# ---------------------------------------------------------------------------------------------
# Page numbers: one rule for validate and every command


BAD_PAGES = ["100000000000000000000", "1e20", "1.0", "0", "-3", "null", "true", "[1]", '"1_|(a|a)*(a|a)*b"', '"pg1"', '""']


@pytest.mark.parametrize("page", BAD_PAGES)
def test_a_page_that_is_not_a_whole_number_is_refused_by_name(bench, page):
    tests = bench / "letter_tests.jsonl"
    n = len(tests.read_text().splitlines()) + 1
    with tests.open("a") as f:
        f.write(f'{{"pdf": "letter.pdf", "page": {page}, "id": "odd", "type": "present", "text": "x"}}\n')
    where = f"{tests}:{n}: test 'odd': page must be a whole number from 1"
    res = invoke(["validate", bench])
    assert res.exit_code == 1 and where in res.stderr, res.output
    assert where in one_error(invoke(["bench", bench, "--json"]))
    assert where in one_error(invoke(["check", bench, bench / "demo_model" / "letter_pg1_repeat1.md", "--pdf", "letter.pdf"]))


def test_prepare_lists_a_huge_page_and_prepares_the_rest(bench, tmp_path):
    with (bench / "letter_tests.jsonl").open("a") as f:
        f.write('{"pdf": "letter.pdf", "page": 100000000000000000000, "id": "huge", "type": "present", "text": "x"}\n')
    res = invoke(["prepare", bench, tmp_path / "prep", "--longest-side", "64", "--workers", "1", "--quiet"])
    assert res.exit_code == 0, res.output
    rejected = json.loads((tmp_path / "prep" / "report.json").read_text())["rejected_tests"]
    assert [(r["id"], r["line"]) for r in rejected] == [("huge", 10)]
    assert rejected[0]["reason"].startswith("page must be a whole number from 1")


def test_a_page_written_as_digits_is_run_as_the_reference_runs_it(bench, tmp_path):
    with (bench / "letter_tests.jsonl").open("a") as f:
        f.write('{"pdf": "letter.pdf", "page": "1", "id": "digits", "type": "present", "text": "Dear"}\n')
    assert invoke(["validate", bench]).exit_code == 0
    details = tmp_path / "d.jsonl"
    assert invoke(["bench", bench, "--details", details, "--json"]).exit_code == 0
    rows = [json.loads(line) for line in details.read_text().splitlines()]
    assert {r["md"] for r in rows if r["id"] == "digits" and r["candidate"] == "other_model"} == {
        f"letter_pg1_repeat{i}.md" for i in (1, 2, 3)
    }
    # prepare agrees: the test trains on page 1 with the others of that page
    assert invoke(["prepare", bench, tmp_path / "prep", "--longest-side", "64", "--workers", "1", "--quiet"]).exit_code == 0
    rows = [json.loads(line) for split in ("train", "eval") for line in (tmp_path / "prep" / f"{split}.jsonl").read_text().splitlines()]
    assert [r["page"] for r in rows if "digits" in r["test_ids"]] == [1]
    assert json.loads((tmp_path / "prep" / "report.json").read_text())["pages_out_of_range"] == []


# ---------------------------------------------------------------------------------------------
# File names that are not UTF-8


def test_a_pdf_name_that_is_not_utf8_is_named_before_any_work(bench, tmp_path):
    shutil.copy(bench / "pdfs" / "letter.pdf", bench / "pdfs" / fs(b"caf\xe9.pdf"))
    for args in (["bench", bench, "--force", "--json"], ["prepare", bench, tmp_path / "prep", "--quiet"]):
        assert "caf\\xe9.pdf: the" in one_error(invoke(args)) and "not UTF-8" in one_error(invoke(args))
    assert not (tmp_path / "prep").exists() or not any((tmp_path / "prep").rglob("*.png"))  # refused before rendering


def test_a_test_file_name_that_is_not_utf8_is_named(bench, tmp_path):
    shutil.copy(bench / "letter_tests.jsonl", bench / fs(b"more\xff.jsonl"))
    page = bench / "demo_model" / "letter_pg1_repeat1.md"
    for args in (
        ["validate", bench],
        ["bench", bench, "--json"],
        ["check", bench, page, "--pdf", "letter.pdf"],
        ["probe", bench],
        ["prepare", bench, tmp_path / "prep", "--quiet"],
    ):
        error = one_error(invoke(args))
        assert "more\\xff.jsonl" in error and "not UTF-8" in error, (args[0], error)


def test_a_candidate_folder_name_that_is_not_utf8_is_skipped_with_a_warning(bench):
    (bench / "other_model").rename(bench / fs(b"cand\xff"))
    res = invoke(["bench", bench, "--json"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)  # valid JSON: the name is shown, never written raw
    assert [c["name"] for c in summary["candidates"]] == ["demo_model"]
    assert summary["warnings"] == [f"{bench}/cand\\xff: skipped: the folder's name is not UTF-8 text; rename it"]


# ---------------------------------------------------------------------------------------------
# What the user typed, markup in names, folders that are not candidates, --strict


def test_a_fifo_as_a_page_file_is_an_error_not_a_hang(bench):
    """The reference blocks forever reading it; bench names it as an error of that candidate."""
    fifo = bench / "demo_model" / "letter_pg1_repeat2.md"
    os.mkfifo(fifo)
    code = "import sys; from olmocr_rl.cli import main; sys.exit(main())"
    res = subprocess.run([sys.executable, "-c", code, "bench", str(bench), "-c", "demo_model", "--json"],
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    (candidate,) = json.loads(res.stdout)["candidates"]
    assert any(f"{fifo}: not a regular file" in e for e in candidate["errors"]), candidate["errors"]


def test_a_file_that_is_not_a_bench_folder_is_named_as_typed(bench):
    readme = bench / "README.md"
    readme.write_text("# not a bench\n")
    assert one_error(invoke(["bench", readme])) == f"error: {readme}: not a folder (give a bench folder, or one of its .jsonl test files)"
    lone = bench / "demo_model" / "x.jsonl"
    lone.write_text("")
    assert one_error(invoke(["bench", lone])).startswith(f"error: {lone}: its folder {lone.parent} has no pdfs/ folder")


def test_names_that_look_like_markup_are_printed_as_named(bench):
    (bench / "other_model").rename(bench / "[bold red]evil")
    (bench / "text_tests.jsonl").rename(bench / "[red]t.jsonl")
    res = invoke(["bench", bench, "--compare"], env={"COLUMNS": "250"})
    assert res.exit_code == 0, res.output
    assert "[bold red]evil" in res.stdout and "[red]t.jsonl" in res.stdout
    res = invoke(["probe", bench], env={"COLUMNS": "250"})
    assert res.exit_code == 0 and "[red]t.jsonl" in res.stdout, res.output


def test_folders_without_page_files_are_not_candidates(bench):
    for name in ("logs", "checkpoint-2", "completions"):
        (bench / name).mkdir()
        (bench / name / "x.txt").write_text("not a page")
    res = invoke(["bench", bench, "--json"])
    summary = json.loads(res.stdout)
    assert [c["name"] for c in summary["candidates"]] == ["demo_model", "other_model"]
    assert summary["notes"] == ["not candidates (no page file of a PDF in pdfs/): checkpoint-2, completions, logs"]
    res = invoke(["bench", bench], env={"COLUMNS": "250"})
    assert res.stdout.count("checkpoint-2") == 1 and "FAILED" not in res.stdout, res.stdout
    named = json.loads(invoke(["bench", bench, "-c", "logs", "--json"]).stdout)  # named: run, and FAILED as upstream
    assert [(c["name"], c["status"]) for c in named["candidates"]] == [("logs", "failed")]


def test_strict_makes_failures_an_exit_status(bench):
    page = bench / "demo_model" / "letter_pg1_repeat1.md"
    args = ["check", bench, page, "--pdf", "letter.pdf"]
    assert invoke(args).exit_code == 0
    error = one_error(invoke([*args, "--strict"]))
    assert re.fullmatch(r"error: --strict: \d+ of \d+ test\(s\) failed", error), error
    shutil.copytree(bench / "demo_model", bench / "partial")
    (bench / "partial" / "letter_pg1_repeat1.md").unlink()
    assert invoke(["bench", bench]).exit_code == 0
    res = invoke(["bench", bench, "--strict"], env={"COLUMNS": "200"})
    assert one_error(res) == "error: --strict: 1 candidate(s) FAILED (errors): partial"
    assert "FAILED (errors)" in res.stdout  # the summary first
    clean = invoke(["bench", bench, "-c", "demo_model", "-c", "other_model", "--strict"])
    assert clean.exit_code == 0, clean.output


# ---------------------------------------------------------------------------------------------
# report RUN_DIR: paths out of the prepared folder, a killed run, values that are not numbers


def _png(path: Path, colour=(255, 255, 255)) -> None:
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (40, 60), colour).save(path)


def make_run(root: Path, images: dict[str, str], metrics: str, completions: str = "") -> Path:
    """A run folder whose prepared rows name `images` (pdf -> image path) and whose logs hold the
    given text; one recorded completion per pdf unless `completions` is given."""
    prep, run = root / "prep", root / "run"
    (prep / "images").mkdir(parents=True)
    (prep / "train.jsonl").write_text("".join(json.dumps({"pdf": p, "page": 1, "image": i}) + "\n" for p, i in images.items()))
    (run / "logs").mkdir(parents=True)
    (run / "completions").mkdir()
    (run / "logs" / "metrics.jsonl").write_text(metrics)
    rec = "".join(json.dumps({"step": 0, "mode": "train", "pdf": p, "page": 1, "reward": 0.5, "completion": "x"}) + "\n" for p in images)
    (run / "completions" / "failing_train.jsonl").write_text(completions or rec)
    (run / "train_config.json").write_text(json.dumps({"prepared_dir": str(prep)}))
    return run


def embedded_images(html: str) -> list[str]:
    return json.loads(re.search(r'<script type="application/json" id="images">(.*?)</script>', html).group(1))


def test_report_embeds_only_images_inside_the_prepared_folder(tmp_path):
    _png(tmp_path / "outside.png", (200, 0, 0))
    run = make_run(
        tmp_path, {"a.pdf": "../outside.png", "b.pdf": "images/fake.png", "c.pdf": "images/c.png"}, '{"step": 1, "reward": 0.5}\n'
    )
    (tmp_path / "prep" / "images" / "fake.png").write_text("TOP SECRET, not an image")
    _png(tmp_path / "prep" / "images" / "c.png")
    res = invoke(["report", run])
    assert res.exit_code == 0, res.output
    train = tmp_path / "prep" / "train.jsonl"
    assert f"warning: {train}:1: image '../outside.png': not a path inside" in res.stderr, res.stderr
    assert f"warning: {train}:2: image 'images/fake.png': not a PNG, JPEG, WebP or GIF file" in res.stderr
    html = (run / "report.html").read_text()
    assert len(embedded_images(html)) == 1 and html.count('data-k="0"') == 1
    assert html.count("(no page image") == 2


def test_report_of_a_killed_run_with_bad_values_is_written_with_warnings(tmp_path):
    rows = [(1, 0.2), (2, 0.3), (3, None), (4, "x"), (5, 0.4), (6, 0.5)]
    metrics = "".join(json.dumps({"step": s, "reward": r}) + "\n" for s, r in rows)
    metrics += '{"step": 7, "reward": NaN, "loss": Infinity}\n{"step": 8, "reward": 0.6}\n{"step": 9, "rew'
    records = [json.dumps({"step": 0, "pdf": "a.pdf", "page": 1, "reward": r, "completion": f"c{i}"}) for i, r in enumerate([0.25, None])]
    completions = "\n".join(records) + '\n{"step": 0, "pdf": "a.pdf", "page": 1, "reward": Na'
    run = make_run(tmp_path, {"a.pdf": "images/a.png"}, metrics, completions)
    _png(tmp_path / "prep" / "images" / "a.png")
    (run / "train_config.json").write_text('{"prepared_dir": "x", "num_gener')
    res = invoke(["report", run])
    assert res.exit_code == 0, res.output
    for where in (
        f"{run}/logs/metrics.jsonl:9: cut short",
        f"{run}/completions/failing_train.jsonl:3: cut short",
        f"{run}/train_config.json: cannot be read",
    ):
        assert f"warning: {where}" in res.stderr, res.stderr
    html = (run / "report.html").read_text()
    reward = re.search(r'<figure class="chart" data-metric="reward">.*?</figure>', html).group(0)
    lines = re.findall(r"<polyline[^>]*>", reward)
    assert len(lines) == 2  # steps 1-2 | gap (3, 4) | 5-6 | gap (7) | 8: two pieces of line and a lone point
    assert sorted(map(float, re.findall(r'data-step="([^"]+)"', reward))) == [1.0, 2.0, 5.0, 6.0, 8.0]
    assert "rewards of the 2 recorded completions" in html and ">?</span>" in html.split("rewards of the 2")[1][:400]


# ---------------------------------------------------------------------------------------------
# Every command on every hostile folder (benchmarks/hostile_folders.py)


def test_hostile_folders_script(tmp_path):
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        import hostile_folders
    finally:
        sys.path.pop(0)
    rows = hostile_folders.run_all(tmp_path)
    bad = [r for r in rows if not r.ok]
    assert rows and not bad, "\n".join(hostile_folders.table(bad))


def test_bench_report_renders_only_pdfs_in_the_bench_folder(bench, tmp_path):
    shutil.copy(bench / "pdfs" / "letter.pdf", tmp_path / "outside.pdf")
    with (bench / "letter_tests.jsonl").open("a") as f:
        f.write('{"pdf": "../../outside.pdf", "page": 1, "id": "out", "type": "present", "text": "Dear"}\n')
    report = tmp_path / "r" / "report.html"
    res = invoke(["bench", bench, "--report", report, "--json"])
    assert res.exit_code == 0, res.output
    pages = json.loads(re.search(r"window.REPORT_DATA=(.*);", (tmp_path / "r" / "report_files" / "data.js").read_text()).group(1))["pages"]
    images = {p[0]: p[2] for p in pages}
    assert images["../../outside.pdf"] is None and images["letter.pdf"]
