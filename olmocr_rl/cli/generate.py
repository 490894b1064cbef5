"""`olmocr-rl generate`: transcribe every tested page of a bench folder with a model (a base
model, a checkpoint, a soup) into candidate files that `olmocr-rl bench` scores."""

import shutil
from pathlib import Path
from typing import Annotated, Optional

import typer

from olmocr_rl.cli import (
    EagerOption,
    LoopRuleOption,
    MachineRankOption,
    MainProcessIpOption,
    MainProcessPortOption,
    NumMachinesOption,
    PagesDryRunOption,
    QuietOption,
    StopLoopsOption,
    TensorParallelOption,
    WorkersOption,
    app,
    echo,
    example,
    fail,
    loop_rule_option,
    page_progress,
)

ABOUT = "Transcribe a bench folder's tested pages with a model into BENCH_DIR/NAME/ for `olmocr-rl bench`."


@app.command("generate", epilog=example("olmocr-rl generate M olmOCR-bench/bench_data --candidate base"), help=ABOUT, short_help=ABOUT)
def generate_command(
    model: Annotated[str, typer.Argument(help="Model folder or hub id (a checkpoint, a LoRA adapter, a soup).", show_default=False)],
    bench_dir: Annotated[Path, typer.Argument(help="olmOCR-bench folder: top-level *.jsonl tests and pdfs/**.pdf.", show_default=False)],
    candidate: Annotated[str, typer.Option("--candidate", "-c", help="Name of the candidate folder to write in BENCH_DIR.")] = "generated",
    repeats: Annotated[int, typer.Option("--repeats", min=1, help="Files per page (samples when --temperature > 0).")] = 1,
    temperature: Annotated[float, typer.Option("--temperature", min=0.0, help="0 = greedy.")] = 0.0,
    max_new_tokens: Annotated[int, typer.Option("--max-new-tokens", min=1, help="Longest completion, tokens.")] = 8000,
    batch_size: Annotated[
        int, typer.Option("--batch-size", min=1, help="Pages per generate call (vLLM; the transformers engine: one page a call).")
    ] = 8,
    engine: Annotated[str, typer.Option("--engine", help="transformers, or vllm (its offline engine, when installed).")] = "transformers",
    prompt: Annotated[
        Optional[str], typer.Option("--prompt", help="The instruction by name: olmocr-rl (default) or olmocr-v4 (olmOCR 2's).")
    ] = None,
    prompt_file: Annotated[
        Optional[Path], typer.Option("--prompt-file", help="UTF-8 file with the instruction (default: prepare's).")
    ] = None,
    longest_side: Annotated[int, typer.Option("--longest-side", min=1, help="Longest side of rendered pages, px (as prepare).")] = 1288,
    raw: Annotated[bool, typer.Option("--raw", help="Write whole completions (front matter kept).")] = False,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the sampling: each page's samples by it and the page (either engine).")] = 0,
    stop_loops: StopLoopsOption = False,
    loop_rule: LoopRuleOption = None,
    eager: EagerOption = None,
    quiet: QuietOption = False,
    num_processes: WorkersOption = 1,
    tensor_parallel: TensorParallelOption = 1,
    num_machines: NumMachinesOption = 1,
    machine_rank: MachineRankOption = 0,
    main_process_ip: MainProcessIpOption = None,
    main_process_port: MainProcessPortOption = None,
    dry_run: PagesDryRunOption = False,
) -> int:
    given = {k: (str(v) if isinstance(v, Path) else v) for k, v in locals().items()}  # recorded in _generate.json
    from olmocr_rl.engines import EngineSettings, engine_kind
    from olmocr_rl.generate import job_folder
    from olmocr_rl.launch.launchers import LaunchOptions
    from olmocr_rl.launch.pages import Workers, vllm_port_problem
    from olmocr_rl.model_ref import resolve_model
    from olmocr_rl.prompts import resolve_prompt

    engine_kind(engine, tensor_parallel)  # a name the table knows, and an engine that spans GPUs if asked to, before anything is read
    launch = LaunchOptions(num_processes=num_processes, num_machines=num_machines, machine_rank=machine_rank,
                           main_process_ip=main_process_ip, main_process_port=main_process_port)  # fmt: skip
    workers = Workers(launch, tensor_parallel=tensor_parallel)
    if port := vllm_port_problem(workers, engine):
        fail(port)
    if not candidate or candidate in ("pdfs", ".", "..") or "/" in candidate:
        fail(f"--candidate {candidate!r}: give a folder name (not pdfs)")
    if prompt and prompt_file:
        fail("give --prompt or --prompt-file, not both")
    chosen = resolve_prompt(prompt, prompt_file)
    rule = loop_rule_option(stop_loops, loop_rule)
    resolve_model(model, "MODEL")  # a folder here, in the cache or on the hub: else one line, in seconds
    if not bench_dir.is_dir():
        fail(f"{bench_dir}: not a folder (give an olmOCR-bench folder)")
    out = bench_dir / candidate
    if workers.launched:
        workers.launcher_argv(job_folder(out).job_file)  # the launch options checked (train's checks)
    if dry_run:
        echo("\n".join(_dry_run(bench_dir, out, repeats, engine, workers)))
        return 0
    settings = EngineSettings(model, max_new_tokens=max_new_tokens, seed=seed, eager=eager, tensor_parallel=tensor_parallel,
                              loop_rule=rule)  # fmt: skip
    options = {"repeats": repeats, "temperature": temperature, "batch_size": batch_size, "raw": raw, "seed": seed}
    if machine_rank > 0:
        return _other_machine(out, workers, quiet)
    try:
        summary = _transcribe(bench_dir, out, engine, settings, options, chosen, longest_side, workers, quiet)
    except KeyboardInterrupt:  # Ctrl-C in this process (the workers' stop is WorkersFailed, which says it)
        fail(_interrupted(out), 130)
    from olmocr_rl.generate import write_summary

    path = write_summary(out, summary, given)
    echo(f"{out}: {summary['written']} files written, {summary['skipped']} pages already done, "
         f"{summary['unparsed']} completions without olmOCR front matter (written whole); summary in {path}")  # fmt: skip
    if "loops" in summary:
        from olmocr_rl.loops import LoopTally

        echo(LoopTally(**summary["loops"]).line() + " (stopped ones written as the loop run on to the limit)")
    if summary["errors"]:
        for e in summary["errors"][:5]:
            echo(f"  {e['pdf']} page {e['page']}: {e['error']}", err=True)
        fail(f"{len(summary['errors'])} page(s) failed (listed in {path}); the others are written: run again to retry them")
    from olmocr_rl.bench.plan import command_line

    echo(f"score them: {command_line(bench_dir, candidate)}")
    return 0


