"""Where math checks find KaTeX 0.16.21's `katex.min.js` (never part of this repository), and
`olmocr-rl install-katex`, which puts it there.

Order: the `OLMOCR_RL_KATEX_JS` environment variable; else the user cache
(`$XDG_CACHE_HOME` or ~/.cache, then `olmocr-rl/katex/0.16.21/katex.min.js`), where
`install-katex` stores it; else the file shipped inside an installed `olmocr` PyPI package, found
without importing it (its `bench.katex` package imports Playwright). The file is the one the
reference renders with: taken from the olmocr 0.4.27 wheel and checked against its sha256. The
Rust core checks the version again when it loads the file.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

from olmocr_rl.errors import UserError

OLMOCR_PIN = "0.4.27"  # the olmocr release whose wheel carries the reference's KaTeX
KATEX_VERSION = "0.16.21"
KATEX_SHA256 = "863811e2baa0849c77bc92d26d44f4d0a4843c2a8ab52c462017dea57316e4d8"
WHEEL_MEMBER = "olmocr/bench/katex/katex.min.js"


class KatexInstallError(UserError, RuntimeError):
    """install-katex could not obtain a verified katex.min.js."""


PROMPTS_MEMBER = "olmocr/prompts/prompts.py"  # olmOCR's prompts (olmocr_rl/prompts.py reads one)
PROMPTS_SHA256 = "9615450d797501c67c69c5b52b5c91f59e734e111fc68c51be9d02a55ae7d634"

# What `olmocr-rl synth` takes from the same wheel (olmocr_rl/synth/assets.py): the KaTeX stylesheet
# and auto-render script upstream's renderer adds to each page (stored beside katex.min.js), and the
# synthetic pipeline's module, whose conversation with the model is read from it (stored beside
# prompts.py). member -> (where: "katex" or "olmocr", sha256). Installed when the wheel has them.
SYNTH_MEMBERS = {
    "olmocr/bench/katex/katex.min.css": ("katex", "f787891b550d554c214aa8902f39ac46df2dbd48fdec500a2040a5dce1e8ab58"),
    "olmocr/bench/katex/auto-render.min.js": ("katex", "bb53eb953394531aae36fdd537065c4244eb8542901a3ce914601d932675b8ac"),
    "olmocr/bench/synth/mine_html_templates.py": ("olmocr", "bb594cd859931fd90145759f23cbd95095955ba88f3596b4f69223fc819b7fbd"),
}


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "olmocr-rl" / "katex" / KATEX_VERSION


def olmocr_cache_dir() -> Path:
    """Where install-katex stores the olmocr wheel's prompts.py."""
    return cache_dir().parent.parent / f"olmocr-{OLMOCR_PIN}"


def find_katex_js() -> Path | None:
    env = os.environ.get("OLMOCR_RL_KATEX_JS")
    if env:
        return Path(env)
    cached = cache_dir() / "katex.min.js"
    if cached.is_file():
        return cached
    try:
        spec = importlib.util.find_spec("olmocr")
    except (ImportError, ValueError):
        return None
    for root in (spec.submodule_search_locations or []) if spec else []:
        path = Path(root) / "bench" / "katex" / "katex.min.js"
        if path.is_file():
            return path
    return None


def configure() -> None:
    """Points the Rust core at the KaTeX file (call again after installing it)."""
    import olmocr_rl._core as _core

    path = find_katex_js()
    _core.set_katex_path(str(path) if path else None)


def download_wheel(dest: Path) -> Path:
    """The olmocr wheel from the package index (pip, no dependencies)."""
    import subprocess

    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--disable-pip-version-check",
           "-q", "-d", str(dest), f"olmocr=={OLMOCR_PIN}"]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wheels = sorted(dest.glob(f"olmocr-{OLMOCR_PIN}-*.whl"))
    if proc.returncode != 0 or not wheels:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no wheel downloaded"]
        raise KatexInstallError(
            f"could not download olmocr=={OLMOCR_PIN} with pip ({tail[0]}); on a machine without internet, download "
            f"the wheel elsewhere (`pip download --no-deps olmocr=={OLMOCR_PIN}`) and pass it with --from-wheel"
        )
    return wheels[0]


def install(from_wheel: str | os.PathLike[str] | None = None, dest_dir: str | os.PathLike[str] | None = None) -> Path:
    """Extracts katex.min.js and olmOCR's prompts.py from the olmocr wheel (downloaded, or
    `from_wheel`), checks their sha256 and writes them to `dest_dir` (default: the user cache;
    prompts.py to its olmocr-0.4.27 folder). Returns katex.min.js's path."""
    import hashlib
    import tempfile
    import zipfile

    dest = Path(dest_dir) if dest_dir is not None else cache_dir()
    with tempfile.TemporaryDirectory(prefix="olmocr-rl-katex-") as tmp:
        wheel = Path(from_wheel) if from_wheel is not None else download_wheel(Path(tmp))
        try:
            with zipfile.ZipFile(wheel) as z:
                data = z.read(WHEEL_MEMBER)
                prompts = z.read(PROMPTS_MEMBER) if PROMPTS_MEMBER in z.namelist() else None
                synth = {m: z.read(m) for m in SYNTH_MEMBERS if m in z.namelist()}
        except FileNotFoundError:
            raise KatexInstallError(f"{wheel}: no such file") from None
        except zipfile.BadZipFile:
            raise KatexInstallError(f"{wheel}: not a wheel (zip) file") from None
        except KeyError:
            raise KatexInstallError(f"{wheel}: has no {WHEEL_MEMBER} (expected the olmocr {OLMOCR_PIN} wheel)") from None
    digest = hashlib.sha256(data).hexdigest()
    if digest != KATEX_SHA256:
        raise KatexInstallError(
            f"{wheel}: {WHEEL_MEMBER} has sha256 {digest}, not KaTeX {KATEX_VERSION}'s {KATEX_SHA256} "
            f"(expected the olmocr {OLMOCR_PIN} wheel)"
        )
    if prompts is None or hashlib.sha256(prompts).hexdigest() != PROMPTS_SHA256:
        raise KatexInstallError(f"{wheel}: {PROMPTS_MEMBER} is missing or not olmocr {OLMOCR_PIN}'s (sha256 mismatch)")
    for member, content in synth.items():
        if hashlib.sha256(content).hexdigest() != SYNTH_MEMBERS[member][1]:
            raise KatexInstallError(f"{wheel}: {member} is not olmocr {OLMOCR_PIN}'s (sha256 mismatch)")
    target = _write_atomic(dest, "katex.min.js", data)
    olmocr_dir = olmocr_cache_dir() if dest_dir is None else dest
    _write_atomic(olmocr_dir, "prompts.py", prompts)
    for member, content in synth.items():
        _write_atomic(dest if SYNTH_MEMBERS[member][0] == "katex" else olmocr_dir, member.rsplit("/", 1)[1], content)
    return target


def _write_atomic(folder: Path, name: str, data: bytes) -> Path:
    """Atomic: a concurrent reader sees the old file or the new one."""
    from olmocr_rl.atomic import write_bytes

    folder.mkdir(parents=True, exist_ok=True)
    target = folder / name
    write_bytes(target, data)
    return target
