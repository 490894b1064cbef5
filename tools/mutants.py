"""`make mutants`: mutation testing of the core modules listed in tools/mutants.toml.

Rust files go to cargo-mutants (its own scratch copy of the tree, `cargo test` filtered to the
tests named in the table), Python modules to mutmut (in a scratch copy of the tracked tree under
target/mutants/, each module's mutants run against the pytest arguments the table gives it). Both
tools are installed on first use: cargo-mutants into target/tools (`cargo install --locked`),
mutmut into the venv (pip). The working tree is never edited: mutants live in the scratch copies.

Usage: python tools/mutants.py [--only SUBSTRING ...] [--since REF] [--jobs N] [--list]
(--since REF: the entries whose file differs from REF; for Rust files only the mutants on changed lines.)
Prints one table: per file, mutants generated / killed / survived / timeout / not run /
equivalent (entries in docs/mutants-equivalent.md) and the run time; survivors are listed by name
(mutmut: `cd target/mutants/py/<module> && mutmut show NAME` prints the diff; cargo-mutants:
target/mutants/rust/<file>/mutants.out/missed.txt).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "tools" / "mutants.toml"
EQUIVALENT = ROOT / "docs" / "mutants-equivalent.md"
SCRATCH = ROOT / "target" / "mutants"
TOOLS = ROOT / "target" / "tools"
CARGO_MUTANTS_VERSION = "27.1.0"
MUTMUT_VERSION = "3.8.1"


@dataclass
class Tally:
    name: str
    generated: int = 0
    killed: int = 0
    survived: int = 0
    timeout: int = 0
    not_run: int = 0
    equivalent: int = 0
    seconds: float = 0.0
    survivors: list[str] = field(default_factory=list)
    note: str = ""


EXTRA_EQUIVALENT: list[Path] = []  # --equivalent FILE: more entries (work in progress, not yet in the docs)


def equivalent_names() -> set[str]:
    """The mutant names docs/mutants-equivalent.md explains: each entry's heading is `### NAME`."""
    names: set[str] = set()
    for path in [EQUIVALENT, *EXTRA_EQUIVALENT]:
        if path.exists():
            names |= {m.group(1).strip() for m in re.finditer(r"^### `?([^`\n]+)`?\s*$", path.read_text(), re.M)}
    return names


def run_bounded(cmd: list[str], cwd: Path, timeout: float, env: dict[str, str] | None = None) -> bool:
    """Run cmd in its own process group; past timeout the whole group is stopped. True if it finished."""
    with subprocess.Popen(cmd, cwd=cwd, env=env, start_new_session=True) as proc:
        try:
            proc.wait(timeout=timeout)
            return True
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            return False
        except BaseException:
            os.killpg(proc.pid, signal.SIGKILL)
            raise


# --- Rust: cargo-mutants ---------------------------------------------------------------------


def cargo_mutants() -> Path:
    exe = TOOLS / "bin" / "cargo-mutants"
    if not exe.exists():
        subprocess.run(
            ["cargo", "install", "--locked", "-j", "1", "--root", str(TOOLS), "cargo-mutants", "--version",
             CARGO_MUTANTS_VERSION],
            check=True,
        )  # fmt: skip
    return exe


def changed_files(since: str) -> set[str]:
    """The files that differ from `since` (a git ref): committed, staged or not, and new ones."""

    def git(*args: str) -> list[str]:
        out = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout
        return [line for line in out.splitlines() if line]

    return set(git("diff", "--name-only", since)) | set(git("ls-files", "--others", "--exclude-standard"))


