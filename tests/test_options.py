"""Every option of every command is exercised for its effect by some test, through the command line.

EFFECTS names, for each option, the test that passes it and checks what it does; the first test here
fails when a command gains an option without one, or when a named test no longer passes that option.
The tests below cover the options no other file does (bench's interval, prepare's page selection,
split, prompt and patch size, probe's threads, report's cap and file, train's launcher flags, shell
completion)."""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import typer
from clirun import invoke
from training import FIXTURES, RECIPE, build_model

from olmocr_rl.cli import app

HERE = Path(__file__).resolve().parent

# (command, first option string) -> the test ("file::function") that exercises it, or (test, marker)
# where the test reaches the option another way (the string `marker` in its source says how).
EFFECTS: dict[tuple[str, str], str | tuple[str, str]] = {
    ("", "--version"): "test_cli.py::test_every_command_is_listed_and_version_works",
    ("", "--debug"): "test_cli.py::test_an_unexpected_error_is_one_line_unless_debug",
    ("", "--install-completion"): "test_options.py::test_shell_completion_installs_into_home",
    ("", "--show-completion"): "test_cli.py::test_shell_completion_is_offered",
    ("validate", "--help"): "test_suite.py::test_help_and_version_do_not_import_heavy_modules",
    ("check", "--test"): "test_suite.py::test_cli_validate_and_check",
    ("check", "--pdf"): "test_suite.py::test_cli_validate_and_check",
    ("check", "--json"): "test_suite.py::test_cli_validate_and_check",
    ("check", "--guard"): "test_guard.py::test_bench_and_check_keep_the_published_semantics_unless_asked",
    ("bench", "--candidate"): "test_bench.py::test_terminal_report_and_progress_free_output",
    ("bench", "--details"): "test_bench.py::test_details_file_and_json_output",
    ("bench", "--json"): "test_bench.py::test_details_file_and_json_output",
    ("bench", "--skip-baseline"): "test_guard.py::test_bench_and_check_keep_the_published_semantics_unless_asked",
    ("bench", "--force"): "test_bench.py::test_user_errors_are_one_clear_message",
    ("bench", "--workers"): "test_options.py::test_bench_and_probe_workers_size_the_pool",
    ("bench", "--bootstrap-samples"): "test_options.py::test_bench_interval_options",
    ("bench", "--confidence-level"): "test_options.py::test_bench_interval_options",
    ("bench", "--seed"): "test_options.py::test_bench_interval_options",
    ("bench", "--show-failures"): "test_bench.py::test_terminal_report_and_progress_free_output",
    ("bench", "--compare"): "test_compare.py::test_compare_on_the_command_line",
    ("bench", "--report"): "test_reports.py::test_bench_report_views",
    ("bench", "--max-reports"): "test_reports.py::test_bench_report_states_sample_and_max_reports",
    ("bench", "--sample"): "test_reports.py::test_bench_sample_and_output_failed",
    ("bench", "--guard"): "test_guard.py::test_bench_and_check_keep_the_published_semantics_unless_asked",
    ("bench", "--strict"): "test_hostile_folders.py::test_strict_makes_failures_an_exit_status",
    ("check", "--strict"): "test_hostile_folders.py::test_strict_makes_failures_an_exit_status",
    ("bench", "--output-failed"): "test_reports.py::test_bench_sample_and_output_failed",
    ("probe", "--flag-share"): "test_probe.py::test_cli_json_details_and_text",
    ("probe", "--details"): "test_probe.py::test_cli_json_details_and_text",
    ("probe", "--json"): "test_probe.py::test_cli_json_details_and_text",
    ("probe", "--workers"): "test_options.py::test_bench_and_probe_workers_size_the_pool",
    ("prepare", "--longest-side"): "test_options.py::test_prepare_options",
    ("prepare", "--jsonl-filter"): "test_options.py::test_prepare_options",
    ("prepare", "--type-filter"): "test_options.py::test_prepare_options",
    ("prepare", "--max-pages"): "test_options.py::test_prepare_options",
    ("prepare", "--eval-fraction"): "test_options.py::test_prepare_options",
    ("prepare", "--eval-dir"): "test_options.py::test_prepare_options",
    ("prepare", "--seed"): "test_options.py::test_prepare_options",
    ("prepare", "--workers"): "test_prepare.py::test_killed_run_resumes_to_the_same_output",
    ("prepare", "--prompt"): "test_options.py::test_prepare_options",
    ("prepare", "--prompt-file"): "test_prepare.py::test_prompt_files",
    ("prepare", "--patch-size"): "test_options.py::test_prepare_options",
    ("prepare", "--processor"): "test_options.py::test_prepare_options",
    ("prepare", "--strict"): "test_prepare.py::test_cli_prints_report_and_strict_fails",
    ("prepare", "--quiet"): "test_options.py::test_prepare_quiet_hides_the_progress_bar",
    ("generate", "--candidate"): "test_generate.py::test_generate_writes_what_bench_reads_and_resumes",
    ("generate", "--repeats"): "test_generate.py::test_temperature_samples_each_repeat_and_seed_fixes_them",
    ("generate", "--temperature"): "test_generate.py::test_temperature_samples_each_repeat_and_seed_fixes_them",
    ("generate", "--max-new-tokens"): "test_generate.py::test_max_new_tokens_and_longest_side",
    ("generate", "--batch-size"): "test_generate.py::test_batch_size_is_the_pages_per_generate_call",
    ("generate", "--engine"): "test_generate.py::test_vllm_engine_at_its_boundary",
    ("generate", "--prompt"): "test_generate.py::test_what_reaches_the_vllm_engine",
    ("generate", "--prompt-file"): "test_generate.py::test_what_reaches_the_vllm_engine",
    ("generate", "--longest-side"): "test_generate.py::test_max_new_tokens_and_longest_side",
    ("generate", "--raw"): "test_generate.py::test_what_reaches_the_vllm_engine",
    ("generate", "--seed"): "test_generate.py::test_temperature_samples_each_repeat_and_seed_fixes_them",
    ("generate", "--eager"): ("test_generate.py::test_what_reaches_the_vllm_engine", "--no-eager"),
    ("generate", "--quiet"): "test_generate.py::test_quiet_hides_the_progress_bar",
    ("generate", "--stop-loops"): "test_generate.py::test_stop_loops_writes_the_full_runs_files_where_the_loop_goes_on",
    ("generate", "--loop-rule"): "test_generate.py::test_stop_loops_reaches_the_vllm_engine",
    ("report", "--output"): "test_options.py::test_report_max_completions_and_output",
    ("report", "--max-completions"): "test_options.py::test_report_max_completions_and_output",
    ("soup", "--output"): "test_soup.py::test_cli",
    ("soup", "--overwrite"): "test_soup.py::test_cli",
    ("train", "--model"): "test_train.py::test_resume_continues_from_the_checkpoint",
    ("train", "--output-dir"): ("test_train.py::test_resume_continues_from_the_checkpoint", "-o"),
    ("train", "--config"): "test_train.py::test_resume_continues_from_the_checkpoint",
    ("train", "--set"): "test_train.py::test_cli_dry_run_prints_the_plan_and_rejects_bad_batches",
    ("train", "--resume"): "test_resume.py::test_killed_then_resumed_equals_uninterrupted",
    ("train", "--num-processes"): "test_options.py::test_train_launch_flags_reach_the_launcher",
    ("train", "--zero"): "test_train_distributed.py::test_zero2_two_ranks_train_save_and_resume",
    ("train", "--launcher"): "test_train_distributed.py::test_deepspeed_launcher_zero2_trains_saves_and_resumes",
    ("train", "--vllm-gpus"): "test_first_gpu_run.py::test_upstreams_launch_dry_run_prints_what_the_run_will_do",
    ("train", "--num-machines"): "test_options.py::test_train_launch_flags_reach_the_launcher",
    ("train", "--machine-rank"): "test_options.py::test_train_launch_flags_reach_the_launcher",
    ("train", "--main-process-ip"): "test_options.py::test_train_launch_flags_reach_the_launcher",
    ("train", "--main-process-port"): "test_options.py::test_train_launch_flags_reach_the_launcher",
    ("train", "--hostfile"): "test_options.py::test_train_launch_flags_reach_the_launcher",
    ("train", "--dry-run"): "test_options.py::test_train_launch_flags_reach_the_launcher",
    ("train", "--show-config"): "test_plan_estimates.py::test_upstreams_node_fits_and_plans_what_the_node_runs",
    ("train", "--gpus"): "test_plan_estimates.py::test_the_servers_share_must_hold_the_weights",
    ("train", "--gpu-memory"): "test_plan_estimates.py::test_the_servers_share_must_hold_the_weights",
    ("train", "--debug"): "test_cli.py::test_a_refused_trl_option_is_one_error_line",
    ("train", "--strict"): "test_first_gpu_run.py::test_checkpoints_that_do_not_fit_warn_and_strict_stops",
    ("train", "--quiet"): "test_train.py::test_resume_continues_from_the_checkpoint",
    # the `deepspeed` launcher passes --local_rank to every rank it starts
    ("train", "--local_rank"): (
        "test_train_distributed.py::test_deepspeed_launcher_zero2_trains_saves_and_resumes",
        "deepspeed.launcher.runner",
    ),
    ("train", "--options"): "test_cli.py::test_train_options_lists_every_config_key_with_help",
    ("train", "--overwrite"): "test_first_sight_train.py::test_overwrite_deletes_the_old_run_and_resume_drops_the_rows_it_logs_again",
    ("curate", "--model"): "test_curate.py::test_curate_with_the_tiny_model_then_train_reads_only_the_kept_pages",
    ("curate", "--samples"): "test_curate.py::test_curate_with_the_tiny_model_then_train_reads_only_the_kept_pages",
    ("curate", "--config"): "test_curate.py::test_curate_with_the_tiny_model_then_train_reads_only_the_kept_pages",
    ("curate", "--min-std"): "test_curate.py::test_curate_with_the_tiny_model_then_train_reads_only_the_kept_pages",
    ("curate", "--name"): "test_curate.py::test_curate_with_the_tiny_model_then_train_reads_only_the_kept_pages",
    ("curate", "--engine"): "test_curate.py::test_curate_options_for_their_effect",
    ("curate", "--eager"): ("test_curate.py::test_curate_options_for_their_effect", "--no-eager"),
    ("curate", "--batch-size"): "test_curate.py::test_curate_options_for_their_effect",
    ("curate", "--set"): "test_curate.py::test_curate_options_for_their_effect",
    ("curate", "--output"): "test_curate.py::test_curate_options_for_their_effect",
    ("curate", "--min-mean"): "test_curate.py::test_curate_options_for_their_effect",
    ("curate", "--max-mean"): "test_curate.py::test_curate_options_for_their_effect",
    ("curate", "--eval"): "test_curate.py::test_curate_options_for_their_effect",
    ("curate", "--quiet"): ("test_curate.py::test_curate_options_for_their_effect", "-q"),
    ("curate", "--stop-loops"): "test_curate.py::test_curate_stop_loops_scores_stopped_samples_as_the_full_run",
    ("curate", "--loop-rule"): "test_curate.py::test_curate_stop_loops_scores_stopped_samples_as_the_full_run",
    # curate's and generate's workers (issue 36): the launch options as train's, tensor parallel, the dry run
    ("generate", "--num-processes"): "test_page_workers.py::test_generate_one_and_two_workers_write_identical_files_and_one_progress_line",
    ("generate", "--tensor-parallel"): "test_generate.py::test_what_reaches_the_vllm_engine",
    ("generate", "--num-machines"): "test_page_workers.py::test_two_machines_write_what_one_process_writes",
    ("generate", "--machine-rank"): "test_page_workers.py::test_two_machines_write_what_one_process_writes",
    ("generate", "--main-process-ip"): "test_page_workers.py::test_two_machines_write_what_one_process_writes",
    ("generate", "--main-process-port"): "test_page_workers.py::test_two_machines_write_what_one_process_writes",
    ("generate", "--dry-run"): "test_page_workers.py::test_dry_run_shows_workers_gpus_and_pages_and_starts_nothing",
    ("curate", "--num-processes"): "test_page_workers.py::test_curate_one_and_two_workers_write_the_same_records",
    ("curate", "--tensor-parallel"): "test_curate.py::test_curate_options_for_their_effect",
    ("curate", "--num-machines"): "test_page_workers.py::test_dry_run_shows_workers_gpus_and_pages_and_starts_nothing",
    ("curate", "--machine-rank"): "test_page_workers.py::test_dry_run_shows_workers_gpus_and_pages_and_starts_nothing",
    ("curate", "--main-process-ip"): "test_page_workers.py::test_dry_run_shows_workers_gpus_and_pages_and_starts_nothing",
    ("curate", "--main-process-port"): "test_page_workers.py::test_dry_run_shows_workers_gpus_and_pages_and_starts_nothing",
    ("curate", "--dry-run"): "test_page_workers.py::test_dry_run_shows_workers_gpus_and_pages_and_starts_nothing",
    ("synth", "--name"): "test_synth.py::test_hostile_pages_reach_nothing_and_are_bounded",
    ("synth", "--page-timeout"): "test_synth.py::test_hostile_pages_reach_nothing_and_are_bounded",
    ("synth", "--page-memory"): "test_synth.py::test_hostile_pages_reach_nothing_and_are_bounded",
    ("synth", "--from-pdf"): "test_synth.py::test_from_pdf_against_a_standin_endpoint",
    ("synth", "--endpoint"): "test_synth.py::test_from_pdf_against_a_standin_endpoint",
    ("synth", "--model"): "test_synth.py::test_from_pdf_against_a_standin_endpoint",
    ("synth", "--exclude"): "test_synth.py::test_from_pdf_against_a_standin_endpoint",
    ("synth", "--concurrency"): "test_synth.py::test_from_pdf_against_a_standin_endpoint",
    ("synth", "--request-timeout"): "test_synth.py::test_from_pdf_against_a_standin_endpoint",
    ("synth", "--max-tokens"): "test_synth.py::test_from_pdf_against_a_standin_endpoint",
    ("synth", "--retries"): "test_synth.py::test_from_pdf_budget_all_pages_and_retries",
    ("synth", "--all-pages"): "test_synth.py::test_from_pdf_budget_all_pages_and_retries",
    ("synth", "--budget"): "test_synth.py::test_from_pdf_budget_all_pages_and_retries",
    ("synth", "--strict"): "test_synth.py::test_synth_validate_prepare_train_bench",
    ("synth", "--seed"): "test_synth.py::test_math_pages_empty_pages_counts_and_seeds",
    ("synth", "--keep-katex-math"): "test_synth.py::test_math_pages_empty_pages_counts_and_seeds",
    ("synth", "--quiet"): ("test_synth.py::test_synth_validate_prepare_train_bench", "-q"),
    ("install-katex", "--from-wheel"): "test_cli.py::test_install_katex_into_a_folder",
    ("install-katex", "--dir"): "test_cli.py::test_install_katex_into_a_folder",
}


