"""olmocr_rl/launch/pages.py in this process, the parts the page-worker runs (tests/test_page_workers.py,
each a real launch) reach only as a whole: the split, the GPUs of each worker and what --dry-run
says of them, the job folder's files (the plan, each worker's part and progress, what a run
leaves behind), the whole job's totals, a worker's progress file and its heartbeat, machine 0's
wait for the other machines' workers, and the launcher's environment and exit status. Expected
values are written from the rules the module states (page i to worker i mod N; `tensor_parallel`
GPUs each, in order), never read back from it."""

from __future__ import annotations

import json
import re
import time

import pytest

import olmocr_rl.launch.pages as pages
from olmocr_rl.errors import ConfigError, UserError
from olmocr_rl.launch.launchers import LaunchOptions
from olmocr_rl.launch.pages import GPUS_ENV, WORKER_MODULE, JobFolder, Totals, Workers, deal, totals


def workers(processes: int | None, machines: int = 1, rank: int = 0, tp: int = 1) -> Workers:
    return Workers(LaunchOptions(num_processes=processes, num_machines=machines, machine_rank=rank), tensor_parallel=tp)


def test_who_is_launched_and_how_many_a_machine_runs():
    """One process on one machine works in this process; two processes, or two machines, launch;
    a machine runs its share of the processes; the failure carries its exit status."""
    assert (workers(None).num_processes, workers(None).launched) == (1, False)
    assert workers(1).launched is False and workers(2).launched is True
    assert workers(2, machines=2, rank=1).launched is True and workers(1, machines=2).launched is True
    w = workers(6, machines=3, rank=2)
    assert (w.num_processes, w.num_machines, w.machine_rank, w.per_machine) == (6, 3, 2, 2)
    assert workers(7, machines=2).per_machine == 3  # floored: the launcher refuses what does not divide
    assert pages.WorkersFailed("x").code == 1 and pages.WorkersFailed("x", 3).code == 3
    assert isinstance(pages.WorkersFailed("x"), UserError)


def test_the_deal_is_page_i_to_worker_i_mod_n():
    for n_items, n in ((7, 3), (6, 3), (2, 4), (0, 2), (5, 1)):
        items = [f"p{i}" for i in range(n_items)]
        got = deal(items, n)
        assert got == [[f"p{i}" for i in range(n_items) if i % n == r] for r in range(n)], (n_items, n)
        assert max(map(len, got)) - min(map(len, got)) <= 1


def test_each_workers_gpus_and_the_refusal_when_too_few():
    """`tensor_parallel` GPUs each, in order; exactly enough is enough; too few names the need, the
    GPUs there and the process count that fits (at least one a machine)."""
    assert workers(2, tp=2).gpu_groups(["0", "1", "2", "3", "4"]) == [["0", "1"], ["2", "3"]]
    assert workers(3).gpu_groups(["4", "5", "6"]) == [["4"], ["5"], ["6"]]
    with pytest.raises(ConfigError) as e:
        workers(6, machines=2, tp=2).gpu_groups(["0", "1", "2"])
    assert str(e.value) == ("3 worker(s) on this machine x --tensor-parallel 2 need 6 GPUs; it has 3 (0,1,2): "
                            "lower --num-processes to 2 or --tensor-parallel")  # fmt: skip
    with pytest.raises(ConfigError) as e:
        workers(4, machines=2).gpu_groups([])
    assert "2 worker(s) on this machine x --tensor-parallel 1 need 2 GPUs; it has 0 (none): lower --num-processes to 2 " in str(e.value)


