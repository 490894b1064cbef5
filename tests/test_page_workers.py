"""`olmocr-rl curate` and `olmocr-rl generate` on several workers (issue 36; olmocr_rl/launch/pages.py,
olmocr_rl/launch/worker.py, olmocr_rl/curate/parallel.py, olmocr_rl/generate.py).

On the CPU with the tiny model (bench_fixtures/tiny_vlm.py) and the transformers engine, through the
real launcher (`accelerate launch`, two worker processes):

* one worker and two write the same difficulty records (their timing field and their order in the
  file aside) and byte-identical page files: each page's samples are seeded by the run's seed and
  the page, and a transformers call never mixes pages;
* the command killed with SIGKILL mid-way leaves no process behind (the subreaper driver of
  tests/test_command_safety.py), keeps the finished pages, and a rerun writes the same files as a
  run never stopped; one worker killed stops the job, its finished pages are kept, the rerun samples
  only the others;
* two "machines" on this host (`--num-machines 2`, each command with its own `--machine-rank`)
  write the same files as one process;
* the one progress line counts the whole job; `--dry-run` shows the workers, their GPUs and their
  pages and starts nothing; a second run on the output is refused at once.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import need

need("torch")
need("trl")

from clirun import invoke
from test_command_safety import CLI, drive, long_bench
from test_curate import CHARS, make_case
from training import RECIPE

from olmocr_rl.curate import read_records
from olmocr_rl.engines import sample_seed
from olmocr_rl.launch.launchers import LaunchOptions
from olmocr_rl.launch.pages import GPUS_ENV, JobFolder, Workers, deal

TWO = ["--num-processes", "2"]
GENERATE = ["--max-new-tokens", "16", "--longest-side", "84", "--repeats", "2", "--temperature", "1.0", "-q"]
CURATE = ["--samples", "4", "--config", str(RECIPE), "-q"]
LONG_CURATE = ["--samples", "2", "--config", str(RECIPE), "max_completion_length=8", "-q"]  # the 24-page runs, shorter


def page_files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*.md") if ".render" not in p.parts}


def records(path: Path) -> dict[tuple[str, str, int], dict]:
    """The difficulty file's records by page, less their timing field; one line per page."""
    lines = [rec for _, rec in read_records(path)[0]]
    out = {(r["split"], r["pdf"], r["page"]): {k: v for k, v in r.items() if k != "score_seconds"} for r in lines}
    assert len(out) == len(lines), "a page has several lines"
    return out


def survivors(marker: str) -> list[str]:
    """Processes on the machine whose command line names `marker` (a test's own folder)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in cmd and int(pid) != os.getpid():
            found.append(cmd[:200])
    return found


# Every process started with `slow_workers` on: the transformers engine sleeps before each call (one
# page), so that a kill lands half-way through a job on an idle machine too.
SLOW = """
import os, time
if os.environ.get("OLMOCR_RL_TEST_SLOW_CALL"):
    import olmocr_rl.engines as engines
    real = engines.transformers_generate
    def transformers_generate(*args, **kwargs):
        generate = real(*args, **kwargs)
        def slow(*call):
            time.sleep(float(os.environ["OLMOCR_RL_TEST_SLOW_CALL"]))
            return generate(*call)
        return slow
    engines.transformers_generate = transformers_generate
