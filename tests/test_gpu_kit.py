"""`make gpu-kit` (scripts/gpu_kit.py): the offline kit for the GPU machine (CPython 3.12, no package
index) holds only wheels that install there, stays under the size limit together with the working
tree, and meets every requirement of our training path; and `scripts/gpu_check.sh --tiny` writes
the GPU check's JSON with every field filled.

Building the kit needs a package index (PyPI) the first time; later builds reuse the wheels that
match target/gpu-kit/manifest.json, so only olmocr-rl's own wheel is rebuilt (seconds)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import need
from packaging.utils import parse_wheel_filename

ROOT = Path(__file__).resolve().parent.parent
KIT = ROOT / "target" / "gpu-kit"
sys.path.insert(0, str(ROOT / "scripts"))
import gpu_kit

BUILD_LIMIT_S = 180
MANYLINUX_X86_64 = re.compile(r"manylinux(1|2010|2014|_2_\d+)_x86_64")


@pytest.fixture(scope="module")
def built_kit():
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "gpu_kit.py")], capture_output=True, text=True, timeout=900)
    elapsed = time.perf_counter() - t0
    out = proc.stdout + proc.stderr
    if proc.returncode != 0 and "needs a package index" in out:
        pytest.fail(
            "building the GPU kit needs network access to a package index (PyPI, or the mirror pip is configured "
            f"for) to download the wheels the GPU machine lacks; pip said:\n{out[-3000:]}"
        )
    assert proc.returncode == 0, out[-6000:]
    assert elapsed < BUILD_LIMIT_S, f"building the kit took {elapsed:.0f} s (limit {BUILD_LIMIT_S} s)"
    return json.loads((KIT / "manifest.json").read_text()), proc.stdout


def suits_cp312_manylinux_x86_64(filename: str) -> bool:
    """Independent of gpu_kit's own tag logic: some tag is (cp312 | cp3X-abi3 with X <= 12 | py3 |
    py312) x (cp312 | abi3 | none) x (manylinux*_x86_64 | any)."""
    _name, _version, _build, tags = parse_wheel_filename(filename)
    for t in tags:
        interp_ok = t.interpreter in ("cp312", "py3", "py312") or (
            t.abi == "abi3" and re.fullmatch(r"cp3(\d+)", t.interpreter) and int(t.interpreter[3:]) <= 12
        )
        abi_ok = t.abi in ("cp312", "abi3", "none")
        plat_ok = t.platform == "any" or bool(MANYLINUX_X86_64.fullmatch(t.platform))
        if interp_ok and abi_ok and plat_ok:
            return True
    return False


def test_kit_wheels_suit_the_gpu_machine_and_fit(built_kit):
    manifest, stdout = built_kit
    wheels = sorted(KIT.glob("*.whl"))
    assert {w.name for w in wheels} == {e["file"] for e in manifest["wheels"]}
    names = {}
    for w in wheels:
        assert suits_cp312_manylinux_x86_64(w.name), f"{w.name} does not install on CPython 3.12 manylinux x86_64"
        name, version, _b, _t = parse_wheel_filename(w.name)
        names[str(name)] = str(version)
    for entry in manifest["wheels"]:
        p = KIT / entry["file"]
        assert p.stat().st_size == entry["size"] and hashlib.sha256(p.read_bytes()).hexdigest() == entry["sha256"], entry
    # The training path's packages the GPU machine lacks, at the versions CI tests.
    assert names["trl"] == "1.16.0" and names["datasets"] == "5.2.0" and names["deepspeed"] == "0.19.8"
    assert {"pypdfium2", "orjson", "pypdf", "pydantic", "olmocr-rl"} <= set(names)
    ours = next(w for w in wheels if w.name.startswith("olmocr_rl-"))
    assert "-abi3-" in ours.name
    # Nothing the GPU machine has preinstalled (its torch/transformers must be used as they are).
    preinstalled = {gpu_kit.canon(n) for n in gpu_kit.PREINSTALLED}
    assert not {gpu_kit.canon(n) for n in names} & preinstalled
    katex = KIT / "katex.min.js"
    assert hashlib.sha256(katex.read_bytes()).hexdigest() == manifest["katex"]["sha256"] == gpu_kit_katex_sha()
    # Kit + travelling working tree under the limit (recomputed here, not taken from the manifest).
    kit_bytes = sum(p.stat().st_size for p in KIT.rglob("*") if p.is_file())
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, capture_output=True, check=True)
    tree = sum((ROOT / f).stat().st_size for f in listed.stdout.decode().split("\0") if f and (ROOT / f).is_file())
    assert kit_bytes + tree < gpu_kit.SIZE_LIMIT_MIB * 2**20, (kit_bytes, tree)
    assert manifest["total_bytes"] < gpu_kit.SIZE_LIMIT_MIB * 2**20
    assert "scripts/gpu_check.sh --kit target/gpu-kit" in stdout


def gpu_kit_katex_sha() -> str:
    sys.path.insert(0, str(ROOT))
    from olmocr_rl._katex import KATEX_SHA256

    return KATEX_SHA256


def test_rebuild_reuses_the_manifest(built_kit):
    """A second build downloads nothing (the wheels match the manifest) and stays fast."""
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "gpu_kit.py")], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "downloading" not in proc.stdout and f"reused {len(gpu_kit.KIT_PINS)} wheel(s)" in proc.stdout
    assert time.perf_counter() - t0 < 60


def test_coverage_check_reports_no_unmet_requirement(built_kit):
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "gpu_kit.py"), "--check"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    assert "UNMET" not in proc.stdout and "all requirements met" in proc.stdout
    rows = gpu_kit.walk(gpu_kit.Provider(kit=gpu_kit.kit_wheels(KIT)))
    assert rows and all(r.ok for r in rows)
    met_by = {r.name: r.status for r in rows}
    # Every root's requirements were walked: trl's, datasets', deepspeed's and olmocr-rl's (with
    # the train/deepspeed extras), down to pydantic's; torch and transformers come preinstalled.
    for name in ("trl", "datasets", "deepspeed", "olmocr-rl", "pydantic", "pydantic-core", "dill", "multiprocess", "pypdfium2"):
        assert met_by[name] == "kit", name
    for name in ("torch", "transformers", "accelerate", "peft", "pyarrow", "typing-extensions"):
        assert met_by[name] == "preinstalled", name
    versions = {r.name: r.version for r in rows}
    assert versions["transformers"] == "5.17.0" and versions["torch"] == "2.11.0"
    assert any("preinstalled (version unknown)" in r.text() for r in rows)


def test_coverage_check_finds_what_is_missing_or_too_old(built_kit):
    """The check fails when a requirement is neither in the kit nor preinstalled, or when a
    preinstalled package's known version does not meet the specifier."""
    wheels = gpu_kit.kit_wheels(KIT)
    del wheels["pydantic"]
    rows = gpu_kit.walk(gpu_kit.Provider(kit=wheels))
    assert [(r.name, r.required_by.split()[0]) for r in rows if not r.ok] == [("pydantic", "deepspeed")]
    rows = gpu_kit.walk(gpu_kit.Provider(kit=gpu_kit.kit_wheels(KIT)), roots=["transformers>=5.18", "accelerate>=1.15"])
    assert [(r.name, r.ok) for r in rows] == [("transformers", False), ("accelerate", True)]
    assert "preinstalled has 5.17.0" in rows[0].text()


