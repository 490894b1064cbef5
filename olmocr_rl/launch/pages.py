"""Page jobs on every GPU of a node and on many nodes: `olmocr-rl generate` and `olmocr-rl curate`
with `--num-processes N` (and `--num-machines`, `--machine-rank`, `--main-process-ip/port`, as
`train`), one worker per GPU or per `--tensor-parallel` group, started by the launcher `train` uses
(`accelerate launch`, olmocr_rl/launch/launchers.py) and supervised by its supervisor
(olmocr_rl/launch/supervise.py: every process stops with the command, kill -9 included).

    Workers      the launch options, their checks, the GPUs of each worker of this machine
    deal         the split: the pages to do, page i to worker i mod N (the same list, the same split)
    JobFolder    the job's folder beside the output: job.json (the plan: each worker's pages and
                 what to do with them), each worker's part and its progress file
    launch_job   this machine's workers started and watched; the whole job's progress read meanwhile
    wait_for     machine 0 waits for the other machines' workers (their progress files)

The command on machine 0 decides everything before a worker starts (the pages rendered once, those
already done left out, the split) and writes the plan; the workers take it from worker 0 through the
launcher's own store (olmocr_rl/launch/worker.py), so a machine whose view of a shared folder lags
still works on the same split. Each worker writes only its own part (curate: its difficulty lines;
generate: its pages' files, written whole) and its progress; the command on machine 0 merges the
parts into the one output a single process writes once every worker has finished (or stopped), and
merges a killed job's parts at the start of the next run, so a killed worker loses only its
unfinished pages. Seeds are per page (olmocr_rl/engines.py `sample_seed`): the split changes who
generates a page, never the random draws its samples get; on the CPU never what it gets either
(tested), on a GPU the logits those draws apply to can move with what else the engine batches
(olmocr_rl/engines.py, "what is reproducible"). A user's VLLM_PORT would be every engine's port on
a machine: refused when a machine runs more than one vLLM worker (`vllm_port_problem`).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from olmocr_rl.atomic import write_text
from olmocr_rl.errors import ConfigError, UserError
from olmocr_rl.launch.launchers import LaunchOptions

T = TypeVar("T")
WORKER_MODULE = "olmocr_rl.launch.worker"  # what the launcher starts on every rank
GPUS_ENV = "OLMOCR_RL_WORKER_GPUS"  # this machine's workers' GPUs, by local rank: "0,1;2,3"
HEARTBEAT_S = 30.0  # a worker rewrites its progress file at least this often
STALE_S = 900.0  # machine 0 gives up on a worker whose progress file did not change for this long


class WorkersFailed(UserError):
    """A worker (or a machine) stopped before its pages were done; the finished ones are kept."""

    def __init__(self, message: str, code: int = 1):
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Workers:
    """How a page job is spread: `train`'s launch options (the record its launchers read: workers
    in all = `num_processes`, machines, this machine's rank, the rank-0 address), and the GPUs one
    worker's engine spans."""

    launch: LaunchOptions = LaunchOptions()
    tensor_parallel: int = 1  # GPUs per worker (vLLM's tensor parallel size)

    @property
    def num_processes(self) -> int:
        """Workers in all (every machine)."""
        return self.launch.processes

    @property
    def num_machines(self) -> int:
        return self.launch.num_machines

    @property
    def machine_rank(self) -> int:
        return self.launch.machine_rank

    @property
    def launched(self) -> bool:
        """False: the command does the work in its own process, as it always did."""
        return self.num_processes > 1 or self.num_machines > 1

    @property
    def per_machine(self) -> int:
        return self.num_processes // self.num_machines

    def launcher_argv(self, job_file: Path) -> list[str]:
        """`accelerate launch` starting the worker on every rank (ConfigError for options that
        cannot work together: the same checks as `train`'s)."""
        from olmocr_rl.launch.launchers import accelerate_argv

        return accelerate_argv(["-m", WORKER_MODULE, str(Path(job_file).resolve())], self.launch)

    def gpu_groups(self, gpus: Sequence[str]) -> list[list[str]]:
        """The GPUs of each of this machine's workers, by local rank: `tensor_parallel` of them each,
        in order. ConfigError when the machine has too few."""
        t, n = self.tensor_parallel, self.per_machine
        if n * t > len(gpus):
            shown = ",".join(gpus) if gpus else "none"
            raise ConfigError(f"{n} worker(s) on this machine x --tensor-parallel {t} need {n * t} GPUs; it has {len(gpus)} ({shown}): "
                              f"lower --num-processes to {max(1, len(gpus) // t) * self.num_machines} or --tensor-parallel")  # fmt: skip
        return [list(gpus[i * t : (i + 1) * t]) for i in range(n)]

    def describe(self, gpus: Sequence[str] | None, shares: Sequence[int], engine: str) -> list[str]:
        """What --dry-run prints: the workers, their GPUs, the pages each gets."""
        where = "this process" if not self.launched else f"{self.per_machine} per machine on {self.num_machines} machine(s)"
        lines = [f"workers: {self.num_processes} ({where}), engine {engine}, tensor parallel {self.tensor_parallel}"]
        if gpus is None:
            threads = max(1, (os.cpu_count() or 1) // self.per_machine)
            lines.append(f"GPUs: none (CUDA is not available): every worker on the CPU, {threads} thread(s) each")
        else:
            groups = self.gpu_groups(gpus)
            first = self.machine_rank * self.per_machine
            lines.append("GPUs: " + "; ".join(f"worker {first + i} on {','.join(g)}" for i, g in enumerate(groups))
                         + f" (this machine: {','.join(gpus)})")  # fmt: skip
        lines.append(f"pages per worker: {', '.join(map(str, shares))}")
        return lines


def vllm_port_problem(workers: Workers, engine: str, env: dict[str, str] | None = None) -> str | None:
    """Why a user-set `VLLM_PORT` cannot serve this job, or None: vLLM starts its internal
    communication from that port, so the engines of two workers on one machine would meet on it and
    the second fail to bind (each engine finds free ports when it is unset)."""
    port = (os.environ if env is None else env).get("VLLM_PORT")
    if not port or engine != "vllm" or workers.per_machine < 2:
        return None
    return (f"VLLM_PORT={port} is set: the {workers.per_machine} vLLM workers of a machine would all start from that port and "
            "collide; unset it (each engine then finds free ports of its own), or run one worker per machine")  # fmt: skip


def machine_gpus() -> list[str] | None:
    """This machine's GPUs for the workers (None without CUDA: they run on the CPU)."""
    from olmocr_rl.launch.gpus import cuda_available, visible_gpus

    return visible_gpus() if cuda_available() else None


def dry_run(workers: Workers, todo: Sequence[Any], done: int, engine: str, job_file: Path, gpus: Sequence[str] | None) -> list[str]:
    """What `--dry-run` of a page job prints: the pages, the workers and their GPUs, the pages each
    worker would get now, and the launcher command (nothing is written or started)."""
    from olmocr_rl.launch.launchers import format_plan

    n = workers.num_processes
    shares = [len(s) for s in deal(list(todo), n)]
    lines = [f"pages: {len(todo) + done} ({done} done already, {len(todo)} to do)", *workers.describe(gpus, shares, engine)]
    if not workers.launched:
        return [*lines, "command: this process does the work (--num-processes 1)"]
    shown = {GPUS_ENV: ";".join(",".join(g) for g in workers.gpu_groups(gpus))} if gpus is not None else {}
    return [*lines, "command: " + format_plan(workers.launcher_argv(job_file), None, shown)]


def deal(items: Sequence[T], workers: int) -> list[list[T]]:
    """Item i to worker i mod `workers`: every worker a share of every stretch of the list (the
    pages of one long PDF are spread, not all on one worker), shares differing by one at most."""
    return [list(items[r::workers]) for r in range(workers)]


class JobFolder:
    """The folder of one output's page job: `job.json` (the plan), `worker-R<suffix>` (worker R's
    part), `progress-R.json` (its progress), `machine-M.lock` (machine M's command, M > 0)."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)

    @property
    def job_file(self) -> Path:
        return self.path / "job.json"

    def part(self, rank: int, suffix: str) -> Path:
        return self.path / f"worker-{rank}{suffix}"

    def parts(self, suffix: str) -> list[Path]:
        """Every worker part in the folder (this job's or a killed one's), by rank."""
        found = [p for p in self.path.glob(f"worker-*{suffix}") if p.name[len("worker-") : -len(suffix) or None].isdigit()]
        return sorted(found, key=lambda p: int(p.name[len("worker-") : -len(suffix) or None]))

    def progress_file(self, rank: int) -> Path:
        return self.path / f"progress-{rank}.json"

    def write_plan(self, plan: dict[str, Any]) -> dict[str, Any]:
        """The plan, with a fresh job id, written whole (durable) for the workers."""
        self.path.mkdir(parents=True, exist_ok=True)
        for old in self.path.glob("progress-*.json"):
            old.unlink()
        plan = {**plan, "id": uuid.uuid4().hex}
        write_text(self.job_file, json.dumps(plan, ensure_ascii=False), durable=True)
        return plan

    def read_plan(self) -> dict[str, Any] | None:
        """The plan in the folder (None: none, or not readable yet)."""
        try:
            plan = json.loads(self.job_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return plan if isinstance(plan, dict) and "shares" in plan and "id" in plan else None

    def read_progress(self, workers: int, job_id: str) -> list[dict[str, Any] | None]:
        """Each worker's latest progress (None: none yet, or another job's)."""
        out: list[dict[str, Any] | None] = []
        for r in range(workers):
            try:
                data = json.loads(self.progress_file(r).read_text(encoding="utf-8"))
            except (OSError, ValueError):
                data = None
            out.append(data if isinstance(data, dict) and data.get("job") == job_id else None)
        return out

    def clear(self) -> None:
        """The job's files gone (its parts merged, every worker ended); the folder too when nothing
        else is in it."""
        for p in [self.job_file, *self.path.glob("progress-*.json"), *self.path.glob("machine-*.lock")]:
            with contextlib.suppress(FileNotFoundError):
                p.unlink()
        with contextlib.suppress(OSError):
            self.path.rmdir()

    @contextlib.contextmanager
    def machine_lock(self, machine_rank: int) -> Iterator[None]:
        """Machine M > 0's command holds `machine-M.lock` while it runs (machine 0 holds the output's
        own lock): a second job's command for the same machine rank is refused where the shared
        file system passes flock(2) between its clients."""
        from olmocr_rl.folder_lock import folder_lock

        busy = f"{self.path}: machine rank {machine_rank} of another job on this output is running"
        with folder_lock(self.path, f"machine {machine_rank}", name=f"machine-{machine_rank}.lock", busy=busy):
            yield


@dataclass
class Totals:
    """The whole job's progress, summed over the workers' progress files."""

    pages: int = 0  # done (written, or failed and listed)
    todo: int = 0
    tokens: int = 0
    finished: int = 0  # workers done with their share
    reporting: int = 0  # workers that wrote a progress file


def totals(progress: Sequence[dict[str, Any] | None], shares: Sequence[int]) -> Totals:
    t = Totals(todo=sum(shares))
    for p in progress:
        if p is not None:
            t.reporting += 1
            t.pages += int(p.get("pages", 0))
            t.tokens += int(p.get("tokens", 0))
            t.finished += bool(p.get("finished"))
    return t


class Progress:
    """A worker's progress file, rewritten after each group of pages and every HEARTBEAT_S seconds
    (a heartbeat thread: machine 0 tells a worker that stopped from a slow one)."""

    def __init__(self, folder: JobFolder, rank: int, job_id: str):
        import threading

        self.path, self.job_id = folder.progress_file(rank), job_id
        self.state: dict[str, Any] = {"pages": 0, "tokens": 0, "errors": [], "finished": False, "beat": 0}
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.write()
        self.thread = threading.Thread(target=self._beat, daemon=True)
        self.thread.start()

    def write(self, **changes: Any) -> None:
        with self.lock:
            self.state.update(changes)
            self.state["beat"] += 1
            write_text(self.path, json.dumps({"job": self.job_id, **self.state}))

    def _beat(self) -> None:
        while not self.stop.wait(HEARTBEAT_S):
            self.write()

    def close(self, **final: Any) -> None:
        self.stop.set()
        self.thread.join()
        self.write(**final, finished=True)


def launch_job(folder: JobFolder, workers: Workers, gpus: Sequence[str] | None,
               on_progress: Callable[[Totals], None] | None = None) -> int:  # fmt: skip
    """Starts this machine's workers on the plan in `folder` (machine 0's command wrote it), calls
    `on_progress` with the whole job's totals about once a second while they run, and returns the
    launcher's exit status. Interrupted on SIGINT/SIGTERM/SIGHUP (every worker stopped)."""
    from olmocr_rl.launch.launchers import launch, launch_env

    env = launch_env(workers.per_machine)
    if gpus is not None:
        env[GPUS_ENV] = ";".join(",".join(g) for g in workers.gpu_groups(gpus))
    last = [0.0]

    def report() -> None:
        plan = folder.read_plan()
        if on_progress is not None and plan is not None:
            on_progress(totals(folder.read_progress(len(plan["shares"]), plan["id"]), [len(s) for s in plan["shares"]]))

    def tick() -> None:
        if time.monotonic() - last[0] >= 1.0:
            last[0] = time.monotonic()
            report()

    code = launch(workers.launcher_argv(folder.job_file), env, tick=tick)
    report()
    return code


def wait_for(folder: JobFolder, plan: dict[str, Any], workers: int, on_progress: Callable[[Totals], None] | None = None,
             *, poll: float = 2.0, stale: float = STALE_S) -> list[int]:  # fmt: skip
    """Machine 0, its own workers done: waits until every worker of the job has finished (the
    other machines'), or has not rewritten its progress file for `stale` seconds (a lost worker or
    machine). Returns the ranks that did not finish."""
    shares = [len(s) for s in plan["shares"]]
    seen: dict[int, tuple[Any, float]] = {}
    while True:
        progress = folder.read_progress(workers, plan["id"])
        if on_progress is not None:
            on_progress(totals(progress, shares))
        now, waiting = time.monotonic(), []
        for r, p in enumerate(progress):
            if p is not None and p.get("finished"):
                continue
            beat = None if p is None else p.get("beat")
            if r not in seen or seen[r][0] != beat:
                seen[r] = (beat, now)
            if now - seen[r][1] < stale:
                waiting.append(r)
        if not waiting:
            return [r for r, p in enumerate(folder.read_progress(workers, plan["id"])) if not (p and p.get("finished"))]
        time.sleep(poll)