def every_option() -> set[tuple[str, str]]:
    root = typer.main.get_command(app)
    found = {("", p.opts[0]) for p in root.params if p.opts[0].startswith("-") and p.name != "help"}
    for name, command in root.commands.items():
        options = [p for p in command.params if p.opts[0].startswith("-") and p.name != "help"]
        found |= {(name, p.opts[0]) for p in options} or {(name, "--help")}  # a command without options: its help
    return found


def functions_in(path: Path) -> dict[str, str]:
    source = path.read_text()
    return {n.name: ast.get_source_segment(source, n) for n in ast.parse(source).body if isinstance(n, ast.FunctionDef)}


def test_every_option_has_a_test_that_passes_it():
    assert set(EFFECTS) == every_option(), (
        f"options without an effect test: {sorted(every_option() - set(EFFECTS))}; stale entries: {sorted(set(EFFECTS) - every_option())}"
    )
    sources: dict[str, dict[str, str]] = {}
    missing = []
    for (command, option), entry in EFFECTS.items():
        test, marker = entry if isinstance(entry, tuple) else (entry, option)
        file, name = test.split("::")
        functions = sources.setdefault(file, functions_in(HERE / file))
        if name not in functions:
            missing.append(f"{command} {option}: {test} does not exist")
        elif not re.search(r"[\"'(]" + re.escape(marker) + r"[\"'=), ]", functions[name]):
            missing.append(f"{command} {option}: {test} does not mention {marker!r}")
    assert not missing, "\n".join(missing)