def unexplained_nulls(obj, path=""):
    bad = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            if v is None and not (isinstance(obj.get(f"{k}_null_reason"), str) and obj[f"{k}_null_reason"]):
                bad.append(f"{path}/{k}")
            elif v is not None:
                bad += unexplained_nulls(v, f"{path}/{k}")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            bad += [f"{path}[{i}]"] if v is None else unexplained_nulls(v, f"{path}[{i}]")
    return bad


@pytest.mark.distributed
def test_gpu_check_tiny_writes_the_json_with_every_field_filled(tmp_path):
    need("trl")
    need("deepspeed")
    out = tmp_path / "json-out"
    env = {k: v for k, v in os.environ.items() if k != "OUT"}
    env["OUT"] = str(out)  # as on the device machine: the JSON goes to $OUT/gpu_check.json
    env["PYTHON"] = sys.executable
    cmd = [str(ROOT / "scripts" / "gpu_check.sh"), "--tiny", "--out", str(tmp_path / "work")]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1500, env=env)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-6000:]
    assert sorted(p.name for p in out.iterdir()) == ["gpu_check.json"]  # one file
    r = json.loads((out / "gpu_check.json").read_text())
    assert unexplained_nulls(r) == [] and r["unexplained_nulls"] == []
    assert r["ok"] is True and r["mode"] == "tiny (CPU)"
    for key in ("python", "torch", "torch_cuda", "transformers", "trl", "accelerate", "deepspeed", "peft", "datasets",
                "olmocr_rl", "gpu_name", "gpu_driver"):  # fmt: skip
        assert key in r["versions"], key
    assert r["versions"]["trl"] and r["versions"]["olmocr_rl"]
    assert r["versions"]["gpu_name"] is None and "CPU" in r["versions"]["gpu_name_null_reason"]
    assert {"math", "table", "present", "absent", "order"} <= set(r["reward"]["types"])
    assert r["katex_js"] and r["reward"]["realistic_pages"]["seconds"] > 0
    # The variants are `olmocr-rl train` runs on `olmocr-rl prepare`'s folder.
    assert [v["name"] for v in r["variants"]] == ["plain", "deepspeed", "lora", "beta"]
    by = {v["name"]: v for v in r["variants"]}
    assert by["deepspeed"]["command"][:2] == ["olmocr_rl.cli", "train"] and "--launcher" in by["deepspeed"]["command"]
    assert "lora=true" in by["lora"]["command"] and "beta=0.01" in by["beta"]["command"]
    for v in r["variants"]:
        assert v["status"] == "ok", (v["name"], v.get("error"), v.get("log_tail"))
        assert len(v["steps"]) == 2
        for st in v["steps"]:
            assert st["time_s"] > 0 and st["generation_s"] > 0 and st["forward_backward_s"] > 0 and st["reward_s"] > 0
            assert st["generation_s"] + st["forward_backward_s"] + st["reward_s"] <= st["time_s"] * 1.05
            assert st["peak_memory_gib"] > 0 and 0 < st["reward_share"] < 1 and st["tokens"] > 0
        s = v["summary"]
        assert s["time_s"] > 0 and s["tokens_per_s"] > 0 and s["generated_tokens_per_s"] > 0
        assert 0 < s["reward_share"] < 1 and 0 < s["reward_share_realistic_pages"] < 1
        assert v["weights_moved"]["share"] > 0.5, (v["name"], v["weights_moved"])  # each variant trained
    assert by["deepspeed"]["world_size"] == 2 and by["plain"]["world_size"] == by["lora"]["world_size"] == 1
    assert by["lora"]["config"]["lora"] is True and by["beta"]["config"]["beta"] == 0.01
