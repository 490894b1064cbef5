"""A plan from a hub id, without the weights (olmocr_rl/hub.py): `train --dry-run --model OWNER/NAME`
against a stand-in of the hub's HTTP API on 127.0.0.1 (tests/standin_hub.py; `HF_ENDPOINT` points
at it, no network) reads config.json, the processor config and the safetensors headers (by range
request), says what it fetched in one line, and plans the memory of the same files as a local
folder; the stand-in's log shows no weight file read. Offline, the line names what the cache lacks
and the command that fetches only that, which is then run against the stand-in. A sharded
Qwen3-VL-30B-A3B-shaped repo is planned the same way (every expert in the model states)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import need

need("trl")
need("torch")
from clirun import invoke
from standin_hub import SHA, StandinHub
from test_plan_estimates import NODE, memory_block
from training import QWEN3_VL_PROCESSOR, header_folder, qwen3_vl_moe_30b_config

REPO, MOE, TOKEN = "allenai/olmOCR-2-7B-1025", "Qwen/Qwen3-VL-30B-A3B-Instruct", "hf_standin_token"
ARGS = ["--zero", "3", "--num-processes", "8", *NODE]


@pytest.fixture(scope="module")
def repos(tmp_path_factory) -> dict[str, Path]:
    from test_memory import seven_b_folder

    root = tmp_path_factory.mktemp("hub")
    seven_b_folder(root / "7b", processor=True)
    header_folder(root / "moe", qwen3_vl_moe_30b_config(), shards=2, processor=QWEN3_VL_PROCESSOR)
    (root / "moe" / "tokenizer.json").write_text("{}")
    return {REPO: root / "7b", MOE: root / "moe"}


def hub_env(hub: StandinHub | None, cache: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env |= {"HF_HOME": str(cache / "home"), "HF_HUB_CACHE": str(cache / "hub"), "HF_HUB_DISABLE_TELEMETRY": "1"}
    if hub is not None:
        env |= {"HF_ENDPOINT": hub.url, "HF_TOKEN": TOKEN}
    return env | extra


def dry_run(prepared: Path, model: str | Path, out: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "olmocr_rl.cli", "train", str(prepared), "--model", str(model), "-o", str(out), "--dry-run", *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)


def line(stdout: str, start: str) -> str:
    return next(ln for ln in stdout.splitlines() if ln.startswith(start))


def no_weight_read(hub: StandinHub) -> None:
    for r in hub.log:
        if r.path.endswith(".safetensors") and r.method == "GET":
            assert r.range is not None and r.sent <= 100_001, r  # a header's range, never the file


def offline_dry_run(monkeypatch, prepared: Path, model: str | Path, out: Path, cache: Path, *args: str):
    """`train --dry-run` in this process, offline, over `cache` (huggingface_hub reads these when called)."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache / "hub"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    return invoke(["train", prepared, "--model", model, "-o", out, "--dry-run", *args])


def test_a_hub_id_is_planned_from_its_headers_without_the_weights(repos, prepared, tmp_path, monkeypatch):
    folder = invoke(["train", prepared, "--model", repos[REPO], "-o", tmp_path / "a", "--dry-run", *ARGS])
    with StandinHub(repos, token=TOKEN) as hub:
        res = dry_run(prepared, REPO, tmp_path / "b", hub_env(hub, tmp_path / "cache"), *ARGS)
    assert res.returncode in (0, 1), res.stderr
    assert memory_block(res.stdout) == memory_block(folder.stdout), res.stdout + res.stderr
    # What was read, and nothing else: the listing, the two small files, one header's range.
    said = line(res.stdout, "model: ")
    # The command line's check of the model (olmocr_rl/model_ref.py): one GET of config.json, read for its family.
    check, *gets = [r for r in hub.log if r.method == "GET"]
    assert check.path == f"/{REPO}/resolve/main/config.json" and hub.log[0] == check, hub.log
    assert {r.path for r in gets} == {f"/api/models/{REPO}", f"/{REPO}/resolve/main/config.json",
                                      f"/{REPO}/resolve/main/preprocessor_config.json", f"/{REPO}/resolve/{SHA}/model.safetensors"}, hub.log  # fmt: skip
    no_weight_read(hub)
    files = sum(r.sent for r in gets if "/resolve/" in r.path)
    assert f"{REPO}@{SHA[:12]} from {hub.url}: config.json, preprocessor_config.json, the headers of 1 weight file(s), " in said
    assert f"{files / 1000:,.0f} KB fetched, no weights (the weights: 16.6 GB)" in said, (said, files)
    assert all(r.auth == f"Bearer {TOKEN}" for r in hub.log)  # HF_TOKEN reached every request
    # The image tokens from the fetched processor config; the disk estimate from the repo's listing.
    assert "28 px a token (patch 14 x merge 2), 3,136-12,845,056 pixels (preprocessor_config.json)" in line(res.stdout, "image tokens: ")
    assert line(res.stdout, "checkpoints: ") == line(folder.stdout, "checkpoints: ")

    # Offline now: the small files are in the cache, the headers are not; the shapes come from
    # config.json through transformers' model on the meta device, and plan the same.
    offline = offline_dry_run(monkeypatch, prepared, REPO, tmp_path / "c", tmp_path / "cache", *ARGS)
    assert memory_block(offline.stdout) == memory_block(folder.stdout), offline.stdout + offline.stderr
    assert "tensor shapes from config.json (transformers' model on the meta device), no headers read" in line(offline.stdout, "model: ")


