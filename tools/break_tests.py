#!/usr/bin/env python3
"""Test of the tests: break the code on purpose and show that the tests catch it.

Each BREAKAGE below changes olmocr_rl in a scratch copy of the package (the installed one, with its
built extension, copied to a temporary folder and put first on PYTHONPATH, so every process the
tests start, CLI and training ranks included, loads the broken copy), then runs the tests meant to
catch it. A breakage is caught when at least one of them fails. First the same tests run on an
unbroken copy (the control): they must pass there, or a failure would prove nothing.

    .venv/bin/python tools/break_tests.py                    # all, with controls
    .venv/bin/python tools/break_tests.py --only resume-base-model --no-control

The breakages are the ones issue 27's audit found uncaught, plus its two controls, and issue 33's:
the six settings an engine builder must hand on (prompt layout, placeholder suppression, pixel
bounds, seed) that no test caught, and its four defects; and issue 36's: per-page seeds, parts
merged, a killed job's parts taken, workers dying with a killed command. Each edit must
match the source exactly once; when the code moves, the script says so instead of testing nothing.
Exit status 0 when every breakage is caught (and every control passes).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Breakage:
    name: str
    what: str
    file: str  # inside the olmocr_rl package
    edits: list[tuple[str, str]]  # (exact old text, new text)
    tests: list[str]  # pytest node ids (relative to the repository root)


BREAKAGES = [
    Breakage(
        "resume-base-model",
        "resume loads the base model instead of the checkpoint",
        "train/worker.py",
        [("model = load_model(cfg, bf16=bool(args.bf16), deepspeed=deepspeed_active(), path=full_ckpt)",
          "model = load_model(cfg, bf16=bool(args.bf16), deepspeed=deepspeed_active(), path=None)")],
        ["tests/test_train.py::test_resume_continues_from_the_checkpoint",  # the old test: steps and logs only
         "tests/test_resume.py::test_killed_then_resumed_equals_uninterrupted[one-process]"],
    ),
    Breakage(
        "generate-never-samples",
        "`generate` never samples (temperature ignored)",
        "engines.py",
        [('gen: dict[str, Any] = {"max_new_tokens": max_new_tokens, "do_sample": temperature > 0}',
          'gen: dict[str, Any] = {"max_new_tokens": max_new_tokens, "do_sample": False}')],
        ["tests/test_generate.py::test_generate_writes_what_bench_reads_and_resumes",  # the old test
         "tests/test_generate.py::test_temperature_samples_each_repeat_and_seed_fixes_them"],
    ),
    Breakage(
        "report-max-completions",
        "`report` ignores --max-completions",
        "report/run.py",
        [("chosen = entries[:max_completions]", "chosen = entries")],
        ["tests/test_reports.py::test_run_report_views",  # the old test: the fixture never reaches the cap
         "tests/test_options.py::test_report_max_completions_and_output"],
    ),
    Breakage(
        "bench-max-reports",
        "`bench --report` ignores --max-reports",
        "bench/plan.py",
        [("bench_report(summary, options.report, max_reports=options.max_reports,", "bench_report(summary, options.report, max_reports=None,")],
        ["tests/test_reports.py::test_bench_report_views",
         "tests/test_reports.py::test_bench_report_states_sample_and_max_reports"],
    ),
    Breakage(
        "bootstrap-confidence-level",
        "the bootstrap ignores --confidence-level",
        "bench/plan.py",
        [("confidence_level=options.confidence_level,", "confidence_level=0.95,")],
        ["tests/test_bench.py::test_bootstrap_is_seeded_and_sensible",  # the old test: only 0.95, through the API
         "tests/test_options.py::test_bench_interval_options"],
    ),
    Breakage(
        "long-page-error",
        "pages over 500 k characters get an error verdict",
        "suite.py",
        [('''        v = self._core.check(test_id, text, self._guard(guard))
        return CheckResult(v.passed, v.explanation, v.error)''',
          '''        v = self._core.check(test_id, text, self._guard(guard))
        if len(text) > 500_000:
            return CheckResult(False, "error: page too long", True)
        return CheckResult(v.passed, v.explanation, v.error)'''),
         ('''        return [[CheckResult(v.passed, v.explanation, v.error) for v in page] for page in rows]

    def check_files(''',
          '''        return [[CheckResult(False, "error: page too long", True) if len(t) > 500_000 else CheckResult(v.passed, v.explanation, v.error)
                 for v in page] for (t, _), page in zip(pages, rows)]

    def check_files(''')],
        ["tests/test_robustness.py::test_adversarial_megabyte_inputs_get_the_short_copys_verdicts[letters_a]",
         "tests/test_robustness.py::test_adversarial_megabyte_inputs_get_the_short_copys_verdicts[cjk]",
         "tests/test_table_props.py::test_ten_megabytes_of_nesting_gets_the_short_copys_verdict[<td>]"],
    ),
    Breakage(
        "katex-hard-error-off",
        "control: the missing-KaTeX hard error disabled",
        "suite.py",
        [('problem = _core.katex_problem() if math_tests else None', 'problem = None')],
        ["tests/test_environment.py::test_bench_stops_before_checking",
         "tests/test_environment.py::test_train_preflight_fails_before_launching"],
    ),
    Breakage(
        "server-stop-leaks-group",
        "control: the vLLM server's stop leaks its process group",
        "procs.py",
        [('''                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, first)
        _signal(self.alive(), first)''', '''                with contextlib.suppress(ProcessLookupError, PermissionError):
                    proc.send_signal(first)'''),
         ('''            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
        _signal(self.alive(), signal.SIGKILL)''', '''            with contextlib.suppress(ProcessLookupError, PermissionError):
                proc.kill()''')],
        ["tests/test_vllm_server.py::test_healthy_server_training_succeeds_then_everything_stops"],
    ),
    # --- issue 33: what every command that builds an engine hands it (tests/test_engine_boundary.py)
    Breakage(
        "curate-ignores-layout",
        "`curate` ignores the olmOCR v4 layout (the image always first)",
        "curate/sampling.py",
        [("conversations = [row_conversation(p.row) for p in group]", 'conversations = [row_conversation({"prompt": p.row["prompt"]}) for p in group]')],
        ["tests/test_engine_boundary.py::test_curate_transformers", "tests/test_engine_boundary.py::test_curate_vllm"],
    ),
    Breakage(
        "generate-ignores-layout",
        "`generate` (and the final outputs) ignore the olmOCR v4 layout",
        "generate.py",
        [("conversations = [row_conversation(r) for r in chunk]", 'conversations = [row_conversation({"prompt": r["prompt"]}) for r in chunk]')],
        ["tests/test_engine_boundary.py::test_generate_transformers", "tests/test_engine_boundary.py::test_generate_vllm"],
    ),
    Breakage(
        "generate-no-suppression",
        "the transformers engine (generate, curate, final outputs) drops the placeholder suppression",
        "engines.py",
        [("gen.update(transformers_suppression(model.config))  # placeholders are never sampled", "pass")],
        ["tests/test_engine_boundary.py::test_generate_transformers", "tests/test_engine_boundary.py::test_curate_transformers"],
    ),
    Breakage(
        "train-no-suppression",
        "training without vLLM drops the placeholder suppression",
        "train/grpo.py",
        [("suppression = vllm_suppression(config) if cfg.use_vllm else transformers_suppression(config)",
          "suppression = vllm_suppression(config) if cfg.use_vllm else {}")],
        ["tests/test_engine_boundary.py::test_train_without_vllm_and_its_final_outputs"],
    ),
    Breakage(
        "vllm-no-pixel-bounds",
        "the offline vLLM engine (generate, curate --engine vllm) gets no pixel bounds",
        "engines.py",
        [("if bounds := settings.pixel_bounds():", "if bounds := {}:")],
        ["tests/test_engine_boundary.py::test_curate_vllm", "tests/test_engine_boundary.py::test_generate_vllm"],
    ),
    Breakage(
        "curate-drops-max-pixels",
        "`curate` builds its engine without the training config's max_pixels",
        "cli/curate.py",
        [("engine_settings(cfg, eager=eager)", '__import__("dataclasses").replace(engine_settings(cfg, eager=eager), max_pixels=None)')],
        ["tests/test_engine_boundary.py::test_curate_transformers", "tests/test_engine_boundary.py::test_curate_vllm"],
    ),
    Breakage(
        "engine-ignores-seed",
        "the transformers engine samples without the run's seed",
        "engines.py",
        [("torch.manual_seed(seeds[0])  # CPU and every GPU", "torch.manual_seed(0)")],
        ["tests/test_engine_boundary.py::test_generate_transformers", "tests/test_engine_boundary.py::test_curate_transformers"],
    ),
    Breakage(
        "prepare-split-in-place",
        "`prepare` writes its split files in place",
        "prepare.py",
        [('_write_bytes(out / f"{split}.jsonl", b"".join(_dumps(r) + b"\\n" for r in rows))',
          '(out / f"{split}.jsonl").write_bytes(b"".join(_dumps(r) + b"\\n" for r in rows))')],
        ["tests/test_prepare.py::test_the_split_and_test_files_are_written_whole_or_not_at_all[train.jsonl]"],
    ),
    # --- issue 33's defects, put back
    Breakage(
        "final-outputs-twice",
        "the ranks `olmocr-rl train` launched write the final outputs as well as the command",
        "train/plan.py",
        [('env[PARENT_ENV] = "1"', "pass")],
        ["tests/test_train_launch.py::test_the_final_outputs_have_one_writer[accelerate, one machine]"],
    ),
    Breakage(
        "final-outputs-in-place",
        "the final outputs' PDFs and tests are written in place",
        "train/outputs.py",
        [('with src.open("rb") as f, atomic_write(dst, "wb") as g:\n                shutil.copyfileobj(f, g)', "shutil.copyfile(src, dst)"),
         ('write_text(target, "\\n".join(keep) + "\\n")', 'target.write_text("\\n".join(keep) + "\\n")')],
        ["tests/test_raw_line_ends.py::test_the_final_outputs_bench_folder_is_written_whole_or_not_at_all"],
    ),
    Breakage(
        "final-outputs-splitlines",
        "the final outputs read the prepared tests with str.splitlines (U+2028 cuts a record)",
        "train/outputs.py",
        [("lines = read_jsonl(f).lines", 'lines = f.read_text(encoding="utf-8").splitlines()')],
        ["tests/test_raw_line_ends.py::test_the_final_outputs_bench_folder_keeps_the_records_whole"],
    ),
    Breakage(
        "resolved-config-drops-a-field",
        "the resolved config the ranks read leaves out a field",
        "train/config.py",
        [("for f in dataclasses.fields(self)}", 'for f in dataclasses.fields(self) if f.name != "final_batch_size"}')],
        ["tests/test_config_reaches_ranks.py::test_every_key_set_on_the_command_line_reaches_a_rank"],
    ),
    # --- issue 36: curate and generate on several workers (tests/test_page_workers.py)
    Breakage(
        "seed-per-engine",
        "the transformers engine samples from one stream per engine, not per page (the result depends on the workers)",
        "engines.py",
        [("torch.manual_seed(seeds[0])  # CPU and every GPU", "pass")],
        ["tests/test_page_workers.py::test_curate_one_and_two_workers_write_the_same_records",
         "tests/test_page_workers.py::test_generate_one_and_two_workers_write_identical_files_and_one_progress_line"],
    ),
    Breakage(
        "transformers-mixes-pages",
        "the transformers engine puts several pages in one call (one random stream for all)",
        "engines.py",
        [("token_counter(processor, max_new_tokens), mixes_pages=False,", "token_counter(processor, max_new_tokens), mixes_pages=True,")],
        ["tests/test_page_workers.py::test_curate_one_and_two_workers_write_the_same_records",
         "tests/test_generate.py::test_batch_size_is_the_pages_per_generate_call"],
    ),
    Breakage(
        "vllm-no-request-seed",
        "vLLM's requests carry no seed of their page",
        "engines.py",
        [("max_tokens=max_tokens, seed=int(s), **suppression", "max_tokens=max_tokens, **suppression")],
        ["tests/test_engine_boundary.py::test_generate_vllm", "tests/test_engine_boundary.py::test_curate_vllm",
         "tests/test_generate.py::test_vllm_engine_at_its_boundary"],
    ),
    Breakage(
        "curate-parts-not-merged",
        "curate's workers' parts are not merged into the difficulty file",
        "curate/parallel.py",
        [("scored = merge_parts(folder, file, {p.id: i for i, p in enumerate(pages)}, skip_busy=True)", "scored = 0")],
        ["tests/test_page_workers.py::test_curate_one_and_two_workers_write_the_same_records"],
    ),
    Breakage(
        "killed-parts-ignored",
        "a rerun does not take the parts a killed curate left (their pages are sampled again)",
        "curate/parallel.py",
        [("if merged := merge_parts(folder, file):", "if merged := 0:")],
        ["tests/test_page_workers.py::test_curate_killed_with_sigkill_midway_then_rerun_gives_the_same_records"],
    ),
    Breakage(
        "launcher-outlives-kill",
        "the launcher is started without a parent-death signal (kill -9 of the command leaves the workers)",
        "procs.py",
        [("start_new_session=True, preexec_fn=_die_with_parent, **kwargs)", "start_new_session=True, **kwargs)")],
        ["tests/test_page_workers.py::test_generate_killed_with_sigkill_midway_then_rerun_writes_the_same_files"],
    ),
    Breakage(
        "worker-sees-every-gpu",
        "a worker does not take its own GPUs (every engine on the first ones)",
        "launch/worker.py",
        [('    env["CUDA_VISIBLE_DEVICES"] = mine\n', "")],
        ["tests/test_page_workers.py::test_vllm_workers_take_their_gpus_and_every_request_its_pages_seed"],
    ),
]  # fmt: skip


def installed_package() -> Path:
    out = subprocess.run([sys.executable, "-c", "import olmocr_rl, os; print(os.path.dirname(olmocr_rl.__file__))"],
                         capture_output=True, text=True, check=True, cwd="/")  # fmt: skip
    return Path(out.stdout.strip())


def scratch_copy(dest: Path) -> Path:
    pkg = dest / "olmocr_rl"
    shutil.copytree(installed_package(), pkg, ignore=shutil.ignore_patterns("__pycache__"))
    return pkg


def apply(pkg: Path, b: Breakage) -> None:
    path = pkg / b.file
    text = path.read_text()
    for old, new in b.edits:
        n = text.count(old)
        if n != 1:
            raise SystemExit(f"{b.name}: the text to change occurs {n} times in olmocr_rl/{b.file} (the code moved?):\n{old}")
        text = text.replace(old, new)
    path.write_text(text)


def run_tests(pkg_root: Path, tests: list[str]) -> dict[str, str]:
    """{test: 'passed' | 'failed' | ...} with the scratch package first on PYTHONPATH."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(pkg_root), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
           "OLMOCR_RL_STRICT": "1"}  # fmt: skip
    # Run from the scratch folder: `python -m ...` (the CLI's workers, accelerate's ranks) puts the
    # working directory first on sys.path, which from the repository would be the unbroken package.
    where = subprocess.run([sys.executable, "-c", "import olmocr_rl; print(olmocr_rl.__file__)"], env=env, cwd=pkg_root,
                           capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    if not Path(where).is_relative_to(pkg_root):
        raise SystemExit(f"the scratch copy is not the one imported: {where}")
    report = pkg_root / "report.txt"
    pytest = Path(sys.executable).parent / "pytest"
    cmd = [str(pytest), "-q", "-p", "no:cacheprovider", "--hypothesis-profile=ci", "-rA", "--rootdir", str(ROOT),
           *(str(ROOT / t) for t in tests)]  # fmt: skip
    proc = subprocess.run(cmd, env=env, cwd=pkg_root, capture_output=True, text=True)
    report.write_text(proc.stdout + proc.stderr)
    outcomes = {}
    for line in proc.stdout.splitlines():
        for word in ("PASSED", "FAILED", "ERROR", "SKIPPED", "XFAIL", "XPASS"):
            if line.startswith(word + " "):
                node = line[len(word) + 1 :].split(" - ")[0].strip()
                node = node[node.find("tests/") :] if "tests/" in node else node  # printed relative to the working folder
                outcomes[node] = word.lower()
    for t in tests:
        outcomes.setdefault(t, "not run")
    return {t: outcomes.get(t, "not run") for t in tests}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", action="append", help="run these breakages only (repeatable)")
    ap.add_argument("--no-control", action="store_true", help="skip the runs on the unbroken copy")
    ap.add_argument("--keep", action="store_true", help="keep the scratch folders (their report.txt has pytest's output)")
    args = ap.parse_args()
    chosen = [b for b in BREAKAGES if not args.only or b.name in args.only]
    if args.only and len(chosen) != len(args.only):
        raise SystemExit(f"unknown breakage; choose from {', '.join(b.name for b in BREAKAGES)}")
    print(f"olmocr_rl under test: {installed_package()} (copied per breakage, loaded ahead of it)\n")
    rows, ok = [], True
    for b in chosen:
        t0 = time.monotonic()
        control = "skipped"
        if not args.no_control:
            with tempfile.TemporaryDirectory(prefix=f"control-{b.name}-") as tmp:
                pkg = scratch_copy(Path(tmp))
                results = run_tests(pkg.parent, b.tests)
                control = "passed" if set(results.values()) == {"passed"} else f"FAILED {results}"
        tmp = tempfile.mkdtemp(prefix=f"broken-{b.name}-")
        pkg = scratch_copy(Path(tmp))
        apply(pkg, b)
        results = run_tests(pkg.parent, b.tests)
        caught = [t for t, r in results.items() if r in ("failed", "error")]
        missed = [t for t, r in results.items() if r == "passed"]
        good = bool(caught) and control in ("passed", "skipped")
        ok &= good
        rows.append((b, control, caught, missed, time.monotonic() - t0))
        print(f"[{'caught' if caught else 'NOT CAUGHT'}] {b.what}  ({b.name}, olmocr_rl/{b.file}; {time.monotonic() - t0:.0f} s)")
        print(f"    control (unbroken copy): {control}")
        for t in caught:
            print(f"    fails:  {t}")
        for t in missed:
            print(f"    passes: {t}")
        if args.keep or not good:
            print(f"    pytest output: {pkg.parent / 'report.txt'}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
        print(flush=True)
    print("| deliberate breakage | caught? | by |")
    print("|---|---|---|")
    for b, control, caught, _missed, _s in rows:
        by = ", ".join(f"`{t.split('/')[-1]}`" for t in caught) or "-"
        print(f"| {b.what} | {'yes' if caught else '**no**'}{'' if control in ('passed', 'skipped') else ' (control failed)'} | {by} |")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