def _transcribe(bench_dir: Path, out: Path, engine: str, settings, options: dict, chosen, longest_side: int, workers, quiet: bool) -> dict:
    """Machine 0 (or the one process): the pages rendered once, then transcribed here or by the
    workers; a folder this run created is removed when nothing could be transcribed into it."""
    from olmocr_rl.engines import build_engine
    from olmocr_rl.folder_lock import folder_lock
    from olmocr_rl.generate import job_folder, transcribe, transcribe_with_workers
    from olmocr_rl.launch.pages import machine_gpus
    from olmocr_rl.prepare import PrepareOptions

    created = not out.exists()
    with folder_lock(out, "generate"):  # a second run on this candidate fails at once
        try:
            # The pages, rendered exactly as `prepare` renders them for training (kept for a re-run).
            prepare_options = PrepareOptions(longest_side=longest_side, prompt=chosen.text, prompt_name=chosen.name,
                                             prompt_layout=chosen.layout)  # fmt: skip
            rows = _render(bench_dir, out, prepare_options)
            job_folder(out).clear()  # a stopped job's plan and progress (its pages' files are in place)
            built = None if workers.launched else build_engine(engine, settings, rows, warn=lambda m: echo(m, err=True))
        except BaseException:
            if created:  # nothing transcribed yet: a failed run leaves no candidate for `bench` to list
                shutil.rmtree(out, ignore_errors=True)
            raise
        label = "transcribing" + (f" ({workers.num_processes} workers)" if workers.launched else "")
        update, close = page_progress(label, quiet)
        try:
            if built is None:
                return transcribe_with_workers(engine, settings, out / ".render", rows, out, options, workers, machine_gpus(), echo, update)
            shown = None if update is None else (lambda done, todo, tokens: update(len(rows) - todo + done, len(rows), tokens))
            return transcribe(built, out / ".render", rows, out, **options, progress=shown)
        except BaseException:
            if created and not any(out.glob("*.md")):  # the workers could not load the model, say
                shutil.rmtree(out, ignore_errors=True)
            raise
        finally:
            close()


