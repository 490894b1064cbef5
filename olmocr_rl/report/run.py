"""`olmocr-rl report RUN_DIR`: a training run as one self-contained HTML file (RUN_DIR/report.html).

* The verdict first: the reward of the first and the last logged step, said to be within the
  step-to-step noise when it is (`step_noise`), and of the evaluations,
  the share of groups with zero reward spread, whether the weights moved (train_summary.json's
  `weights_moved`) and the warnings the console printed at the end of the run (its `warnings`).
* Curves, one metric per panel with its own axis, train solid and eval dashed, on a shared step
  axis: the reward, the share of groups whose completions all got the same reward (trl's
  `frac_reward_zero_std`: such a group gives GRPO no signal), the reward's spread, each reward
  function when there are several, the pass rate of each test type and JSONL file, completion
  length and clipping, entropy, loss, gradient norm, learning rate; with online group filtering
  (`filter_groups`), the groups generated, kept and filled per generation batch, its rounds, the
  zero-spread share and the reward before filtering, the rounds' time and the passes over the
  pages; with the loop stop (`loop_stop`), the completions it stopped, the decode tokens it saved at
  most (an upper bound) and the share of the generated tokens inside loops. The run facts say
  whether the stop was on, its rule, and its totals over the run (train_summary.json).
* The recorded completions (completions/failing_<mode>[_rank<R>].jsonl), one entry per page and
  step: the rewards of the group's recorded completions, and the best and the worst of them side
  by side (reward, failed tests with their explanations, the text), with the page image.
* The resolved config.

Step numbers: metrics.jsonl logs the trainer's step after the optimizer step (1, 2, ...); a train
completion is recorded while that step runs (the trainer's counter still one lower), so it is shown
at the counter + 1, the step whose logged reward includes it. Eval completions are recorded and
logged at the same step.
"""

from __future__ import annotations

import datetime
import json
import math
import os
import re
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

from olmocr_rl.atomic import check_output, refuse_inputs, write_text
from olmocr_rl.jsonl import read_jsonl
from olmocr_rl.paths import inside, shown
from olmocr_rl.report.charts import chart
from olmocr_rl.report.common import asset, data_uri, document, encode_page, esc, is_image, script_json

RATE = (0.0, 1.0)


def _read_jsonl(path: Path, warnings: list[str]) -> list[tuple[int, dict]]:
    """(line number, object) for each line of a JSON Lines file that holds a JSON object; every
    other non-blank line is skipped with a warning naming file:line (a run killed while writing
    leaves its last line cut short)."""
    try:
        read = read_jsonl(path)
    except OSError as e:
        warnings.append(f"{shown(path)}: cannot read ({e.strerror or e}); skipped")
        return []
    warnings += [f"{m}; skipped" for m in read.messages()]
    lines = read.lines
    last = max((n for n, line in enumerate(lines, 1) if line.strip()), default=0)
    rows = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as e:
            cut = n == last == len(lines)  # the last line, with no line end after it
            why = "cut short (the run stopped while writing it)" if cut else f"not valid JSON ({e})"
            warnings.append(f"{shown(path)}:{n}: {why}; skipped")
            continue
        if isinstance(row, dict):
            rows.append((n, row))
        else:
            warnings.append(f"{shown(path)}:{n}: not a JSON object; skipped")
    return rows


