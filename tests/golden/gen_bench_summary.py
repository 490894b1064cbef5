#!/usr/bin/env python3
"""Regenerates tests/golden/bench_summary.json: what the upstream olmOCR-bench runner prints on
our bench fixtures, parsed into JSON. Dev machines only (CI never runs the reference):

    python tests/golden/gen_bench_summary.py OLMOCR_TREE [--python PYTHON]

PYTHON must have the reference's bench dependencies (see run_reference_bench.py). Each case
copies its fixture to a temporary folder, runs `olmocr.bench.benchmark` there, and records the
exit code and, per candidate, the [ERROR]/[FAIL] lines and the final summary (status, per type,
per JSONL). The bootstrap CI is recorded but not compared (the reference's is unseeded).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent

# (name, fixture folder relative to the repo, path given as --dir relative to it, extra flags)
CASES = [
    ("fixtures", "bench_fixtures", ".", []),
    ("fixtures_skip_baseline", "bench_fixtures", ".", ["--skip_baseline"]),
    ("fixtures_one_candidate", "bench_fixtures", ".", ["--candidate", "other_model"]),
    ("fixtures_single_jsonl", "bench_fixtures", "letter_tests.jsonl", []),
    ("errors", "tests/fixtures/bench_errors", ".", []),
    ("errors_force", "tests/fixtures/bench_errors", ".", ["--force"]),
]

FAIL = re.compile(
    r"^  \[FAIL\] Test (?P<id>.+?) on (?P<base>.+) page (?P<page>.+?) average pass ratio: (?P<avg>[\d.]+) "
    r"\((?P<passes>\d+)/(?P<repeats>\d+) repeats passed\)\. Ex: (?P<ex>.*)$"
)
AVERAGE = re.compile(r"^  Average Score: (?P<score>[\d.]+)% \(95% CI: \[(?P<lo>[\d.]+)%, (?P<hi>[\d.]+)%\]\) over (?P<n>\d+) tests\.$")
FINAL = re.compile(
    r"^(?P<name>.*?)\s* : Average Score: (?P<status>FAILED \(errors\)|[\d.]+%) ?(?P<ci>.*?) \(average of per-JSONL scores\)$"
)
TYPE = re.compile(r"^    (?P<type>\w+)\s*: (?P<avg>[\d.]+)% average pass rate over (?P<n>\d+) tests$")
JSONL = re.compile(r"^        (?P<file>.+?)\s*: (?P<rate>[\d.]+)% \((?P<passed>\d+)/(?P<total>\d+) tests\)$")


def parse(stdout: str) -> dict:
    cands: dict[str, dict] = {}
    cur = None
    last_fail = None
    final = False
    for line in stdout.splitlines():
        if line.startswith("=" * 60):
            final, cur, last_fail = True, None, None
            continue
        if not final:
            if line.startswith("Candidate: "):
                cur = cands.setdefault(line[len("Candidate: ") :], {"errors": [], "failures": {}})
                last_fail = None
            elif cur is None:
                continue
            elif line.startswith("  [ERROR] "):
                cur["errors"].append(line[len("  [ERROR] ") :])
                last_fail = None
            elif m := FAIL.match(line):
                last_fail = cur["failures"][m["id"]] = {
                    "page": m["page"],
                    "passes": int(m["passes"]),
                    "repeats": int(m["repeats"]),
                    "explanation": m["ex"],
                }
            elif m := AVERAGE.match(line):
                cur["average"] = {"score": m["score"], "ci": [m["lo"], m["hi"]], "tests": int(m["n"])}
                last_fail = None
            elif last_fail is not None and line and not line.startswith("Evaluating candidate"):
                last_fail["explanation"] += "\n" + line  # a multi-line explanation
            continue
        if m := FINAL.match(line):
            cur = cands.setdefault(m["name"], {"errors": [], "failures": {}})
            cur.update(status=m["status"], ci_half_width=m["ci"] or None, by_type={}, by_jsonl={})
        elif cur is not None and (m := TYPE.match(line)):
            cur["by_type"][m["type"]] = {"avg": m["avg"], "tests": int(m["n"])}
        elif cur is not None and (m := JSONL.match(line)):
            cur["by_jsonl"][m["file"]] = {"rate": m["rate"], "passed": int(m["passed"]), "total": int(m["total"])}
    return cands


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("olmocr_tree")
    ap.add_argument("--python", default=sys.executable)
    args = ap.parse_args()
    out = []
    for name, fixture, target, flags in CASES:
        with tempfile.TemporaryDirectory() as tmp:
            copy = Path(tmp) / "bench"
            shutil.copytree(REPO / fixture, copy)
            cmd = [args.python, str(HERE / "run_reference_bench.py"), args.olmocr_tree, "--", "--dir", str(copy / target), *flags]
            p = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp)
            stdout = p.stdout.replace(str(copy) + "/", "")  # paths relative to the fixture
        case = {"case": name, "fixture": fixture, "dir": target, "flags": flags, "exit_code": p.returncode, "candidates": parse(stdout)}
        if p.returncode:
            case["message"] = (stdout.strip().splitlines() or p.stderr.strip().splitlines() or [""])[-1]
        out.append(case)
        print(f"{name}: exit {p.returncode}, {len(case['candidates'])} candidates", file=sys.stderr)
    (HERE / "bench_summary.json").write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
