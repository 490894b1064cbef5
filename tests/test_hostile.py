"""Hostile model output and hostile callers: no crash whatever thread calls in, clear errors for
inputs a reward cannot score. (Each crash probe runs in a subprocess: a crash must fail the test,
not the test run.)"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from olmocr_rl import BenchReward, BenchSuite, _core

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from bench_worst_case import bomb

NESTED = "$" + "{" * 400 + "x" + "}" * 400 + "$"
MATH = json.dumps({"pdf": "a.pdf", "page": 1, "id": "m", "type": "math", "math": "x"})
TEXT = json.dumps({"pdf": "a.pdf", "page": 1, "id": "t", "type": "present", "text": "x"})

needs_katex = pytest.mark.skipif(_core.katex_problem() is not None, reason="KaTeX not installed")


def run_python(code: str, *, ulimit_stack_kib: int | None = None) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-c", textwrap.dedent(code)]
    if ulimit_stack_kib is not None:
        cmd = ["bash", "-c", f'ulimit -s {ulimit_stack_kib} && exec "$@"', "bash", *cmd]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


@needs_katex
def test_deep_nesting_on_a_1_mib_thread_does_not_crash():
    code = f"""
        import json, threading
        from olmocr_rl import BenchSuite, BenchReward
        suite = BenchSuite.from_jsonl({MATH!r})
        out = {{}}
        def run():
            out["check"] = tuple(suite.check("m", {NESTED!r}))
            out["batch"] = tuple(suite.check_batch([({NESTED!r}, ["m"])])[0][0])
            out["reward"] = BenchReward(suite)(completions=[{NESTED!r}], test_ids=[["m"]])
            out["ok"] = tuple(suite.check("m", "$x + 1$ and $x$"))
        threading.stack_size(1 << 20)
        t = threading.Thread(target=run)
        t.start()
        t.join()
        out["main"] = tuple(suite.check("m", {NESTED!r}))
        print(json.dumps(out))
    """
    proc = run_python(code)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    assert out["check"] == out["main"] == out["batch"]  # the same verdict whichever thread renders
    assert out["reward"] == [float(out["check"][0])]
    assert out["ok"][0] is True


@needs_katex
def test_deep_nesting_under_a_1_mib_main_stack_does_not_crash(tmp_path):
    code = f"""
        import json
        from olmocr_rl import BenchSuite
        suite = BenchSuite.from_jsonl({MATH!r})
        print(json.dumps([tuple(suite.check("m", {NESTED!r})), tuple(suite.check("m", "$x$"))]))
    """
    proc = run_python(code, ulimit_stack_kib=1024)
    assert proc.returncode == 0, proc.stderr[-2000:]
    nested, plain = json.loads(proc.stdout)
    assert plain[0] is True and nested[2] is False  # a verdict, not an error

    (tmp_path / "t.jsonl").write_text(MATH + "\n")
    (tmp_path / "page.md").write_text(NESTED)
    cli = run_python(
        f"import sys; from olmocr_rl.cli import main; sys.exit(main(['check', {str(tmp_path / 't.jsonl')!r}, "
        f"{str(tmp_path / 'page.md')!r}, '-t', 'm']))",
        ulimit_stack_kib=1024,
    )
    assert cli.returncode == 0 and "FAIL  m" in cli.stdout, cli.stderr[-2000:]


# ---------------------------------------------------------------------------------------------
# what a reward refuses instead of scoring wrongly
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def text_suite() -> BenchSuite:
    return BenchSuite.from_jsonl(TEXT)


@pytest.mark.parametrize("bad", [None, 3, b"x", {"content": "x"}, [{"role": "assistant"}], [{"content": 5}], ["x"]])
def test_a_completion_that_is_neither_text_nor_conversational_is_an_error(bad, text_suite):
    reward = BenchReward(text_suite)
    with pytest.raises(TypeError, match=r"completion 1 is a "):
        reward(completions=["x", bad], test_ids=[["t"], ["t"]])


def test_conversational_completions_are_read(text_suite):
    reward = BenchReward(text_suite)
    chat = [{"role": "assistant", "content": "x"}]
    parts = [{"role": "assistant", "content": [{"type": "text", "text": "a x"}, {"type": "image"}]}]
    assert reward(completions=["x", chat, parts, [], "y"], test_ids=[["t"]] * 5) == [1.0, 1.0, 1.0, 0.0, 0.0]


def test_a_string_as_the_whole_batch_is_an_error(text_suite):
    with pytest.raises(TypeError, match="completions must be a list"):
        BenchReward(text_suite)(completions="xyz", test_ids=[["t"]] * 3)


@pytest.mark.parametrize("threads", [-1, 0, 1.5, "2", True])
def test_bad_thread_counts_are_errors(threads, text_suite):
    with pytest.raises(ValueError, match="threads must be a positive integer"):
        BenchReward(text_suite, threads=threads)
    with pytest.raises(ValueError, match="threads must be a positive integer"):
        text_suite.score(["x"], [["t"]], threads=threads)


def test_a_bad_thread_variable_is_an_error(text_suite, monkeypatch):
    monkeypatch.setenv("OLMOCR_RL_THREADS", "abc")
    with pytest.raises(ValueError, match="OLMOCR_RL_THREADS='abc'"):
        text_suite.score(["x"], [["t"]])
    with pytest.raises(ValueError, match="OLMOCR_RL_THREADS"):
        BenchReward(text_suite)
    monkeypatch.setenv("OLMOCR_RL_THREADS", "2")
    assert text_suite.score(["x"], [["t"]])[0].reward == 1.0


# ---------------------------------------------------------------------------------------------
# test files: what the reference cannot load is rejected with file:line, nothing else is lost
# ---------------------------------------------------------------------------------------------


def test_an_integer_longer_than_pythons_limit_is_rejected_like_the_reference():
    ok = json.dumps({"pdf": "a.pdf", "page": 1, "id": "ok", "type": "present", "text": "x", "max_diffs": 0})
    at_limit = '{"pdf": "a.pdf", "page": 1, "id": "l", "type": "present", "text": "x", "max_diffs": 1' + "0" * 4299 + "}"
    over = '{"pdf": "a.pdf", "page": 1, "id": "o", "type": "present", "text": "x", "max_diffs": 1' + "0" * 4300 + "}"
    elsewhere = '{"pdf": "a.pdf", "page": 1, "id": "e", "type": "present", "text": "x", "extra": [-1' + "0" * 4300 + "]}"
    # Python itself: 4300 digits load, 4301 do not.
    json.loads(at_limit)
    with pytest.raises(ValueError, match="4300"):
        json.loads(over)
    with pytest.warns(UserWarning):
        suite = BenchSuite.from_jsonl("\n".join([ok, at_limit, over, elsewhere]), "t.jsonl", strict=False)
    assert suite.ids == ["ok", "l"]
    assert [e.split(": ", 1)[0] for e in suite.errors] == ["t.jsonl:3", "t.jsonl:4"]
    assert all("4301 digits exceeds Python's limit of 4300" in e for e in suite.errors)


def test_invalid_utf8_lines_are_named_and_the_rest_is_kept(tmp_path):
    good = [json.dumps({"pdf": "a.pdf", "page": 1, "id": f"t{i}", "type": "present", "text": "x"}) for i in range(3)]
    f = tmp_path / "t.jsonl"
    f.write_bytes(good[0].encode() + b"\r\n" + b'{"pdf": "\xff"}' + b"\n" + good[1].encode() + b"\r" + good[2].encode() + b"\n")
    with pytest.warns(UserWarning, match="skipped 1 invalid"):
        suite = BenchSuite.load(f, strict=False)
    assert suite.ids == ["t0", "t1", "t2"]
    assert suite.errors == [f"{f}:2: not UTF-8 text (byte 0xff at character 10)"]
    with pytest.raises(Exception, match=r"t\.jsonl:2: not UTF-8 text"):
        BenchSuite.load(f)
    import pickle

    assert pickle.loads(pickle.dumps(suite)).errors == suite.errors


def test_a_byte_order_mark_is_a_clear_error(tmp_path):
    f = tmp_path / "t.jsonl"
    f.write_text("\ufeff" + json.dumps({"pdf": "a.pdf", "page": 1, "id": "t", "type": "present", "text": "x"}) + "\n", encoding="utf-8")
    with pytest.raises(Exception, match=r"t\.jsonl:1: invalid JSON: the line starts with a byte-order mark"):
        BenchSuite.load(f)


# ---------------------------------------------------------------------------------------------
# bounded time on degenerate pages
# ---------------------------------------------------------------------------------------------


# The reference's verdicts (TableTest.run at f7cfe4c) on this page with 200 repeated rows: which
# tests pass, and the failure explanation's start and length.
REFERENCE_200 = [[False, "Found cells matching 'B' but relationships were not satisfied: Cell compared to 'None' doesn't match ", 15261],
                 [True, "", 0], [True, "", 0], [True, "", 0]]  # fmt: skip
TABLE_CODE = """
    import json, sys
    from olmocr_rl import BenchSuite
    rec = {"pdf": "a.pdf", "page": 1, "type": "table", "cell": "B"}
    suite = BenchSuite.from_jsonl("\\n".join(json.dumps({**rec, "id": i, **r}) for i, r in (
        ("top_a", {"top_heading": "A"}), ("top_h", {"top_heading": "H"}), ("up", {"up": "B"}), ("left", {"left_heading": "A"}))))
    page = "| A | H |\\n|---|---|\\n" + "| A | B |\\n" * int(sys.argv[1])
    rows = suite.check_batch([(page, ["top_a", "top_h", "up", "left"])])[0]
    print(json.dumps([[r.passed, r.explanation[:101], len(r.explanation)] for r in rows]))
