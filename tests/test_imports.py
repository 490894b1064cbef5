"""The shape of the Python package: the command line sits on top (nothing else imports
`olmocr_rl.cli`), and no two modules import each other, directly or round a longer circle (imports
inside functions count: they are how heavy modules load late, not a way around the layering)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "olmocr_rl"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, modules: set[str]) -> set[str]:
    """The olmocr_rl modules `path` imports (a `from pkg import name` of a submodule counts as it)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        else:
            continue
        out |= {n for n in names if n in modules}
    return out


def graph() -> dict[str, set[str]]:
    files = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    return {m: imports_of(p, set(files)) - {m} for m, p in files.items()}


# The rank entry point launchers start (`python -m olmocr_rl.train ...` = `olmocr-rl train ...`): a
# part of the command line that lives where `-m` finds it, holding nothing but that call.
ENTRY_POINTS = {"olmocr_rl.train.__main__"}


def test_nothing_but_the_command_line_imports_it():
    g = graph()
    library = [m for m in g if not m.startswith("olmocr_rl.cli") and m not in ENTRY_POINTS]
    offenders = {m: sorted(d for d in g[m] if d.startswith("olmocr_rl.cli")) for m in library}
    assert {m: d for m, d in offenders.items() if d} == {}


def test_no_import_cycles():
    g = graph()
    # A package's __init__ re-exporting its submodules is the package's own face, not a cycle.
    for m in g:
        g[m] = {d for d in g[m] if not (m.startswith(d + ".") and d in g)}
    cycles, state = [], {}

    def visit(m: str, path: list[str]) -> None:
        state[m] = "open"
        for d in sorted(g[m]):
            if state.get(d) == "open":
                cycles.append(path[path.index(d) :] + [d] if d in path else [m, d])
            elif d not in state:
                visit(d, [*path, d])
        state[m] = "done"

    for m in sorted(g):
        if m not in state:
            visit(m, [m])
    assert cycles == []
