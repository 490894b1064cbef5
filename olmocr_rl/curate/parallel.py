"""`olmocr-rl curate` on several workers (`--num-processes N`, and several machines; the launching
and the plan are olmocr_rl/launch/pages.py's).

    PREPARED/.difficulty.jsonl.job/   the job folder beside the difficulty file (`--output`'s folder)
        job.json                      the plan: each worker's pages and the settings they are sampled with
        worker-R.jsonl                worker R's part: a difficulty file of its own (appended, fsync'd)
        progress-R.json               its pages done, tokens, failed pages

The command (machine 0's) holds the difficulty file's lock for the whole job, as a single process
does, so a second curate on the file is refused; it appends the parts a killed job left behind to
the file before anything else (their pages are done), leaves out the pages already there, splits
the rest (olmocr_rl/launch/pages.py `deal`) and starts the workers. Each worker samples its pages as
the single process samples them (olmocr_rl/curate/sampling.py `score_pages`; each page's samples
seeded by the run's seed and the page): on the CPU the records do not depend on the number of
workers (their timing fields and their order in the file aside; tested). On a GPU the seeds still
fix each sample's random draws, not the logits they are drawn from: vLLM batches requests
continuously and its kernels' results move with the batch, so a sample can part where two tokens
are nearly tied, on one worker or eight alike (olmocr_rl/engines.py, "what is reproducible"). When the workers end (done, failed or
stopped) the parts are appended to the difficulty file, one line per page, and removed: a page is in
the file once, whoever sampled it, and a worker's unfinished pages are sampled by the next run.
"""

from __future__ import annotations

import fcntl
import os
import sys
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from olmocr_rl.curate.records import CurateError, CurateInterrupted, DifficultyFile, Settings, read_records
from olmocr_rl.curate.sampling import Page, Result, check_settings, comparable, current, job_pages, pending, score_pages
from olmocr_rl.launch import pages as launch_pages
from olmocr_rl.launch.pages import JobFolder, Progress, WorkersFailed, deal, launch_job, wait_for

PART = ".jsonl"
# `job` below is olmocr_rl/curate/job.py's CurateJob, which calls into this module (not imported back).
CurateJob = Any
WORKER = "olmocr_rl.curate.parallel:work"


def job_folder(output: str | os.PathLike[str]) -> JobFolder:
    output = Path(output)
    return JobFolder(output.parent / f".{output.name}.job")


def merge_parts(folder: JobFolder, file: DifficultyFile, order: dict[tuple[str, str, int], int] | None = None, *,
                skip_busy: bool = False) -> int:  # fmt: skip
    """Every worker part's records appended to the open (locked) difficulty file, in page order
    (`order`: page id -> position), then the parts removed. A part's torn last line (its worker was
    killed while writing it) is left out; a part a live worker still holds is an error (or, with
    `skip_busy`, left for the next run). Returns how many records were appended."""
    records, held = [], []
    try:
        for part in folder.parts(PART):
            f = part.open("rb")
            try:
                fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                f.close()
                if skip_busy:
                    continue
                raise CurateError(f"{part}: a worker of another curate is writing it; wait for it, or stop it first") from None
            held.append((part, f))
            records += [rec for _, rec in read_records(part)[0]]
        last = len(order or {})
        records.sort(key=lambda r: (order or {}).get((str(r["split"]), str(r["pdf"]), int(r["page"])), last))
        file.append_all(records)  # then the parts go: a kill in between leaves the lines twice, the newest winning
        for part, _ in held:
            part.unlink()
    finally:
        for _, f in held:
            f.close()
    return len(records)


def score_with_workers(job: CurateJob, settings: Settings, echo: Callable[..., None],
                       progress: Callable[[int, int, int], None] | None) -> Result:  # fmt: skip
    """The pages not yet in the difficulty file sampled and scored by the job's workers (see the
    module docstring); machine M > 0 runs its workers and leaves the file to machine 0."""
    import time

    check_settings(settings)
    folder = job_folder(job.output)
    pages = job_pages(job.prepared, job.splits, job.prompt)

    def shown(t: Any) -> None:
        if progress is not None:
            progress(t.pages, t.todo, t.tokens)

    started = time.monotonic()
    file = DifficultyFile(job.output)
    try:
        lines, torn = file.open()
        if merged := merge_parts(folder, file):
            echo(f"note: {merged} page(s) a stopped job had finished were added to {job.output}", err=True)
            lines = read_records(job.output)[0]
        records = comparable(lines, settings, job.output)
        todo = pending(pages, records)
        result = Result(records={}, pages=pages, reused=len(pages) - len(todo), torn=torn)
        if todo:
            result.scored, result.errors = _run(job, settings, folder, file, todo, pages, shown, echo)
            records = comparable(read_records(job.output)[0], settings, job.output)
    finally:
        file.close()
    result.records = current(pages, records)
    result.seconds = time.monotonic() - started
    return result


