"""Online group filtering (`filter_groups`): every generation batch trl trains on is made of page
groups whose rewards disagree (olmocr_rl/keep_rule.py, the rule `olmocr-rl curate` applies before
training), refilled from further pages of the training order, as verl (`filter_groups`), EasyR1
(`online_filtering`), ms-swift (`--dynamic_sample`) and OpenRLHF (`--dynamic_filtering`) do after
DAPO's dynamic sampling; trl only logs `frac_reward_zero_std`. olmocr_rl/train/worker.py installs
it on the trainer (`install`).

How one generation batch of trl becomes several rounds (`OnlineFilter.generate_and_score`):

1. Pages come from `PageStream`: trl's own order (its RepeatSampler: one torch.randperm of the
   train pages per pass, seeded with `seed`, cut into generation batches of P pages, the
   incomplete last one dropped), continued by every round. Until a round is added the stream's
   pages are the ones trl's dataloader hands over (checked at each such batch); trl's dataloader
   is otherwise only the clock of the run (optimizer steps, epochs in steps, evaluation,
   checkpoints), so an epoch of pages is used up sooner and the schedule counts optimizer steps.
2. A round generates and scores the next P pages as trl does: trl's
   `_generate_and_score_completions` runs up to its `_generate` call (trl's prompt preparation),
   `_generate` runs, and the round leaves before trl tensorises anything (`_Generated`); trl's
   `_calculate_rewards` scores the round and gathers every rank's rewards.
3. The groups are judged on those gathered rewards; rank 0's verdicts are broadcast, so every rank
   runs the same rounds: until P groups are kept, or `filter_extra_rounds` rounds were added.
4. The batch: the first P kept groups in generation order; at the bound, filled with dropped
   groups (those with reward spread outside the band first; a group without spread has zero
   advantage, so the batch trains as trl would without filtering on that mix), warned and logged.
   trl's `_generate_and_score_completions` then runs once on it with `_generate` and
   `_calculate_rewards` replaying the rounds: trl computes pixel values, old and reference
   log-probabilities, advantages, `num_items_in_batch` (the loss normalisations) and its metrics
   on the batch that is trained, as it does without filtering; every rank ends with the same
   number of rows, hence of micro-batches. Only generation outputs (token ids, sampling
   log-probabilities, decoded text, `log_extra` columns) move between ranks; a group stays on
   the rank that generated it where that rank has a free slot.

trl seams, read against trl 1.11.0 through 1.16.0 (tests/test_filtering.py fails when one changes):
`GRPOTrainer._generate_and_score_completions(inputs)` (wrapped on the instance, training only;
trl's `_prepare_inputs` calls it once per generation batch and buffers the result for
steps_per_generation x num_iterations micro-steps), `_generate(prompts)` returning (prompt_ids,
completion_ids, tool_mask, completions, logprobs, extra_fields, images, tool_images),
`_calculate_rewards(inputs, prompts, completions, completion_ids_list)` returning every rank's
rewards, `_pending_extra_logs` (the reward functions' `log_extra` columns), `_metrics["train"]`,
and `RepeatSampler`'s order (trl/trainer/utils.py). Not supported (refused): tools, environments,
`rollout_func`, an IterableDataset.
"""

from __future__ import annotations

import contextlib
import json
import math
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from olmocr_rl.errors import ConfigError
from olmocr_rl.keep_rule import KeepRule, has_spread, statistics

TrainConfig = Any  # olmocr_rl/train/config.py's, which calls validate_filter (importing it here would be a cycle)

STATE_FILE = "online_filter.json"  # in each checkpoint folder: where the page order stands
TRL_READ = "1.11.0-1.16.0"
GENERATE_OUTPUTS = 8  # what trl's GRPOTrainer._generate returns (trl 1.11-1.16)


# --- the config keys, and what they cost: for the plan -------------------------------------------


