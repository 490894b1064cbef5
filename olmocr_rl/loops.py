"""Repetition loops: the rule that says a completion has fallen into one (`LoopRule`, its keys and
defaults in one table, `LOOP_OPTIONS`), the detector that applies it (rust/loops.rs, through
`olmocr_rl._core`), and what a completion stopped in a loop earns (`project`).

The rule: a completion's suffix repeats a period of 1 to `max_period` tokens exactly, over at least
`min_span` tokens and `min_repeats` periods. The detector is fed tokens as they are generated and
reports the first length at which the rule holds (`Loop.cut`), where the periodic suffix starts
(`Loop.start`) and its period: the same loop and the same cut whoever feeds it and however often
(every engine, or a re-run on the ids an engine returned). Only exact repetition counts.

Where only text exists (`probe`, the bench report), `find_text` reads one code point as one token,
or the model's tokens when given its tokenizer's `encode`. A text periodic in tokens is periodic in
characters over at least as many characters and repeats, so a text that is no loop in characters is
none in any tokenizer's tokens.

**What a stopped completion earns** (the honest rule): exactly what the same loop continued to the
length limit earns. `project(ids, loop, limit)` builds that continuation: the prefix, then the
period repeated until `limit` tokens; every reward is computed on its text. A stopped completion
therefore never earns more than the full-length loop (there is no reward for looping early), and
never less (stopping is not a penalty the policy could learn to avoid by looping differently). The
cost: scoring a completion of `limit` tokens, as without the stop. What the continuation assumes: the
policy would have kept repeating; a loop it would have left is scored as if it had not (why `generate`
and `curate`, which must score as the full run does, leave the stop off by default).

The defaults, measured (benchmarks/bench_loops.py prints them): the longest exact repetition in the
bench fixtures' transcriptions and in the hard legitimate pages of bench_fixtures/loop_cases.py (a
table of 40 identical rows, an empty 40-row HTML form, a page of 40 dotted lines, dot leaders,
numbered rows, repeated headers) spans at most 3,241 characters, so at most 3,241 tokens in any
tokenizer; `min_span` is the power of two above it. `max_period` 256 covers a looping table row or
paragraph of about a thousand characters at a cost of about 0.15 µs per token in Rust
(O(max_period) per token), a few µs per call from Python (docs/training.md, repetition loops).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

import olmocr_rl._core as _core
from olmocr_rl._core import Loop, LoopDetector

__all__ = [
    "LOOP_OPTIONS",
    "VLLM_EXTRA_KEY",
    "VLLM_PROCESSOR",
    "Loop",
    "LoopDetector",
    "LoopRule",
    "LoopTally",
    "project",
    "projected_completions",
    "rule_from",
    "rule_from_extra_args",
    "stop_line",
    "vllm_extra_args",
]


def _key(default: Any, help: str) -> Any:
    return field(default=default, metadata={"help": help})


@dataclass(frozen=True)
class LoopRule:
    """When a completion has fallen into a loop (see the module docstring). ValueError for values
    that make no rule."""

    max_period: int = _key(256, "the longest period looked for, in tokens (1-4096; the cost is O(max_period) per token)")
    min_span: int = _key(4096, "tokens the periodic suffix must span to be a loop (above the longest legitimate repetition measured)")
    min_repeats: int = _key(4, "periods the suffix must repeat to be a loop (at least 2)")

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise ValueError(f"loop rule: {f.name} must be a whole number, not {value!r}")
        LoopDetector(self.max_period, self.min_repeats, self.min_span)  # the core's checks, with its message

    def detector(self) -> LoopDetector:
        """A fresh incremental detector: `extend(new_ids)` as tokens arrive; `.found` once it holds."""
        return LoopDetector(self.max_period, self.min_repeats, self.min_span)

    def find(self, ids: Sequence[int]) -> Loop | None:
        """The loop of a whole token sequence (the first length at which the rule holds), or None."""
        return _core.find_loop(list(ids), self.max_period, self.min_repeats, self.min_span)

    def find_text(self, text: str, encode: Callable[[str], list[int]] | None = None) -> Loop | None:
        """The loop of a text: its code points as tokens, or `encode(text)`'s ids (a model's tokenizer)."""
        if encode is not None:
            return self.find(encode(text))
        return _core.find_loop_text(text, self.max_period, self.min_repeats, self.min_span)

    def describe(self) -> str:
        """The rule in one phrase (dry runs, reports)."""
        return (f"a suffix repeating a period of 1-{self.max_period} tokens exactly, over at least {self.min_span} tokens and "
                f"{self.min_repeats} periods")  # fmt: skip

    def as_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class LoopOption:
    """One config key of the loop stop: its name, type, default and help."""

    name: str
    type: type
    default: Any
    help: str


# THE table of the loop stop's keys: `train`'s config keys (TrainConfig), `generate`'s options
# (--stop-loops, --loop-max-period, ...) and `curate`'s. `loop_stop`'s default is train's; generate and
# curate default to off (they must score as the full run does; see the module docstring).
LOOP_OPTIONS: tuple[LoopOption, ...] = (
    LoopOption("loop_stop", bool, True, "end a completion when it falls into a repetition loop; it is scored as the loop continued "
               "to the length limit (docs/training.md, repetition loops)"),
    *(LoopOption("loop_" + f.name, int, f.default, f.metadata["help"]) for f in fields(LoopRule)),
)  # fmt: skip


# What `LoopTally.metrics` logs per training step, one line each (the run report's loop panel reads them).
METRICS: dict[str, str] = {
    "loops/stopped": "completions stopped in a repetition loop",
    "loops/stopped_ratio": "the share of the step's completions stopped",
    "loops/decode_tokens_saved_max": "the length limit minus each stopped length, summed: an upper bound of the decode tokens saved",
    "loops/loop_token_share": "the share of the generated tokens that were inside loops (cut - start of each stopped completion)",
}


def rule_from(values: Mapping[str, Any] | Any, *, stop: bool | None = None) -> LoopRule | None:
    """The rule a config states (a mapping or an object with the `loop_*` keys; a key it lacks takes
    its default), or None when `loop_stop` is false. `stop`: overrides `loop_stop`."""

    def get(name: str, default: Any) -> Any:
        if isinstance(values, Mapping):
            return values.get(name, default)
        return getattr(values, name, default)

    on = get("loop_stop", LOOP_OPTIONS[0].default) if stop is None else stop
    if not on:
        return None
    return LoopRule(**{f.name: get("loop_" + f.name, f.default) for f in fields(LoopRule)})


def stop_line(rule: LoopRule | None, limit: int) -> str:
    """What the loop stop does to a training run's generation, in one line (`train --dry-run`): a
    completion whose suffix loops from token s ends at s + max(min_span, min_repeats x period) tokens
    (the detector's cut) instead of running on to `limit` (max_completion_length)."""
    if rule is None:
        return f"loop stop: off (loop_stop=false): a completion in a repetition loop runs on to max_completion_length ({limit:,} tokens)"
    longest = max(rule.min_span, rule.min_repeats * rule.max_period)
    never = f" (never within max_completion_length {limit:,}: a loop must span {rule.min_span:,})" if rule.min_span > limit else ""
    return (f"loop stop: on{never}: a completion ends once it has {rule.describe()}: at most {longest:,} tokens after the "
            f"loop's start, instead of running on to max_completion_length ({limit:,}); trained as truncated, scored as the loop "
            "continued to the limit (docs/training.md, repetition loops)")  # fmt: skip


def rule_with(rule: LoopRule, pairs: Iterable[str]) -> LoopRule:
    """`rule` with KEY=VALUE pairs applied (keys: LoopRule's fields, or their `loop_` config names);
    ValueError naming a bad pair."""
    from dataclasses import replace

    names = [f.name for f in fields(LoopRule)]
    changes: dict[str, int] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip().removeprefix("loop_")
        if not sep or key not in names:
            raise ValueError(f"{pair!r}: give KEY=VALUE with KEY one of {', '.join(names)}")
        try:
            changes[key] = int(value)
        except ValueError:
            raise ValueError(f"{pair!r}: {value!r} is not a whole number") from None
    return replace(rule, **changes)


# The loop stop's switch in a vLLM request (`SamplingParams(extra_args=...)`), read by
# olmocr_rl/loop_stop_vllm.py: the rule and the token to force, flat keys with whole-number values
# (so that they also pass as an OpenAI-style request's `vllm_xargs`, which takes no nested values).
VLLM_EXTRA_KEY = "olmocr_rl_loop_"
VLLM_PROCESSOR = "olmocr_rl.loop_stop_vllm:LoopStopProcessor"  # vllm serve --logits-processors VLLM_PROCESSOR


def vllm_extra_args(rule: LoopRule, end_token_id: int) -> dict[str, int]:
    """`SamplingParams(extra_args=...)` that switch the loop stop on for a request (flat, JSON-safe:
    the vLLM server takes it too)."""
    return {**{VLLM_EXTRA_KEY + k: v for k, v in rule.as_dict().items()}, VLLM_EXTRA_KEY + "end": int(end_token_id)}


def rule_from_extra_args(extra: Mapping[str, Any] | None) -> tuple[LoopRule, int] | None:
    """(rule, end token) of a request's `extra_args`, None when it does not ask for the stop (no
    `olmocr_rl_loop_end`); ValueError naming what is wrong with a malformed one."""
    spec = {k.removeprefix(VLLM_EXTRA_KEY): v for k, v in (extra or {}).items() if k.startswith(VLLM_EXTRA_KEY)}
    if not spec:
        return None
    end = spec.get("end")
    if not isinstance(end, int) or isinstance(end, bool) or end < 0:
        raise ValueError(f"extra_args[{VLLM_EXTRA_KEY + 'end'!r}] must be a token id, not {end!r}")
    names = {f.name for f in fields(LoopRule)}
    unknown = set(spec) - names - {"end"}
    if unknown:
        raise ValueError(f"extra_args: unknown key(s) {', '.join(sorted(VLLM_EXTRA_KEY + k for k in unknown))}")
    return LoopRule(**{k: v for k, v in spec.items() if k in names}), end


def project(ids: Sequence[int], loop: Loop, limit: int) -> list[int]:
    """The completion the loop would have become at the length limit: `ids` up to the loop's start,
    then its period repeated until `limit` tokens (never shorter than `ids[:loop.cut]`). What a
    stopped completion is scored as (the module docstring: the honest rule)."""
    if not 0 <= loop.start < loop.start + loop.period <= min(loop.cut, len(ids)):
        raise ValueError(f"{loop!r} does not fit a completion of {len(ids)} tokens")
    length = max(int(limit), loop.cut)
    period = list(ids[loop.start : loop.start + loop.period])
    out = list(ids[: loop.start])
    whole, rest = divmod(length - loop.start, loop.period)
    return out + period * whole + period[:rest]


def projected_completions(ids: Sequence[Sequence[int]], loops: Sequence[Loop | None], limit: int,
                          decode: Callable[[list[int]], str]) -> tuple[list[list[int]], list[str | None]]:  # fmt: skip
    """For rewards: each stopped completion's projection (`project`) and its text (`decode`); the
    others' ids as they are, with None for text (keep the engine's)."""
    out_ids: list[list[int]] = []
    texts: list[str | None] = []
    for one, loop in zip(ids, loops, strict=True):
        if loop is None:
            out_ids.append(list(one))
            texts.append(None)
        else:
            full = project(one, loop, limit)
            out_ids.append(full)
            texts.append(decode(full))
    return out_ids, texts


@dataclass
class LoopTally:
    """What the stop did over a job: completions generated and stopped, the tokens generated (to the
    cut), the tokens inside loops (cut - start, summed), and the decode tokens saved: the limit minus
    the stopped length for each stopped completion, an upper bound (a loop might have ended sooner
    with an end-of-sequence token, or the context might have been shorter)."""

    completions: int = 0
    stopped: int = 0
    tokens: int = 0
    loop_tokens: int = 0
    saved: int = 0
    last: list[tuple[Loop | None, int]] = field(default_factory=list, repr=False)  # the latest `add`: (loop, tokens saved) each

    def add(self, lengths: Iterable[int], loops: Iterable[Loop | None], limit: int) -> None:
        """Counts one call's completions (`lengths`: the tokens each was generated with)."""
        self.last = []
        for n, loop in zip(lengths, loops, strict=True):
            self.last.append((loop, max(0, limit - loop.cut) if loop is not None else 0))
            self.completions += 1
            if loop is None:
                self.tokens += n
                continue
            self.stopped += 1
            self.tokens += loop.cut
            self.loop_tokens += loop.cut - loop.start
            self.saved += max(0, limit - loop.cut)

    def merge(self, other: Mapping[str, int]) -> None:
        for k in ("completions", "stopped", "tokens", "loop_tokens", "saved"):
            setattr(self, k, getattr(self, k) + int(other.get(k, 0)))

    def as_dict(self) -> dict[str, int]:
        return {"completions": self.completions, "stopped": self.stopped, "tokens": self.tokens, "loop_tokens": self.loop_tokens,
                "saved": self.saved}  # fmt: skip

    def metrics(self) -> dict[str, float]:
        """The per-step metrics of training's logs (`logs/metrics.jsonl`, the console, the run report):
        METRICS's names, for the completions this tally counted."""
        return {
            "loops/stopped": float(self.stopped),
            "loops/stopped_ratio": self.stopped / self.completions if self.completions else 0.0,
            "loops/decode_tokens_saved_max": float(self.saved),
            "loops/loop_token_share": self.loop_tokens / self.tokens if self.tokens else 0.0,
        }

    def line(self) -> str:
        """The closing line of `generate` and `curate`."""
        share = f"{self.loop_tokens / self.tokens:.1%}" if self.tokens else "0%"
        return (f"loops: {self.stopped} of {self.completions} completions stopped in a repetition loop; {self.saved:,} decode tokens "
                f"saved at most (the limit minus each stopped length: an upper bound); {share} of the {self.tokens:,} tokens generated "
                "were inside loops")  # fmt: skip
