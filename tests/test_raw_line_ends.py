"""Test records whose strings hold raw U+2028, U+2029 and U+0085 (JSON allows them raw; Python's
`str.splitlines` splits on them) through `prepare`, `curate`'s split and the final outputs' bench
folder: every reader of a test or prepared file reads lines as the one JSONL reader does (issue 33,
defect 1: `curate` refused its own selection; defect 2: the final outputs raised JSONDecodeError
after training). And the final outputs' files are written whole or not at all (defect 2)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from training import FIXTURES

from olmocr_rl import BenchSuite
from olmocr_rl.prepared import read_split

TESTS = [
    {"pdf": "letter.pdf", "page": 1, "id": "t1", "type": "present", "text": "alpha\u2028beta"},
    {"pdf": "letter.pdf", "page": 1, "id": "t2\u2029", "type": "absent", "text": "gamma\u2029delta"},
    {"pdf": "letter.pdf", "page": 1, "id": "t3", "type": "present", "text": "epsilon\u0085zeta"},
]


@pytest.fixture()
def prepared(tmp_path) -> Path:
    from olmocr_rl.prepare import PrepareOptions, prepare

    bench = tmp_path / "bench"
    (bench / "pdfs").mkdir(parents=True)
    shutil.copyfile(FIXTURES / "pdfs" / "letter.pdf", bench / "pdfs" / "letter.pdf")
    (bench / "tests.jsonl").write_text("".join(json.dumps(t, ensure_ascii=False) + "\n" for t in TESTS), encoding="utf-8")
    prepare(bench, tmp_path / "prep", PrepareOptions(longest_side=64, workers=1), progress=False)
    return tmp_path / "prep"


def records(path: Path) -> list[dict]:
    """A JSONL file's records, its lines split where JSONL splits them: at \\n only."""
    return [json.loads(line) for line in path.read_bytes().decode("utf-8").split("\n") if line.strip()]


def test_prepare_keeps_the_records_whole(prepared):
    assert "\u2028" in (prepared / "tests" / "tests.jsonl").read_text(encoding="utf-8")  # written raw, as given
    assert records(prepared / "tests" / "tests.jsonl") == TESTS
    (row,) = read_split(prepared, "train")
    assert row["test_ids"] == [t["id"] for t in TESTS]
    suite = BenchSuite.load(prepared / "tests")
    assert {i: suite.record(i)["text"] for i in suite.ids} == {t["id"]: t["text"] for t in TESTS}


def test_curate_reads_its_own_selection_back(prepared):
    from olmocr_rl.curate import write_split

    rows = [{**r, "difficulty": {"samples": 2, "mean": 0.5, "std": 0.7, "min": 0.0, "max": 1.0}} for r in read_split(prepared, "train")]
    write_split(prepared, "curated", rows)
    assert "\u2029" in (prepared / "curated.jsonl").read_text(encoding="utf-8")
    write_split(prepared, "curated", rows)  # over its own selection: read first, to tell it is one
    assert read_split(prepared, "curated") == rows


def test_the_final_outputs_bench_folder_keeps_the_records_whole(prepared, tmp_path):
    from olmocr_rl.train.outputs import make_bench_folder

    out = tmp_path / "run"
    out.mkdir()
    layout = make_bench_folder(prepared, out, read_split(prepared, "train"))
    assert layout["tests"] == 3 and layout["test_files"] == ["tests.jsonl"]
    assert (out / "tests.jsonl").read_bytes() == (prepared / "tests" / "tests.jsonl").read_bytes()
    assert records(out / "tests.jsonl") == TESTS
    assert (out / "pdfs" / "letter.pdf").read_bytes() == (FIXTURES / "pdfs" / "letter.pdf").read_bytes()


def test_the_final_outputs_bench_folder_is_written_whole_or_not_at_all(prepared, tmp_path, monkeypatch):
    """A run stopped before a file is complete (here: its rename fails) leaves no half-written
    file: no PDF that a later run would take as copied, no tests file cut short."""
    from olmocr_rl.train.outputs import make_bench_folder

    out = tmp_path / "run"
    (out / "pdfs").mkdir(parents=True)
    (out / "tests.jsonl").write_text("the previous run's tests\n")

    def interrupted(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", interrupted)
    with pytest.raises(OSError, match="No space left"):
        make_bench_folder(prepared, out, read_split(prepared, "train"))
    assert not (out / "pdfs" / "letter.pdf").exists()
    assert (out / "tests.jsonl").read_text() == "the previous run's tests\n"
    monkeypatch.undo()
    assert [p.name for p in out.rglob("*") if p.is_file()] == ["tests.jsonl"]  # no temporary file left
    make_bench_folder(prepared, out, read_split(prepared, "train"))
    assert records(out / "tests.jsonl") == TESTS