# ---------------------------------------------------------------------------------------------
# bench and probe
# ---------------------------------------------------------------------------------------------


def bench_json(*args: str) -> dict:
    res = invoke(["bench", str(FIXTURES), "--json", *args])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def intervals(summary: dict) -> dict[str, tuple[float, float]]:
    return {c["name"]: tuple(c["ci"]) for c in summary["candidates"]}


def test_bench_interval_options():
    """The bootstrap interval: a higher --confidence-level widens it around the same resamples (so
    the intervals nest), --seed and --bootstrap-samples change the resamples, the same seed repeats
    them; 0 samples compute none."""
    levels = [intervals(bench_json("--confidence-level", level)) for level in ("0.5", "0.8", "0.99")]
    for name in levels[0]:
        (a0, a1), (b0, b1), (c0, c1) = (lv[name] for lv in levels)
        assert c0 <= b0 < a0 <= a1 < b1 <= c1, (name, levels)
    default = bench_json()
    assert default["ci"] == {"level": 0.95, "samples": 1000, "seed": 0}
    assert intervals(bench_json("--seed", "0")) == intervals(default)
    seeded = bench_json("--seed", "7")
    assert seeded["ci"]["seed"] == 7 and intervals(seeded) != intervals(default)
    few = bench_json("--bootstrap-samples", "20")
    assert few["ci"]["samples"] == 20 and intervals(few) != intervals(default)
    none = bench_json("--bootstrap-samples", "0")
    assert {(c["ci"], c["ci_half_width"]) for c in none["candidates"]} == {(None, None)}  # no interval, rather than (0, 0)
    scores = {c["name"]: c["score"] for c in default["candidates"]}
    assert {c["name"]: c["score"] for c in none["candidates"]} == scores  # the interval only


