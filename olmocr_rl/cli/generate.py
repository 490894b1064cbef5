"""`olmocr-rl generate`: transcribe every tested page of a bench folder with a model (a base
model, a checkpoint, a soup) into candidate files that `olmocr-rl bench` scores."""

import shutil
from pathlib import Path
from typing import Annotated, Optional

import typer

from olmocr_rl.cli import EagerOption, QuietOption, app, echo, fail

ABOUT = "Transcribe a bench folder's tested pages with a model into BENCH_DIR/NAME/ for `olmocr-rl bench`."


@app.command("generate", help=ABOUT)
def generate_command(
    model: Annotated[str, typer.Argument(help="Model folder or hub id (a checkpoint, a LoRA adapter, a soup).", show_default=False)],
    bench_dir: Annotated[Path, typer.Argument(help="olmOCR-bench folder: top-level *.jsonl tests and pdfs/**.pdf.", show_default=False)],
    candidate: Annotated[str, typer.Option("--candidate", "-c", help="Name of the candidate folder to write in BENCH_DIR.")] = "generated",
    repeats: Annotated[int, typer.Option("--repeats", min=1, help="Files per page (samples when --temperature > 0).")] = 1,
    temperature: Annotated[float, typer.Option("--temperature", min=0.0, help="0 = greedy.")] = 0.0,
    max_new_tokens: Annotated[int, typer.Option("--max-new-tokens", min=1, help="Longest completion, tokens.")] = 8000,
    batch_size: Annotated[int, typer.Option("--batch-size", min=1, help="Pages per generate call.")] = 8,
    engine: Annotated[str, typer.Option("--engine", help="transformers, or vllm (its offline engine, when installed).")] = "transformers",
    prompt: Annotated[
        Optional[str], typer.Option("--prompt", help="The instruction by name: olmocr-rl (default) or olmocr-v4 (olmOCR 2's).")
    ] = None,
    prompt_file: Annotated[
        Optional[Path], typer.Option("--prompt-file", help="UTF-8 file with the instruction (default: prepare's).")
    ] = None,
    longest_side: Annotated[int, typer.Option("--longest-side", min=1, help="Longest side of rendered pages, px (as prepare).")] = 1288,
    raw: Annotated[bool, typer.Option("--raw", help="Write whole completions (front matter kept).")] = False,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the sampling (either engine).")] = 0,
    eager: EagerOption = None,
    quiet: QuietOption = False,
) -> int:
    given = {k: (str(v) if isinstance(v, Path) else v) for k, v in locals().items()}  # recorded in _generate.json
    from olmocr_rl.engines import EngineSettings, build_engine, engine_kind
    from olmocr_rl.folder_lock import folder_lock
    from olmocr_rl.generate import transcribe, write_summary
    from olmocr_rl.modeling import model_problem
    from olmocr_rl.prepare import PrepareOptions
    from olmocr_rl.prompts import resolve_prompt

    engine_kind(engine)  # a name the table knows, before anything is read
    if not candidate or candidate in ("pdfs", ".", "..") or "/" in candidate:
        fail(f"--candidate {candidate!r}: give a folder name (not pdfs)")
    if prompt and prompt_file:
        fail("give --prompt or --prompt-file, not both")
    chosen = resolve_prompt(prompt, prompt_file)
    if why := model_problem(model):
        fail(why)
    if not bench_dir.is_dir():
        fail(f"{bench_dir}: not a folder (give an olmOCR-bench folder)")
    out = bench_dir / candidate
    created = not out.exists()
    with folder_lock(out, "generate"):  # a second run on this candidate fails at once
        try:
            # The pages, rendered exactly as `prepare` renders them for training (kept for a re-run).
            options = PrepareOptions(longest_side=longest_side, prompt=chosen.text, prompt_name=chosen.name, prompt_layout=chosen.layout)
            rows = _render(bench_dir, out, options)
            settings = EngineSettings(model, max_new_tokens=max_new_tokens, seed=seed, eager=eager)
            generate = build_engine(engine, settings, rows, warn=lambda m: echo(m, err=True)).generate
        except BaseException:
            if created:  # nothing transcribed yet: a failed run leaves no candidate for `bench` to list
                shutil.rmtree(out, ignore_errors=True)
            raise
        progress, close = _progress(len(rows), quiet)
        try:
            summary = transcribe(generate, out / ".render", rows, out, repeats=repeats, temperature=temperature,
                                 batch_size=batch_size, raw=raw, progress=progress)  # fmt: skip
        finally:
            close()
        path = write_summary(out, summary, given)
    echo(f"{out}: {summary['written']} files written, {summary['skipped']} pages already done, "
         f"{summary['unparsed']} completions without olmOCR front matter (written whole); summary in {path}")  # fmt: skip
    if summary["errors"]:
        for e in summary["errors"][:5]:
            echo(f"  {e['pdf']} page {e['page']}: {e['error']}", err=True)
        fail(f"{len(summary['errors'])} page(s) failed (listed in {path}); the others are written: run again to retry them")
    from olmocr_rl.bench.plan import command_line

    echo(f"score them: {command_line(bench_dir, candidate)}")
    return 0


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


def _progress(total: int, quiet: bool):
    if quiet:
        return None, lambda: None
    from rich.progress import Progress

    bar = Progress(transient=True)
    task = bar.add_task("transcribing", total=total)
    bar.start()
    return (lambda done, todo: bar.update(task, completed=total - todo + done)), bar.stop