def run_rust(entry: dict, jobs: int, since: str | None = None) -> Tally:
    file = entry["file"]
    tally = Tally(file)
    out = SCRATCH / "rust" / Path(file).stem
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    # One build job (the other core is the rest of the machine's); no debug info: smaller, faster links.
    env = dict(os.environ, CARGO_BUILD_JOBS=str(jobs), CARGO_PROFILE_DEV_DEBUG="0", CARGO_PROFILE_TEST_DEBUG="0")
    # --gitignore true: neither .venv (6.5 GB) nor target/ is copied into each scratch tree.
    cmd = [str(cargo_mutants()), "mutants", "--dir", str(ROOT), "--file", file, "--jobs", "1", "--output", str(out),
           "--timeout", str(entry.get("test_timeout", 60)), "--build-timeout", str(entry.get("build_timeout", 600)),
           "--no-shuffle", "--baseline", "run", "--jobserver-tasks", str(jobs),
           "--gitignore", "true"]  # fmt: skip
    for feature in entry.get("features", []):
        cmd += ["--features", feature]
    if since:  # only the mutants on lines the diff touches
        diff = out / "since.diff"
        diff.write_bytes(subprocess.run(["git", "diff", since, "--", file], cwd=ROOT, capture_output=True,
                                        check=True).stdout)  # fmt: skip
        cmd += ["--in-diff", str(diff)]
    cmd += ["--", *entry.get("tests", [])]
    start = time.monotonic()
    finished = run_bounded(cmd, ROOT, entry.get("timeout", 1800), env)
    tally.seconds = time.monotonic() - start
    results = out / "mutants.out"
    outcomes = results / "outcomes.json"
    if not outcomes.exists():
        tally.note = "no outcomes.json (baseline failed or stopped)"
        return tally
    data = json.loads(outcomes.read_text())
    equivalent = equivalent_names()
    listed = results / "mutants.json"  # every mutant generated; outcomes.json holds those run so far
    tally.generated = len(json.loads(listed.read_text())) if listed.exists() else data.get("total_mutants", 0)
    for o in data.get("outcomes", []):
        scenario = o.get("scenario")
        if not isinstance(scenario, dict):  # the baseline
            continue
        mutant = scenario["Mutant"]
        name = mutant.get("name") or f"{mutant['file']}:{mutant['span']['start']['line']}: {describe(mutant)}"
        summary = o.get("summary")
        if summary == "CaughtMutant":
            tally.killed += 1
        elif summary == "Timeout":
            tally.timeout += 1
        elif summary == "Unviable":  # does not compile: not a mutant a test could catch
            tally.generated -= 1
        elif name in equivalent:
            tally.equivalent += 1
        else:
            tally.survived += 1
            tally.survivors.append(name)
    done = tally.killed + tally.timeout + tally.survived + tally.equivalent
    tally.not_run = max(0, tally.generated - done)
    if not finished:
        tally.note = "stopped at the time bound"
    return tally


def describe(mutant: dict) -> str:
    return f"replace {mutant.get('function', {}).get('function_name', '?')} ... with {mutant.get('replacement', '?')}"


# --- Python: mutmut --------------------------------------------------------------------------


def mutmut(python: str) -> str:
    if subprocess.run([python, "-c", "import mutmut"], capture_output=True).returncode:
        subprocess.run([python, "-m", "pip", "install", "-q", f"mutmut=={MUTMUT_VERSION}"], check=True)
    return str(Path(python).parent / "mutmut")


def scratch_tree(dest: Path) -> None:
    """The tracked files and the new ones git does not ignore (as they are in the working tree) and
    the built extension, copied."""
    shutil.rmtree(dest, ignore_errors=True)
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, check=True).stdout  # fmt: skip
    for name in files.decode().split("\0"):
        if not name or not (ROOT / name).is_file():
            continue
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, dest / name)
    for so in (ROOT / "olmocr_rl").glob("*.so"):
        shutil.copy2(so, dest / "olmocr_rl" / so.name)


def toml_list(values: list[str]) -> str:
    return "[" + ", ".join(json.dumps(v) for v in values) + "]"


def mutant_globs(module: str, functions: list[str]) -> list[str]:
    """mutmut 3.8.1's names for the mutants of `functions` (an entry's `functions` key): a function
    `f` has `<module>.x_f__mutmut_N`, a method `Cls.m` `<module>.xǁClsǁm__mutmut_N`; `mutmut run`
    takes these globs (fnmatch) and runs those mutants alone."""
    dotted = module.removesuffix(".py").replace("/", ".")
    return [f"{dotted}.x" + ("ǁ" + f.replace(".", "ǁ") if "." in f else "_" + f) + "__mutmut_*" for f in functions]