def test_bench_and_probe_workers_size_the_pool(monkeypatch):
    """--workers N: the checks run on N threads (the value reaches the Rust pool)."""
    import olmocr_rl.bench.checking as checking
    from olmocr_rl import BenchSuite

    seen: list = []
    check_files = checking._check_files
    monkeypatch.setattr(
        checking, "_check_files", lambda *a, **k: seen.append(a[5] if len(a) > 5 else k.get("threads")) or check_files(*a, **k)
    )
    score = BenchSuite.score
    monkeypatch.setattr(BenchSuite, "score", lambda self, *a, **k: seen.append(("score", k.get("threads"))) or score(self, *a, **k))
    assert intervals(bench_json("--workers", "3")) == intervals(bench_json("--workers", "1"))
    assert seen[:1] == [3] and 1 in seen
    seen.clear()
    res = invoke(["probe", str(FIXTURES), "--workers", "2", "--json"])
    assert res.exit_code == 0, res.output
    assert seen and set(seen) == {("score", 2)}


# ---------------------------------------------------------------------------------------------
# prepare
# ---------------------------------------------------------------------------------------------


def prepare(out: Path, *args: str) -> tuple[list[dict], list[dict], dict]:
    res = invoke(["prepare", str(FIXTURES), str(out), "--longest-side", "84", "-q", *args])
    assert res.exit_code == 0, res.output

    def rows(split: str) -> list[dict]:
        return [json.loads(line) for line in (out / f"{split}.jsonl").read_text().splitlines()]

    return rows("train"), rows("eval"), json.loads((out / "prepared.json").read_text())["options"]


