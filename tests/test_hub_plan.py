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


def safetensors(path: Path, tensors: dict[str, tuple[list[int], str]], *, pad: int = 0) -> None:
    """A safetensors file by its format (8 bytes little-endian header length, the JSON header, the
    data), `pad` bytes of data after it."""
    import json
    import struct

    header, at = {"__metadata__": {"format": "pt"}}, 0
    for name, (shape, dtype) in tensors.items():
        n = 2
        for d in shape:
            n *= d
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [at, at + n]}
        at += n
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0" * (at + pad))


@pytest.fixture
def small_repos(tmp_path) -> dict[str, Path]:
    """Three repos of a few KB: one weight file (o/single, a preprocessor config), two shards and
    an index (o/sharded, a processor_config.json, a tokenizer and a dotfile), none (o/noconfig)."""
    import json

    single, sharded, noconfig = (tmp_path / n for n in ("single", "sharded", "noconfig"))
    for f in (single, sharded, noconfig):
        f.mkdir()
    (single / "config.json").write_text('{"model_type": "qwen2_5_vl"}')
    (single / "preprocessor_config.json").write_text('{"patch_size": 14}')
    safetensors(single / "model.safetensors", {"a.weight": ([4, 3], "BF16"), "b": ([5], "F32")}, pad=3000)
    (sharded / "config.json").write_text('{"model_type": "qwen3_vl"}' + " " * 1500)
    (sharded / "processor_config.json").write_text('{"image_processor": {"patch_size": 16}}')
    (sharded / "tokenizer.json").write_text("{}")
    (sharded / ".gitattributes").write_text("*")
    safetensors(sharded / "model-1.safetensors", {"x": ([2, 2], "BF16")})
    safetensors(sharded / "model-2.safetensors", {"y": ([6], "F16")})
    index = {"metadata": {}, "weight_map": {"x": "model-1.safetensors", "y": "model-2.safetensors"}}
    (sharded / "model.safetensors.index.json").write_text(json.dumps(index))
    (noconfig / "README.md").write_text("hi")
    return {"o/single": single, "o/sharded": sharded, "o/noconfig": noconfig}