def validate_filter(cfg: TrainConfig) -> None:
    """The filter_* keys (olmocr_rl/train/config.py), checked whether or not filtering is on."""
    if cfg.filter_reward is not None and cfg.filter_reward not in cfg.rewards:
        raise ConfigError(f"filter_reward: {cfg.filter_reward!r} is not one of the run's rewards ({', '.join(cfg.rewards)})")
    if cfg.filter_min_std < 0:
        raise ConfigError(f"filter_min_std must be >= 0, got {cfg.filter_min_std}")
    low, high = cfg.filter_min_mean, cfg.filter_max_mean
    if low is not None and high is not None and low >= high:
        raise ConfigError(f"filter_min_mean ({low}) must be below filter_max_mean ({high}): no group could be kept")
    if cfg.filter_extra_rounds < 0:
        raise ConfigError(f"filter_extra_rounds must be >= 0, got {cfg.filter_extra_rounds}")
    if cfg.filter_groups and cfg.filter_reward is None and cfg.trl.get("multi_objective_aggregation") == "normalize_then_sum":
        raise ConfigError(
            "filter_groups: with trl.multi_objective_aggregation=normalize_then_sum the advantage is not computed from one "
            "total reward per completion; name the reward groups are judged on: filter_reward=NAME"
        )


@dataclass(frozen=True)
class Cost:
    """The worst case per generation batch with filtering on (`worst_case`)."""

    rounds: int  # generation rounds at most (1 + filter_extra_rounds)
    completions: int  # completions one round generates (trl's generation batch)
    pages: int  # pages one round draws

    @property
    def completions_max(self) -> int:
        return self.rounds * self.completions

    def line(self) -> str:
        return (
            f"online filtering: up to {self.rounds} generation rounds per generation batch (1 + filter_extra_rounds): at most "
            f"{self.completions_max:,} completions from {self.rounds * self.pages} pages where trl generates {self.completions:,} "
            f"from {self.pages}; optimizer steps as without filtering, the train pages used up to {self.rounds}x sooner"
        )