def test_what_describe_and_the_dry_run_say(monkeypatch, tmp_path):
    """The workers line each way, the GPUs of machine 1's workers (ranked after machine 0's), the
    CPU threads each worker gets (the cores over this machine's workers), and the dry run's pages
    and command (the GPUs of each worker in the launch's environment, none without CUDA)."""
    monkeypatch.setattr(pages.os, "cpu_count", lambda: 7)
    one = workers(1).describe(None, [5], "transformers")
    assert one == ["workers: 1 (this process), engine transformers, tensor parallel 1",
                   "GPUs: none (CUDA is not available): every worker on the CPU, 7 thread(s) each", "pages per worker: 5"]  # fmt: skip
    w = workers(4, machines=2, rank=1, tp=2)
    assert w.describe(["0", "1", "2", "3"], [3, 3, 2, 2], "vllm") == [
        "workers: 4 (2 per machine on 2 machine(s)), engine vllm, tensor parallel 2",
        "GPUs: worker 2 on 0,1; worker 3 on 2,3 (this machine: 0,1,2,3)",
        "pages per worker: 3, 3, 2, 2",
    ]
    assert workers(2).describe(None, [1, 1], "vllm")[1].endswith("on the CPU, 3 thread(s) each")
    monkeypatch.setattr(pages.os, "cpu_count", lambda: None)
    assert workers(2).describe(None, [1, 1], "vllm")[1].endswith("on the CPU, 1 thread(s) each")
    job = tmp_path / "job.json"
    assert pages.dry_run(workers(1), ["a", "b", "c"], 2, "transformers", job, None) == [
        "pages: 5 (2 done already, 3 to do)", *workers(1).describe(None, [3], "transformers"),
        "command: this process does the work (--num-processes 1)",
    ]  # fmt: skip
    lines = pages.dry_run(workers(2, tp=2), list("abcde"), 0, "vllm", job, ["0", "1", "2", "3"])
    assert lines[0] == "pages: 5 (0 done already, 5 to do)" and lines[3] == "pages per worker: 3, 2"
    assert lines[4].startswith(f"command: {GPUS_ENV}='0,1;2,3' ") and f"-m {WORKER_MODULE} {job.resolve()}" in lines[4]
    cpu = pages.dry_run(workers(2), list("abc"), 0, "transformers", job, None)
    assert cpu[-1].startswith("command: ") and GPUS_ENV not in cpu[-1]
    argv = workers(2).launcher_argv(tmp_path / "sub" / ".." / "job.json")
    assert argv[-3:] == ["-m", WORKER_MODULE, str((tmp_path / "job.json").resolve())]


def test_a_users_vllm_port_only_where_two_engines_share_a_machine(monkeypatch):
    env = {"VLLM_PORT": "5000"}
    assert pages.vllm_port_problem(workers(2), "vllm", env).startswith("VLLM_PORT=5000 is set: the 2 vLLM workers of a machine")
    assert pages.vllm_port_problem(workers(2), "transformers", env) is None
    assert pages.vllm_port_problem(workers(4, machines=4), "vllm", env) is None  # one a machine
    assert pages.vllm_port_problem(workers(2), "vllm", {"VLLM_PORT": ""}) is None
    assert pages.vllm_port_problem(workers(2), "vllm", {}) is None
    monkeypatch.setenv("VLLM_PORT", "6000")
    assert "VLLM_PORT=6000" in pages.vllm_port_problem(workers(2), "vllm")
    monkeypatch.delenv("VLLM_PORT")
    assert pages.vllm_port_problem(workers(2), "vllm") is None


def test_machine_gpus_are_the_visible_ones_with_cuda_only(monkeypatch):
    import olmocr_rl.launch.gpus as gpus

    monkeypatch.setattr(gpus, "visible_gpus", lambda: ["2", "5"])
    monkeypatch.setattr(gpus, "cuda_available", lambda: False)
    assert pages.machine_gpus() is None
    monkeypatch.setattr(gpus, "cuda_available", lambda: True)
    assert pages.machine_gpus() == ["2", "5"]