def _number(v: object) -> float | None:
    """`v` if it is a number a chart can draw; None for anything else (null, NaN, infinity, a
    string, a magnitude beyond 1e300, whose range would overflow)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    try:
        f = float(v)
    except OverflowError:  # an integer beyond a float's range
        return None
    return f if math.isfinite(f) and abs(f) <= 1e300 else None


def _points(logs: list[dict], key: str) -> list[tuple[float, float | None]]:
    """(step, value) of each row that logs `key`: None where its value is not a finite number (a
    gap in the curve)."""
    return [(s, _number(r[key])) for r in logs if key in r and (s := _number(r.get("step"))) is not None]


def _panels(logs: list[dict]) -> list[str]:
    keys = {k for r in logs for k in r}
    steps = [s for r in logs if (s := _number(r.get("step"))) is not None]
    if not steps:
        return []
    xr = (min(steps), max(steps))

    def panel(title: str, key: str, y_range: tuple[float, float] | None = None, caption: str = "") -> str:
        series = {"train": _points(logs, key), "eval": _points(logs, f"eval_{key}")}
        return chart(title, {k: v for k, v in series.items() if v}, x_range=xr, y_range=y_range, metric=key, caption=caption)

    out = [
        panel("reward (mean over completions)", "reward", None),
        panel("groups with zero reward spread (frac_reward_zero_std)", "frac_reward_zero_std", RATE,
              "share of prompts whose completions all got the same reward: no GRPO signal"),
        panel("reward spread within groups (reward_std)", "reward_std"),
    ]  # fmt: skip
    functions = sorted({m.group(1) for k in keys if (m := re.fullmatch(r"rewards/(.+)/mean", k))})
    if len(functions) > 1:  # with one function, its curve is the reward's
        out += [panel(f"reward function {name}", f"rewards/{name}/mean") for name in functions]
    types = sorted({m.group(1) for k in keys if (m := re.fullmatch(r"(?:eval_)?bench/([^/]+)/pass_rate", k))})
    out += [panel(f"pass rate: {t} tests", f"bench/{t}/pass_rate", RATE) for t in types]
    files = sorted({m.group(1) for k in keys if (m := re.fullmatch(r"(?:eval_)?bench/jsonl/(.+)/pass_rate", k))})
    out += [panel(f"pass rate: {f}", f"bench/jsonl/{f}/pass_rate", RATE) for f in files]
    if "filter/rounds" in keys:
        out += _filter_panels(logs, xr)
    if "loops/stopped" in keys or "eval_loops/stopped" in keys:  # the loop stop (olmocr_rl/loops.py METRICS)
        out += [
            panel("loop stop: completions stopped in a repetition loop", "loops/stopped", None,
                  "since the previous log; a stopped completion is trained as truncated and scored as its loop continued"),
            panel("loop stop: decode tokens saved, at most", "loops/decode_tokens_saved_max", None,
                  "the length limit minus each stopped length: an upper bound (a loop might have ended sooner)"),
            panel("share of the generated tokens inside loops", "loops/loop_token_share", RATE,
                  "from each stopped loop's start to its cut, over every token generated"),
        ]  # fmt: skip
    out += [
        panel("completion length (tokens, mean)", "completions/mean_length"),
        panel("clipped completions (share at the length limit)", "completions/clipped_ratio", RATE),
        panel("entropy", "entropy"),
        panel("loss", "loss"),
        panel("gradient norm", "grad_norm"),
        panel("learning rate", "learning_rate"),
    ]
    return [p for p in out if p]


def _filter_panels(logs: list[dict], xr: tuple[float, float]) -> list[str]:
    """Online group filtering (olmocr_rl/train/filtering.py): what each generation batch cost and
    bought."""
    groups = {"generated": _points(logs, "filter/groups_generated"), "kept": _points(logs, "filter/groups_kept"),
              "filled": _points(logs, "filter/groups_filled")}  # fmt: skip
    return [
        chart("online filtering: groups per generation batch", groups, x_range=xr, metric="filter/groups_generated",
              caption="generated over all rounds; kept by the keep rule; filled with dropped groups at the round bound"),
        chart("online filtering: generation rounds per batch", {"train": _points(logs, "filter/rounds")}, x_range=xr,
              metric="filter/rounds", caption="1: no page drawn beyond trl's batch"),
        chart("groups with zero reward spread, before filtering", {"train": _points(logs, "filter/frac_reward_zero_std")},
              x_range=xr, y_range=RATE, metric="filter/frac_reward_zero_std",
              caption="over every group generated; trl's frac_reward_zero_std above counts the trained ones"),
        chart("reward over every generated completion", {"train": _points(logs, "filter/reward")}, x_range=xr,
              metric="filter/reward", caption="before filtering: trl's reward above is the trained groups' mean"),
        chart("online filtering: time of its rounds (s)", {"train": _points(logs, "filter/rounds_s")}, x_range=xr,
              metric="filter/rounds_s", caption="generation and scoring of every round of the batch"),
        chart("passes over the train pages", {"train": _points(logs, "filter/epoch")}, x_range=xr, metric="filter/epoch",
              caption="pages drawn so far / train pages: filtering uses an epoch up sooner"),
    ]  # fmt: skip


def _shown_step(record: dict) -> int | None:
    step = record.get("step")
    if not isinstance(step, int) or isinstance(step, bool):
        return None
    return step + 1 if record.get("mode", "train") == "train" else step


def _entries(records: list[dict]) -> list[dict]:
    """One entry per (mode, shown step, pdf, page): the group's recorded completions."""
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in records:
        groups[(str(r.get("mode") or "train"), _shown_step(r), str(r.get("pdf")), str(r.get("page")))].append(r)
    out = []
    for (mode, step, pdf, page), rows in groups.items():
        rewards = [_number(r.get("reward")) for r in rows]  # None: not a number (shown as "?", never best or worst)
        rank = [(-math.inf if v is None else v) for v in rewards]
        best = max(range(len(rows)), key=lambda i: (rank[i], -i))
        worst = min(range(len(rows)), key=lambda i: (math.inf if rewards[i] is None else rank[i], -i))
        out.append({"mode": mode, "step": step, "pdf": pdf, "page": page, "rows": rows, "rewards": rewards, "best": best, "worst": worst,
                    "key": (rows[0].get("pdf"), rows[0].get("page"))})  # fmt: skip
    out.sort(key=lambda e: (-(e["step"] if e["step"] is not None else -1), e["mode"] != "eval", e["pdf"], e["page"]))
    return out


