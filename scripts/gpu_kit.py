"""The offline kit for the GPU machine (`make gpu-kit`): the wheels our training path needs that the
GPU machine lacks, our own extension as an abi3 wheel, and KaTeX, in target/gpu-kit/.

The GPU machine has no network. It runs CPython 3.12.3 (x86-64 Linux) with torch 2.11, transformers
5.17, accelerate 1.15, peft and more preinstalled (PREINSTALLED below, from the project docs), but
not trl, datasets, deepspeed, pypdfium2, orjson or olmocr-rl. This script

* downloads the cp312 / manylinux x86_64 wheels of what is missing (KIT_PINS: the versions CI tests,
  where CI has them), builds DeepSpeed's wheel from its sdist (pure Python; its ops are compiled just
  in time), builds olmocr-rl as an abi3 wheel with maturin, and copies katex.min.js;
* checks that every requirement of olmocr-rl[train,deepspeed], trl, datasets and deepspeed (walked
  recursively through each wheel's METADATA, markers evaluated for CPython 3.12 on x86-64 Linux) is
  met by the preinstalled list or by the kit, and exits non-zero otherwise;
* writes manifest.json (every wheel, its size and sha256; the coverage rows) and checks that the kit
  plus the working tree that travels to the GPU machine (`git ls-files -co --exclude-standard`) stay
  under SIZE_LIMIT_MIB.

    python scripts/gpu_kit.py              # build (or reuse) target/gpu-kit, then --check
    python scripts/gpu_kit.py --check      # only the requirements coverage check of the kit
    python3 scripts/gpu_kit.py --check --installed   # on the GPU machine, with the kit installed
                                                     # (PYTHONPATH): the real installed versions

A rebuild reuses every wheel whose file still matches the manifest (name, version and sha256), so
only what changed is downloaded; olmocr-rl's wheel is rebuilt each time (cargo's cache keeps that to
seconds when the Rust sources did not change).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass, field
from email.parser import Parser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KIT_DIR = ROOT / "target" / "gpu-kit"
SIZE_LIMIT_MIB = 60  # kit + travelling working tree (the device tool carries 64 MiB in all)
MANIFEST = "manifest.json"
KATEX_FILE = "katex.min.js"

# The GPU machine (project docs): CPython 3.12.3 on x86-64 Linux (Ubuntu 24.04's Python, glibc 2.39).
TARGET_PYTHON = (3, 12)
TARGET_MARKERS = {
    "implementation_name": "cpython",
    "implementation_version": "3.12.3",
    "os_name": "posix",
    "platform_machine": "x86_64",
    "platform_python_implementation": "CPython",
    "platform_release": "",
    "platform_system": "Linux",
    "platform_version": "",
    "python_full_version": "3.12.3",
    "python_version": "3.12",
    "sys_platform": "linux",
}
# manylinux tags accepted for the kit: up to glibc 2.35 (what maturin tags our extension with here;
# the GPU machine's glibc is newer). pip download gets the same list.
MAX_GLIBC_MINOR = 35
PLATFORMS = [f"manylinux_2_{m}_x86_64" for m in range(MAX_GLIBC_MINOR, 4, -1)] + [
    "manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64",
]  # fmt: skip

# The GPU machine's preinstalled distributions (project docs), and the versions known of them.
PREINSTALLED = """
absl-py accelerate aiofiles aiohappyeyeballs aiohttp aiosignal annotated-doc anyio attrs botorch build certifi
charset-normalizer chex click cloudpickle cmake colorama contourpy coverage cuda-bindings cuda-core cuda-pathfinder
cuda-toolkit cupy-cuda13x cycler cython diffrax e3nn einops equinox etils execnet filelock flatbuffers flax fonttools
formulaic frozenlist fsspec gpytorch grpcio h11 h5py hf-xet httpcore httpx huggingface-hub humanize hypothesis idna
imageio iniconfig interface-meta jax jax-cuda13-pjrt jax-cuda13-plugin jaxlib jaxtyping jinja2 joblib kiwisolver
lazy-loader lightning lightning-utilities linear-operator lineax llvmlite lxml markdown markdown-it-py markupsafe
matplotlib mdurl meson ml-dtypes mpi4py mpmath msgpack multidict multipledispatch mypy-extensions nanobind narwhals
networkx ninja numba numba-cuda numpy numpyro nvidia-cublas nvidia-cuda-cupti nvidia-cuda-nvrtc nvidia-cuda-runtime
nvidia-cudnn-cu13 nvidia-cufft nvidia-cufile nvidia-curand nvidia-cusolver nvidia-cusparse nvidia-cusparselt-cu13
nvidia-ml-py nvidia-nccl-cu13 nvidia-nvjitlink nvidia-nvshmem-cu13 nvidia-nvtx onnx onnx-ir onnxruntime onnxscript
opencv-python-headless optax opt-einsum opt-einsum-fx optimistix orbax-checkpoint packaging pandas pathspec patsy peft
pillow pip pluggy portalocker prometheus-client propcache protobuf psutil pyarrow pybind11 py-cpuinfo pygments
pyparsing pyproject-hooks pyre-extensions pytest pytest-benchmark pytest-cov pytest-mock pytest-timeout pytest-xdist
python-dateutil pytorch-lightning pyyaml regex requests rich sacrebleu safetensors scikit-build-core scikit-image
scikit-learn scipy seaborn sentencepiece sentence-transformers setuptools shellingham simplejson six
sortedcontainers statsmodels sympy tabulate tensorboard tensorboard-data-server tensorstore threadpoolctl tifffile
tiktoken timm tokenizers toolz torch torchaudio torchdiffeq torch-geometric torchmetrics torchvision tqdm
transformers treescope triton typer typing-extensions typing-inspect urllib3 uvloop wadler-lindig werkzeug wheel
wrapt xarray xxhash yarl zipp
""".split()
PREINSTALLED_VERSIONS = {
    "accelerate": "1.15.0", "huggingface-hub": "1.33.0", "numpy": "2.5.2", "safetensors": "0.8.0",
    "tokenizers": "0.23.2", "torch": "2.11.0", "torchvision": "0.26.0", "transformers": "5.17.0", "triton": "3.6.0",
}  # fmt: skip

# What the walk starts from: olmocr-rl with the extras of the training path (`olmocr-rl train`
# with --zero), and trl, datasets and deepspeed themselves (no extras: peft is preinstalled).
ROOTS = ["olmocr-rl[train,deepspeed]", "trl", "datasets", "deepspeed"]
# The kit's wheels, pinned: the versions CI tests (pyproject's dev extra and CI's resolution).
KIT_PINS = {
    "trl": "1.16.0",
    "datasets": "5.2.0",
    "deepspeed": "0.19.8",  # sdist only on PyPI: built here (py3-none-any)
    "dill": "0.4.1",  # datasets
    "multiprocess": "0.70.19",  # datasets
    "hjson": "3.1.0",  # deepspeed
    # deepspeed needs pydantic>=2. CI has 2.14.4, which needs typing-extensions>=4.16.0; the GPU
    # machine's typing-extensions version is unknown (torch 2.11 only guarantees >=4.10.0), so the kit
    # takes pydantic 2.9.2 (typing-extensions>=4.6.1), a requirement the implied floor settles.
    "pydantic": "2.9.2",
    "pydantic-core": "2.23.4",  # pydantic 2.9.2 pins it
    "annotated-types": "0.7.0",  # pydantic
    "pypdf": "7.1.1",  # olmocr-rl
    "pypdfium2": "5.15.2",  # olmocr-rl
    "orjson": "3.13.0",  # olmocr-rl
}
# Lower bounds on preinstalled packages of unknown version, implied by the requirements of those
# whose version is known (their METADATA, non-extra requirements on CPython 3.12 x86-64 Linux).
IMPLIED_FLOORS = {
    "typing-extensions": ("4.10.0", "torch 2.11.0"),
    "sympy": ("1.13.3", "torch 2.11.0"),
    "networkx": ("2.5.1", "torch 2.11.0"),
    "fsspec": ("2023.5.0", "huggingface-hub 1.33.0"),
    "packaging": ("20.9", "huggingface-hub 1.33.0"),
    "filelock": ("3.10.0", "huggingface-hub 1.33.0"),
    "httpx": ("0.23.0", "huggingface-hub 1.33.0"),
    "click": ("8.4.2", "huggingface-hub 1.33.0"),
    "hf-xet": ("1.6.0", "huggingface-hub 1.33.0"),
    "pyyaml": ("5.1", "transformers 5.17.0"),
    "regex": ("2025.10.22", "transformers 5.17.0"),
    "tqdm": ("4.60", "transformers 5.17.0"),
    "pillow": ("5.3.0", "torchvision 0.26.0"),
}
BUILT_FROM_SDIST = {"deepspeed"}
OURS = "olmocr-rl"


def canon(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def mib(n: float) -> str:
    return f"{n / 2**20:.1f} MiB"


# ----------------------------------------------------------------------------------------------
# Wheels: names, tags, metadata.


@dataclass
class Wheel:
    path: Path
    name: str  # canonical
    version: str
    tags: list[str]

    @classmethod
    def of(cls, path: Path) -> Wheel:
        from packaging.utils import parse_wheel_filename

        name, version, _build, tags = parse_wheel_filename(path.name)
        return cls(path, canon(str(name)), str(version), sorted(str(t) for t in tags))

    def metadata(self) -> dict[str, list[str]]:
        with zipfile.ZipFile(self.path) as z:
            meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA") and n.count("/") == 1)
            msg = Parser().parsestr(z.read(meta).decode("utf-8"))
        return {"Requires-Dist": msg.get_all("Requires-Dist") or [], "Requires-Python": msg.get_all("Requires-Python") or []}


def target_tags():
    """Every tag CPython 3.12 on x86-64 Linux (glibc <= 2.MAX_GLIBC_MINOR) installs, as strings."""
    from packaging import tags

    plats = PLATFORMS + ["linux_x86_64"]
    out = set()
    for t in tags.cpython_tags(TARGET_PYTHON, abis=["cp312", "abi3", "none"], platforms=plats):
        out.add(str(t))
    for t in tags.compatible_tags(TARGET_PYTHON, "cp312", plats):
        out.add(str(t))
    out.discard("cp312-cp312-linux_x86_64")  # not portable: only manylinux / any
    return {t for t in out if not t.endswith("linux_x86_64") or "manylinux" in t}


def wheel_suits_target(filename: str) -> bool:
    """True when a wheel's filename tags install on CPython 3.12 manylinux x86-64 (cp312 / abi3 /
    py3 code, none or cp312/abi3 ABI, manylinux*_x86_64 or any platform)."""
    from packaging.utils import parse_wheel_filename

    _n, _v, _b, wtags = parse_wheel_filename(filename)
    return any(str(t) in target_tags() for t in wtags)


# ----------------------------------------------------------------------------------------------
# The requirements walk (shared by the build and --check).


@dataclass
class Row:
    requirement: str  # as written in the parent's metadata
    required_by: str
    name: str
    status: str  # "kit", "preinstalled", "unmet"
    version: str | None  # None: not known
    note: str = ""

    @property
    def ok(self) -> bool:
        return self.status != "unmet"

    def text(self) -> str:
        where = {"kit": "kit", "preinstalled": "preinstalled", "unmet": "UNMET"}[self.status]
        ver = self.version if self.version is not None else "(version unknown)"
        if self.status == "unmet":
            return f"UNMET  {self.requirement:<44} <- {self.required_by}: {self.note}"
        extra = f"  [{self.note}]" if self.note else ""
        return f"ok     {self.requirement:<44} <- {self.required_by}: {where} {ver}{extra}"


@dataclass
class Provider:
    """Who meets a requirement: `lookup(name)` -> (source, version or None, requirement strings or
    None when not walked)."""

    kit: dict[str, Wheel] = field(default_factory=dict)
    installed: bool = False  # on the GPU machine: ask importlib.metadata (the kit is on PYTHONPATH)
    kit_site: str | None = None  # where the kit was installed (to tell kit from preinstalled)

    def lookup(self, name: str) -> tuple[str, str | None, list[str] | None] | None:
        if self.installed:
            from importlib import metadata

            try:
                dist = metadata.distribution(name)
            except metadata.PackageNotFoundError:
                return None
            loc = str(getattr(dist, "_path", ""))
            source = "kit" if self.kit_site and loc.startswith(self.kit_site) else "preinstalled"
            return source, dist.version, list(dist.requires or [])
        if name in self.kit:
            w = self.kit[name]
            return "kit", w.version, w.metadata()["Requires-Dist"]
        if name in {canon(n) for n in PREINSTALLED}:
            return "preinstalled", PREINSTALLED_VERSIONS.get(name), None
        return None

    def local_requires(self, name: str) -> list[str] | None:
        """Requirements of a preinstalled package from this machine's metadata (to follow the
        extras a requirement asks of it, e.g. fsspec[http] -> aiohttp)."""
        from importlib import metadata

        try:
            return list(metadata.requires(name) or [])
        except metadata.PackageNotFoundError:
            return None


def applies(req, extras: set[str]) -> bool:
    if req.marker is None:
        return True
    return any(req.marker.evaluate({**TARGET_MARKERS, "extra": e}) for e in (extras | {""}))


def extra_only(req, extras: set[str]) -> bool:
    """Applies for one of `extras` but not without them (the requirements an extra adds)."""
    if req.marker is None:
        return False
    return not req.marker.evaluate({**TARGET_MARKERS, "extra": ""}) and applies(req, extras)


def clause_settled(clause, floor: str) -> bool:
    """True when every version >= floor meets this specifier clause."""
    from packaging.version import Version

    fv = Version(floor)
    if clause.operator in (">=", ">"):
        return clause.contains(fv, prereleases=True)
    if clause.operator == "!=":
        if clause.version.endswith(".*"):
            prefix = Version(clause.version[:-2]).release
            return fv.release[: len(prefix)] > prefix
        return fv > Version(clause.version)
    return False


def implied_note(name: str, spec) -> str:
    """What the implied floor of a preinstalled package of unknown version says about `spec`."""
    if name not in IMPLIED_FLOORS:
        return "version unknown"
    floor, who = IMPLIED_FLOORS[name]
    settled = all(clause_settled(c, floor) for c in spec)
    return f"version unknown, >={floor} ({who} requires it) {'settles it' if settled else 'does not settle it'}"


def walk(provider: Provider, roots: list[str] = ROOTS) -> list[Row]:
    from packaging.requirements import Requirement

    rows: list[Row] = []
    seen: set[tuple[str, frozenset[str]]] = set()
    queue: list[tuple[str, str]] = [(r, "(root)") for r in roots]
    while queue:
        text, parent = queue.pop(0)
        req = Requirement(text)
        name = canon(req.name)
        found = provider.lookup(name)
        if found is None:
            rows.append(Row(text, parent, name, "unmet", None, "neither preinstalled nor in the kit"))
            continue
        source, version, requires = found
        note = ""
        if version is not None and req.specifier and not req.specifier.contains(version, prereleases=True):
            rows.append(Row(text, parent, name, "unmet", version, f"{source} has {version}"))
            continue
        if version is None and req.specifier:
            note = f"needs {req.specifier}; " + implied_note(name, req.specifier)
        extras = {canon(e) for e in req.extras}
        if source == "preinstalled" and requires is None and extras:
            requires = provider.local_requires(name)
            if requires is None:
                note = (note + "; " if note else "") + f"extras [{','.join(sorted(extras))}] not checked (no local metadata)"
                requires = []
            else:
                requires = [r for r in requires if extra_only(Requirement(r), extras)]
                note = (note + "; " if note else "") + f"extras [{','.join(sorted(extras))}] from local metadata"
        rows.append(Row(text, parent, name, source, version, note))
        key = (name, frozenset(extras))
        if requires is None or key in seen:
            continue
        seen.add(key)
        label = f"{name}{'[' + ','.join(sorted(extras)) + ']' if extras else ''} {version or ''}".strip()
        for r in requires:
            sub = Requirement(r)
            if applies(sub, extras):
                extras_txt = f"[{','.join(sorted(sub.extras))}]" if sub.extras else ""
                queue.append((f"{sub.name}{extras_txt}{sub.specifier}", label))
    return rows


def coverage_report(rows: list[Row]) -> dict:
    unmet = [r for r in rows if not r.ok]
    return {
        "requirements": len(rows),
        "unmet": len(unmet),
        "from_kit": sorted({r.name for r in rows if r.status == "kit"}),
        "preinstalled_known_version": sorted({f"{r.name} {r.version}" for r in rows if r.status == "preinstalled" and r.version}),
        "preinstalled_version_unknown": sorted({r.name for r in rows if r.status == "preinstalled" and not r.version}),
        "rows": [r.text() for r in rows],
    }


def print_coverage(rows: list[Row], out=None) -> None:
    out = out or sys.stdout  # looked up when called (a default bound at import would keep a replaced stream)
    rep = coverage_report(rows)
    print(f"requirements coverage ({len(rows)} requirements, walked from {', '.join(ROOTS)}):", file=out)
    for r in rows:
        print("  " + r.text(), file=out)
    print(f"  kit: {', '.join(rep['from_kit'])}", file=out)
    print(f"  preinstalled, version checked: {', '.join(rep['preinstalled_known_version']) or '-'}", file=out)
    print(f"  preinstalled (version unknown): {', '.join(rep['preinstalled_version_unknown']) or '-'}", file=out)
    print(f"  {'UNMET: ' + str(rep['unmet']) if rep['unmet'] else 'all requirements met'}", file=out)


# ----------------------------------------------------------------------------------------------
# Building.


def kit_wheels(kit: Path) -> dict[str, Wheel]:
    out: dict[str, Wheel] = {}
    for p in sorted(kit.glob("*.whl")):
        w = Wheel.of(p)
        if w.name in out:
            raise SystemExit(f"gpu_kit: two wheels of {w.name} in {kit}: {out[w.name].path.name}, {p.name}")
        out[w.name] = w
    return out


def run(cmd: list[str], what: str, env: dict | None = None, cwd: Path | None = None) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd)
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-15:])
        hint = ""
        if re.search(r"(Name or service not known|Temporary failure in name resolution|Network is unreachable|"
                     r"Failed to establish a new connection|No matching distribution)", tail):  # fmt: skip
            hint = "\n(building the kit needs a package index: PyPI or a mirror pip is configured for)"
        raise SystemExit(f"gpu_kit: {what} failed (exit {proc.returncode}):\n{tail}{hint}")


def pip_download(specs: list[str], dest: Path) -> None:
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--no-deps",
           "--only-binary=:all:", "--python-version", "3.12", "--implementation", "cp", "--abi", "cp312",
           "--abi", "abi3", "--abi", "none", "-d", str(dest)]  # fmt: skip
    for p in PLATFORMS:
        cmd += ["--platform", p]
    run(cmd + specs, f"pip download {' '.join(specs)}")


def pip_build_wheel(spec: str, dest: Path) -> None:
    env = {**os.environ, "DS_BUILD_OPS": "0"}  # DeepSpeed: no ops compiled ahead of time (JIT on the GPU machine)
    cmd = [sys.executable, "-m", "pip", "wheel", "-q", "--disable-pip-version-check", "--no-deps",
           "--no-binary", canon(spec.split("==")[0]), "-w", str(dest), spec]  # fmt: skip
    run(cmd, f"pip wheel {spec}", env=env)


def build_ours(kit: Path) -> Wheel:
    maturin = shutil.which("maturin", path=str(Path(sys.executable).parent)) or shutil.which("maturin")
    if not maturin:
        raise SystemExit("gpu_kit: maturin not found (run `make setup`)")
    with tempfile.TemporaryDirectory(prefix="gpu-kit-maturin-") as tmp:
        run([maturin, "build", "--release", "-q", "-o", tmp], "maturin build --release", cwd=ROOT)
        built = sorted(Path(tmp).glob("olmocr_rl-*.whl"))
        if len(built) != 1:
            raise SystemExit(f"gpu_kit: maturin built {[p.name for p in built]}, expected one olmocr_rl wheel")
        for old in kit.glob("olmocr_rl-*.whl"):
            old.unlink()
        dest = kit / built[0].name
        shutil.move(str(built[0]), dest)
    w = Wheel.of(dest)
    if not any("abi3" in t for t in w.tags):
        raise SystemExit(f"gpu_kit: {dest.name} is not an abi3 wheel")
    return w


def copy_katex(kit: Path) -> dict:
    sys.path.insert(0, str(ROOT))
    from olmocr_rl import _katex

    dest = kit / KATEX_FILE
    src = _katex.find_katex_js()
    if src is not None and Path(src).is_file() and sha256(Path(src)) == _katex.KATEX_SHA256:
        if not dest.is_file() or sha256(dest) != _katex.KATEX_SHA256:
            shutil.copyfile(src, dest)
        origin = str(src)
    elif dest.is_file() and sha256(dest) == _katex.KATEX_SHA256:
        origin = "kit (kept)"
    else:
        try:
            _katex.install(dest_dir=kit)  # downloads the olmocr wheel and checks the sha256
        except _katex.KatexInstallError as e:
            raise SystemExit(f"gpu_kit: no katex.min.js ({e})") from None
        origin = f"olmocr=={_katex.OLMOCR_PIN} wheel (downloaded)"
    digest = sha256(dest)
    if digest != _katex.KATEX_SHA256:
        raise SystemExit(f"gpu_kit: {dest} has sha256 {digest}, not KaTeX {_katex.KATEX_VERSION}'s")
    return {"file": KATEX_FILE, "version": _katex.KATEX_VERSION, "size": dest.stat().st_size, "sha256": digest, "from": origin}


def travelling_tree_bytes() -> tuple[int, int]:
    """(bytes, files) of what travels to the GPU machine besides carried paths: tracked and
    untracked-not-ignored files of the working tree."""
    out = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    total = files = 0
    for rel in out.decode().split("\0"):
        p = ROOT / rel
        if rel and p.is_file() and not p.is_symlink():
            total += p.stat().st_size
            files += 1
    return total, files


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


def read_manifest(kit: Path) -> dict:
    try:
        return json.loads((kit / MANIFEST).read_text())
    except (OSError, ValueError):
        return {}


def reusable(kit: Path, manifest: dict) -> dict[str, str]:
    """{name: file} of the pinned wheels already in the kit as the manifest recorded them."""
    ok = {}
    for entry in manifest.get("wheels", []):
        p = kit / entry.get("file", "")
        name = canon(entry.get("name", ""))
        if (name in KIT_PINS and entry.get("version") == KIT_PINS[name] and p.is_file()
                and p.stat().st_size == entry.get("size") and sha256(p) == entry.get("sha256")):  # fmt: skip
            ok[name] = p.name
    return ok


def build(kit: Path) -> int:
    t0 = time.perf_counter()
    kit.mkdir(parents=True, exist_ok=True)
    manifest = read_manifest(kit)
    keep = reusable(kit, manifest)
    # Drop what is not (or no longer) part of the kit: stale versions, unlisted files.
    for p in kit.glob("*.whl"):
        w = Wheel.of(p)
        if w.name == canon(OURS):
            continue
        if keep.get(w.name) != p.name:
            p.unlink()
    todo = [n for n in KIT_PINS if n not in keep]
    downloads = [f"{n}=={KIT_PINS[n]}" for n in todo if n not in BUILT_FROM_SDIST]
    if downloads:
        print(f"gpu_kit: downloading {', '.join(downloads)}", flush=True)
        pip_download(downloads, kit)
    for n in todo:
        if n in BUILT_FROM_SDIST:
            print(f"gpu_kit: building {n}=={KIT_PINS[n]} (sdist -> py3-none-any wheel)", flush=True)
            pip_build_wheel(f"{n}=={KIT_PINS[n]}", kit)
    print(f"gpu_kit: reused {len(keep)} wheel(s) from the manifest, fetched {len(todo)}", flush=True)
    print("gpu_kit: building olmocr-rl (maturin, abi3)", flush=True)
    ours = build_ours(kit)
    katex = copy_katex(kit)
    wheels = kit_wheels(kit)
    problems = []
    for w in wheels.values():
        if not wheel_suits_target(w.path.name):
            problems.append(f"{w.path.name}: not installable on CPython 3.12 manylinux x86_64")
        if w.name in {canon(n) for n in PREINSTALLED}:
            problems.append(f"{w.path.name}: the GPU machine has {w.name} preinstalled; the kit must not shadow it")
        if w.name != ours.name and w.name not in KIT_PINS:
            problems.append(f"{w.path.name}: not a pinned kit wheel")
    rows = walk(Provider(kit=wheels))
    rep = coverage_report(rows)
    kit_bytes = folder_bytes(kit)
    tree_bytes, tree_files = travelling_tree_bytes()
    total = kit_bytes + tree_bytes
    manifest = {
        "target": "CPython 3.12 (cp312), manylinux x86_64 (glibc <= 2.%d)" % MAX_GLIBC_MINOR,
        "pins": KIT_PINS,
        "wheels": [
            {
                "file": w.path.name,
                "name": w.name,
                "version": w.version,
                "tags": w.tags,
                "size": w.path.stat().st_size,
                "sha256": sha256(w.path),
                "source": "maturin (this tree)" if w.name == ours.name else ("built from sdist" if w.name in BUILT_FROM_SDIST else "pypi"),
            }
            for w in wheels.values()
        ],  # fmt: skip
        "katex": katex,
        "kit_bytes": kit_bytes,
        "travelling_tree": {"bytes": tree_bytes, "files": tree_files},
        "total_bytes": total,
        "size_limit_mib": SIZE_LIMIT_MIB,
        "coverage": {k: v for k, v in rep.items()},
        "run": f"scripts/gpu_check.sh --kit {kit.relative_to(ROOT) if kit.is_relative_to(ROOT) else kit}",
        "install": "python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target SITE KIT/*.whl",
    }
    (kit / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    kit_bytes = folder_bytes(kit)  # with the manifest just written
    total = kit_bytes + tree_bytes
    print_coverage(rows)
    print(f"\ngpu_kit: {len(wheels)} wheels + {KATEX_FILE} in {kit.relative_to(ROOT) if kit.is_relative_to(ROOT) else kit}:")
    for w in manifest["wheels"]:
        print(f"  {w['file']:<78} {mib(w['size']):>9}  {w['sha256'][:12]}")
    print(f"  {KATEX_FILE:<78} {mib(katex['size']):>9}  {katex['sha256'][:12]}")
    print(f"gpu_kit: kit {mib(kit_bytes)} + working tree {mib(tree_bytes)} ({tree_files} files) = {mib(total)} "
          f"(limit {SIZE_LIMIT_MIB} MiB); {time.perf_counter() - t0:.1f} s")  # fmt: skip
    if total > SIZE_LIMIT_MIB * 2**20:
        problems.append(f"kit + working tree is {mib(total)}, over the {SIZE_LIMIT_MIB} MiB limit")
    if rep["unmet"]:
        problems.append(f"{rep['unmet']} requirement(s) unmet (see UNMET above)")
    if problems:
        for p in problems:
            print(f"gpu_kit: ERROR: {p}", file=sys.stderr)
        return 1
    rel = kit.relative_to(ROOT) if kit.is_relative_to(ROOT) else kit
    print("\nOn the GPU machine (carry the kit folder with the working tree):")
    print(f"    scripts/gpu_check.sh --kit {rel}")
    print(f'    (a device run: carry ["{rel}"], timeout ~540 s (the check keeps to ~7-8 min); it writes $OUT/gpu_check.json)')
    return 0


def check(kit: Path, installed: bool) -> int:
    if installed:
        provider = Provider(installed=True, kit_site=os.environ.get("GPU_CHECK_KIT_SITE"))
    else:
        if not kit.is_dir():
            print(f"gpu_kit: no kit in {kit}; run `make gpu-kit`", file=sys.stderr)
            return 2
        provider = Provider(kit=kit_wheels(kit))
        bad = [w.path.name for w in provider.kit.values() if not wheel_suits_target(w.path.name)]
        for b in bad:
            print(f"gpu_kit: ERROR: {b}: not installable on CPython 3.12 manylinux x86_64", file=sys.stderr)
        if bad:
            return 1
    rows = walk(provider)
    print_coverage(rows)
    return 1 if any(not r.ok for r in rows) else 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kit", default=str(KIT_DIR), help="the kit folder (default: target/gpu-kit)")
    p.add_argument("--check", action="store_true", help="only check the requirements coverage of an existing kit")
    p.add_argument("--installed", action="store_true",
                   help="with --check: the running Python's installed distributions (on the GPU machine, kit on PYTHONPATH)")  # fmt: skip
    a = p.parse_args()
    kit = Path(a.kit).resolve()
    if a.check or a.installed:
        return check(kit, a.installed)
    return build(kit)


if __name__ == "__main__":
    raise SystemExit(main())
