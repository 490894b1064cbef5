"""Commands against kills, a second copy of themselves and inputs that are not what they seem
(issue 29): no process outlives its command, one command per output folder, nothing written for a
model that cannot load, and a compact training console.

The kill tests run the command under a driver process that makes itself a child subreaper: any
process the command leaves behind is re-parented to the driver instead of init, so the driver can
list what survived (with nothing re-parented, a survivor would be invisible to the test)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from clirun import invoke
from test_prepare import jsonl, pdf_bytes
from training import RECIPE

from olmocr_rl.folder_lock import LOCK_NAME, FolderBusy, folder_lock

CLI = [sys.executable, "-c", "import sys; from olmocr_rl.cli import main; sys.exit(main())"]

# Runs argv[2:] as a child, sends it a signal once the file argv[1] (a glob under its folder)
# exists (or `workers>=N`: N worker processes run; `lines>=N:GLOB`: the files GLOB matches hold N
# lines), and prints what the command printed, its exit status and every process left under
# the driver afterwards.
DRIVER = textwrap.dedent("""
    import glob, json, os, signal, subprocess, sys, time
    from olmocr_rl.procs import become_subreaper, descendants, _running
    assert become_subreaper()
    when, signum, argv = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    log = open(os.environ["DRIVER_LOG"], "w")  # a file: a survivor holding a pipe would block reading it
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 300
    def workers():
        found = []
        for pid in descendants(proc.pid):
            try:
                found.append(open(f"/proc/{pid}/cmdline", "rb").read())
            except OSError:
                pass
        return sum(b"multiprocessing" in c or b"torch" in c for c in found)
    def lines(pattern):
        n = 0
        for f in glob.glob(pattern):
            try:
                n += open(f, "rb").read().count(b"\\n")
            except OSError:
                pass
        return n
    def ready():
        if when.startswith("workers>="):
            return workers() >= int(when.split(">=")[1])
        if when.startswith("lines>="):  # lines>=N:GLOB: N lines in the files GLOB matches
            n, _, pattern = when[len("lines>="):].partition(":")
            return lines(pattern) >= int(n)
        return glob.glob(when)
    while time.monotonic() < deadline and proc.poll() is None:
        if ready():
            break
        time.sleep(0.05)
    seen = len(descendants(proc.pid))
    time.sleep(0.5)
    proc.send_signal(signum)
    proc.wait(timeout=240)
    out = open(os.environ["DRIVER_LOG"]).read()
    end = time.monotonic() + 3  # exited processes reaped; a process still running now outlived the command
    while time.monotonic() < end and [p for p in descendants() if _running(p)]:
        for p in descendants():
            try:
                os.waitpid(p, os.WNOHANG)
            except ChildProcessError:
                pass
        time.sleep(0.2)
    left = []
    for p in descendants():
        if _running(p):
            left.append(open(f"/proc/{p}/cmdline", "rb").read().replace(b"\\0", b" ").decode(errors="replace")[:200])
            os.kill(p, signal.SIGKILL)
    print(json.dumps({"code": proc.returncode, "out": out, "descendants_seen": seen, "left": left}))
