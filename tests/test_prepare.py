"""`olmocr-rl prepare`: validation report, rendered pages, resume, prompts, eval split."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from clirun import invoke
from PIL import Image

from olmocr_rl import BenchSuite
from olmocr_rl.front_matter import FIELDS
from olmocr_rl.prepare import (
    PrepareError,
    PrepareOptions,
    page_scale,
    prepare,
)
from olmocr_rl.prepared import read_manifest, read_split
from olmocr_rl.prompts import DEFAULT_PROMPT, read_prompt_file

FIXTURES = Path(__file__).resolve().parent.parent / "bench_fixtures"

_spec = importlib.util.spec_from_file_location("make_pdfs", FIXTURES / "make_pdfs.py")
assert _spec and _spec.loader
make_pdfs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_pdfs)


def pdf_bytes(n_pages: int, *, landscape: bool = False) -> bytes:
    data = make_pdfs.make_pdf([[f"Page {i + 1} of {n_pages}", "Some text on the page."] for i in range(n_pages)])
    if landscape:  # same length, so the cross-reference offsets stay exact
        data = data.replace(b"/MediaBox [0 0 612 792]", b"/MediaBox [0 0 792 612]").replace(b"72 720 Td", b"72 560 Td")
    return data


def copy_bench(dst: Path) -> Path:
    """The shared fixture bench folder (tests and PDFs, no candidates)."""
    shutil.copytree(FIXTURES / "pdfs", dst / "pdfs")
    for f in FIXTURES.glob("*.jsonl"):
        shutil.copy(f, dst / f.name)
    return dst


def jsonl(records: list[dict | str]) -> str:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records)


@pytest.fixture
def broken_bench(tmp_path: Path) -> Path:
    """bench_fixtures plus: a corrupt PDF, a missing PDF, an out-of-range page, a non-integer
    page, invalid and duplicate test lines, a non-UTF-8 line, a PDF with an untested page, a
    landscape PDF, and a PDF no test names."""
    bench = copy_bench(tmp_path / "bench")
    (bench / "pdfs" / "corrupt.pdf").write_bytes(b"%PDF-1.4\nthis is not a PDF at all\n")
    (bench / "pdfs" / "notes.pdf").write_bytes(pdf_bytes(3))
    (bench / "pdfs" / "wide.pdf").write_bytes(pdf_bytes(1, landscape=True))
    (bench / "pdfs" / "unused.pdf").write_bytes(pdf_bytes(1))
    lines = [
        {"pdf": "notes.pdf", "page": 1, "id": "notes_p1", "type": "present", "text": "Page 1 of 3"},  # 1
        {"pdf": "notes.pdf", "page": 3, "id": "notes_p3", "type": "present", "text": "Page 3 of 3"},  # 2
        "{not json",  # 3: invalid JSON
        {"pdf": "notes.pdf", "page": 1, "id": "notes_bogus", "type": "bogus"},  # 4: unknown type
        {"pdf": "notes.pdf", "page": 1, "id": "notes_p1", "type": "baseline"},  # 5: duplicate id
        {"pdf": "corrupt.pdf", "page": 1, "id": "corrupt_p1", "type": "present", "text": "anything"},  # 6
        {"pdf": "ghost.pdf", "page": 1, "id": "ghost_p1", "type": "present", "text": "nowhere"},  # 7
        {"pdf": "letter.pdf", "page": 5, "id": "letter_p5", "type": "present", "text": "past the end"},  # 8
        {"pdf": "letter.pdf", "page": "1", "id": "letter_strpage", "type": "baseline"},  # 9
        {"pdf": "wide.pdf", "page": 1, "id": "wide_p1", "type": "order", "before": "Page 1", "after": "Some text"},  # 10
        {"pdf": "notes.pdf", "page": 3, "id": "notes_empty", "type": "present", "text": "**"},  # 11: empty after normalizing
    ]
    text = jsonl(lines).encode() + b'{"pdf": "notes.pdf", "page": 3, "id": "bad\xff", "type": "baseline"}\n'  # 12
    (bench / "extra_tests.jsonl").write_bytes(text)
    return bench


def read_rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def tree(root: Path) -> dict[str, bytes]:
    """Every file's bytes; prepared.json without the worker count (it changes no output)."""
    files = {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
    meta = json.loads(files["prepared.json"])
    del meta["options"]["workers"]
    files["prepared.json"] = json.dumps(meta).encode()
    return files


def test_broken_inputs_are_reported_exactly_and_the_rest_prepared(broken_bench: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = prepare(broken_bench, out, PrepareOptions(workers=2))
    report = json.loads((out / "report.json").read_text())
    extra = str(broken_bench / "extra_tests.jsonl")

    assert [(e["file"], e["line"], e["id"]) for e in report["rejected_tests"]] == [
        (extra, 12, None),  # not UTF-8 (reported while reading, before parsing)
        (extra, 3, None),
        (extra, 4, "notes_bogus"),
        (extra, 11, "notes_empty"),
    ]
    assert "not UTF-8" in report["rejected_tests"][0]["reason"]
    assert "invalid JSON" in report["rejected_tests"][1]["reason"]
    assert [(e["file"], e["line"], e["id"]) for e in report["duplicate_ids"]] == [(extra, 5, "notes_p1")]
    assert [(e["pdf"], e["tests"]) for e in report["missing_pdfs"]] == [("ghost.pdf", ["ghost_p1"])]
    assert [(e["pdf"], e["tests"]) for e in report["unreadable_pdfs"]] == [("corrupt.pdf", ["corrupt_p1"])]
    assert [(e["pdf"], e["page"], e["page_count"], e["tests"]) for e in report["pages_out_of_range"]] == [
        ("letter.pdf", 5, 1, ["letter_p5"]),
    ]
    assert [(e["pdf"], e["pages"]) for e in report["pages_without_tests"]] == [("notes.pdf", [2])]
    assert [e["pdf"] for e in report["pdfs_without_tests"]] == ["unused.pdf"]
    assert report["render_failures"] == []
    assert report["problems"] == 4 + 1 + 1 + 1 + 1 + 1 == result.report.problems

    # Everything else is present: every valid page, all of its tests, sorted by (pdf, page).
    rows = read_split(out, "train")
    assert [(r["pdf"], r["page"]) for r in rows] == [
        ("letter.pdf", 1),
        ("notes.pdf", 1),
        ("notes.pdf", 3),
        ("reports/annual_report.pdf", 1),
        ("reports/annual_report.pdf", 2),
        ("sample_paper.pdf", 1),
        ("wide.pdf", 1),
    ]
    fixture_suite = BenchSuite.load(FIXTURES)
    by_page = {(r["pdf"], r["page"]): r for r in rows}
    # a page given as a string of digits is that page, as the suite loader and the reference take it
    assert "letter_strpage" in by_page[("letter.pdf", 1)]["test_ids"]
    for test_id in fixture_suite.ids:
        info = fixture_suite.info(test_id)
        assert test_id in by_page[(info.pdf, info.page)]["test_ids"]
    assert by_page[("notes.pdf", 1)]["test_ids"] == ["notes_p1"]
    assert by_page[("notes.pdf", 1)]["jsonl_file"] == "extra_tests.jsonl"
    # letter.pdf page 1 has tests in two files (letter_strpage in extra_tests.jsonl): the row names the first
    assert by_page[("letter.pdf", 1)]["jsonl_file"] == "extra_tests.jsonl"
    for r in rows:
        assert (out / r["image"]).is_file()
    assert read_split(out, "eval") == []

    # tests/ holds exactly the tests the rows use, and loads strictly.
    used = {i for r in rows for i in r["test_ids"]}
    suite = BenchSuite.load(out / "tests")
    assert set(suite.ids) == used and len(suite) == len(used)
    assert sorted(p.name for p in (out / "tests").iterdir()) == sorted(
        ["extra_tests.jsonl", "letter_tests.jsonl", "report_tests.jsonl", "text_tests.jsonl"]
    )
    meta = read_manifest(out)
    assert meta["splits"] == {"train": 7, "eval": 0}
    assert meta["bench_dir"] == str(broken_bench.resolve())


def test_cli_prints_report_and_strict_fails(broken_bench: Path, tmp_path: Path) -> None:
    res = invoke(["prepare", str(broken_bench), str(tmp_path / "a"), "--quiet", "--workers", "1"], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    for word in ("missing PDF", "ghost.pdf", "unreadable PDF", "corrupt.pdf", "duplicate id", "extra_tests.jsonl:3"):
        assert word in res.output
    res = invoke(["prepare", str(broken_bench), str(tmp_path / "b"), "--quiet", "--strict", "--workers", "1"], env={"COLUMNS": "200"})
    assert res.exit_code == 1
    assert "--strict" in res.output
    clean = copy_bench(tmp_path / "clean")
    res = invoke(["prepare", str(clean), str(tmp_path / "c"), "--quiet", "--strict", "--workers", "1"])
    assert res.exit_code == 0, res.output


def test_user_errors_are_one_line(tmp_path: Path) -> None:
    bench = copy_bench(tmp_path / "bench")
    for args, message in [
        ([str(tmp_path / "nowhere")], "not a folder"),
        ([str(bench), "--jsonl-filter", "zzz"], "no JSONL file name matches"),
        ([str(bench), "--jsonl-filter", "("], "invalid --jsonl-filter regex"),
        ([str(bench), "--type-filter", "presnt"], "unknown test type 'presnt'"),
        ([str(bench), "--eval-fraction", "1.5"], "--eval-fraction"),
        ([str(bench), "--prompt-file", str(tmp_path / "none.txt")], "none.txt"),
    ]:
        res = invoke(["prepare", args[0], str(tmp_path / "out"), *args[1:], "--quiet"])
        assert res.exit_code == 1, args
        assert res.output.startswith("error: ") and message in res.output, res.output
    (tmp_path / "empty").mkdir()
    with pytest.raises(PrepareError, match="no pdfs/ folder"):
        prepare(tmp_path / "empty", tmp_path / "out")
    with pytest.raises(ValueError, match="no prepared.json"):
        read_split(tmp_path / "empty", "train")


def test_image_sizes(broken_bench: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    rows = {(r["pdf"], r["page"]): r for r in prepare(broken_bench, out, PrepareOptions(workers=1)).train}
    for r in rows.values():
        with Image.open(out / r["image"]) as im:
            assert im.format == "PNG" and im.mode == "RGB"
            assert im.size == (r["width"], r["height"])
            assert max(im.size) == 1288
            assert im.getextrema()[0][0] < 64  # some ink: the page text was drawn
        assert "image_tokens" not in r  # the model's processor decides them (olmocr_rl/image_tokens.py)
    assert (rows[("letter.pdf", 1)]["width"], rows[("letter.pdf", 1)]["height"]) == (996, 1288)  # 612x792 pt
    assert (rows[("wide.pdf", 1)]["width"], rows[("wide.pdf", 1)]["height"]) == (1288, 996)
    assert rows[("letter.pdf", 1)]["image"] == "images/letter_pg1.png"
    assert rows[("reports/annual_report.pdf", 2)]["image"] == "images/reports/annual_report_pg2.png"

    # Another size in the same folder re-renders (the old images no longer fit).
    result = prepare(broken_bench, out, PrepareOptions(workers=1, longest_side=640))
    assert result.rendered == len(rows)
    for r in result.train:
        with Image.open(out / r["image"]) as im:
            assert max(im.size) == 640 and im.size == (r["width"], r["height"])
    assert read_manifest(out)["target_longest_image_dim"] == 640


@pytest.mark.parametrize("size", [(612.0, 792.0), (595.2756, 841.8898), (1000.0, 3.0), (7.0, 7.0), (2383.94, 3370.39)])
@pytest.mark.parametrize("longest", [1288, 1024, 333])
def test_page_scale_gives_the_exact_longest_side(size: tuple[float, float], longest: int) -> None:
    import math

    scale = page_scale(*size, longest)
    assert max(math.ceil(size[0] * scale), math.ceil(size[1] * scale)) == longest


def test_killed_run_resumes_to_the_same_output(tmp_path: Path) -> None:
    """A prepare killed (SIGKILL) while rendering, then run again, gives byte-identical output
    to an uninterrupted run, and does not render again what the killed run finished."""
    bench = tmp_path / "bench"
    (bench / "pdfs").mkdir(parents=True)
    n = 60
    (bench / "pdfs" / "long.pdf").write_bytes(pdf_bytes(n))
    (bench / "long_tests.jsonl").write_text(
        jsonl([{"pdf": "long.pdf", "page": p, "id": f"p{p}", "type": "present", "text": f"Page {p} of {n}"} for p in range(1, n + 1)])
    )
    clean = tmp_path / "clean"
    prepare(bench, clean, PrepareOptions(workers=1))

    out = tmp_path / "out"
    code = "import sys; from olmocr_rl.cli import main; sys.exit(main())"
    proc = subprocess.Popen([sys.executable, "-c", code, "prepare", str(bench), str(out), "--quiet", "--workers", "1"])
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(list((out / "images").glob("*.png"))) < 3:
            time.sleep(0.005)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    finished = len(list((out / "images").glob("*.png")))
    assert 3 <= finished < n, "the run was not interrupted while rendering"
    assert not (out / "prepared.json").exists()
    with pytest.raises(ValueError, match="did not finish"):
        read_split(out, "train")

    result = prepare(bench, out, PrepareOptions(workers=2))
    assert result.rendered == n - finished
    assert tree(out) == tree(clean)

    # A third run renders nothing and still gives the same output.
    assert prepare(bench, out, PrepareOptions(workers=1)).rendered == 0
    assert tree(out) == tree(clean)


def test_interrupted_state_is_repaired(tmp_path: Path) -> None:
    """Lost manifest files, a deleted image, a foreign file where an image belongs, a leftover
    temporary file: a re-run restores exactly the uninterrupted output."""
    bench = copy_bench(tmp_path / "bench")
    clean, out = tmp_path / "clean", tmp_path / "out"
    prepare(bench, clean, PrepareOptions(workers=1))
    prepare(bench, out, PrepareOptions(workers=1))
    for name in ("prepared.json", "train.jsonl", "report.json", "tests/letter_tests.jsonl"):
        (out / name).unlink()
    (out / "images" / "letter_pg1.png").unlink()
    (out / "images" / "sample_paper_pg1.png").write_bytes(b"\x89PNG\r\n truncated")
    (out / ".tmp").mkdir()
    (out / ".tmp" / "123-annual_report_pg1.png").write_bytes(b"partial")
    (out / "tests" / "old_tests.jsonl").write_text('{"pdf": "x.pdf", "page": 1, "id": "old", "type": "baseline"}\n')
    result = prepare(bench, out, PrepareOptions(workers=1))
    assert result.rendered == 2
    assert tree(out) == tree(clean)

    # A PDF replaced after its pages were rendered is rendered again.
    letter = bench / "pdfs" / "letter.pdf"
    letter.write_bytes(pdf_bytes(1))
    later = (out / "images" / "letter_pg1.png").stat().st_mtime_ns + 10**9
    os.utime(letter, ns=(later, later))
    before = (out / "images" / "letter_pg1.png").read_bytes()
    assert prepare(bench, out, PrepareOptions(workers=1)).rendered == 1
    assert (out / "images" / "letter_pg1.png").read_bytes() != before


def test_prompt_files(tmp_path: Path) -> None:
    bench = copy_bench(tmp_path / "bench")
    prompt_file = tmp_path / "prompt.txt"
    prompt_file.write_text("Read this page.\nAnswer in Markdown.\n\n", encoding="utf-8")
    assert read_prompt_file(prompt_file) == "Read this page.\nAnswer in Markdown."
    res = invoke(["prepare", str(bench), str(tmp_path / "out"), "--prompt-file", str(prompt_file), "--quiet", "--workers", "1"])
    assert res.exit_code == 0, res.output
    assert {r["prompt"] for r in read_split(tmp_path / "out", "train")} == {"Read this page.\nAnswer in Markdown."}
    meta = read_manifest(tmp_path / "out")
    assert meta["prompt"] == "Read this page.\nAnswer in Markdown."
    assert meta["options"]["prompt_file"] == str(prompt_file)

    (tmp_path / "latin1.txt").write_bytes("Lis la page, s'il te pla\xeet".encode("latin-1"))
    with pytest.raises(ValueError, match=r"latin1\.txt: prompt file is not UTF-8"):
        read_prompt_file(tmp_path / "latin1.txt")
    (tmp_path / "blank.txt").write_text("\n\n")
    with pytest.raises(ValueError, match=r"blank\.txt: prompt file is empty"):
        read_prompt_file(tmp_path / "blank.txt")


def test_default_prompt_asks_for_the_olmocr_format() -> None:
    for word in (*FIELDS, "YAML", "LaTeX", "HTML", "---"):
        assert word in DEFAULT_PROMPT


def test_default_prompt_is_used(tmp_path: Path) -> None:
    bench = copy_bench(tmp_path / "bench")
    prepare(bench, tmp_path / "out", PrepareOptions(workers=1))
    assert {r["prompt"] for r in read_split(tmp_path / "out", "train")} == {DEFAULT_PROMPT}


def eval_bench(tmp_path: Path, n_pdfs: int = 8) -> Path:
    bench = tmp_path / "bench"
    (bench / "pdfs" / "sub").mkdir(parents=True)
    records = []
    for i in range(n_pdfs):
        key = f"sub/doc{i}.pdf" if i % 2 else f"doc{i}.pdf"
        (bench / "pdfs" / key).write_bytes(pdf_bytes(1 + i % 3))
        records += [{"pdf": key, "page": p, "id": f"d{i}p{p}", "type": "baseline"} for p in range(1, 2 + i % 3)]
    (bench / "a_tests.jsonl").write_text(jsonl(records))
    return bench


def test_eval_split_never_shares_a_pdf(tmp_path: Path) -> None:
    bench = eval_bench(tmp_path)
    all_pages = {(r["pdf"], r["page"]) for r in prepare(bench, tmp_path / "all", PrepareOptions(workers=1)).train}
    for seed in range(4):
        out = tmp_path / f"out{seed}"
        prepare(bench, out, PrepareOptions(workers=1, eval_fraction=0.25, seed=seed))
        train, held = read_split(out, "train"), read_split(out, "eval")
        assert len({r["pdf"] for r in held}) == 2  # 25% of 8 PDFs
        assert not {r["pdf"] for r in train} & {r["pdf"] for r in held}
        assert {(r["pdf"], r["page"]) for r in train + held} == all_pages
        assert train == sorted(train, key=lambda r: (r["pdf"], r["page"]))
        assert held == sorted(held, key=lambda r: (r["pdf"], r["page"]))
        assert read_manifest(out)["splits"] == {"train": len(train), "eval": len(held)}
    # Deterministic for a seed.
    prepare(bench, tmp_path / "again", PrepareOptions(workers=1, eval_fraction=0.25, seed=3))
    assert read_split(tmp_path / "again", "eval") == read_split(tmp_path / "out3", "eval")


def test_separate_eval_folder(tmp_path: Path) -> None:
    bench = copy_bench(tmp_path / "bench")
    held = tmp_path / "held"
    (held / "pdfs").mkdir(parents=True)
    (held / "pdfs" / "letter.pdf").write_bytes(pdf_bytes(1))  # same key as a training PDF
    (held / "letter_tests.jsonl").write_text(
        jsonl(
            [
                {"pdf": "letter.pdf", "page": 1, "id": "held_p1", "type": "present", "text": "Page 1 of 1"},
                {"pdf": "letter.pdf", "page": 1, "id": "letter_present_salutation", "type": "baseline"},  # clashes with train
            ]
        )
    )
    out = tmp_path / "out"
    result = prepare(bench, out, PrepareOptions(workers=1, eval_dir=str(held)))
    assert [(r["pdf"], r["image"], r["jsonl_file"], r["test_ids"]) for r in result.eval] == [
        ("letter.pdf", "eval_images/letter_pg1.png", "eval_letter_tests.jsonl", ["held_p1"])
    ]
    assert [(e["file"], e["line"]) for e in result.report.duplicate_ids] == [(str(held.resolve() / "letter_tests.jsonl"), 2)]
    suite = BenchSuite.load(out / "tests")
    assert "held_p1" in suite and suite.info("held_p1").source.endswith("eval_letter_tests.jsonl")
    assert (out / "eval_images" / "letter_pg1.png").is_file() and (out / "images" / "letter_pg1.png").is_file()
    assert read_manifest(out)["options"]["eval_dir"] == str(held.resolve())


def test_filters_and_max_pages(tmp_path: Path) -> None:
    bench = copy_bench(tmp_path / "bench")
    result = prepare(bench, tmp_path / "a", PrepareOptions(workers=1, jsonl_filter="REPORT|letter"))
    assert {r["jsonl_file"] for r in result.train} == {"report_tests.jsonl", "letter_tests.jsonl"}
    assert result.report.summary["jsonl_files_excluded"] == ["text_tests.jsonl"]
    assert sorted(p.name for p in (tmp_path / "a" / "tests").iterdir()) == ["letter_tests.jsonl", "report_tests.jsonl"]

    result = prepare(bench, tmp_path / "b", PrepareOptions(workers=1, type_filter=["footnote", "baseline"]))
    suite = BenchSuite.load(tmp_path / "b" / "tests")
    assert {suite.info(i).type for i in suite.ids} == {"footnote", "baseline"}
    # annual_report page 1 has neither type: dropped; page 2 has a baseline test.
    assert [(r["pdf"], r["page"]) for r in result.train] == [
        ("letter.pdf", 1),
        ("reports/annual_report.pdf", 2),
        ("sample_paper.pdf", 1),
    ]
    assert result.report.summary["tests_excluded_by_type"]["present"] > 0
    assert result.report.summary["pages_excluded_by_type"] == 1

    result = prepare(bench, tmp_path / "c", PrepareOptions(workers=1, max_pages=2))
    assert [(r["pdf"], r["page"]) for r in result.train] == [("letter.pdf", 1), ("reports/annual_report.pdf", 1)]
    assert len(list((tmp_path / "c" / "images").rglob("*.png"))) == 2


def test_prepared_tests_score_like_the_bench(tmp_path: Path) -> None:
    """The rows' tests, loaded from OUT_DIR/tests, give the same verdicts on the demo model's
    pages as the bench folder's own JSONL (the records are copied verbatim)."""
    out = tmp_path / "out"
    prepare(FIXTURES, out, PrepareOptions(workers=1))
    ours, theirs = BenchSuite.load(out / "tests"), BenchSuite.load(FIXTURES)
    rows = read_split(out, "train")
    assert {i for r in rows for i in r["test_ids"]} == set(theirs.ids)
    for r in rows:
        md = FIXTURES / "demo_model" / f"{r['pdf'][: -len('.pdf')]}_pg{r['page']}_repeat1.md"
        text = md.read_text(encoding="utf-8")
        got = ours.score([text], [r["test_ids"]], details=True)[0]
        want = theirs.score([text], [r["test_ids"]], details=True)[0]
        assert got == want
        assert 0 < got.total == len(r["test_ids"])
        for test_id in r["test_ids"]:
            assert ours.info(test_id)._replace(source="", line=0) == theirs.info(test_id)._replace(source="", line=0)


@pytest.mark.parametrize("workers", [1, 2])
def test_ctrl_c_says_what_was_kept_and_how_to_go_on(tmp_path: Path, workers: int) -> None:
    """Ctrl-C (SIGINT to the command's process group, as a terminal sends it) while rendering: status
    130 and one line that says the folder is unfinished, how many rendered pages it keeps (as many
    as are there: the render workers start no page after it) and that the same command reuses them,
    which the re-run does. Before the folder is touched: that nothing was written."""
    bench = tmp_path / "bench"
    (bench / "pdfs").mkdir(parents=True)
    n = 150
    (bench / "pdfs" / "long.pdf").write_bytes(pdf_bytes(n))
    (bench / "long_tests.jsonl").write_text(
        jsonl([{"pdf": "long.pdf", "page": p, "id": f"p{p}", "type": "present", "text": f"Page {p}"} for p in range(1, n + 1)])
    )
    out = tmp_path / "out"
    code = "import sys; from olmocr_rl.cli import main; sys.exit(main())"
    argv = [sys.executable, "-c", code, "prepare", str(bench), str(out), "--quiet", "--workers", str(workers)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(list((out / "images").glob("*.png"))) < 3 and proc.poll() is None:
            time.sleep(0.005)
        os.killpg(proc.pid, signal.SIGINT)
        printed = proc.communicate(timeout=120)[0]
    finally:
        if proc.poll() is None:
            proc.kill()
    kept = len(list((out / "images").glob("*.png")))
    assert 3 <= kept < n, "the run was not interrupted while rendering"
    assert proc.returncode == 130, printed
    assert printed.strip().splitlines()[-1] == (
        f"error: interrupted (SIGINT): {out} is unfinished (no prepared.json: train refuses it); {kept} rendered page(s) are "
        "kept there, and the same command again reuses them and renders only the rest"
    ), printed
    assert not (out / "prepared.json").exists()
    result = prepare(bench, out, PrepareOptions(workers=1))
    assert result.rendered == n - kept and len(result.train) == n

    from olmocr_rl.prepare import interrupted_message  # the other two states the folder can be in

    assert interrupted_message(out, "SIGINT") == f"interrupted (SIGINT) before anything was changed: {out} is as the last prepare left it"
    assert "before anything was written" in interrupted_message(tmp_path / "none", "SIGTERM")


@pytest.mark.parametrize("workers", [1, 2])
def test_progress_counts_every_page(tmp_path: Path, workers: int) -> None:
    bench = eval_bench(tmp_path)
    seen: list[int] = []
    result = prepare(bench, tmp_path / "out", PrepareOptions(workers=workers), on_progress=seen.append)
    assert sum(seen) == len(result.train) == 15 and len(seen) == 8  # one report per PDF task


@pytest.mark.parametrize("victim", ["train.jsonl", "eval.jsonl", "letter_tests.jsonl"])
def test_the_split_and_test_files_are_written_whole_or_not_at_all(tmp_path: Path, monkeypatch, victim: str) -> None:
    """A second prepare into the same folder that stops while a split (or tests) file is being
    written (here: its rename fails) leaves the first run's file as it was, not a mix of the two."""
    bench = copy_bench(tmp_path / "bench")
    out = tmp_path / "out"
    prepare(bench, out, PrepareOptions(workers=1, longest_side=64))
    target = next(p for p in out.rglob(victim))
    before = target.read_bytes()
    real = os.replace

    def interrupted(src, dst):
        if Path(dst).name == victim:
            raise OSError(28, "No space left on device")
        return real(src, dst)

    monkeypatch.setattr(os, "replace", interrupted)
    with pytest.raises(OSError, match="No space left"):  # other rows and tests than the first run's
        prepare(bench, out, PrepareOptions(workers=1, longest_side=64, eval_fraction=0.5, type_filter=["present"]))
    assert target.read_bytes() == before