def pages(rows: list[dict]) -> set[tuple[str, int]]:
    return {(r["pdf"], r["page"]) for r in rows}


def test_prepare_options(tmp_path):
    from PIL import Image

    from olmocr_rl import BenchSuite
    from olmocr_rl.image_tokens import QWEN2_5_VL, ImageBudget, folder_budget
    from olmocr_rl.prompts import resolve_prompt

    QWEN3 = build_model(tmp_path / "qwen3_vl", "qwen3_vl")

    train, ev, opts = prepare(tmp_path / "default")
    assert len(train) == 4 and not ev and opts["longest_side"] == 84
    assert all(max(Image.open(tmp_path / "default" / r["image"]).size) == 84 for r in train)

    train, _, _ = prepare(tmp_path / "side", "--longest-side", "140")
    assert all(max(Image.open(tmp_path / "side" / r["image"]).size) == 140 for r in train)

    train, _, _ = prepare(tmp_path / "max", "--max-pages", "2")
    assert len(train) == 2

    train, _, _ = prepare(tmp_path / "jsonl", "--jsonl-filter", "report")
    assert pages(train) == {("reports/annual_report.pdf", 1), ("reports/annual_report.pdf", 2)}
    train, _, _ = prepare(tmp_path / "type", "--type-filter", "footnote")
    types = {BenchSuite.load(tmp_path / "type" / "tests").info(t).type for r in train for t in r["test_ids"]}
    assert train and types == {"footnote"}

    # The eval split: a fraction of the PDFs chosen by --seed, or a folder of its own.
    splits = {}
    for seed in range(6):
        train, ev, _ = prepare(tmp_path / f"seed{seed}", "--eval-fraction", "0.34", "--seed", str(seed))
        assert ev and not pages(train) & pages(ev) and len(train) + len(ev) == 4
        splits[seed] = frozenset(pages(ev))
    assert len(set(splits.values())) > 1, splits
    assert pages(prepare(tmp_path / "again", "--eval-fraction", "0.34", "--seed", "3")[1]) == splits[3]
    held = tmp_path / "held"
    (held / "pdfs" / "reports").mkdir(parents=True)
    shutil.copy(FIXTURES / "pdfs" / "reports" / "annual_report.pdf", held / "pdfs" / "reports" / "annual_report.pdf")
    tests = [json.loads(line) for line in (FIXTURES / "report_tests.jsonl").read_text().splitlines() if line.strip()]
    (held / "held_tests.jsonl").write_text("".join(json.dumps({**t, "id": "held_" + t["id"]}) + "\n" for t in tests))
    train, ev, opts = prepare(tmp_path / "evaldir", "--eval-dir", str(held))
    assert pages(ev) == {("reports/annual_report.pdf", 1), ("reports/annual_report.pdf", 2)} and len(train) == 4
    assert {t for r in ev for t in r["test_ids"]} == {"held_" + t["id"] for t in tests} and opts["eval_dir"] == str(held.resolve())

    # The report's image-token estimate: Qwen2.5-VL's by default, a named model's processor, the
    # deprecated --patch-size; the rows keep only the page size.
    reports = {}
    for name, args in {"default": [], "qwen3": ["--processor", str(QWEN3)], "patch": ["--patch-size", "32"]}.items():
        train, _, opts = prepare(tmp_path / f"tokens-{name}", *args, "--longest-side", "400")
        reports[name] = json.loads((tmp_path / f"tokens-{name}" / "report.json").read_text())["image_tokens"]
        assert all("image_tokens" not in r for r in train)
    budgets = {"default": QWEN2_5_VL, "qwen3": folder_budget(QWEN3), "patch": ImageBudget(32, 1, 3136, 12845056, "")}
    for name, budget in budgets.items():
        assert reports[name]["max"] == max(budget.tokens(r["width"], r["height"]) for r in train), name
    assert reports["qwen3"]["estimate_for"] == "processor_config.json" and reports["patch"]["estimate_for"] == "--patch-size 32"
    assert reports["default"]["max"] != reports["qwen3"]["max"]
    deprecated = invoke(["prepare", str(FIXTURES), str(tmp_path / "dep"), "--longest-side", "84", "-q", "--patch-size", "28"])
    assert "warning: --patch-size is deprecated" in deprecated.stderr
    missing = invoke(["prepare", str(FIXTURES), str(tmp_path / "nop"), "--longest-side", "84", "-q", "--processor", str(tmp_path)])
    assert missing.exit_code == 1 and "--processor" in missing.stderr and "no image processor config" in missing.stderr

    train, _, opts = prepare(tmp_path / "v4", "--prompt", "olmocr-v4")
    assert opts["prompt_name"] == "olmocr-v4" and {r["prompt"] for r in train} == {resolve_prompt("olmocr-v4").text}
    assert {r["prompt_layout"] for r in train} == {resolve_prompt("olmocr-v4").layout} != {resolve_prompt().layout}