def test_offline_says_what_is_missing_and_the_command_that_fetches_only_that(repos, prepared, tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    res = offline_dry_run(monkeypatch, prepared, REPO, tmp_path / "a", cache, *ARGS)
    # Not even config.json in the cache: the model argument is nowhere (olmocr_rl/model_ref.py), one
    # error line that names the command fetching only the planning files.
    said = res.stderr.strip()
    command = f"hf download {REPO} --include config.json --include '*processor_config.json'"
    assert res.exit_code == 1 and len(said.splitlines()) == 1 and said.startswith("error: "), res.output
    assert "HF_HUB_OFFLINE is set" in said and f"to plan a run only, its config and processor config: {command}" in said, said
    # The command does what it says: the two small files, no weight.
    with StandinHub(repos, token=TOKEN) as hub:
        hf = Path(sys.executable).parent / "hf"
        done = subprocess.run([str(hf), *command.split()[1:5], "--include", "*processor_config.json"], capture_output=True, text=True,
                              env=hub_env(hub, cache), timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert {r.path.rsplit("/", 1)[-1] for r in hub.log if r.method == "GET" and "/resolve/" in r.path} == {
        "config.json",
        "preprocessor_config.json",
    }
    again = offline_dry_run(monkeypatch, prepared, REPO, tmp_path / "b", cache, *ARGS)
    assert "memory per training GPU (estimate; 8.29 B parameters" in again.stdout, again.stdout + again.stderr


def test_a_sharded_mixture_of_experts_from_the_hub(repos, prepared, tmp_path):
    """Qwen3-VL-30B-A3B's shapes in two shards: the index, then each shard's header by range; every
    expert counted in the model states (31.07 B), 8 of 128 in the activations; planned under ZeRO-3,
    refused on 8 x 80 GB under ZeRO-2 (16-bit weights and reference model alone: 116 GiB)."""
    from olmocr_rl.train.config import load_config
    from olmocr_rl.train.memory import Layout, Tokens, estimate_memory
    from olmocr_rl.train.shape import read_shape

    with StandinHub(repos) as hub:
        res = dry_run(prepared, MOE, tmp_path / "b", hub_env(hub, tmp_path / "cache"), *ARGS)
    block = "\n".join(memory_block(res.stdout))
    assert "31.07 B parameters, 8 ranks, ZeRO-3" in block and "8 of 128 experts a token" in block, res.stdout + res.stderr
    assert "the headers of 2 weight file(s)" in line(res.stdout, "model: ")
    assert "32 px a token (patch 16 x merge 2)" in line(res.stdout, "image tokens: ")
    shard_reads = [r for r in hub.log if r.path.endswith(".safetensors") and r.method == "GET"]
    assert len({r.path for r in shard_reads}) == 2 and any(r.path.endswith("model.safetensors.index.json") for r in hub.log)
    no_weight_read(hub)
    cfg = load_config("olmocr2", [], prepared_dir=str(prepared), model=str(repos[MOE]), output_dir=str(tmp_path / "c"))
    z2 = estimate_memory(cfg, read_shape(str(repos[MOE])), Layout(8, 2, True, gpu_bytes=80 * 2**30), Tokens(2000, 1600, 8000))
    assert not z2.fits() and z2.total("states") > 116 * 2**30


def test_a_training_rank_reads_the_cache_only(repos, tmp_path, monkeypatch):
    """The command plans with the hub; the ranks it launches check the run again (their disk estimate
    included) from the cache only: 64 ranks do not each ask the hub (olmocr_rl/train/preflight.py
    `check_disk`, olmocr_rl/train/shape.py `read_shape(fetch=False)`)."""
    from huggingface_hub import constants

    from olmocr_rl.train.shape import ShapeUnknown, read_shape

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    with StandinHub(repos) as hub:
        monkeypatch.setattr(constants, "ENDPOINT", hub.url)
        with pytest.raises(ShapeUnknown, match="lacks allenai/olmOCR-2-7B-1025's config.json"):
            read_shape(REPO, fetch=False)
    assert hub.log == []
