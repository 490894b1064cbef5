"""The work of `olmocr-rl curate`, from its options to the split: the bench rewards of the training
config, the engine (olmocr_rl/engines.py, built only when a page is left to sample), the pages
sampled and scored, the selection by the keep rule, the split written, and what it saves. The
command line (olmocr_rl/cli/curate.py) reads the training config into a `CurateJob` and prints."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from olmocr_rl.curate.records import CurateError, CurateInterrupted, Settings
from olmocr_rl.curate.sampling import Result, bench_rewards, curate, training_reward
from olmocr_rl.curate.selection import Selection, select, write_split
from olmocr_rl.engines import Engine, EngineSettings, build_engine
from olmocr_rl.keep_rule import KeepRule
from olmocr_rl.launch.pages import Workers
from olmocr_rl.procs import SigtermAsInterrupt


@dataclass(frozen=True)
class CurateJob:
    prepared: Path
    output: Path  # the difficulty file
    engine: str  # a name of olmocr_rl.engines.ENGINES
    settings: EngineSettings  # what the engine is told (the training config's, for this model)
    samples: int
    temperature: float
    rewards: dict[str, float]  # the training config's rewards (difficulty is measured on the bench ones)
    guard: str
    threads: int | None = None
    prompt: Any = None  # the training config's instruction (olmocr_rl.prompts.Prompt), or each row's own
    top_p: float = 1.0  # the training config's (not applied: curate samples the whole distribution)
    include_eval: bool = False
    batch_size: int = 16
    rule: KeepRule = KeepRule()
    name: str = "curated"  # the selection's split
    num_generations: int = 28  # the training config's, for what the selection saves
    config: str | None = None  # the training config's file, for the train command shown
    workers: Workers = Workers()  # --num-processes and the other launch options (olmocr_rl/launch/pages.py)
    overrides: tuple[str, ...] = ()  # the training config's KEY=VALUE overrides (--set and the arguments), for the train command shown

    @property
    def splits(self) -> tuple[str, ...]:
        return ("train", "eval") if self.include_eval else ("train",)


def run_job(job: CurateJob, echo: Callable[..., None], progress: Callable[[int, int, int], None] | None = None,
        progress_done: Callable[[], None] = lambda: None) -> Path | None:  # fmt: skip
    """Scores the pages (`progress(done, todo, tokens)` while they are sampled, `progress_done()` at the end),
    selects, writes the split (returned); prints what it did with `echo`. CurateError (a UserError)
    when nothing can be kept, a page failed, or the run was stopped. On machine M > 0 of a job on
    several machines: this machine's workers only (machine 0 selects), None."""
    if job.workers.machine_rank > 0:
        from olmocr_rl.curate.parallel import run_other_machine

        try:
            run_other_machine(job, echo, progress)
        finally:
            progress_done()
        return None
    settings, result = score(job, echo, progress, progress_done)
    _report_scoring(job, settings, result, echo)
    sel = select(result.pages, result.records, job.rule, top=sum(settings.rewards.values()))
    c = sel.counts
    echo(f"train pages: {c['all_pass']} all samples pass, {c['all_fail']} all fail, {c['uniform']} all the same otherwise, "
         f"{c['disagree']} disagree")  # fmt: skip
    if not sel.kept:
        raise CurateError(f"no train page kept ({job.rule.describe()}): nothing to train on; {job.output} holds every page's figures "
                          "(lower the thresholds, raise the temperature, or sample more)")  # fmt: skip
    split = write_split(job.prepared, job.name, sel.kept)
    _report_selection(job, settings, result, sel, split, echo)
    return split


