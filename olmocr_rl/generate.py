"""Transcribing pages with an engine (olmocr_rl/engines.py) into bench candidate files: `olmocr-rl
generate`, and the outputs `olmocr-rl train` writes after training (one code path for both).

    BENCH_DIR/NAME/<pdf key without .pdf>_pg<N>_repeat<M>.md   what `olmocr-rl bench` reads
    BENCH_DIR/NAME/_generate.json                              options, counts, per-page errors
    BENCH_DIR/NAME/.render/                                    the pages rendered as `prepare` does
    BENCH_DIR/NAME/.job/                                       while workers run: the plan, their progress

The text written is the page's text as the olmOCR format means it: the completion's YAML front
matter parsed off (olmOCR's pipeline writes the `natural_text` of a parsed response); a completion
that does not parse is written whole. `raw=True` writes every completion whole. Files are written
atomically, so a run stopped half-way resumes where it stopped (pages whose files all exist are
skipped); a page whose generation fails is recorded in `_generate.json` and the rest goes on.
Repeat M of a page is sampled with the page's own seed (olmocr_rl/engines.py `sample_seed`), so the
files do not depend on which pages share a call, nor on how many workers share the job
(`transcribe_with_workers`: each worker writes its pages' files; olmocr_rl/launch/pages.py).

With the loop stop on (`--stop-loops`, olmocr_rl/engines.py), a completion that fell into a repetition
loop is written as the loop continued to the length limit (olmocr_rl/loops.py `project`), and
`_generate.json`'s `loops` says how many were stopped and the decode tokens saved; `tokens` then counts
the tokens generated (to each stop), not those written.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from olmocr_rl.atomic import write_text
from olmocr_rl.engines import Engine, sample_seed
from olmocr_rl.paths import candidate_file
from olmocr_rl.prompts import row_conversation

SUMMARY = "_generate.json"


def page_file(pdf: str, page: int, repeat: int) -> str:
    """The candidate file of a page and repeat (olmocr_rl/paths.py, `candidate_file`)."""
    return candidate_file(pdf, page, repeat)


def page_text(completion: str, raw: bool = False) -> tuple[str, bool]:
    """(text to write, whether the completion parsed as an olmOCR page response)."""
    if raw:
        return completion, False
    from olmocr_rl.front_matter import FrontMatterError, parse_page_response

    try:
        return parse_page_response(completion).natural_text or "", True
    except FrontMatterError:
        return completion, False


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text(path, text)


def transcribe(
    engine: Engine,
    image_root: str | os.PathLike[str],
    rows: Sequence[dict],
    out_dir: str | os.PathLike[str],
    *,
    repeats: int = 1,
    temperature: float = 0.0,
    batch_size: int = 8,
    raw: bool = False,
    seed: int = 0,
    progress: Callable[[int, int, int], None] | None = None,
) -> dict[str, Any]:
    """Writes `repeats` files per row (greedy when temperature is 0: one generation, copied).
    Rows are prepared rows (pdf, page, image relative to `image_root`, prompt); repeat M of a page
    is sampled with `sample_seed(seed, pdf, page, M - 1)` (olmocr_rl/engines.py), so a page's files
    do not depend on the other pages of the run. Returns counts (tokens: those generated), the
    per-page errors and, with the loop stop on, `loops` (olmocr_rl/loops.py LoopTally); `progress(pages
    done, pages to do, tokens)` after each call, and while a call runs as its tokens come (engines
    that tell, at most twice a second)."""
    root, out = Path(image_root), Path(out_dir)
    todo = [r for r in rows if not all((out / page_file(r["pdf"], int(r["page"]), m)).is_file() for m in range(1, repeats + 1))]
    counts = {"pages": len(rows), "skipped": len(rows) - len(todo), "written": 0, "parsed": 0, "unparsed": 0, "tokens": 0}
    errors: list[dict[str, Any]] = []
    runs = 1 if temperature <= 0 else repeats
    per_call = batch_size if engine.mixes_pages else 1  # pages per call (olmocr_rl/engines.py Engine.mixes_pages)
    done = 0
    tally = engine.loops
    before = tally.as_dict() if tally is not None else {}
    for start in range(0, len(todo), per_call):
        chunk = list(todo[start : start + per_call])
        engine.live.follow(progress, done, len(todo), counts["tokens"])
        generated = tally.tokens if tally is not None else 0
        results = _generate_or_split(engine, root, chunk, runs, temperature, seed, errors)
        # With the loop stop, the engine counted the tokens it generated; the texts of stopped loops are longer.
        counts["tokens"] += tally.tokens - generated if tally is not None else 0
        for r, texts in results:
            counts["tokens"] += sum(engine.count_tokens(texts)) if tally is None else 0
            for m in range(1, repeats + 1):
                text, parsed = page_text(texts[min(m, runs) - 1], raw)
                counts["parsed" if parsed else "unparsed"] += 1
                _write(out / page_file(r["pdf"], int(r["page"]), m), text)
                counts["written"] += 1
        done += len(chunk)
        if progress is not None:
            progress(done, len(todo), counts["tokens"])
    engine.live.follow(None, 0, 0, 0)
    loops = {"loops": {k: v - before[k] for k, v in tally.as_dict().items()}} if tally is not None else {}
    return {**counts, "errors": errors, **loops}


def _generate_or_split(engine: Engine, root: Path, chunk: list[dict], runs: int, temperature: float, seed: int,
                       errors: list[dict[str, Any]]) -> list[tuple[dict, list[str]]]:  # fmt: skip
    """(page, its completions) of the chunk; when the engine fails on several pages, each page alone,
    and a page that still fails is listed in `errors` (the run goes on; the next run tries it again)."""
    try:
        return list(zip(chunk, _generate(engine, root, chunk, runs, temperature, seed)))
    except Exception as e:  # noqa: BLE001 - find the page at fault; a failing page is recorded, the run goes on
        if len(chunk) > 1:
            return [pair for r in chunk for pair in _generate_or_split(engine, root, [r], runs, temperature, seed, errors)]
        errors.append({"pdf": chunk[0]["pdf"], "page": int(chunk[0]["page"]), "error": f"{type(e).__name__}: {e}"})
        return []


def _generate(engine: Engine, root: Path, chunk: list[dict], runs: int, temperature: float, seed: int) -> list[list[str]]:
    """`runs` completions of each page of `chunk` in one call: [page][run]."""
    from PIL import Image

    images = []
    for r in chunk:
        with Image.open(root / r["image"]) as im:
            images.append(im.convert("RGB"))
    items = [(i, m) for i in range(len(chunk)) for m in range(runs)]
    seeds = [sample_seed(seed, str(chunk[i]["pdf"]), int(chunk[i]["page"]), m) for i, m in items]
    conversations = [row_conversation(r) for r in chunk]
    texts = engine.generate([images[i] for i, _ in items], [conversations[i] for i, _ in items], temperature, seeds)
    if len(texts) != len(items):
        raise RuntimeError(f"the engine returned {len(texts)} completions for {len(items)} prompts")
    return [list(texts[i * runs : (i + 1) * runs]) for i in range(len(chunk))]


def write_summary(out_dir: str | os.PathLike[str], summary: dict[str, Any], options: dict[str, Any]) -> Path:
    """`_generate.json`: this run's options, counts and errors (every page without all its files
    is tried again in each run, so this run's errors are all the pages still missing)."""
    path = Path(out_dir) / SUMMARY
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text(path, json.dumps({"options": options, **summary}, indent=2) + "\n")
    return path