def test_prepare_quiet_hides_the_progress_bar(tmp_path):
    shown = invoke(["prepare", str(FIXTURES), str(tmp_path / "a"), "--longest-side", "84"])
    quiet = invoke(["prepare", str(FIXTURES), str(tmp_path / "b"), "--longest-side", "84", "--quiet"])
    assert shown.exit_code == quiet.exit_code == 0
    assert "rendering" in shown.output and "4/4 pages" in shown.output
    assert "rendering" not in quiet.output and "4 train + 0 eval pages" in quiet.output


# ---------------------------------------------------------------------------------------------
# report
# ---------------------------------------------------------------------------------------------


def test_report_max_completions_and_output(tmp_path):
    """--max-completions caps the entries shown (a page at a step, latest first); -o writes the
    page there instead of RUN_DIR/report.html."""
    run = tmp_path / "run"
    (run / "logs").mkdir(parents=True)
    (run / "completions").mkdir()
    (run / "logs" / "metrics.jsonl").write_text(
        "".join(json.dumps({"step": s, "loss": 0.1, "reward": 0.1 * s}) + "\n" for s in range(1, 7))
    )
    rows = [{"step": s, "mode": "train", "pdf": f"p{s}.pdf", "page": 1, "reward": 0.5, "passed": 1, "total": 2,
             "failed": [{"id": "t", "type": "present", "explanation": "missing"}], "completion": f"text {s}"} for s in range(6)]  # fmt: skip
    (run / "completions" / "failing_train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))

    def entries(html: Path) -> list[int]:
        return [int(s) for s in re.findall(r'<section class="entry"[^>]*data-step="(\d+)"', html.read_text())]

    res = invoke(["report", str(run)])
    assert res.exit_code == 0, res.output
    assert entries(run / "report.html") == [6, 5, 4, 3, 2, 1]
    out = tmp_path / "r.html"
    res = invoke(["report", str(run), "--max-completions", "2", "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert entries(out) == [6, 5] and "Completions: 2 of 6 entries" in out.read_text()
    assert entries(run / "report.html") == [6, 5, 4, 3, 2, 1]  # not rewritten
    assert invoke(["report", str(run), "--max-completions", "0", "--output", str(out)]).exit_code == 0
    assert entries(out) == []


# ---------------------------------------------------------------------------------------------
# train: the launcher's flags (dry run: the commands are printed, nothing is launched)
# ---------------------------------------------------------------------------------------------


def test_train_launch_flags_reach_the_launcher(tmp_path, tiny_model):
    from training import make_prepared

    prepared = make_prepared(tmp_path / "prep")
    # 4 ranks x 1 completion / 4 generations: 1 page a generation batch (the fixtures have 3).
    base = ["train", str(prepared), "--model", str(tiny_model), "-o", str(tmp_path / "run"), "--config", str(RECIPE), "--dry-run",
            "per_device_train_batch_size=1"]  # fmt: skip
    res = invoke([*base, "--num-processes", "4", "--zero", "2", "--num-machines", "2", "--machine-rank", "1",
                  "--main-process-ip", "10.0.0.9", "--main-process-port", "29613"])  # fmt: skip
    assert res.exit_code == 0, res.output
    command = next(line for line in res.stdout.splitlines() if line.startswith("command: "))
    for flag in ("--num_machines 2", "--machine_rank 1", "--main_process_ip 10.0.0.9", "--main_process_port 29613", "--num_processes 4"):
        assert flag in command, (flag, command)
    assert not (tmp_path / "run").exists()  # a dry run launches nothing

    hosts = tmp_path / "hostfile"
    hosts.write_text("node1 slots=2\nnode2 slots=2\n")
    res = invoke([*base, "--num-processes", "4", "--zero", "2", "--num-machines", "2", "--launcher", "deepspeed",
                  "--hostfile", str(hosts), "--main-process-ip", "10.0.0.9"])  # fmt: skip
    assert res.exit_code == 0, res.output
    command = next(line for line in res.stdout.splitlines() if line.startswith("command: "))
    assert "-m deepspeed.launcher.runner" in command and "--module olmocr_rl.train" in command
    assert f"--hostfile {hosts}" in command and "--num_nodes 2" in command and "--master_addr 10.0.0.9" in command, command


# ---------------------------------------------------------------------------------------------
# shell completion
# ---------------------------------------------------------------------------------------------


def test_shell_completion_installs_into_home(tmp_path):
    """--install-completion writes the completion script for the shell and sources it from the
    shell's rc file, in $HOME (here a temporary folder)."""
    env = {**os.environ, "HOME": str(tmp_path), "SHELL": "/bin/bash", "_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"}
    out = subprocess.run([sys.executable, "-m", "olmocr_rl.cli", "--install-completion", "bash"], capture_output=True, text=True,
                         env=env, timeout=120)  # fmt: skip
    assert out.returncode == 0, out.stderr
    scripts = list(tmp_path.rglob("*olmocr*"))
    assert scripts and all(p.is_relative_to(tmp_path) for p in scripts)
    assert any("complete" in p.read_text().lower() for p in scripts if p.is_file())
    assert any(str(p.name) in (tmp_path / ".bashrc").read_text() for p in scripts if p.is_file())