def worst_case(cfg: TrainConfig, world_size: int) -> Cost | None:
    """With `filter_groups`: the most generation one generation batch can cost; None when off."""
    if not cfg.filter_groups:
        return None
    batch = cfg.per_device_train_batch_size * world_size * (cfg.steps_per_generation or cfg.gradient_accumulation_steps)
    return Cost(1 + cfg.filter_extra_rounds, batch, batch // max(1, cfg.num_generations or 1))


# --- the page order -------------------------------------------------------------------------------


class PageStream:
    """The training order as trl's RepeatSampler draws it, continued: pass k is the k-th
    torch.randperm of `pages` from one generator seeded with `seed` (or the pages in order without
    `shuffle`), cut into rounds of `per_round` pages, the incomplete last one dropped. `position`:
    the rounds drawn so far."""

    def __init__(self, pages: int, per_round: int, seed: int | None, shuffle: bool) -> None:
        if per_round < 1 or pages < per_round:
            raise ConfigError(f"online filtering: a generation batch takes {per_round} pages; the train split has {pages}")
        self.pages, self.per_round, self.seed, self.shuffle = pages, per_round, seed, shuffle
        self.rounds_per_pass = pages // per_round
        self.position = 0
        self._pass, self._order, self._generator = -1, list(range(pages)), None

    def _order_of(self, k: int) -> list[int]:
        if not self.shuffle:
            return self._order
        if k < self._pass:  # only a restore goes back: draw again from the start
            self._pass, self._generator = -1, None
        if self._generator is None:
            import torch

            self._generator = torch.Generator()
            if self.seed is not None:
                self._generator.manual_seed(self.seed)
        while self._pass < k:
            import torch

            self._order = torch.randperm(self.pages, generator=self._generator).tolist()
            self._pass += 1
        return self._order

    def pages_at(self, position: int) -> list[int]:
        k, i = divmod(position, self.rounds_per_pass)
        return self._order_of(k)[i * self.per_round : (i + 1) * self.per_round]

    def draw(self) -> list[int]:
        pages = self.pages_at(self.position)
        self.position += 1
        return pages

    @property
    def passes(self) -> float:
        """Passes over the train pages drawn so far (trl's epochs, in pages)."""
        return self.position / self.rounds_per_pass


# --- judging and placing groups ----------------------------------------------------------------


@dataclass(frozen=True)
class Group:
    """One page's group of one round: `index` in its round (rows index*G .. index*G+G-1 of the
    round's generation batch, over all ranks)."""

    round: int
    index: int
    kept: bool  # the keep rule keeps it
    spread: bool  # its judged rewards disagree (trl's test)
    zero_total: bool  # its total rewards agree: counted by trl's frac_reward_zero_std


@dataclass(frozen=True)
class Settings:
    rule: KeepRule
    reward: int | None  # the column of the reward judged; None: the weighted total
    extra_rounds: int

    @classmethod
    def of(cls, cfg: TrainConfig) -> Settings:
        reward = list(cfg.rewards).index(cfg.filter_reward) if cfg.filter_reward is not None else None
        return cls(KeepRule(cfg.filter_min_std, cfg.filter_min_mean, cfg.filter_max_mean), reward, cfg.filter_extra_rounds)


def totals(rewards: Any, weights: Any) -> Any:
    """Each row's total reward as trl computes the advantage from it (sum_then_normalize): the
    weighted sum over reward functions, NaN functions left out, NaN where every one is NaN."""
    import torch

    total = (rewards * weights.to(rewards.device, rewards.dtype).unsqueeze(0)).nansum(dim=1)
    total[torch.isnan(rewards).all(dim=1)] = torch.nan
    return total


def _group_stats(values: Sequence[float]) -> dict[str, float] | None:
    scored = [v for v in values if not math.isnan(v)]  # trl's nanmean / nanstd leave NaN out
    return statistics(scored) if scored else None


def judge(rewards: Any, weights: Any, generations: int, settings: Settings, round_: int) -> list[Group]:
    """The groups of one round from its gathered rewards (rows x reward functions, on every rank)."""
    total = totals(rewards, weights).double().tolist()  # in float32, as trl sums them
    judged = total if settings.reward is None else rewards[:, settings.reward].double().tolist()
    groups = []
    for g in range(len(total) // generations):
        rows = slice(g * generations, (g + 1) * generations)
        stats, total_stats = _group_stats(judged[rows]), _group_stats(total[rows])
        groups.append(
            Group(
                round_,
                g,
                kept=stats is not None and settings.rule.keeps_stats(stats),
                spread=stats is not None and has_spread(stats),
                zero_total=total_stats is None or not has_spread(total_stats),
            )
        )
    return groups


def select(groups: Sequence[Group], need: int) -> tuple[list[Group], int]:
    """The batch's groups: the first `need` kept ones in generation order, else all kept ones and
    dropped ones to fill (those with reward spread first, each kind in generation order); and how
    many were filled."""
    kept = [g for g in groups if g.kept][:need]
    fill = sorted((g for g in groups if not g.kept), key=lambda g: not g.spread)[: need - len(kept)]
    return kept + fill, len(fill)


def place(chosen: Sequence[Group], generations: int, rows_per_rank: int) -> list[Group]:
    """The batch's slot order (slot s: rows s*G .. s*G+G-1 over all ranks). Where groups do not
    straddle ranks (rows_per_rank a multiple of G), a group takes a free slot on the rank that
    generated it first, so that its outputs need not move; else generation order."""
    if rows_per_rank % generations:
        return list(chosen)
    per_rank = rows_per_rank // generations
    slots: list[Group | None] = [None] * len(chosen)
    rest = []
    for g in chosen:
        home = g.index // per_rank
        free = next((s for s in range(home * per_rank, (home + 1) * per_rank) if s < len(slots) and slots[s] is None), None)
        if free is None:
            rest.append(g)
        else:
            slots[free] = g
    for s in range(len(slots)):
        if slots[s] is None:
            slots[s] = rest.pop(0)
    return [g for g in slots if g is not None]


# --- the mechanism ------------------------------------------------------------------------------


class _Generated(Exception):
    """Leaves trl's _generate_and_score_completions right after its _generate call."""


@contextlib.contextmanager
def _swapped(obj: Any, name: str, value: Any) -> Iterator[None]:
    """`obj.name` is `value` inside the block (an instance attribute over the class's method)."""
    had, before = name in vars(obj), vars(obj).get(name)
    setattr(obj, name, value)
    try:
        yield
    finally:
        if had:
            setattr(obj, name, before)
        else:
            delattr(obj, name)


def _distributed() -> bool:
    import torch.distributed as dist

    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def _rank0s(obj: Any) -> Any:
    """Rank 0's `obj` on every rank (the verdicts: every rank then runs the same rounds)."""
    if not _distributed():
        return obj
    import torch.distributed as dist

    box = [obj]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def _all_gather(obj: Any) -> list[Any]:
    from olmocr_rl.train.rewards import gather_over_ranks

    return gather_over_ranks(obj)


@dataclass
class Round:
    pages: list[int]  # the round's pages, P of them
    rewards: Any  # every rank's rewards, rows x reward functions (CPU float32)
    records: list[dict]  # this rank's rows: what _generate returned for each, and its log_extra values
    groups: list[Group]


@dataclass
class Step:
    """What one generation batch cost and bought (logged as filter/*)."""

    groups: list[Group]
    rounds: int
    filled: int
    seconds: float
    reward: float  # mean total reward over every completion generated


class OnlineFilter:
    """Installed on a GRPOTrainer (`install`): its `_generate_and_score_completions`, in training."""

    def __init__(self, trainer: Any, settings: Settings) -> None:
        self.trainer = trainer
        self.settings = settings
        args = trainer.args
        self.generations = int(trainer.num_generations)
        self.world = int(trainer.accelerator.num_processes)
        self.rank = int(trainer.accelerator.process_index)
        self.rows_per_rank = int(args.per_device_train_batch_size * args.steps_per_generation)
        self.per_round = int(args.generation_batch_size) // self.generations
        self.dataset = trainer.train_dataset
        self.stream = PageStream(len(self.dataset), self.per_round, args.seed, bool(trainer.shuffle_dataset))
        self.original = trainer._generate_and_score_completions
        self.in_sync = True  # no round added yet (and not resumed): the stream's pages are trl's
        self.bound_hits = 0
        self.rounds_total = 0

    # -- state in checkpoints ----------------------------------------------------------------------

    def state(self) -> dict:
        s = self.stream
        return {"rounds_drawn": s.position, "pages_per_round": s.per_round, "train_pages": s.pages, "seed": s.seed,
                "shuffle": s.shuffle, "bound_hits": self.bound_hits}  # fmt: skip

    def restore(self, checkpoint: str | Path, global_step: int) -> str | None:
        """Continues the page order where the checkpoint left it; returns a warning, if any."""
        self.in_sync = False
        path = Path(checkpoint) / STATE_FILE
        if not path.is_file():
            args = self.trainer.args
            every = args.steps_per_generation * self.trainer.num_iterations
            self.stream.position = -(-global_step * args.gradient_accumulation_steps // every)
            return (f"{checkpoint} has no {STATE_FILE} (saved without filter_groups): the page order continues where trl's "
                    f"would, at generation batch {self.stream.position}")  # fmt: skip
        data = json.loads(path.read_text(encoding="utf-8"))
        self.stream.position = int(data["rounds_drawn"])
        self.bound_hits = int(data.get("bound_hits", 0))
        s = self.stream
        saved = (data.get("pages_per_round"), data.get("train_pages"), data.get("seed"), data.get("shuffle"))
        if saved != (s.per_round, s.pages, s.seed, s.shuffle):
            return (f"{path}: saved for {saved[0]} pages per generation batch of {saved[1]} train pages (seed {saved[2]}); this "
                    f"run has {s.per_round} of {s.pages} (seed {s.seed}): the order continues at its position, not its pages")  # fmt: skip
        return None

    # -- one generation batch ------------------------------------------------------------------------

    def generate_and_score(self, inputs: list[dict]) -> dict:
        """trl's `_generate_and_score_completions`, in training with online filtering."""
        import torch

        trainer = self.trainer
        if not trainer.model.training:
            return self.original(inputs)
        t0 = time.perf_counter()
        rounds: list[Round] = []
        kept = 0
        while True:
            pages = self.stream.draw()
            rows = self._rows(pages)
            if not rounds:
                self._check_order(inputs, rows)
            rewards, records = self._generate_round(rows)
            groups = _rank0s(judge(rewards, trainer.reward_weights.cpu(), self.generations, self.settings, len(rounds)))
            rounds.append(Round(pages, rewards, records, groups))
            kept += sum(g.kept for g in groups)
            if kept >= self.per_round or len(rounds) > self.settings.extra_rounds:
                break
        if len(rounds) > 1:
            self.in_sync = False
        every = [g for r in rounds for g in r.groups]
        chosen, filled = select(every, self.per_round)
        slots = place(chosen, self.generations, self.rows_per_rank)
        batch = self._replay(rounds, slots)
        reward = float(totals(torch.cat([r.rewards for r in rounds]), trainer.reward_weights.cpu()).nanmean())
        self._log(Step(every, len(rounds), filled, time.perf_counter() - t0, reward))
        return batch

    def _rows(self, pages: Sequence[int]) -> list[dict]:
        """This rank's rows of a round: each page repeated G times over all ranks, as trl lays out a
        generation batch (rank r holds rows r*n .. r*n+n-1)."""
        every = [p for p in pages for _ in range(self.generations)]
        mine = every[self.rank * self.rows_per_rank : (self.rank + 1) * self.rows_per_rank]
        loaded: dict[int, dict] = {}
        rows = []
        for p in mine:
            if p not in loaded:
                loaded[p] = self.dataset[int(p)]
            rows.append(dict(loaded[p]))
        return rows

    def _check_order(self, inputs: list[dict], rows: list[dict]) -> None:
        """While in sync, the stream's pages must be the ones trl's dataloader handed over."""
        if not self.in_sync:
            return

        def pages(xs: list[dict]) -> list[tuple]:
            return [(x.get("pdf"), x.get("page"), tuple(x.get("test_ids") or ())) for x in xs]

        if pages(inputs) != pages(rows):
            self.in_sync = False
            if self.rank == 0:
                print(f"warning: online filtering: trl's page order is not the one the filter continues (it reproduces trl "
                      f"{TRL_READ}'s RepeatSampler); training goes on in the filter's order", file=sys.stderr, flush=True)  # fmt: skip

    def _generate_round(self, rows: list[dict]) -> tuple[Any, list[dict]]:
        """Generates and scores one round on this rank's rows, as trl does; returns every rank's
        rewards (CPU) and this rank's records."""
        trainer = self.trainer
        seen: dict[str, Any] = {}
        generate = trainer._generate

        def probe(prompts: list) -> Any:
            seen["prompts"], seen["out"] = prompts, generate(prompts)
            raise _Generated

        with _swapped(trainer, "_generate", probe):
            try:
                self.original(rows)
            except _Generated:
                pass
        if "out" not in seen:
            raise RuntimeError(
                f"online filtering: trl's _generate_and_score_completions did not call _generate (read against trl {TRL_READ})"
            )
        out = tuple(seen["out"])
        if len(out) != GENERATE_OUTPUTS or out[5] or any(out[7] or ()):
            raise RuntimeError(
                f"online filtering: trl's GRPOTrainer._generate returned {len(out)} values (extra fields {bool(out[5:6] and out[5])}); "
                f"it reads trl {TRL_READ}'s 8 and supports neither rollout_func nor tool images"
            )
        prompt_ids, completion_ids, tool_mask, completions, logprobs = out[:5]
        pending = trainer._pending_extra_logs
        before = {k: len(v) for k, v in pending.items()}
        rewards = trainer._calculate_rewards(rows, seen["prompts"], completions, completion_ids)
        extra = {}
        for column, values in list(pending.items()):
            extra[column] = values[before.get(column, 0) :]
            del values[before.get(column, 0) :]
        records = [
            {"prompt_ids": prompt_ids[i], "completion_ids": completion_ids[i], "completion": completions[i],
             "tool_mask": None if tool_mask is None else tool_mask[i], "logprobs": None if logprobs is None else logprobs[i],
             "extra": {c: v[i] for c, v in extra.items() if i < len(v)}}
            for i in range(len(rows))
        ]  # fmt: skip
        return rewards.detach().float().cpu(), records

    def _replay(self, rounds: list[Round], slots: list[Group]) -> dict:
        """trl's _generate_and_score_completions on the batch of `slots`, replaying the rounds."""
        import torch

        trainer, G, n = self.trainer, self.generations, self.rows_per_rank
        records = self._move(rounds, slots)
        mine = range(self.rank * n, (self.rank + 1) * n)
        recs = [records[f] for f in mine]
        rows = self._rows_of([rounds[slots[f // G].round].pages[slots[f // G].index] for f in mine])
        rewards = torch.stack([rounds[g.round].rewards[g.index * G + m] for g in slots for m in range(G)])
        rewards = rewards.to(trainer.accelerator.device)
        tool_mask = None if all(r["tool_mask"] is None for r in recs) else [r["tool_mask"] for r in recs]
        logprobs = None if all(r["logprobs"] is None for r in recs) else [r["logprobs"] for r in recs]
        outputs = ([r["prompt_ids"] for r in recs], [r["completion_ids"] for r in recs], tool_mask,
                   [r["completion"] for r in recs], logprobs, {}, None, [])  # fmt: skip

        def replay_generate(prompts: list) -> tuple:
            if len(prompts) != len(recs):
                raise RuntimeError(f"online filtering: trl asked for {len(prompts)} completions, the batch has {len(recs)}")
            return outputs

        pending = trainer._pending_extra_logs
        for column in sorted({c for r in recs for c in r["extra"]}):
            pending[column].extend(r["extra"].get(column) for r in recs)
        with _swapped(trainer, "_generate", replay_generate), _swapped(trainer, "_calculate_rewards", lambda *a, **k: rewards):
            return self.original(rows)

    def _rows_of(self, pages: Sequence[int]) -> list[dict]:
        loaded: dict[int, dict] = {}
        for p in pages:
            if p not in loaded:
                loaded[p] = self.dataset[int(p)]
        return [dict(loaded[p]) for p in pages]

    def _move(self, rounds: list[Round], slots: list[Group]) -> dict[int, dict]:
        """The records of this rank's rows of the batch (batch row -> record): its own, and those
        other ranks generated (one all-gather, only when a group changes rank)."""
        G, n = self.generations, self.rows_per_rank
        mine: dict[int, dict] = {}
        outgoing: dict[int, dict] = {}
        moves = False
        for s, g in enumerate(slots):
            for m in range(G):
                row, source = s * G + m, g.index * G + m
                src, dst = source // n, row // n
                moves = moves or src != dst
                if src == self.rank:
                    (mine if dst == self.rank else outgoing)[row] = rounds[g.round].records[source % n]
        if moves:
            for part in _all_gather(outgoing):
                mine.update({row: rec for row, rec in part.items() if row // n == self.rank})
        return mine

    def _log(self, step: Step) -> None:
        trainer, groups = self.trainer, step.groups
        kept = sum(g.kept for g in groups)
        self.rounds_total += step.rounds
        if step.filled:
            self.bound_hits += 1
            if self.rank == 0:
                print(f"warning: online filtering, step {trainer.state.global_step + 1}: {min(kept, self.per_round)} of "
                      f"{self.per_round} groups kept after {step.rounds} generation rounds (filter_extra_rounds="
                      f"{self.settings.extra_rounds}); filled with {step.filled} dropped groups", file=sys.stderr, flush=True)  # fmt: skip
        metrics = trainer._metrics["train"]
        for name, value in (("groups_generated", len(groups)), ("groups_kept", kept), ("groups_filled", step.filled),
                            ("rounds", step.rounds), ("frac_reward_zero_std", sum(g.zero_total for g in groups) / len(groups)),
                            ("reward", step.reward), ("rounds_s", step.seconds), ("epoch", self.stream.passes)):  # fmt: skip
            metrics[f"filter/{name}"].append(float(value))


def install(trainer: Any, cfg: TrainConfig, resume: str | None) -> OnlineFilter:
    """Online filtering on `trainer` (a trl GRPOTrainer): its `_generate_and_score_completions` in
    training, and a callback that stores the page order's position in each checkpoint."""
    from datasets import IterableDataset
    from transformers import TrainerCallback

    if getattr(trainer, "tools", None) or getattr(trainer, "environment_factories", None) or getattr(trainer, "rollout_func", None):
        raise ConfigError("filter_groups: not supported with trl's tools, environments or rollout_func")
    if isinstance(trainer.train_dataset, IterableDataset):
        raise ConfigError("filter_groups: needs a dataset with a length (trl's page order), not an IterableDataset")
    aggregation = getattr(trainer, "multi_objective_aggregation", "sum_then_normalize")
    if aggregation != "sum_then_normalize" and cfg.filter_reward is None:
        raise ConfigError(f"filter_groups: with multi_objective_aggregation={aggregation} name the reward judged: filter_reward=NAME")
    online = OnlineFilter(trainer, Settings.of(cfg))
    if resume is not None:
        state = json.loads((Path(resume) / "trainer_state.json").read_text(encoding="utf-8"))
        warning = online.restore(resume, int(state.get("global_step", 0)))
        if warning and online.rank == 0:
            print(f"warning: online filtering: {warning}", file=sys.stderr, flush=True)

    class FilterState(TrainerCallback):
        """Writes the page order's position into each checkpoint (rank 0), beside trl's own state."""

        def on_save(self, args, state, control, **kwargs):
            folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
            if state.is_world_process_zero and folder.is_dir():
                from olmocr_rl.atomic import write_text

                write_text(folder / STATE_FILE, json.dumps(online.state(), indent=2) + "\n")

    trainer.add_callback(FilterState())
    trainer._generate_and_score_completions = online.generate_and_score
    return online