def test_the_job_folders_files(tmp_path):
    """Parts by rank in number order (not another file that looks like one), the plan written whole
    with a fresh id and the old progress gone, a plan read back only when it is one, progress only
    of this job, and what `clear` leaves."""
    folder = JobFolder(tmp_path / "job")
    assert folder.job_file == tmp_path / "job" / "job.json" and folder.part(3, ".jsonl") == tmp_path / "job" / "worker-3.jsonl"
    assert folder.progress_file(2) == tmp_path / "job" / "progress-2.json"
    assert folder.read_plan() is None
    folder.path.mkdir()
    folder.progress_file(0).write_text("{}")
    plan = folder.write_plan({"shares": [["a"], ["b"]], "what": "é"})
    assert not folder.progress_file(0).exists() and re.fullmatch(r"[0-9a-f]{32}", plan["id"])
    assert plan["shares"] == [["a"], ["b"]] and folder.read_plan() == plan and "é" in folder.job_file.read_text(encoding="utf-8")
    assert folder.write_plan({"shares": []})["id"] != plan["id"]
    for bad in ("{oops", "[1]", '{"shares": []}', '{"id": "x"}'):
        folder.job_file.write_text(bad)
        assert folder.read_plan() is None, bad
    for name in ("worker-10.jsonl", "worker-2.jsonl", "worker-0.jsonl", "worker-x.jsonl", "worker-.jsonl", "worker-1.txt", "other.jsonl"):
        (folder.path / name).write_text("")
    assert [p.name for p in folder.parts(".jsonl")] == ["worker-0.jsonl", "worker-2.jsonl", "worker-10.jsonl"]
    for name in ("worker-3", "worker-12", "worker-3b"):
        (folder.path / name).mkdir()
    assert [p.name for p in folder.parts("")] == ["worker-3", "worker-12"]
    folder.progress_file(0).write_text(json.dumps({"job": "J", "pages": 1}))
    folder.progress_file(1).write_text(json.dumps({"job": "other", "pages": 1}))
    folder.progress_file(3).write_text("{not json")
    folder.progress_file(4).write_text('["J"]')
    assert folder.read_progress(5, "J") == [{"job": "J", "pages": 1}, None, None, None, None]
    (folder.path / "machine-1.lock").write_text("")
    folder.clear()
    assert sorted(p.name for p in folder.path.iterdir() if p.is_file()) == [
        "other.jsonl", "worker-.jsonl", "worker-0.jsonl", "worker-1.txt", "worker-10.jsonl", "worker-2.jsonl", "worker-x.jsonl"]  # fmt: skip
    empty = JobFolder(tmp_path / "empty")
    empty.write_plan({"shares": []})
    empty.progress_file(0).write_text("{}")
    empty.clear()
    assert not empty.path.exists()
    JobFolder(tmp_path / "never").clear()  # nothing there: no error


def test_a_machine_rank_is_held_by_one_command(tmp_path):
    folder = JobFolder(tmp_path / "job")
    with folder.machine_lock(1):
        with pytest.raises(UserError, match=f"^{re.escape(str(folder.path))}: machine rank 1 of another job on this output is running"):
            with folder.machine_lock(1):
                pass
        with folder.machine_lock(2):
            pass
    with folder.machine_lock(1):
        assert (folder.path / "machine-1.lock").exists()


def test_the_whole_jobs_totals():
    got = totals([{"pages": 3, "tokens": 10, "finished": True}, None, {"pages": 1}, {"tokens": 5, "finished": False}], [4, 4, 2, 3])
    assert got == Totals(pages=4, todo=13, tokens=15, finished=1, reporting=3)
    assert totals([None, None], [1, 2]) == Totals(todo=3)


def test_a_workers_progress_file_and_its_heartbeat(tmp_path, monkeypatch):
    """Written at once, after each change, on every heartbeat, and finished at close."""
    monkeypatch.setattr(pages, "HEARTBEAT_S", 0.05)
    folder = JobFolder(tmp_path)
    progress = pages.Progress(folder, 1, "J")

    def read():
        return json.loads(folder.progress_file(1).read_text())

    first = read()
    assert first == {"job": "J", "pages": 0, "tokens": 0, "errors": [], "finished": False, "beat": first["beat"]} and first["beat"] >= 1
    progress.write(pages=2, tokens=40)
    assert read()["pages"] == 2 and read()["tokens"] == 40 and read()["beat"] > first["beat"]
    deadline = time.monotonic() + 10
    beat = read()["beat"]
    while read()["beat"] == beat and time.monotonic() < deadline:
        time.sleep(0.02)
    assert read()["beat"] > beat and read()["pages"] == 2  # the heartbeat rewrote it, the state kept
    progress.close(errors=["p.pdf:1"])
    final = read()
    assert final["finished"] is True and final["errors"] == ["p.pdf:1"] and not progress.thread.is_alive()
    time.sleep(0.15)
    assert read() == final  # no beat after close


