"""The shape of the Python package (issue 33's rules), from its import statements (imports inside
functions count: they are how heavy modules load late, not a way around the layering):

* no two modules import each other, directly or round a longer circle;
* the command line sits on top: nothing but `olmocr_rl.cli` and the `python -m` entry points
  imports it;
* training sits under the command line: nothing outside `olmocr_rl.train` and `olmocr_rl.cli`
  imports `olmocr_rl.train` (launching, engines, rewards, curate are every command's);
* library modules import the Rust extension itself (`olmocr_rl._core`), never the package's face
  (`olmocr_rl/__init__.py`, which imports the library);
* no function body in olmocr_rl/ is over 100 lines (a Typer command's option declarations in its
  signature do not count), and train/config.py stays under 450 lines."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "olmocr_rl"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    """Every module of the package: its Python files and the Rust extension (by its stub)."""
    return {module_name(p): p for p in [*PACKAGE.rglob("*.py"), *PACKAGE.glob("_core.pyi")]}


def imports_of(path: Path, known: set[str]) -> set[str]:
    """The olmocr_rl modules `path` imports: `from pkg import name` counts as pkg.name when that
    is a module, else as pkg; `from olmocr_rl import ...` always imports the package's face too
    (write `import olmocr_rl._core as _core`)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name in known}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for a in node.names:
                name = f"{node.module}.{a.name}"
                if name in known:
                    out.add(name)
                if name not in known or node.module == "olmocr_rl":
                    out |= {node.module} & known
    return out


def graph() -> dict[str, set[str]]:
    files = modules()
    return {m: imports_of(p, set(files)) - {m} for m, p in files.items() if p.suffix == ".py"}


# The rank entry point launchers start (`python -m olmocr_rl.train ...` = `olmocr-rl train ...`): a
# part of the command line that lives where `-m` finds it, holding nothing but that call.
ENTRY_POINTS = {"olmocr_rl.train.__main__", "olmocr_rl.cli.__main__"}


def test_nothing_but_the_command_line_imports_it():
    g = graph()
    library = [m for m in g if not m.startswith("olmocr_rl.cli") and m not in ENTRY_POINTS]
    offenders = {m: sorted(d for d in g[m] if d.startswith("olmocr_rl.cli")) for m in library}
    assert {m: d for m, d in offenders.items() if d} == {}


def test_nothing_outside_training_and_the_command_line_imports_training():
    g = graph()
    outside = [m for m in g if not m.startswith(("olmocr_rl.train", "olmocr_rl.cli"))]
    offenders = {m: sorted(d for d in g[m] if d == "olmocr_rl.train" or d.startswith("olmocr_rl.train.")) for m in outside}
    assert {m: d for m, d in offenders.items() if d} == {}


def test_library_modules_import_the_extension_not_the_package():
    g = graph()
    library = [m for m in g if m != "olmocr_rl" and not m.startswith("olmocr_rl.cli")]
    assert sorted(m for m in library if "olmocr_rl" in g[m]) == []


def test_no_import_cycles():
    g = graph()
    # A package's face (its __init__) importing its own submodules is the face, not a cycle.
    for m in g:
        g[m] = {d for d in g[m] if not (d.startswith(m + ".") and m in g)}
    cycles, state = [], {}

    def visit(m: str, path: list[str]) -> None:
        state[m] = "open"
        for d in sorted(g[m]):
            if state.get(d) == "open":
                cycles.append(path[path.index(d) :] + [d] if d in path else [m, d])
            elif d not in state and d in g:
                visit(d, [*path, d])
        state[m] = "done"

    for m in sorted(g):
        if m not in state:
            visit(m, [m])
    assert cycles == []


def body_lines(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Lines from the first statement of the body (the docstring included) to the last."""
    return fn.body[-1].end_lineno - fn.body[0].lineno + 1  # type: ignore[operator]


def test_no_function_body_over_100_lines():
    long = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and body_lines(node) > 100:
                long[f"{path.relative_to(PACKAGE.parent).as_posix()}:{node.name}"] = body_lines(node)
    assert long == {}


def test_the_training_config_stays_small():
    assert len((PACKAGE / "train" / "config.py").read_text(encoding="utf-8").splitlines()) < 450
