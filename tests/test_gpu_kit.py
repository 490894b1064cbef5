"""`make gpu-kit` (scripts/gpu_kit.py): the offline kit for the GPU machine (CPython 3.12, no package
index) holds only wheels that install there, stays under the size limit together with the working
tree, and meets every requirement of our training path; and `scripts/gpu_check.sh --tiny` writes
the GPU check's JSON with every field filled.

The kit's logic is tested offline, against a fixed package list written here: small wheels (a
METADATA file each) for a made-up kit and a made-up GPU machine, with pip, maturin and KaTeX
replaced by functions that write such wheels; everything is written under the test's temporary
folder. Building the real kit (PyPI, maturin) is `make gpu-kit`'s job, not the tests'."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import need
from packaging.utils import parse_wheel_filename

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import gpu_kit

MANYLINUX_X86_64 = re.compile(r"manylinux(1|2010|2014|_2_\d+)_x86_64")

# The fixed package list: a GPU machine with these preinstalled (None: version unknown) ...
PREINSTALLED = {"torch": "2.11.0", "transformers": "5.17.0", "accelerate": "1.15.0", "typing-extensions": None, "pyarrow": None,
                "numpy": "2.5.2", "peft": None}  # fmt: skip
IMPLIED_FLOORS = {"typing-extensions": ("4.10.0", "torch 2.11.0")}
# ... and a kit of these wheels: name -> (version, requirements, wheel tag).
KIT = {
    "trl": ("1.16.0", ["accelerate>=1.4.0", "datasets>=3.0.0", "transformers>=4.56.2"], "py3-none-any"),
    "datasets": ("5.2.0", ["dill<0.4.2,>=0.3.0", "numpy>=1.17", "pyarrow>=21.0.0"], "py3-none-any"),
    "dill": ("0.4.1", [], "py3-none-any"),
    "deepspeed": ("0.19.8", ["hjson", "pydantic>=2.0.0", "torch", "nvidia-ml-py; platform_system == 'Windows'"], "py3-none-any"),
    "hjson": ("3.1.0", [], "py3-none-any"),
    "pydantic": ("2.9.2", ["pydantic-core==2.23.4", "typing-extensions>=4.6.1", "email-validator>=2.0.0; extra == 'email'"], "py3-none-any"),
    "pydantic-core": ("2.23.4", ["typing-extensions!=4.7.0,>=4.6.0"], "cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64"),
    "olmocr-rl": ("0.1.0", ["numpy>=1.22", "torch>=2.11; extra == 'train'", "trl>=1.11; extra == 'train'",
                            "deepspeed>=0.18.6; extra == 'deepspeed'"], "cp310-abi3-manylinux_2_34_x86_64"),
}  # fmt: skip
ROOTS = ["olmocr-rl[train,deepspeed]", "trl", "datasets", "deepspeed"]


def make_wheel(folder: Path, name: str, version: str, requires: list[str], tag: str, pad: int = 0) -> Path:
    dist = name.replace("-", "_")
    path = folder / f"{dist}-{version}-{tag}.whl"
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + "".join(f"Requires-Dist: {r}\n" for r in requires)
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(f"{dist}-{version}.dist-info/METADATA", meta)
        z.writestr(f"{dist}/__init__.py", "#" * pad)
    return path


@pytest.fixture
def machine(monkeypatch, tmp_path):
    """gpu_kit pointed at the fixed package list; its network and build steps write fake wheels."""
    monkeypatch.setattr(gpu_kit, "PREINSTALLED", list(PREINSTALLED))
    monkeypatch.setattr(gpu_kit, "PREINSTALLED_VERSIONS", {k: v for k, v in PREINSTALLED.items() if v})
    monkeypatch.setattr(gpu_kit, "IMPLIED_FLOORS", IMPLIED_FLOORS)
    monkeypatch.setattr(gpu_kit, "KIT_PINS", {n: v for n, (v, _r, _t) in KIT.items() if n != "olmocr-rl"})
    monkeypatch.setattr(gpu_kit, "ROOTS", ROOTS)
    monkeypatch.setattr(gpu_kit.walk, "__defaults__", (ROOTS,))
    calls: dict[str, list] = {"download": [], "sdist": []}

    def download(specs, dest):
        calls["download"].append(list(specs))
        for spec in specs:
            name, version = spec.split("==")
            make_wheel(dest, name, version, KIT[name][1], KIT[name][2])

    def build_wheel(spec, dest):
        calls["sdist"].append(spec)
        name, version = spec.split("==")
        make_wheel(dest, name, version, KIT[name][1], KIT[name][2])

    def ours(kit):
        for old in kit.glob("olmocr_rl-*.whl"):
            old.unlink()
        return gpu_kit.Wheel.of(make_wheel(kit, "olmocr-rl", *KIT["olmocr-rl"]))

    def katex(kit):
        (kit / gpu_kit.KATEX_FILE).write_text("katex")
        return {"file": gpu_kit.KATEX_FILE, "size": 5, "sha256": hashlib.sha256(b"katex").hexdigest()}

    monkeypatch.setattr(gpu_kit, "pip_download", download)
    monkeypatch.setattr(gpu_kit, "pip_build_wheel", build_wheel)
    monkeypatch.setattr(gpu_kit, "build_ours", ours)
    monkeypatch.setattr(gpu_kit, "copy_katex", katex)
    monkeypatch.setattr(gpu_kit, "travelling_tree_bytes", lambda: (3 * 2**20, 100))
    monkeypatch.setattr(gpu_kit, "ROOT", tmp_path)  # nothing of the repository is written
    return calls


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


@pytest.mark.parametrize(
    "filename,installs",
    [
        ("trl-1.16.0-py3-none-any.whl", True),
        ("orjson-3.13.0-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl", True),
        ("olmocr_rl-0.1.0-cp310-abi3-manylinux_2_34_x86_64.whl", True),
        ("orjson-3.13.0-cp311-cp311-manylinux_2_17_x86_64.whl", False),  # another Python
        ("orjson-3.13.0-cp312-cp312-musllinux_1_2_x86_64.whl", False),  # musl
        ("orjson-3.13.0-cp312-cp312-manylinux_2_17_aarch64.whl", False),  # another machine
        ("orjson-3.13.0-cp312-cp312-macosx_11_0_arm64.whl", False),
        ("olmocr_rl-0.1.0-cp313-abi3-manylinux_2_34_x86_64.whl", False),  # abi3 from 3.13 on
        ("pypdfium2-5.15.2-py3-none-manylinux_2_17_x86_64.whl", True),
        ("thing-1.0-cp312-cp312-linux_x86_64.whl", False),  # not portable
    ],
)
def test_wheel_tags_that_install_on_the_gpu_machine(filename, installs):
    assert gpu_kit.wheel_suits_target(filename) is installs
    if not filename.endswith("linux_x86_64.whl") or "manylinux" in filename:
        assert suits_cp312_manylinux_x86_64(filename) is installs  # the independent reading agrees


def test_coverage_walks_every_requirement_to_the_kit_or_the_machine(machine, tmp_path):
    kit = tmp_path / "kit"
    kit.mkdir()
    for name, (version, requires, tag) in KIT.items():
        make_wheel(kit, name, version, requires, tag)
    rows = gpu_kit.walk(gpu_kit.Provider(kit=gpu_kit.kit_wheels(kit)))
    assert all(r.ok for r in rows), [r.text() for r in rows if not r.ok]
    met_by = {r.name: r.status for r in rows}
    for name in ("trl", "datasets", "deepspeed", "olmocr-rl", "pydantic", "pydantic-core", "dill", "hjson"):
        assert met_by[name] == "kit", name
    for name in ("torch", "transformers", "accelerate", "pyarrow", "typing-extensions", "numpy"):
        assert met_by[name] == "preinstalled", name
    assert "nvidia-ml-py" not in met_by and "email-validator" not in met_by  # markers and extras that do not apply
    floors = [r for r in rows if r.name == "typing-extensions"]
    # pydantic's >=4.6.1 is settled by torch's floor; pydantic-core's !=4.7.0 too.
    assert floors and all("settles it" in r.text() for r in floors), [r.text() for r in floors]
    assert any("preinstalled (version unknown)" in r.text() for r in rows if r.name == "pyarrow")

    # Missing from the kit: unmet, naming who needs it. Too old on the machine: unmet, with its version.
    del_kit = gpu_kit.kit_wheels(kit)
    del del_kit["pydantic"]
    rows = gpu_kit.walk(gpu_kit.Provider(kit=del_kit))
    assert [(r.name, r.required_by.split()[0]) for r in rows if not r.ok] == [("pydantic", "deepspeed")]
    rows = gpu_kit.walk(gpu_kit.Provider(kit=gpu_kit.kit_wheels(kit)), roots=["transformers>=5.18", "accelerate>=1.15"])
    assert [(r.name, r.ok) for r in rows] == [("transformers", False), ("accelerate", True)]
    assert "preinstalled has 5.17.0" in rows[0].text()


def test_build_writes_the_kit_then_reuses_it(machine, tmp_path, capfd):
    kit = tmp_path / "kit"
    assert gpu_kit.build(kit) == 0
    out = capfd.readouterr().out
    pinned = {n for n in KIT if n != "olmocr-rl"}
    assert "reused 0 wheel(s) from the manifest, fetched 7" in out and "all requirements met" in out
    assert machine["sdist"] == ["deepspeed==0.19.8"]  # built from its sdist, the rest downloaded
    assert sorted(s.split("==")[0] for spec in machine["download"] for s in spec) == sorted(pinned - {"deepspeed"})
    manifest = json.loads((kit / "manifest.json").read_text())
    assert {e["name"] for e in manifest["wheels"]} == pinned | {"olmocr-rl"}
    for e in manifest["wheels"]:
        data = (kit / e["file"]).read_bytes()
        assert (e["size"], e["sha256"]) == (len(data), hashlib.sha256(data).hexdigest())
    assert manifest["coverage"]["unmet"] == 0 and manifest["travelling_tree"]["bytes"] == 3 * 2**20
    assert {p.name for p in tmp_path.iterdir()} == {"kit"}  # nothing written anywhere else

    # Again: every pinned wheel matches the manifest, nothing is fetched; a changed or unknown
    # wheel is replaced, a pin's new version fetched.
    machine["download"].clear()
    machine["sdist"].clear()
    assert gpu_kit.build(kit) == 0
    assert "reused 7 wheel(s) from the manifest, fetched 0" in capfd.readouterr().out
    assert machine["download"] == [] and machine["sdist"] == []
    dill = next(kit.glob("dill-*.whl"))
    dill.write_bytes(dill.read_bytes() + b"changed")
    stray = make_wheel(kit, "stray", "1.0", [], "py3-none-any")
    assert gpu_kit.build(kit) == 0
    assert machine["download"] == [["dill==0.4.1"]] and not stray.exists()
    assert "reused 6 wheel(s) from the manifest, fetched 1" in capfd.readouterr().out


def test_build_refuses_what_would_not_work_there(machine, tmp_path, monkeypatch, capfd):
    kit = tmp_path / "kit"
    assert gpu_kit.build(kit) == 0
    capfd.readouterr()
    # The index offers hjson only for another Python; a pin of a package the machine has; a kit too large.
    (kit / "hjson-3.1.0-py3-none-any.whl").unlink()
    monkeypatch.setattr(
        gpu_kit, "pip_download", lambda specs, dest: make_wheel(dest, "hjson", "3.1.0", [], "cp311-cp311-manylinux_2_17_x86_64")
    )
    assert gpu_kit.build(kit) == 1
    assert "hjson-3.1.0-cp311-cp311-manylinux_2_17_x86_64.whl: not installable on CPython 3.12" in capfd.readouterr().err
    monkeypatch.setattr(gpu_kit, "PREINSTALLED", [*gpu_kit.PREINSTALLED, "dill"])
    monkeypatch.setattr(gpu_kit, "SIZE_LIMIT_MIB", 3)
    assert gpu_kit.build(kit) == 1
    err = capfd.readouterr().err
    assert "the GPU machine has dill preinstalled; the kit must not shadow it" in err and "over the 3 MiB limit" in err


def test_check_exits_non_zero_on_an_unmet_requirement(machine, tmp_path, capfd):
    kit = tmp_path / "kit"
    assert gpu_kit.build(kit) == 0
    capfd.readouterr()
    assert gpu_kit.check(kit, installed=False) == 0 and "all requirements met" in capfd.readouterr().out
    next(kit.glob("hjson-*.whl")).unlink()
    assert gpu_kit.check(kit, installed=False) == 1 and "UNMET" in capfd.readouterr().out
    assert gpu_kit.check(tmp_path / "nowhere", installed=False) == 2


def test_kit_pins_are_the_versions_ci_tests():
    """The real pins: the kit's trl, datasets and deepspeed are the dev extra's (what CI runs)."""
    import tomllib

    dev = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["dev"]
    pins = dict(r.split("==") for r in dev if "==" in r)
    for name in ("trl", "datasets", "deepspeed"):
        assert gpu_kit.KIT_PINS[name] == pins[name], name


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