def _fmt(v: float | None, spec: str = ".3f") -> str:
    return "?" if v is None else format(v, spec)


def _completion_html(title: str, r: dict, reward: float | None) -> str:
    text = r.get("completion")
    text = "" if text is None else str(text)
    if not text:
        body = '<p class="empty">(empty completion: the model wrote nothing)</p>'
    elif not text.strip():
        body = f'<p class="empty">(only whitespace: {len(text)} characters)</p>'
    else:
        body = f"<pre>{esc(text)}</pre>"
    failed = [t for t in r.get("failed") or [] if isinstance(t, dict)]
    rows = "".join(f'<tr><td class="tid">{esc(t.get("id"))}</td><td>{esc(t.get("type"))}</td><td>{esc(t.get("explanation"))}</td></tr>'
                   for t in failed)  # fmt: skip
    tests = (f'<table class="failed"><tr><th>failed test</th><th>type</th><th>explanation</th></tr>{rows}</table>' if failed
             else '<p class="muted small">no test failed</p>')  # fmt: skip
    return (f'<div class="completion" data-reward="{esc(json.dumps(reward))}"><h4>{esc(title)}: reward {_fmt(reward)} '
            f'<span class="muted">({esc(r.get("passed"))}/{esc(r.get("total"))} tests passed)</span></h4>{body}{tests}</div>')  # fmt: skip


def _prepared_rows(prepared_dir: object, warnings: list[str]) -> dict[str, list[tuple[int, dict]]]:
    """Every split of the prepared folder (its top-level *.jsonl): (line number, row), read once
    by the JSONL reader; {} when the run names no prepared folder that exists."""
    if not isinstance(prepared_dir, str) or not prepared_dir or not Path(prepared_dir).is_dir():
        return {}
    return {split.stem: _read_jsonl(split, warnings) for split in sorted(Path(prepared_dir).glob("*.jsonl"))}


def _prepared_images(prepared_dir: object, splits: dict[str, list[tuple[int, dict]]], wanted: set, warnings: list[str]) -> dict[tuple, str]:
    """(pdf, page) -> the prepared page image (re-encoded as WebP) as a data URI. An image path
    that leads out of the prepared folder, or to a file that is not an image, is not read: the
    page is shown without its image, with a warning naming file:line."""
    if not splits:
        return {}
    from PIL import Image

    root = Path(str(prepared_dir))
    out: dict[tuple, str] = {}
    for name, rows in splits.items():
        split = root / f"{name}.jsonl"
        for n, row in rows:
            key = (row.get("pdf"), row.get("page"))
            if key not in wanted or key in out:
                continue
            where = f"{shown(split)}:{n}: image {shown(repr(row.get('image')))}"
            path = inside(root, row.get("image"))
            if path is None:
                warnings.append(f"{where}: not a path inside {shown(root)}; the page is shown without its image")
                continue
            if not is_image(path):
                warnings.append(f"{where}: not a PNG, JPEG, WebP or GIF file; the page is shown without its image")
                continue
            try:
                with Image.open(path) as im:
                    out[key] = data_uri(encode_page(im, quality=40), "image/webp")
            except (OSError, ValueError) as e:
                warnings.append(f"{where}: cannot be read ({e}); the page is shown without its image")
    return out


