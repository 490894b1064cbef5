"""`olmocr-rl curate`: sample every train page N times, score the samples with the training
reward, and keep for training the pages whose samples disagree (olmocr_rl/curate.py)."""

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from olmocr_rl.cli import EagerOption, QuietOption, app, echo, fail

ABOUT = """Sample N completions of every train page with the model, score them with the training
reward (the config's bench rewards and guard), write PREPARED/difficulty.jsonl (resumable), and
write the pages whose samples disagree as a split that `train` reads (train_split=NAME)."""


@app.command("curate", help=ABOUT, short_help="Choose training pages by difficulty: keep those whose sampled rewards disagree.")
def curate_command(
    prepared_dir: Annotated[Path, typer.Argument(help="A folder made by `olmocr-rl prepare`.", show_default=False)],
    overrides: Annotated[
        Optional[list[str]],
        typer.Argument(metavar="[KEY=VALUE]...", help="Training config overrides (temperature=1.0, bench_guard=none).", show_default=False),
    ] = None,
    model: Annotated[str, typer.Option("--model", help="Model path or hub id (default: the model of an existing difficulty file).")] = "",
    samples: Annotated[int, typer.Option("--samples", "-n", min=2, help="Completions sampled per page.")] = 8,
    engine: Annotated[str, typer.Option("--engine", help="transformers, or vllm (its offline engine), as `generate`.")] = "transformers",
    config: Annotated[
        Optional[str],
        typer.Option("--config", "-c", help="The training recipe (YAML/TOML or a packaged name): rewards, guard, temperature, length."),
    ] = None,
    set_: Annotated[Optional[list[str]], typer.Option("--set", metavar="KEY=VALUE", help="Config override (repeatable).")] = None,
    include_eval: Annotated[bool, typer.Option("--eval", help="Score the eval pages too (recorded, never selected).")] = False,
    batch_size: Annotated[int, typer.Option("--batch-size", min=1, help="Completions per generate call.")] = 16,
    output: Annotated[
        Optional[Path], typer.Option("--output", "-o", help="The difficulty file (default: PREPARED/difficulty.jsonl).")
    ] = None,
    name: Annotated[str, typer.Option("--name", help="The selection's split: PREPARED/NAME.jsonl, trained with train_split=NAME.")] = (
        "curated"
    ),
    min_std: Annotated[float, typer.Option("--min-std", min=0.0, help="Keep pages whose reward std is above this.")] = 0.0,
    min_mean: Annotated[
        Optional[float], typer.Option("--min-mean", help="Keep only pages whose mean reward is above this (default: no bound).")
    ] = None,
    max_mean: Annotated[
        Optional[float], typer.Option("--max-mean", help="Keep only pages whose mean reward is below this (default: no bound).")
    ] = None,
    eager: EagerOption = None,
    quiet: QuietOption = False,
) -> int:
    from olmocr_rl.curate import CurateError, Settings, bench_rewards, curate, file_model, load_engine, select, training_reward, write_split
    from olmocr_rl.prepared import PreparedError, read_manifest
    from olmocr_rl.prompts import resolve_prompt
    from olmocr_rl.suite import EnvironmentProblem, SuiteError
    from olmocr_rl.train.config import ConfigError, load_config

    if engine not in ("transformers", "vllm"):
        fail(f"--engine must be transformers or vllm, not {engine!r}")
    prepared = prepared_dir
    path = output or prepared / "difficulty.jsonl"
    try:
        read_manifest(prepared)  # a prepared folder, before anything else is read or written
        model = model or file_model(path)
        if not model:
            fail("--model is required (there is no difficulty file to take it from)")
        local = Path(model)
        model = str(local.resolve()) if local.exists() else model  # the same folder, whatever the working directory
        # output_dir is the trainer's, unused here.
        cfg = load_config(config, [*(set_ or []), *(overrides or [])], prepared_dir=str(prepared), model=model, output_dir=str(prepared))
        rewards, left_out = bench_rewards(cfg.rewards)
        if not rewards:
            fail(f"the config's rewards ({', '.join(cfg.rewards)}) have no bench reward with a weight: difficulty is measured on "
                 "bench, bench-macro or bench-graded")  # fmt: skip
        if left_out:
            echo(f"note: {', '.join(left_out)}: not part of the difficulty (measured on {', '.join(rewards)})", err=True)
        if cfg.top_p != 1.0:
            echo(
                f"warning: top_p={cfg.top_p} is not applied: curate samples the whole distribution at temperature {cfg.temperature}",
                err=True,
            )
        settings = Settings(model, samples, cfg.temperature, cfg.max_completion_length, rewards, cfg.bench_guard)
        reward = training_reward(prepared, rewards, cfg.bench_guard, cfg.reward_threads)
        counter: dict = {}
        term = _Sigterm()

        def engine_for(rows: list[dict]):
            generate, counter["count"] = load_engine(engine, model, rows, max_new_tokens=cfg.max_completion_length,
                                                     seed=cfg.seed, max_pixels=cfg.max_pixels,
                                                     trust_remote_code=cfg.trust_remote_code, eager=eager,
                                                     warn=lambda m: echo(m, err=True))  # fmt: skip
            return term.interruptible(generate)

        progress, close = _progress(quiet)
        term.install()
        try:
            result = curate(prepared, settings, engine_for, reward, prompt=resolve_prompt(cfg.prompt) if cfg.prompt else None, output=path, splits=("train", "eval") if include_eval else ("train",),
                            batch_size=batch_size, count_tokens=lambda texts: counter["count"](texts), engine=engine,
                            progress=progress, stopped=term.came.is_set)  # fmt: skip
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM (typer alone would end with a silent status 130)
            fail("interrupted: the pages finished are in the difficulty file; run again to go on", 130)
        finally:
            close()
            term.restore()
    except (CurateError, PreparedError, ConfigError, SuiteError, EnvironmentProblem, KeyError, OSError) as e:
        fail(str(e).strip("'\""))
    train_pages = [p for p in result.pages if p.split == "train"]
    top = sum(rewards.values())
    echo(f"{path}: {len(result.records)} page(s), {result.scored} scored now in {result.seconds:.1f} s, {result.reused} already there"
         f" ({settings.samples} samples each; {settings.describe()})")  # fmt: skip
    if result.torn:
        echo(f"note: {path} ended in a line cut short (a killed run); it was dropped and that page scored again", err=True)
    if result.errors:
        for e in result.errors[:5]:
            echo(f"  {e['pdf']} page {e['page']}: {e['error']}", err=True)
        fail(f"{len(result.errors)} page(s) failed to generate; the others are in {path}: run again to retry them")
    samples = [len(r["rewards"]) for r in result.records.values()]
    empty = sum(r.get("empty", 0) for r in result.records.values())
    if samples and empty * 2 > sum(samples):
        echo(f"warning: {empty} of {sum(samples)} samples are empty or whitespace: the model is not transcribing (check the "
             "model and prompt); such pages all earn the same and are dropped, not kept as hard", err=True)  # fmt: skip
    try:
        sel = select(result.pages, result.records, min_std=min_std, min_mean=min_mean, max_mean=max_mean, top=top)
    except CurateError as e:
        fail(str(e))
    c = sel.counts
    echo(f"train pages: {c['all_pass']} all samples pass, {c['all_fail']} all fail, {c['uniform']} all the same otherwise, "
         f"{c['disagree']} disagree")  # fmt: skip
    rule = f"reward std > {min_std:g}" + (f", mean > {min_mean:g}" if min_mean is not None else "")
    rule += f", mean < {max_mean:g}" if max_mean is not None else ""
    if not sel.kept:
        fail(f"no train page kept ({rule}): nothing to train on; {path} holds every page's figures (lower the thresholds, "
             "raise the temperature, or sample more)")  # fmt: skip
    try:
        split = write_split(prepared, name, sel.kept)
    except (CurateError, OSError) as e:
        fail(str(e))
    g, budget = cfg.num_generations, cfg.max_completion_length
    echo(f"kept {len(sel.kept)} of {len(train_pages)} train pages ({rule}): {split}")
    measured = f"; by the sampled lengths, {sel.saved_tokens:.1%} of the tokens" if sel.saved_tokens is not None else ""
    echo(f"generation saved per epoch: {len(sel.dropped)} pages x {g} generations x <= {budget} tokens = {sel.saved_pages:.1%} of the "
         f"completion budget{measured}")  # fmt: skip
    echo(f"curation sampled {settings.samples} per page: {settings.samples / g:.2g} epoch(s) of generation at num_generations={g}")
    cmd = f"olmocr-rl train {prepared} --model {model or model} -o OUTPUT_DIR train_split={name}"
    echo(f"train on them: {cmd}" + (f" --config {config}" if config else ""))
    return 0


