"""A model argument that is nowhere is one `error:` line within seconds (olmocr_rl/model_ref.py):
a mistyped folder names the folder and the close names beside it, with no network; a hub id the
cache lacks is asked of the hub once, with a short timeout, and a hub that refuses, has no such
model, or hangs is named as such. `train` (its dry run too), `curate`, `generate` and `soup` alike.

The hub is a stand-in on 127.0.0.1 (HF_ENDPOINT; tests/standin_hub.py). The times are measured on
the real command line in a subprocess, imports included: what a newcomer waits."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from clirun import invoke
from conftest import need
from standin_hub import DeadHub, StandinHub, model_folder, online

need("huggingface_hub")

CLI = [sys.executable, "-c", "import sys; from olmocr_rl.cli import main; sys.exit(main())"]
LIMIT_S = 5.0  # the bound on the time to the error line


def run(args: list, cwd: Path, **env: str) -> tuple[subprocess.CompletedProcess, float]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "TRANSFORMERS_OFFLINE"))}
    start = time.monotonic()
    res = subprocess.run([*CLI, *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=120,
                         env={**clean, "HF_HUB_CACHE": str(cwd / "hub-cache"), **env})  # fmt: skip
    return res, time.monotonic() - start


def one_error_line(res: subprocess.CompletedProcess) -> str:
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 1 and len(lines) == 1 and lines[0].startswith("error: "), res.stdout + res.stderr
    return lines[0]


@pytest.fixture
def site(tmp_path, prepared, tiny_model):
    """A working folder with the prepared fixture and the tiny model as `tiny`, as a newcomer has."""
    os.symlink(tiny_model, tmp_path / "tiny")
    os.symlink(prepared, tmp_path / "prepared")
    return tmp_path


def test_a_mistyped_folder_is_named_with_the_close_names_in_a_second(site):
    with DeadHub("refuse") as hub:  # a path never reaches the hub; this one would refuse anyway
        for model in ("./tinyy", "tiny/nope", str(site / "tinyy")):
            res, took = run(["train", "prepared", "--model", model, "-o", "run", "--dry-run"], site, HF_ENDPOINT=hub.url)
            line = one_error_line(res)
            assert f"--model {model}: no such model folder" in line and took < LIMIT_S, (line, took)
            assert "hub" not in line, line
        assert "did you mean tiny?" in run(["train", "prepared", "--model", "./tinyy", "-o", "run"], site, HF_ENDPOINT=hub.url)[0].stderr
    assert not (site / "run").exists()


@pytest.mark.parametrize("mode, said", [
    ("refuse", "could not be reached (ConnectError"),
    ("found", "has no model tinyy"),
    ("hang", "did not answer within 3 s"),
])  # fmt: skip
def test_a_hub_id_nowhere_is_asked_once_and_named_in_seconds(site, mode, said):
    """`--model tinyy` (the folder is `tiny`): not a folder, not in the cache, so the hub is asked
    once; its answer ends the one error line, with the close local name and what to download."""
    with StandinHub({}) if mode == "found" else DeadHub(mode) as hub:
        res, took = run(["train", "prepared", "--model", "tinyy", "-o", "run", "--dry-run"], site, HF_ENDPOINT=hub.url)
        line = one_error_line(res)
        assert said in line and f"the hub ({hub.url})" in line, line
        assert "nothing named tinyy in" in line and "did you mean tiny?" in line, line
        assert took < LIMIT_S, took
        if mode == "found":
            assert hub.requests == ["/tinyy/resolve/main/config.json"]  # one request, no retry
            assert "hf auth login" in line
        if mode == "hang":
            assert hub.connections == 1 and took > 3.0, (hub.connections, took)
        if mode != "found":
            assert "hf download tinyy --include '*.json' '*.safetensors'" in line
    print(f"{mode}: {took:.2f} s")


def test_offline_the_cache_and_the_hub_that_has_it(site, tiny_model, monkeypatch):
    from olmocr_rl.model_ref import resolve_model

    online(monkeypatch)
    cache = site / "hub-cache"
    snap = cache / "models--org--tiny" / "snapshots" / ("0" * 40)
    snap.mkdir(parents=True)
    (snap / "config.json").symlink_to(tiny_model / "config.json")
    (cache / "models--org--tiny" / "refs").mkdir()
    (cache / "models--org--tiny" / "refs" / "main").write_text("0" * 40)
    with StandinHub({"org/other": model_folder(site / "repos", "org/other")}) as hub:
        monkeypatch.setenv("HF_HUB_CACHE", str(cache))
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        ref = resolve_model("org/tiny")
        assert (ref.where, ref.folder) == ("cache", snap) and hub.requests == []  # the cache: no request
        ref = resolve_model("org/other")
        assert (ref.where, ref.folder) == ("hub", None) and hub.requests == ["/org/other/resolve/main/config.json"]
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
        with pytest.raises(ValueError, match=r"not in the Hugging Face cache, and the hub was not asked \(HF_HUB_OFFLINE is set\)"):
            resolve_model("org/other")
        assert len(hub.requests) == 1  # offline: not asked
        assert resolve_model("org/tiny").where == "cache"  # the cache still answers offline


def test_curate_generate_and_soup_say_the_same(site, tmp_path, monkeypatch):
    online(monkeypatch)
    with StandinHub({}) as hub:
        env = {"HF_ENDPOINT": hub.url}
        res = invoke(["curate", site / "prepared", "--model", site / "tinyy", "-q"], env=env)
        assert res.exit_code == 1 and f"--model {site / 'tinyy'}: no such model folder" in res.stderr and "did you mean" in res.stderr
        res = invoke(["curate", site / "prepared", "--model", "tinyy", "-q"], env=env)
        assert res.exit_code == 1 and "has no model tinyy" in res.stderr, res.output
        res = invoke(["generate", site / "tinyy", tmp_path / "bench", "-q"], env=env)
        assert res.exit_code == 1 and f"MODEL {site / 'tinyy'}: no such model folder" in res.stderr, res.output
        res = invoke(["generate", "org/none", tmp_path / "bench", "-q"], env=env)
        assert res.exit_code == 1 and "has no model org/none" in res.stderr and len(hub.requests) == 2, res.output
    res = invoke(["soup", site / "tiny", site / "tinyy", "-o", tmp_path / "soup"])
    assert res.exit_code == 1 and res.stderr.strip().endswith(f"did you mean {site / 'tiny'}?)"), res.output
    assert not (tmp_path / "soup").exists()


def test_a_config_files_model_is_resolved_too(site):
    (site / "c.yaml").write_text("model: ./tinyy\n")
    res, _ = run(["train", "prepared", "-o", "run", "--config", "c.yaml", "--dry-run"], site)
    assert "error: model ./tinyy: no such model folder" in one_error_line(res)