def _split_fact(config: dict, splits: dict[str, list[tuple[int, dict]]], which: str) -> str:
    """What the run trained (`which` "train") or evaluated ("eval") on: the split's name, its pages
    and PDFs, and the cut the config made (max_train_pages / max_eval_pages)."""
    name = config.get(f"{which}_split", which)
    if which == "eval" and (not name or str(name).lower() == "none"):
        return "none (eval_split is empty)"
    rows = splits.get(str(name))
    if rows is None:
        return f"{name} (no {name}.jsonl in the prepared folder)" if splits else f"{name}"
    pages = len({(r.get("pdf"), str(r.get("page"))) for _, r in rows})
    pdfs = len({r.get("pdf") for _, r in rows})
    limit = config.get(f"max_{which}_pages")
    cut = f"; the first {limit} used (max_{which}_pages)" if isinstance(limit, int) and 0 <= limit < pages else ""
    return f"{name}: {pages} page{'s' if pages != 1 else ''} of {pdfs} PDF{'s' if pdfs != 1 else ''}{cut}"


def _config(path: Path, warnings: list[str]) -> dict:
    """train_config.json, or {} with a warning when it is missing or not a JSON object."""
    if not path.is_file():
        return {}
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        warnings.append(f"{shown(path)}: cannot be read ({e}); the config is not shown")
        return {}
    if not isinstance(config, dict):
        warnings.append(f"{shown(path)}: not a JSON object; the config is not shown")
        return {}
    return config


def _loop_fact(config: dict, summary: dict) -> str:
    """Whether the run stopped loops, with which rule (the resolved config), and what the stop did over
    its training completions (train_summary.json's `loop_stop`)."""
    from olmocr_rl.loops import LoopTally, rule_from

    if "loop_stop" not in config:
        return "not recorded (the config has no loop_stop: a run from before the loop stop, or no config)"
    try:
        rule = rule_from(config)
    except (TypeError, ValueError):
        return f"{'on' if config.get('loop_stop') else 'off'} (its rule cannot be read from the config)"
    if rule is None:
        return "off (loop_stop=false): completions in a repetition loop ran on to max_completion_length"
    done = summary.get("loop_stop")
    keys = ("completions", "stopped", "tokens", "loop_tokens", "saved")
    if isinstance(done, dict) and all(isinstance(done.get(k), int) for k in keys):
        return f"on: {rule.describe()}; {LoopTally(**{k: done[k] for k in keys}).line()} (training)"
    return f"on: {rule.describe()}"


