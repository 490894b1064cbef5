"""Loading test JSONL: folders, errors naming file:line and id, duplicates, strictness, CLI."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from clirun import invoke

from olmocr_rl import BenchSuite, SuiteError

FIXTURES = Path(__file__).parent.parent / "bench_fixtures"


def rec(i, **kw):
    base = {"pdf": "a.pdf", "page": 1, "id": f"t{i}", "type": "present", "text": "hello"}
    base.update(kw)
    return json.dumps(base)


def test_load_folder_reads_every_top_level_jsonl(tmp_path):
    (tmp_path / "a.jsonl").write_text(rec(1) + "\n" + rec(2, type="absent") + "\n")
    (tmp_path / "b.jsonl").write_text(rec(3, type="baseline", text=None).replace(', "text": null', "") + "\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "c.jsonl").write_text(rec(4) + "\n")
    suite = BenchSuite.load(tmp_path)
    assert sorted(suite.ids) == ["t1", "t2", "t3"]
    assert suite.info("t3").type == "baseline"
    assert suite.info("t1").source.endswith("a.jsonl") and suite.info("t1").line == 1


def test_bad_lines_are_all_reported_with_file_line_and_id(tmp_path):
    lines = [rec(1), rec(2, text="**"), "{not json", rec(4, max_diffs=1.0), "", rec(6)]
    f = tmp_path / "tests.jsonl"
    f.write_text("\n".join(lines) + "\n")
    with pytest.raises(SuiteError) as e:
        BenchSuite.load(f)
    errs = e.value.errors
    assert len(errs) == 3
    assert errs[0].startswith(f"{f}:2: test 't2': ")
    assert errs[1].startswith(f"{f}:3: invalid JSON")
    assert errs[2].startswith(f"{f}:4: test 't4': ")
    with pytest.warns(UserWarning, match="skipped 3 invalid"):
        suite = BenchSuite.load(f, strict=False)
    assert suite.ids == ["t1", "t6"]
    assert len(suite.errors) == 3


def test_duplicate_ids_are_errors_naming_both_places(tmp_path):
    (tmp_path / "a.jsonl").write_text(rec(1) + "\n")
    (tmp_path / "b.jsonl").write_text("\n" + rec(1, text="other") + "\n")
    with pytest.raises(SuiteError, match=r"b\.jsonl:2: test 't1': duplicate test id \(first defined at .*a\.jsonl:1\)"):
        BenchSuite.load(tmp_path)


def test_universal_newlines_in_jsonl():
    suite = BenchSuite.from_jsonl(rec(1) + "\r" + rec(2) + "\r\n" + rec(3))
    assert suite.ids == ["t1", "t2", "t3"]
    assert suite.info("t3").line == 3


def test_unknown_id_and_math():
    suite = BenchSuite.from_jsonl(rec(1) + "\n" + rec(2, type="math", math="x^2", text=None).replace(', "text": null', ""))
    with pytest.raises(KeyError):
        suite.check("nope", "text")
    assert suite.check("t2", "$x^2$").passed  # every type has a check (math: see test_math.py)


def test_missing_paths_are_clear(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file"):
        BenchSuite.load(tmp_path / "missing.jsonl")
    with pytest.raises(FileNotFoundError, match="no \\*.jsonl"):
        BenchSuite.load(tmp_path)


def test_run_errors_are_reported_not_raised():
    suite = BenchSuite.from_jsonl(
        rec(1, first_n="5") + "\n" + rec(2, type="baseline", text=None, max_repeats="x").replace(', "text": null', "")
    )
    r = suite.check("t1", "hello world")
    assert (r.passed, r.error) == (False, True) and "TypeError" in r.explanation
    r = suite.check("t2", "hello world")
    assert (r.passed, r.error) == (False, True)


def test_cli_validate_and_check():
    out = invoke(["validate", str(FIXTURES)])
    assert out.exit_code == 0, out.output
    assert "valid tests" in out.output
    page = FIXTURES / "demo_model" / "sample_paper_pg1_repeat1.md"
    out = invoke(["check", str(FIXTURES), str(page), "--pdf", "sample_paper.pdf", "--json"])
    assert out.exit_code == 0, out.output
    rows = [json.loads(line) for line in out.output.splitlines()]
    verdicts = {r["id"]: r["passed"] for r in rows}
    assert verdicts["sample_paper_present_title"] is True
    assert verdicts["sample_paper_present_caption"] is False
    out = invoke(["check", str(FIXTURES), str(page), "--test", "nope"])
    assert out.exit_code == 1


def test_cli_validate_reports_bad_lines(tmp_path):
    f = tmp_path / "t.jsonl"
    f.write_text(rec(1) + "\n" + rec(2, type="format", format="underline") + "\n")
    out = invoke(["validate", str(f)])
    assert out.exit_code == 1
    assert f"{f}:2: test 't2': Invalid format type" in out.output


def test_help_and_version_do_not_import_heavy_modules():
    heavy = "{'torch', 'trl', 'transformers', 'deepspeed', 'datasets'}"
    for argv, first in ((["--version"], "olmocr-rl "), (["--help"], "Usage: olmocr-rl"), (["bench", "--help"], "Usage: olmocr-rl bench")):
        code = (
            f"import sys; from olmocr_rl.cli import main; rc = main({argv!r}); "
            f"assert rc == 0, rc; assert not {heavy} & set(sys.modules), sorted({heavy} & set(sys.modules))"
        )
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert out.returncode == 0 and out.stdout.strip().startswith(first), (argv, out.stdout, out.stderr)


def test_usage_errors_exit_2_with_the_reason():
    out = invoke(["bench", "x", "--workers", "0"])
    assert out.exit_code == 2 and "Invalid value for '--workers'" in out.stderr
    out = invoke(["validate", "x", "stray"])
    assert out.exit_code == 2 and "unexpected extra argument" in out.stderr and "stray" in out.stderr
    out = invoke(["nosuch"])
    assert out.exit_code == 2 and "No such command 'nosuch'" in out.stderr
    out = invoke(["train", "x", "--zero", "4"])
    assert out.exit_code == 2 and "Invalid value for '--zero'" in out.stderr


def test_the_thread_count_is_resolved_once_and_bounded(monkeypatch):
    """Python decides the Rust pool's size (the core no longer reads the environment): the
    argument, else OLMOCR_RL_THREADS, else the usable cores over the local ranks; a count far above
    the cores (16 MiB of stack each: 4000 threads took 12-35 s for 4 pages) is refused by name."""
    import pytest

    from olmocr_rl.errors import UserError
    from olmocr_rl.suite import MAX_THREADS_PER_CORE, check_threads, usable_cores

    monkeypatch.delenv("OLMOCR_RL_THREADS", raising=False)
    monkeypatch.delenv("LOCAL_WORLD_SIZE", raising=False)
    cores = usable_cores()
    assert check_threads(None) == cores and check_threads(3) == 3
    monkeypatch.setenv("LOCAL_WORLD_SIZE", str(cores * 2))
    assert check_threads(None) == 1
    monkeypatch.setenv("OLMOCR_RL_THREADS", "2")
    assert check_threads(None) == 2
    monkeypatch.setenv("OLMOCR_RL_THREADS", "4000")
    with pytest.raises(UserError, match=rf"OLMOCR_RL_THREADS=4000: more than {MAX_THREADS_PER_CORE} threads for each of the {cores} cores"):
        check_threads(None)
    with pytest.raises(UserError, match=r"threads=100000: more than"):
        check_threads(100_000)
    monkeypatch.setenv("OLMOCR_RL_THREADS", "many")
    with pytest.raises(UserError, match="expected a positive integer"):
        check_threads(None)