def test_machine_0_waits_for_every_worker_or_gives_up_on_a_silent_one(tmp_path):
    """Every worker finished: no wait, nothing missing. A worker that never wrote and one whose beat
    stopped: returned once `stale` has passed with no change; the totals reported meanwhile."""
    folder = JobFolder(tmp_path)
    plan = {"id": "J", "shares": [["a"], ["b", "c"], ["d"]]}
    for r in range(3):
        folder.progress_file(r).write_text(json.dumps({"job": "J", "pages": 1, "finished": True, "beat": 2}))
    seen: list[Totals] = []
    start = time.monotonic()
    assert pages.wait_for(folder, plan, 3, seen.append, poll=0.01, stale=5.0) == []
    assert time.monotonic() - start < 4 and seen == [Totals(pages=3, todo=4, finished=3, reporting=3)]
    folder.progress_file(1).write_text(json.dumps({"job": "J", "pages": 1, "beat": 7}))
    folder.progress_file(2).unlink()
    start = time.monotonic()
    assert pages.wait_for(folder, plan, 3, None, poll=0.01, stale=0.3) == [1, 2]
    assert time.monotonic() - start >= 0.3


def test_a_worker_that_beats_is_waited_for(tmp_path):
    """A worker whose beat changes is not stale, however long it takes; once it finishes, none is left."""
    import threading

    folder = JobFolder(tmp_path)
    plan = {"id": "J", "shares": [["a"]]}
    path = folder.progress_file(0)
    path.write_text(json.dumps({"job": "J", "beat": 0}))

    def beat():
        for b in range(1, 12):
            time.sleep(0.05)
            path.write_text(json.dumps({"job": "J", "beat": b}))
        path.write_text(json.dumps({"job": "J", "beat": 12, "finished": True}))

    t = threading.Thread(target=beat)
    t.start()
    assert pages.wait_for(folder, plan, 1, None, poll=0.01, stale=0.2) == []
    t.join()


def test_the_launch_environment_progress_and_exit_status(tmp_path, monkeypatch):
    """The launcher gets the workers' command, this machine's local ranks and each worker's GPUs;
    the totals are reported while it runs (at most once a second) and once at its end; its exit
    status is returned."""
    import olmocr_rl.launch.launchers as launchers

    folder = JobFolder(tmp_path)
    plan = folder.write_plan({"shares": [["a", "b"], ["c"]]})
    calls: dict = {}

    def fake_launch(argv, env, tick=None):
        calls["argv"], calls["env"] = argv, env
        tick()
        tick()  # within the second: not reported again
        folder.progress_file(0).write_text(json.dumps({"job": plan["id"], "pages": 2, "finished": True}))
        return 3

    monkeypatch.setattr(launchers, "launch", fake_launch)
    seen: list[Totals] = []
    w = workers(2, tp=2)
    assert pages.launch_job(folder, w, ["0", "1", "2", "3"], seen.append) == 3
    assert calls["argv"] == w.launcher_argv(folder.job_file) and calls["env"][GPUS_ENV] == "0,1;2,3"
    assert seen == [Totals(todo=3), Totals(pages=2, todo=3, finished=1, reporting=1)]
    calls.clear()
    assert pages.launch_job(folder, w, None) == 3 and GPUS_ENV not in calls["env"]


def test_the_failure_says_what_failed_and_one_worker_without_a_core_count():
    e = pages.WorkersFailed("worker 1 stopped", 3)
    assert (str(e), e.code, pages.WorkersFailed("x").code) == ("worker 1 stopped", 3, 1)


def test_one_worker_where_the_cores_are_unknown_gets_one_thread(monkeypatch):
    monkeypatch.setattr(pages.os, "cpu_count", lambda: None)
    assert workers(1).describe(None, [1], "transformers")[1].endswith("on the CPU, 1 thread(s) each")


def test_the_vllm_port_message_whole():
    assert pages.vllm_port_problem(workers(2), "vllm", {"VLLM_PORT": "5000"}) == (
        "VLLM_PORT=5000 is set: the 2 vLLM workers of a machine would all start from that port and collide; unset it (each "
        "engine then finds free ports of its own), or run one worker per machine"
    )