def _facts(run: Path, config: dict, logs: list[dict], splits: dict[str, list[tuple[int, dict]]], summary: dict) -> list[tuple[str, str]]:
    from olmocr_rl._core import __version__

    train_steps = [r["step"] for r in logs if isinstance(r.get("step"), int) and not isinstance(r.get("step"), bool) and "reward" in r]
    return [
        ("run folder", str(run)),
        ("model", str(config.get("model", "?"))),
        ("prepared data", str(config.get("prepared_dir", "?"))),
        ("training split", _split_fact(config, splits, "train")),
        ("eval split", _split_fact(config, splits, "eval")),
        ("steps logged", f"{max(train_steps) if train_steps else 0} (metrics: {len(logs)} rows)"),
        ("rewards", ", ".join(f"{k} × {v}" for k, v in (config.get("rewards") or {}).items()) or "?"),
        ("bench guard", str(config.get("bench_guard", "?"))),
        ("group size", f"{config.get('num_generations', '?')} completions per prompt (eval: {config.get('num_generations_eval', '?')})"),
        ("loop stop", _loop_fact(config, summary)),
        ("olmocr-rl", __version__),
        ("written", datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")),
    ]


def _entry_html(e: dict, size: dict, image_ids: dict) -> str:
    """One page at one step: the rewards of its recorded completions, the best and the worst side
    by side (all alike: one), beside the page image."""
    rewards = e["rewards"]
    flat = len(set(rewards)) == 1  # every reward the same (or every one unreadable)
    group = size.get(e["mode"])
    mark = {} if flat else {e["best"]: " b", e["worst"]: " w"}
    strip = " ".join(f'<span class="rw{mark.get(i, "")}">{_fmt(v, ".2f")}</span>' for i, v in enumerate(rewards))
    valid = [v for v in rewards if v is not None]
    mean = sum(valid) / len(valid) if valid else None
    head = (f'<h3>{esc(e["mode"])} · step {esc(e["step"] if e["step"] is not None else "?")} · {esc(e["pdf"])} page {esc(e["page"])}</h3>'
            f'<p class="rewards">rewards of the {len(rewards)} recorded completion{"s" if len(rewards) > 1 else ""}'
            f'{f" (group of {group})" if isinstance(group, int) else ""}: {strip} · mean {_fmt(mean)}'
            + (' · <span class="bad">zero spread: no learning signal</span>' if flat and len(rewards) > 1 else "") + "</p>")  # fmt: skip
    rows = e["rows"]
    if flat:
        cols = _completion_html(f"all {len(rows)} scored the same; the first" if len(rows) > 1 else "the completion", rows[0], rewards[0])
    else:
        cols = _completion_html("best", rows[e["best"]], rewards[e["best"]]) + _completion_html(
            "worst", rows[e["worst"]], rewards[e["worst"]]
        )
    k = image_ids.get(e["key"])
    img = f'<div class="img"><img data-k="{k}" alt="{esc(e["pdf"])} page {esc(e["page"])}" title="click to enlarge"></div>' if k is not None \
        else '<div class="img muted small">(no page image: not in the prepared data)</div>'  # fmt: skip
    return (f'<section class="entry" data-mode="{esc(e["mode"])}" data-step="{esc(e["step"])}" data-pdf="{esc(e["pdf"])}" '
            f'data-flat="{int(flat and len(rows) > 1)}" data-rewards="{esc(json.dumps(rewards))}">{head}'
            f'<div class="ebody">{img}<div class="cols">{cols}</div></div></section>')  # fmt: skip


def _summary_file(path: Path, warnings: list[str]) -> dict:
    """train_summary.json (written when a run ends), or {} when there is none yet or it cannot be read."""
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        warnings.append(f"{shown(path)}: cannot be read ({e}); the verdict is made from the metrics alone")
        return {}
    return data if isinstance(data, dict) else {}


def _ends(logs: list[dict], key: str) -> tuple[tuple[float, float], tuple[float, float]] | None:
    """(step, value) of the first and the last row logging `key` with a number."""
    pts = [(s, v) for s, v in _points(logs, key) if v is not None]
    return (pts[0], pts[-1]) if pts else None


# A change of the train reward below this is "stayed level", whatever the noise.
LEVEL = 0.005
# The step-to-step noise of a first-to-last change: this many times the root mean square of the
# changes between consecutive logged steps (for steps whose rewards scatter independently with
# spread s, the first-to-last change scatters with spread s·√2, which that root mean square
# estimates: twice it is the usual 95 % bound). A change at most this large is "within the noise".
NOISE_TIMES = 2.0


def step_noise(rewards: list[float]) -> float | None:
    """The noise bound of the change between the first and the last of `rewards` (the train reward
    of each logged step, in order): NOISE_TIMES × the root mean square of the step-to-step
    changes; None for fewer than two steps. Two steps give twice their own change: two points
    cannot tell a trend from noise."""
    if len(rewards) < 2:
        return None
    changes = [b - a for a, b in zip(rewards, rewards[1:])]
    return NOISE_TIMES * math.sqrt(sum(d * d for d in changes) / len(changes))


def _reward_sentence(rewards: list[tuple[float, float]]) -> tuple[str, str]:
    """The headline's clause on the train reward and its fact line, from (step, reward) of every
    logged step."""
    (s0, r0), (s1, r1) = rewards[0], rewards[-1]
    if len(rewards) == 1:
        return (f"one training step logged: the reward {r0:.3f} at step {s0:g} (no change to judge yet)",
                f"train reward (mean over the step's completions): {r0:.3f} at step {s0:g}, the only logged step")  # fmt: skip
    noise = step_noise([r for _, r in rewards]) or 0.0
    change, ends = r1 - r0, f"{r0:.3f} at step {s0:g} → {r1:.3f} at step {s1:g}"
    how = (f"step-to-step noise ±{noise:.3f}: {NOISE_TIMES:g} × the root mean square of the {len(rewards) - 1} "
           f"change{'s' if len(rewards) > 2 else ''} between consecutive logged steps")  # fmt: skip
    fact = f"train reward (mean over the step's completions): {r0:.3f} at step {s0:g}, {r1:.3f} at step {s1:g} ({change:+.3f}; {how})"
    if abs(change) <= LEVEL:
        return f"the reward stayed level: {ends}", fact
    if abs(change) <= noise:
        return f"the reward moved {ends}, within the step-to-step noise (±{noise:.3f})", fact
    return f"the reward {'rose' if change > 0 else 'fell'}: {ends}, beyond the step-to-step noise (±{noise:.3f})", fact


def verdict(logs: list[dict], summary: dict) -> tuple[str, list[str], list[str]]:
    """The run in a sentence, its facts, and its warnings: the train reward of the first and last
    logged step against the step-to-step noise (`step_noise`), the evaluations' likewise, the mean
    share of groups with zero reward spread, the weights moved, and the console's warnings
    (train_summary.json)."""
    facts, warned = [], [str(w) for w in summary.get("warnings") or [] if isinstance(w, str)]
    head = []
    if rewards := [(s, v) for s, v in _points(logs, "reward") if v is not None]:
        clause, fact = _reward_sentence(rewards)
        head.append(clause)
        facts.append(fact)
    else:
        head.append("no training step was logged yet")
    if (ends := _ends(logs, "eval_reward")) is not None:
        (s0, r0), (s1, r1) = ends
        facts.append(f"eval reward: {r0:.3f} at step {s0:g}, {r1:.3f} at step {s1:g} ({r1 - r0:+.3f})")
        head.append(f"eval {r0:.3f} → {r1:.3f}")
    zero = [v for _, v in _points(logs, "frac_reward_zero_std") if v is not None]
    if zero:
        mean = sum(zero) / len(zero)
        head.append(f"{mean:.0%} of groups without reward spread")
        facts.append(f"groups whose completions all got the same reward (no GRPO signal): {mean:.0%} on average over "
                     f"{len(zero)} logged steps, {zero[-1]:.0%} at the last")  # fmt: skip
        if mean >= 0.999:
            warned.append("every group's completions got the same reward: GRPO had no advantage to learn from "
                          "(curate the pages, or raise the temperature)")  # fmt: skip
    moved = summary.get("weights_moved")
    if isinstance(moved, dict) and isinstance(moved.get("share"), (int, float)):
        share = float(moved["share"])
        head.append(f"{share:.1%} of sampled weights moved")
        sampled = moved.get("elements_sampled")
        facts.append(f"weights moved: {share:.1%} of {f'{sampled:,}' if isinstance(sampled, int) else 'the'} sampled elements "
                     f"changed, the median change {moved.get('median_change_over_lr', '?')} x the learning rate")  # fmt: skip
    elif summary:
        facts.append("weights moved: not measured")
    else:
        facts.append("weights moved: unknown (no train_summary.json: the run has not finished)")
    headline = "; ".join(head)
    headline = headline[0].upper() + headline[1:] + "."
    if warned:
        headline += f" {len(warned)} warning{'s' if len(warned) > 1 else ''}."
    return headline, facts, warned


def _verdict_html(logs: list[dict], summary: dict) -> str:
    headline, facts, warned = verdict(logs, summary)
    return (f'<section id="verdict"><p class="answer{" warn" if warned else ""}">{esc(headline)}</p>'
            + "".join(f'<p class="bad warning">warning: {esc(w)}</p>' for w in warned)
            + '<ul class="verdict">' + "".join(f"<li>{esc(f)}</li>" for f in facts) + "</ul></section>")  # fmt: skip


def run_report(
    run_dir: str | os.PathLike[str],
    path: str | os.PathLike[str] | None = None,
    *,
    max_completions: int = 40,
    warn: Callable[[str], None] | None = None,
) -> Path:
    """Writes RUN_DIR/report.html (or `path`); `max_completions`: entries (a page at a step)
    shown, latest first. What cannot be read (a line cut short by a killed run, a value that is
    not a number, an image path out of the prepared folder) is left out, each with a warning
    naming file:line, passed to `warn` and listed in the report: the report is always written."""
    run = Path(run_dir)
    metrics = run / "logs" / "metrics.jsonl"
    if not metrics.is_file():
        raise FileNotFoundError(f"{run}: no logs/metrics.jsonl (is this an `olmocr-rl train` output folder?)")
    out = check_output(path, "--output") if path else run / "report.html"
    config_file, failing = run / "train_config.json", sorted((run / "completions").glob("failing_*.jsonl"))
    summary_file = run / "train_summary.json"
    refuse_inputs({"--output": out}, [metrics, config_file, summary_file, *failing])
    warnings: list[str] = []
    logs = [r for _, r in _read_jsonl(metrics, warnings)]
    config = _config(config_file, warnings)
    summary = _summary_file(summary_file, warnings)

    records: list[dict] = []
    for f in failing:
        records += [r for _, r in _read_jsonl(f, warnings)]
    entries = _entries(records)
    chosen = entries[:max_completions]
    splits = _prepared_rows(config.get("prepared_dir"), warnings)
    images = _prepared_images(config.get("prepared_dir"), splits, {e["key"] for e in chosen}, warnings)
    image_ids = {key: i for i, key in enumerate(images)}
    facts = _facts(run, config, logs, splits, summary)
    for w in warnings:
        if warn:
            warn(w)
    notes = warnings[:20] + ([f"... and {len(warnings) - 20} more warnings"] if len(warnings) > 20 else [])
    parts = [f'<h1>Training run</h1><p class="sub">{esc(run)}</p>{_verdict_html(logs, summary)}<section id="run"><h2>Run</h2><dl class="facts">'
             + "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in facts) + "</dl>"
             + ('<ul class="notes">' + "".join(f"<li>{esc(n)}</li>" for n in notes) + "</ul>" if notes else "") + "</section>"]  # fmt: skip
    parts.append('<section id="curves"><h2>Curves</h2><p class="muted small">one metric per panel, each with its own axis; '
                 "train solid, eval dashed; x: the optimizer step. Hover a point for its value.</p>"
                 f'<div class="charts">{"".join(_panels(logs))}</div></section>')  # fmt: skip
    modes = sorted({e["mode"] for e in entries})
    steps = sorted({e["step"] for e in entries if e["step"] is not None}, reverse=True)
    parts.append(
        f'<section id="completions"><h2>Completions: {len(chosen)} of {len(entries)} entries (a page at a step), latest first</h2>'
        '<p class="muted small">Train completions are recorded every logging step, at most 4 per reward call, so a group may be '
        "shown in part; eval completions all. A train completion is shown at the step whose logged reward includes it.</p>"
        '<div class="filters controls">'
        '<label>mode <select id="f-mode"><option value="all">all</option>'
        + "".join(f'<option value="{esc(m)}">{esc(m)}</option>' for m in modes)
        + '</select></label><label>step <select id="f-step"><option value="all">all</option>'
        + "".join(f'<option value="{s}">{s}</option>' for s in steps)
        + '</select></label><label><input type="checkbox" id="f-flat"> only groups with zero reward spread</label>'
        '<label>search <input id="f-q" type="search" placeholder="PDF"></label><span id="count" class="muted"></span></div>'
    )
    size = {"train": config.get("num_generations"), "eval": config.get("num_generations_eval")}
    parts += [_entry_html(e, size, image_ids) for e in chosen]
    if not entries:
        parts.append('<p class="muted">No completions recorded (write_failing_completions=false, or no step logged yet).</p>')
    parts.append("</section>")
    parts.append(
        f'<section id="config"><h2>Resolved config</h2><details><summary>train_config.json</summary><pre>{esc(json.dumps(config, indent=2))}</pre></details></section>'
    )
    parts.append('<div id="lightbox" title="click or Esc to close"><img id="lightimg" alt="the page, full size"></div>')
    parts.append(f'<script type="application/json" id="images">{script_json(list(images.values()))}</script>')
    page = document(f"Training run {run.name}", "".join(parts), style=asset("base.css") + asset("run.css"), script=asset("run.js"))
    write_text(out, page)
    return out
