#!/usr/bin/env python3
"""Every command on hostile folders (#29): each must stop with one `error:` line that names the
file (or file:line), or finish and name what it skipped, and must leave the outputs of an earlier
run as they were when it stops.

    python benchmarks/hostile_folders.py [--keep DIR]

The folders (copies of bench_fixtures/, one change each) and what each command must do:

| folder | the change | validate | bench | check | prepare | report |
|---|---|---|---|---|---|---|
| image-outside | a prepared row's image is `../../secret.png` | | | | | warns file:line, no image |
| page-1e20 | a test's page is 100000000000000000000 | lists file:line | error file:line | error file:line | lists file:line | |
| page-regex | a test's page is `"1_|(a|a)*(a|a)*b"` | lists file:line | error file:line | error file:line | lists file:line | |
| pdf-not-utf8 | a PDF named `caf\\xe9.pdf` (Latin-1) | valid | error naming it | valid | error naming it | |
| jsonl-not-utf8 | a test file named `more\\xff.jsonl` | error naming it | error naming it | error naming it | error naming it | |
| candidate-not-utf8 | a candidate folder named `cand\\xff` | valid | warns, JSON valid | | | |
| line-not-utf8 | a test line with the byte 0xff | lists file:line | error file:line | error file:line | lists file:line | |

Each command runs in its own process (as a user runs it: a real stdout, which cannot print a
lone surrogate), with outputs of an earlier run in place: bench's `--details` file, prepare's
output folder, report's `-o` file. Prints one row per (folder, command); exits 1 if any row is
wrong. `tests/test_hostile_folders.py` runs it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "bench_fixtures"
EARLIER = "an earlier run's output\n"


@dataclass
class Row:
    folder: str
    command: str
    want: str  # "error": one error line naming `needle`; "listed": exit 1, needle on stderr; "warning"/"ok": exit 0
    needle: str
    exit_code: int = 0
    said: str = ""
    ok: bool = False
    why: str = ""


def _copy(root: Path, name: str) -> Path:
    bench = root / name
    shutil.copytree(FIXTURES, bench, ignore=shutil.ignore_patterns("__pycache__", "*.py", "*.yaml"))
    return bench


def _append(bench: Path, line: bytes) -> str:
    tests = bench / "letter_tests.jsonl"
    n = len(tests.read_bytes().splitlines()) + 1
    with tests.open("ab") as f:
        f.write(line + b"\n")
    return f"{tests}:{n}"


def _page(page: str):
    def build(bench: Path) -> str:
        line = f'{{"pdf": "letter.pdf", "page": {page}, "id": "hostile", "type": "present", "text": "x"}}'
        return _append(bench, line.encode())

    return build


def _pdf_not_utf8(bench: Path) -> str:
    shutil.copy(bench / "pdfs" / "letter.pdf", bench / "pdfs" / os.fsdecode(b"caf\xe9.pdf"))
    return "caf\\xe9.pdf"


def _jsonl_not_utf8(bench: Path) -> str:
    shutil.copy(bench / "letter_tests.jsonl", bench / os.fsdecode(b"more\xff.jsonl"))
    return "more\\xff.jsonl"


def _candidate_not_utf8(bench: Path) -> str:
    (bench / "other_model").rename(bench / os.fsdecode(b"cand\xff"))
    return "cand\\xff"


def _line_not_utf8(bench: Path) -> str:
    return _append(bench, b'{"pdf": "letter.pdf", "page": 1, "id": "caf\xe9", "type": "present", "text": "x"}')


# folder -> (how to build it, what each command must do: "error" / "listed" / "warning" / "ok")
FOLDERS = {
    "page-1e20": (_page("100000000000000000000"), {"validate": "listed", "bench": "error", "check": "error", "prepare": "warning"}),
    "page-regex": (_page('"1_|(a|a)*(a|a)*b"'), {"validate": "listed", "bench": "error", "check": "error", "prepare": "warning"}),
    "pdf-not-utf8": (_pdf_not_utf8, {"validate": "ok", "bench": "error", "check": "ok", "prepare": "error"}),
    "jsonl-not-utf8": (_jsonl_not_utf8, {"validate": "error", "bench": "error", "check": "error", "prepare": "error"}),
    "candidate-not-utf8": (_candidate_not_utf8, {"validate": "ok", "bench": "warning"}),
    "line-not-utf8": (_line_not_utf8, {"validate": "listed", "bench": "error", "check": "error", "prepare": "warning"}),
}


def _run(args: list[object]) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]), COLUMNS="200")
    cmd = [sys.executable, "-m", "olmocr_rl.cli", *map(str, args)]
    return subprocess.run(cmd, capture_output=True, env=env, timeout=300)


def _judge(row: Row, proc: subprocess.CompletedProcess, intact: bool) -> Row:
    out = proc.stdout.decode("utf-8", "replace")
    err = proc.stderr.decode("utf-8", "replace")
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    row.exit_code = proc.returncode
    named = [line.strip(" │|") for line in (err + out).splitlines() if row.needle in line]
    row.said = (errors or named or [""])[0][:110]
    problems = []
    if "Traceback" in err or "unexpected" in err:
        problems.append("crashed")
    if row.want == "error":
        if proc.returncode != 1 or len(errors) != 1 or row.needle not in errors[0]:
            problems.append(f"wanted one error line naming {row.needle}")
    elif row.want == "listed":
        if proc.returncode != 1 or row.needle not in err:
            problems.append(f"wanted exit 1 and {row.needle} named")
    else:
        if proc.returncode != 0:
            problems.append("wanted success")
        if row.want == "warning" and row.needle not in out + err:
            problems.append(f"wanted {row.needle} named")
    if row.command == "bench" and row.want == "warning":
        try:
            json.loads(out)
        except ValueError:
            problems.append("--json is not valid JSON")
    if not intact:
        problems.append("an earlier output was changed")
    row.ok, row.why = not problems, "; ".join(problems)
    return row


def _bench_rows(root: Path, name: str) -> list[Row]:
    build, wants = FOLDERS[name]
    bench = _copy(root, name)
    needle = build(bench)
    short = needle.replace(str(bench) + os.sep, "")  # prepare's table names files relative to the folder
    page = bench / "demo_model" / "letter_pg1_repeat1.md"
    details, out = root / f"{name}.details.jsonl", root / f"{name}.prepared"
    details.write_text(EARLIER)
    out.mkdir()
    (out / "earlier.txt").write_text(EARLIER)
    commands = {
        "validate": ["validate", bench],
        "bench": ["bench", bench, "--json", "--details", details],
        "check": ["check", bench, page, "--pdf", "letter.pdf"],
        "prepare": ["prepare", bench, out, "--longest-side", "64", "--workers", "1", "--quiet"],
    }
    rows = []
    for command, want in wants.items():
        proc = _run(commands[command])
        failed = proc.returncode != 0
        intact = (out / "earlier.txt").read_text() == EARLIER and (not failed or details.read_text() == EARLIER)
        rows.append(_judge(Row(name, command, want, short if command == "prepare" and want == "warning" else needle), proc, intact))
    return rows


def _report_rows(root: Path) -> list[Row]:
    """A run whose prepared row names an image out of the prepared folder: the report is
    written, with a warning naming file:line, and the page shown without it."""
    from PIL import Image

    prep, run = root / "image-outside" / "prep", root / "image-outside" / "run"
    (prep / "images").mkdir(parents=True)
    Image.new("RGB", (30, 40), (200, 0, 0)).save(root / "secret.png")
    (prep / "train.jsonl").write_text(json.dumps({"pdf": "a.pdf", "page": 1, "image": "../../secret.png"}) + "\n")
    (run / "logs").mkdir(parents=True)
    (run / "completions").mkdir()
    (run / "logs" / "metrics.jsonl").write_text('{"step": 1, "reward": 0.5}\n{"step": 2, "rew')
    (run / "completions" / "failing_train.jsonl").write_text(json.dumps({"step": 0, "pdf": "a.pdf", "page": 1, "reward": 0.5}) + "\n")
    (run / "train_config.json").write_text(json.dumps({"prepared_dir": str(prep)}))
    target = root / "image-outside.html"
    proc = _run(["report", run, "-o", target])
    row = _judge(Row("image-outside", "report", "warning", f"{prep / 'train.jsonl'}:1"), proc, True)
    html = target.read_text(encoding="utf-8") if target.is_file() else ""
    if row.ok and "data:image" in html:
        row.ok, row.why = False, "the image out of the prepared folder was embedded"
    return [row]


def run_all(root: Path) -> list[Row]:
    rows = _report_rows(root)
    for name in FOLDERS:
        rows += _bench_rows(root, name)
    return rows


def table(rows: list[Row]) -> list[str]:
    lines = ["| folder | command | wanted | exit | ok | what it said |", "|---|---|---|---:|---|---|"]
    for r in rows:
        said = r.said.replace("|", "\\|")
        lines.append(f"| {r.folder} | {r.command} | {r.want} | {r.exit_code} | {'yes' if r.ok else 'NO: ' + r.why} | {said} |")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--keep", type=Path, help="Build the folders here and keep them (default: a temporary folder).")
    args = parser.parse_args()
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=False)
        rows = run_all(args.keep)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            rows = run_all(Path(tmp))
    print("\n".join(table(rows)))
    return 0 if all(r.ok for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
