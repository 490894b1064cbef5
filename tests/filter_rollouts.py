"""Runs the training worker with sampling replaced by completions that name what they were
generated for, and a reward designed per page group, for the online filtering tests
(tests/test_filtering.py):

    python tests/filter_rollouts.py [--design D] RESOLVED_CONFIG.json          # one process
    accelerate launch ... tests/filter_rollouts.py [--design D] RESOLVED_CONFIG.json

The completion of global row k (over all ranks, as trl lays a generation batch out) of generation
round r (the r-th generate call of the optimizer step) at step s, for dataset page p (found from
the page image), is "P{p}R{r}M{m}S{ss}" with m = k mod G: 9 characters, so every completion has
as many tokens. `designed` rewards it from (p, r, s, m) alone: the group of (p, r, s) is
  flat  every completion 0.25 (no spread: zero advantage),
  mid   0 and 1 alternating (mean 0.5, spread),
  high  1 but the last 0.5 (mean 0.875 for G = 4, spread),
by a hash of (p, r, s) (design "mixed"), or always one of them (design "flat", "mid").

Each rank appends what it generated to OUTPUT_DIR/gen_rank<R>.jsonl and, for every micro-batch
the loss sees, each row's completion text, advantage, a digest of its pixel values and the batch's
`num_items_in_batch` to
OUTPUT_DIR/trained_rank<R>.jsonl; after every optimizer step the sum of its parameters to
OUTPUT_DIR/fixed_rollouts_rank<R>.json (tests/fixed_rollouts.py's ParamSums); rank 0 writes trl's
completions table of each logged step (completion and the reward's `log_extra` column for it) to
OUTPUT_DIR/table_rank0.jsonl.

Only the sampling is replaced (`GRPOTrainer._generate_single_turn`, trl 1.x); tokenisation,
rewards, advantages, loss and the optimizer are trl's and ours.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

KINDS = ("flat", "mid", "high")
HERE = Path(__file__).resolve().parent


def kind(page: int, round_: int, step: int, design: str | None = None) -> str:
    design = design or os.environ.get("FILTER_DESIGN", "mixed")
    if design != "mixed":
        return design
    # The salt: the one of the first few hundred whose runs in tests/test_filtering.py meet every
    # case (one round, rounds added, a fill at the bound, more groups kept than the batch takes).
    return KINDS[hashlib.sha1(f"s90:{page},{round_},{step}".encode()).digest()[0] % 3]


def value(k: str, member: int, generations: int) -> float:
    if k == "flat":
        return 0.25
    if k == "mid":
        return float(member % 2)
    return 0.5 if member == generations - 1 else 1.0


def text(page: int, round_: int, member: int, step: int) -> str:
    return f"P{page}R{round_}M{member}S{step:02d}"


def parse(t: str) -> tuple[int, int, int, int]:
    """(page, round, member, step) of a completion `text` made."""
    return int(t[1]), int(t[3]), int(t[5]), int(t[7:9])


def designed(completions, log_extra=None, **kwargs) -> list[float]:
    """The reward (a user reward: `filter_rollouts:designed`); it also logs each completion's text
    as an extra column of trl's completions table (`log_extra`), which must stay with its row."""
    generations = int(os.environ["FILTER_GENERATIONS"])
    texts = [c[0]["content"] if isinstance(c, list) else c for c in completions]
    if log_extra is not None:
        log_extra("made", list(texts))
    out = []
    for t in texts:
        p, r, m, s = parse(t)
        out.append(value(kind(p, r, s), m, generations))
    return out


def _digest(tensor) -> str:
    return hashlib.sha1(tensor.detach().float().cpu().numpy().tobytes()).hexdigest()[:16]