def _progress(quiet: bool):
    if quiet:
        return None, lambda: None
    from rich.progress import Progress

    bar = Progress(transient=True)
    task = bar.add_task("sampling pages", total=None)
    bar.start()
    return (lambda done, todo: bar.update(task, completed=done, total=todo)), bar.stop


class _Sigterm:
    """SIGTERM ends the command as Ctrl-C does (`error: interrupted`, status 130) instead of Python's
    instant death, which leaves vLLM's engine processes running: the interpreter then shuts down
    in order and vLLM stops them. While the engine generates, the signal interrupts it at once (a
    KeyboardInterrupt, as Ctrl-C); elsewhere (vLLM's start-up, which can hang when an exception is
    raised inside it; a page being written) it is remembered and the run stops before its next
    pages."""

    def __init__(self) -> None:
        import threading

        self.came = threading.Event()
        self.generating = False
        self.previous: Any = None

    def install(self) -> None:
        import signal
        import threading

        if threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGTERM, self._handle)

    def restore(self) -> None:
        import signal

        if self.previous is not None:
            signal.signal(signal.SIGTERM, self.previous)
            self.previous = None

    def _handle(self, signum: int, frame: Any) -> None:
        self.came.set()
        if self.generating:
            raise KeyboardInterrupt

    def interruptible(self, generate):
        def run(images: list, prompts: list[str], temperature: float) -> list[str]:
            if self.came.is_set():
                raise KeyboardInterrupt
            self.generating = True
            try:
                return generate(images, prompts, temperature)
            finally:
                self.generating = False

        return run