"""


@pytest.mark.parametrize("rows", [200, 20_000])
def test_a_table_of_repeated_rows_is_checked_exactly_within_a_ceiling(rows):
    # Heading walks up a markdown column are chains, followed once per table: 20,000 rows took
    # 25-30 s (quadratic) before, about 0.05 s now; the ceiling is generous, for slow machines.
    cmd = [sys.executable, "-c", textwrap.dedent(TABLE_CODE), str(rows)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=15)
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout)
    if rows == 200:
        assert got == REFERENCE_200
    else:
        assert [g[:2] for g in got] == [r[:2] for r in REFERENCE_200]


@needs_katex
def test_math_verdicts_do_not_depend_on_threads_or_load():
    from concurrent.futures import ThreadPoolExecutor

    suite = BenchSuite.from_jsonl(json.dumps({"pdf": "a.pdf", "page": 1, "id": "m", "type": "math", "math": "x + y = z"}))
    pages = [f"${bomb(3 + i % 3, 100 * (i + 1))}$ then $x+y=z$ and ${bomb(4, 300)}$" for i in range(9)]
    alone = [tuple(suite.check("m", p)) for p in pages]
    with ThreadPoolExecutor(8) as pool:  # 8 threads on however many cores: the same verdicts
        crowded = list(pool.map(lambda p: tuple(suite.check("m", p)), pages * 2))
    batch = [tuple(r[0]) for r in suite.check_batch([(p, ["m"]) for p in pages])]
    assert crowded == alone * 2 and batch == alone
    assert all(v[0] for v in alone), alone  # each page's x+y=z is found despite the bombs
    for v in alone:
        assert "QuickJS" not in v[1] and "Exception" not in v[1]


GREEK = json.dumps({"pdf": "a.pdf", "page": 1, "id": "m", "type": "math", "math": "\\alpha+\\beta=\\gamma"})


@needs_katex
def test_a_page_of_10000_equations_is_bounded_and_says_so():
    suite = BenchSuite.from_jsonl(GREEK)
    page = " text ".join(f"$x_{{{i}}}^{{{i % 7}}}$" for i in range(10_000))
    code = f"""
        import json, sys
        from olmocr_rl import BenchSuite
        suite = BenchSuite.from_jsonl({GREEK!r})
        print(json.dumps(tuple(suite.check("m", sys.stdin.read()))))
    """
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], input=page, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr[-2000:]
    passed, explanation, error = json.loads(proc.stdout)
    assert (passed, error) == (False, True)
    assert explanation.startswith("error: the page's equations exceed the math check's budget (it needs more than 600 renders)")
    assert tuple(suite.check("m", page)) == (passed, explanation, error)  # and again, warm caches


# ---------------------------------------------------------------------------------------------
# lone surrogates, in completions and in test records, as the reference handles them
# ---------------------------------------------------------------------------------------------

SURROGATE_CASES = [
    ('{"pdf": "a.pdf", "page": 1, "id": "p", "type": "present", "text": "a?b", "max_diffs": 1}', "a\ud800b"),
    ('{"pdf": "a.pdf", "page": 1, "id": "p", "type": "present", "text": "a\\ud800b"}', "xx a\ud800b yy"),
    ('{"pdf": "a.pdf", "page": 1, "id": "p", "type": "present", "text": "a\\ud800b"}', "xx a?b yy"),
    ('{"pdf": "a.pdf", "page": 1, "id": "p", "type": "present", "text": "a\\udc00\\ud800b\\ud83d\\ude00"}', "a\udc00\ud800b\U0001f600"),
    ('{"pdf": "a.pdf", "page": 1, "id": "p", "type": "absent", "text": "zz\\ud800"}', "zz\ud800"),
    ('{"pdf": "a.pdf", "page": 1, "id": "p", "type": "present", "text": "q\\ud800q"}', "nothing"),
    ('{"pdf": "a.pdf", "page": 1, "id": "p", "type": "order", "before": "x\\ud800", "after": "y"}', "y x\ud800"),
    ('{"pdf": "a.pdf", "page": 1, "id": "p", "type": "baseline"}', "\ud800" * 40),
]
# The reference's (passed, explanation) for each case, then its normalize_text("a\ud800b  c"):
# load_single_test(record).run(text) at f7cfe4c.
SURROGATE_REFERENCE = json.loads(
    r"""[[true, ""], [true, ""], [false, "Expected 'a\ud800b...' with threshold 1.0 but best match ratio was 0.667"], [true, ""], [false, "Expected absence of 'zz\ud800...' with threshold 1.0 but best match ratio was 1.000"], [false, "Expected 'q\ud800q...' with threshold 1.0 but best match ratio was 0.000"], [false, "Could not find a location where 'x\ud800...' appears before 'y...'."], [false, "The text contains no alpha numeric characters"], "a\ud800b c"]"""
)


def test_lone_surrogates_are_one_character_as_in_the_reference():
    from olmocr_rl import normalize_text

    got = [list(BenchSuite.from_jsonl(rec).check("p", text)[:2]) for rec, text in SURROGATE_CASES]
    assert got == SURROGATE_REFERENCE[:-1]
    assert normalize_text("a\ud800b  c") == SURROGATE_REFERENCE[-1]
    scored = BenchSuite.from_jsonl(SURROGATE_CASES[5][0]).score(["q\ud800q", "q\ud801q"], [["p"], ["p"]], details=True)
    assert [s.passed for s in scored] == [1, 0]
    assert scored[1].results[0].explanation.startswith("Expected 'q\ud800q...'")


def test_a_huge_test_line_loads_in_memory_proportional_to_it():
    # A 10 MB `present` text: its search kernel (~40 bytes a character) is built only when a page
    # longer than it is searched, so loading holds a few copies of the text (was ~400 MB).
    code = """
        import json, resource
        from olmocr_rl import BenchSuite
        text = ("lorem ipsum dolor sit amet " * 400000)[:10_000_000]
        line = json.dumps({"pdf": "a.pdf", "page": 1, "id": "big", "type": "present", "text": text})
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        suite = BenchSuite.from_jsonl(line)
        grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
        print(json.dumps([len(suite), grown // 1024, suite.check("big", "lorem ipsum")[0]]))
    """
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    n, grown_mb, passed = json.loads(proc.stdout)
    assert n == 1 and passed is True  # partial_ratio aligns the shorter string: the page, here
    assert grown_mb < 250, f"loading a 10 MB line grew the process by {grown_mb} MB"