"""


@pytest.fixture()
def slow_workers(tmp_path, monkeypatch):
    (tmp_path / "slow").mkdir()
    (tmp_path / "slow" / "sitecustomize.py").write_text(SLOW)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path / "slow"), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep))
    monkeypatch.setenv("OLMOCR_RL_TEST_SLOW_CALL", "0.2")


@pytest.fixture(scope="module")
def long_prepared(tmp_path_factory) -> Path:
    """24 pages (two PDFs of 12), prepared: enough pages to stop a job half-way; each page tested
    for the one-character texts the tiny model writes in 8-20 % of its samples (tests/test_curate.py),
    so that samples disagree and a selection is written."""
    from olmocr_rl.prepare import PrepareOptions, prepare

    root = tmp_path_factory.mktemp("long")
    bench = long_bench(root / "bench", pdfs=2, pages=12)
    tests = [{"pdf": f"long{d}.pdf", "page": p, "id": f"d{d}p{p}c{i}", "type": "present", "text": c}
             for d in range(2) for p in range(1, 13) for i, c in enumerate(CHARS)]  # fmt: skip
    (bench / "long_tests.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tests))
    prepare(bench, root / "prep", PrepareOptions(longest_side=84, eval_fraction=0.0, workers=1, seed=0), progress=False)
    return root / "prep"


# ---------------------------------------------------------------------------------------------
# the pieces
# ---------------------------------------------------------------------------------------------


def test_the_split_and_the_seeds_depend_on_the_pages_only():
    assert deal(list(range(7)), 3) == [[0, 3, 6], [1, 4], [2, 5]]
    assert deal([], 2) == [[], []] and deal(list("ab"), 4) == [["a"], ["b"], [], []]
    seeds = {sample_seed(0, pdf, page, j) for pdf in ("a.pdf", "b.pdf") for page in (1, 2) for j in range(4)}
    assert len(seeds) == 16  # every page and sample its own
    assert sample_seed(1, "a.pdf", 1, 0) != sample_seed(0, "a.pdf", 1, 0)
    # The same in another interpreter, whatever its hash seed (no Python hash() in it).
    code = "from olmocr_rl.engines import sample_seed; print(sample_seed(3, 'dir/ü.pdf', 7, 2))"
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "123"})
    assert int(other.stdout) == sample_seed(3, "dir/ü.pdf", 7, 2)


def test_a_users_vllm_port_is_refused_where_two_engines_would_share_it(tiny_model, prepared, tmp_path, monkeypatch):
    """VLLM_PORT is where every vLLM engine of a machine starts its ports: with two vLLM workers on a
    machine (generate, curate) or two colocated ranks (train) it is refused before anything starts;
    one vLLM worker a machine, or the transformers engine, keeps it."""
    from olmocr_rl.launch.pages import vllm_port_problem
    from olmocr_rl.train.config import load_config
    from olmocr_rl.train.preflight import check_generation

    env = {"VLLM_PORT": "29650"}
    bench = long_bench(tmp_path / "bench", pdfs=1, pages=2)
    res = invoke(["generate", tiny_model, bench, "-c", "c", "--engine", "vllm", "--num-processes", "2", "--dry-run"], env=env)
    assert res.exit_code == 1 and "VLLM_PORT=29650 is set: the 2 vLLM workers of a machine would all start from that port" in res.stderr
    res = invoke(["curate", prepared, "--model", tiny_model, "--engine", "vllm", "--num-processes", "2", "--dry-run"], env=env)
    assert res.exit_code == 1 and "VLLM_PORT=29650 is set" in res.stderr
    assert invoke(["generate", tiny_model, bench, "-c", "c", "--num-processes", "2", "--dry-run"], env=env).exit_code == 0
    assert vllm_port_problem(Workers(LaunchOptions(num_processes=2, num_machines=2)), "vllm", env) is None  # one engine a machine
    assert vllm_port_problem(Workers(LaunchOptions(num_processes=4)), "vllm", {}) is None
    from olmocr_rl.train.preflight import Context, run_inputs

    cfg = load_config(
        RECIPE, ["use_vllm=true", "vllm_mode=colocate"], prepared_dir=str(prepared), model=str(tiny_model), output_dir=str(tmp_path)
    )
    ctx = Context(cfg, 2, run_inputs(cfg), False, cuda=True)
    assert not [p for p in check_generation(ctx) if "VLLM_PORT" in p.message]
    monkeypatch.setenv("VLLM_PORT", "29650")
    assert [p.severity for p in check_generation(ctx) if "VLLM_PORT" in p.message] == ["error"]


def test_a_worker_takes_its_gpus_and_forgets_the_launcher():
    from olmocr_rl.launch.worker import forget_launcher, take_gpus

    env = {GPUS_ENV: "0,1;2,3;4,5", "RANK": "1", "LOCAL_RANK": "1", "WORLD_SIZE": "3", "MASTER_PORT": "1", "TORCHELASTIC_RUN_ID": "x",
           "PATH": "/bin"}  # fmt: skip
    assert take_gpus(1, env) == "2,3" and env["CUDA_VISIBLE_DEVICES"] == "2,3"
    forget_launcher(env)
    assert env == {GPUS_ENV: "0,1;2,3;4,5", "CUDA_VISIBLE_DEVICES": "2,3", "PATH": "/bin"}
    assert take_gpus(0, {}) is None  # no GPUs named: the CPU
    workers = Workers(LaunchOptions(num_processes=8, num_machines=2, machine_rank=1), tensor_parallel=2)
    assert workers.gpu_groups([str(i) for i in range(8)]) == [["0", "1"], ["2", "3"], ["4", "5"], ["6", "7"]]
    with pytest.raises(Exception, match="need 8 GPUs; it has 6"):
        workers.gpu_groups([str(i) for i in range(6)])


# ---------------------------------------------------------------------------------------------
# one worker and two
# ---------------------------------------------------------------------------------------------


def test_curate_one_and_two_workers_write_the_same_records(tiny_model, tmp_path):
    one, two = make_case(tmp_path / "one"), make_case(tmp_path / "two")
    res = invoke(["curate", one, "--model", tiny_model, *CURATE])
    assert res.exit_code == 0, res.output
    res = invoke(["curate", two, "--model", tiny_model, *CURATE, "--num-processes", "2"])
    assert res.exit_code == 0, res.output
    assert "3 page(s) to sample on 2 workers: 2, 1 each" in res.output
    assert records(two / "difficulty.jsonl") == records(one / "difficulty.jsonl")
    assert len({tuple(r["rewards"]) for r in records(one / "difficulty.jsonl").values()}) > 1  # not all the same
    assert (two / "curated.jsonl").read_bytes() == (one / "curated.jsonl").read_bytes()
    assert not (two / ".difficulty.jsonl.job").exists()  # the parts merged, the job folder gone


def test_generate_one_and_two_workers_write_identical_files_and_one_progress_line(tiny_model, tmp_path, monkeypatch):
    import rich.progress

    bars: list[dict] = []

    class Recording(rich.progress.Progress):
        def start(self):
            bars.append({"updates": []})

        def update(self, task_id, **kwargs):
            bars[-1]["updates"].append((kwargs.get("completed"), kwargs.get("total"), kwargs.get("description")))

        def stop(self):
            bars[-1]["stopped"] = True

    bench = long_bench(tmp_path / "bench", pdfs=1, pages=6)
    res = invoke(["generate", tiny_model, bench, "-c", "one", *GENERATE])
    assert res.exit_code == 0, res.output
    monkeypatch.setattr(rich.progress, "Progress", Recording)
    res = invoke(["generate", tiny_model, bench, "-c", "two", *[a for a in GENERATE if a != "-q"], "--num-processes", "2"])
    assert res.exit_code == 0, res.output
    one, two = page_files(bench / "one"), page_files(bench / "two")
    assert len(one) == 12 and two == one
    assert len({t for t in one.values()}) > 6  # sampled: the pages and repeats differ
    summaries = [json.loads((bench / c / "_generate.json").read_text()) for c in ("one", "two")]
    assert [{k: s[k] for k in ("pages", "written", "parsed", "unparsed", "tokens")} for s in summaries] == [
        {"pages": 6, "written": 12, "parsed": 0, "unparsed": 12, "tokens": summaries[0]["tokens"]}
    ] * 2
    # One line for the whole job: pages of all the workers, the tokens and tokens/s.
    (bar,) = bars
    assert bar["stopped"] and bar["updates"][-1][:2] == (6, 6), bar["updates"]
    assert f"{summaries[0]['tokens']:,} tokens" in bar["updates"][-1][2] and "tokens/s" in bar["updates"][-1][2]
    assert not (bench / "two" / ".job").exists()


# ---------------------------------------------------------------------------------------------
# kills
# ---------------------------------------------------------------------------------------------


def test_generate_killed_with_sigkill_midway_then_rerun_writes_the_same_files(tiny_model, tmp_path, slow_workers):
    bench = long_bench(tmp_path / "bench", pdfs=2, pages=12)
    args = ["generate", str(tiny_model), str(bench), *GENERATE]
    r = drive(str(bench / "c" / "*_repeat2.md"), signal.SIGKILL, [*CLI, *args, "-c", "c", *TWO], tmp_path / "log")
    assert r["code"] == -signal.SIGKILL and r["descendants_seen"] >= 3, r  # the launcher and its workers
    assert r["left"] == [], f"processes outlived the killed generate: {r['left']}"
    done = page_files(bench / "c")
    assert 0 < len(done) < 48, len(done)  # stopped mid-way
    res = invoke([*args, "-c", "c", *TWO])
    assert res.exit_code == 0, res.output
    res = invoke([*args, "-c", "ref"])  # one process, never stopped
    assert res.exit_code == 0, res.output
    assert page_files(bench / "c") == page_files(bench / "ref") and len(page_files(bench / "ref")) == 48
    assert all(page_files(bench / "c")[k] == v for k, v in done.items())  # what the killed job wrote stayed


def test_generate_stopped_by_sigterm_stops_every_worker_and_says_so(tiny_model, tmp_path, slow_workers):
    bench = long_bench(tmp_path / "bench", pdfs=1, pages=12)
    argv = [*CLI, "generate", str(tiny_model), str(bench), *GENERATE, "-c", "c", *TWO]
    r = drive(str(bench / "c" / "*_repeat2.md"), signal.SIGTERM, argv, tmp_path / "log")
    assert r["code"] == 130 and r["left"] == [], r
    last = r["out"].strip().splitlines()[-1]
    assert last == "error: interrupted (SIGTERM): every worker was stopped; the pages finished are written; run again to go on", r["out"]
    assert not (bench / "c" / ".job").exists()


def test_curate_killed_with_sigkill_midway_then_rerun_gives_the_same_records(tiny_model, long_prepared, tmp_path, slow_workers):
    ref, run = tmp_path / "ref", tmp_path / "run"
    shutil.copytree(long_prepared, ref)
    shutil.copytree(long_prepared, run)
    args = ["curate", str(run), "--model", str(tiny_model), *LONG_CURATE]
    parts = str(run / ".difficulty.jsonl.job" / "worker-*.jsonl")
    r = drive(f"lines>=3:{parts}", signal.SIGKILL, [*CLI, *args, *TWO], tmp_path / "log")
    assert r["code"] == -signal.SIGKILL and r["left"] == [], r
    left = sum(len(read_records(p)[0]) for p in (run / ".difficulty.jsonl.job").glob("worker-*.jsonl"))
    assert 3 <= left < 24, left  # finished pages in the parts, not yet in the difficulty file
    res = invoke([*args, *TWO])
    assert res.exit_code == 0, res.output
    assert f"note: {left} page(s) a stopped job had finished were added" in res.output
    assert f"{24 - left} page(s) to sample on 2 workers" in res.output
    res = invoke(["curate", str(ref), "--model", str(tiny_model), *LONG_CURATE])
    assert res.exit_code == 0, res.output
    assert records(run / "difficulty.jsonl") == records(ref / "difficulty.jsonl") and len(records(ref / "difficulty.jsonl")) == 24


def test_a_killed_worker_loses_only_its_unfinished_pages(tiny_model, long_prepared, tmp_path, slow_workers):
    run = tmp_path / "run"
    shutil.copytree(long_prepared, run)
    args = [*CLI, "curate", str(run), "--model", str(tiny_model), *LONG_CURATE, *TWO]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    part = run / ".difficulty.jsonl.job" / "worker-0.jsonl"
    deadline = time.monotonic() + 300
    while not (part.is_file() and len(read_records(part)[0]) >= 2):
        assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read()
        time.sleep(0.05)
    from olmocr_rl.procs import descendants

    (worker,) = [pid for pid in map(str, descendants(proc.pid)) if _is_worker(pid, rank=0)]  # this run's (tests run side by side)
    os.kill(int(worker), signal.SIGKILL)
    out = proc.communicate(timeout=300)[0]
    assert proc.returncode == 1 and "error: the workers stopped with status" in out, out[-3000:]
    kept = records(run / "difficulty.jsonl")
    assert 2 <= len(kept) < 24 and "page(s) finished are in" in out
    assert not list((run / ".difficulty.jsonl.job").glob("worker-*")), "parts left unmerged"
    assert survivors(str(run)) == []
    res = invoke(args[3:])
    assert res.exit_code == 0, res.output
    assert f"{24 - len(kept)} page(s) to sample on 2 workers" in res.output  # only the unfinished ones
    final = records(run / "difficulty.jsonl")
    assert len(final) == 24 and all(final[k] == v for k, v in kept.items())


def _is_worker(pid: str, rank: int) -> bool:
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return False
    return b"olmocr_rl.launch.worker" in cmd and f"RANK={rank}".encode() in env


# ---------------------------------------------------------------------------------------------
# several machines (two on this host), the dry run, a second run
# ---------------------------------------------------------------------------------------------


def test_two_machines_write_what_one_process_writes(tiny_model, tmp_path):
    from olmocr_rl.launch.launchers import free_port

    bench = long_bench(tmp_path / "bench", pdfs=1, pages=4)
    args = [*CLI, "generate", str(tiny_model), str(bench), *GENERATE, "-c", "mm", "--num-processes", "2", "--num-machines", "2",
            "--main-process-ip", "127.0.0.1", "--main-process-port", str(free_port())]  # fmt: skip
    first = subprocess.Popen([*args, "--machine-rank", "0"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    second = subprocess.run([*args, "--machine-rank", "1"], capture_output=True, text=True, timeout=300)
    out = first.communicate(timeout=300)[0]
    assert second.returncode == 0 and "machine 1: its 1 worker(s) are done" in second.stdout, second.stdout + second.stderr
    assert first.returncode == 0 and "4 page(s) to transcribe on 2 workers: 2, 2 each" in out, out
    assert invoke(["generate", tiny_model, bench, *GENERATE, "-c", "ref"]).exit_code == 0
    assert page_files(bench / "mm") == page_files(bench / "ref") and len(page_files(bench / "ref")) == 8
    assert not (bench / "mm" / ".job").exists()


def test_dry_run_shows_workers_gpus_and_pages_and_starts_nothing(tiny_model, prepared, tmp_path, monkeypatch):
    import olmocr_rl.launch.pages as pages

    bench = long_bench(tmp_path / "bench", pdfs=1, pages=5)
    res = invoke(["generate", tiny_model, bench, "-c", "c", "--num-processes", "2", "--dry-run"])
    assert res.exit_code == 0, res.output
    assert "pages: 5 (0 done already, 5 to do)" in res.stdout and "pages per worker: 3, 2" in res.stdout
    assert "GPUs: none (CUDA is not available)" in res.stdout and "workers: 2 (2 per machine on 1 machine(s))" in res.stdout
    command = next(line for line in res.stdout.splitlines() if line.startswith("command: "))
    assert "-m accelerate.commands.launch" in command and "--num_processes 2" in command and "-m olmocr_rl.launch.worker" in command
    assert not (bench / "c").exists()
    # An 8-GPU node: 4 workers of 2 GPUs (vLLM's tensor parallel), and the launch flags of a second machine.
    monkeypatch.setattr(pages, "machine_gpus", lambda: [str(i) for i in range(8)])
    res = invoke(["generate", tiny_model, bench, "-c", "c", "--engine", "vllm", "--tensor-parallel", "2", "--num-processes", "8",
                  "--num-machines", "2", "--machine-rank", "1", "--main-process-ip", "10.0.0.9", "--main-process-port", "29613",
                  "--dry-run"])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "GPUs: worker 4 on 0,1; worker 5 on 2,3; worker 6 on 4,5; worker 7 on 6,7" in res.stdout, res.stdout
    assert "pages per worker: 1, 1, 1, 1, 1, 0, 0, 0" in res.stdout
    command = next(line for line in res.stdout.splitlines() if line.startswith("command: "))
    for flag in ("--num_machines 2", "--machine_rank 1", "--main_process_ip 10.0.0.9", "--main_process_port 29613", "--num_processes 8"):
        assert flag in command, (flag, command)
    assert f"{GPUS_ENV}='0,1;2,3;4,5;6,7'" in command
    res = invoke(
        ["generate", tiny_model, bench, "-c", "c", "--engine", "vllm", "--tensor-parallel", "4", "--num-processes", "4", "--dry-run"]
    )
    assert res.exit_code == 1 and "4 worker(s) on this machine x --tensor-parallel 4 need 16 GPUs; it has 8" in res.stderr
    res = invoke(["generate", tiny_model, bench, "--tensor-parallel", "2", "--dry-run"])
    assert res.exit_code == 1 and "error: --tensor-parallel 2: the transformers engine runs on one GPU; give --engine vllm" in res.stderr
    res = invoke(["generate", tiny_model, bench, "--num-processes", "3", "--num-machines", "2", "--dry-run"])
    assert res.exit_code == 1 and "must be divisible by --num-machines" in res.stderr
    # curate: the model, the pages, the split, the launch flags (a vLLM engine of 2 GPUs on each of 4 workers).
    folder = tmp_path / "prepared"
    shutil.copytree(prepared, folder)
    res = invoke(["curate", folder, "--model", tiny_model, *CURATE, "--engine", "vllm", "--tensor-parallel", "2", "--num-processes", "8",
                  "--num-machines", "2", "--machine-rank", "1", "--main-process-ip", "10.0.0.9", "--main-process-port", "29613",
                  "--dry-run"])  # fmt: skip
    assert res.exit_code == 0, res.output
    assert "pages: 3 (0 done already, 3 to do)" in res.stdout and "pages per worker: 1, 1, 1, 0, 0, 0, 0, 0" in res.stdout
    assert "GPUs: worker 4 on 0,1; worker 5 on 2,3" in res.stdout and "4 samples a page at temperature 0.8" in res.stdout
    command = next(line for line in res.stdout.splitlines() if line.startswith("command: "))
    for flag in ("--num_machines 2", "--machine_rank 1", "--main_process_ip 10.0.0.9", "--main_process_port 29613", "--num_processes 8"):
        assert flag in command, (flag, command)
    assert str(folder / ".difficulty.jsonl.job" / "job.json") in command
    assert not (folder / "difficulty.jsonl").exists() and not (folder / ".difficulty.jsonl.job").exists()


def test_a_second_run_on_the_output_is_refused_at_once(tiny_model, prepared, tmp_path):
    from test_command_safety import hold

    from olmocr_rl.curate import DifficultyFile

    bench = long_bench(tmp_path / "bench", pdfs=1, pages=2)
    holder = hold(bench / "c")
    try:
        res = invoke(["generate", tiny_model, bench, "-c", "c", "-q", *TWO])
        assert res.exit_code == 1 and f"is in use by pid {holder.pid}" in res.stderr, res.output
        assert not (bench / "c" / ".job").exists()
    finally:
        holder.kill()
        holder.wait()
    folder = tmp_path / "prepared"
    shutil.copytree(prepared, folder)
    held = DifficultyFile(folder / "difficulty.jsonl")
    held.open()
    try:
        res = invoke(["curate", folder, "--model", tiny_model, *CURATE, *TWO])
        assert res.exit_code == 1 and "another `olmocr-rl curate` is writing this file" in res.stderr, res.output
        assert not (folder / ".difficulty.jsonl.job").exists()
    finally:
        held.close()
    # The parts of a live job's worker are never merged by another run.
    part = JobFolder(folder / ".difficulty.jsonl.job").part(0, ".jsonl")
    busy = DifficultyFile(part)
    busy.open()
    try:
        res = invoke(["curate", folder, "--model", tiny_model, *CURATE, *TWO])
        assert res.exit_code == 1 and "a worker of another curate is writing it" in res.stderr, res.output
    finally:
        busy.close()


# ---------------------------------------------------------------------------------------------
# vLLM workers at their boundary: a stand-in `vllm` package every worker imports
# ---------------------------------------------------------------------------------------------

FAKE_VLLM = """
import json, os, types