def score(job: CurateJob, echo: Callable[..., None], progress: Callable[[int, int, int], None] | None,
          progress_done: Callable[[], None]) -> tuple[Settings, Result]:  # fmt: skip
    """The pages not yet in the difficulty file sampled and scored with the config's bench rewards:
    in this process, or by the job's workers (olmocr_rl/curate/parallel.py)."""
    rewards, left_out = bench_rewards(job.rewards)
    if not rewards:
        raise CurateError(f"the config's rewards ({', '.join(job.rewards)}) have no bench reward with a weight: difficulty is measured "
                          "on bench, bench-macro or bench-graded")  # fmt: skip
    if left_out:
        echo(f"note: {', '.join(left_out)}: not part of the difficulty (measured on {', '.join(rewards)})", err=True)
    if job.top_p != 1.0:
        echo(f"warning: top_p={job.top_p} is not applied: curate samples the whole distribution at temperature {job.temperature}", err=True)
    rule = job.settings.loop_rule
    settings = Settings(job.settings.model, job.samples, job.temperature, job.settings.max_new_tokens, rewards, job.guard,
                        rule.as_dict() if rule is not None else None)  # fmt: skip
    if job.workers.launched:
        from olmocr_rl.curate.parallel import score_with_workers

        try:
            return settings, score_with_workers(job, settings, echo, progress)
        finally:
            progress_done()
    reward = training_reward(job.prepared, rewards, job.guard, job.threads)
    term = SigtermAsInterrupt()

    def engine_for(rows: list[dict]) -> Engine:
        engine = build_engine(job.engine, job.settings, rows, warn=lambda m: echo(m, err=True))
        return replace(engine, generate=term.interruptible(engine.generate))

    term.install()
    try:
        result = curate(job.prepared, settings, engine_for, reward, prompt=job.prompt, output=job.output, splits=job.splits,
                        batch_size=job.batch_size, engine=job.engine, seed=job.settings.seed, progress=progress,
                        stopped=term.came.is_set)  # fmt: skip
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM (typer alone would end with a silent status 130)
        raise CurateInterrupted("interrupted: the pages finished are in the difficulty file; run again to go on") from None
    finally:
        progress_done()
        term.restore()
    return settings, result


def _report_scoring(job: CurateJob, settings: Settings, result: Result, echo: Callable[..., None]) -> None:
    path = job.output
    echo(f"{path}: {len(result.records)} page(s), {result.scored} scored now in {result.seconds:.1f} s, {result.reused} already there"
         f" ({settings.samples} samples each; {settings.describe()})")  # fmt: skip
    if result.torn:
        echo(f"note: {path} ended in a line cut short (a killed run); it was dropped and that page scored again", err=True)
    if result.errors:
        for e in result.errors[:5]:
            echo(f"  {e['pdf']} page {e['page']}: {e['error']}", err=True)
        raise CurateError(f"{len(result.errors)} page(s) failed to generate; the others are in {path}: run again to retry them")
    samples = [len(r["rewards"]) for r in result.records.values()]
    if settings.loop_rule is not None:
        looped, saved = (sum(int(r.get(k, 0)) for r in result.records.values()) for k in ("loops", "loop_tokens_saved"))
        echo(f"loops: {looped} of {sum(samples)} samples stopped in a repetition loop and scored as the loop run on to the limit; "
             f"{saved:,} decode tokens saved at most (the limit minus each stopped length: an upper bound)")  # fmt: skip
    empty = sum(r.get("empty", 0) for r in result.records.values())
    if samples and empty * 2 > sum(samples):
        echo(f"warning: {empty} of {sum(samples)} samples are empty or whitespace: the model is not transcribing (check the "
             "model and prompt); such pages all earn the same and are dropped, not kept as hard", err=True)  # fmt: skip


def _report_selection(job: CurateJob, settings: Settings, result: Result, sel: Selection, split: Path, echo: Callable[..., None]) -> None:
    train_pages = [p for p in result.pages if p.split == "train"]
    g, budget = job.num_generations, settings.max_new_tokens
    echo(f"kept {len(sel.kept)} of {len(train_pages)} train pages ({job.rule.describe()}): {split}")
    measured = f"; by the sampled lengths, {sel.saved_tokens:.1%} of the tokens" if sel.saved_tokens is not None else ""
    echo(f"generation saved per epoch: {len(sel.dropped)} pages x {g} generations x <= {budget} tokens = {sel.saved_pages:.1%} of the "
         f"completion budget{measured}")  # fmt: skip
    echo(f"curation sampled {settings.samples} per page: {settings.samples / g:.2g} epoch(s) of generation at num_generations={g}")
    echo(f"train on them: {train_command(job)}")


def train_command(job: CurateJob) -> str:
    """The `olmocr-rl train` command that trains on the selection with the training config curate
    scored with: its --config and its KEY=VALUE overrides, shell-quoted."""
    import shlex

    argv = ["olmocr-rl", "train", str(job.prepared), "--model", job.settings.model, "-o", "OUTPUT_DIR", f"train_split={job.name}"]
    argv += ["--config", job.config] if job.config else []
    argv += [o for o in job.overrides if not o.replace("-", "_").startswith("train_split=")]
    return " ".join(shlex.quote(a) for a in argv)
