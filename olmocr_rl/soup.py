"""Model soup: average the weights of several checkpoints of one architecture.

`soup([ckpt_a, ckpt_b, ...], out_dir)` reads each checkpoint's safetensors weights (a single
`model.safetensors`, a sharded `model.safetensors.index.json` set, or a PEFT
`adapter_model.safetensors`), checks that every checkpoint has the same architecture, the same
tensor names and the same shapes and dtypes, and writes the element-wise mean: accumulated in
float32 one tensor at a time, then cast back to the stored dtype. Non-floating tensors (integer
buffers) must be identical and are copied. The output keeps the first checkpoint's shard layout
and gets its config / tokenizer / processor files (not its optimizer or trainer state), plus a
`soup.json` naming the sources. Every file is written to a temporary file and renamed
(olmocr_rl/atomic.py): a soup that fails or is killed leaves no partial file.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path

from olmocr_rl.atomic import atomic_path, write_text
from olmocr_rl.errors import UserError

SINGLE = ("model.safetensors", "adapter_model.safetensors")
INDEX = "model.safetensors.index.json"
# Training state that a souped model must not inherit from the first checkpoint.
SKIP_FILES = {
    "optimizer.pt", "scheduler.pt", "trainer_state.json", "training_args.bin", "latest",
    "zero_to_fp32.py", "scaler.pt", "soup.json",
}  # fmt: skip
SKIP_PREFIXES = ("rng_state", "pytorch_model", "model-", "model.safetensors", "adapter_model.")


class SoupError(UserError, ValueError):
    """Checkpoints that cannot be averaged (the message says why and which)."""


def _weight_files(ckpt: Path) -> dict[str, Path]:
    """tensor name -> file holding it, for one checkpoint directory."""
    if not ckpt.is_dir():
        raise SoupError(f"{ckpt}: not a directory (give checkpoint folders written by save_pretrained)")
    index = ckpt / INDEX
    if index.is_file():
        weight_map = json.loads(index.read_text(encoding="utf-8"))["weight_map"]
        return {name: ckpt / fname for name, fname in weight_map.items()}
    for name in SINGLE:
        if (ckpt / name).is_file():
            from safetensors import safe_open

            with safe_open(ckpt / name, framework="pt") as f:
                return {key: ckpt / name for key in f.keys()}
    if any(ckpt.glob("*.bin")):
        raise SoupError(f"{ckpt}: only .bin weights found; re-save it with save_pretrained(safe_serialization=True)")
    raise SoupError(f"{ckpt}: no model.safetensors, {INDEX} or adapter_model.safetensors")


def _architecture(ckpt: Path) -> tuple:
    for name in ("config.json", "adapter_config.json"):
        p = ckpt / name
        if p.is_file():
            cfg = json.loads(p.read_text(encoding="utf-8"))
            return (name, cfg.get("model_type"), tuple(cfg.get("architectures") or ()), cfg.get("base_model_name_or_path"))
    return ("", None, (), None)


def _header(files: dict[str, Path]) -> dict[str, tuple[str, tuple[int, ...]]]:
    """tensor name -> (dtype, shape), read from the safetensors headers without loading tensors."""
    out: dict[str, tuple[str, tuple[int, ...]]] = {}
    for path in sorted(set(files.values())):
        with path.open("rb") as f:
            n = int.from_bytes(f.read(8), "little")
            header = json.loads(f.read(n))
        for key, info in header.items():
            if key != "__metadata__":
                out[key] = (info["dtype"], tuple(info["shape"]))
    return out


def check_compatible(ckpts: Sequence[Path]) -> list[dict[str, Path]]:
    """Raise SoupError unless all checkpoints share architecture, tensor names, shapes and dtypes."""
    if len(ckpts) < 2:
        raise SoupError("soup needs at least two checkpoints")
    files = [_weight_files(Path(c)) for c in ckpts]
    arch0 = _architecture(Path(ckpts[0]))
    heads = [_header(f) for f in files]
    for ckpt, arch, head in zip(ckpts[1:], map(_architecture, map(Path, ckpts[1:])), heads[1:]):
        if arch != arch0:
            raise SoupError(f"architecture mismatch: {ckpts[0]} is {arch0[1:3]}, {ckpt} is {arch[1:3]}")
        missing = sorted(set(heads[0]) - set(head))
        extra = sorted(set(head) - set(heads[0]))
        if missing or extra:
            raise SoupError(
                f"tensor names differ between {ckpts[0]} and {ckpt}: "
                f"{len(missing)} only in the first (e.g. {missing[:3]}), {len(extra)} only in the other (e.g. {extra[:3]})"
            )
        for key, (dtype, shape) in heads[0].items():
            if head[key] != (dtype, shape):
                raise SoupError(
                    f"shape/dtype mismatch for {key!r}: {ckpts[0]} has {dtype}{list(shape)}, {ckpt} has {head[key][0]}{list(head[key][1])}"
                )
    return files


def soup(ckpts: Sequence[str | Path], out_dir: str | Path, *, overwrite: bool = False) -> Path:
    """Average `ckpts` into `out_dir` (see the module docstring). Returns `out_dir`."""
    import torch
    from safetensors import safe_open
    from safetensors.torch import save_file

    ckpts = [Path(c) for c in ckpts]
    out = Path(out_dir)
    if any(out.resolve() == c.resolve() for c in ckpts):
        raise SoupError(f"--output {out} is one of the input checkpoints; choose a new folder")
    if out.exists() and any(out.iterdir()) and not overwrite:
        raise SoupError(f"--output {out} exists and is not empty (use --overwrite to replace its files)")
    files = check_compatible(ckpts)
    out.mkdir(parents=True, exist_ok=True)

    # Group the first checkpoint's tensors by the file they live in, to keep its shard layout.
    layout: dict[str, list[str]] = {}
    for key, path in files[0].items():
        layout.setdefault(path.name, []).append(key)
    n = len(ckpts)
    for fname, keys in sorted(layout.items()):
        with safe_open(files[0][keys[0]], framework="pt") as f0:
            metadata = f0.metadata() or {"format": "pt"}
        result: dict[str, torch.Tensor] = {}
        for key in sorted(keys):
            tensors = []
            for ckpt_files in files:
                with safe_open(ckpt_files[key], framework="pt") as f:
                    tensors.append(f.get_tensor(key))
            first = tensors[0]
            if first.is_floating_point():
                acc = torch.zeros(first.shape, dtype=torch.float32)
                for t in tensors:
                    acc += t.to(torch.float32)
                acc /= n
                result[key] = acc.to(first.dtype)
            else:
                for ckpt, t in zip(ckpts[1:], tensors[1:]):
                    if not torch.equal(first, t):
                        raise SoupError(f"non-float tensor {key!r} differs between {ckpts[0]} and {ckpt}")
                result[key] = first
        with atomic_path(out / fname) as tmp:
            save_file(result, str(tmp), metadata=metadata)

    for src in sorted(ckpts[0].iterdir()):
        if src.is_file() and src.name not in SKIP_FILES and not src.name.startswith(SKIP_PREFIXES):
            _copy(src, out / src.name)
    if (ckpts[0] / INDEX).is_file():
        _copy(ckpts[0] / INDEX, out / INDEX)
    write_text(
        out / "soup.json",
        json.dumps({"sources": [str(c.resolve()) for c in ckpts], "method": "uniform mean (float32 accumulation)"}, indent=2) + "\n",
    )
    return out


def _copy(src: Path, dst: Path) -> None:
    """`src` copied to `dst` through a temporary file (olmocr_rl/atomic.py)."""
    with atomic_path(dst) as tmp:
        shutil.copyfile(src, tmp)
