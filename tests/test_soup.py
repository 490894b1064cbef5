"""`olmocr-rl soup`: the average of two tiny-model checkpoints, tensor by tensor, and refusals."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from conftest import need

torch = need("torch")
need("transformers")
from clirun import invoke
from safetensors.torch import load_file, save_file

from olmocr_rl.soup import SoupError, soup

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench_fixtures"))
from tiny_vlm import build_tiny_vlm


@pytest.fixture(scope="module")
def two_ckpts(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("soup")
    return build_tiny_vlm(root / "a", seed=0), build_tiny_vlm(root / "b", seed=1)


def _weights(d: Path) -> dict:
    out = {}
    for f in sorted(d.glob("*.safetensors")):
        out.update(load_file(f))
    return out


def test_soup_is_the_elementwise_mean(two_ckpts, tmp_path):
    a, b = two_ckpts
    out = soup([a, b], tmp_path / "soup")
    wa, wb, ws = _weights(a), _weights(b), _weights(out)
    assert set(ws) == set(wa) and len(ws) > 10
    changed = 0
    for key, t in ws.items():
        expected = ((wa[key].float() + wb[key].float()) / 2).to(wa[key].dtype)
        assert t.dtype == wa[key].dtype and t.shape == wa[key].shape, key
        assert torch.equal(t, expected), key
        changed += not torch.equal(t, wa[key])
    assert changed > 10  # the seeds differ, so the soup is not a copy of the first
    for name in ("config.json", "generation_config.json", "tokenizer.json", "processor_config.json"):
        assert (out / name).read_bytes() == (a / name).read_bytes()
    assert json.loads((out / "soup.json").read_text())["sources"] == [str(a.resolve()), str(b.resolve())]
    # The soup is a loadable model + processor.
    from transformers import AutoModelForImageTextToText, AutoProcessor
    from transformers.processing_utils import ProcessorMixin

    AutoModelForImageTextToText.from_pretrained(out)
    assert isinstance(AutoProcessor.from_pretrained(out), ProcessorMixin)


def test_soup_of_bf16_sharded_checkpoints(two_ckpts, tmp_path):
    from transformers import AutoModelForImageTextToText

    dirs = []
    for src in two_ckpts:
        model = AutoModelForImageTextToText.from_pretrained(src, dtype=torch.bfloat16)
        dirs.append(tmp_path / src.name)
        model.save_pretrained(dirs[-1], max_shard_size="200KB")
    assert (dirs[0] / "model.safetensors.index.json").is_file()
    out = soup(dirs, tmp_path / "soup")
    assert sorted(p.name for p in out.glob("*.safetensors")) == sorted(p.name for p in dirs[0].glob("*.safetensors"))
    wa, wb, ws = _weights(dirs[0]), _weights(dirs[1]), _weights(out)
    for key, t in ws.items():
        assert t.dtype == torch.bfloat16
        assert torch.equal(t, ((wa[key].float() + wb[key].float()) / 2).to(torch.bfloat16)), key
    AutoModelForImageTextToText.from_pretrained(out)


def test_soup_of_three_weights_each_equally(two_ckpts, tmp_path):
    a, b = two_ckpts
    out = soup([a, b, a], tmp_path / "soup")
    wa, wb, ws = _weights(a), _weights(b), _weights(out)
    key = next(k for k in ws if "embed_tokens" in k)
    assert torch.equal(ws[key], ((wa[key] + wb[key] + wa[key]) / 3))


def test_mismatched_shape_is_refused(two_ckpts, tmp_path):
    a, b = two_ckpts
    bad = tmp_path / "bad"
    bad.mkdir()
    for f in b.iterdir():
        (bad / f.name).write_bytes(f.read_bytes())
    w = load_file(b / "model.safetensors")
    key = next(k for k in w if k.endswith("lm_head.weight"))
    w[key] = w[key][:-1].clone()
    save_file(w, str(bad / "model.safetensors"), metadata={"format": "pt"})
    with pytest.raises(SoupError, match="shape/dtype mismatch for 'lm_head.weight'.*263, 64.*262, 64"):
        soup([a, bad], tmp_path / "out")
    assert not (tmp_path / "out").exists()  # nothing written before the check


def test_mismatched_names_and_architecture_are_refused(two_ckpts, tmp_path):
    a, b = two_ckpts
    other = build_tiny_vlm(tmp_path / "qwen2", family="qwen2_vl")
    with pytest.raises(SoupError, match="architecture mismatch.*qwen2_5_vl.*qwen2_vl"):
        soup([a, other], tmp_path / "out")
    renamed = tmp_path / "renamed"
    renamed.mkdir()
    for f in b.iterdir():
        (renamed / f.name).write_bytes(f.read_bytes())
    w = load_file(b / "model.safetensors")
    w["extra.weight"] = torch.zeros(2)
    save_file(w, str(renamed / "model.safetensors"), metadata={"format": "pt"})
    with pytest.raises(SoupError, match="tensor names differ.*1 only in the other.*extra.weight"):
        soup([a, renamed], tmp_path / "out")


def test_cli(two_ckpts, tmp_path):
    a, b = two_ckpts
    res = invoke(["soup", str(a), str(b), "--output", str(tmp_path / "s")])
    assert res.exit_code == 0, res.output
    assert "averaged 2 checkpoints" in res.output
    res = invoke(["soup", str(a), str(b), "--output", str(tmp_path / "s")])
    assert res.exit_code == 1 and "exists and is not empty (use --overwrite" in res.output
    # --overwrite replaces the soup: a with itself is a.
    res = invoke(["soup", str(a), str(a), "--output", str(tmp_path / "s"), "--overwrite"])
    assert res.exit_code == 0, res.output
    mine, theirs = load_file(tmp_path / "s" / "model.safetensors"), load_file(a / "model.safetensors")
    assert mine.keys() == theirs.keys() and all(torch.equal(mine[k], theirs[k]) for k in mine)
    res = invoke(["soup", str(a), "--output", str(tmp_path / "t")])
    assert res.exit_code == 1 and "at least two checkpoints" in res.output
    res = invoke(["soup", str(a), str(tmp_path / "missing"), "--output", str(tmp_path / "t")])
    assert res.exit_code == 1 and f"{tmp_path / 'missing'}: no such checkpoint folder (nothing named missing in {tmp_path}" in res.output
    (tmp_path / "file").write_text("x")
    res = invoke(["soup", str(a), str(tmp_path / "file"), "--output", str(tmp_path / "t")])
    assert res.exit_code == 1 and "not a directory" in res.output


def test_soup_of_lora_adapters(two_ckpts, tmp_path):
    """PEFT adapter folders (adapter_model.safetensors + adapter_config.json) average too."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForImageTextToText

    dirs = []
    for seed in (0, 1):
        torch.manual_seed(seed)
        model = AutoModelForImageTextToText.from_pretrained(two_ckpts[0])
        peft_model = get_peft_model(model, LoraConfig(r=4, target_modules=["q_proj", "v_proj"], init_lora_weights=False))
        dirs.append(tmp_path / f"adapter{seed}")
        peft_model.save_pretrained(dirs[-1])
    out = soup(dirs, tmp_path / "soup")
    wa, wb = load_file(dirs[0] / "adapter_model.safetensors"), load_file(dirs[1] / "adapter_model.safetensors")
    ws = load_file(out / "adapter_model.safetensors")
    assert set(ws) == set(wa) and any("lora_A" in k for k in ws)
    for key, t in ws.items():
        assert torch.equal(t, ((wa[key].float() + wb[key].float()) / 2).to(wa[key].dtype)), key
    assert (out / "adapter_config.json").read_bytes() == (dirs[0] / "adapter_config.json").read_bytes()