def test_the_plan_is_written_durably_into_a_folder_made_with_its_parents(tmp_path, monkeypatch):
    import os

    synced = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(fd) or real(fd))
    folder = JobFolder(tmp_path / "out" / ".job" / "deep")
    plan = folder.write_plan({"shares": [["é"]]})
    assert synced and folder.read_plan() == plan


def test_a_workers_beats_count_one_by_one(tmp_path, monkeypatch):
    monkeypatch.setattr(pages, "HEARTBEAT_S", 3600.0)
    folder = JobFolder(tmp_path)
    progress = pages.Progress(folder, 0, "J")
    beats = [json.loads(folder.progress_file(0).read_text())["beat"]]
    progress.write(pages=1)
    beats.append(json.loads(folder.progress_file(0).read_text())["beat"])
    progress.close()
    beats.append(json.loads(folder.progress_file(0).read_text())["beat"])
    assert beats == [1, 2, 3]


UNCLOSED = r"""
import sys
import olmocr_rl.launch.pages as pages
pages.Progress(pages.JobFolder(sys.argv[1]), 0, "J")  # never closed
print("done")
"""


def test_an_unclosed_progress_does_not_keep_its_process_alive(tmp_path):
    """A worker that ends without closing its progress (an error on its way out) still exits:
    the heartbeat thread is a daemon; a closed one has stopped."""
    import subprocess
    import sys

    progress = pages.Progress(JobFolder(tmp_path), 1, "J")
    progress.close()
    assert not progress.thread.is_alive() and progress.thread.daemon
    out = subprocess.run([sys.executable, "-c", UNCLOSED, str(tmp_path)], capture_output=True, text=True, timeout=30)
    assert (out.returncode, out.stdout) == (0, "done\n"), out.stderr


def test_the_plan_reads_as_utf_8_whatever_the_locale(tmp_path, monkeypatch):
    """A batch node's locale may be ASCII (C without UTF-8 coercion): the plan, written with its
    non-ASCII paths as they are, is still read. The locale's encoding is what `io.text_encoding`
    gives a file opened without one; here ASCII."""
    import io

    folder = JobFolder(tmp_path)
    plan = folder.write_plan({"shares": [["Zürich.pdf:1"]]})
    monkeypatch.setattr(io, "text_encoding", lambda encoding, stacklevel=2: encoding or "ascii")
    with pytest.raises(UnicodeDecodeError):
        folder.job_file.read_text()  # the stand-in locale is in force
    assert folder.read_plan() == plan


def test_progress_is_reported_once_a_second_on_the_clock(tmp_path, monkeypatch):
    """tick reports when a full second has passed since the last report (at exactly 1.0 too),
    counted from 0 on the monotonic clock; and once at the end."""
    import olmocr_rl.launch.launchers as launchers

    folder = JobFolder(tmp_path)
    folder.write_plan({"shares": [["a"]]})
    now = [0.0]
    monkeypatch.setattr(pages.time, "monotonic", lambda: now[0])
    reported = []

    def fake_launch(argv, env, tick=None):
        for t in (1.0, 1.5, 2.0, 2.99, 3.0, 3.5):
            now[0] = t
            tick()
        return 0

    monkeypatch.setattr(launchers, "launch", fake_launch)
    pages.launch_job(folder, workers(2), None, lambda totals: reported.append(now[0]))
    assert reported == [1.0, 2.0, 3.0, 3.5]  # the last: the report at the end


def test_machine_0_polls_every_two_seconds_and_a_worker_silent_for_exactly_stale_is_given_up(tmp_path, monkeypatch):
    folder = JobFolder(tmp_path)
    plan = {"id": "J", "shares": [["a"]]}
    folder.progress_file(0).write_text(json.dumps({"job": "J", "beat": 4}))
    now = [100.0]
    slept = []

    def sleep(s):
        slept.append(s)
        now[0] += 2.5

    monkeypatch.setattr(pages.time, "monotonic", lambda: now[0])
    monkeypatch.setattr(pages.time, "sleep", sleep)
    assert pages.wait_for(folder, plan, 1, stale=5.0) == [0]
    # first look at 100 (silent since 100), then 102.5 (2.5 s), then 105.0: exactly 5 s, given up
    assert slept == [2.0, 2.0]