# ---------------------------------------------------------------------------------------------
# on several workers (`generate --num-processes N`; olmocr_rl/launch/pages.py)
# ---------------------------------------------------------------------------------------------

JOB = ".job"  # the page job's folder in the candidate folder: the plan and each worker's progress
WORKER = "olmocr_rl.generate:work"
COUNTS = ("written", "parsed", "unparsed", "tokens")


def job_folder(out_dir: str | os.PathLike[str]) -> Any:
    from olmocr_rl.launch.pages import JobFolder

    return JobFolder(Path(out_dir) / JOB)


def pages_to_do(rows: Sequence[dict], out_dir: str | os.PathLike[str], repeats: int) -> list[dict]:
    """The rows without all their files (what a run transcribes; the others are done)."""
    out = Path(out_dir)
    return [r for r in rows if not all((out / page_file(r["pdf"], int(r["page"]), m)).is_file() for m in range(1, repeats + 1))]


def transcribe_with_workers(engine: str, settings: Any, image_root: str | os.PathLike[str], rows: Sequence[dict],
                            out_dir: str | os.PathLike[str], options: dict[str, Any], workers: Any, gpus: Sequence[str] | None,
                            echo: Callable[..., None], progress: Callable[[int, int, int], None] | None = None) -> dict[str, Any]:  # fmt: skip
    """`transcribe` by the job's workers (machine 0's command): the pages to do dealt out, each
    worker writing its pages' files into `out_dir` (each file whole) and its counts into its progress
    file, summed here. WorkersFailed (the files written are kept) when a worker stopped."""
    from dataclasses import asdict

    from olmocr_rl.launch.pages import WorkersFailed, deal, launch_job, wait_for
    from olmocr_rl.loops import LoopTally
    from olmocr_rl.procs import Interrupted

    folder, todo = job_folder(out_dir), pages_to_do(rows, out_dir, options["repeats"])
    summary: dict[str, Any] = {"pages": len(rows), "skipped": len(rows) - len(todo), **dict.fromkeys(COUNTS, 0), "errors": []}
    tally = LoopTally() if getattr(settings, "loop_rule", None) is not None else None
    if not todo:
        return summary
    shares = deal(todo, workers.num_processes)
    plan = folder.write_plan({"worker": WORKER, "shares": shares, "job": {"engine": engine, "engine_settings": asdict(settings),
                              "image_root": str(Path(image_root).resolve()), "out": str(Path(out_dir).resolve()), **options}})  # fmt: skip
    echo(f"{len(todo)} page(s) to transcribe on {workers.num_processes} workers: {', '.join(str(len(s)) for s in shares)} each")

    def shown(t: Any) -> None:
        if progress is not None:
            progress(summary["skipped"] + t.pages, len(rows), t.tokens)

    code, lost = 1, []
    try:
        code = launch_job(folder, workers, gpus, shown)
        if workers.num_machines > 1 and code == 0:
            lost = wait_for(folder, plan, workers.num_processes, shown)
    except Interrupted as e:
        raise WorkersFailed(
            f"interrupted ({e}): every worker was stopped; the pages finished are written; run again to go on", 130
        ) from None
    finally:
        for p in folder.read_progress(workers.num_processes, plan["id"]):
            for k in COUNTS:
                summary[k] += int((p or {}).get(k, 0))
            summary["errors"] += (p or {}).get("errors", [])
            if tally is not None:
                tally.merge((p or {}).get("loops") or {})
        folder.clear()
        if tally is not None:
            summary["loops"] = tally.as_dict()
    if code != 0 or lost:
        who = f"worker(s) {', '.join(map(str, lost))} stopped reporting" if lost else f"the workers stopped with status {code}"
        raise WorkersFailed(f"{who}; the pages finished are written in {out_dir}: run again to transcribe the rest")
    return summary


