"""Online group filtering (`filter_groups`), the part that needs no trl: every generation batch trl
trains on is made of page groups whose rewards disagree (olmocr_rl/keep_rule.py, the rule
`olmocr-rl curate` applies before training), refilled from further pages of the training order, as
verl (`filter_groups`), EasyR1 (`online_filtering`), ms-swift (`--dynamic_sample`) and OpenRLHF
(`--dynamic_filtering`) do after DAPO's dynamic sampling; trl only logs `frac_reward_zero_std`.

How one generation batch of trl becomes several rounds (the rounds themselves are trl's generation
and scoring, run by olmocr_rl/train/trainer.py's `OlmocrGRPOTrainer._generate_and_score_completions`):

1. Pages come from `PageStream`: trl's own order (its RepeatSampler: one torch.randperm of the
   train pages per pass, seeded with `seed`, cut into generation batches of P pages, the
   incomplete last one dropped), continued by every round. Until a round is added the stream's
   pages are the ones trl's dataloader hands over (checked at each such batch: `same_pages`); trl's
   dataloader is otherwise only the clock of the run (optimizer steps, epochs in steps,
   evaluation, checkpoints), so an epoch of pages is used up sooner and the schedule counts
   optimizer steps.
2. A round generates and scores the next P pages as trl does, and gathers every rank's rewards.
3. The groups are judged on those gathered rewards (`judge`); rank 0's verdicts are broadcast
   (`rank0s`), so every rank runs the same rounds: until P groups are kept, or
   `filter_extra_rounds` rounds were added (`OnlineFilter.enough`).
4. The batch (`OnlineFilter.batch`): the first P kept groups in generation order (`select`); at the
   bound, filled with dropped groups (those with reward spread outside the band first; a group
   without spread has zero advantage, so the batch trains as trl would without filtering on that
   mix), warned and logged (`OnlineFilter.record`). A group stays on the rank that generated it
   where that rank has a free slot (`place`); only generation outputs (token ids, sampling
   log-probabilities, decoded text, `log_extra` columns) move between ranks (`move_records`).
   trl then builds the trained batch once from the chosen groups, as it does without filtering.

This module imports neither trl nor the training config: the config side
(olmocr_rl/train/config.py) checks the filter_* keys and turns them into `Settings` and the plan's
worst case (`Cost`).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from olmocr_rl.errors import ConfigError
from olmocr_rl.keep_rule import KeepRule, has_spread, statistics

STATE_FILE = "online_filter.json"  # in each checkpoint folder: where the page order stands


# --- what it costs: for the plan -------------------------------------------------------------------


@dataclass(frozen=True)
class Cost:
    """The worst case per generation batch with filtering on (olmocr_rl/train/config.py `filter_cost`)."""

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
    """The filter_* keys as the filter applies them (olmocr_rl/train/config.py `filter_settings`)."""

    rule: KeepRule
    reward: int | None  # the column of the reward judged; None: the weighted total
    extra_rounds: int


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


# --- the rounds of one generation batch, and the run's state ------------------------------------


def _distributed() -> bool:
    import torch.distributed as dist

    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def rank0s(obj: Any) -> Any:
    """Rank 0's `obj` on every rank (the verdicts: every rank then runs the same rounds)."""
    if not _distributed():
        return obj
    import torch.distributed as dist

    box = [obj]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def prompt_keys(prompts: Sequence[Any]) -> list[Any]:
    """Each prompt as plain data, an image as its type, size and a digest of its pixels: what a
    round generated for, compared with what trl builds the trained batch from
    (olmocr_rl/train/trainer.py), and small enough to move between ranks with the round's outputs.
    An image shared by several prompts (a page's G rows) is digested once."""
    digests: dict[int, str] = {}

    def key(x: Any) -> Any:
        if isinstance(x, dict):
            return {str(k): key(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return [key(v) for v in x]
        if x is None or isinstance(x, (str, int, float, bool)):
            return x
        if id(x) not in digests:
            pixels = x.tobytes() if callable(getattr(x, "tobytes", None)) else repr(x).encode()
            digests[id(x)] = f"{type(x).__name__}{tuple(getattr(x, 'size', ()))}:{hashlib.sha1(pixels).hexdigest()[:16]}"
        return digests[id(x)]

    return [key(p) for p in prompts]


def same_pages(a: Sequence[dict], b: Sequence[dict]) -> bool:
    """Whether two lists of dataset rows are the same pages, in order."""

    def pages(xs: Sequence[dict]) -> list[tuple]:
        return [(x.get("pdf"), x.get("page"), tuple(x.get("test_ids") or ())) for x in xs]

    return pages(a) == pages(b)


@dataclass
class Round:
    pages: list[int]  # the round's pages, P of them
    rewards: Any  # every rank's rewards, rows x reward functions (CPU float32)
    records: list[dict]  # this rank's rows: what trl's _generate returned for each, its prompt_key and log_extra values
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
    """One run's filter on one rank: the settings, the batch's geometry (G generations per page,
    P pages a round, n rows a rank), the page order and what a checkpoint stores of it."""

    def __init__(self, settings: Settings, *, pages: int, generations: int, per_round: int, rows_per_rank: int, rank: int,
                 seed: int | None, shuffle: bool) -> None:  # fmt: skip
        self.settings = settings
        self.generations, self.per_round, self.rows_per_rank, self.rank = generations, per_round, rows_per_rank, rank
        self.stream = PageStream(pages, per_round, seed, shuffle)
        self.in_sync = True  # no round added yet (and not resumed): the stream's pages are trl's
        self.bound_hits = 0
        self.rounds_total = 0

    # -- state in checkpoints ----------------------------------------------------------------------

    def state(self) -> dict:
        s = self.stream
        return {"rounds_drawn": s.position, "pages_per_round": s.per_round, "train_pages": s.pages, "seed": s.seed,
                "shuffle": s.shuffle, "bound_hits": self.bound_hits}  # fmt: skip

    def restore(self, checkpoint: str | Path, global_step: int, *, accumulation: int, micro_steps_per_generation: int) -> str | None:
        """Continues the page order where the checkpoint left it; returns a warning, if any. Without
        a saved state: where trl's order would be (a generation batch every
        `micro_steps_per_generation` micro-steps, `accumulation` of them an optimizer step)."""
        self.in_sync = False
        path = Path(checkpoint) / STATE_FILE
        if not path.is_file():
            self.stream.position = -(-global_step * accumulation // micro_steps_per_generation)
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

    def rows_of(self, pages: Sequence[int]) -> list[int]:
        """The pages of this rank's rows of a round: each page repeated G times over all ranks, as
        trl lays out a generation batch (rank r holds rows r*n .. r*n+n-1)."""
        every = [p for p in pages for _ in range(self.generations)]
        return every[self.rank * self.rows_per_rank : (self.rank + 1) * self.rows_per_rank]

    def enough(self, rounds: Sequence[Round]) -> bool:
        """P groups kept, or the bound reached (1 + filter_extra_rounds rounds)."""
        kept = sum(g.kept for r in rounds for g in r.groups)
        return kept >= self.per_round or len(rounds) > self.settings.extra_rounds

    def batch(self, rounds: Sequence[Round]) -> tuple[list[Group], int]:
        """The batch's groups in slot order, and how many were filled at the bound."""
        if len(rounds) > 1:
            self.in_sync = False
        chosen, filled = select([g for r in rounds for g in r.groups], self.per_round)
        return place(chosen, self.generations, self.rows_per_rank), filled

    def trained_rows(self, rounds: Sequence[Round], slots: Sequence[Group]) -> tuple[list[int], Any]:
        """The pages of this rank's rows of the batch, and every rank's rewards of the batch (rows x
        reward functions, in slot order)."""
        import torch

        G, n = self.generations, self.rows_per_rank
        mine = range(self.rank * n, (self.rank + 1) * n)
        pages = [rounds[slots[f // G].round].pages[slots[f // G].index] for f in mine]
        return pages, torch.stack([rounds[g.round].rewards[g.index * G + m] for g in slots for m in range(G)])

    def move_records(self, rounds: Sequence[Round], slots: Sequence[Group]) -> list[dict]:
        """The records of this rank's rows of the batch, in row order: its own, and those other
        ranks generated (one all-gather, only when a group changes rank)."""
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
            from olmocr_rl.train.rewards import gather_over_ranks

            for part in gather_over_ranks(outgoing):
                mine.update({row: rec for row, rec in part.items() if row // n == self.rank})
        return [mine[f] for f in range(self.rank * n, (self.rank + 1) * n)]

    def record(self, step: Step, global_step: int) -> tuple[str | None, dict[str, float]]:
        """Counts a generation batch: the warning to print at the bound (None below it) and its
        filter/* metrics."""
        kept = sum(g.kept for g in step.groups)
        self.rounds_total += step.rounds
        warning = None
        if step.filled:
            self.bound_hits += 1
            warning = (f"online filtering, step {global_step + 1}: {min(kept, self.per_round)} of {self.per_round} groups kept "
                       f"after {step.rounds} generation rounds (filter_extra_rounds={self.settings.extra_rounds}); filled with "
                       f"{step.filled} dropped groups")  # fmt: skip
        metrics = {"groups_generated": len(step.groups), "groups_kept": kept, "groups_filled": step.filled, "rounds": step.rounds,
                   "frac_reward_zero_std": sum(g.zero_total for g in step.groups) / len(step.groups), "reward": step.reward,
                   "rounds_s": step.seconds, "epoch": self.stream.passes}  # fmt: skip
        return warning, {f"filter/{name}": float(value) for name, value in metrics.items()}