def test_a_soup_that_fails_mid_write_leaves_no_partial_file(two_ckpts, tmp_path, monkeypatch):
    """Issue 49, item 8: every file soup writes (each shard, each copied file) goes through a
    temporary file and a rename. A writer that dies half way through the second shard, and a copy
    that dies half way through the first copied file, leave only whole files (and no temporary
    ones); a run after the failure writes the whole soup."""
    import errno
    import os

    import safetensors.torch
    from transformers import AutoModelForImageTextToText

    dirs = []
    for src in two_ckpts:
        dirs.append(tmp_path / src.name)
        AutoModelForImageTextToText.from_pretrained(src).save_pretrained(dirs[-1], max_shard_size="200KB")
    shards = sorted(p.name for p in dirs[0].glob("model-*.safetensors"))
    assert len(shards) >= 2
    real_save = safetensors.torch.save_file
    calls = []

    def dies_in_the_second_shard(tensors, filename, metadata=None):
        calls.append(filename)
        real_save(tensors, filename, metadata=metadata)
        if len(calls) == 2:  # half of the shard on disk, then the process fails
            os.truncate(filename, os.path.getsize(filename) // 2)
            raise OSError(errno.EIO, "disk failed")

    def whole_files_only(out: Path) -> list[str]:
        names = sorted(p.name for p in out.iterdir())
        for name in names:
            if name.endswith(".safetensors"):
                load_file(out / name)  # a partial shard does not load
            elif name == "soup.json":
                assert json.loads((out / name).read_text())["sources"]
            else:
                assert (out / name).read_bytes() == (dirs[0] / name).read_bytes(), name
        return names

    out = tmp_path / "soup"
    monkeypatch.setattr(safetensors.torch, "save_file", dies_in_the_second_shard)
    with pytest.raises(OSError, match="disk failed"):
        soup(dirs, out)
    assert whole_files_only(out) == [shards[0]]  # the first shard, whole; nothing of the second
    monkeypatch.setattr(safetensors.torch, "save_file", real_save)

    real_sendfile = os.sendfile  # shutil's copy of a file on Linux: half of it, then an I/O error

    def dies_half_way(out_fd, in_fd, offset, count):
        size = os.fstat(in_fd).st_size
        os.write(out_fd, os.pread(in_fd, size // 2, 0))
        raise OSError(errno.EIO, "disk failed")

    monkeypatch.setattr(os, "sendfile", dies_half_way)
    with pytest.raises(OSError, match="disk failed"):
        soup(dirs, out, overwrite=True)
    assert whole_files_only(out) == shards  # every shard whole, no copied file begun
    monkeypatch.setattr(os, "sendfile", real_sendfile)

    soup(dirs, out, overwrite=True)
    names = whole_files_only(out)
    assert {"config.json", "model.safetensors.index.json", "soup.json", *shards} <= set(names)
    AutoModelForImageTextToText.from_pretrained(out)