def work(plan: dict[str, Any], rank: int, folder: Any) -> int:
    """Worker `rank`: its pages transcribed into the candidate folder (olmocr_rl/launch/worker.py runs it)."""
    import sys
    from dataclasses import replace

    from olmocr_rl.engines import EngineSettings, build_engine, engine_kind
    from olmocr_rl.launch.pages import Progress
    from olmocr_rl.procs import SigtermAsInterrupt

    job, rows = plan["job"], plan["shares"][rank]
    progress = Progress(folder, rank, plan["id"])
    term = SigtermAsInterrupt()
    if engine_kind(job["engine"]).own_processes:  # else SIGTERM ends the worker at once
        term.install()
    try:
        summary = {k: 0 for k in COUNTS} | {"errors": []}
        if rows:
            built = build_engine(job["engine"], EngineSettings(**job["engine_settings"]), rows, warn=lambda m: print(m, file=sys.stderr))
            engine = replace(built, generate=term.interruptible(built.generate))
            summary = transcribe(engine, job["image_root"], rows, job["out"], repeats=job["repeats"], temperature=job["temperature"],
                                 batch_size=job["batch_size"], raw=job["raw"], seed=job["seed"],
                                 progress=lambda done, todo, tokens: progress.write(pages=done, tokens=tokens))  # fmt: skip
    finally:
        term.restore()
        progress.stop.set()
    progress.close(pages=len(rows), **{k: summary[k] for k in COUNTS}, errors=summary["errors"], loops=summary.get("loops"))
    return 0
