"""The lower-bounds test environment (`make test-lower`): a venv in target/lower-env holding every
requirement of the `train` and `deepspeed` extras at its floor, so that the versions pyproject.toml
allows are versions CI has run, not only the newest ones the `dev` extra pins.

The floors are read from pyproject.toml (`name>=X` installs `name==X`), so narrowing or raising one
there changes what this environment tests. They are the GPU machine's versions where it has the
package (torch 2.11.0, torchvision 0.26.0, transformers 5.17.0, accelerate 1.15.0, tokenizers
0.23.2, safetensors 0.8.0: what a user renting it runs), else the oldest release the rest allows
(trl 1.11.0, the first with the `--vllm-gpus` server's build_command). What the floors leave open
is pinned to the GPU machine's versions as well (GPU_MACHINE below); the test tools come from the
`dev` extra. olmocr-rl itself is built in place by maturin (the same abi3 extension as the main venv).

A finished environment is reused while STAMP (the pins and this file's hash) still matches; anything
else rebuilds it from scratch. `--print-python` prints the environment's Python and builds nothing;
`--pins` prints the pins.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENV = ROOT / "target" / "lower-env"
STAMP = ENV / ".olmocr-rl-stamp.json"

EXTRAS = ("train", "deepspeed")
# Not in the extras, but on the GPU machine (project docs) and below what pip would pick.
GPU_MACHINE = {"huggingface-hub": "1.33.0"}
# From the dev extra: what the test suite itself needs.
FROM_DEV = ("pytest", "pytest-xdist", "hypothesis", "maturin")


def _pyproject() -> dict:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def floors() -> list[str]:
    """`name==X` for every `name>=X` of the extras (a requirement without a floor is an error: it
    would leave the lowest version untested)."""
    from packaging.requirements import Requirement

    pins: dict[str, str] = {}
    for extra in EXTRAS:
        for text in _pyproject()["project"]["optional-dependencies"][extra]:
            req = Requirement(text)
            low = [s.version for s in req.specifier if s.operator == ">="]
            if len(low) != 1:
                raise SystemExit(f"error: pyproject.toml's {extra} extra: {text!r} has no single >= floor to test")
            pins[req.name.lower()] = low[0]
    return [f"{name}=={version}" for name, version in pins.items()]


def dev_pins() -> list[str]:
    extra = _pyproject()["project"]["optional-dependencies"]["dev"]
    pins = {req.split("==")[0].strip().lower(): req for req in extra if "==" in req}
    return [pins[name] for name in FROM_DEV]


def wanted() -> dict:
    return {
        "floors": floors(),
        "gpu_machine": [f"{k}=={v}" for k, v in GPU_MACHINE.items()],
        "dev": dev_pins(),
        "python": platform.python_version(),
        "script": hashlib.sha256(Path(__file__).read_bytes()).hexdigest(),
    }


def python() -> Path:
    return ENV / "bin" / "python"


def run(*cmd: str | Path, **kw) -> None:
    print("+", " ".join(map(str, cmd)), flush=True)
    subprocess.run([str(c) for c in cmd], check=True, **kw)


def build() -> None:
    want = wanted()
    if STAMP.is_file() and python().is_file():
        try:
            if json.loads(STAMP.read_text()) == want:
                print(f"lower-bounds test environment up to date: {ENV}")
                return
        except ValueError:
            pass
    shutil.rmtree(ENV, ignore_errors=True)
    run(sys.executable, "-m", "venv", ENV)
    pip = [python(), "-m", "pip", "--disable-pip-version-check"]
    run(*pip, "install", "-q", "--upgrade", "pip")
    run(*pip, "install", "-q", *want["floors"], *want["gpu_machine"], *want["dev"])
    env = {**os.environ, "VIRTUAL_ENV": str(ENV)}
    run(ENV / "bin" / "maturin", "develop", "--release", "-q", cwd=ROOT, env=env)
    # The floors must be what is installed: pip would say nothing if a later install moved one.
    check = ("import importlib.metadata as m, json, sys; from packaging.version import Version as V; want = json.loads(sys.argv[1]); "
             "bad = [f'{p} (has {m.version(p.split(\"==\")[0])})' for p in want if V(m.version(p.split('==')[0])) != V(p.split('==')[1])]; "
             "print('installed at the floors' if not bad else 'NOT at the floor: ' + ', '.join(bad)); sys.exit(1 if bad else 0)")  # fmt: skip
    run(python(), "-c", check, json.dumps(want["floors"] + want["gpu_machine"]))
    STAMP.write_text(json.dumps(want, indent=2) + "\n")
    print(f"lower-bounds test environment ready: {ENV}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--print-python", action="store_true", help="print the environment's python and exit")
    parser.add_argument("--pins", action="store_true", help="print what the environment installs and exit")
    args = parser.parse_args(argv)
    if args.print_python:
        print(python())
        return 0
    if args.pins:
        want = wanted()
        print("\n".join(want["floors"] + want["gpu_machine"] + want["dev"]))
        return 0
    build()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
