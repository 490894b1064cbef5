"""Golden rewards for FrontMatterReward from the reference's `reward_front_matter`.

    /work/ref/venv/bin/python tests/golden/gen_front_matter_cases.py OLMOCR_TREE > tests/golden/front_matter_cases.jsonl

The reference function lives in olmocr/train/grpo_train.py, whose imports need torch; this
script compiles just that function from the upstream file (at run time, nothing is copied) with
the upstream FrontMatterParser and PageResponse. Needs pyyaml in that venv. Not run in CI.
"""

import ast
import json
import logging
import random
import sys
from typing import Optional

tree = sys.argv[1]
sys.path.insert(0, tree)
from olmocr.prompts.prompts import PageResponse
from olmocr.train.front_matter import FrontMatterParser

src = open(f"{tree}/olmocr/train/grpo_train.py", encoding="utf-8").read()
fn = next(n for n in ast.parse(src).body if isinstance(n, ast.FunctionDef) and n.name == "reward_front_matter")
ns = {"FrontMatterParser": FrontMatterParser, "PageResponse": PageResponse, "Optional": Optional, "logger": logging.getLogger("ref")}
exec(compile(ast.Module([fn], []), "grpo_train.py", "exec"), ns)
reward_front_matter = ns["reward_front_matter"]

rng = random.Random(7)
LANG = ["en", "de", "None", "null", "no", "yes", "''", "12", "[en]", "EN", "~"]
BOOL = ["True", "False", "true", "false", "yes", "no", "on", "'True'", "'false'", "1", "0", "null", "maybe"]
ROT = ["0", "90", "180", "270", "'90'", "45", "90.0", "-90", "'abc'", "false", "true", "null"]


def front(fields, text, style=0):
    body = "".join(f"{k}: {v}\n" for k, v in fields)
    head = {0: "---\n", 1: "---\r\n", 2: "\n---\n", 3: "---\n"}[style]
    close = {0: "---\n", 1: "---\n", 2: "---\n", 3: "----\n"}[style]
    return head + body + close + text


def pick(odd, usual):
    return rng.choice(odd) if rng.random() < 0.15 else rng.choice(usual)


def random_fields():
    b = ["True", "False"]
    fields = [
        ("primary_language", pick(LANG, ["en", "de", "null"])),
        ("is_rotation_valid", pick(BOOL, b)),
        ("rotation_correction", pick(ROT, ["0", "90", "180", "270"])),
        ("is_table", pick(BOOL, b)),
        ("is_diagram", pick(BOOL, b)),
    ]
    r = rng.random()
    if r < 0.08:
        fields.pop(rng.randrange(len(fields)))
    elif r < 0.14:
        fields.append(("extra_field", "1"))
    elif r < 0.18:
        rng.shuffle(fields)
    return fields


cases = []
good = [
    ("primary_language", "en"),
    ("is_rotation_valid", "True"),
    ("rotation_correction", "0"),
    ("is_table", "False"),
    ("is_diagram", "False"),
]
fixed = [
    front(good, "Hello"),
    front(good, ""),
    front(good, "x", 1),
    front(good, "x", 2),
    front(good, "x", 3),
    "---\n---\nHello",
    "no front matter",
    "",
    "---\nprimary_language: [unclosed\n---\nx",
    "---\n- a list\n---\nx",
    "---\n42\n---\nx",
    "---\nprimary_language\n---\nx",
]
for c in fixed:
    for r in [None, front(good, "ref"), "not parseable"]:
        cases.append((c, r))
for _ in range(600):
    c = front(random_fields(), rng.choice(["Text.", "", "  ", "A\n---\nB"]), rng.choice([0, 0, 0, 1, 2, 3]))
    r = rng.choice([None, front(random_fields(), "ref"), front(good, "ref")])
    cases.append((c, r))

for c, r in cases:
    completion = [{"role": "assistant", "content": c}] if rng.random() < 0.3 else c
    (reward,) = reward_front_matter(None, [completion], claude_original=[r])
    print(json.dumps({"completion": completion, "claude_original": r, "reward": reward}, ensure_ascii=False))
