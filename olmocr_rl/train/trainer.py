"""`OlmocrGRPOTrainer`: trl's GRPOTrainer as olmocr-rl trains with it, and the one module that knows
trl's internals. Every change to trl's trainer is an override here, the way trl's docs teach
(subclass `GRPOTrainer`); no other module of the package names a private trl attribute or assigns
into a trl module (tests/test_trainer.py greps for them). Upgrading trl: read the new release's
GRPOTrainer at the methods of `SEAMS`, adapt them here, then move the window (`TRL_READ`,
olmocr_rl/train/schema.py, and pyproject.toml's bound: tests/test_trainer.py holds them equal and
checks each seam's signature against the installed trl, at both ends of the window).

The overrides (trl 1.11 through 1.16; transformers' Trainer 5.17 through 5.23 for the last one):

  _generate_and_score_completions(inputs)  with `filter_groups`, in training: rounds of trl's
        generation and scoring until P page groups with reward spread are found, then trl's own
        batch building once on the chosen groups (olmocr_rl/train/filtering.py: the part without trl)
  _generate(prompts)  while trl builds that batch: the rounds' outputs, in place of generating
  _calculate_rewards(inputs, prompts, completions, completion_ids_list)  timed (time/reward_s); a
        completion cut in a loop scored as the loop continued to the length limit; while trl builds
        the filtered batch: the rounds' rewards
  _generate_single_turn(...)  timed (time/generation_s: the generate call, with vLLM the weight push);
        the loop stop: transformers' generate given its stopping criterion, and every engine's
        completions cut where they fell into a loop (the forced end token dropped), counted
  training_step(model, inputs, num_items_in_batch)  timed (time/forward_backward_s, with _prepare_inputs)
  _prepare_inputs(generation_batch)  timed: its generation and rewards are not forward/backward
  log(logs, start_time)  the compact completions table (olmocr_rl/train/console.py) in place of trl's;
        the loop stop's metrics (loops.METRICS) since the last log
  create_model_card(model_name, dataset_name, tags)  ours (olmocr_rl/train/card.py) in place of
        trl's text-model card: the base model named, an OCR example with the run's instruction
  _load_from_checkpoint(resume_from_checkpoint, model)  skipped when the resumed checkpoint's
        weights were loaded with from_pretrained (`weights_loaded`; transformers#43701)

What it reads of trl's state (`TRL_STATE`, no method): `_metrics` (the filter/* metrics),
`_pending_extra_logs` (a round's `log_extra` columns), `_logs` (the completions table),
`reward_weights`, `num_generations`, `num_iterations`, `shuffle_dataset`, `log_completions`,
`num_completions_to_print` (set to 0, trl's "print none", so that only our table prints).

Two seams are not methods: trl builds its colocated vLLM engine inside `GRPOTrainer.__init__`
(`VLLMGeneration._init_vllm` calls `vllm.LLM` by its name in trl.generation.vllm_generation) with
a fixed set of arguments, and neither the trainer nor VLLMGeneration offers a hook for more. So
while the constructor runs, and only then, that module name is wrapped (`_colocated_llm`) to hand
the engine `colocated_llm_kwargs`: the run's seed per rank, the processor bounds, eager mode, the
loop stop's logits processor. And trl's transformers generation calls
`unwrapped_model.generate(**inputs, generation_config=...)` inside `_generate_single_turn` with no
way to add a stopping criterion; so while that method runs, and only then, the model trl unwraps
(`accelerator.unwrap_model(model_wrapped)`, what trl's `unwrap_model_for_generation` yields) has its
`generate` wrapped as an instance attribute (`_stopping_loops`) to add the loop stop's criterion.

The loop stop (olmocr_rl/loops.py; docs/training.md, repetition loops): every engine ends a
completion that falls into a loop (vLLM forces its end token, transformers stops the row), and
`_cut_loops`, the one post-generation point of every engine, cuts each such completion at the loop's
cut, found again from its ids (the detector is deterministic: the cut the engine saw). Without an end
token the cut completion is truncated to trl, as one at the length limit is; the forced token and its
logprob (0.0: trl asks vLLM for processed logprobs) never reach the loss or the importance sampling
correction. Online filtering's rounds generate through `_generate`, so their completions are cut
once, and the replay hands the cut ones back.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trl import GRPOTrainer

from olmocr_rl.errors import ConfigError
from olmocr_rl.loops import LoopTally, projected_completions
from olmocr_rl.train.callbacks import FilterCheckpoint, StepTimer
from olmocr_rl.train.console import CompletionsTable
from olmocr_rl.train.filtering import OnlineFilter, Round, Settings, Step, judge, prompt_keys, rank0s, same_pages, totals
from olmocr_rl.train.schema import TRL_READ

# Each method the trainer overrides, with its parameters in every release of the window (read in
# trl 1.11.0, 1.12.0, 1.13.0, 1.14.2, 1.15.0 and 1.16.0; transformers 5.17.0 and 5.23.0).
SEAMS: dict[str, tuple[tuple[str, ...], ...]] = {
    "_generate_and_score_completions": (("self", "inputs"),),
    "_generate": (("self", "prompts"),),
    "_calculate_rewards": (("self", "inputs", "prompts", "completions", "completion_ids_list"),),
    "_generate_single_turn": (
        ("self", "prompt_ids", "images", "multimodal_fields", "has_tool_images"),  # trl 1.11-1.13
        ("self", "prompt_ids", "images", "multimodal_fields", "num_generations", "has_tool_images"),  # trl 1.14-1.16
    ),
    "training_step": (("self", "model", "inputs", "num_items_in_batch"),),
    "_prepare_inputs": (("self", "generation_batch"),),
    "log": (("self", "logs", "start_time"),),
    "_load_from_checkpoint": (("self", "resume_from_checkpoint", "model"),),
    "create_model_card": (("self", "model_name", "dataset_name", "tags"),),
}
# trl's trainer state the overrides read or set (tests/test_trainer.py checks a built trainer has each).
TRL_STATE = ("_metrics", "_pending_extra_logs", "_logs", "reward_weights", "num_generations", "num_iterations", "shuffle_dataset",
             "log_completions", "num_completions_to_print", "train_dataset", "accelerator", "use_vllm", "model_wrapped",
             "processing_class")  # fmt: skip
GENERATE_OUTPUTS = 8  # what trl's `_generate` returns (trl 1.11-1.16)
WINDOW = f"{TRL_READ[0]}-{TRL_READ[1]}"


class OlmocrGRPOTrainer(GRPOTrainer):
    """trl's GRPOTrainer with this project's seams (see the module docstring). Beyond GRPOTrainer's
    arguments: `engine` (olmocr_rl.engines.EngineSettings: what the colocated vLLM engine is told,
    and the loop stop's rule, `loop_rule`, which every engine then applies),
    `online_filter` (filter_groups' Settings; None: off), `resume` (the checkpoint the run resumes
    from: the filter's page order continues from it) and `weights_loaded` (that checkpoint's weights
    are loaded already: the Trainer's own load of them is skipped). It owns its step timer
    (`step_timer`, a callback, first in line) and its completions table."""

    def __init__(self, *args: Any, engine: Any = None, online_filter: Settings | None = None, resume: str | None = None,
                 weights_loaded: bool = False, **kwargs: Any) -> None:  # fmt: skip
        import torch

        self.step_timer = StepTimer(cuda=torch.cuda.is_available())
        self.completions_table = CompletionsTable()
        self.engine_settings = engine
        self.loop_rule = getattr(engine, "loop_rule", None)
        # Every rank's completions, as counted by `_cut_loops`: per mode since the last log, and the run's.
        self.loop_tallies = {"train": LoopTally(), "eval": LoopTally()}
        self.loops_run = LoopTally()
        self.weights_loaded = weights_loaded
        self.online: OnlineFilter | None = None
        self.replaying: _Replay | None = None  # while trl builds a filtered batch
        # The timer first: it adds its figures to a log before the metrics file writes it.
        kwargs["callbacks"] = [self.step_timer, *(kwargs.get("callbacks") or [])]
        with self._colocated_llm(kwargs.get("args")):
            super().__init__(*args, **kwargs)
        # trl prints its own table in `log` unless told to print none (num_samples <= 0); ours prints this many.
        self.completions_shown, self.num_completions_to_print = self.num_completions_to_print, 0
        if online_filter is not None:
            self.online = self._online_filter(online_filter, resume)

    # -- the colocated engine -------------------------------------------------------------------------

    def colocated_llm_kwargs(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        """What trl's colocated `vllm.LLM` is built with: trl's `kwargs` and ours (olmocr_rl/engines.py)."""
        from olmocr_rl.engines import colocated_llm_kwargs

        return colocated_llm_kwargs(self.engine_settings, kwargs) if self.engine_settings is not None else kwargs

    @contextlib.contextmanager
    def _colocated_llm(self, args: Any) -> Iterator[None]:
        """trl's module name `LLM` wrapped while the constructor runs, with colocated vLLM only (the
        module docstring says why); restored after, also when the constructor fails."""
        if not (getattr(args, "use_vllm", False) and getattr(args, "vllm_mode", None) == "colocate"):
            yield
            return
        from trl.generation import vllm_generation

        original = vllm_generation.LLM

        def llm(*a: Any, **kw: Any) -> Any:
            return original(*a, **self.colocated_llm_kwargs(kw))

        vllm_generation.LLM = llm
        try:
            yield
        finally:
            vllm_generation.LLM = original

    # -- timing (olmocr_rl/train/callbacks.py StepTimer) ------------------------------------------------

    def training_step(self, model: Any, inputs: Any, num_items_in_batch: Any = None) -> Any:
        with self.step_timer.timing("train_s"):
            return super().training_step(model, inputs, num_items_in_batch)

    def _prepare_inputs(self, generation_batch: Any) -> Any:
        with self.step_timer.timing("prepare_s"):
            return super()._prepare_inputs(generation_batch)

    def _generate_single_turn(self, *args: Any, **kwargs: Any) -> Any:
        with self.step_timer.timing("generation_s"), self._stopping_loops():
            completion_ids, logprobs = super()._generate_single_turn(*args, **kwargs)
        if self.loop_rule is None:
            return completion_ids, logprobs
        return self._cut_loops(completion_ids, logprobs)

    def _calculate_rewards(self, inputs: Any, prompts: Any, completions: Any, completion_ids_list: Any) -> Any:
        if self.replaying is not None:
            return self.replaying.rewards
        completions, completion_ids_list = self._projected(completions, completion_ids_list)
        with self.step_timer.timing("reward_s"):
            return super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)

    # -- the loop stop (olmocr_rl/loops.py; the module docstring) -----------------------------------------

    @contextlib.contextmanager
    def _stopping_loops(self) -> Iterator[None]:
        """While trl's transformers path generates: the model it unwraps for generation has its
        `generate` wrapped (an instance attribute, restored after) to add the loop stop's stopping
        criterion (olmocr_rl/loop_stop.py). vLLM stops loops itself (its logits processor)."""
        if self.loop_rule is None or self.use_vllm:
            yield
            return
        from transformers import StoppingCriteriaList

        from olmocr_rl.engines import end_token_ids
        from olmocr_rl.loop_stop import LoopStoppingCriteria

        model, rule = self.accelerator.unwrap_model(self.model_wrapped), self.loop_rule
        own, original = vars(model).get("generate"), model.generate

        def generate(*args: Any, **kwargs: Any) -> Any:
            ends = getattr(kwargs.get("generation_config"), "eos_token_id", None)
            ends = (
                [ends] if isinstance(ends, int) else list(ends or end_token_ids(model, getattr(self.processing_class, "tokenizer", None)))
            )
            watch = LoopStoppingCriteria(rule, kwargs["input_ids"].shape[1], ends)  # trl's prompts: left-padded to one width
            criteria = StoppingCriteriaList([*(kwargs.pop("stopping_criteria", None) or []), watch])
            return original(*args, stopping_criteria=criteria, **kwargs)

        model.generate = generate
        try:
            yield
        finally:
            if own is not None:
                model.generate = own
            else:
                del model.generate

    def _cut_loops(self, completion_ids: list, logprobs: list | None) -> tuple[list, list | None]:
        """Every engine's completions, cut where they fell into a loop (the module docstring):
        `rule.find` on each completion's ids gives the loop the engine stopped, and the completion
        and its logprobs end at `loop.cut`. Counted (every rank's) in the mode's tally."""
        import torch

        mode = "train" if self.model.training else "eval"
        rule, limit = self.loop_rule, int(self.args.max_completion_length)
        assert rule is not None
        loops = [rule.find(ids) for ids in completion_ids]
        counted = LoopTally()
        counted.add([len(ids) for ids in completion_ids], loops, limit)
        cut = [ids if loop is None else list(ids[: loop.cut]) for ids, loop in zip(completion_ids, loops)]
        if logprobs is not None:
            logprobs = [lp if loop is None else list(lp[: loop.cut]) for lp, loop in zip(logprobs, loops)]
        keys = list(counted.as_dict())
        mine = torch.tensor([counted.as_dict()[k] for k in keys], dtype=torch.long, device=self.accelerator.device)
        every = dict(zip(keys, self.accelerator.gather(mine).view(-1, len(keys)).sum(0).tolist()))
        self.loop_tallies[mode].merge(every)
        if mode == "train":
            self.loops_run.merge(every)
        return cut, logprobs

    def _projected(self, completions: list, completion_ids: list) -> tuple[list, list]:
        """What the rewards score (olmocr_rl/loops.py, the honest rule): a completion cut in a loop as
        the loop continued to max_completion_length, its ids and its text (decoded as trl decodes
        completions; a conversational completion's last message takes the text). The loss keeps the
        cut ids."""
        if self.loop_rule is None:
            return completions, completion_ids
        loops = [self.loop_rule.find(ids) for ids in completion_ids]
        if not any(loops):
            return completions, completion_ids
        decode = lambda ids: self.processing_class.batch_decode([ids], skip_special_tokens=True)[0]
        ids, texts = projected_completions(completion_ids, loops, int(self.args.max_completion_length), decode)
        out = [c if t is None else t if isinstance(c, str) else [*c[:-1], {**c[-1], "content": t}] for c, t in zip(completions, texts)]
        return out, ids

    # -- logging and checkpoints ------------------------------------------------------------------------

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        mode = "train" if self.model.training else "eval"
        if (tally := self.loop_tallies[mode]).completions:  # the completions generated since the last log, on every rank
            for name, value in tally.metrics().items():
                self._metrics[mode][name] = [value]
            self.loop_tallies[mode] = LoopTally()
        super().log(logs, start_time)
        if self.accelerator.is_main_process and self.log_completions:
            recent = self._logs
            self.completions_table(recent["prompt"], recent["completion"], recent["rewards"], recent["advantages"],
                                   self.state.global_step, self.completions_shown, extra=dict(recent["extra"]), mode=mode)  # fmt: skip

    def _load_from_checkpoint(self, resume_from_checkpoint: str, model: Any = None) -> None:
        if not self.weights_loaded:
            super()._load_from_checkpoint(resume_from_checkpoint, model)

    def create_model_card(self, model_name: str | None = None, dataset_name: str | None = None, tags: Any = None) -> None:
        """Ours (olmocr_rl/train/card.py) where trl writes its own (output_dir/README.md, at each
        checkpoint), written whole: the base model as the run named it, the run's instruction."""
        if not self.is_world_process_zero():
            return
        import os

        from olmocr_rl.atomic import write_text
        from olmocr_rl.train.card import model_card

        write_text(os.path.join(self.args.output_dir, "README.md"), model_card(self._card_facts(model_name)))

    def _card_facts(self, model_name: str | None) -> Any:
        import torch
        import transformers
        import trl
        from PIL import Image

        from olmocr_rl._core import __version__
        from olmocr_rl.prompts import PROMPT_NAMES, PromptError, resolve_prompt
        from olmocr_rl.train.card import CardFacts

        table = self.train_dataset.data  # the rows as build_dataset wrote them, without loading their images
        instruction, layout = table.column("prompt_text")[0].as_py(), table.column("prompt_layout")[0].as_py()
        with Image.open(table.column("image_path")[0].as_py()) as page:
            longest = max(page.size)
        option = " --prompt-file INSTRUCTION.txt"  # the instruction above, in a file
        for name in PROMPT_NAMES:
            with contextlib.suppress(PromptError):
                if (known := resolve_prompt(name)).text == instruction and known.layout == layout:
                    option = "" if name == PROMPT_NAMES[0] else f" --prompt {name}"
        base = self.engine_settings.model if self.engine_settings is not None else getattr(self.model.config, "_name_or_path", "")
        return CardFacts(name=model_name or Path(self.args.output_dir).name, base_model=str(base),
                         model_id=self.args.hub_model_id or str(self.args.output_dir), instruction=instruction, layout=layout,
                         longest_side=longest, max_new_tokens=int(self.args.max_completion_length), pages=len(self.train_dataset),
                         prompt_option=option, versions={"olmocr-rl": __version__, "TRL": trl.__version__,
                                                         "Transformers": transformers.__version__, "PyTorch": torch.__version__})  # fmt: skip

    # -- online filtering (olmocr_rl/train/filtering.py) ------------------------------------------------

    def _online_filter(self, settings: Settings, resume: str | None) -> OnlineFilter:
        from datasets import IterableDataset

        if getattr(self, "tools", None) or getattr(self, "environment_factories", None) or getattr(self, "rollout_func", None):
            raise ConfigError("filter_groups: not supported with trl's tools, environments or rollout_func")
        if isinstance(self.train_dataset, IterableDataset):
            raise ConfigError("filter_groups: needs a dataset with a length (trl's page order), not an IterableDataset")
        aggregation = getattr(self, "multi_objective_aggregation", "sum_then_normalize")
        if aggregation != "sum_then_normalize" and settings.reward is None:
            raise ConfigError(f"filter_groups: with multi_objective_aggregation={aggregation} name the reward judged: filter_reward=NAME")
        args, generations = self.args, int(self.num_generations)
        online = OnlineFilter(settings, pages=len(self.train_dataset), generations=generations,
                              per_round=int(args.generation_batch_size) // generations,
                              rows_per_rank=int(args.per_device_train_batch_size * args.steps_per_generation),
                              rank=int(self.accelerator.process_index), seed=args.seed, shuffle=bool(self.shuffle_dataset))  # fmt: skip
        if resume is not None:
            state = json.loads((Path(resume) / "trainer_state.json").read_text(encoding="utf-8"))
            warning = online.restore(resume, int(state.get("global_step", 0)), accumulation=args.gradient_accumulation_steps,
                                     micro_steps_per_generation=args.steps_per_generation * self.num_iterations)  # fmt: skip
            if warning and online.rank == 0:
                print(f"warning: online filtering: {warning}", file=sys.stderr, flush=True)
        self.add_callback(FilterCheckpoint(online))
        return online

    def _generate_and_score_completions(self, inputs: list[dict]) -> dict:
        if self.online is None or not self.model.training:
            return super()._generate_and_score_completions(inputs)
        import torch

        online, weights = self.online, self.reward_weights.cpu()
        t0 = time.perf_counter()
        rounds: list[Round] = []
        while not rounds or not online.enough(rounds):
            pages = online.stream.draw()
            rows = self._dataset_rows(online.rows_of(pages))
            if not rounds:
                self._check_order(inputs, rows)
            rewards, records = self._round(rows)
            rounds.append(Round(pages, rewards, records, rank0s(judge(rewards, weights, online.generations, online.settings, len(rounds)))))
        slots, filled = online.batch(rounds)
        batch = self._replay(rounds, slots)
        reward = float(totals(torch.cat([r.rewards for r in rounds]), weights).nanmean())
        step = Step([g for r in rounds for g in r.groups], len(rounds), filled, time.perf_counter() - t0, reward)
        warning, metrics = online.record(step, self.state.global_step)
        if warning and online.rank == 0:
            print(f"warning: {warning}", file=sys.stderr, flush=True)
        for name, value in metrics.items():
            self._metrics["train"][name].append(value)
        return batch

    def _generate(self, prompts: list) -> Any:
        if self.replaying is not None:
            return self.replaying.outputs(prompts)
        return super()._generate(prompts)

    def _dataset_rows(self, pages: list[int]) -> list[dict]:
        loaded: dict[int, dict] = {}
        rows = []
        for p in pages:
            if p not in loaded:
                loaded[p] = self.train_dataset[int(p)]
            rows.append(dict(loaded[p]))
        return rows

    def _check_order(self, inputs: list[dict], rows: list[dict]) -> None:
        """While in sync, the stream's pages must be the ones trl's dataloader handed over."""
        online = self.online
        assert online is not None
        if online.in_sync and not same_pages(inputs, rows):
            online.in_sync = False
            if online.rank == 0:
                print(f"warning: online filtering: trl's page order is not the one the filter continues (it reproduces trl "
                      f"{WINDOW}'s RepeatSampler); training goes on in the filter's order", file=sys.stderr, flush=True)  # fmt: skip

    def _round_prompts(self, rows: list[dict]) -> list:
        """The prompts trl's `_generate_and_score_completions` gives `_generate` for `rows` (trl
        1.11-1.16 without environments or tools, which online filtering refuses): each row's
        conversation with its images put in. The replay holds them against trl's own (`_Replay`)."""
        from trl.data_utils import prepare_multimodal_messages

        prompts = [x["prompt"] for x in rows]
        if "images" in rows[0]:
            images = [x.get("images") for x in rows]
        elif "image" in rows[0]:
            images = [[x.get("image")] if x.get("image") is not None else None for x in rows]
        else:
            return prompts
        if all(i == [] for i in images):
            return prompts
        return [prepare_multimodal_messages(p, images=i) for p, i in zip(prompts, images, strict=True)]

    def _round(self, rows: list[dict]) -> tuple[Any, list[dict]]:
        """Generates and scores one round on this rank's rows, as trl does; returns every rank's
        rewards (CPU) and this rank's records."""
        prompts = self._round_prompts(rows)
        out = tuple(self._generate(prompts))
        if len(out) != GENERATE_OUTPUTS or out[5] or any(out[7] or ()):
            raise RuntimeError(
                f"online filtering: trl's GRPOTrainer._generate returned {len(out)} values (extra fields {bool(out[5:6] and out[5])}); "
                f"it reads trl {WINDOW}'s 8 and supports neither rollout_func nor tool images"
            )
        prompt_ids, completion_ids, tool_mask, completions, logprobs = out[:5]
        pending = self._pending_extra_logs
        before = {k: len(v) for k, v in pending.items()}
        rewards = self._calculate_rewards(rows, prompts, completions, completion_ids)
        extra = {}
        for column, values in list(pending.items()):
            extra[column] = values[before.get(column, 0) :]
            del values[before.get(column, 0) :]
        keys = prompt_keys(prompts)
        records = [
            {"prompt": keys[i], "prompt_ids": prompt_ids[i], "completion_ids": completion_ids[i],
             "completion": completions[i], "tool_mask": None if tool_mask is None else tool_mask[i],
             "logprobs": None if logprobs is None else logprobs[i], "extra": {c: v[i] for c, v in extra.items() if i < len(v)}}
            for i in range(len(rows))
        ]  # fmt: skip
        return rewards.detach().float().cpu(), records

    def _replay(self, rounds: list[Round], slots: list) -> dict:
        """trl's `_generate_and_score_completions` on the batch of `slots`, with `_generate` and
        `_calculate_rewards` giving back what the rounds made."""
        online = self.online
        assert online is not None
        records = online.move_records(rounds, slots)
        pages, rewards = online.trained_rows(rounds, slots)
        rows = self._dataset_rows(pages)
        pending = self._pending_extra_logs
        for column in sorted({c for r in records for c in r["extra"]}):
            pending[column].extend(r["extra"].get(column) for r in records)
        self.replaying = _Replay(records, rewards.to(self.accelerator.device))
        try:
            return super()._generate_and_score_completions(rows)
        finally:
            self.replaying = None


@dataclass
class _Replay:
    """A filtered batch while trl builds it: this rank's rows' records and every rank's rewards."""

    records: list[dict]
    rewards: Any

    def outputs(self, prompts: list) -> tuple:
        """What trl's `_generate` returned for these rows in their rounds (the same prompts, or an error)."""
        recs = self.records
        if len(prompts) != len(recs):
            raise RuntimeError(f"online filtering: trl asked for {len(prompts)} completions, the batch has {len(recs)}")
        if prompt_keys(prompts) != [r["prompt"] for r in recs]:
            raise RuntimeError(
                f"online filtering: trl builds the trained batch from other prompts than the rounds generated for (the "
                f"rounds prepare them as trl {WINDOW} does: OlmocrGRPOTrainer._round_prompts)"
            )
        tool_mask = None if all(r["tool_mask"] is None for r in recs) else [r["tool_mask"] for r in recs]
        logprobs = None if all(r["logprobs"] is None for r in recs) else [r["logprobs"] for r in recs]
        return ([r["prompt_ids"] for r in recs], [r["completion_ids"] for r in recs], tool_mask, [r["completion"] for r in recs],
                logprobs, {}, None, [])  # fmt: skip
