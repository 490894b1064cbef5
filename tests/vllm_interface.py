"""vLLM's logits-processor interface as vLLM 0.22-0.31 declare it (`vllm.v1.sample.logits_processor`:
the LogitsProcessor base class, BatchUpdate, MoveDirectionality), stood in for the tests that run
without vLLM (olmocr_rl/loop_stop_vllm.py at its boundary; the real engine: tests/test_vllm_real.py)."""

from __future__ import annotations

import enum
import sys
import types
from dataclasses import dataclass


class MoveDirectionality(enum.Enum):
    UNIDIRECTIONAL = 1
    SWAP = 2


@dataclass(frozen=True)
class BatchUpdate:
    batch_size: int
    removed: list
    added: list
    moved: list


class LogitsProcessor:
    pass


def install(monkeypatch, vllm: types.ModuleType | None = None) -> None:
    """The interface module (and `vllm` itself: `vllm`, or an empty module) in sys.modules, and
    olmocr_rl.loop_stop_vllm to be imported afresh against it."""
    module = types.ModuleType("vllm.v1.sample.logits_processor")
    module.BatchUpdate, module.LogitsProcessor, module.MoveDirectionality = BatchUpdate, LogitsProcessor, MoveDirectionality
    monkeypatch.setitem(sys.modules, "vllm", vllm or types.ModuleType("vllm"))
    for name in ("vllm.v1", "vllm.v1.sample"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    monkeypatch.setitem(sys.modules, "vllm.v1.sample.logits_processor", module)
    monkeypatch.delitem(sys.modules, "olmocr_rl.loop_stop_vllm", raising=False)