""")


def drive(when: str, signum: int, argv: list[str], log: Path) -> dict:
    res = subprocess.run([sys.executable, "-c", DRIVER, when, str(int(signum)), *argv], capture_output=True, text=True,
                         timeout=400, env={**os.environ, "DRIVER_LOG": str(log)})  # fmt: skip
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout.strip().splitlines()[-1])


def long_bench(root: Path, pdfs: int = 4, pages: int = 40) -> Path:
    (root / "pdfs").mkdir(parents=True)
    records = []
    for i in range(pdfs):
        (root / "pdfs" / f"long{i}.pdf").write_bytes(pdf_bytes(pages))
        records += [
            {"pdf": f"long{i}.pdf", "page": p, "id": f"d{i}p{p}", "type": "present", "text": f"Page {p}"} for p in range(1, pages + 1)
        ]
    (root / "long_tests.jsonl").write_text(jsonl(records))
    return root


# ---------------------------------------------------------------------------------------------
# row 5: prepare's render workers die with it, kill -9 included
# ---------------------------------------------------------------------------------------------


def test_prepare_killed_with_sigkill_leaves_no_worker(tmp_path):
    bench = long_bench(tmp_path / "bench")
    out = tmp_path / "out"
    r = drive("workers>=2", signal.SIGKILL, [*CLI, "prepare", str(bench), str(out), "--quiet", "--workers", "2"], tmp_path / "log")
    assert r["code"] == -signal.SIGKILL and r["descendants_seen"] >= 2, r
    assert not (out / "prepared.json").exists(), "the run finished before it was killed"
    assert r["left"] == [], f"processes outlived the killed prepare: {r['left']}"
    # And the folder is usable: a re-run finishes it.
    res = invoke(["prepare", str(bench), str(out), "--quiet", "--workers", "1"])
    assert res.exit_code == 0, res.output
    assert (out / "prepared.json").is_file()


# ---------------------------------------------------------------------------------------------
# row 6: one command per output folder
# ---------------------------------------------------------------------------------------------


def test_folder_lock_is_exclusive_and_dies_with_its_holder(tmp_path):
    with folder_lock(tmp_path / "f", "prepare"):
        assert (tmp_path / "f" / LOCK_NAME).read_text() == f"pid {os.getpid()} (olmocr-rl prepare)\n"
        code = "import sys; from olmocr_rl.folder_lock import folder_lock\nwith folder_lock(sys.argv[1], 'x'): pass"
        other = subprocess.run([sys.executable, "-c", code, str(tmp_path / "f")], capture_output=True, text=True)
        assert other.returncode != 0 and f"in use by pid {os.getpid()} (olmocr-rl prepare)" in other.stderr
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from olmocr_rl.folder_lock import folder_lock\n"
                               "with folder_lock(sys.argv[1], 'train'):\n    print('held', flush=True); time.sleep(60)",
                               str(tmp_path / "g")], stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert holder.stdout.readline().strip() == "held"
    with pytest.raises(FolderBusy, match=f"in use by pid {holder.pid} \\(olmocr-rl train\\)"):
        with folder_lock(tmp_path / "g", "generate"):
            pass
    holder.kill()  # kill -9: the kernel drops the lock
    holder.wait()
    with folder_lock(tmp_path / "g", "generate"):
        pass


def test_a_holder_that_has_not_named_itself_yet_is_still_named(tmp_path):
    """The race two prepares run (CI saw "in use by another process"): the second asks while the
    first holds the fresh, still empty lock file; it waits briefly for the name."""
    folder = tmp_path / "f"
    folder.mkdir()
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl, os, sys, time\n"
                               "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT); fcntl.flock(fd, fcntl.LOCK_EX)\n"
                               "print('locked', flush=True); time.sleep(0.2); os.pwrite(fd, b'pid 7 (olmocr-rl prepare)', 0)\n"
                               "time.sleep(60)", str(folder / LOCK_NAME)], stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(FolderBusy, match="in use by pid 7 \\(olmocr-rl prepare\\)"):
            with folder_lock(folder, "prepare"):
                pass
    finally:
        holder.kill()
        holder.wait()


def test_a_machines_lock_refuses_a_second_job_of_that_machine_rank(tmp_path):
    """curate's and generate's machine M > 0 hold machine-M.lock in the job folder (through
    folder_lock): the same rank of a second job is refused, another rank is not."""
    from olmocr_rl.launch.pages import JobFolder

    folder = JobFolder(tmp_path / "job")
    with folder.machine_lock(1):
        with pytest.raises(FolderBusy, match="machine rank 1 of another job on this output is running"):
            with JobFolder(tmp_path / "job").machine_lock(1):
                pass
        with folder.machine_lock(2):
            pass
    with folder.machine_lock(1):  # released with the block
        pass


def hold(folder: Path) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", "import sys, time; from olmocr_rl.folder_lock import folder_lock\n"
                             "with folder_lock(sys.argv[1], 'prepare'):\n    print('held', flush=True); time.sleep(120)",
                             str(folder)], stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_second_prepare_generate_or_train_on_a_busy_folder_fails_at_once(tmp_path, prepared, tiny_model):
    bench = long_bench(tmp_path / "bench", pdfs=1, pages=2)
    for args, folder in [
        (["prepare", bench, tmp_path / "p"], tmp_path / "p"),
        (["generate", tiny_model, bench, "-c", "cand", "-q"], bench / "cand"),
        (["train", prepared, "--model", tiny_model, "-o", tmp_path / "run", "--config", RECIPE], tmp_path / "run"),
    ]:
        holder = hold(folder)
        try:
            start = time.monotonic()
            res = invoke(args)
            assert res.exit_code == 1, res.output
            assert f"error: {folder} is in use by pid {holder.pid} (olmocr-rl prepare)" in res.stderr, res.output
            assert time.monotonic() - start < 60
            assert sorted(p.name for p in folder.iterdir()) == [LOCK_NAME], "the second run wrote into the folder"
        finally:
            holder.kill()
            holder.wait()


def test_two_prepares_racing_on_one_folder(tmp_path):
    """The race the issue saw (the first to finish deleted the other's .tmp/, both exited 0):
    one finishes, the other fails naming it, and the output is complete."""
    bench = long_bench(tmp_path / "bench", pdfs=2, pages=30)
    out = tmp_path / "out"
    procs = [subprocess.Popen([*CLI, "prepare", str(bench), str(out), "--quiet", "--workers", "1"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]  # fmt: skip
    results = [(p.wait(timeout=300), p.stderr.read()) for p in procs]
    codes = sorted(code for code, _ in results)
    assert codes == [0, 1], results
    assert any("is in use by pid" in err for _, err in results)
    assert (
        json.loads((out / "prepared.json").read_text())["splits"]["train"]
        + json.loads((out / "prepared.json").read_text())["splits"]["eval"]
        == 60
    )


# ---------------------------------------------------------------------------------------------
# rows 13-15: a model that cannot load writes nothing; an unknown launcher is refused
# ---------------------------------------------------------------------------------------------


def test_generate_with_a_model_that_cannot_load_leaves_no_candidate(tmp_path):
    bench = long_bench(tmp_path / "bench", pdfs=1, pages=2)
    res = invoke(["generate", tmp_path / "no" / "such", bench, "-c", "y", "-q"])
    assert (
        res.exit_code == 1
        and f"error: MODEL {tmp_path / 'no' / 'such'}: no such model folder (nothing named no in {tmp_path})" in res.stderr
    ), res.output
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text("{}")  # a folder that looks like a model and does not load
    res = invoke(["generate", broken, bench, "-c", "y", "-q"])
    assert res.exit_code == 1 and f"cannot load the processor of {broken}" in res.stderr, res.output  # names the model
    assert not (bench / "y").exists(), "a failed run left a candidate folder for bench to list"
    res = invoke(["bench", bench])
    assert "y" not in res.output.split(), res.output


def test_train_with_no_such_model_folder_writes_nothing(tmp_path, prepared):
    out = tmp_path / "run"
    res = invoke(["train", prepared, "--model", "/no/such/folder", "-o", out, "--config", RECIPE])
    assert res.exit_code == 1, res.output
    assert "--model /no/such/folder: no such model folder (nothing named no in /)" in res.output and "Repo id" not in res.output
    assert not out.exists()


@pytest.mark.parametrize("extra", [[], ["--num-processes", "2"]])
def test_unknown_launcher_is_refused_for_any_world_size(tmp_path, prepared, tiny_model, extra):
    res = invoke(["train", prepared, "--model", tiny_model, "-o", tmp_path / "run", "--launcher", "foo", "--dry-run", *extra])
    assert res.exit_code == 1 and "error: --launcher 'foo': choose accelerate or deepspeed" in res.stderr, res.output


# ---------------------------------------------------------------------------------------------
# rows 7 and 20: train stopped by SIGTERM; what a run prints
# ---------------------------------------------------------------------------------------------


def test_train_stopped_by_sigterm_leaves_no_process_and_says_how_to_resume(tmp_path, prepared, tiny_model):
    out = tmp_path / "run"
    argv = [*CLI, "train", str(prepared), "--model", str(tiny_model), "-o", str(out), "--config", str(RECIPE),
            "max_steps=200", "save_steps=1", "dataloader_num_workers=2", "dataloader_persistent_workers=true",
            "final_outputs=none"]  # fmt: skip
    r = drive(str(out / "checkpoint-1" / "trainer_state.json"), signal.SIGTERM, argv, tmp_path / "log")
    assert r["code"] == 130 and r["descendants_seen"] >= 2, (r["descendants_seen"], r["out"][-3000:])  # DataLoader workers
    assert not (out / "checkpoint-200").exists()
    assert "Last checkpoint: " in r["out"] and "--resume auto" in r["out"], r["out"][-3000:]
    assert r["left"] == [], f"processes outlived the stopped train: {r['left']}"


def test_a_signal_is_not_taken_for_a_librarys_error_and_is_remembered():
    """A stop signal landing in a library's `except Exception` (one that goes on after its own
    errors) still stops the block, and `interrupted()` says so until the block ends."""
    from olmocr_rl.procs import Interrupted, interrupted, interrupts

    def library_call() -> str:
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # the handler runs here
            return "finished"
        except Exception:  # a library's own errors
            return "went on"

    with pytest.raises(Interrupted), interrupts():
        assert interrupted() is None
        library_call()
    with interrupts():
        try:
            library_call()
        except Interrupted:
            pass
        assert interrupted() == signal.SIGTERM
    assert interrupted() is None


def test_train_in_one_process_stops_at_the_end_of_the_step_a_lost_signal_came_in(tmp_path, prepared, tiny_model, monkeypatch):
    """The Interrupted raised where SIGTERM lands can be lost on its way up (a C extension's
    callback, a finalizer): training still ends with that step, as interrupted, saying how to resume."""
    from transformers import TrainerCallback

    import olmocr_rl.train.worker as worker

    class LosesTheSignal(TrainerCallback):
        def on_step_begin(self, args, state, control, **kwargs):
            if state.global_step == 1:
                try:
                    os.kill(os.getpid(), signal.SIGTERM)
                    time.sleep(5)
                except BaseException:  # what the callback stands in for
                    pass

    made = worker._callbacks
    monkeypatch.setattr(worker, "_callbacks", lambda *a: (lambda r: ([*r[0], LosesTheSignal()], *r[1:]))(made(*a)))
    out = tmp_path / "run"
    res = invoke(["train", prepared, "--model", tiny_model, "-o", out, "--config", RECIPE, "max_steps=6", "save_steps=1",
                  "final_outputs=none", "progress=false"])  # fmt: skip
    assert res.exit_code == 130 and "interrupted (SIGTERM)" in res.stderr and "--resume auto" in res.stderr, res.stderr[-3000:]
    assert sorted(p.name for p in out.glob("checkpoint-*")) == ["checkpoint-1"]


def test_train_console_is_compact_and_quiet(tmp_path, prepared, tiny_model):
    out = tmp_path / "run"
    res = subprocess.run([*CLI, "train", str(prepared), "--model", str(tiny_model), "-o", str(out), "--config", str(RECIPE)],
                         capture_output=True, text=True, timeout=600)  # fmt: skip
    printed = res.stdout + res.stderr
    assert res.returncode == 0, printed[-3000:]
    lines = printed.splitlines()
    assert "Transcribe" not in printed and "front matter" not in printed.split("outputs:")[0], "the prompt was printed"
    assert "Setting accelerator to CPU" not in printed and "Loading weights" not in printed, printed[:2000]
    assert any(" p1 " in line and ".pdf" in line for line in lines), "completions table without page ids"
    assert len(lines) < 60, f"{len(lines)} lines:\n{printed}"


def test_compact_table_one_line_per_completion_escaped_and_not_repeated(capsys):
    from olmocr_rl.train.console import CompletionsTable

    compact_completions_table = CompletionsTable()
    prompts = [[{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "a long instruction " * 50}]}]] * 3
    completions = ["[bold red]evil[/]\nline two " + "x" * 500, "short", "third"]
    extra = {"page": ["a.pdf p1", "a.pdf p1", "b.pdf p2"], "failed_tests": ["t1,t2", "", "t3"]}
    compact_completions_table(prompts, completions, {"olmocr_bench": [0.5, 1.0, 0.25]}, [0.1, 0.2, -0.3], 7, None, extra)
    shown = capsys.readouterr().out
    assert "instruction" not in shown and "[bold red]evil[/]⏎line two" in shown
    body = [line for line in shown.splitlines() if line.startswith("│")]
    assert len(body) == 3 and "2: t1, …" in body[0] and "0" in body[1] and "b.pdf p2" in body[2]
    compact_completions_table(prompts, completions, {"olmocr_bench": [0.5, 1.0, 0.25]}, [0.1, 0.2, -0.3], 7, None, extra)
    assert capsys.readouterr().out == "", "the same table printed twice"


def test_compact_table_says_train_or_eval(capsys):
    """Issue 37, row 6: the table names the mode trl's GRPOTrainer.log is in (the trainer's `log`
    passes it: olmocr_rl/train/trainer.py), so eval completions are not titled like train ones; the
    same completions in the other mode are a new table."""
    from olmocr_rl.train.console import CompletionsTable

    table = CompletionsTable()

    def log(mode: str) -> None:
        table([[]] * 2, ["a", "b"], {"olmocr_bench": [0.5, 1.0]}, [0.1, -0.1], 3, None, {"page": ["x p1"] * 2}, mode=mode)

    log("train")
    assert capsys.readouterr().out.splitlines()[0].strip() == "train completions, step 3: 2 of 2"
    log("eval")
    assert capsys.readouterr().out.splitlines()[0].strip() == "eval completions, step 3: 2 of 2"
    table([[]], ["c"], {"olmocr_bench": [0.5]}, None, 4, None, {})  # no mode given: none named
    assert capsys.readouterr().out.splitlines()[0].strip() == "step 4: 1 of 1 completions"