def install(output_dir: str) -> None:
    import trl

    sys.path.insert(0, str(HERE))
    from fixed_rollouts import ParamSums

    rank = int(os.environ.get("RANK", "0"))
    out = Path(output_dir)
    gen_log, trained_log = out / f"gen_rank{rank}.jsonl", out / f"trained_rank{rank}.jsonl"
    counter = {"step": -1, "round": 0}
    pages: dict[str, int] = {}

    def page_of(trainer, image) -> int:
        if not pages:
            for i in range(len(trainer.train_dataset)):
                pages[hashlib.sha1(trainer.train_dataset[i]["image"].tobytes()).hexdigest()] = i
        return pages[hashlib.sha1(image.tobytes()).hexdigest()]

    def generation(self, prompt_ids, images, multimodal_fields, num_generations=None, has_tool_images=False):
        step = self.state.global_step
        if counter["step"] != step:
            counter["step"], counter["round"] = step, 0
        round_ = counter["round"]
        counter["round"] += 1
        tok, n, g = self.processing_class.tokenizer, len(prompt_ids), self.num_generations
        first = self.accelerator.process_index * n
        ids, rows = [], []
        for i in range(n):
            k = first + i
            t = text(page_of(self, images[i][0]), round_, k % g, step)
            ids.append(tok.convert_tokens_to_ids(list(t)))
            rows.append({"step": step, "round": round_, "k": k, "text": t})
        with gen_log.open("a") as f:
            f.writelines(json.dumps(r) + "\n" for r in rows)
        return ids, None

    original_loss = trl.GRPOTrainer.compute_loss

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        tok = self.processing_class.tokenizer
        ids, mask = inputs["completion_ids"], inputs["completion_mask"]
        sizes = inputs["image_grid_thw"].prod(-1).tolist()
        pixels = inputs["pixel_values"].split(sizes)
        items = int(inputs["num_items_in_batch"])  # the dapo normalisation: completion tokens of the whole batch
        rows = [{"step": self.state.global_step, "text": tok.decode(ids[i][mask[i].bool()].tolist()), "items": items,
                 "advantage": float(inputs["advantages"][i]), "pixels": _digest(pixels[i])} for i in range(len(ids))]  # fmt: skip
        with trained_log.open("a") as f:
            f.writelines(json.dumps(r) + "\n" for r in rows)
        return original_loss(self, model, inputs, return_outputs=return_outputs, num_items_in_batch=num_items_in_batch)

    original_log = trl.GRPOTrainer.log
    tabled: set[int] = set()

    def log(self, logs, start_time=None):
        # trl's completions table of the step (gathered from every rank): each row's completion and
        # the extra column the reward logged for it.
        made = self._logs["extra"].get("made")
        if rank == 0 and made is not None and self.model.training and self.state.global_step not in tabled:
            tabled.add(self.state.global_step)  # once a step: the run's last log (its totals) comes at the same step
            pairs = [{"step": self.state.global_step, "completion": c[0]["content"] if isinstance(c, list) else c, "made": m}
                     for c, m in zip(self._logs["completion"], made)]  # fmt: skip
            with (out / f"table_rank{rank}.jsonl").open("a") as f:
                f.writelines(json.dumps(r) + "\n" for r in pairs)
        return original_log(self, logs, start_time)

    trl.GRPOTrainer.log = log
    callback = ParamSums(out / f"fixed_rollouts_rank{rank}.json")
    original_init = trl.GRPOTrainer.__init__

    def init(self, *args, **kwargs):
        kwargs["callbacks"] = [*(kwargs.get("callbacks") or []), callback]
        original_init(self, *args, **kwargs)

    trl.GRPOTrainer.__init__ = init
    trl.GRPOTrainer._generate_single_turn = generation
    trl.GRPOTrainer.compute_loss = compute_loss


def main() -> int:
    argv = sys.argv[1:]
    if argv[:1] == ["--design"]:
        os.environ["FILTER_DESIGN"], argv = argv[1], argv[2:]
    config = json.loads(Path(argv[0]).read_text())
    os.environ["FILTER_GENERATIONS"] = str(config["num_generations"])
    sys.path.insert(0, str(HERE))  # the reward `filter_rollouts:designed`
    install(config["output_dir"])
    from olmocr_rl.cli import main as cli_main

    return cli_main(["train", config["prepared_dir"], "--config", argv[0]])


if __name__ == "__main__":
    raise SystemExit(main())