def run_python(entry: dict, python: str) -> Tally:
    module = entry["module"]
    globs = mutant_globs(module, entry.get("functions", []))
    tally = Tally(module + (f" ({', '.join(entry['functions'])})" if globs else ""))
    work = SCRATCH / "py" / Path(module).with_suffix("").as_posix().replace("/", ".")
    scratch_tree(work)
    top = sorted({Path(n).parts[0] for n in os.listdir(work)} - {"olmocr_rl", "pyproject.toml"})
    with open(work / "pyproject.toml", "a") as f:
        f.write(
            "\n[tool.mutmut]\n"
            'source_paths = ["olmocr_rl"]\n'
            f"only_mutate = {toml_list([module])}\n"
            f"also_copy = {toml_list(top)}\n"
            f"pytest_add_cli_args = {toml_list(['-p', 'no:xdist', '-p', 'no:cacheprovider', '-q'])}\n"
            f"pytest_add_cli_args_test_selection = {toml_list(entry['tests'])}\n"
            "use_git_change_detection = false\n"
        )
    # Processes the tests start import the mutated tree too (mutmut picks the mutant by environment).
    env = dict(os.environ, PYTHONPATH=str(work / "mutants"), MUTMUT_MODULE=module)
    start = time.monotonic()
    bound = entry.get("timeout", 900)
    # mutmut 3.8.1's first run, the one that writes the mutants, finds no test reaching them here
    # ("could not find any test case for any mutant"); a second run over the written mutants does.
    for _ in range(2):
        finished = run_bounded([mutmut(python), "run", "--max-children", "1", *globs], work,
                               bound - (time.monotonic() - start), env)  # fmt: skip
        listing = subprocess.run([mutmut(python), "results", "--all", "true"], cwd=work, env=env, capture_output=True,
                                 text=True)  # fmt: skip
        if not finished or re.search(r": (killed|survived|timeout|no tests)$", listing.stdout, re.M):
            break
    tally.seconds = time.monotonic() - start
    equivalent = equivalent_names()
    for line in listing.stdout.splitlines():
        name, _, status = line.strip().rpartition(": ")
        if not name or (globs and not any(fnmatch.fnmatchcase(name, g) for g in globs)):
            continue
        tally.generated += 1
        if status == "killed":
            tally.killed += 1
        elif status == "timeout":
            tally.timeout += 1
        elif status in ("not checked", "skipped"):
            tally.not_run += 1
        elif name in equivalent:
            tally.equivalent += 1
        else:  # survived, no tests, suspicious, segfault
            tally.survived += 1
            tally.survivors.append(f"{name} ({status})")
    if not finished:
        tally.note = "stopped at the time bound"
    elif not tally.generated:
        tally.note = "mutmut listed no mutants: " + (listing.stderr.strip().splitlines() or ["?"])[-1]
    return tally


# --- the table -------------------------------------------------------------------------------


def print_table(tallies: list[Tally]) -> None:
    head = ("file", "generated", "killed", "survived", "timeout", "not run", "equivalent", "killed %", "time")
    rows = []
    for t in tallies:
        judged = t.killed + t.timeout + t.survived
        share = f"{100 * (t.killed + t.timeout) / judged:.0f} %" if judged else "-"
        rows.append((t.name, t.generated, t.killed, t.survived, t.timeout, t.not_run, t.equivalent, share,
                     f"{t.seconds / 60:.1f} min"))  # fmt: skip
    widths = [max(len(str(r[i])) for r in [head, *rows]) for i in range(len(head))]
    for r in [head, *rows]:
        print("  ".join(str(v).ljust(w) if i == 0 else str(v).rjust(w) for i, (v, w) in enumerate(zip(r, widths))))
    for t in tallies:
        if t.note:
            print(f"{t.name}: {t.note}")
        for s in t.survivors:
            print(f"{t.name}: survived: {s}")
    print("killed % counts timeouts as killed and leaves out the equivalent ones (docs/mutants-equivalent.md).")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=[], help="run only the entries whose file contains one of these")
    parser.add_argument("--jobs", type=int, default=1, help="cargo build jobs (default 1)")
    parser.add_argument("--list", action="store_true", help="print the table's entries and stop")
    parser.add_argument(
        "--since", metavar="REF", help="only the entries whose file differs from this git ref (Rust: only the changed lines)"
    )
    parser.add_argument("--table", type=Path, default=TABLE, help="another table (default tools/mutants.toml)")
    parser.add_argument("--equivalent", type=Path, action="append", default=[],
                        help="more explained mutants, in docs/mutants-equivalent.md's form (repeatable)")  # fmt: skip
    args = parser.parse_args()
    EXTRA_EQUIVALENT.extend(args.equivalent)
    table = tomllib.loads(args.table.read_text())
    entries = [("rust", e) for e in table.get("rust", [])] + [("python", e) for e in table.get("python", [])]
    entries = [(k, e) for k, e in entries if not args.only or any(s in e.get("file", e.get("module")) for s in args.only)]
    if args.since:
        changed = changed_files(args.since)
        entries = [(k, e) for k, e in entries if e.get("file", e.get("module")) in changed]
        if not entries:
            print(f"no file of {args.table.name} differs from {args.since}: no mutants to run")
            return 0
    if args.list:
        for kind, e in entries:
            print(kind, e.get("file", e.get("module")), " ".join(e["tests"]))
        return 0
    if not entries:
        print(f"error: no entry of {args.table} matches {args.only}", file=sys.stderr)
        return 2
    tallies = []
    for kind, e in entries:
        tally = run_rust(e, args.jobs, args.since) if kind == "rust" else run_python(e, sys.executable)
        tallies.append(tally)
        print_table([tally])
    print(f"\nmutants at {subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], cwd=ROOT, capture_output=True, text=True).stdout.strip()}"
          f" (plus uncommitted changes, if any):")  # fmt: skip
    print_table(tallies)
    return 0 if all(not t.survivors and not t.note for t in tallies) else 1


if __name__ == "__main__":
    sys.exit(main())