def run_other_machine(job: CurateJob, echo: Callable[..., None], progress: Callable[[int, int, int], None] | None) -> None:
    """Machine M > 0: its workers, on the plan machine 0's command shares; the file is machine 0's."""
    workers, folder = job.workers, job_folder(job.output)

    def shown(t: Any) -> None:
        if progress is not None:
            progress(t.pages, t.todo, t.tokens)

    with folder.machine_lock(workers.machine_rank):
        code = launch_job(folder, workers, launch_pages.machine_gpus(), shown)
    if code != 0:
        raise WorkersFailed(f"this machine's workers stopped with status {code}; machine 0's curate keeps the pages they finished")
    echo(f"machine {workers.machine_rank}: its {workers.per_machine} worker(s) are done; machine 0's curate writes {job.output}")


def _run(job: CurateJob, settings: Settings, folder: JobFolder, file: DifficultyFile, todo: list[Page], pages: list[Page],
         shown: Callable[[Any], None], echo: Callable[..., None]) -> tuple[int, list[dict]]:  # fmt: skip
    """Plans, launches and merges: (pages scored, pages failed)."""
    from olmocr_rl.procs import Interrupted

    workers = job.workers
    shares = deal(todo, workers.num_processes)
    plan = folder.write_plan({"worker": WORKER, "shares": [[asdict(p) for p in share] for share in shares],
                              "job": payload(job, settings)})  # fmt: skip
    echo(f"{len(todo)} page(s) to sample on {workers.num_processes} workers: {', '.join(str(len(s)) for s in shares)} each")
    code, lost, stop = 1, [], None
    try:
        code = launch_job(folder, workers, launch_pages.machine_gpus(), shown)
        if workers.num_machines > 1 and code == 0:
            lost = wait_for(folder, plan, workers.num_processes, shown)
    except Interrupted as e:
        stop = e
    finally:
        progress = folder.read_progress(workers.num_processes, plan["id"])
        scored = merge_parts(folder, file, {p.id: i for i, p in enumerate(pages)}, skip_busy=True)
        folder.clear()
    errors = [e for p in progress if p for e in p.get("errors", [])]
    if stop is not None:
        raise CurateInterrupted(
            f"interrupted ({stop}): every worker was stopped; the pages finished are in {job.output}; run again to go on"
        )
    if code != 0 or lost:
        who = f"worker(s) {', '.join(map(str, lost))} stopped reporting" if lost else f"the workers stopped with status {code}"
        raise WorkersFailed(f"{who}; the {scored} page(s) finished are in {job.output}: run again to sample the others")
    return scored, errors


def dry_run_lines(job: CurateJob) -> list[str]:
    """What `curate --dry-run` prints: the model and engine, the pages, the workers, their GPUs and
    the pages each gets now (the difficulty file read, not locked; nothing written or started)."""
    from olmocr_rl.launch.pages import dry_run

    pages = job_pages(job.prepared, job.splits, job.prompt)
    records: dict = {}
    for _, rec in read_records(job.output)[0]:
        records[(str(rec["split"]), str(rec["pdf"]), int(rec["page"]))] = rec
    todo = pending(pages, records)
    return [f"model: {job.settings.model}; {job.samples} samples a page at temperature {job.temperature:g}, <= "
            f"{job.settings.max_new_tokens} tokens; difficulty file {job.output}",
            *dry_run(job.workers, todo, len(pages) - len(todo), job.engine, job_folder(job.output).job_file, launch_pages.machine_gpus())]  # fmt: skip


def payload(job: CurateJob, settings: Settings) -> dict[str, Any]:
    """What every worker needs besides its pages."""
    threads = job.threads or max(1, (os.cpu_count() or 1) // job.workers.per_machine)  # the reward's Rust pool, per worker
    return {"prepared": str(Path(job.prepared).resolve()), "settings": settings.to_dict(), "engine": job.engine,
            "engine_settings": asdict(job.settings), "batch_size": job.batch_size, "guard": job.guard, "threads": threads}  # fmt: skip


def work(plan: dict[str, Any], rank: int, folder: JobFolder) -> int:
    """Worker `rank`: its pages sampled and scored into its part (olmocr_rl/launch/worker.py runs it)."""
    from dataclasses import replace

    from olmocr_rl.curate.sampling import training_reward
    from olmocr_rl.engines import EngineSettings, build_engine, engine_kind
    from olmocr_rl.procs import SigtermAsInterrupt

    job = plan["job"]
    pages = [Page(**p) for p in plan["shares"][rank]]
    settings, engine_settings = Settings(**job["settings"]), EngineSettings(**job["engine_settings"])
    progress = Progress(folder, rank, plan["id"])
    part, errors = DifficultyFile(folder.part(rank, PART)), []
    term = SigtermAsInterrupt()
    if engine_kind(job["engine"]).own_processes:  # else SIGTERM ends the worker at once
        term.install()
    part.open()
    try:
        if pages:
            reward = training_reward(job["prepared"], settings.rewards, job["guard"], job["threads"])
            built = build_engine(job["engine"], engine_settings, [p.row for p in pages], warn=lambda m: print(m, file=sys.stderr))
            engine = replace(built, generate=term.interruptible(built.generate))
            score_pages(pages, engine, Path(job["prepared"]), settings, engine_settings.seed, reward, part.append,
                        batch_size=job["batch_size"], engine_name=job["engine"], errors=errors, stopped=term.came.is_set,
                        progress=lambda done, todo, tokens: progress.write(pages=done, tokens=tokens, errors=errors))  # fmt: skip
    finally:
        part.close()
        term.restore()
        progress.stop.set()
    progress.close(pages=len(pages), errors=errors)
    return 0