def _interrupted(out: Path) -> str:
    """What a Ctrl-C left in the candidate folder, and how to go on (a re-run skips a page whose files are all there)."""
    if not out.is_dir():
        return f"interrupted before any page was transcribed: nothing was written (the same command starts {out} again)"
    written = sum(1 for p in out.rglob("*.md") if ".render" not in p.relative_to(out).parts)
    return f"interrupted: {written} page file(s) are written in {out}; the same command again transcribes only the rest"


def _other_machine(out: Path, workers, quiet: bool) -> int:
    """Machine M > 0: its workers on the plan machine 0's command shares (the pages, the summary and
    the render are machine 0's)."""
    from olmocr_rl.generate import job_folder
    from olmocr_rl.launch.pages import WorkersFailed, launch_job, machine_gpus

    folder = job_folder(out)
    update, close = page_progress(f"transcribing (machine {workers.machine_rank})", quiet)
    try:
        with folder.machine_lock(workers.machine_rank):
            code = launch_job(folder, workers, machine_gpus(), None if update is None else (lambda t: update(t.pages, t.todo, t.tokens)))
    finally:
        close()
    if code != 0:
        raise WorkersFailed(f"this machine's workers stopped with status {code}; the files they finished are in {out}")
    echo(f"machine {workers.machine_rank}: its {workers.per_machine} worker(s) are done; machine 0's generate writes the summary")
    return 0


def _dry_run(bench_dir: Path, out: Path, repeats: int, engine: str, workers) -> list[str]:
    """The tested pages (read from the tests; rendering happens on the real run and skips unreadable
    PDFs), those already transcribed, and the split."""
    from olmocr_rl.generate import job_folder, pages_to_do
    from olmocr_rl.launch.pages import dry_run, machine_gpus
    from olmocr_rl.suite import BenchSuite

    files = sorted(bench_dir.glob("*.jsonl"))
    if not files:
        fail(f"{bench_dir}: no *.jsonl test files")
    suite = BenchSuite.load(files, strict=False)
    pages = sorted({(i.pdf, int(i.page)) for i in map(suite.info, suite.ids)})
    todo = pages_to_do([{"pdf": pdf, "page": page} for pdf, page in pages], out, repeats)
    return dry_run(workers, todo, len(pages) - len(todo), engine, job_folder(out).job_file, machine_gpus())


def _render(bench: Path, out: Path, options) -> list[dict]:
    """The tested pages rendered into OUT/.render (reused by a re-run); their prepared rows."""
    from olmocr_rl.prepare import prepare

    try:
        prepared = prepare(bench, out / ".render", options, progress=False)
    except OSError as e:
        fail(str(e))
    rows = prepared.train + prepared.eval
    if prepared.report.problems:
        echo(f"warning: {prepared.report.problems} problem(s) in {bench} (unreadable PDFs, broken tests): those pages are "
             f"skipped; see {out / '.render' / 'report.json'}", err=True)  # fmt: skip
    if not rows:
        fail(f"{bench}: no page with tests could be rendered (see {out / '.render' / 'report.json'})")
    return rows
