"""The loop stop (olmocr_rl/loops.py): how its defaults were chosen, what the detector costs, what the
stop saves in a generation round, and where stopping is exact.

    python benchmarks/bench_loops.py [--seeds 0 1 2] [--tokens 512] [--json FILE] [--skip-rounds]
        [--training] [--vllm]    # parts 5 and 6 (--vllm: run with target/vllm-env/bin/python)

1. Margins. The longest exact repetition (a period of 1-4096 characters repeated at least
   min_repeats times) in the hard legitimate pages of bench_fixtures/loop_cases.py and in the bench
   fixtures' transcriptions, in characters (at least as many as any tokenizer's tokens): the default
   `min_span` must be above all of them; and where the detector finds the loops of LOOPS.
2. Cost. The detector fed a growing 8,000-token sequence one token per call (a check every decode
   step) and 16 tokens per call, in µs per call, for a loop-free sequence (the worst case: it never
   latches) at max_period 256 (the default) and 1024; next to it, one decode step of the tiny model
   on this CPU (a real model's step on a GPU is ~10-50 ms).
3. Rounds. Tiny random VLMs (bench_fixtures/tiny_vlm.py, one per seed: greedy decoding loops),
   transformers, one call generating the four fixture pages greedily, `--tokens` new tokens: a round
   ends when its longest completion ends; decode tokens (summed over the completions), the round's
   steps and seconds with the stop on (a rule scaled to the short completions: max_period 32,
   min_span 64) and off, per seed, and their ratios on / off. (Sampled at temperature 1 the random
   model does not repeat exactly: its rounds have nothing to stop; a real OCR model's loop rate at
   temperature 1 is for a GPU to measure.)
4. Exactness. Greedy decoding of every fixture page by the stock tiny model, the full run against the
   stopped one (its loop projected to the limit): the pages whose text is the full run's, and those
   whose bench verdicts are. The stock model leaves some loops before the limit, so the stop is not
   exact there: why `generate` and `curate` leave it off by default.
5. Training rounds, transformers (`--training`). trl's generation inside the trainer
   (OlmocrGRPOTrainer, one GRPO step of the worker's trainer: the four fixture pages x 4
   generations, `--tokens` at most), stop on (max_period 32, min_span 64) and off, per tiny model
   seed: the round's decode tokens (after the cut: what was generated) and steps (its longest
   completion), `time/generation_s`; greedy (`trl.top_k=1`: the random model loops) and sampled at
   temperature 1 (it does not repeat exactly). Where nothing is stopped, the trained batch (ids,
   masks, advantages) and the loss and rewards must be the run without the stop's, bit for bit:
   the stop changes nothing but length.
6. Generation rounds, the real vLLM CPU engine (`--vllm`, run with target/vllm-env's Python): the
   call trl's colocated engine makes (the four fixture pages x 4 samples, `--tokens` at most, a
   request of one sample per completion, each with its seed), on an engine built with the logits processor and each
   request switched on, against an engine built without it; greedy and sampled at temperature 1;
   decode tokens (the forced end token included), steps, seconds (the fastest of three calls after a
   warm-up); and whether every completion the
   stop did not end is the other engine's, token for token.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "bench_fixtures"
sys.path.insert(0, str(FIXTURES))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def margins() -> dict:
    from loop_cases import LEGITIMATE, LOOPS

    import olmocr_rl._core as _core
    from olmocr_rl.loops import LoopRule

    rule = LoopRule()

    def longest(text: str) -> int:
        runs = _core.longest_runs_text(text, 4096)
        return max((s for p, s in enumerate(runs, 1) if s >= rule.min_repeats * p), default=0)

    texts = {f"hard: {k}": v for k, v in LEGITIMATE.items()}
    texts |= {f"fixture: {p.relative_to(FIXTURES)}": p.read_text(encoding="utf-8") for p in sorted(FIXTURES.rglob("*.md"))}
    rows = {k: longest(v) for k, v in texts.items()}
    print(f"1. margins: the longest exact repetition (>= {rule.min_repeats} periods), characters; default min_span {rule.min_span}")
    for k, n in sorted(rows.items(), key=lambda kv: -kv[1]):
        print(f"   {n:6d}  {k}")
    loops = {k: rule.find_text(v) for k, v in LOOPS.items()}
    for k, found in loops.items():
        print(f"   loop {k}: {found}")
    worst = max(rows.values())
    print(f"   longest legitimate repetition {worst} < min_span {rule.min_span}: {'yes' if worst < rule.min_span else 'NO'}")
    return {"longest": rows, "min_span": rule.min_span, "loops": {k: repr(v) for k, v in loops.items()}}


def cost() -> dict:
    import random

    from timing import per_call

    from olmocr_rl.loops import LoopRule

    rng = random.Random(0)
    tokens = [rng.randrange(150_000) for _ in range(8000)]  # no repetition: the detector never latches
    out = {}
    print("2. cost of the detector on a growing 8,000-token sequence (never a loop: the worst case)")
    for max_period in (256, 1024):
        rule = LoopRule(max_period=max_period, min_span=max(4096, max_period))
        for chunk in (1, 16):

            def feed() -> None:
                d = rule.detector()
                for i in range(0, len(tokens), chunk):
                    d.extend(tokens[i : i + chunk])

            seconds = per_call(feed, 1.0)
            calls = len(tokens) // chunk
            out[f"max_period={max_period}, {chunk} token(s) a call"] = us = seconds / calls * 1e6
            print(
                f"   max_period {max_period:4d}, {chunk:2d} token(s) a call: {us:7.2f} µs a call, {seconds * 1e6 / len(tokens):.3f} µs a token"
            )
    return out


def decode_step_ms(model, processor, image, conversation) -> float:
    import torch

    from olmocr_rl.engines import transformers_suppression

    text = processor.apply_chat_template(conversation, add_generation_prompt=True, tokenize=False)
    inputs = processor(text=[text], images=[image], return_tensors="pt")
    with torch.no_grad():
        t0 = time.perf_counter()
        model.generate(**inputs, max_new_tokens=65, min_new_tokens=65, do_sample=False, **transformers_suppression(model.config))
        t1 = time.perf_counter()
        model.generate(**inputs, max_new_tokens=1, do_sample=False, **transformers_suppression(model.config))
        t2 = time.perf_counter()
    return ((t1 - t0) - (t2 - t1)) / 64 * 1000


def setup(work: Path):
    """The fixtures prepared and the tiny model, once."""
    from olmocr_rl.prepare import PrepareOptions, prepare

    prepared, model = work / "prepared", work / "tiny"
    if not (prepared / "train.jsonl").is_file():
        prepare(FIXTURES, prepared, PrepareOptions(longest_side=140, eval_fraction=0.0, workers=1, seed=0), progress=False)
    if not (model / "config.json").is_file():
        from tiny_vlm import build_tiny_vlm

        build_tiny_vlm(model)
    return prepared, model


def rounds(work: Path, seeds: list[int], tokens: int) -> dict:
    import torch
    from PIL import Image
    from tiny_vlm import build_tiny_vlm

    from olmocr_rl.engines import transformers_engine
    from olmocr_rl.loops import LoopRule
    from olmocr_rl.modeling import load_processor, load_trained
    from olmocr_rl.prompts import row_conversation

    prepared, _ = setup(work)
    rows = [json.loads(line) for line in (prepared / "train.jsonl").read_text().splitlines()]
    images = [Image.open(prepared / r["image"]).convert("RGB") for r in rows]
    conversations = [row_conversation(r) for r in rows]
    arms = {"off": LoopRule(max_period=32, min_span=10 * tokens, min_repeats=2),  # never fires: the same criterion's cost
            "on": LoopRule(max_period=32, min_span=64, min_repeats=4)}  # fmt: skip
    results, step = [], None
    print(f"3. rounds: tiny VLMs of seeds {seeds}, transformers, greedy, one call of the {len(rows)} fixture pages, {tokens} new "
          f"tokens; stop rule {arms['on'].describe()}")  # fmt: skip
    for seed in seeds:
        model_dir = work / f"tiny-seed{seed}"
        if not (model_dir / "config.json").is_file():
            build_tiny_vlm(model_dir, seed=seed)
        processor = load_processor(str(model_dir))
        model = load_trained(str(model_dir), dtype=torch.float32).eval()
        if step is None:
            step = decode_step_ms(model, processor, images[0], conversations[0])
            print(f"   one decode step of the tiny model here: {step:.2f} ms")
        transformers_engine(model, processor, max_new_tokens=4).generate(images, conversations, 0.0, [0] * len(rows))  # warm-up
        for arm, rule in arms.items():
            engine = transformers_engine(model, processor, max_new_tokens=tokens, loop_rule=rule)
            t0 = time.perf_counter()
            engine.generate(images, conversations, 0.0, [0] * len(rows))
            seconds = time.perf_counter() - t0
            tally = engine.loops
            longest = max(loop.cut if loop else tokens for loop, _ in tally.last)
            results.append(
                {"seed": seed, "arm": arm, "tokens": tally.tokens, "seconds": seconds, "stopped": tally.stopped, "longest": longest}
            )
            print(f"   seed {seed} {arm:3s}: {tally.tokens:5d} decode tokens, round of {longest} steps, {seconds:6.2f} s, "
                  f"{tally.stopped} of {len(rows)} stopped", flush=True)  # fmt: skip
    out = {"step_ms": step, "rounds": results}
    for key in ("tokens", "longest", "seconds"):
        on = [r[key] for r in results if r["arm"] == "on"]
        off = [r[key] for r in results if r["arm"] == "off"]
        ratios = [a / b for a, b in zip(on, off)]
        out[f"{key}_ratio"] = ratios
        sd = statistics.stdev(ratios) if len(ratios) > 1 else 0.0
        print(f"   {key} per round, on / off: {statistics.mean(ratios):.3f} ± {sd:.3f} (per seed {', '.join(f'{r:.3f}' for r in ratios)})")
    return out


def exactness(work: Path, tokens: int = 160) -> dict:
    import torch
    from PIL import Image

    from olmocr_rl.engines import transformers_suppression
    from olmocr_rl.loops import LoopRule, project
    from olmocr_rl.modeling import load_processor, load_trained
    from olmocr_rl.prompts import row_conversation
    from olmocr_rl.suite import BenchSuite

    prepared, model_dir = setup(work)
    processor = load_processor(str(model_dir))
    model = load_trained(str(model_dir), dtype=torch.float32).eval()
    suite = BenchSuite.load(prepared / "tests")
    rule = LoopRule(max_period=16, min_span=32, min_repeats=4)
    print(f"4. exactness: greedy, {tokens} tokens, every fixture page, the full run against the stopped one ({rule.describe()})")
    out = []
    for line in (prepared / "train.jsonl").read_text().splitlines():
        row = json.loads(line)
        text = processor.apply_chat_template(row_conversation(row), add_generation_prompt=True, tokenize=False)
        inputs = processor(text=[text], images=[Image.open(prepared / row["image"]).convert("RGB")], return_tensors="pt")
        with torch.no_grad():
            ids = model.generate(**inputs, max_new_tokens=tokens, do_sample=False, **transformers_suppression(model.config))
        full = ids[0, inputs["input_ids"].shape[1] :].tolist()
        loop = rule.find(full)
        stopped = project(full[: loop.cut], loop, tokens) if loop else full
        a, b = (processor.tokenizer.decode(i, skip_special_tokens=True) for i in (full, stopped))
        verdicts = [[v.passed for v in suite.check_batch([(t, list(map(str, row["test_ids"])))])[0]] for t in (a, b)]
        out.append(
            {"page": f"{row['pdf']} p{row['page']}", "loop": repr(loop), "same_text": a == b, "same_verdicts": verdicts[0] == verdicts[1]}
        )
        print(
            f"   {row['pdf']} p{row['page']}: {loop}; text {'=' if a == b else '≠'} full run; verdicts {'=' if verdicts[0] == verdicts[1] else '≠'}"
        )
    return {"pages": out}


def training_rounds(work: Path, seeds: list[int], tokens: int) -> dict:
    import shutil

    from tiny_vlm import build_tiny_vlm

    from olmocr_rl.train import worker
    from olmocr_rl.train.config import load_config
    from olmocr_rl.train.preflight import run_inputs

    prepared, _ = setup(work)
    rule = ["loop_max_period=32", "loop_min_span=64", "loop_min_repeats=4"]
    print(f"5. training rounds: trl's transformers generation in the trainer, tiny VLMs of seeds {seeds}, 4 pages x 4, up to {tokens} "
          f"tokens; stop {' '.join(rule)} against loop_stop=false")  # fmt: skip
    results = []
    for seed in seeds:
        model_dir = work / f"tiny-seed{seed}"
        if not (model_dir / "config.json").is_file():
            build_tiny_vlm(model_dir, seed=seed)
        for mode, sampling in (("greedy", ["trl.top_k=1"]), ("sampled", ["temperature=1.0"])):
            runs = {}
            for arm, keys in (("off", ["loop_stop=false"]), ("on", rule)):
                out = work / f"train-{seed}-{mode}-{arm}"
                shutil.rmtree(out, ignore_errors=True)
                cfg = load_config(FIXTURES / "tiny_grpo.yaml", [*keys, *sampling, f"max_completion_length={tokens}", "max_steps=1",
                                  "per_device_train_batch_size=16", "save_steps=0", "eval_split=none", "final_outputs=none",
                                  "report_to=[none]", "progress=false", "log_completions=false", "write_failing_completions=false"],
                                  prepared_dir=str(prepared), model=str(model_dir), output_dir=str(out))  # fmt: skip
                trainer = worker._build(cfg, run_inputs(cfg), False).trainer
                batches, loss = [], trainer.compute_loss

                def recording(model, inputs, *args, _loss=loss, _batches=batches, **kwargs):
                    _batches.append({k: inputs[k].tolist() for k in ("completion_ids", "completion_mask", "advantages")})
                    return _loss(model, inputs, *args, **kwargs)

                trainer.compute_loss = recording
                trainer.train()
                (logged,) = [r for r in map(json.loads, (out / "logs" / "metrics.jsonl").read_text().splitlines()) if "reward" in r]
                n = len(batches[0]["completion_ids"])
                runs[arm] = {"batch": batches, "logged": logged, "tokens": round(logged["completions/mean_length"] * n),
                             "steps": logged["completions/max_length"], "seconds": logged["time/generation_s"],
                             "stopped": int(logged.get("loops/stopped", 0))}  # fmt: skip
            on, off = runs["on"], runs["off"]
            same = (
                on["stopped"] == 0 and on["batch"] == off["batch"] and all(on["logged"][k] == off["logged"][k] for k in ("loss", "reward"))
            )
            row = {"seed": seed, "mode": mode, **{f"{k}_{a}": runs[a][k] for a in runs for k in ("tokens", "steps", "seconds", "stopped")},
                   "identical_where_nothing_stopped": same if on["stopped"] == 0 else None}  # fmt: skip
            results.append(row)
            print(f"   seed {seed} {mode:7s}: decode tokens {off['tokens']:5d} -> {on['tokens']:5d}, steps {off['steps']:4.0f} -> "
                  f"{on['steps']:4.0f}, generation {off['seconds']:6.2f} s -> {on['seconds']:6.2f} s, {on['stopped']} of 16 stopped"
                  + ("; nothing stopped: batch, loss and reward identical" if same else
                     "; nothing stopped, and yet the runs DIFFER" if on["stopped"] == 0 else ""), flush=True)  # fmt: skip
    return {"rounds": results}


def vllm_rounds(work: Path, seeds: list[int], tokens: int) -> dict:
    import gc
    import os

    for key, value in (("VLLM_CPU_KVCACHE_SPACE", "1"), ("VLLM_ENABLE_V1_MULTIPROCESSING", "0"), ("VLLM_HOST_IP", "127.0.0.1"),
                       ("VLLM_NO_USAGE_STATS", "1")):  # fmt: skip
        os.environ.setdefault(key, value)
    from PIL import Image
    from tiny_vlm import build_tiny_vlm
    from transformers import AutoConfig
    from vllm import LLM, SamplingParams

    from olmocr_rl.engines import sample_seed, vllm_loop_stop, vllm_suppression
    from olmocr_rl.loops import VLLM_PROCESSOR, LoopRule
    from olmocr_rl.modeling import load_processor
    from olmocr_rl.prompts import row_conversation

    prepared, _ = setup(work)
    rows = [json.loads(line) for line in (prepared / "train.jsonl").read_text().splitlines()]
    rule = LoopRule(max_period=32, min_span=64, min_repeats=4)
    print(f"6. generation rounds, the real vLLM CPU engine: tiny VLMs (head size 32) of seeds {seeds}, {len(rows)} pages x 4, up to "
          f"{tokens} tokens; {rule.describe()}")  # fmt: skip
    results = []
    for seed in seeds:
        model_dir = work / f"tiny32-seed{seed}"
        if not (model_dir / "config.json").is_file():
            build_tiny_vlm(model_dir, seed=seed, head_dim=32)
        processor = load_processor(str(model_dir))
        requests = [{"prompt": processor.apply_chat_template(row_conversation(r), add_generation_prompt=True, tokenize=False),
                     "multi_modal_data": {"image": Image.open(prepared / r["image"]).convert("RGB")}} for r in rows]  # fmt: skip
        extra = {**vllm_suppression(AutoConfig.from_pretrained(model_dir))}
        made: dict[tuple[str, str], list[list[int]]] = {}
        timing: dict[tuple[str, str], float] = {}
        for arm in ("off", "on"):
            llm = LLM(model=str(model_dir), max_model_len=tokens + 1024, limit_mm_per_prompt={"image": 1}, enforce_eager=True, seed=0,
                      enable_chunked_prefill=False, max_num_batched_tokens=tokens + 4096,
                      **({"logits_processors": [VLLM_PROCESSOR]} if arm == "on" else {}))  # fmt: skip
            switch = vllm_loop_stop(rule, processor, str(model_dir)) if arm == "on" else {}
            for mode, temperature in (("greedy", 0.0), ("sampled", 1.0)):
                # As trl's colocated engine asks: one request (n=1) per completion, 4 a page, each with its own seed.
                params = [SamplingParams(temperature=temperature, max_tokens=tokens, seed=sample_seed(seed, r["pdf"], r["page"], j),
                                         **extra, **switch) for r in rows for j in range(4)]  # fmt: skip
                each = [q for q in requests for _ in range(4)]
                llm.generate(each, params, use_tqdm=False)  # warm-up: the engine's first batches of each shape are slower
                seconds = []
                for _ in range(3):  # the fastest of three (the shared CPU's load): the seeded outputs are the same each time
                    t0 = time.perf_counter()
                    outs = llm.generate(each, params, use_tqdm=False)
                    seconds.append(time.perf_counter() - t0)
                timing[(arm, mode)] = min(seconds)
                made[(arm, mode)] = [list(o.token_ids) for r in outs for o in r.outputs]
            del llm
            gc.collect()
        for mode in ("greedy", "sampled"):
            on, off = made[("on", mode)], made[("off", mode)]
            loops = [rule.find(ids) for ids in on]
            unstopped_same = all(a == b for a, b, loop in zip(on, off, loops) if loop is None)
            prefix_same = all(a[: loop.cut] == b[: loop.cut] for a, b, loop in zip(on, off, loops) if loop is not None)
            row = {"seed": seed, "mode": mode, "tokens_off": sum(map(len, off)), "tokens_on": sum(map(len, on)),
                   "steps_off": max(map(len, off)), "steps_on": max(map(len, on)), "seconds_off": timing[("off", mode)],
                   "seconds_on": timing[("on", mode)], "stopped": sum(loop is not None for loop in loops),
                   "unstopped_identical": unstopped_same, "stopped_prefix_identical": prefix_same}  # fmt: skip
            results.append(row)
            print(f"   seed {seed} {mode:7s}: decode tokens {row['tokens_off']:5d} -> {row['tokens_on']:5d}, steps {row['steps_off']:4d} -> "
                  f"{row['steps_on']:4d}, {row['seconds_off']:6.2f} s -> {row['seconds_on']:6.2f} s, {row['stopped']} of {len(on)} stopped; "
                  f"unstopped completions {'identical' if unstopped_same else 'DIFFER'}, stopped ones' prefixes "
                  f"{'identical' if prefix_same else 'DIFFER'}", flush=True)  # fmt: skip
    return {"rounds": results}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--tokens", type=int, default=512)
    parser.add_argument("--work", type=Path, default=Path("/tmp/bench_loops"))
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--skip-rounds", action="store_true", help="only the margins and the cost (no model)")
    parser.add_argument("--training", action="store_true", help="part 5 only: the trainer's rounds (transformers)")
    parser.add_argument("--vllm", action="store_true", help="part 6 only: the vLLM CPU engine's rounds (target/vllm-env's Python)")
    args = parser.parse_args()
    if args.training or args.vllm:
        result = {}
        if args.training:
            result["training_rounds"] = training_rounds(args.work, args.seeds, args.tokens)
        if args.vllm:
            result["vllm_rounds"] = vllm_rounds(args.work, args.seeds, args.tokens)
    else:
        result = {"margins": margins(), "cost_us": cost()}
    if not (args.skip_rounds or args.training or args.vllm):
        result["rounds"] = rounds(args.work, args.seeds, args.tokens)
        result["exactness"] = exactness(args.work)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
