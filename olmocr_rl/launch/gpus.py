"""This machine's GPUs: whether CUDA is there, which devices are visible, and how they are split
between the processes a command starts (`train --vllm-gpus K`: the training ranks on the first
N - K, a vLLM server on the last K)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from olmocr_rl.errors import ConfigError


def cuda_available() -> bool:
    import torch

    return bool(torch.cuda.is_available())


def visible_gpus(env: dict[str, str] | None = None) -> list[str]:
    """This node's GPUs: CUDA_VISIBLE_DEVICES when set, else torch's device count."""
    env = os.environ if env is None else env  # type: ignore[assignment]
    visible = env.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return [d.strip() for d in visible.split(",") if d.strip() and d.strip() != "-1"]
    import torch

    return [str(i) for i in range(torch.cuda.device_count())]


@dataclass(frozen=True)
class GpuSplit:
    train: tuple[str, ...]  # CUDA device ids of the training ranks (first N - K)
    server: tuple[str, ...]  # of the vLLM server (last K)
    tensor_parallel: int
    data_parallel: int

    def describe(self) -> str:
        return (f"GPUs: training on {','.join(self.train)} ({len(self.train)} ranks per node); vLLM server on "
                f"{','.join(self.server)} (tensor parallel {self.tensor_parallel} x data parallel {self.data_parallel})")  # fmt: skip


def split_gpus(gpus: list[str], vllm_gpus: int, data_parallel: int = 1) -> GpuSplit:
    """The last `vllm_gpus` GPUs serve (tensor parallel = vllm_gpus / data_parallel), the rest train."""
    if vllm_gpus < 1:
        raise ConfigError(f"--vllm-gpus must be at least 1, got {vllm_gpus}")
    if vllm_gpus >= len(gpus):
        raise ConfigError(
            f"--vllm-gpus {vllm_gpus} leaves no GPU for training: this node has {len(gpus)} "
            f"({'CUDA_VISIBLE_DEVICES=' + ','.join(gpus) if gpus else 'none visible'})"
        )
    if vllm_gpus % data_parallel:
        raise ConfigError(f"--vllm-gpus {vllm_gpus} is not a multiple of vllm_data_parallel_size={data_parallel}")
    split = len(gpus) - vllm_gpus
    return GpuSplit(tuple(gpus[:split]), tuple(gpus[split:]), vllm_gpus // data_parallel, data_parallel)