def SamplingParams(**kwargs):
    return kwargs

def _record(kind, data):
    with open(os.environ["FAKE_VLLM_LOG"], "a") as f:
        f.write(json.dumps({"kind": kind, "pid": os.getpid(), "gpus": os.environ.get("CUDA_VISIBLE_DEVICES"),
                            "rank": os.environ.get("RANK"), **data}) + "\\n")

class LLM:
    def __init__(self, **kwargs):
        _record("init", {"tensor_parallel_size": kwargs.get("tensor_parallel_size"), "seed": kwargs.get("seed")})

    def generate(self, requests, params, use_tqdm=True):
        _record("generate", {"seeds": [p["seed"] for p in params]})
        return [types.SimpleNamespace(outputs=[types.SimpleNamespace(text="from vllm")]) for _ in requests]
"""


def test_vllm_workers_take_their_gpus_and_every_request_its_pages_seed(tiny_model, tmp_path, monkeypatch):
    """`--engine vllm --num-processes 2 --tensor-parallel 2` on a node of 4 GPUs: each worker's engine
    sees its own 2 GPUs (CUDA_VISIBLE_DEVICES set before CUDA is touched; the launcher's RANK gone),
    is built with tensor_parallel_size 2 and the run's seed, and every request carries its page's
    seed. The GPUs are this machine's as the command sees them (replaced: there are none here)."""
    import olmocr_rl.launch.pages as pages

    (tmp_path / "fake" / "vllm").mkdir(parents=True)
    (tmp_path / "fake" / "vllm" / "__init__.py").write_text(FAKE_VLLM)
    log = tmp_path / "vllm.jsonl"
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path / "fake"), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("FAKE_VLLM_LOG", str(log))
    monkeypatch.setattr(pages, "machine_gpus", lambda: ["0", "1", "2", "3"])
    bench = long_bench(tmp_path / "bench", pdfs=1, pages=5)
    res = invoke(["generate", tiny_model, bench, "-c", "v", "--engine", "vllm", "--tensor-parallel", "2", "--num-processes", "2",
                  "--seed", "7", "--max-new-tokens", "8", "--longest-side", "84", "-q"])  # fmt: skip
    assert res.exit_code == 0, res.output
    events = [json.loads(line) for line in log.read_text().splitlines()]
    inits = sorted((e["gpus"], e["tensor_parallel_size"], e["seed"], e["rank"]) for e in events if e["kind"] == "init")
    assert inits == [("0,1", 2, 7, None), ("2,3", 2, 7, None)]
    seeds = sorted(s for e in events if e["kind"] == "generate" for s in e["seeds"])
    assert seeds == sorted(sample_seed(7, "long0.pdf", p, 0) for p in range(1, 6))
    assert set(page_files(bench / "v").values()) == {b"from vllm"} and len(page_files(bench / "v")) == 5
