"""One worker of a page job (olmocr_rl/launch/pages.py): the program the launcher starts on every
rank, `python -m olmocr_rl.launch.worker OUTPUT_JOB_FOLDER/job.json`.

In order: it learns who it is from the launcher (RANK, WORLD_SIZE, LOCAL_RANK); asks for SIGTERM
when the launcher dies (kill -9 of everything above included); takes its GPUs (this machine's
command names each local rank's group in OLMOCR_RL_WORKER_GPUS) before anything touches CUDA; takes
the plan from worker 0 through the launcher's store (worker 0 reads job.json on machine 0, where
the command just wrote it); drops the launcher's variables, so that an engine that starts its own
processes (vLLM) does not take itself for one rank of this job; and runs the job's function (the
plan's `worker`, a function of this package) on its share. SIGTERM ends it as Ctrl-C does
(olmocr_rl/procs.py `SigtermAsInterrupt`), so vLLM stops its engine processes in order.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

from olmocr_rl.launch.pages import GPUS_ENV, JobFolder

PLAN_KEY = "olmocr_rl/page_job/plan"
PLAN_WAIT = timedelta(minutes=30)  # how long a worker waits for worker 0 to share the plan
# What torchrun tells each rank about the job it belongs to.
LAUNCHER_ENV = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "GROUP_RANK", "GROUP_WORLD_SIZE", "ROLE_RANK",
                "ROLE_WORLD_SIZE", "ROLE_NAME", "MASTER_ADDR", "MASTER_PORT")  # fmt: skip


def take_gpus(local_rank: int, env: dict[str, str] | None = None) -> str | None:
    """Sets CUDA_VISIBLE_DEVICES to this worker's group (None: no GPUs named, the CPU)."""
    env = os.environ if env is None else env  # type: ignore[assignment]
    groups = env.get(GPUS_ENV)
    if not groups:
        return None
    mine = groups.split(";")[local_rank]
    env["CUDA_VISIBLE_DEVICES"] = mine
    return mine


def shared_plan(job_file: Path, rank: int) -> dict[str, Any]:
    """The plan as worker 0 read it, through the launcher's store (torchrun's, at MASTER_ADDR:PORT)."""
    import torch.distributed as dist

    store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), is_master=False, timeout=PLAN_WAIT,
                          wait_for_workers=False)  # fmt: skip
    if rank == 0:
        store.set(PLAN_KEY, job_file.read_bytes())
    return json.loads(store.get(PLAN_KEY))


def forget_launcher(env: dict[str, str] | None = None) -> None:
    env = os.environ if env is None else env  # type: ignore[assignment]
    for key in [k for k in env if k in LAUNCHER_ENV or k.startswith("TORCHELASTIC_")]:
        del env[key]


def quiet_libraries() -> None:
    """No weight-loading bars from every worker over the command's one progress line (unless
    --debug / OLMOCR_RL_DEBUG)."""
    if os.environ.get("OLMOCR_RL_DEBUG", "").lower() in ("1", "true", "yes"):
        return
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:
        return
    hf_logging.disable_progress_bar()


def job_function(name: str) -> Any:
    """`module:function` of this package (the plan's `worker`)."""
    module, _, function = name.partition(":")
    if not module.startswith("olmocr_rl.") or not function:
        raise ValueError(f"not a page job function of olmocr_rl: {name!r}")
    return getattr(importlib.import_module(module), function)


def main(argv: list[str] | None = None) -> int:
    from olmocr_rl.errors import UserError
    from olmocr_rl.procs import dies_with_parent

    job_file = Path((argv if argv is not None else sys.argv[1:])[0])
    rank, world, local = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), int(os.environ["LOCAL_RANK"])
    dies_with_parent()
    take_gpus(local)
    plan = shared_plan(job_file, rank)
    if len(plan["shares"]) != world:
        print(f"error: the plan in {job_file} is for {len(plan['shares'])} workers, this job has {world}", file=sys.stderr)
        return 1
    forget_launcher()
    quiet_libraries()
    try:
        return int(job_function(plan["worker"])(plan, rank, JobFolder(job_file.parent)) or 0)
    except UserError as e:  # one line, as the command prints its own
        print(f"error: worker {rank}: {e}", file=sys.stderr, flush=True)
        return 1
    except KeyboardInterrupt:  # SIGTERM from the launcher (or Ctrl-C): the finished pages are written
        return 130


if __name__ == "__main__":
    sys.exit(main())