@pytest.fixture
def hub_cache(tmp_path, monkeypatch):
    """huggingface_hub reading an empty cache in tmp_path, online; returns its constants."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    return constants


def point_at(monkeypatch, constants, url: str) -> None:
    """HF_ENDPOINT as huggingface_hub read it at import (the endpoint and the file URL template)."""
    monkeypatch.setattr(constants, "ENDPOINT", url)
    monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE", url + "/{repo_id}/resolve/{revision}/{filename}")


def test_hub_model_files_reads_the_small_files_and_the_headers(small_repos, hub_cache, monkeypatch):
    """`hub_model_files` in this process against the stand-in: what it fetched and said, then the
    same repo from the cache with no request (present), offline, and with the cache lacking things."""
    from olmocr_rl.hub import HEADER_RANGE, HubUnavailable, hub_model_files

    single = small_repos["o/single"]
    with StandinHub(small_repos) as hub:
        point_at(monkeypatch, hub_cache, hub.url)
        got = hub_model_files("o/single")
        assert got.repo == "o/single" and got.revision == SHA
        assert {n: p.read_bytes() for n, p in got.files.items()} == {
            n: (single / n).read_bytes() for n in ("config.json", "preprocessor_config.json")
        }
        assert got.tensors == {"a.weight": ((4, 3), "BF16"), "b": ((5,), "F32")}
        weights = (single / "model.safetensors").stat().st_size
        assert got.sizes == {p.name: p.stat().st_size for p in single.iterdir()} and got.weight_bytes == weights
        assert got.other_bytes == sum(p.stat().st_size for p in single.iterdir()) - weights
        small = sum((single / n).stat().st_size for n in ("config.json", "preprocessor_config.json"))
        assert got.fetched == small + min(HEADER_RANGE, weights)
        assert got.source == (f"o/single@{SHA[:12]} from {hub.url}: config.json, preprocessor_config.json, the headers of 1 "
                              f"weight file(s), {(small + weights) / 1000:,.0f} KB fetched, no weights (the weights: 0.0 GB)")  # fmt: skip
        n = len(hub.log)
        # Present now, without the headers: no request, nothing fetched.
        cached = hub_model_files("o/single", tensors=False)
        assert len(hub.log) == n and cached.revision is None and cached.tensors is None and cached.sizes == {}
        assert cached.files == got.files and cached.weight_bytes is None and cached.other_bytes is None
        assert cached.source == "o/single: config.json, the processor config from the Hugging Face cache"
        # The headers asked for and the weights not cached: the hub is asked again, the small files not fetched again.
        again = hub_model_files("o/single")
        assert again.fetched == min(HEADER_RANGE, weights) and again.tensors == got.tensors
        # A rank (network=False) and offline read the cache alone.
        n = len(hub.log)
        rank = hub_model_files("o/single", network=False)
        assert rank.tensors is None and rank.source.startswith("o/single: config.json, the processor config from the Hugging")
        monkeypatch.setattr(hub_cache, "HF_HUB_OFFLINE", True)
        off = hub_model_files("o/single")
        assert off.source == "o/single: config.json, the processor config from the Hugging Face cache (HF_HUB_OFFLINE is set)"
        assert len(hub.log) == n
        monkeypatch.setattr(hub_cache, "HF_HUB_OFFLINE", False)
        with pytest.raises(HubUnavailable, match="^o/noconfig has no config.json on the hub: not a transformers model$"):
            hub_model_files("o/noconfig")
        with pytest.raises(HubUnavailable, match=r"^o/nowhere: no such model on the hub, or a private one \(set HF_TOKEN\) \("):
            hub_model_files("o/nowhere")
    for bad in ("a--b", "a..b", "a.", "a-", "a/b/c", "-a", "a b", ""):
        with pytest.raises(HubUnavailable, match="not a model folder, nor a hub id"):
            hub_model_files(bad)


def test_a_sharded_repo_and_a_fully_cached_one(small_repos, hub_cache, monkeypatch):
    """Two shards: the index then each header; once every shard is cached (a downloaded model) the
    headers are read from the cache with no request; a shard gone from the cache (stale) asks again."""
    from huggingface_hub import hf_hub_download

    from olmocr_rl.hub import HEADER_RANGE, INDEX, hub_model_files

    sharded = small_repos["o/sharded"]
    with StandinHub(small_repos) as hub:
        point_at(monkeypatch, hub_cache, hub.url)
        got = hub_model_files("o/sharded")
        assert got.tensors == {"x": ((2, 2), "BF16"), "y": ((6,), "F16")} and set(got.files) == {"config.json", "processor_config.json"}
        shards = [sharded / f"model-{i}.safetensors" for i in (1, 2)]
        small = sum((sharded / n).stat().st_size for n in ("config.json", "processor_config.json"))
        assert got.fetched == small + sum(min(HEADER_RANGE, p.stat().st_size) for p in shards) + (sharded / INDEX).stat().st_size
        assert got.other_bytes == sum(
            (sharded / n).stat().st_size for n in ("config.json", "processor_config.json", "tokenizer.json", INDEX)
        )
        assert "the headers of 2 weight file(s)" in got.source and f"{got.fetched / 1000:,.0f} KB fetched" in got.source
        for name in (INDEX, "model-1.safetensors"):
            hf_hub_download("o/sharded", name)
        n = len(hub.log)
        hub_model_files("o/sharded")  # one shard not cached: the hub is asked
        assert len(hub.log) > n
        hf_hub_download("o/sharded", "model-2.safetensors")
        n = len(hub.log)
        cached = hub_model_files("o/sharded")
        assert len(hub.log) == n and cached.tensors == got.tensors
        assert cached.source == "o/sharded: config.json, the processor config, the weights' headers from the Hugging Face cache"


def test_what_the_cache_lacks_is_named_with_the_command(small_repos, hub_cache, monkeypatch, tmp_path):
    """Offline over an empty cache: the error names both files and the command; a cached config.json
    without a processor config says what is missing there; a hub that is down falls back to the cache."""
    from huggingface_hub import hf_hub_download

    from olmocr_rl.hub import HubUnavailable, fetch_command, hub_model_files, read_headers

    cache = hub_cache.HF_HUB_CACHE
    monkeypatch.setattr(hub_cache, "HF_HUB_OFFLINE", True)
    with pytest.raises(HubUnavailable) as e:
        hub_model_files("o/single")
    assert str(e.value) == (f"HF_HUB_OFFLINE is set; the Hugging Face cache ({cache}) lacks o/single's config.json and its processor "
                            f"config; fetch only those (a few KB, no weights): {fetch_command('o/single')}")  # fmt: skip
    assert fetch_command("o/single") == "hf download o/single --include config.json --include '*processor_config.json'"
    monkeypatch.setattr(hub_cache, "HF_HUB_OFFLINE", False)
    with StandinHub(small_repos) as hub:
        point_at(monkeypatch, hub_cache, hub.url)
        hf_hub_download("o/single", "config.json")
        part = hub_model_files("o/single", network=False)
        assert part.source == (f"o/single: config.json from the Hugging Face cache; missing there: its processor config "
                               f"({fetch_command('o/single')})")  # fmt: skip
        with pytest.raises(HubUnavailable, match=r"^the Hugging Face cache \(.*\) lacks o/sharded's config.json and its processor"):
            hub_model_files("o/sharded", network=False)
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(b"\x05\0\0\0\0\0\0\0{oops")
    with pytest.raises(ValueError, match=f"^{bad}: not a readable safetensors file"):
        read_headers([bad])


def test_the_small_words_of_the_hub_lines(monkeypatch):
    """The sizes the plan's hub line says (bytes below 1,000, KB from 1,000; GB to one decimal, as
    Python's format rounds), an error's first non-blank line (its type's name when it says nothing),
    and the transport errors counted as "the hub cannot answer": the HTTPError of whichever of
    httpx2 (huggingface_hub 2.x) and httpx (1.x) is installed, the second still read when the
    first is not."""
    import importlib

    import olmocr_rl.hub as hub

    assert (hub._kb(5), hub._kb(999), hub._kb(1000), hub._kb(1_499_500)) == ("5 bytes", "999 bytes", "1 KB", "1,500 KB")
    assert (hub._gb(1_050_000_000), hub._gb(12_345_000_000)) == ("1.1 GB", "12.3 GB")
    assert hub._first_line(ValueError("\n  first \nsecond")) == "first"
    assert hub._first_line(ValueError("  ")) == "ValueError" and hub._first_line(KeyError()) == "KeyError"
    installed = []
    for name in ("httpx2", "httpx"):
        try:
            installed.append(importlib.import_module(name).HTTPError)
        except ImportError:
            pass
    assert installed and all(e in hub._errors() for e in installed)
    real = importlib.import_module

    def without_httpx2(name, *args):
        if name == "httpx2":
            raise ImportError(name)
        return real(name, *args)

    monkeypatch.setattr(importlib, "import_module", without_httpx2)
    fake = type("HTTPError", (Exception,), {})
    monkeypatch.setitem(sys.modules, "httpx", type(sys)("httpx"))
    sys.modules["httpx"].HTTPError = fake
    assert fake in hub._errors() and hub._errors()[:2] == (OSError, ValueError)


def test_what_the_hub_answers_and_the_cache_holds_read_to_the_letter(small_repos, hub_cache, monkeypatch):
    """The sizes come from the files' metadata (the hub lists them only when asked, an empty file
    as 0 bytes); the headers are read at the commit model_info named; without the headers the line
    names none; the weights' GB are the safetensors files' bytes; a downloaded single-file model is
    read from the cache with no request; a cached config.json alone (no processor config) is not
    "the model cached": the hub is asked; a gated repo and a missing one say so with the hub's first
    line; a hub that does not answer falls back to the cache and says why."""
    import re

    from huggingface_hub import hf_hub_download
    from standin_hub import DeadHub

    import olmocr_rl.hub as hub_module
    from olmocr_rl.hub import HubUnavailable, hub_model_files

    single = small_repos["o/single"]
    (single / "added_tokens.json").write_text("")  # 0 bytes
    monkeypatch.setattr(hub_module, "_gb", lambda n: f"<{n} bytes>")
    with StandinHub(small_repos, gated=("o/sharded",)) as hub:
        point_at(monkeypatch, hub_cache, hub.url)
        hf_hub_download("o/single", "config.json")
        n = len(hub.log)
        got = hub_model_files("o/single", tensors=False)  # config.json cached, no processor config: the hub is asked
        assert len(hub.log) > n and set(got.files) == {"config.json", "preprocessor_config.json"}
        assert got.sizes == {p.name: p.stat().st_size for p in single.iterdir()} and got.sizes["added_tokens.json"] == 0
        assert got.tensors is None and "headers" not in got.source
        weights = (single / "model.safetensors").stat().st_size
        assert got.source.endswith(f"no weights (the weights: <{weights} bytes>)")
        n = len(hub.log)
        hub_model_files("o/single")
        header_reads = [r for r in hub.log[n:] if r.path.endswith(".safetensors")]
        assert header_reads and all(f"/resolve/{SHA}/" in r.path for r in header_reads)  # the commit model_info named
        hf_hub_download("o/single", "model.safetensors")
        n = len(hub.log)
        cached = hub_model_files("o/single")  # a downloaded model: its header from the cache
        assert len(hub.log) == n and cached.repo == "o/single" and cached.tensors == {"a.weight": ((4, 3), "BF16"), "b": ((5,), "F32")}
        with pytest.raises(HubUnavailable) as e:
            hub_model_files("o/sharded")
        assert str(e.value).startswith("o/sharded is gated: accept its terms on the hub and set HF_TOKEN (403 Client Error")
        with pytest.raises(HubUnavailable) as e:
            hub_model_files("o/nowhere")
        assert str(e.value).startswith("o/nowhere: no such model on the hub, or a private one (set HF_TOKEN) (404 Client Error")
    with DeadHub("refuse") as dead:
        point_at(monkeypatch, hub_cache, dead.url)
        down = hub_model_files("o/single", tensors=False)  # headers not asked: the cached model is read, no request
        assert down.source == "o/single: config.json, the processor config, the weights' headers from the Hugging Face cache"
        with pytest.raises(HubUnavailable) as e:
            hub_model_files("o/sharded")
        assert re.match(
            r"the hub did not answer: (\[Errno \d+\] )?Connection refused; the Hugging Face cache \(.+\) lacks o/sharded's config",
            str(e.value),
        )
