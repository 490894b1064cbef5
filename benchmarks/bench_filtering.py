"""Online group filtering (`filter_groups`, olmocr_rl/train/filtering.py) on vs off, on a small
learnable task where groups without reward spread are common, over several seeds each.

    python benchmarks/bench_filtering.py [--seeds 0 1 2 3] [--steps 30] [--work /tmp/bench_filtering]

The task (built like tests/test_learning.py's, with the tiny random VLM of
bench_fixtures/tiny_vlm.py, 16-token completions, 8 per page, one page a step): four pages, two
learnable (`present` tests of common letters, ~0.05-0.1 reward at first), one hopeless (a
`present` test of a phrase no 16-token completion writes: always 0) and one always passed (an
`absent` test of a string no completion writes: always 1), so about half the groups have no
reward spread. Three arms, at the same constant learning rate: without filtering and with it
(`filter_groups`, up to 3 added generation rounds a step, the default), `--steps` optimizer steps
each; and without filtering for as many completions as the filtered run generated (its steps
rounded to whole evaluations): the same generation, more optimizer steps. Every `--eval-every`
steps (and at the start) each run is evaluated on the four pages, 8 samples each, at the training
temperature (trl's evaluation, `eval_reward`).

Prints, per arm, mean and standard deviation over seeds of: the evaluated reward at the start and
the end; the mean reward of every completion generated for training (before filtering) over the
first and the last ten steps; the evaluated gain per optimizer step; the completions generated for
training; the gain per 1,000 generated completions; the share of zero-spread groups generated; the
generation rounds a step; and each run's curve. Writes the figures as JSON (--json).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "bench_fixtures"
GENERATIONS = 8
PAGES = {  # (pdf, page) -> tests
    ("letter.pdf", 1): [("present", ch) for ch in "etaoinshrd"],
    ("sample_paper.pdf", 1): [("present", ch) for ch in "etaoin"],
    ("reports/annual_report.pdf", 1): [("present", "Quarterly revenue grew by eleven percent")],
    ("reports/annual_report.pdf", 2): [("absent", "Zebra quartz vexes jumpy fjords")],
}


def make_task(work: Path) -> tuple[Path, Path]:
    """The bench folder prepared (train = eval = the four pages), and the tiny model."""
    bench, prepared, model = work / "bench", work / "prepared", work / "tiny"
    if (prepared / "eval.jsonl").is_file() and (model / "config.json").is_file():
        return prepared, model
    shutil.rmtree(work, ignore_errors=True)
    lines = []
    for (pdf, page), tests in PAGES.items():
        (bench / "pdfs" / pdf).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(FIXTURES / "pdfs" / pdf, bench / "pdfs" / pdf)
        stem = pdf.replace("/", "_").removesuffix(".pdf")
        for i, (kind, text) in enumerate(tests):
            lines.append(json.dumps({"pdf": pdf, "page": page, "id": f"{stem}_{page}_{i}", "type": kind, "text": text}))
    (bench / "tests.jsonl").write_text("\n".join(lines) + "\n")
    from olmocr_rl.prepare import PrepareOptions, prepare

    prepare(bench, prepared, PrepareOptions(longest_side=112, eval_fraction=0.0, workers=1, seed=0), progress=False)
    shutil.copy(prepared / "train.jsonl", prepared / "eval.jsonl")  # evaluate on the training pages
    sys.path.insert(0, str(FIXTURES))
    from tiny_vlm import build_tiny_vlm

    build_tiny_vlm(model, "qwen2_5_vl")
    return prepared, model


def recipe(steps: int, eval_every: int) -> list[str]:
    return [
        f"num_generations={GENERATIONS}", "per_device_train_batch_size=8", "gradient_accumulation_steps=1",
        "max_completion_length=16", f"max_steps={steps}", "logging_steps=1", "learning_rate=3.0e-3",
        "lr_scheduler_type=constant", "warmup_steps=0", "dataloader_num_workers=0", "gradient_checkpointing=false",
        "final_outputs=none", "save_steps=0", "progress=false", "report_to=[none]", "log_completions=false",
        "write_failing_completions=false", "rewards={bench: 1.0}", "bench_guard=none", "eval_split=eval",
        f"eval_steps={eval_every}", "eval_on_start=true", "max_eval_pages=4", f"num_generations_eval={GENERATIONS}",
        "per_device_eval_batch_size=8",
    ]  # fmt: skip


def run(prepared: Path, model: Path, out: Path, seed: int, filtered: bool, steps: int, eval_every: int) -> dict:
    cli = str(Path(sys.executable).parent / "olmocr-rl")
    extra = ["filter_groups=true"] if filtered else []
    cmd = [cli, "train", str(prepared), "--model", str(model), "-o", str(out), *recipe(steps, eval_every), f"seed={seed}", *extra]
    shutil.rmtree(out, ignore_errors=True)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd)}\n{proc.stderr[-4000:]}")
    rows = [json.loads(line) for line in (out / "logs" / "metrics.jsonl").read_text().splitlines()]
    evals = {r["step"]: r["eval_reward"] for r in rows if "eval_reward" in r}
    train = [r for r in rows if "reward" in r and "eval_reward" not in r]
    if filtered:
        completions = sum(r["filter/groups_generated"] for r in train) * GENERATIONS
        zero = sum(r["filter/frac_reward_zero_std"] * r["filter/groups_generated"] for r in train) / sum(
            r["filter/groups_generated"] for r in train
        )
        rounds = statistics.mean(r["filter/rounds"] for r in train)
        filled = sum(r["filter/groups_filled"] > 0 for r in train)
    else:
        completions = len(train) * GENERATIONS
        zero, rounds, filled = statistics.mean(r["frac_reward_zero_std"] for r in train), 1.0, 0
    # The policy's mean reward over every completion generated for training (before filtering:
    # trl's `reward` is the trained groups' when filtering is on), first and last ten steps.
    sampled = [r["filter/reward"] if filtered else r["reward"] for r in train]
    window = min(10, len(sampled) // 2) or 1
    first, last = evals[min(evals)], evals[max(evals)]
    return {"seed": seed, "filtered": filtered, "steps": steps, "evals": evals, "start": first, "end": last, "gain": last - first,
            "gain_per_step": (last - first) / steps, "completions": completions,
            "gain_per_1000_completions": 1000 * (last - first) / completions, "zero_spread": zero, "rounds": rounds,
            "steps_at_bound": filled, "sampled_first": statistics.mean(sampled[:window]),
            "sampled_last": statistics.mean(sampled[-window:]), "seconds": time.perf_counter() - t0}  # fmt: skip


def summary(results: list[dict]) -> str:
    keys = [("steps", ".0f"), ("start", ".3f"), ("end", ".3f"), ("sampled_first", ".3f"), ("sampled_last", ".3f"), ("gain_per_step", ".4f"), ("completions", ".0f"), ("gain_per_1000_completions", ".3f"),
            ("zero_spread", ".2f"), ("rounds", ".2f"), ("steps_at_bound", ".1f"), ("seconds", ".0f")]  # fmt: skip
    lines = ["| arm | " + " | ".join(k for k, _ in keys) + " |", "|---" * (len(keys) + 1) + "|"]
    names = {"off": "off", "on": "filter_groups", "matched": "off, as many completions"}
    for name, label in names.items():
        arm = [r for r in results if r["arm"] == name]
        cells = []
        for key, spec in keys:
            values = [r[key] for r in arm]
            sd = statistics.stdev(values) if len(values) > 1 else 0.0
            cells.append(f"{statistics.mean(values):{spec}} ± {sd:{spec}}")
        lines.append(f"| {label} (n={len(arm)}) | " + " | ".join(cells) + " |")
    lines.append("")
    for r in results:
        curve = " ".join(f"{s}:{v:.3f}" for s, v in sorted(r["evals"].items()))
        lines.append(f"{r['arm']} seed {r['seed']}: eval_reward {curve}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--eval-every", type=int, default=10)
    parser.add_argument("--work", type=Path, default=Path("/tmp/bench_filtering"))
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    prepared, model = make_task(args.work)
    results = []
    for seed in args.seeds:
        for arm in ("off", "on", "matched"):
            steps = args.steps
            if arm == "matched":  # off, for as many completions as the filtered arm generated (in whole evaluations)
                on = results[-1]["completions"] / GENERATIONS
                steps = max(args.eval_every, args.eval_every * round(on / args.eval_every))
            r = run(prepared, model, args.work / f"{arm}_{seed}", seed, arm == "on", steps, args.eval_every)
            r["arm"] = arm
            print(f"seed {seed} {arm}: {steps} steps, eval {r['start']:.3f} -> {r['end']:.3f}, {r['completions']:.0f} completions, "
                  f"{r['seconds']:.0f} s", flush=True)  # fmt: skip
            results.append(r)
    print(summary(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
