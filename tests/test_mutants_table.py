"""tools/mutants.toml, the list `make mutants` mutates, stays true: every file it names exists, every
test it runs a module's mutants against exists (a renamed test would leave mutants "surviving" that
were killed, or worse, a module judged by no test), every explained mutant in
docs/mutants-equivalent.md belongs to a listed file, and `--since` picks the entries whose file
changed. Runs no mutants (that is `make mutants`, docs/development.md)."""

from __future__ import annotations

import ast
import fnmatch
import re
import subprocess
import sys
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parent.parent
TABLE = tomllib.loads((ROOT / "tools" / "mutants.toml").read_text())


def test_every_file_and_test_the_table_names_exists():
    entries = TABLE["rust"] + TABLE["python"]
    assert entries
    for entry in TABLE["rust"]:
        assert (ROOT / entry["file"]).is_file(), entry["file"]
        assert entry["file"].endswith(".rs")
    defined: dict[Path, set[str]] = {}
    for entry in TABLE["python"]:
        module = ROOT / entry["module"]
        assert module.is_file() and module.suffix == ".py", entry["module"]
        assert entry["tests"], f"{entry['module']}: no tests"
        for arg in entry["tests"]:
            path, _, name = arg.partition("::")
            test_file = ROOT / path
            assert test_file.is_file(), f"{entry['module']}: {path} does not exist"
            if name:
                if test_file not in defined:
                    tree = ast.parse(test_file.read_text())
                    defined[test_file] = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
                assert name.split("[")[0] in defined[test_file], f"{entry['module']}: {arg} is not a test"
    names = [e.get("file", e.get("module")) + str(e.get("functions", "")) for e in entries]
    assert len(names) == len(set(names)), "a file listed twice"


def test_functions_name_what_the_module_defines_as_mutmut_names_them():
    """An entry's `functions` are functions or `Class.method`s its module defines, and the globs the
    runner hands `mutmut run` match mutmut 3.8.1's names for their mutants (as its run on
    olmocr_rl/keep_rule.py listed them) and no other function's."""
    sys.path.insert(0, str(ROOT / "tools"))
    from mutants import mutant_globs

    with_functions = [e for e in TABLE["python"] if e.get("functions")]
    assert with_functions
    for entry in with_functions:
        tree = ast.parse((ROOT / entry["module"]).read_text())
        defined = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        defined |= {f"{c.name}.{n.name}" for c in tree.body if isinstance(c, ast.ClassDef) for n in c.body
                    if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}  # fmt: skip
        for name in entry["functions"]:
            assert name in defined, f"{entry['module']}: {name} is not defined there"
    method, function = mutant_globs("olmocr_rl/keep_rule.py", ["KeepRule.keeps_stats", "has_spread"])
    assert fnmatch.fnmatchcase("olmocr_rl.keep_rule.xǁKeepRuleǁkeeps_stats__mutmut_3", method)
    assert fnmatch.fnmatchcase("olmocr_rl.keep_rule.x_has_spread__mutmut_12", function)
    for other in ("olmocr_rl.keep_rule.xǁKeepRuleǁkeeps__mutmut_1", "olmocr_rl.keep_rule.x_has_spread_more__mutmut_1",
                  "olmocr_rl.keep_rule.x_statistics__mutmut_2", "olmocr_rl.keep_rule_x.x_has_spread__mutmut_1"):  # fmt: skip
        assert not fnmatch.fnmatchcase(other, method) and not fnmatch.fnmatchcase(other, function), other


def test_explained_mutants_belong_to_listed_files():
    """A `### NAME` of docs/mutants-equivalent.md names a mutant of a listed file: mutmut's names start
    with the module's dotted path, cargo-mutants' with the file's path."""
    text = (ROOT / "docs" / "mutants-equivalent.md").read_text()
    headings = re.findall(r"^### `?([^`\n]+)`?\s*$", text, re.M)
    assert headings
    modules = [e["module"].removesuffix(".py").replace("/", ".") for e in TABLE["python"]]
    files = [e["file"] for e in TABLE["rust"]]
    for name in headings:
        assert any(name.startswith(m + ".") for m in modules) or any(name.startswith(f) for f in files), name


def test_since_picks_the_changed_entries(tmp_path):
    """--since HEAD on a clean copy of the table's files selects nothing; a changed module selects its
    entry alone (run on a scratch git repository holding the runner and its table)."""
    repo = tmp_path / "repo"
    (repo / "tools").mkdir(parents=True)
    (repo / "docs").mkdir()
    for name in ("tools/mutants.py", "tools/mutants.toml"):
        (repo / name).write_text((ROOT / name).read_text())
    (repo / "docs" / "mutants-equivalent.md").write_text("")
    first, second = TABLE["python"][0]["module"], TABLE["python"][1]["module"]
    for module in (first, second):
        (repo / module).parent.mkdir(parents=True, exist_ok=True)
        (repo / module).write_text("x = 1\n")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "base"], check=True)

    def listed() -> str:
        run = subprocess.run([sys.executable, str(repo / "tools" / "mutants.py"), "--since", "HEAD", "--list"],
                             capture_output=True, text=True, check=True)  # fmt: skip
        return run.stdout

    assert "no mutants to run" in listed()
    (repo / second).write_text("x = 2\n")
    out = listed()
    assert f"python {second} " in out and first not in out
