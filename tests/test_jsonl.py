"""One JSONL reader (olmocr_rl/jsonl.py) behind `BenchSuite.load`, `validate`, `bench` and
`prepare`: the same lines, numbered the same way (universal newlines, as the reference's text
mode), and an undecodable line named by the same file:line everywhere while the others load."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from clirun import invoke

from olmocr_rl import BenchSuite
from olmocr_rl.jsonl import read_jsonl

ROOT = Path(__file__).resolve().parent.parent


def record(i: int) -> bytes:
    return json.dumps({"pdf": "letter.pdf", "page": 1, "id": f"t{i}", "type": "present", "text": "Dear"}).encode()


def test_lines_and_undecodable_lines(tmp_path):
    f = tmp_path / "t.jsonl"
    f.write_bytes(record(1) + b"\r" + b'{"x": "\xff"}' + b"\r\n" + record(3) + b"\n")
    read = read_jsonl(f)
    assert len(read.lines) == 4 and read.lines[1] == "" and read.lines[3] == ""
    assert read.errors == [(2, "not UTF-8 text (byte 0xff at character 8)")]
    clean = tmp_path / "c.jsonl"
    clean.write_bytes(record(1) + b"\r\n" + record(2))
    assert read_jsonl(clean).text == (record(1) + b"\r\n" + record(2)).decode()  # its own line ends, as the core reads them


def test_every_command_names_the_same_line(tmp_path):
    bench = tmp_path / "bench"
    shutil.copytree(ROOT / "bench_fixtures" / "pdfs", bench / "pdfs")
    # Bare \r line ends (old Mac files): the reference's text mode splits there, so does everyone.
    (bench / "tests.jsonl").write_bytes(record(1) + b"\r" + b'{"x": "\xff"}' + b"\r" + record(3) + b"\r")
    where = f"{bench / 'tests.jsonl'}:2"
    suite = BenchSuite.load(bench / "tests.jsonl", strict=False)
    assert sorted(suite.ids) == ["t1", "t3"] and any(e.startswith(where + ": not UTF-8") for e in suite.errors)
    assert suite.info("t3").line == 3
    res = invoke(["validate", str(bench)])
    assert where in res.output, res.output
    res = invoke(["bench", str(bench)])
    assert res.exit_code == 1 and f"{where}: not UTF-8 text" in res.stderr, res.output
    from olmocr_rl.prepare import PrepareOptions, prepare

    out = prepare(bench, tmp_path / "prep", PrepareOptions(longest_side=64, workers=1), progress=False)
    assert [r for r in out.report.rejected_tests if r["line"] == 2][0]["reason"].startswith("not UTF-8")
    kept = (tmp_path / "prep" / "tests" / "tests.jsonl").read_text().splitlines()
    assert [json.loads(x)["id"] for x in kept] == ["t1", "t3"]  # line 3 is record t3 for prepare too
